//! Memory regions (`struct ibv_mr`): `ibv_reg_mr`, `ibv_rereg_mr`,
//! `ibv_dereg_mr`.
//!
//! # Memory safety: the region owns its buffer
//!
//! Registering memory lets the device (and, with remote access, a peer)
//! read and write it later, outside any Rust borrow, until the region is
//! deregistered. Rust does not promise that a value is ever dropped
//! (`core::mem::forget` is safe), so a region that merely borrowed its
//! buffer could be forgotten, ending the borrow while the registration
//! stays. A [`Mr`] therefore *owns* its buffer (any [`MrBuffer`]: `Vec<u8>`,
//! `Box<[u8]>`, `&'static mut [u8]`, or the page-aligned [`PageBuf`] that
//! [`Mr::alloc`] maps): the buffer comes back only from a deregistration
//! the kernel accepted ([`Mr::destroy`]). Forgetting a region leaks its
//! buffer; a `Drop` whose `DEREG_MR` the kernel refuses (rxe, while a type
//! 2 memory window is bound) leaks it too, so registered memory is never
//! freed. While registered, the bytes are reached only through
//! [`Mr::read_at`] / [`Mr::write_at`] (volatile copies) or raw pointers
//! ([`Mr::as_ptr`]), never through a reference the device could write
//! under. Memory managed outside Rust (`mmap` of a file, hugepages, a
//! foreign allocator) is registered with the `unsafe` [`Mr::reg_raw`].
//!
//! A memory window bound to a region keeps the region borrowed for the
//! window's whole life (see [`MwBind`](crate::wr::MwBind)), so the region
//! cannot even be dropped while a window over it exists.
//!
//! # Checks before the kernel is asked
//!
//! Like the kernel's `ib_check_mr_access` (and so like rdma-core on a kernel
//! that enforces it), a region with [`AccessFlags::REMOTE_WRITE`] or
//! [`AccessFlags::REMOTE_ATOMIC`] but without [`AccessFlags::LOCAL_WRITE`]
//! is refused — the device would write memory the owner declared
//! read-only. An I/O virtual address whose offset within the page differs
//! from the buffer's is refused too (the kernel answers `EINVAL`). Memory
//! that is not mapped in this process makes the kernel fail to pin it
//! (`EFAULT`): that is reported as [`ErrorKind::BadAddress`].
//!
//! A zero length is the kernel's to judge, as in rdma-core (issue 29):
//! `ib_umem_get` pins the pages the range touches, so rxe registers an
//! empty region at an address inside a page (pinning that page, through
//! which the region grants no byte: zero-length requests at its address
//! work, one byte is a protection error), and refuses one at a page start
//! (`EINVAL`: no page); siw refuses every empty region (`EINVAL`). The
//! address handed over is the buffer's own: an empty `Vec` or slice that
//! never allocated has a dangling pointer into page 0, which the kernel
//! cannot pin (`BadAddress`); an empty one with capacity, or an empty
//! slice of a larger buffer, points into memory the process owns.
//!
//! # Safety
//!
//! This file calls one `unsafe fn`: [`MrBuffer::from_raw`], to give a
//! buffer back. It does so at most once per registration, with the parts
//! [`MrBuffer::into_raw`] gave (kept in a `ManuallyDrop`), and only when
//! the kernel holds no registration over the memory: after `DEREG_MR`
//! succeeded, or after `REG_MR` was refused (an errno from the kernel, or a
//! check before the syscall). A failed deregistration in `Drop`, a
//! forgotten region or an answer without an errno leave the parts unused:
//! the memory leaks (`src/mr_buf.rs`, B1-B2). It also declares the `unsafe
//! fn` [`Mr::reg_raw`], whose contract is [`RawMem::new`]'s.
#![allow(unsafe_code)]

use core::fmt;
use core::marker::PhantomData;
use core::mem::ManuallyDrop;

use zerocopy::FromZeros;

use crate::abi::uverbs::{DeregMr, RegMr, ReregMr};
use crate::error::{Error, ErrorKind, Result};
use crate::pd::{DestroyError, Pd};

pub use crate::access::{check_access, AccessFlags};
// Old path of the check (the mlx5 provider uses it).
#[allow(unused_imports)]
pub(crate) use crate::access::unknown_access;
pub use crate::mr_buf::{MrBuffer, PageBuf, RawMem};

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

/// Page-offset rule of `ib_uverbs_reg_mr`: the start address and the I/O
/// virtual address must have the same offset within a page.
fn check_translation(verb: &'static str, addr: usize, len: usize, iova: u64) -> Result<()> {
    if addr.checked_add(len).is_none() {
        return Err(Error::new(verb, ErrorKind::InvalidArgument));
    }
    let mask = rustix::param::page_size() as u64 - 1;
    if (addr as u64 & mask) != (iova & mask) {
        return Err(Error::new(verb, ErrorKind::InvalidArgument));
    }
    Ok(())
}

/// The address the device gives the first byte of a region registered at
/// `addr` with I/O virtual address `iova`: `iova`, unless the provider's
/// driver ignores it and addresses the region by its buffer address
/// (siw).
fn device_iova(pd: &Pd<'_>, addr: usize, iova: u64) -> u64 {
    if pd.context().provider_caps().addresses_regions_by_iova {
        iova
    } else {
        addr as u64
    }
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

/// Sends `IB_USER_VERBS_CMD_REG_MR` with the provider's driver data
/// (siw's kernel driver requires `siw_ureq_reg_mr`, rxe takes the bare
/// command).
fn exec_reg_mr(ctx: &crate::Context, cmd: RegMr) -> Result<crate::abi::uverbs::RegMrResp> {
    let mut dc = crate::providers::seam::DriverCmd::new(ctx.channel(), "ibv_reg_mr", cmd);
    ctx.provider_state().reg_mr(&mut dc)
}

/// The keys and geometry the kernel gave a registration.
struct Keys {
    handle: u32,
    lkey: u32,
    rkey: u32,
}

/// Checks and sends `REG_MR` for `addr..addr+len` (not generic: one copy
/// for every buffer type).
fn register(pd: &Pd<'_>, addr: usize, len: usize, iova: u64, access: AccessFlags) -> Result<Keys> {
    const VERB: &str = "ibv_reg_mr";
    check_access(VERB, access)?;
    check_translation(VERB, addr, len, iova)?;
    let mut cmd = RegMr::new_zeroed();
    cmd.start = addr as u64;
    cmd.length = len as u64;
    cmd.hca_va = iova;
    cmd.pd_handle = pd.handle();
    cmd.access_flags = access.bits();
    let guard = crate::fork::ForkRange::protect(VERB, addr, len, access)?;
    let resp = exec_reg_mr(pd.context(), cmd).map_err(map_pin_error)?;
    guard.keep();
    Ok(Keys { handle: resp.mr_handle, lkey: resp.lkey, rkey: resp.rkey })
}

/// Why [`Mr::reg`] failed, with the buffer given back.
pub struct RegError<B> {
    /// What went wrong.
    pub error: Error,
    /// The buffer, unregistered and unchanged; `None` only if the kernel's
    /// answer could not be read (then it may hold a registration, and the
    /// buffer is leaked rather than freed).
    pub buf: Option<B>,
}

impl<B> RegError<B> {
    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        self.error.kind()
    }

    /// The verb that failed.
    pub fn verb(&self) -> &'static str {
        self.error.verb()
    }

    /// The kernel's errno, if the kernel answered.
    pub fn errno(&self) -> Option<rustix::io::Errno> {
        self.error.errno()
    }
}

impl<B> fmt::Debug for RegError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegError").field("error", &self.error).finish_non_exhaustive()
    }
}

impl<B> fmt::Display for RegError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<B> core::error::Error for RegError<B> {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl<B> From<RegError<B>> for Error {
    fn from(e: RegError<B>) -> Error {
        e.error
    }
}

/// A registered memory region (`struct ibv_mr`) that owns its buffer `B`.
///
/// `'a` is the protection domain's borrow (the PD cannot be freed under
/// the region). The buffer is given back only by [`Mr::destroy`] after the
/// kernel deregistered it; dropping the region deregisters and frees it;
/// forgetting the region (or a deregistration the kernel refuses in
/// `Drop`) leaks it, so the device never writes memory Rust reuses.
#[doc(alias = "ibv_mr")]
pub struct Mr<'a, B: MrBuffer = PageBuf> {
    pd: &'a Pd<'a>,
    handle: u32,
    lkey: u32,
    rkey: u32,
    /// Start address (an integer: `Mr` never dereferences it itself;
    /// `mr_io` does, under its own rules).
    addr: usize,
    len: usize,
    iova: u64,
    access: AccessFlags,
    /// The rest of the buffer's parts; handed to `B::from_raw` once, only
    /// when no registration covers the memory any more.
    raw: ManuallyDrop<B::Raw>,
    /// The region owns a `B` (auto traits follow it).
    _buf: PhantomData<B>,
}

impl<B: MrBuffer> fmt::Debug for Mr<'_, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mr")
            .field("handle", &self.handle)
            .field("lkey", &self.lkey)
            .field("rkey", &self.rkey)
            .field("addr", &(self.addr as *const u8))
            .field("len", &self.len)
            .field("iova", &self.iova)
            .field("access", &self.access)
            .finish_non_exhaustive()
    }
}

impl<'a> Mr<'a, PageBuf> {
    /// Maps `len` bytes of zeroed, page-aligned memory ([`PageBuf`]) and
    /// registers them (`ibv_reg_mr` on fresh memory).
    #[doc(alias = "ibv_reg_mr")]
    pub fn alloc(pd: &'a Pd<'a>, len: usize, access: AccessFlags) -> Result<Self> {
        let buf = PageBuf::new(len).map_err(|e| match e.errno() {
            Some(errno) => Error::with_errno("ibv_reg_mr", e.kind(), errno),
            None => Error::new("ibv_reg_mr", e.kind()),
        })?;
        Ok(Self::reg(pd, buf, access)?)
    }
}

impl<'a> Mr<'a, RawMem> {
    /// `ibv_reg_mr_iova` on memory this crate cannot own: `len` bytes at
    /// `addr` (shorthand for [`Mr::reg_iova`] of [`RawMem::new`]).
    ///
    /// # Safety
    ///
    /// [`RawMem::new`]'s contract, for the whole life of the region —
    /// forever if the region is leaked: `addr..addr+len` stays mapped, and
    /// no Rust reference to its bytes is used while a work request or a
    /// peer (with remote access) may read or write them.
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
        // SAFETY: the caller upholds `RawMem::new`'s contract (above).
        let mem = unsafe { RawMem::new(addr, len) };
        Ok(Self::reg_iova(pd, mem, iova, access)?)
    }
}

impl<'a, B: MrBuffer> Mr<'a, B> {
    /// `ibv_reg_mr`: registers `buf` with the device under `pd`; the
    /// region owns it from now on.
    ///
    /// The I/O virtual address is the buffer's address, as in
    /// `ibv_reg_mr`. On failure the buffer comes back in the error.
    #[doc(alias = "ibv_reg_mr")]
    pub fn reg(pd: &'a Pd<'a>, buf: B, access: AccessFlags) -> core::result::Result<Self, RegError<B>> {
        let (ptr, len, raw) = buf.into_raw();
        Self::with_parts(pd, ptr, len, ptr as u64, access, raw)
    }

    /// `ibv_reg_mr_iova`: like [`Mr::reg`], but the region is addressed
    /// by `iova` instead of the buffer's address (its offset within the
    /// page must match the buffer's): by local scatter/gather entries and
    /// by peers. [`Mr::iova`] is the address to use: `iova` where the
    /// driver honours it (rxe), the buffer's address on siw, whose driver
    /// ignores it.
    #[doc(alias = "ibv_reg_mr_iova")]
    #[doc(alias = "ibv_reg_mr_iova2")]
    pub fn reg_iova(
        pd: &'a Pd<'a>,
        buf: B,
        iova: u64,
        access: AccessFlags,
    ) -> core::result::Result<Self, RegError<B>> {
        let (ptr, len, raw) = buf.into_raw();
        Self::with_parts(pd, ptr, len, iova, access, raw)
    }

    fn with_parts(
        pd: &'a Pd<'a>,
        ptr: *mut u8,
        len: usize,
        iova: u64,
        access: AccessFlags,
        raw: B::Raw,
    ) -> core::result::Result<Self, RegError<B>> {
        let addr = ptr as usize;
        match register(pd, addr, len, iova, access) {
            Ok(k) => Ok(Self {
                pd,
                handle: k.handle,
                lkey: k.lkey,
                rkey: k.rkey,
                addr,
                len,
                iova: device_iova(pd, addr, iova),
                access,
                raw: ManuallyDrop::new(raw),
                _buf: PhantomData,
            }),
            // A check before the syscall, or the kernel's refusal: no
            // registration exists.
            Err(error) if error.errno().is_some() || error.kind() != ErrorKind::Malformed => {
                // SAFETY: the parts `into_raw` just gave, used once; the
                // kernel holds no registration over them.
                let buf = unsafe { B::from_raw(ptr, len, raw) };
                Err(RegError { error, buf: Some(buf) })
            }
            // An answer we could not read: the kernel may have registered
            // the memory, so the buffer is leaked, never freed.
            Err(error) => {
                core::mem::forget(raw);
                Err(RegError { error, buf: None })
            }
        }
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

    /// Whether the region covers no byte (a zero-length registration,
    /// which rxe accepts at an address inside a page: see the module docs).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address the device gives the region's first byte: what local
    /// scatter/gather entries ([`Sge::from_mr`](crate::wr::Sge::from_mr))
    /// and peers' RDMA operations (with [`Mr::rkey`]) address it by.
    ///
    /// For [`Mr::reg`], the buffer's address. For [`Mr::reg_iova`], the
    /// `iova` given, on devices whose driver honours it (rxe); siw
    /// ignores it and addresses every region by its buffer address, so
    /// there this is [`Mr::addr`] whatever `iova` was asked for.
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
    /// our side.
    ///
    /// A translation change ([`Rereg::buf`]) gives the region a new buffer
    /// and returns the old one. If the kernel refuses it, which memory the
    /// registration covers is not certain (drivers differ), so the new
    /// buffer is leaked rather than freed.
    ///
    /// rxe implements PD and access changes; siw and rxe refuse
    /// translation changes, and providers without `rereg_user_mr` refuse
    /// everything ([`ErrorKind::Unsupported`]).
    #[doc(alias = "ibv_rereg_mr")]
    pub fn rereg(&mut self, change: Rereg<'a, B>) -> Result<Option<B>> {
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
        if let Some(access) = change.access {
            check_access(VERB, access)?;
            flags |= ReregFlags::CHANGE_ACCESS;
            cmd.access_flags = access.bits();
            new.4 = access;
        }
        let Some(buf) = change.buf else {
            if change.iova.is_some() || flags.is_empty() {
                return Err(Error::new(VERB, ErrorKind::InvalidArgument));
            }
            cmd.flags = flags.bits();
            let resp = self.pd.context().channel().exec(VERB, &cmd, &[], &mut []).map_err(map_pin_error)?;
            (self.pd, self.access) = (new.0, new.4);
            (self.lkey, self.rkey) = (resp.lkey, resp.rkey);
            return Ok(None);
        };
        let (ptr, len, raw) = buf.into_raw();
        let addr = ptr as usize;
        let iova = change.iova.unwrap_or(addr as u64);
        let give_back = |e: Error, raw| {
            // SAFETY: the parts `into_raw` just gave, used once; the
            // kernel was not asked to register them.
            drop(unsafe { B::from_raw(ptr, len, raw) });
            e
        };
        if let Err(e) = check_translation(VERB, addr, len, iova) {
            return Err(give_back(e, raw));
        }
        flags |= ReregFlags::CHANGE_TRANSLATION;
        (cmd.start, cmd.length, cmd.hca_va) = (addr as u64, len as u64, iova);
        cmd.flags = flags.bits();
        let guard = match crate::fork::ForkRange::protect(VERB, addr, len, new.4) {
            Ok(g) => g,
            Err(e) => return Err(give_back(e, raw)),
        };
        // From here a refusal leaks `raw` (see the docs): the memory the
        // registration covers afterwards is the driver's business.
        let resp = self.pd.context().channel().exec(VERB, &cmd, &[], &mut []).map_err(map_pin_error)?;
        guard.keep();
        crate::fork::ForkRange::release(self.addr, self.len, self.access);
        let (old_ptr, old_len) = (self.addr as *mut u8, self.len);
        let old_raw = core::mem::replace(&mut self.raw, ManuallyDrop::new(raw));
        (self.pd, self.addr, self.len, self.access) = (new.0, addr, len, new.4);
        self.iova = device_iova(self.pd, addr, iova);
        (self.lkey, self.rkey) = (resp.lkey, resp.rkey);
        // SAFETY: the old buffer's parts, kept since its registration and
        // used once; the kernel moved the registration to the new buffer.
        Ok(Some(unsafe { B::from_raw(old_ptr, old_len, ManuallyDrop::into_inner(old_raw)) }))
    }

    /// `ibv_dereg_mr`: deregisters the region and gives its buffer back.
    /// If the kernel refuses (`EINVAL` on rxe while a type 2 memory window
    /// is bound, `EBUSY` elsewhere) the region comes back, still
    /// registered, with the error: try again once the cause is gone, or
    /// drop it — a drop whose deregistration fails leaks the buffer.
    #[doc(alias = "ibv_dereg_mr")]
    pub fn destroy(self) -> core::result::Result<B, DestroyError<Self>> {
        match self.dereg() {
            Ok(()) => {
                let mut this = ManuallyDrop::new(self);
                // SAFETY: `this` is never used or dropped again, so the
                // parts are taken once; `DEREG_MR` succeeded, so no
                // registration covers the memory.
                let raw = unsafe { ManuallyDrop::take(&mut this.raw) };
                // SAFETY: the parts `into_raw` gave at registration (or at
                // the last translation change), used once.
                Ok(unsafe { B::from_raw(this.addr as *mut u8, this.len, raw) })
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

impl<B: MrBuffer> Drop for Mr<'_, B> {
    fn drop(&mut self) {
        match self.dereg() {
            Ok(()) => {
                // SAFETY: `drop` runs once and `self.raw` is not used
                // after it; `DEREG_MR` succeeded, so no registration covers
                // the memory.
                let raw = unsafe { ManuallyDrop::take(&mut self.raw) };
                // SAFETY: the parts `into_raw` gave, used once.
                drop(unsafe { B::from_raw(self.addr as *mut u8, self.len, raw) });
            }
            // The kernel still holds the registration (e.g. a memory
            // window is bound): the buffer is leaked — `raw` stays in its
            // `ManuallyDrop` — never freed.
            Err(e) => crate::error::report_drop_failure(e),
        }
    }
}

/// What [`Mr::rereg`] changes; fields left `None` stay as they are
/// (`IBV_REREG_MR_CHANGE_*` is set for each `Some`).
#[derive(Debug)]
pub struct Rereg<'a, B = PageBuf> {
    /// New protection domain (`IBV_REREG_MR_CHANGE_PD`); must belong to
    /// the same context.
    pub pd: Option<&'a Pd<'a>>,
    /// New memory (`IBV_REREG_MR_CHANGE_TRANSLATION`), owned by the region
    /// from then on; the old buffer is returned.
    pub buf: Option<B>,
    /// I/O virtual address for `buf` (default: its address); only with
    /// `buf`.
    pub iova: Option<u64>,
    /// New access flags (`IBV_REREG_MR_CHANGE_ACCESS`).
    pub access: Option<AccessFlags>,
}

impl<B> Default for Rereg<'_, B> {
    fn default() -> Self {
        Self { pd: None, buf: None, iova: None, access: None }
    }
}


impl crate::wr::Sge {
    /// `len` bytes at `offset` into `mr`, addressed as the device
    /// addresses the region ([`Mr::iova`]: the buffer's address, or the
    /// I/O virtual address of a region made with
    /// [`Mr::reg_iova`](crate::Mr::reg_iova) where the driver honours it).
    /// No bounds check here: the device checks the range against the
    /// region and fails the request with `IBV_WC_LOC_PROT_ERR` if it is
    /// outside.
    pub fn from_mr<B: MrBuffer>(mr: &Mr<'_, B>, offset: usize, len: u32) -> Self {
        Self {
            addr: mr.iova().wrapping_add(offset as u64),
            length: len,
            lkey: mr.lkey(),
        }
    }
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
        // A zero length is the kernel's to judge (module docs).
        check_translation("v", 0x1000, 0, 0x1000).unwrap();
        check_translation("v", 0x1234, 8, 0x7000_0234).unwrap();
        check_translation("v", 0x1234, 8, (page + 0x234) as u64).unwrap();
        assert!(check_translation("v", 0x1234, 8, 0x1235).is_err());
        assert!(check_translation("v", usize::MAX - 3, 8, (usize::MAX - 3) as u64).is_err());
    }
}
