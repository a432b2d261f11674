//! Queue memory shared with the kernel: `mmap` of the device file at an
//! offset the kernel handed out in a create command's driver response.
//!
//! rxe and siw keep their work and completion rings in kernel memory that
//! user space maps with `mmap(NULL, len, PROT_READ|PROT_WRITE, MAP_SHARED,
//! cmd_fd, offset)`. A [`Mapping`] owns one such region and unmaps it when
//! dropped. Because the kernel (and, for rxe, its packet-processing tasks)
//! writes these bytes at any time, a `Mapping` never hands out `&` or
//! `&mut` references to them: only raw pointers, volatile copies of plain
//! data, and `&AtomicU32` for ring indices and flag words.
//!
//! # Safety
//!
//! The invariants the `unsafe` blocks below rely on:
//!
//! * **M1 — ownership.** `ptr..ptr+len` is a live `MAP_SHARED` mapping
//!   created by [`Mapping::new`] and unmapped only in `Drop`; nothing else
//!   in the process unmaps, remaps or frees it (the pointer is private and
//!   no API exposes a way to munmap it). So every in-bounds address stays
//!   valid for reads and writes while the `Mapping` is alive.
//! * **M2 — bounds and alignment.** Every accessor checks `offset +
//!   size_of::<T>() <= len` and, for atomics, `offset % align_of::<T>() ==
//!   0`; `ptr` is page aligned (mmap returns page-aligned addresses), so an
//!   aligned offset gives an aligned address.
//! * **M3 — no references to shared bytes.** Plain data is only moved with
//!   `read_volatile`/`write_volatile` of types valid for every bit pattern
//!   (`FromBytes`), so whatever the kernel wrote is a valid value. The only
//!   references handed out are `&AtomicU32`/`&AtomicU64`: atomics have
//!   interior mutability and are the sanctioned way to share a word with a
//!   concurrent writer, here the kernel.
//! * **M4 — ordering of destroy and unmap.** An object's `Mapping` is
//!   dropped only after the kernel destroyed the object (the handle types
//!   keep the mapping in a field that is dropped after their `Drop`/
//!   `destroy` ran the destroy command; if an explicit `destroy` fails the
//!   mapping stays with the object handed back). Only when the destroy in
//!   `Drop` fails is the mapping released with the kernel object still
//!   alive (and leaked): that is memory safe for us because the kernel
//!   holds its own reference to the pages and user space no longer touches
//!   them.
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU64};

use rustix::fd::AsFd;
use rustix::mm::{MapFlags, ProtFlags};
use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::error::{Error, ErrorKind, Result};

/// One `MAP_SHARED` region of a device file (a queue ring), unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a `Mapping` is an owned region of process memory; moving the
// owner to another thread moves nothing but the pointer (M1), and munmap
// may be called from any thread.
unsafe impl Send for Mapping {}
// SAFETY: through `&Mapping` the only operations are volatile reads of
// `FromBytes` data and atomic accesses (M3); non-atomic writes need
// `&mut Mapping`, so two threads can never race on a plain write from our
// side. (The kernel's concurrent writes are the reason for M3.)
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` at `offset`, read/write and shared.
    ///
    /// `len` is rounded up to whole pages by the kernel; accessors still
    /// only reach the first `len` bytes. A zero `len` is rejected.
    pub fn new<Fd: AsFd>(verb: &'static str, fd: Fd, offset: u64, len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::new(verb, ErrorKind::Malformed));
        }
        // SAFETY: a fresh mapping at an address the kernel chooses (NULL
        // hint, no MAP_FIXED), so no existing memory is replaced; the fd is
        // borrowed for the call only. The result is owned by `Self` (M1).
        let ptr = unsafe {
            rustix::mm::mmap(
                core::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd.as_fd(),
                offset,
            )
        }
        .map_err(|e| Error::from_errno(verb, e))?;
        let ptr = NonNull::new(ptr.cast::<u8>()).ok_or(Error::new(verb, ErrorKind::Malformed))?;
        Ok(Self { ptr, len })
    }

    /// The mapped length in bytes (as requested).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: empty mappings cannot be created.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The start address; valid for `len()` bytes while `self` lives. Never
    /// turn it into a reference: the kernel writes these bytes.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn check<T>(&self, offset: usize) -> Option<*mut u8> {
        let end = offset.checked_add(size_of::<T>())?;
        if end > self.len || !offset.is_multiple_of(align_of::<T>()) {
            return None;
        }
        // In bounds (just checked), so the addition stays inside the mapping.
        Some(self.ptr.as_ptr().wrapping_add(offset))
    }

    /// A volatile copy of the `T` at `offset` (must be `T`-aligned and in
    /// bounds, else `None`). Takes `&mut self`, like [`Mapping::write`]:
    /// a plain read through `&self` could race with an atomic store
    /// another thread makes through [`Mapping::atomic_u32`]'s reference.
    pub fn read<T: FromBytes>(&mut self, offset: usize) -> Option<T> {
        let p = self.check::<T>(offset)?;
        // SAFETY: `p..p+size_of::<T>()` is inside the live mapping (M1, M2)
        // and aligned for `T` (M2); `T: FromBytes` accepts any bytes the
        // kernel may have written (M3); `&mut self` excludes this
        // process's other accesses (no `&AtomicU32` borrowed from `self`
        // is alive).
        Some(unsafe { p.cast::<T>().read_volatile() })
    }

    /// A volatile store of `v` at `offset` (must be `T`-aligned and in
    /// bounds). Returns `false` (nothing written) if it is not.
    pub fn write<T: IntoBytes + Immutable>(&mut self, offset: usize, v: T) -> bool {
        let Some(p) = self.check::<T>(offset) else {
            return false;
        };
        // SAFETY: in bounds and aligned (M1, M2); `&mut self` excludes any
        // other access from this process's safe code during the store (M3).
        unsafe { p.cast::<T>().write_volatile(v) };
        true
    }

    /// The 32-bit word at `offset` as an atomic (ring index, flag word).
    pub fn atomic_u32(&self, offset: usize) -> Option<&AtomicU32> {
        let p = self.check::<AtomicU32>(offset)?;
        // SAFETY: in bounds and 4-aligned (M2) inside a mapping that lives
        // as long as the returned borrow of `self` (M1); `AtomicU32` has the
        // size and alignment of `u32`, every bit pattern is valid, and its
        // interior mutability makes concurrent kernel writes permitted (M3).
        Some(unsafe { &*p.cast::<AtomicU32>() })
    }

    /// The 64-bit word at `offset` as an atomic.
    pub fn atomic_u64(&self, offset: usize) -> Option<&AtomicU64> {
        let p = self.check::<AtomicU64>(offset)?;
        // SAFETY: as in `atomic_u32`, with 8-byte bounds and alignment.
        Some(unsafe { &*p.cast::<AtomicU64>() })
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: exactly the region `new` mapped (M1); after this no
        // accessor can run because `self` is being dropped, and no borrow of
        // `self` (e.g. an `&AtomicU32`) can outlive it.
        let r = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast::<c_void>(), self.len) };
        if let Err(e) = r {
            crate::error::report_drop_failure(Error::from_errno("munmap", e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::Ordering;

    /// Maps an anonymous-memory-backed file (memfd) as a stand-in for the
    /// device file: the accessors behave the same.
    #[cfg(feature = "std")]
    fn memfd(len: u64) -> rustix::fd::OwnedFd {
        let fd = rustix::fs::memfd_create("verbs-mmap-test", rustix::fs::MemfdFlags::CLOEXEC)
            .expect("memfd_create");
        rustix::fs::ftruncate(&fd, len).expect("ftruncate");
        fd
    }

    #[cfg(feature = "std")]
    #[test]
    fn bounds_alignment_and_sharing() {
        let fd = memfd(4096);
        let mut a = Mapping::new("test", &fd, 0, 100).unwrap();
        let mut b = Mapping::new("test", &fd, 0, 100).unwrap();
        assert_eq!(a.len(), 100);
        assert!(a.write::<u32>(96, 0xdead_beef));
        assert!(!a.write::<u32>(97, 1), "misaligned store refused");
        assert!(!a.write::<u64>(96, 1), "store past the end refused");
        assert_eq!(a.read::<u32>(100), None);
        assert_eq!(a.read::<u64>(4), None, "misaligned u64 refused");
        // The second mapping of the same file sees the first one's store.
        assert_eq!(b.read::<u32>(96), Some(0xdead_beef));
        b.atomic_u32(0).unwrap().store(7, Ordering::Release);
        assert_eq!(a.read::<u32>(0), Some(7));
        assert!(a.atomic_u32(98).is_none());
        assert!(a.atomic_u64(96).is_none());
    }

    #[test]
    fn zero_length_rejected() {
        let fd = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDWR,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        let e = Mapping::new("ibv_create_cq", &fd, 0, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Malformed);
        assert_eq!(e.verb(), "ibv_create_cq");
    }
}
