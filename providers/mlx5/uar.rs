//! The UAR: a page of device registers mapped from the device file, and
//! the doorbell stores into it (libmlx5 `post_send_db`, `mlx5_bf_copy`,
//! `mlx5_arm_cq`).
//!
//! A UAR page is MMIO, mapped write-combining on real hardware: the
//! process only ever *stores* into it, 64 bits at a time, never reads it
//! and never forms a reference to it. What the stores mean (a send
//! doorbell at a BlueFlame register, a CQ arm at `+0x20`) is the device's
//! contract; what the CPU must do around them (the write-combining
//! flushes) is argued in SAFETY.md, "mlx5: the memory barriers", because
//! no simulator can show it.
//!
//! # Safety
//!
//! * **U1 — ownership.** `ptr..ptr+len` is a shared mapping of the device
//!   file made by [`Uar::map`] (NULL hint, no `MAP_FIXED`: it replaces
//!   nothing; `len` a non-zero multiple of [`UAR_PAGE`]) and unmapped only
//!   by `Drop`; the pointer is private.
//! * **U2 — stores only.** Every access is a `write_volatile` of a `u64`
//!   at an offset checked by [`Uar::slot`] to be 8-aligned and inside the
//!   mapping (page-aligned base), so each is one aligned 64-bit store the
//!   compiler may neither split, merge, reorder with other volatile
//!   accesses, nor elide. Nothing reads the page, so what the device (or
//!   the simulator behind a memfd) keeps there is never observed.
//! * **U3 — fences.** `wc_flush` is `sfence` (x86_64), `dsb st`
//!   (aarch64): instructions with no memory operands and no effect on Rust
//!   state beyond ordering.
//! * **U4 — `BfLine`.** A BlueFlame register by address, made only by
//!   [`Uar::bf_line`], which checks once that both halves (`0` and
//!   `half`, a power of two of at least 64) are 64-byte lines inside the
//!   first page of the mapping: a copy through it, at `cur & half`, is
//!   eight 8-aligned stores inside the mapping (U2) whatever `cur` is. It
//!   keeps no borrow of the [`Uar`]: its one store, [`BfLine::ring_alone`],
//!   is `unsafe`, its caller proving the mapping still alive (registry G5:
//!   the handle holding it also holds the table that owns the pages).
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};

use rustix::fd::BorrowedFd;
use rustix::mm::{MapFlags, ProtFlags};

use crate::error::{Error, ErrorKind, Result};

/// Bytes of a UAR page (mlx5 UARs are 4 KiB; `log_uar_size` 12).
pub const UAR_PAGE: usize = 4096;
/// Offset of the CQ arm doorbell in a UAR page (`MLX5_CQ_DOORBELL`).
pub const CQ_DOORBELL: usize = 0x20;
/// Offset of the first BlueFlame register in a UAR page (`MLX5_BF_OFFSET`).
pub const BF_OFFSET: usize = 0x800;

/// The mmap offset of UAR page `index` for `cmd` (`MLX5_IB_MMAP_*`):
/// `((cmd << 8) | index) * page` (libmlx5 `set_command`/`set_index`),
/// with indices from 256 in bits 16.. (`MLX5_IB_MMAP_ALLOC_WC` only).
pub const fn mmap_offset(cmd: u32, index: u32) -> u64 {
    let idx = (index & 0xff) | ((index >> 8) << 16);
    ((cmd as u64) << 8 | idx as u64) * UAR_PAGE as u64
}

/// A mapped UAR page (U1).
#[derive(Debug)]
pub struct Uar {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is owned (U1); stores into it are MMIO with no
// Rust-visible state, valid from any thread; unmapping in any thread is fine.
unsafe impl Send for Uar {}
// SAFETY: `&Uar` only allows volatile 64-bit stores (U2), which are
// single instructions; callers serialise what must be serialised (the
// BlueFlame register lock, `BfReg::ring`; for a low-latency register, its
// one QP's slot lock, `BfReg::ring_alone`).
unsafe impl Sync for Uar {}

impl Uar {
    /// Maps `len` bytes of the device file at `offset` (shared, write only,
    /// as libmlx5 maps UARs).
    pub fn map(verb: &'static str, fd: BorrowedFd<'_>, offset: u64, len: usize) -> Result<Self> {
        if len == 0 || !len.is_multiple_of(UAR_PAGE) {
            return Err(Error::new(verb, ErrorKind::InvalidArgument).with_detail("mlx5: a UAR mapping is whole pages"));
        }
        // SAFETY: a new shared mapping where the kernel chooses (NULL
        // hint, no MAP_FIXED): no existing memory is replaced; `Self` owns
        // it (U1).
        let p = unsafe { rustix::mm::mmap(core::ptr::null_mut(), len, ProtFlags::WRITE, MapFlags::SHARED, fd, offset) }
            .map_err(|e| Error::from_errno(verb, e).with_detail("mlx5: mapping a UAR page of the device file failed"))?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Error::new(verb, ErrorKind::OutOfResources))?;
        Ok(Self { ptr, len })
    }

    /// The address of the 8 bytes at `off`, if aligned and inside (U2).
    #[inline(always)]
    fn slot(&self, off: usize) -> Option<*mut u64> {
        let end = off.checked_add(8)?;
        (end <= self.len && off.is_multiple_of(8)).then(|| self.ptr.as_ptr().wrapping_add(off).cast::<u64>())
    }

    /// One 64-bit store of `bytes` (as they are in memory) at `off`;
    /// `false`, and nothing stored, if `off` is misaligned or outside.
    #[inline(always)]
    pub fn store(&self, off: usize, bytes: [u8; 8]) -> bool {
        let Some(p) = self.slot(off) else { return false };
        // SAFETY: aligned and inside the live mapping (U1, U2); a volatile
        // store, no reference formed.
        unsafe { p.write_volatile(u64::from_ne_bytes(bytes)) };
        true
    }

    /// Stores 64-byte chunks at `off`, `off + 64`, ... (each eight 64-bit
    /// stores in address order, as `mlx5_bf_copy` does); `false`, and
    /// nothing stored, if any would fall outside.
    #[inline]
    pub fn store_chunks(&self, off: usize, chunks: impl ExactSizeIterator<Item = [u64; 8]>) -> bool {
        let n = chunks.len();
        let Some(bytes) = n.checked_mul(64) else { return false };
        if off.checked_add(bytes).is_none_or(|e| e > self.len) {
            return false;
        }
        let Some(first) = self.slot(off) else { return false };
        // (at most `n` chunks, whatever the iterator's length claimed)
        for (c, chunk) in chunks.take(n).enumerate() {
            for (w, v) in chunk.into_iter().enumerate() {
                // SAFETY: word `c * 8 + w` from the aligned `first` (U2):
                // `c < n`, `w < 8`, so it ends at most `64 * n` bytes
                // after `off`, inside the mapping (checked above, U1); a
                // volatile store, no reference formed.
                unsafe { first.wrapping_add(c * 8 + w).write_volatile(v) };
            }
        }
        true
    }
}

impl Uar {
    /// [`Uar::store_chunks`] of the one chunk `block`.
    #[inline(always)]
    pub fn store_block(&self, off: usize, block: [u64; 8]) -> bool {
        self.store_block_with(off, |w| block[w & 7])
    }

    /// [`Uar::store_chunks`] of one chunk whose word `w` is `word(w)`,
    /// each read just before its store (no copy of the chunk waits in
    /// registers or on the stack), at a 64-byte-aligned `off` (a
    /// BlueFlame register half; anything else is refused).
    #[inline(always)]
    pub fn store_block_with(&self, off: usize, word: impl Fn(usize) -> u64) -> bool {
        // Every mapping is at least a page (U1, `map`): one test against
        // a constant instead of the length. A BlueFlame copy goes to a
        // 64-byte-aligned place (a register half, `BF_OFFSET + k *
        // bf_reg_size + half`), one write-combining line: an offset inside
        // the first page and 64-aligned has no bit outside `UAR_PAGE - 64`.
        if off & !(UAR_PAGE - 64) != 0 {
            return false;
        }
        let first = self.ptr.as_ptr().wrapping_add(off).cast::<u64>();
        for w in 0..8 {
            // SAFETY: word `w < 8` from the 8-aligned `off` (U2), ending
            // at most 64 bytes after it, inside the first page of the
            // mapping (checked above; `len >= UAR_PAGE`, U1); a volatile
            // store, no reference formed.
            unsafe { first.wrapping_add(w).write_volatile(word(w)) };
        }
        true
    }
}

impl Uar {
    /// The BlueFlame register at `off` whose halves are `half` bytes
    /// apart, by address (U4): `None` unless both halves are 64-byte
    /// lines inside the first page and `half` is a power of two of at
    /// least 64 (so `cur & half` is one of the two).
    pub fn bf_line(&self, off: usize, half: u32) -> Option<BfLine> {
        let h = half as usize;
        let line = |o: usize| o & !(UAR_PAGE - 64) == 0;
        if !(h.is_power_of_two() && h >= 64 && line(off) && line(off + h)) {
            return None;
        }
        let at = NonNull::new(self.ptr.as_ptr().wrapping_add(off).cast::<u64>())?;
        Some(BfLine { at, half })
    }
}

/// A BlueFlame register by address ([`Uar::bf_line`], U4): what a QP
/// that holds a low-latency register alone rings on every post, worked
/// out once (the page, the register's offset, the half's size), so that
/// a ring is the load of the half, the copy and the flip.
#[derive(Clone, Copy, Debug)]
pub struct BfLine {
    /// The register's first half in the mapping.
    at: NonNull<u64>,
    /// `bf_reg_size / 2`: where the second half is, and the flip.
    half: u32,
}

impl BfLine {
    /// [`BfReg::ring_alone`] of the one 64-byte block whose word `w` is
    /// `word(w)` (read just before its store), at the half `reg` names:
    /// `wc_flush`, the eight stores, `wc_flush`, the flip. `reg` is the
    /// register's state ([`Doorbell::state`](super::ctx::Doorbell::state)'s).
    /// The half is `state & half`: the state only ever holds `0` or
    /// `half` (every ring of a register flips by the same `half`) besides
    /// `LOCKED`, so this is `ring_alone`'s `state & !LOCKED`.
    ///
    /// # Safety
    ///
    /// The [`Uar`] this line came from is still mapped (U1, U4).
    #[inline(always)]
    pub unsafe fn ring_alone(&self, reg: &BfReg, word: impl Fn(usize) -> u64) {
        let cur = reg.state.load(Ordering::Relaxed) & self.half;
        wc_flush();
        let first = self.at.as_ptr().wrapping_byte_add(cur as usize);
        for w in 0..8 {
            // SAFETY: word `w < 8` of the half at `cur & half`, 0 or
            // `half`: one of the two 64-byte lines `bf_line` checked inside
            // the first page (U4), 8-aligned; the mapping is alive (the
            // caller's contract); a volatile store, no reference formed.
            unsafe { first.wrapping_add(w).write_volatile(word(w)) };
        }
        wc_flush();
        reg.state.store(cur ^ self.half, Ordering::Relaxed);
    }
}

// SAFETY: an address into a UAR mapping (U4): stores there are MMIO with
// no Rust-visible state, valid from any thread (as `Uar`'s, U2); its one
// use is `unsafe`, its caller proving the mapping alive.
unsafe impl Send for BfLine {}
// SAFETY: as for `Send`: `&BfLine` gives only `ring_alone`.
unsafe impl Sync for BfLine {}

impl Drop for Uar {
    fn drop(&mut self) {
        // SAFETY: the mapping `map` made (U1), unmapped once; the owner is
        // going away and no pointer into it is kept elsewhere.
        let r = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast::<c_void>(), self.len) };
        if let Err(e) = r {
            crate::error::report_drop_failure(Error::from_errno("munmap", e));
        }
    }
}

/// Orders every earlier store (write-back and write-combining) before
/// every later one and pushes write-combining buffers out: libmlx5's
/// `mmio_wc_start()` / `mmio_flush_writes()` (SAFETY.md, mlx5 barriers).
#[inline(always)]
pub fn wc_flush() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no operands and only orders stores (U3).
    unsafe {
        core::arch::asm!("sfence", options(nostack, preserves_flags))
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: `dsb st` has no operands and only orders stores (U3).
    unsafe {
        core::arch::asm!("dsb st", options(nostack, preserves_flags))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    core::sync::atomic::fence(Ordering::SeqCst);
}

/// One BlueFlame register's shared state (libmlx5 `struct mlx5_bf`): the
/// half the next doorbell goes to, and the lock that keeps two QPs sharing
/// the register from interleaving their copies.
#[derive(Debug, Default)]
pub struct BfReg {
    /// Bit 31: locked; bits 0..31: the current offset (0 or `buf_size`).
    state: AtomicU32,
}

const LOCKED: u32 = 1 << 31;

impl BfReg {
    /// A register whose next doorbell goes to its first half.
    pub const fn new() -> Self {
        Self { state: AtomicU32::new(0) }
    }

    /// Runs `store(offset)` under the register's lock and then flips the
    /// half (`bf->offset ^= buf_size`), with the write-combining flush
    /// before the store (the doorbell record and WQEs first) and after it
    /// (the doorbell leaves the CPU before the lock does), as
    /// `post_send_db` orders them.
    #[inline(always)]
    pub fn ring<R>(&self, buf_size: u32, store: impl FnOnce(usize) -> R) -> R {
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            if cur & LOCKED != 0 {
                core::hint::spin_loop();
                cur = self.state.load(Ordering::Relaxed);
                continue;
            }
            match self.state.compare_exchange_weak(cur, cur | LOCKED, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        wc_flush();
        let r = store(cur as usize);
        wc_flush();
        self.state.store(cur ^ buf_size, Ordering::Release);
        r
    }

    /// [`BfReg::ring`] of a low-latency register, which one QP holds
    /// alone ([`Doorbell::alone`](super::ctx::Doorbell::alone)): no lock.
    /// That QP's posts ring under its slot lock (`ops`), so they are
    /// serialised and each sees the half the previous one left (the slot
    /// lock's acquire/release orders the relaxed accesses). Nothing else
    /// rings the register: the kernel hands it to one QP at a time, and
    /// every QP it is given to rings it this way (the class is a function
    /// of the register number), never by [`BfReg::ring`]. A kernel that
    /// broke that rule could only garble what the device reads (the MMIO
    /// stores are Sync, U2) or lose a half flip; `LOCKED` is masked off, so
    /// even a mix with locked rings cannot leave the lock held for ever.
    #[inline(always)]
    pub fn ring_alone<R>(&self, buf_size: u32, store: impl FnOnce(usize) -> R) -> R {
        let cur = self.state.load(Ordering::Relaxed) & !LOCKED;
        wc_flush();
        let r = store(cur as usize);
        wc_flush();
        self.state.store(cur ^ buf_size, Ordering::Relaxed);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mmap_offsets_as_libmlx5_computes_them() {
        assert_eq!(mmap_offset(0, 0), 0);
        assert_eq!(mmap_offset(0, 7), 7 * 4096);
        assert_eq!(mmap_offset(3, 0), 0x300 * 4096, "NC page");
        assert_eq!(mmap_offset(6, 0x1ff), (6 << 8 | 0xff | 1 << 16) * 4096, "ALLOC_WC index 511");
    }

    /// A memfd stands in for the device file (as the simulator's UAR
    /// memfd does); a second, readable mapping checks the stores.
    #[test]
    fn stores_land_whole_and_in_bounds() {
        let fd = rustix::fs::memfd_create("verbs-uar-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, 2 * UAR_PAGE as u64).unwrap();
        let uar = Uar::map("test", rustix::fd::AsFd::as_fd(&fd), UAR_PAGE as u64, UAR_PAGE).unwrap();
        assert!(Uar::map("test", rustix::fd::AsFd::as_fd(&fd), 0, 100).is_err());
        assert!(uar.store(CQ_DOORBELL, [1, 2, 3, 4, 5, 6, 7, 8]));
        assert!(!uar.store(UAR_PAGE - 4, [0; 8]), "outside");
        assert!(!uar.store(0x21, [0; 8]), "misaligned");
        let chunks = [[0x1111_u64; 8], [0x2222_u64; 8]];
        assert!(uar.store_chunks(BF_OFFSET + 256, chunks.iter().copied()));
        assert!(!uar.store_chunks(UAR_PAGE - 64, chunks.iter().copied()), "second chunk would end outside");
        let mut page = [0u8; UAR_PAGE];
        rustix::io::pread(&fd, &mut page, UAR_PAGE as u64).unwrap();
        assert_eq!(&page[0x20..0x28], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&page[0x28..0x30], &[0; 8]);
        assert_eq!(u64::from_ne_bytes(page[0x900..0x908].try_into().unwrap()), 0x1111);
        assert_eq!(u64::from_ne_bytes(page[0x938..0x940].try_into().unwrap()), 0x1111);
        assert_eq!(u64::from_ne_bytes(page[0x940..0x948].try_into().unwrap()), 0x2222);
        assert_eq!(u64::from_ne_bytes(page[0x978..0x980].try_into().unwrap()), 0x2222);
        assert_eq!(&page[0x980..0x988], &[0; 8]);
        assert!(page[UAR_PAGE - 64..].iter().all(|&b| b == 0), "the refused copy stored nothing");
    }

    #[test]
    fn one_block_lands_whole_or_not_at_all() {
        let fd = rustix::fs::memfd_create("verbs-uar-block", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, UAR_PAGE as u64).unwrap();
        let uar = Uar::map("test", rustix::fd::AsFd::as_fd(&fd), 0, UAR_PAGE).unwrap();
        let block: [u64; 8] = core::array::from_fn(|i| 0x100 + i as u64);
        assert!(uar.store_block(BF_OFFSET + 256, block));
        assert!(!uar.store_block(UAR_PAGE - 56, block), "would end outside");
        assert!(!uar.store_block(BF_OFFSET + 4, block), "misaligned");
        assert!(!uar.store_block(BF_OFFSET + 8, block), "not on a 64-byte line");
        assert!(!uar.store_block(usize::MAX - 63, block), "far outside");
        let mut page = [0u8; UAR_PAGE];
        rustix::io::pread(&fd, &mut page, 0).unwrap();
        for (i, w) in page[0x900..0x940].chunks(8).enumerate() {
            assert_eq!(u64::from_ne_bytes(w.try_into().unwrap()), 0x100 + i as u64);
        }
        assert!(page[UAR_PAGE - 64..].iter().all(|&b| b == 0), "the refused copy stored nothing");
        assert!(page[0x940..0x948].iter().all(|&b| b == 0));
    }

    /// A register by address (`bf_line`) rings the halves the register's
    /// state names, shared with `BfReg::ring_alone`, and is refused
    /// where a half would leave the page or a 64-byte line.
    #[test]
    fn bf_line_alternates_halves_with_the_register_state() {
        let fd = rustix::fs::memfd_create("verbs-uar-line", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, UAR_PAGE as u64).unwrap();
        let uar = Uar::map("test", rustix::fd::AsFd::as_fd(&fd), 0, UAR_PAGE).unwrap();
        assert!(uar.bf_line(UAR_PAGE - 256, 256).is_none(), "second half outside the page");
        assert!(uar.bf_line(BF_OFFSET + 8, 256).is_none(), "not on a 64-byte line");
        assert!(uar.bf_line(BF_OFFSET, 96).is_none(), "half not a power of two");
        assert!(uar.bf_line(BF_OFFSET, 32).is_none(), "half under a line");
        assert!(uar.bf_line(usize::MAX - 63, 256).is_none(), "far outside");
        let line = uar.bf_line(BF_OFFSET + 512, 256).unwrap();
        let reg = BfReg::new();
        // SAFETY: `uar` is mapped for the whole test.
        unsafe { line.ring_alone(&reg, |w| 0x100 + w as u64) };
        assert_eq!(reg.ring_alone(256, |o| o), 256, "the line flipped the shared state");
        // SAFETY: as above.
        unsafe { line.ring_alone(&reg, |w| 0x200 + w as u64) };
        let mut page = [0u8; UAR_PAGE];
        rustix::io::pread(&fd, &mut page, 0).unwrap();
        let word = |o: usize| u64::from_ne_bytes(page[o..o + 8].try_into().unwrap());
        for w in 0..8 {
            assert_eq!(word(0xa00 + 8 * w), 0x200 + w as u64, "third ring: first half again");
            assert_eq!(word(0xb00 + 8 * w), 0, "the second half was rung by `ring_alone`'s store, which stored nothing");
        }
        assert!(page[..0xa00].iter().chain(&page[0xa40..0xb00]).chain(&page[0xb40..]).all(|&b| b == 0));
    }

    #[test]
    fn bf_register_alternates_halves() {
        let bf = BfReg::new();
        let offs: [usize; 4] = core::array::from_fn(|_| bf.ring(256, |o| o));
        assert_eq!(offs, [0, 256, 0, 256]);
    }
}
