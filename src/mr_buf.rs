//! Buffers a memory region owns: the [`MrBuffer`] trait, page-aligned
//! anonymous memory ([`PageBuf`]) and caller-vouched raw memory
//! ([`RawMem`]).
//!
//! A registered region lets the device (and, with remote access, a peer)
//! write its bytes at any time until it is deregistered. Deregistration
//! happens in [`Mr`](crate::Mr)'s `Drop` or `destroy`, and Rust does not
//! promise that a value is ever dropped (`core::mem::forget`, `Rc` cycles).
//! So a region cannot merely *borrow* its memory: forgetting the region
//! would end the borrow while the registration stays, and the device would
//! write into memory Rust hands out again. A region therefore *owns* its
//! buffer: the buffer is given up when registering, and freeing it is only
//! possible by getting it back from a successful deregistration. A
//! forgotten region, or one whose deregistration the kernel refuses, leaks
//! its buffer instead.
//!
//! While registered the buffer is kept taken apart ([`MrBuffer::into_raw`]):
//! a start pointer, a length and whatever else the type needs to be rebuilt
//! ([`MrBuffer::Raw`], e.g. a `Vec`'s capacity). No `Box`, `Vec` or `&mut`
//! to the bytes exists in between, so no Rust uniqueness assertion (a moved
//! `Box` is one) covers bytes the device writes.
//!
//! # Safety
//!
//! * **B1 — the contract of [`MrBuffer`]** (an `unsafe trait`): between
//!   `into_raw` and `from_raw` the range `ptr..ptr+len` stays allocated
//!   and mapped read/write, nothing but the holder of the raw parts
//!   accesses it, and dropping the raw parts without `from_raw` leaks the
//!   memory. The implementations here uphold it: `Box`/`Vec` give up their
//!   allocation with `into_raw`/`ManuallyDrop` and get it back only from
//!   `from_raw`; `&'static mut` memory is never freed; a [`PageBuf`]
//!   mapping is unmapped only by `PageBuf`'s own `Drop`, and its raw form
//!   is a plain pointer with no `Drop`.
//! * **B2 — `from_raw` only once, with the parts `into_raw` gave.** [`Mr`]
//!   keeps the parts in a `ManuallyDrop` and calls `from_raw` at most once,
//!   after a successful `DEREG_MR` (or on the failure path of a
//!   registration the kernel never accepted).
//! * **B3 — [`PageBuf`] owns its mapping**: it is a [`AnonMap`]
//!   (`anon_map.rs`, A1–A3: `mmap` with a NULL hint and no `MAP_FIXED`
//!   creates it, only its `Drop` unmaps it, its bytes are zero-filled
//!   anonymous memory, valid for `u8`).
//! * **B4 — [`RawMem`] is made only by an `unsafe` constructor** whose
//!   caller promises B1 for the range.
#![allow(unsafe_code)]

#[cfg(feature = "std")]
extern crate alloc;

use rustix::mm::MapFlags;

use crate::error::{Error, ErrorKind, Result};
use crate::anon_map::AnonMap;

/// Memory a [`Mr`](crate::Mr) can own while it is registered.
///
/// # Safety
///
/// An implementation promises that after [`into_raw`](Self::into_raw)
/// returns `(ptr, len, raw)`:
/// * `ptr..ptr+len` is allocated, mapped readable and writable, and any
///   byte pattern is a valid value for it; it stays so until `raw` is
///   given to [`from_raw`](Self::from_raw) — moving `raw` does not move
///   the memory, and dropping `raw` (or never using it) leaks the memory
///   rather than freeing it;
/// * nothing but the holder of `raw` reads, writes or frees the range
///   until then (no other handle to the bytes survives `into_raw`);
/// * `from_raw(ptr, len, raw)` with exactly those parts rebuilds the
///   value that owns the memory again.
#[allow(clippy::len_without_is_empty)]
pub unsafe trait MrBuffer: Sized {
    /// What the value needs besides start and length to be rebuilt (a
    /// `Vec`'s capacity; `()` for most types). Dropping it must not free
    /// anything.
    type Raw;

    /// Gives the memory up: its start, its length in bytes, and the rest
    /// of the value's parts.
    fn into_raw(self) -> (*mut u8, usize, Self::Raw);

    /// Rebuilds the value from the parts [`into_raw`](Self::into_raw)
    /// returned.
    ///
    /// # Safety
    ///
    /// `ptr`, `len` and `raw` are exactly what one call of `into_raw` on
    /// this type returned, and they are used for one `from_raw` only.
    unsafe fn from_raw(ptr: *mut u8, len: usize, raw: Self::Raw) -> Self;
}

// SAFETY: a `'static` mutable borrow is never freed and, once moved into
// `into_raw`, no other reference to the bytes exists (the borrow was
// unique); `from_raw` rebuilds the same unique borrow (B1).
unsafe impl MrBuffer for &'static mut [u8] {
    type Raw = ();
    fn into_raw(self) -> (*mut u8, usize, ()) {
        (self.as_mut_ptr(), self.len(), ())
    }
    unsafe fn from_raw(ptr: *mut u8, len: usize, (): ()) -> Self {
        // SAFETY: `ptr, len` came from a `&'static mut [u8]` (caller
        // contract), whose uniqueness `into_raw` took over.
        unsafe { core::slice::from_raw_parts_mut(ptr, len) }
    }
}

// SAFETY: `Box::into_raw` gives up the allocation without freeing it; only
// `Box::from_raw` in `from_raw` owns it again (B1).
#[cfg(feature = "std")]
unsafe impl MrBuffer for alloc::boxed::Box<[u8]> {
    type Raw = ();
    fn into_raw(self) -> (*mut u8, usize, ()) {
        let len = self.len();
        (alloc::boxed::Box::into_raw(self).cast::<u8>(), len, ())
    }
    unsafe fn from_raw(ptr: *mut u8, len: usize, (): ()) -> Self {
        let slice = core::ptr::slice_from_raw_parts_mut(ptr, len);
        // SAFETY: exactly the pointer and length `Box::into_raw` gave
        // (caller contract), used once.
        unsafe { alloc::boxed::Box::from_raw(slice) }
    }
}

// SAFETY: the vector is taken apart without freeing (`ManuallyDrop`); only
// `Vec::from_raw_parts` in `from_raw` owns the allocation again (B1). The
// capacity is the `Raw` part.
#[cfg(feature = "std")]
unsafe impl MrBuffer for alloc::vec::Vec<u8> {
    type Raw = usize;
    fn into_raw(self) -> (*mut u8, usize, usize) {
        let mut v = core::mem::ManuallyDrop::new(self);
        (v.as_mut_ptr(), v.len(), v.capacity())
    }
    unsafe fn from_raw(ptr: *mut u8, len: usize, cap: usize) -> Self {
        // SAFETY: the parts of one `Vec<u8>` taken apart by `into_raw`
        // (caller contract), used once.
        unsafe { alloc::vec::Vec::from_raw_parts(ptr, len, cap) }
    }
}

/// Page-aligned, zero-filled anonymous memory (`mmap(MAP_PRIVATE |
/// MAP_ANONYMOUS)`), unmapped when dropped. Works without `std`;
/// [`Mr::alloc`](crate::Mr::alloc) registers one.
#[derive(Debug)]
pub struct PageBuf {
    map: AnonMap,
}

impl PageBuf {
    /// Maps `len` bytes (rounded up to whole pages by the kernel; [`len`]
    /// stays `len`). A zero length is refused.
    ///
    /// [`len`]: PageBuf::len
    pub fn new(len: usize) -> Result<Self> {
        const VERB: &str = "mmap";
        if len == 0 {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument));
        }
        let map = AnonMap::anonymous(len, MapFlags::empty()).map_err(|e| Error::from_errno(VERB, e))?;
        Ok(Self { map })
    }

    /// Length in bytes (as requested).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Always `false`: zero-length buffers are refused.
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }
}

/// `Deref`/`DerefMut` to the bytes and `MrBuffer` for a buffer that is
/// one `AnonMap` in its field `map` ([`PageBuf`], B3; `HugePageBuf`, H2
/// of `huge_buf.rs`).
macro_rules! anon_map_buffer {
    ($t:ident) => {
        impl core::ops::Deref for $t {
            type Target = [u8];
            fn deref(&self) -> &[u8] {
                self.map.bytes()
            }
        }

        impl core::ops::DerefMut for $t {
            fn deref_mut(&mut self) -> &mut [u8] {
                self.map.bytes_mut()
            }
        }

        // SAFETY: `into_raw` gives the mapping up without unmapping it and
        // `from_raw` owns it again (B3 / H2; A3 in `anon_map.rs`).
        unsafe impl $crate::mr_buf::MrBuffer for $t {
            type Raw = ();
            fn into_raw(self) -> (*mut u8, usize, ()) {
                let (p, n) = self.map.into_raw();
                (p, n, ())
            }
            unsafe fn from_raw(ptr: *mut u8, len: usize, (): ()) -> Self {
                // SAFETY: the parts this type's `into_raw` gave, once
                // (caller contract), are those of its `AnonMap`.
                Self { map: unsafe { $crate::anon_map::AnonMap::from_raw(ptr, len) } }
            }
        }
    };
}
pub(crate) use anon_map_buffer;

anon_map_buffer!(PageBuf);

/// Memory managed outside Rust's ownership (a foreign allocator, hugepage
/// mappings, shared memory), vouched for with the `unsafe`
/// [`RawMem::new`]. Dropping it does nothing to the memory.
#[derive(Debug)]
pub struct RawMem {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: `RawMem` never dereferences its pointer; it only carries the
// caller's promise (B4) from thread to thread.
unsafe impl Send for RawMem {}
// SAFETY: as for `Send`; `&RawMem` exposes nothing but the integers.
unsafe impl Sync for RawMem {}

impl RawMem {
    /// Wraps `len` bytes at `ptr` so a region can be registered over them.
    ///
    /// # Safety
    ///
    /// For as long as this value, or a region it was moved into, exists —
    /// forever if either is leaked — the caller guarantees that
    /// `ptr..ptr+len` stays mapped (not unmapped or remapped: the kernel
    /// keeps the old pages pinned) and that no Rust reference to any of
    /// its bytes is used while the device or a peer may access them
    /// (access goes through raw pointers, volatile or atomic operations).
    pub unsafe fn new(ptr: *mut u8, len: usize) -> Self {
        Self { ptr, len }
    }

    /// Start of the range.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

// SAFETY: `RawMem::new`'s caller promised B1 for the range for as long as
// the value (or a region holding it) exists (B4); nothing here frees it.
unsafe impl MrBuffer for RawMem {
    type Raw = ();
    fn into_raw(self) -> (*mut u8, usize, ()) {
        (self.ptr, self.len, ())
    }
    unsafe fn from_raw(ptr: *mut u8, len: usize, (): ()) -> Self {
        Self { ptr, len }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<B: MrBuffer>(b: B) -> B {
        let (p, n, raw) = b.into_raw();
        // SAFETY: the parts just returned, used once.
        unsafe { B::from_raw(p, n, raw) }
    }

    #[test]
    fn page_buf_is_zeroed_aligned_and_round_trips() {
        let mut b = PageBuf::new(5000).unwrap();
        assert_eq!(b.len(), 5000);
        assert_eq!(b.as_ptr() as usize % rustix::param::page_size(), 0);
        assert!(b.iter().all(|&x| x == 0));
        b[4999] = 7;
        let p = b.as_ptr();
        let b = round_trip(b);
        assert_eq!((b.as_ptr(), b.len(), b[4999]), (p, 5000, 7));
        assert_eq!(PageBuf::new(0).unwrap_err().kind(), ErrorKind::InvalidArgument);
    }

    #[cfg(feature = "std")]
    #[test]
    fn owned_buffers_round_trip_unmoved() {
        let mut v = alloc::vec::Vec::with_capacity(64);
        v.extend_from_slice(b"abc");
        let p = v.as_ptr();
        let v = round_trip(v);
        assert_eq!((v.as_ptr(), v.capacity(), &v[..]), (p, 64, &b"abc"[..]));
        let b: alloc::boxed::Box<[u8]> = alloc::vec![1, 2, 3].into_boxed_slice();
        let p = b.as_ptr();
        let b = round_trip(b);
        assert_eq!((b.as_ptr(), &b[..]), (p, &[1u8, 2, 3][..]));
        let s: &'static mut [u8] = alloc::vec![9u8; 4].leak();
        let p = s.as_ptr();
        let s = round_trip(s);
        assert_eq!((s.as_ptr(), &s[..]), (p, &[9u8; 4][..]));
    }
}
