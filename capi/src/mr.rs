//! # Safety
//!
//! Memory regions: `ibv_reg_mr`, `ibv_reg_mr_iova`, `ibv_reg_mr_iova2`,
//! `ibv_rereg_mr`, `ibv_dereg_mr`.
//!
//! The C caller owns the memory: a region is a `verbs::Mr<RawMem>` made
//! with the `unsafe` [`Mr::reg_raw`]. Its contract (the range stays mapped
//! while registered, and no Rust reference to its bytes is used while the
//! device may access them) is exactly what `ibv_reg_mr(3)` asks of a C
//! caller: the memory must stay allocated until `ibv_dereg_mr`, and this
//! library never reads or writes it (C accesses it through raw pointers,
//! outside Rust's aliasing rules). Unmapped memory is not UB: the kernel
//! refuses it (`EFAULT`).
//!
//! A region is a boxed [`CMr`] whose first field is the C `struct ibv_mr`;
//! its `Mr<'static, RawMem>` borrows the `Pd` of a [`CPd`] that counts it
//! in [`CPd::users`] (so the PD cannot be deallocated under it); the count
//! moves with an `IBV_REREG_MR_CHANGE_PD`. [`from_c`] accepts only
//! non-NULL pointers whose magic is intact; the magic is cleared before
//! the box is freed. The `Mr` sits in a `Mutex`: `ibv_rereg_mr` changes it
//! while other threads may read its keys through [`CMr::with`].
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_uint, c_void};
use std::sync::Mutex;

use verbs::mr::{Mr, RawMem, Rereg};
use verbs::AccessFlags;

use crate::abi::objects::{IbvMr, IbvPd};
use crate::errno::{errno_of, fail_errno, fail_null, set_errno};
use crate::names::{Names, UNKNOWN};
use crate::pd::{self, CPd};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsMR\0");

/// `IBV_ACCESS_OPTIONAL_RANGE`: access bits a provider may ignore; rdma-core
/// drops the ones it does not know instead of failing.
const ACCESS_OPTIONAL_RANGE: c_uint = 0x3ff0_0000;

/// `enum ibv_rereg_mr_flags`.
const REREG_CHANGE_TRANSLATION: c_int = 1;
const REREG_CHANGE_PD: c_int = 2;
const REREG_CHANGE_ACCESS: c_int = 4;
const REREG_FLAGS_SUPPORTED: c_int = 7;
/// `enum ibv_rereg_mr_err_code`.
const REREG_ERR_INPUT: c_int = -1;
const REREG_ERR_CMD: c_int = -4;

/// A memory region: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CMr {
    /// What C reads (`lkey`, `rkey`, …); written only under `mr`'s lock.
    ibv: UnsafeCell<IbvMr>,
    magic: u64,
    /// `None` only transiently inside `ibv_dereg_mr`.
    mr: Mutex<Option<Mr<'static, RawMem>>>,
    /// The PD `mr` borrows (counted in its `users`).
    pd: Mutex<&'static CPd>,
}

/// The [`CMr`] behind a C `struct ibv_mr *`, if it is a live one of ours.
pub(crate) fn from_c<'a>(p: *mut IbvMr) -> Option<&'a CMr> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_mr we hand out is the first field of a live boxed
    // CMr (repr(C)); the magic check rejects freed ones still mapped.
    let c = unsafe { &*p.cast::<CMr>() };
    (c.magic == MAGIC).then_some(c)
}

impl CMr {
    /// Runs `f` with the region (`None` once deregistered), under its lock.
    pub(crate) fn with_mr<R>(&self, f: impl FnOnce(Option<&Mr<'static, RawMem>>) -> R) -> R {
        let g = self.mr.lock().unwrap_or_else(|p| p.into_inner());
        f(g.as_ref())
    }
}

/// The access flags the Rust core takes: the optional bits dropped, as
/// rdma-core drops those the provider does not support; others unknown
/// are left for the core to refuse (`EINVAL`).
fn access_of(access: c_uint) -> AccessFlags {
    AccessFlags::from_bits_retain(access & !ACCESS_OPTIONAL_RANGE)
}

/// A copy of the C view (taken under `mr`'s lock).
fn read_view(c: &CMr) -> IbvMr {
    // SAFETY: written only under `mr`'s lock, which the caller holds.
    unsafe { c.ibv.get().read() }
}

/// `ibv_reg_mr_iova2` (what the other two registration calls come to):
/// registers `length` bytes at `addr`, addressed by peers at `iova`.
pub(crate) extern "C" fn ibv_reg_mr_iova2(pd: *mut IbvPd, addr: *mut c_void, length: usize, iova: u64, access: c_uint) -> *mut IbvMr {
    let Some(cpd) = pd::from_c(pd) else { return fail_null(libc::EINVAL) };
    let cpd: &'static CPd = cpd;
    if !cpd.named() {
        return fail_null(UNKNOWN);
    }
    let Some(rpd) = cpd.pd() else { return fail_null(libc::EINVAL) };
    // SAFETY: the C contract of ibv_reg_mr (module docs): the caller keeps
    // addr..addr+length mapped until ibv_dereg_mr and accesses it only
    // from C; this library forms no Rust reference to those bytes.
    let mr = match unsafe { Mr::reg_raw(rpd, addr.cast(), length, iova, access_of(access)) } {
        Ok(mr) => mr,
        Err(e) => return fail_null(errno_of(&e)),
    };
    cpd.hold();
    let ibv = IbvMr {
        context: cpd.context(),
        pd,
        addr,
        length,
        handle: mr.handle(),
        lkey: mr.lkey(),
        rkey: mr.rkey(),
    };
    let b = Box::new(CMr { ibv: UnsafeCell::new(ibv), magic: MAGIC, mr: Mutex::new(Some(mr)), pd: Mutex::new(cpd) });
    Box::into_raw(b).cast()
}

/// `ibv_reg_mr` (IBVERBS_1.1): the I/O virtual address is `addr`.
pub(crate) extern "C" fn ibv_reg_mr(pd: *mut IbvPd, addr: *mut c_void, length: usize, access: c_int) -> *mut IbvMr {
    ibv_reg_mr_iova2(pd, addr, length, addr as u64, access as c_uint)
}

/// `ibv_reg_mr_iova` (IBVERBS_1.7).
pub(crate) extern "C" fn ibv_reg_mr_iova(pd: *mut IbvPd, addr: *mut c_void, length: usize, iova: u64, access: c_int) -> *mut IbvMr {
    ibv_reg_mr_iova2(pd, addr, length, iova, access as c_uint)
}

/// `ibv_dereg_mr`: 0, or the errno value (the region then stays valid:
/// `EINVAL` on rxe while a type 2 window is bound to it, `ENOENT` when its
/// `context` or `handle` no longer name it, see `names.rs`).
pub(crate) extern "C" fn ibv_dereg_mr(mr: *mut IbvMr) -> c_int {
    let Some(c) = from_c(mr) else { return fail_errno(libc::EINVAL) };
    let context = c.pd.lock().unwrap_or_else(|p| p.into_inner()).context();
    let mut g = c.mr.lock().unwrap_or_else(|p| p.into_inner());
    let view = read_view(c);
    if g.as_ref().is_some_and(|m| !Names::new(context, m.handle()).said_by(view.context, view.handle)) {
        return fail_errno(UNKNOWN);
    }
    let Some(inner) = g.take() else { return fail_errno(libc::EINVAL) };
    if let Err(e) = inner.destroy() {
        *g = Some(e.object);
        return fail_errno(errno_of(&e.error));
    }
    drop(g);
    c.pd.lock().unwrap_or_else(|p| p.into_inner()).release();
    let p = mr.cast::<CMr>();
    // SAFETY: p (the pointer Box::into_raw gave C) is the live box from registration (from_c checked); the
    // magic is cleared so later uses of this pointer fail from_c.
    unsafe { (*p).magic = 0 };
    // SAFETY: as above; freed once, not used after.
    drop(unsafe { Box::from_raw(p) });
    0
}

/// `ibv_rereg_mr`: changes the region's PD, access or memory as `flags`
/// say. 0, or an `enum ibv_rereg_mr_err_code` with errno set:
/// `IBV_REREG_MR_ERR_INPUT` for bad arguments, `IBV_REREG_MR_ERR_CMD` if
/// the kernel refused (the region is unchanged; flags 0 is the kernel's
/// EINVAL, as with rdma-core).
pub(crate) extern "C" fn ibv_rereg_mr(mr: *mut IbvMr, flags: c_int, pd: *mut IbvPd, addr: *mut c_void, length: usize, access: c_int) -> c_int {
    let input = |e| {
        set_errno(e);
        REREG_ERR_INPUT
    };
    let Some(c) = from_c(mr) else { return input(libc::EINVAL) };
    // rdma-core judges only unknown flag bits here; flags 0 goes to the
    // kernel, which refuses a rereg that changes nothing with EINVAL: the
    // core's `rereg` answers the same, so it comes back as ERR_CMD below.
    if flags & !REREG_FLAGS_SUPPORTED != 0 {
        return input(libc::EINVAL);
    }
    let translation = flags & REREG_CHANGE_TRANSLATION != 0;
    if translation && (length == 0 || addr.is_null()) {
        return input(libc::EINVAL);
    }
    if access != 0 && flags & REREG_CHANGE_ACCESS == 0 {
        return input(libc::EINVAL);
    }
    let new_pd: Option<&'static CPd> = if flags & REREG_CHANGE_PD != 0 {
        match pd::from_c(pd) {
            Some(p) => Some(p),
            None => return input(libc::EINVAL),
        }
    } else {
        None
    };
    let mut change: Rereg<'static, RawMem> = Rereg::default();
    if let Some(p) = new_pd {
        let Some(rpd) = p.pd() else { return input(libc::EINVAL) };
        change.pd = Some(rpd);
    }
    if flags & REREG_CHANGE_ACCESS != 0 {
        change.access = Some(access_of(access as c_uint));
    }
    if translation {
        // SAFETY: the same C contract as ibv_reg_mr for the new range.
        change.buf = Some(unsafe { RawMem::new(addr.cast(), length) });
    }
    let context = c.pd.lock().unwrap_or_else(|p| p.into_inner()).context();
    let mut g = c.mr.lock().unwrap_or_else(|p| p.into_inner());
    let Some(inner) = g.as_mut() else { return input(libc::EINVAL) };
    // The command rdma-core's `ibv_cmd_rereg_mr` makes names the region by
    // `mr->context` and `mr->handle`, and the new PD by `pd->handle`: a
    // field that no longer names them gets the kernel's answer for an
    // unknown handle, and the region is left as it was (`names.rs`).
    let view = read_view(c);
    let pd_named = new_pd.is_none_or(|p| p.handle_named());
    if !Names::new(context, inner.handle()).said_by(view.context, view.handle) || !pd_named {
        set_errno(UNKNOWN);
        return REREG_ERR_CMD;
    }
    // Count the new PD before the region borrows it.
    if let Some(p) = new_pd {
        p.hold();
    }
    match inner.rereg(change) {
        Ok(_old) => {
            let mut view = IbvMr { lkey: inner.lkey(), rkey: inner.rkey(), ..read_view(c) };
            if let Some(np) = new_pd {
                let mut cur = c.pd.lock().unwrap_or_else(|p| p.into_inner());
                cur.release();
                *cur = np;
                view.pd = np.as_c();
            }
            if translation {
                (view.addr, view.length) = (addr, length);
            }
            // SAFETY: the C view is in an UnsafeCell written only under
            // `mr`'s lock (held: `g`); C reading it meanwhile races as it
            // would with rdma-core, which updates the same fields.
            unsafe { c.ibv.get().write(view) };
            0
        }
        Err(e) => {
            if let Some(p) = new_pd {
                p.release();
            }
            set_errno(errno_of(&e));
            REREG_ERR_CMD
        }
    }
}
