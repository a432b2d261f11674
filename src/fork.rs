//! Fork safety: `ibv_fork_init` and `ibv_is_fork_initialized`.
//!
//! A child created by `fork()` shares copy-on-write pages with its parent.
//! Before Linux 5.13 a write by the parent after `fork()` moved the parent
//! to a fresh copy of a page while the device kept writing the old, pinned
//! one — registered memory silently stopped working. The kernel now copies
//! pinned pages at fork time (RDMA netlink reports
//! `RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK`); then nothing needs doing and
//! [`fork_init`] is a no-op ([`ForkStatus::Unneeded`]).
//!
//! On older kernels [`fork_init`] switches on the libibverbs scheme:
//! every registered range is marked `MADV_DONTFORK` (the child does not
//! get those pages at all) and unmarked with `MADV_DOFORK` when the last
//! region covering a page is deregistered. Overlapping regions are
//! counted, so deregistering one never unprotects pages another still
//! uses. The bookkeeping is a fixed table of [`MAX_RANGES`] ranges (no
//! heap); registering more regions than that while fork safety is on
//! fails with [`ErrorKind::OutOfResources`].
//!
//! As in libibverbs, `RDMAV_FORK_SAFE` or `IBV_FORK_SAFE` in the
//! environment (`std` builds) turn fork safety on before the first
//! registration, and [`fork_init`] after a region was registered without
//! it fails (`EINVAL` in C): the earlier regions are unprotected.
//! Huge-page-backed memory (libibverbs' `RDMAV_HUGEPAGES_SAFE`) is not
//! handled: ranges are rounded to the base page size.
//!
//! # Safety
//!
//! `madvise(MADV_DONTFORK / MADV_DOFORK)` is the only unsafe operation. It
//! changes whether a child process inherits pages, never their contents or
//! mapping in this process, so it cannot invalidate any Rust reference;
//! the ranges passed are page-rounded versions of ranges the caller
//! registered (a failure such as `ENOMEM` for an unmapped range is an
//! error, not undefined behaviour).
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use crate::error::{Error, ErrorKind, Result};
use crate::access::AccessFlags;

/// How many registered ranges the fork-safety table can track.
pub const MAX_RANGES: usize = 1024;

/// `enum ibv_fork_status`.
#[doc(alias = "ibv_fork_status")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum ForkStatus {
    /// `IBV_FORK_DISABLED`: no fork protection; registered memory breaks
    /// in the parent after `fork()` on kernels without copy-on-fork.
    Disabled = 0,
    /// `IBV_FORK_ENABLED`: [`fork_init`] succeeded; registered ranges are
    /// `MADV_DONTFORK`.
    Enabled = 1,
    /// `IBV_FORK_UNNEEDED`: the kernel copies pinned pages on fork.
    Unneeded = 2,
}

const OFF: u8 = 0;
const ON: u8 = 1;
const UNNEEDED: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(OFF);
/// A region was registered while protection was off (libibverbs `too_late`).
static TOO_LATE: AtomicBool = AtomicBool::new(false);
/// The environment was consulted (once, at the first registration).
static ENV_CHECKED: AtomicBool = AtomicBool::new(false);

/// Serialises table updates together with their `madvise` calls.
static LOCK: AtomicBool = AtomicBool::new(false);
/// Page-rounded `[start, end)` of each tracked range; `end == 0` is free.
/// Only read or written with `LOCK` held.
static STARTS: [AtomicUsize; MAX_RANGES] = [const { AtomicUsize::new(0) }; MAX_RANGES];
static ENDS: [AtomicUsize; MAX_RANGES] = [const { AtomicUsize::new(0) }; MAX_RANGES];

struct Locked;

impl Locked {
    fn acquire() -> Self {
        while LOCK.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            core::hint::spin_loop();
        }
        Locked
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        LOCK.store(false, Ordering::Release);
    }
}

/// Does the running kernel copy pinned pages on fork? (`std`: asks RDMA
/// netlink; errors count as "no", as in libibverbs. `no_std`: "no".)
fn kernel_copies_on_fork() -> bool {
    #[cfg(feature = "std")]
    {
        crate::discovery::copy_on_fork().unwrap_or(false)
    }
    #[cfg(not(feature = "std"))]
    {
        false
    }
}

/// `ibv_fork_init`: makes registered memory survive `fork()` in the parent.
///
/// A no-op on kernels that copy pinned pages on fork (or if already on).
/// Fails with [`ErrorKind::InvalidArgument`] if a memory region was
/// registered before, without protection.
#[doc(alias = "ibv_fork_init")]
pub fn fork_init() -> Result<()> {
    if STATE.load(Ordering::Acquire) != OFF {
        return Ok(());
    }
    fork_init_with(kernel_copies_on_fork())
}

/// [`fork_init`] once the kernel was asked whether it copies on fork.
fn fork_init_with(copy_on_fork: bool) -> Result<()> {
    if copy_on_fork {
        STATE.store(UNNEEDED, Ordering::Release);
        return Ok(());
    }
    let _l = Locked::acquire();
    if TOO_LATE.load(Ordering::Relaxed) {
        return Err(Error::new("ibv_fork_init", ErrorKind::InvalidArgument));
    }
    STATE.store(ON, Ordering::Release);
    Ok(())
}

/// `ibv_is_fork_initialized`: whether fork protection is on, off, or not
/// needed because the kernel copies pinned pages on fork.
#[doc(alias = "ibv_is_fork_initialized")]
pub fn is_fork_initialized() -> ForkStatus {
    if STATE.load(Ordering::Acquire) == UNNEEDED || kernel_copies_on_fork() {
        return ForkStatus::Unneeded;
    }
    if STATE.load(Ordering::Acquire) == ON {
        ForkStatus::Enabled
    } else {
        ForkStatus::Disabled
    }
}

/// `RDMAV_FORK_SAFE` / `IBV_FORK_SAFE`: libibverbs turns fork safety on at
/// initialisation if either is set; we do it before the first registration.
fn check_env_once() {
    let already_checked = ENV_CHECKED.swap(true, Ordering::AcqRel);
    // Without std there is no environment to read.
    #[cfg(not(feature = "std"))]
    let _ = already_checked;
    #[cfg(feature = "std")]
    if !already_checked
        && (std::env::var_os("RDMAV_FORK_SAFE").is_some() || std::env::var_os("IBV_FORK_SAFE").is_some())
    {
        if let Err(e) = fork_init() {
            crate::log::err(format_args!("fork()-safety requested but init failed: {e}"));
        }
    }
}

fn page_round(addr: usize, len: usize) -> (usize, usize) {
    let page = rustix::param::page_size();
    let start = addr & !(page - 1);
    let end = addr.saturating_add(len).saturating_add(page - 1) & !(page - 1);
    (start, end)
}

fn advise(start: usize, end: usize, advice: rustix::mm::Advice) -> rustix::io::Result<()> {
    if start >= end {
        return Ok(());
    }
    // SAFETY: MADV_DONTFORK/MADV_DOFORK only change whether a future child
    // inherits these pages; contents and mappings of this process are
    // untouched, so no Rust reference or allocation is affected. The range
    // is page-aligned (page_round); an unmapped range yields ENOMEM.
    unsafe { rustix::mm::madvise(start as *mut core::ffi::c_void, end - start, advice) }
}

/// `ibv_dontfork_range` for one registration, undone by dropping it unless
/// [`ForkRange::keep`] is called (the registration then owns the range
/// until [`ForkRange::release`]).
#[must_use]
pub(crate) struct ForkRange {
    slot: Option<usize>,
}

impl ForkRange {
    /// Marks the pages of `addr..addr+len` `MADV_DONTFORK` if fork safety
    /// is on (on-demand-paging regions are not pinned and are skipped).
    pub(crate) fn protect(verb: &'static str, addr: usize, len: usize, access: AccessFlags) -> Result<Self> {
        check_env_once();
        if access.contains(AccessFlags::ON_DEMAND) {
            return Ok(Self { slot: None });
        }
        let _l = Locked::acquire();
        if STATE.load(Ordering::Acquire) != ON {
            TOO_LATE.store(true, Ordering::Relaxed);
            return Ok(Self { slot: None });
        }
        let (start, end) = page_round(addr, len);
        let slot = (0..MAX_RANGES)
            .find(|&i| ENDS[i].load(Ordering::Relaxed) == 0)
            .ok_or(Error::new(verb, ErrorKind::OutOfResources))?;
        advise(start, end, rustix::mm::Advice::LinuxDontFork).map_err(|e| Error::from_errno(verb, e))?;
        STARTS[slot].store(start, Ordering::Relaxed);
        ENDS[slot].store(end, Ordering::Relaxed);
        Ok(Self { slot: Some(slot) })
    }

    /// The registration succeeded: keep the range protected.
    pub(crate) fn keep(mut self) {
        self.slot = None;
    }

    /// `ibv_dofork_range` after deregistration: forgets one tracked range
    /// equal to `addr..addr+len` and re-enables fork inheritance for the
    /// pages no other tracked range covers.
    pub(crate) fn release(addr: usize, len: usize, access: AccessFlags) {
        if access.contains(AccessFlags::ON_DEMAND) || STATE.load(Ordering::Acquire) != ON {
            return;
        }
        let (start, end) = page_round(addr, len);
        let _l = Locked::acquire();
        let found = (0..MAX_RANGES).find(|&i| {
            ENDS[i].load(Ordering::Relaxed) == end && STARTS[i].load(Ordering::Relaxed) == start
        });
        if let Some(i) = found {
            free_slot_locked(i);
        }
    }
}

impl Drop for ForkRange {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            let _l = Locked::acquire();
            free_slot_locked(i);
        }
    }
}

/// Frees table slot `i` and `MADV_DOFORK`s the parts of its range that no
/// remaining range covers. Caller holds `LOCK`.
fn free_slot_locked(i: usize) {
    let (start, end) = (STARTS[i].load(Ordering::Relaxed), ENDS[i].load(Ordering::Relaxed));
    ENDS[i].store(0, Ordering::Relaxed);
    STARTS[i].store(0, Ordering::Relaxed);
    let mut cur = start;
    while cur < end {
        // Skip past every range covering `cur`.
        let covered = (0..MAX_RANGES).filter_map(|j| {
            let (s, e) = (STARTS[j].load(Ordering::Relaxed), ENDS[j].load(Ordering::Relaxed));
            (e != 0 && s <= cur && cur < e).then_some(e)
        });
        if let Some(e) = covered.max() {
            cur = e;
            continue;
        }
        // `cur` is uncovered up to the next range's start (or `end`).
        let next = (0..MAX_RANGES)
            .filter_map(|j| {
                let (s, e) = (STARTS[j].load(Ordering::Relaxed), ENDS[j].load(Ordering::Relaxed));
                (e != 0 && s > cur && s < end).then_some(s)
            })
            .min()
            .unwrap_or(end);
        if let Err(e) = advise(cur, next, rustix::mm::Advice::LinuxDoFork) {
            crate::error::report_drop_failure(Error::from_errno("ibv_dofork_range", e));
        }
        cur = next;
    }
}

/// Whether the page-rounded range `[start, end)` is tracked (for tests).
#[cfg(test)]
fn tracked(start: usize, end: usize) -> bool {
    let _l = Locked::acquire();
    (0..MAX_RANGES).any(|j| STARTS[j].load(Ordering::Relaxed) == start && ENDS[j].load(Ordering::Relaxed) == end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_rounding_covers_the_range() {
        let p = rustix::param::page_size();
        assert_eq!(page_round(p + 1, 1), (p, 2 * p));
        assert_eq!(page_round(p, p), (p, 2 * p));
        assert_eq!(page_round(p - 1, 2), (0, 2 * p));
    }

    /// Whether the page at `addr` is marked "do not copy on fork" (`dc` in
    /// the `VmFlags` of its mapping in /proc/self/smaps). The mapping is
    /// split per flag set by the kernel, so each page range is its own entry.
    fn dontfork(addr: usize) -> bool {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((s, e)) = range.split_once('-') {
                    if let (Ok(s), Ok(e)) = (usize::from_str_radix(s, 16), usize::from_str_radix(e, 16)) {
                        inside = s <= addr && addr < e;
                        continue;
                    }
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return flags.split_whitespace().any(|f| f == "dc");
                }
            }
        }
        panic!("{addr:#x} not mapped");
    }

    /// One test for all global-state behaviour (tests run concurrently).
    #[test]
    fn protection_off_then_on_with_overlapping_ranges() {
        let page = rustix::param::page_size();
        // SAFETY: a fresh private anonymous mapping of 4 pages; only this
        // test uses it, and it is unmapped at the end.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                core::ptr::null_mut(),
                4 * page,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .unwrap() as usize;
        let lw = AccessFlags::LOCAL_WRITE;

        // Off (the default): nothing is tracked, and later fork_init would
        // be refused ("too late").
        let r = ForkRange::protect("ibv_reg_mr", base, page, lw).unwrap();
        assert!(r.slot.is_none());
        assert!(!dontfork(base));
        drop(r);
        assert!(TOO_LATE.load(Ordering::Relaxed));
        let e = fork_init_with(false).unwrap_err();
        assert_eq!((e.verb(), e.kind()), ("ibv_fork_init", ErrorKind::InvalidArgument));
        assert_eq!(STATE.load(Ordering::Acquire), OFF);

        // On: two overlapping registrations (pages 0-1 and 1-2), one
        // inside a page (page 3, ODP, not pinned so not protected).
        STATE.store(ON, Ordering::Release);
        let a = ForkRange::protect("ibv_reg_mr", base + 10, 2 * page - 20, lw).unwrap();
        a.keep();
        let b = ForkRange::protect("ibv_reg_mr", base + page, 2 * page, lw).unwrap();
        b.keep();
        let odp = ForkRange::protect("ibv_reg_mr", base + 3 * page, 8, lw | AccessFlags::ON_DEMAND).unwrap();
        assert!(odp.slot.is_none());
        assert_eq!((0..4).map(|i| dontfork(base + i * page)).collect::<Vec<_>>(), [true, true, true, false]);

        // Deregistering the first keeps page 1 protected for the second.
        ForkRange::release(base + 10, 2 * page - 20, lw);
        assert_eq!((0..4).map(|i| dontfork(base + i * page)).collect::<Vec<_>>(), [false, true, true, false]);
        ForkRange::release(base + page, 2 * page, lw);
        assert_eq!((0..4).map(|i| dontfork(base + i * page)).collect::<Vec<_>>(), [false; 4]);
        assert!(!tracked(base, base + 2 * page) && !tracked(base + page, base + 3 * page));

        // A failed registration (guard dropped without keep) unprotects.
        let g = ForkRange::protect("ibv_reg_mr", base, page, lw).unwrap();
        assert!(dontfork(base));
        drop(g);
        assert!(!dontfork(base));

        STATE.store(OFF, Ordering::Release);
        // SAFETY: the mapping made above; nothing references it any more.
        unsafe { rustix::mm::munmap(base as *mut core::ffi::c_void, 4 * page) }.unwrap();
    }
}
