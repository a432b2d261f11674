//! # Safety
//!
//! Thread domains and parent domains: `verbs_context.alloc_td`,
//! `dealloc_td` and `alloc_parent_domain` (behind verbs.h's inline
//! `ibv_alloc_td`, `ibv_dealloc_td`, `ibv_alloc_parent_domain`); a parent
//! domain is freed by `ibv_dealloc_pd` (`pd.rs`).
//!
//! A TD is a boxed [`CTd`] whose first field is the C `struct ibv_td`;
//! its `verbs::Td<'static>` borrows the `Context` in the `Arc` the box
//! holds (declared after it, so dropped after it). A parent domain is a
//! [`CPd`] (the same box as a PD, so every verb taking a `struct ibv_pd *`
//! takes it) with a [`Parent`]: the PD it extends and its TD, each held
//! (their `users` count) until `ibv_dealloc_pd` of the parent domain, so
//! the `&'static` borrows it keeps are true while it lives; its C `handle`
//! is the PD's, as libmlx5's, and the objects made through it borrow the
//! PD's `verbs::Pd` and hold the parent domain (`EBUSY` for its
//! `ibv_dealloc_pd` meanwhile, as libmlx5). What a TD changes in our
//! providers (nothing yet: the shared UAR and its lock) is in
//! `verbs::domain`.
//!
//! The custom allocators (`IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS`,
//! `alloc`/`free` with `pd_context`) are checked and kept, and never
//! called: our providers allocate every queue and doorbell record from
//! their own mappings, as libmlx5 does when `alloc` answers
//! `IBV_ALLOCATOR_USE_DEFAULT`. Nothing here dereferences what C passed
//! beyond the init attributes themselves.
#![allow(unsafe_code)]

use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use verbs::{Context, ParentDomain, Td};

use crate::abi::device::IbvContext;
use crate::abi::objects::{IbvParentDomainInitAttr, IbvPd, IbvTd, IbvTdInitAttr, PdAllocFn, PdFreeFn};
use crate::context;
use crate::errno::{errno_of, fail_errno, fail_null};
use crate::pd::{self, CPd};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsTD\0");

/// `IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS`.
const INIT_ATTR_ALLOCATORS: u32 = 1 << 0;
/// `IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT`.
const INIT_ATTR_PD_CONTEXT: u32 = 1 << 1;

/// A thread domain: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CTd {
    ibv: IbvTd,
    magic: AtomicU64,
    td: Td<'static>,
    /// Parent domains holding this TD.
    users: AtomicU32,
    /// Keeps the context `td` borrows alive; dropped after `td`.
    _ctx: Arc<Context>,
}

// SAFETY: the C view holds only the context pointer, which C owns and
// nothing here writes after creation; the rest is Sync.
unsafe impl Sync for CTd {}
// SAFETY: as above; the box is freed on whichever thread deallocates it.
unsafe impl Send for CTd {}

/// The [`CTd`] behind a C `struct ibv_td *`, if it is a live one of ours.
fn td_from_c<'a>(p: *mut IbvTd) -> Option<&'a CTd> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_td we hand out is the first field of a live boxed
    // CTd (repr(C)); the magic check rejects freed ones still mapped.
    let c = unsafe { &*p.cast::<CTd>() };
    (c.magic.load(Ordering::Acquire) == MAGIC).then_some(c)
}

/// What makes a [`CPd`] a parent domain.
pub(crate) struct Parent {
    /// The PD it extends (held).
    pub(crate) protection: &'static CPd,
    /// Its thread domain (held).
    td: Option<&'static CTd>,
    /// The native parent domain (it checked the provider has them).
    _domain: ParentDomain<'static>,
    /// `alloc`, `free` and `pd_context` as C gave them: kept, not called.
    _allocators: (Option<PdAllocFn>, Option<PdFreeFn>, usize),
}

impl Parent {
    /// Gives back the PD and TD it held (`ibv_dealloc_pd` of the parent
    /// domain).
    pub(crate) fn release(&self) {
        self.protection.release();
        if let Some(t) = self.td {
            t.users.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// `verbs_context.alloc_td`: a thread domain; NULL with errno (`EINVAL`
/// for a `comp_mask`, as libmlx5; `EOPNOTSUPP` on rxe and siw).
///
/// # Safety
///
/// `init_attr` is NULL or points to a readable `struct ibv_td_init_attr`.
pub(crate) unsafe extern "C" fn alloc_td(context: *mut IbvContext, init_attr: *mut IbvTdInitAttr) -> *mut IbvTd {
    let Some(c) = context::from_c(context) else { return fail_null(libc::EINVAL) };
    // SAFETY: NULL or the caller's readable struct.
    if init_attr.is_null() || unsafe { (*init_attr).comp_mask } != 0 {
        return fail_null(libc::EINVAL);
    }
    let arc = Arc::clone(&c.ctx);
    // SAFETY: the Context lives in `arc`'s allocation, which the CTd built
    // below keeps (field `_ctx`, dropped after `td`) for as long as `td`.
    let ctx: &'static Context = unsafe { &*Arc::as_ptr(&arc) };
    let td = match Td::alloc(ctx) {
        Ok(t) => t,
        Err(e) => return fail_null(errno_of(&e)),
    };
    let b = Box::new(CTd { ibv: IbvTd { context: c.as_c() }, magic: AtomicU64::new(MAGIC), td, users: AtomicU32::new(0), _ctx: arc });
    Box::into_raw(b).cast()
}

/// `verbs_context.dealloc_td`: 0, or the errno value (`EBUSY` while a
/// parent domain holds the TD, as libmlx5; `EINVAL` for a pointer that is
/// not a live TD).
pub(crate) extern "C" fn dealloc_td(td: *mut IbvTd) -> c_int {
    let Some(c) = td_from_c(td) else { return fail_errno(libc::EINVAL) };
    if c.users.load(Ordering::Acquire) != 0 {
        return fail_errno(libc::EBUSY);
    }
    c.magic.store(0, Ordering::Release);
    // SAFETY: `td` is the pointer Box::into_raw gave C for this live box
    // (td_from_c checked), its magic now cleared; freed once, and `c` is
    // not used after.
    let b = unsafe { Box::from_raw(td.cast::<CTd>()) };
    b.td.destroy();
    0
}

/// `verbs_context.alloc_parent_domain`: a parent domain of `attr->pd`
/// with `attr->td` (may be NULL); NULL with errno: `EINVAL` for no PD, a
/// PD or TD of another context, a PD that is itself a parent domain, an
/// unknown `comp_mask` bit or allocators without both functions;
/// `EOPNOTSUPP` on rxe and siw.
///
/// # Safety
///
/// `attr` is NULL or points to a readable `struct
/// ibv_parent_domain_init_attr`.
pub(crate) unsafe extern "C" fn alloc_parent_domain(context: *mut IbvContext, attr: *mut IbvParentDomainInitAttr) -> *mut IbvPd {
    let Some(c) = context::from_c(context) else { return fail_null(libc::EINVAL) };
    if attr.is_null() {
        return fail_null(libc::EINVAL);
    }
    // SAFETY: non-NULL; the caller promises a readable struct.
    let a = unsafe { &*attr };
    if a.comp_mask & !(INIT_ATTR_ALLOCATORS | INIT_ATTR_PD_CONTEXT) != 0
        || (a.comp_mask & INIT_ATTR_ALLOCATORS != 0 && (a.alloc.is_none() || a.free.is_none()))
    {
        return fail_null(libc::EINVAL);
    }
    let Some(protection) = pd::from_c(a.pd) else { return fail_null(libc::EINVAL) };
    let protection: &'static CPd = protection;
    if protection.context() != c.as_c() || protection.is_parent() || !protection.named() {
        return fail_null(libc::EINVAL);
    }
    let td: Option<&'static CTd> = if a.td.is_null() {
        None
    } else {
        match td_from_c(a.td) {
            Some(t) if t.ibv.context == c.as_c() => Some(t),
            _ => return fail_null(libc::EINVAL),
        }
    };
    let Some(rpd) = protection.pd() else { return fail_null(libc::EINVAL) };
    protection.hold();
    if let Some(t) = td {
        t.users.fetch_add(1, Ordering::AcqRel);
    }
    let domain = match ParentDomain::alloc(rpd, td.map(|t| &t.td)) {
        Ok(d) => d,
        Err(e) => {
            protection.release();
            if let Some(t) = td {
                t.users.fetch_sub(1, Ordering::AcqRel);
            }
            return fail_null(errno_of(&e));
        }
    };
    let allocators = match a.comp_mask & INIT_ATTR_ALLOCATORS {
        0 => (None, None),
        _ => (a.alloc, a.free),
    };
    let pd_context = if a.comp_mask & INIT_ATTR_PD_CONTEXT != 0 { a.pd_context as usize } else { 0 };
    let parent = Parent { protection, td, _domain: domain, _allocators: (allocators.0, allocators.1, pd_context) };
    pd::new_parent(c, parent)
}
