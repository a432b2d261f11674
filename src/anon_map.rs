//! [`AnonMap`]: one private anonymous memory mapping that this value owns —
//! the part [`PageBuf`](crate::PageBuf) and [`HugePageBuf`](crate::HugePageBuf)
//! share (they differ only in the flags they map with and what they do
//! with the mapping afterwards).
//!
//! Not the queue-ring owner of `mmap.rs` (`mmap::Mapping`): that one maps
//! device memory the kernel writes at any time, so it never hands out
//! references to its bytes; this one is private memory of this process and
//! lends them as slices, borrowed from the owner.
//!
//! # Safety
//!
//! * **A1 — the value owns its mapping.** [`AnonMap::anonymous`] creates it
//!   with `mmap` (NULL hint, no `MAP_FIXED`, `MAP_PRIVATE | MAP_ANONYMOUS`
//!   plus the caller's flags), so no existing memory is replaced and
//!   nothing else refers to it; its bytes are zero-filled, valid for `u8`.
//!   Only `Drop` unmaps it, exactly `len` bytes (the length given to
//!   `mmap`; the kernel rounds both calls up to the same whole pages).
//! * **A2 — slices borrow the value**: `&self` gives `&[u8]`, `&mut self`
//!   gives `&mut [u8]`, so no slice outlives the unmap in `Drop`.
//! * **A3 — taken apart and rebuilt once.** [`AnonMap::into_raw`] forgets
//!   the value (its `Drop` does not run), so the mapping stays until
//!   [`AnonMap::from_raw`] (`unsafe`: the caller passes the parts
//!   `into_raw` gave, once) owns it again — the shape `MrBuffer` needs
//!   (B1/B2 in `mr_buf.rs`).
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::ptr::NonNull;

use rustix::io::Errno;
use rustix::mm::{MapFlags, ProtFlags};

use crate::error::Error;

/// An owned, readable and writable, private anonymous mapping (A1).
#[derive(Debug)]
pub(crate) struct AnonMap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the value owns its mapping (A1); moving it to another thread
// moves only the pointer, and munmap may run on any thread.
unsafe impl Send for AnonMap {}
// SAFETY: `&AnonMap` gives only `&[u8]` (A2); writes need `&mut`.
unsafe impl Sync for AnonMap {}

impl AnonMap {
    /// Maps `len` (non-zero) zero-filled bytes, `MAP_PRIVATE | extra`.
    /// The kernel's errno on failure (`ENOMEM` for an empty huge-page pool).
    pub(crate) fn anonymous(len: usize, extra: MapFlags) -> Result<Self, Errno> {
        if len == 0 {
            return Err(Errno::INVAL);
        }
        // SAFETY: a fresh private anonymous mapping at an address the
        // kernel chooses (NULL hint, no MAP_FIXED): no existing memory is
        // replaced. `Self` owns it from here (A1).
        let p = unsafe {
            rustix::mm::mmap_anonymous(core::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE | extra)
        }?;
        // mmap never returns NULL for a NULL-hint mapping; answer as if it
        // failed should it ever (the mapping is then leaked, not touched).
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Errno::NOMEM)?;
        Ok(Self { ptr, len })
    }

    /// `madvise(MADV_DONTFORK)` over the whole mapping: a child process does
    /// not inherit it at all (so pinned pages are never shared
    /// copy-on-write with one). Changes nothing in this process (A1).
    pub(crate) fn dont_fork(&self) -> Result<(), Errno> {
        // SAFETY: advice over exactly our own mapping; DONTFORK alters only
        // what a future child inherits, never this process's memory.
        unsafe { rustix::mm::madvise(self.ptr.as_ptr().cast::<c_void>(), self.len, rustix::mm::Advice::LinuxDontFork) }
    }

    /// Length in bytes, as mapped.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes (A2).
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `len` mapped, zero-initialised bytes owned by `self`
        // (A1); the shared borrow of `self` keeps `&mut` access away (A2).
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, uniquely (A2).
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes the borrow unique.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Gives the mapping up without unmapping it (A3).
    pub(crate) fn into_raw(self) -> (*mut u8, usize) {
        let this = core::mem::ManuallyDrop::new(self);
        (this.ptr.as_ptr(), this.len)
    }

    /// Owns again the mapping [`into_raw`](Self::into_raw) gave up.
    ///
    /// # Safety
    ///
    /// `ptr` and `len` are exactly what one `into_raw` returned, used for
    /// one `from_raw` only (A3).
    pub(crate) unsafe fn from_raw(ptr: *mut u8, len: usize) -> Self {
        // SAFETY: `ptr` was a `NonNull` in the value `into_raw` took
        // apart (caller contract).
        let ptr = unsafe { NonNull::new_unchecked(ptr) };
        Self { ptr, len }
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping `anonymous` made (A1); `self` is
        // going away, so no slice borrowed from it outlives the unmap (A2).
        let r = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast::<c_void>(), self.len) };
        if let Err(e) = r {
            crate::error::report_drop_failure(Error::from_errno("munmap", e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_aligned_round_trip_and_refuses_zero() {
        let mut m = AnonMap::anonymous(5000, MapFlags::empty()).unwrap();
        assert_eq!(m.len(), 5000);
        assert_eq!(m.bytes().as_ptr() as usize % rustix::param::page_size(), 0);
        assert!(m.bytes().iter().all(|&b| b == 0));
        m.bytes_mut()[4999] = 3;
        m.dont_fork().unwrap();
        let (p, n) = m.into_raw();
        // SAFETY: the parts just returned, used once.
        let m = unsafe { AnonMap::from_raw(p, n) };
        assert_eq!((m.bytes().as_ptr(), m.len(), m.bytes()[4999]), (p.cast_const(), 5000, 3));
        assert_eq!(AnonMap::anonymous(0, MapFlags::empty()).unwrap_err(), Errno::INVAL);
    }
}
