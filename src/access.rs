//! Access flags and key layout: plain data below the handles (memory
//! regions, windows, work requests and QP attributes all read them).

use crate::error::{Error, Result};

/// The index part of an rkey or lkey (upper 24 bits; the low 8 bits are
/// the key that `ibv_inc_rkey` changes).
pub(crate) const KEY_INDEX: u32 = 0xffff_ff00;

bitflags::bitflags! {
    /// `enum ibv_access_flags` (same bits as the kernel's
    /// `IB_UVERBS_ACCESS_*`): what the device may do with a region, window
    /// or queue pair.
    #[doc(alias = "ibv_access_flags")]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct AccessFlags: u32 {
        /// `IBV_ACCESS_LOCAL_WRITE`: the device may write (receives, RDMA
        /// read responses, atomics results). Required by the remote write
        /// and atomic bits.
        const LOCAL_WRITE = 1 << 0;
        /// `IBV_ACCESS_REMOTE_WRITE`: peers may RDMA-write into the region.
        const REMOTE_WRITE = 1 << 1;
        /// `IBV_ACCESS_REMOTE_READ`: peers may RDMA-read from the region.
        const REMOTE_READ = 1 << 2;
        /// `IBV_ACCESS_REMOTE_ATOMIC`: peers may run atomics on the region.
        const REMOTE_ATOMIC = 1 << 3;
        /// `IBV_ACCESS_MW_BIND`: memory windows may be bound to the region.
        const MW_BIND = 1 << 4;
        /// `IBV_ACCESS_ZERO_BASED`: remote addresses count from 0, not from
        /// the virtual address.
        const ZERO_BASED = 1 << 5;
        /// `IBV_ACCESS_ON_DEMAND`: on-demand paging (no pinning); needs
        /// device support.
        const ON_DEMAND = 1 << 6;
        /// `IBV_ACCESS_HUGETLB`: the memory is backed by huge pages.
        const HUGETLB = 1 << 7;
        /// `IBV_ACCESS_FLUSH_GLOBAL`: RDMA FLUSH to global visibility.
        const FLUSH_GLOBAL = 1 << 8;
        /// `IBV_ACCESS_FLUSH_PERSISTENT`: RDMA FLUSH to persistence.
        const FLUSH_PERSISTENT = 1 << 9;
        /// `IBV_ACCESS_RELAXED_ORDERING`: the device may reorder writes
        /// (optional bit: kernels that do not know it ignore it).
        const RELAXED_ORDERING = 1 << 20;
    }
}

/// Whether `access` has a bit this crate does not know (made with
/// `AccessFlags::from_bits_retain`); such flags are refused before they
/// reach the kernel or a ring.
#[inline]
pub(crate) const fn unknown_access(access: AccessFlags) -> bool {
    access.bits() & !AccessFlags::all().bits() != 0
}

/// The kernel's `ib_check_mr_access` rule, checked before any syscall:
/// remote write or remote atomic access needs local write access; and no
/// bits this crate does not know.
pub fn check_access(verb: &'static str, access: AccessFlags) -> Result<()> {
    if unknown_access(access) {
        return Err(Error::invalid(verb, "access has bits this library does not know"));
    }
    if access.intersects(AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC)
        && !access.contains(AccessFlags::LOCAL_WRITE)
    {
        return Err(Error::invalid(verb, "REMOTE_WRITE and REMOTE_ATOMIC access need LOCAL_WRITE"));
    }
    Ok(())
}

