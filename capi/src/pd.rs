//! # Safety
//!
//! Protection domains: `ibv_alloc_pd`, `ibv_dealloc_pd`.
//!
//! A PD is a boxed [`CPd`] whose first field is the C `struct ibv_pd`. Its
//! `verbs::Pd<'static>` borrows the `Context` inside the `Arc` the same box
//! holds (`_ctx`): the `'static` is a lie the box makes true, because the
//! `Arc` is declared after `pd`, so it is dropped after it, and is never
//! moved out while `pd` lives. [`from_c`] accepts only non-NULL pointers
//! whose magic is intact; the magic is cleared before the box is freed.
#![allow(unsafe_code)]

use core::ffi::c_int;
use std::sync::Arc;

use verbs::{Context, Pd};

use crate::abi::device::IbvContext;
use crate::abi::objects::IbvPd;
use crate::context;
use crate::errno::{errno_of, fail_errno, fail_null};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsPD\0");

/// A protection domain: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CPd {
    ibv: IbvPd,
    magic: u64,
    /// `None` only transiently inside `ibv_dealloc_pd`.
    pd: Option<Pd<'static>>,
    /// Keeps the context `pd` borrows alive; dropped after `pd`.
    _ctx: Arc<Context>,
}

/// The [`CPd`] behind a C `struct ibv_pd *`, if it is a live one of ours.
#[allow(dead_code)] // used by the MR/QP verbs to come
pub(crate) fn from_c<'a>(p: *mut IbvPd) -> Option<&'a mut CPd> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_pd we hand out is the first field of a live boxed
    // CPd (repr(C)); the magic check rejects freed ones still mapped.
    let c = unsafe { &mut *p.cast::<CPd>() };
    (c.magic == MAGIC).then_some(c)
}

/// `ibv_alloc_pd`: a new protection domain, or NULL with errno.
pub(crate) extern "C" fn ibv_alloc_pd(context: *mut IbvContext) -> *mut IbvPd {
    let Some(c) = context::from_c(context) else { return fail_null(libc::EINVAL) };
    let arc = Arc::clone(&c.ctx);
    // SAFETY: the Context lives in `arc`'s allocation, which the CPd built
    // below keeps (field `_ctx`, dropped after `pd`) for as long as `pd`.
    let ctx: &'static Context = unsafe { &*Arc::as_ptr(&arc) };
    let pd = match Pd::alloc(ctx) {
        Ok(pd) => pd,
        Err(e) => return fail_null(errno_of(&e)),
    };
    let ibv = IbvPd { context: c.as_c(), handle: pd.handle() };
    let b = Box::into_raw(Box::new(CPd { ibv, magic: MAGIC, pd: Some(pd), _ctx: arc }));
    b.cast::<IbvPd>()
}

/// `ibv_dealloc_pd`: 0, or the errno value (`EBUSY` while objects use the
/// PD, which then stays valid).
pub(crate) extern "C" fn ibv_dealloc_pd(pd: *mut IbvPd) -> c_int {
    let Some(c) = from_c(pd) else { return fail_errno(libc::EINVAL) };
    let Some(inner) = c.pd.take() else { return fail_errno(libc::EINVAL) };
    if let Err(e) = inner.destroy() {
        c.pd = Some(e.object);
        return fail_errno(errno_of(&e.error));
    }
    c.magic = 0;
    // SAFETY: `c` is the live box from ibv_alloc_pd (from_c checked), its
    // magic now cleared; it is freed once, and `c` is not used after.
    drop(unsafe { Box::from_raw(c as *mut CPd) });
    0
}
