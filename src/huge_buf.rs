//! [`HugePageBuf`]: memory backed by 2 MiB huge pages
//! (`mmap(MAP_HUGETLB | MAP_HUGE_2MB)`), for a [`Mr`](crate::Mr) to own.
//!
//! A NIC that maps memory in huge pages needs 512 times fewer translation
//! entries for a region on 2 MiB pages than for one on 4 KiB pages, and
//! misses its translation cache less. rxe and siw gain nothing there (rxe
//! keeps one entry per 4 KiB page whatever backs the range: BENCHMARKS.md
//! has the registration times in the VM, the same for both). libibverbs
//! supports huge pages only through `RDMAV_HUGEPAGES_SAFE`, which makes
//! every registration slower (it looks up each range's page size for fork
//! protection: rdma-core issue #767); this buffer knows its page size and
//! protects itself once, when it is mapped.
//!
//! Huge pages come from a pool the administrator reserves
//! (`sysctl vm.nr_hugepages=N`, see `HugePages_Free` in /proc/meminfo).
//! An empty pool is an [`ErrorKind::OutOfResources`] error saying so.
//!
//! # Fork
//!
//! The whole mapping is marked `MADV_DONTFORK` when it is made: a child
//! process does not get it at all, so the parent's pinned pages are never
//! shared copy-on-write with a child (the failure `ibv_fork_init` exists
//! for), with or without [`fork_init`](crate::fork::fork_init).
//!
//! # Safety
//!
//! * **H1 — the buffer owns its mapping**, as [`PageBuf`](crate::PageBuf)
//!   does (mr_buf.rs B3): it is an [`AnonMap`] (`anon_map.rs`, A1–A3) made
//!   with `MAP_HUGETLB | MAP_HUGE_2MB` over whole huge pages;
//!   `madvise(MADV_DONTFORK)` changes only what a child inherits, never
//!   this process's memory.
//! * **H2 — [`MrBuffer`](crate::mr_buf::MrBuffer)**: `into_raw` forgets the value (its `Drop` does
//!   not run), so the mapping stays until `from_raw` rebuilds its owner
//!   from the same parts.
#![allow(unsafe_code)]

use rustix::mm::MapFlags;

use crate::error::{Error, ErrorKind, Result};
use crate::anon_map::AnonMap;

/// The huge page size this buffer uses.
pub const HUGE_PAGE_SIZE: usize = 2 << 20;

const VERB: &str = "mmap(MAP_HUGETLB)";

/// Zero-filled memory on 2 MiB huge pages, unmapped when dropped.
/// Register it with [`Mr::reg`](crate::Mr::reg) (the region owns it
/// while registered). Works without `std`.
///
/// ```no_run
/// # fn f(pd: &verbs::Pd<'_>) -> verbs::Result<()> {
/// use verbs::{AccessFlags, HugePageBuf, Mr};
///
/// let buf = HugePageBuf::new(8 << 20)?;     // four 2 MiB pages
/// let mr = Mr::reg(pd, buf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)?;
/// # drop(mr); Ok(()) }
/// ```
#[derive(Debug)]
pub struct HugePageBuf {
    /// Whole huge pages: what was mapped.
    map: AnonMap,
}

impl HugePageBuf {
    /// Maps `len` bytes rounded up to whole 2 MiB huge pages (the
    /// buffer, and a region over it, is that long: a region ending inside
    /// a huge page could not be fork-protected by page) and marks them
    /// `MADV_DONTFORK`.
    ///
    /// A zero length is [`ErrorKind::InvalidArgument`]; no free huge page
    /// in the pool (none reserved, or all in use) is
    /// [`ErrorKind::OutOfResources`] naming `vm.nr_hugepages`; a kernel
    /// without huge-page support gives its errno.
    pub fn new(len: usize) -> Result<Self> {
        if len == 0 {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument).with_detail("zero-length buffer"));
        }
        let len = len
            .checked_next_multiple_of(HUGE_PAGE_SIZE)
            .ok_or(Error::new(VERB, ErrorKind::InvalidArgument).with_detail("length too large"))?;
        let map = AnonMap::anonymous(len, MapFlags::HUGETLB | MapFlags::HUGE_2MB).map_err(|e| match e {
            rustix::io::Errno::NOMEM => Error::with_errno(VERB, ErrorKind::OutOfResources, e).with_detail(
                "no free 2 MiB huge pages: reserve them with `sysctl vm.nr_hugepages=N` (HugePages_Free in /proc/meminfo)",
            ),
            e => Error::from_errno(VERB, e).with_detail("2 MiB huge pages unavailable (kernel without hugetlbfs?)"),
        })?;
        map.dont_fork().map_err(|e| Error::from_errno("madvise(MADV_DONTFORK)", e))?;
        Ok(Self { map })
    }

    /// Length in bytes: whole huge pages.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Always `false`: zero-length buffers are refused.
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }
}

crate::mr_buf::anon_map_buffer!(HugePageBuf);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mr_buf::MrBuffer;

    /// On a host with free huge pages: aligned, zeroed, round trip; on
    /// one without: the error names the sysctl.
    #[test]
    fn maps_or_names_the_sysctl() {
        assert_eq!(HugePageBuf::new(0).unwrap_err().kind(), ErrorKind::InvalidArgument);
        match HugePageBuf::new(3 << 20) {
            Ok(mut b) => {
                assert_eq!(b.len(), 4 << 20);
                assert_eq!(b.as_ptr() as usize % HUGE_PAGE_SIZE, 0);
                assert!(b.iter().all(|&x| x == 0));
                b[(4 << 20) - 1] = 5;
                let p = b.as_ptr();
                let (ptr, len, raw) = b.into_raw();
                // SAFETY: the parts just returned, used once.
                let b = unsafe { HugePageBuf::from_raw(ptr, len, raw) };
                assert_eq!((b.as_ptr(), b[(4 << 20) - 1]), (p, 5));
            }
            Err(e) if e.kind() == ErrorKind::OutOfResources => {
                assert!(e.detail().is_some_and(|d| d.contains("vm.nr_hugepages")), "{e}");
            }
            Err(e) => panic!("{e}"),
        }
    }
}
