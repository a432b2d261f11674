//! Reading and writing the bytes of a registered region while it is
//! registered.
//!
//! A [`Mr`] owns its buffer, taken apart into raw parts, for its whole
//! life, so no Rust reference to those bytes exists while the device (or,
//! with remote access, a peer) may read or write them. The application still
//! needs to fill send buffers and look at what arrived: these methods
//! copy between the region and ordinary Rust memory with volatile
//! accesses through the raw address, never forming a reference to the
//! region.
//!
//! # Safety
//!
//! * **R1 — the range is live.** `addr..addr+len` of a [`Mr`] is memory
//!   the process owns and keeps mapped while the `Mr` exists: the `Mr`
//!   holds the raw parts of its [`MrBuffer`](crate::MrBuffer), whose
//!   contract keeps the range allocated and untouched by anyone else until
//!   the parts are given back (after deregistration, which consumes the
//!   `Mr`); for `RawMem` (`Mr::reg_raw`) the caller promised the same.
//!   Every copy is bounds-checked against `len` first.
//! * **R2 — no references.** The bytes are only touched with volatile
//!   byte reads/writes through raw pointers (valid for any bit pattern,
//!   alignment 1), so concurrent DMA by the kernel (rxe copies into user
//!   pages from its tasks) cannot invalidate a Rust reference.
//! * **R3 — one CPU writer.** `write_at` takes `&mut self`, so two threads
//!   of this process cannot write the region through the same `Mr` at
//!   once, nor read it through `&Mr` while one writes.
#![allow(unsafe_code)]

use crate::error::{Error, ErrorKind, Result};
use crate::mr::{Mr, MrBuffer};

impl<B: MrBuffer> Mr<'_, B> {
    fn range(&self, verb: &'static str, offset: usize, n: usize) -> Result<*mut u8> {
        match offset.checked_add(n) {
            Some(end) if end <= self.len() => Ok(self.as_ptr().wrapping_add(offset)),
            _ => Err(Error::new(verb, ErrorKind::InvalidArgument)),
        }
    }

    /// Copies `src` into the region at `offset` (volatile stores; the
    /// region may be in use by the device, see the module docs).
    /// Out-of-range is `InvalidArgument`, nothing written.
    pub fn write_at(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        let p = self.range("ibv_mr write", offset, src.len())?;
        for (i, b) in src.iter().enumerate() {
            // SAFETY: `p + i` is inside the registered range (checked
            // above, R1); a volatile byte store forms no reference (R2);
            // `&mut self` makes us the only CPU writer through this `Mr`
            // (R3).
            unsafe { p.wrapping_add(i).write_volatile(*b) };
        }
        Ok(())
    }

    /// Copies `dst.len()` bytes of the region at `offset` into `dst`
    /// (volatile loads). Out-of-range is `InvalidArgument`.
    pub fn read_at(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        let p = self.range("ibv_mr read", offset, dst.len())?;
        for (i, b) in dst.iter_mut().enumerate() {
            // SAFETY: in range (R1); a volatile byte load of memory that
            // any bit pattern is valid for, no reference formed (R2).
            *b = unsafe { p.wrapping_add(i).read_volatile() };
        }
        Ok(())
    }

    /// The 8 bytes at `offset` as a native-endian `u64` (the layout RDMA
    /// atomics use on the responder's memory and in the local result).
    pub fn read_u64(&self, offset: usize) -> Result<u64> {
        let mut b = [0u8; 8];
        self.read_at(offset, &mut b)?;
        Ok(u64::from_ne_bytes(b))
    }

    /// Fills `n` bytes at `offset` with `byte`.
    pub fn fill(&mut self, offset: usize, n: usize, byte: u8) -> Result<()> {
        let p = self.range("ibv_mr write", offset, n)?;
        for i in 0..n {
            // SAFETY: as in `write_at`.
            unsafe { p.wrapping_add(i).write_volatile(byte) };
        }
        Ok(())
    }
}
