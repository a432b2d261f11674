//! A context's UAR pages: a memfd the daemon creates, maps, and passes to
//! the shim, which maps it wherever libmlx5 `mmap`s the uverbs descriptor.
//! The doorbell scanner reads (and clears) the doorbell words here.
//!
//! # Safety
//! U1: the mapping is made by [`Uar::new`] (NULL hint, no `MAP_FIXED`,
//! `UAR_PAGES` pages, shared, read/write) and unmapped only by `Drop`, so
//! every address `base + off` with `off + 8 <= len` and `off % 8 == 0` is
//! valid and 8-aligned for the `Uar`'s lifetime. U2: the daemon touches the
//! bytes only through `AtomicU64` (never a plain reference), so its accesses
//! do not race among its own threads; the application writes them with
//! plain stores from another process, which is what `AtomicU64` over shared
//! memory tolerates (like the kernel's view of a device's MMIO page).
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::proto::UAR_PAGES;

/// Bytes per UAR page.
pub const PAGE: usize = 4096;
/// BlueFlame register size the context reports (`bf_reg_size`).
pub const BF_REG_SIZE: usize = 512;
/// Offset of the first BlueFlame register in a UAR page.
pub const BF_OFFSET: usize = 0x800;
/// Offset of the CQ arm doorbell in a UAR page.
pub const CQ_ARM_OFFSET: usize = 0x20;

/// BlueFlame registers per 4 KiB UAR page (legacy mode: two, each used in
/// two alternating halves).
pub const BFREGS_PER_PAGE: usize = 2;

/// Swaps a nonzero word to zero (a plain load first: scanning idle pages
/// costs no locked instruction).
fn take(w: &AtomicU64) -> u64 {
    if w.load(Ordering::Relaxed) == 0 {
        0
    } else {
        w.swap(0, Ordering::AcqRel)
    }
}

/// A doorbell found in a UAR page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doorbell {
    /// Send doorbell: first 8 bytes of a ctrl segment at a BlueFlame half
    /// (whether a BlueFlame copy follows is `super::blueflame`'s to tell).
    Send {
        /// QP number (qpn_ds >> 8).
        qpn: u32,
        /// WQE index (opmod_idx_opcode bits 8-23).
        wqe_index: u16,
        /// The WQE's size in 16-byte units (qpn_ds bits 0-5).
        ds: u32,
        /// UAR page.
        page: u32,
        /// Offset in the page.
        offset: u32,
    },
    /// CQ arm: the 64-bit big-endian `arm word << 32 | cqn` at +0x20.
    Arm {
        /// CQ number.
        cqn: u32,
        /// arm_sn << 28 | cmd | ci.
        word: u32,
    },
}

/// One context's UAR pages.
pub struct Uar {
    fd: OwnedFd,
    base: usize,
    len: usize,
    /// Pages in use (tot_bfregs / 2 from GET_CONTEXT); 0 until then.
    pub active_pages: AtomicU32,
}

impl Uar {
    /// Creates the memfd and maps it.
    pub fn new() -> io::Result<Self> {
        let len = UAR_PAGES as usize * PAGE;
        // SAFETY: memfd_create with a NUL-terminated literal name.
        let fd = unsafe { libc::memfd_create(c"verbs-sim-uar".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: ftruncate on our memfd.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as i64) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh shared mapping of our memfd, no fixed address (U1).
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0)
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Uar { fd, base: p as usize, len, active_pages: AtomicU32::new(0) })
    }

    /// The memfd (passed to the shim).
    pub fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        assert!(off.is_multiple_of(8) && off + 8 <= self.len, "UAR word offset {off:#x}");
        // SAFETY: U1 (inside the mapping, aligned, alive as long as &self)
        // and U2 (only ever accessed atomically by the daemon).
        unsafe { &*((self.base + off) as *const AtomicU64) }
    }

    /// Takes the doorbells written since the last scan (each word is
    /// swapped to zero), appending them to `out`.
    pub fn scan(&self, out: &mut Vec<Doorbell>) {
        let pages = self.active_pages.load(Ordering::Acquire).min(UAR_PAGES) as usize;
        for page in 0..pages {
            let pbase = page * PAGE;
            let arm = take(self.word(pbase + CQ_ARM_OFFSET));
            if arm != 0 {
                let b = arm.to_ne_bytes();
                let word = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                let cqn = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                out.push(Doorbell::Arm { cqn, word });
            }
            for half in 0..BFREGS_PER_PAGE * 2 {
                let off = pbase + BF_OFFSET + half * BF_REG_SIZE / 2;
                let first = take(self.word(off));
                if first == 0 {
                    continue;
                }
                let b = first.to_ne_bytes();
                let opmod_idx_opcode = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                let qpn_ds = u32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                out.push(Doorbell::Send {
                    qpn: qpn_ds >> 8,
                    wqe_index: (opmod_idx_opcode >> 8) as u16,
                    ds: qpn_ds & 0x3f,
                    page: page as u32,
                    offset: (off - pbase) as u32,
                });
            }
        }
    }
}

impl Uar {
    /// Bytes 8..len of the register half at `page`/`offset` (the tail of a
    /// BlueFlame copy, in memory order), read word by word.
    pub fn tail(&self, page: u32, offset: u32, len: usize) -> Vec<u8> {
        let base = page as usize * PAGE + offset as usize;
        let words = len.min(BF_REG_SIZE / 2) / 8;
        (1..words).flat_map(|k| self.word(base + 8 * k).load(Ordering::Acquire).to_ne_bytes()).collect()
    }

    /// Zeroes bytes 8.. of the register half, for the next doorbell there.
    pub fn clear_tail(&self, page: u32, offset: u32) {
        let base = page as usize * PAGE + offset as usize;
        for k in 1..BF_REG_SIZE / 2 / 8 {
            let w = self.word(base + 8 * k);
            if w.load(Ordering::Relaxed) != 0 {
                w.store(0, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
impl Uar {
    /// Test only: the application's store of `v` at byte `off` of the pages.
    pub fn poke(&self, off: usize, v: u64) {
        self.word(off).store(v, Ordering::Release);
    }
}

impl Drop for Uar {
    fn drop(&mut self) {
        // SAFETY: U1: the mapping made in `new`, unmapped once, here.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second mapping of the memfd plays the application.
    fn app_map(u: &Uar) -> *mut u8 {
        // SAFETY: a fresh shared mapping of the test's memfd.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), PAGE * 2, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, u.fd().as_raw_fd(), 0)
        };
        assert_ne!(p, libc::MAP_FAILED);
        p.cast()
    }

    #[test]
    fn doorbells_are_found_once_and_cleared() {
        let u = Uar::new().unwrap();
        u.active_pages.store(2, Ordering::Release);
        let app = app_map(&u);
        // ctrl: opmod_idx_opcode = idx 5 << 8 | 0x0a (SEND); qpn_ds = 0x123 << 8 | 2
        let ctrl: [u8; 8] = [0, 0, 5, 0x0a, 0, 0x01, 0x23, 0x02];
        let arm: [u8; 8] = [0x10, 0, 0, 7, 0, 0, 0, 0x42];
        // SAFETY: inside the 2-page test mapping.
        unsafe {
            std::ptr::copy_nonoverlapping(ctrl.as_ptr(), app.add(PAGE + 0x900), 8); // plain, page 1 half 1
            std::ptr::copy_nonoverlapping(ctrl.as_ptr(), app.add(0xa00), 8); // BlueFlame copy, page 0
            app.add(0xa00 + 16).write(0xff);
            std::ptr::copy_nonoverlapping(arm.as_ptr(), app.add(0x20), 8);
        }
        let mut out = Vec::new();
        u.scan(&mut out);
        assert_eq!(
            out,
            vec![
                Doorbell::Arm { cqn: 0x42, word: 0x1000_0007 },
                Doorbell::Send { qpn: 0x123, wqe_index: 5, ds: 2, page: 0, offset: 0xa00 },
                Doorbell::Send { qpn: 0x123, wqe_index: 5, ds: 2, page: 1, offset: 0x900 },
            ]
        );
        // the scan took only the first words; the BlueFlame tail stays for
        // the verdict (server::blueflame) until cleared
        let tail = u.tail(0, 0xa00, 64);
        assert_eq!((tail.len(), tail[8], tail.iter().filter(|&&b| b != 0).count()), (56, 0xff, 1));
        u.clear_tail(0, 0xa00);
        assert!(u.tail(0, 0xa00, 256).iter().all(|&b| b == 0));
        out.clear();
        u.scan(&mut out);
        assert!(out.is_empty(), "{out:?}");
        // SAFETY: unmapping the test mapping.
        unsafe { libc::munmap(app.cast(), PAGE * 2) };
    }
}
