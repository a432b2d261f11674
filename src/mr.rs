//! Memory regions (`struct ibv_mr`): `ibv_reg_mr`, `ibv_rereg_mr`,
//! `ibv_dereg_mr`.
//!
//! # Memory safety
//!
//! Registering memory lets the device (and, with remote access, a peer)
//! read and write it later, outside any Rust borrow. The safe constructors
//! therefore take the buffer as `&'a mut [u8]` and keep that mutable borrow
//! for the region's whole life: while the [`Mr`] exists no Rust reference
//! can alias the registered bytes, and the buffer is usable again (through
//! the original binding) only after the region is deregistered. The data
//! path reaches the bytes through [`Mr::as_ptr`] (raw pointer, never a
//! reference). Memory managed outside Rust's borrow system (`mmap`,
//! hugepages, device memory windows into a foreign allocator) is registered
//! with the `unsafe` [`Mr::reg_raw`], whose contract the caller upholds.
//!
//! # Checks before the kernel is asked
//!
//! Like the kernel's `ib_check_mr_access` (and so like rdma-core on a kernel
//! that enforces it), a region with [`AccessFlags::REMOTE_WRITE`] or
//! [`AccessFlags::REMOTE_ATOMIC`] but without [`AccessFlags::LOCAL_WRITE`]
//! is refused — the device would write memory the owner declared
//! read-only. A zero length and an I/O virtual address whose offset within
//! the page differs from the buffer's are refused too (the kernel answers
//! `EINVAL` for both). Memory that is not mapped in this process makes the
//! kernel fail to pin it (`EFAULT`): that is reported as
//! [`ErrorKind::BadAddress`].
//!
//! # Safety
//!
//! This file contains no `unsafe` block. It opts out of `unsafe_code` only
//! to *declare* the `unsafe fn` [`Mr::reg_raw`], whose contract (no Rust
//! reference to the range while the device may access it; the range stays
//! mapped while registered) moves the borrow-checker's job to the caller.
//! The safe constructors uphold that contract by holding `&'a mut [u8]`
//! for the region's life.
#![allow(unsafe_code)]

use core::marker::PhantomData;

use zerocopy::FromZeros;

use crate::abi::uverbs::{DeregMr, RegMr, ReregMr};
use crate::error::{Error, ErrorKind, Result};
use crate::pd::{DestroyError, Pd};

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

bitflags::bitflags! {
    /// `enum ibv_rereg_mr_flags`: what [`Mr::rereg`] changes.
    #[doc(alias = "ibv_rereg_mr_flags")]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct ReregFlags: u32 {
        /// `IBV_REREG_MR_CHANGE_TRANSLATION`: new address and length.
        const CHANGE_TRANSLATION = 1 << 0;
        /// `IBV_REREG_MR_CHANGE_PD`: move the region to another PD.
        const CHANGE_PD = 1 << 1;
        /// `IBV_REREG_MR_CHANGE_ACCESS`: new access flags.
        const CHANGE_ACCESS = 1 << 2;
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

/// Page-offset rule of `ib_uverbs_reg_mr`: the start address and the I/O
/// virtual address must have the same offset within a page.
fn check_translation(verb: &'static str, addr: usize, len: usize, iova: u64) -> Result<()> {
    if len == 0 || addr.checked_add(len).is_none() {
        return Err(Error::new(verb, ErrorKind::InvalidArgument));
    }
    let mask = rustix::param::page_size() as u64 - 1;
    if (addr as u64 & mask) != (iova & mask) {
        return Err(Error::new(verb, ErrorKind::InvalidArgument));
    }
    Ok(())
}

/// Turns the kernel's `EFAULT` (memory not mapped, cannot be pinned) into
/// the dedicated kind; other errnos keep their usual kind.
fn map_pin_error(e: Error) -> Error {
    match e.errno() {
        Some(errno) if errno == rustix::io::Errno::FAULT => {
            Error::with_errno(e.verb(), ErrorKind::BadAddress, errno)
        }
        _ => e,
    }
}

/// Sends `IB_USER_VERBS_CMD_REG_MR` with the provider's driver data:
/// rxe uses the bare command (rdma-core `rxe_reg_mr`); siw's kernel driver
/// requires `siw_ureq_reg_mr` and answers `siw_uresp_reg_mr` (rdma-core
/// `siw_reg_mr`), refusing the bare command with `EINVAL`.
#[cfg_attr(not(any(feature = "rxe", feature = "siw")), allow(unreachable_code, unused_imports))]
fn exec_reg_mr(ctx: &crate::Context, cmd: &RegMr) -> Result<crate::abi::uverbs::RegMrResp> {
    use crate::providers::ProviderKind;
    const VERB: &str = "ibv_reg_mr";
    let _ = (VERB, cmd);
    match ctx.provider() {
        #[cfg(feature = "rxe")]
        ProviderKind::Rxe => ctx.channel().exec(VERB, cmd, &[], &mut []),
        #[cfg(feature = "siw")]
        ProviderKind::Siw => {
            use zerocopy::IntoBytes;
            let req = crate::providers::siw::mr::SiwUreqRegMr::new_zeroed();
            let mut out = crate::providers::siw::mr::SiwUrespRegMr::new_zeroed();
            ctx.channel().exec(VERB, cmd, req.as_bytes(), out.as_mut_bytes())
        }
    }
}

/// A registered memory region (`struct ibv_mr`).
///
/// `'a` covers both the protection domain and the registered buffer: the
/// region borrows the PD (so the PD cannot be freed under it) and keeps the
/// buffer mutably borrowed until it is deregistered.
#[doc(alias = "ibv_mr")]
#[derive(Debug)]
pub struct Mr<'a> {
    pd: &'a Pd<'a>,
    handle: u32,
    lkey: u32,
    rkey: u32,
    /// Start address (kept as an integer: `Mr` never dereferences it, and
    /// an integer keeps the type `Send`/`Sync` like the `&mut [u8]` it
    /// stands for).
    addr: usize,
    len: usize,
    iova: u64,
    access: AccessFlags,
    /// The registered bytes stay exclusively borrowed (safe constructors)
    /// or promised to us by the caller (`reg_raw`).
    _buf: PhantomData<&'a mut [u8]>,
}

impl<'a> Mr<'a> {
    /// `ibv_reg_mr`: registers `buf` with the device under `pd`.
    ///
    /// The buffer stays borrowed until the region is deregistered (dropped
    /// or [`Mr::destroy`]ed). The I/O virtual address is the buffer's
    /// address, as in `ibv_reg_mr`.
    #[doc(alias = "ibv_reg_mr")]
    pub fn reg(pd: &'a Pd<'a>, buf: &'a mut [u8], access: AccessFlags) -> Result<Self> {
        let iova = buf.as_ptr() as u64;
        Self::reg_iova(pd, buf, iova, access)
    }

    /// `ibv_reg_mr_iova`: like [`Mr::reg`], but peers address the region
    /// with `iova` instead of the buffer's address (its offset within the
    /// page must match the buffer's).
    #[doc(alias = "ibv_reg_mr_iova")]
    #[doc(alias = "ibv_reg_mr_iova2")]
    pub fn reg_iova(pd: &'a Pd<'a>, buf: &'a mut [u8], iova: u64, access: AccessFlags) -> Result<Self> {
        let (addr, len) = (buf.as_mut_ptr(), buf.len());
        Self::register(pd, addr as usize, len, iova, access)
    }

    /// `ibv_reg_mr_iova` on memory this crate cannot borrow-check.
    ///
    /// # Safety
    ///
    /// For the whole life of the returned region (until it is dropped or
    /// destroyed), the caller guarantees that:
    /// * no Rust reference (`&`/`&mut`) to any byte of `addr..addr+len`
    ///   is used while a work request or a peer (with remote access) may
    ///   read or write those bytes — accesses go through raw pointers,
    ///   volatile or atomic operations only;
    /// * the range is not unmapped or remapped while the region exists
    ///   (the kernel keeps the old pages pinned, so the device would keep
    ///   using memory the process no longer sees).
    ///
    /// Unmapped memory at registration time is *not* undefined behaviour:
    /// the kernel refuses it with `EFAULT` ([`ErrorKind::BadAddress`]).
    #[doc(alias = "ibv_reg_mr")]
    pub unsafe fn reg_raw(
        pd: &'a Pd<'a>,
        addr: *mut u8,
        len: usize,
        iova: u64,
        access: AccessFlags,
    ) -> Result<Self> {
        Self::register(pd, addr as usize, len, iova, access)
    }

    fn register(pd: &'a Pd<'a>, addr: usize, len: usize, iova: u64, access: AccessFlags) -> Result<Self> {
        const VERB: &str = "ibv_reg_mr";
        check_access(VERB, access)?;
        check_translation(VERB, addr, len, iova)?;
        let mut cmd = RegMr::new_zeroed();
        cmd.start = addr as u64;
        cmd.length = len as u64;
        cmd.hca_va = iova;
        cmd.pd_handle = pd.handle();
        cmd.access_flags = access.bits();
        let ctx = pd.context();
        let guard = crate::fork::ForkRange::protect(VERB, addr, len, access)?;
        let resp = exec_reg_mr(ctx, &cmd)
        .map_err(map_pin_error)?;
        guard.keep();
        Ok(Self {
            pd,
            handle: resp.mr_handle,
            lkey: resp.lkey,
            rkey: resp.rkey,
            addr,
            len,
            iova,
            access,
            _buf: PhantomData,
        })
    }

    /// The local key, for scatter/gather entries.
    pub fn lkey(&self) -> u32 {
        self.lkey
    }

    /// The remote key, for peers' RDMA operations.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// Start of the registered memory (`ibv_mr.addr`). Use raw-pointer,
    /// volatile or atomic accesses only while the device may touch it.
    pub fn as_ptr(&self) -> *mut u8 {
        self.addr as *mut u8
    }

    /// Start address as an integer (`ibv_mr.addr`).
    pub fn addr(&self) -> u64 {
        self.addr as u64
    }

    /// Length in bytes (`ibv_mr.length`).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always `false`: zero-length regions are refused at registration.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The I/O virtual address peers use (`ibv_reg_mr_iova`'s `iova`).
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// The access flags the region was registered with.
    pub fn access(&self) -> AccessFlags {
        self.access
    }

    /// The kernel's handle for this region (`ibv_mr.handle`).
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The protection domain the region belongs to.
    pub fn pd(&self) -> &'a Pd<'a> {
        self.pd
    }

    /// `ibv_rereg_mr`: changes the region in place (same handle) as
    /// `change` says. The keys may change; on error nothing changes on
    /// our side (the kernel leaves the region as it was).
    ///
    /// rxe implements PD and access changes; siw and rxe refuse
    /// translation changes, and providers without `rereg_user_mr` refuse
    /// everything ([`ErrorKind::Unsupported`]).
    #[doc(alias = "ibv_rereg_mr")]
    pub fn rereg(&mut self, change: Rereg<'a>) -> Result<()> {
        const VERB: &str = "ibv_rereg_mr";
        let mut flags = ReregFlags::empty();
        let mut cmd = ReregMr::new_zeroed();
        cmd.mr_handle = self.handle;
        let mut new = (self.pd, self.addr, self.len, self.iova, self.access);
        if let Some(pd) = change.pd {
            if !core::ptr::eq(pd.context(), self.pd.context()) {
                return Err(Error::new(VERB, ErrorKind::InvalidArgument));
            }
            flags |= ReregFlags::CHANGE_PD;
            cmd.pd_handle = pd.handle();
            new.0 = pd;
        }
        if let Some(buf) = change.buf {
            let (addr, len) = (buf.as_mut_ptr() as usize, buf.len());
            let iova = change.iova.unwrap_or(addr as u64);
            check_translation(VERB, addr, len, iova)?;
            flags |= ReregFlags::CHANGE_TRANSLATION;
            (cmd.start, cmd.length, cmd.hca_va) = (addr as u64, len as u64, iova);
            (new.1, new.2, new.3) = (addr, len, iova);
        } else if change.iova.is_some() {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument));
        }
        if let Some(access) = change.access {
            check_access(VERB, access)?;
            flags |= ReregFlags::CHANGE_ACCESS;
            cmd.access_flags = access.bits();
            new.4 = access;
        }
        if flags.is_empty() {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument));
        }
        cmd.flags = flags.bits();
        let guard = if flags.contains(ReregFlags::CHANGE_TRANSLATION) {
            Some(crate::fork::ForkRange::protect(VERB, new.1, new.2, new.4)?)
        } else {
            None
        };
        let resp = self.pd.context().channel().exec(VERB, &cmd, &[], &mut []).map_err(map_pin_error)?;
        if let Some(g) = guard {
            g.keep();
            crate::fork::ForkRange::release(self.addr, self.len, self.access);
        }
        (self.pd, self.addr, self.len, self.iova, self.access) = new;
        self.lkey = resp.lkey;
        self.rkey = resp.rkey;
        Ok(())
    }

    /// `ibv_dereg_mr`: deregisters the region, returning it with the error
    /// if the kernel refuses (`EBUSY` while memory windows are bound to it).
    #[doc(alias = "ibv_dereg_mr")]
    pub fn destroy(self) -> core::result::Result<(), DestroyError<Self>> {
        match self.dereg() {
            Ok(()) => {
                core::mem::forget(self);
                Ok(())
            }
            Err(error) => Err(DestroyError { error, object: self }),
        }
    }

    fn dereg(&self) -> Result<()> {
        let mut cmd = DeregMr::new_zeroed();
        cmd.mr_handle = self.handle;
        self.pd.context().channel().exec("ibv_dereg_mr", &cmd, &[], &mut [])?;
        crate::fork::ForkRange::release(self.addr, self.len, self.access);
        Ok(())
    }
}

impl Drop for Mr<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.dereg() {
            crate::error::report_drop_failure(e);
        }
    }
}

/// What [`Mr::rereg`] changes; fields left `None` stay as they are
/// (`IBV_REREG_MR_CHANGE_*` is set for each `Some`).
#[derive(Debug, Default)]
pub struct Rereg<'a> {
    /// New protection domain (`IBV_REREG_MR_CHANGE_PD`); must belong to
    /// the same context.
    pub pd: Option<&'a Pd<'a>>,
    /// New memory (`IBV_REREG_MR_CHANGE_TRANSLATION`); borrowed for the
    /// rest of the region's life like the original buffer.
    pub buf: Option<&'a mut [u8]>,
    /// I/O virtual address for `buf` (default: its address); only with
    /// `buf`.
    pub iova: Option<u64>,
    /// New access flags (`IBV_REREG_MR_CHANGE_ACCESS`).
    pub access: Option<AccessFlags>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_write_or_atomic_needs_local_write() {
        for bad in [AccessFlags::REMOTE_WRITE, AccessFlags::REMOTE_ATOMIC, AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ] {
            let e = check_access("ibv_reg_mr", bad).unwrap_err();
            assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_reg_mr", ErrorKind::InvalidArgument, None));
        }
        for ok in [
            AccessFlags::empty(),
            AccessFlags::REMOTE_READ,
            AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_ATOMIC,
        ] {
            check_access("ibv_reg_mr", ok).unwrap();
        }
    }

    #[test]
    fn access_bits_match_the_kernel_uapi() {
        use crate::abi::ioctl_verbs as k;
        assert_eq!(AccessFlags::LOCAL_WRITE.bits(), k::ACCESS_LOCAL_WRITE);
        assert_eq!(AccessFlags::REMOTE_WRITE.bits(), k::ACCESS_REMOTE_WRITE);
        assert_eq!(AccessFlags::REMOTE_READ.bits(), k::ACCESS_REMOTE_READ);
        assert_eq!(AccessFlags::REMOTE_ATOMIC.bits(), k::ACCESS_REMOTE_ATOMIC);
        assert_eq!(AccessFlags::MW_BIND.bits(), k::ACCESS_MW_BIND);
        assert_eq!(AccessFlags::ZERO_BASED.bits(), k::ACCESS_ZERO_BASED);
        assert_eq!(AccessFlags::ON_DEMAND.bits(), k::ACCESS_ON_DEMAND);
        assert_eq!(AccessFlags::HUGETLB.bits(), k::ACCESS_HUGETLB);
        assert_eq!(AccessFlags::RELAXED_ORDERING.bits(), k::ACCESS_RELAXED_ORDERING);
        assert_eq!(AccessFlags::RELAXED_ORDERING.bits() & !k::ACCESS_OPTIONAL_RANGE, 0);
    }

    #[test]
    fn translation_rules() {
        let page = rustix::param::page_size();
        let e = check_translation("v", 0x1000, 0, 0x1000).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        check_translation("v", 0x1234, 8, 0x7000_0234).unwrap();
        check_translation("v", 0x1234, 8, (page + 0x234) as u64).unwrap();
        assert!(check_translation("v", 0x1234, 8, 0x1235).is_err());
        assert!(check_translation("v", usize::MAX - 3, 8, (usize::MAX - 3) as u64).is_err());
    }
}
