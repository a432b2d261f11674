//! # Safety
//!
//! Protection domains: `ibv_alloc_pd`, `ibv_dealloc_pd` (also of a parent
//! domain, `domain.rs`).
//!
//! A PD is a boxed [`CPd`] whose first field is the C `struct ibv_pd`. Its
//! `verbs::Pd<'static>` borrows the `Context` inside the `Arc` the same box
//! holds (`_ctx`): the `'static` is a lie the box makes true, because the
//! `Arc` is declared after `pd`, so it is dropped after it, and is never
//! moved out while `pd` lives. [`from_c`] accepts only non-NULL pointers
//! whose magic is intact; the magic is cleared before the box is freed.
#![allow(unsafe_code)]

use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use verbs::{Context, Pd, ProviderKind};

use crate::abi::device::IbvContext;
use crate::abi::objects::IbvPd;
use crate::context;
use crate::errno::{errno_of, fail_errno, fail_null};
use crate::domain::Parent;
use crate::names::{Names, UNKNOWN};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsPD\0");

/// A protection domain: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CPd {
    ibv: IbvPd,
    magic: u64,
    /// What `ibv` said when handed out (see `names.rs`).
    names: Names,
    /// `None` only transiently inside `ibv_dealloc_pd`.
    pd: Option<Pd<'static>>,
    /// Objects borrowing `pd` (see the module docs), and for a PD the
    /// parent domains extending it.
    pub(crate) users: AtomicU32,
    /// For a parent domain (`pd` is then `None`): the PD it extends, whose
    /// `Pd` [`CPd::pd`] answers, and its TD (`domain.rs`).
    parent: Option<Parent>,
    /// Keeps the context `pd` borrows alive; dropped after `pd`.
    _ctx: Arc<Context>,
}

/// The [`CPd`] behind a C `struct ibv_pd *`, if it is a live one of ours.
pub(crate) fn from_c<'a>(p: *mut IbvPd) -> Option<&'a mut CPd> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_pd we hand out is the first field of a live boxed
    // CPd (repr(C)); the magic check rejects freed ones still mapped.
    let c = unsafe { &mut *p.cast::<CPd>() };
    (c.magic == MAGIC).then_some(c)
}

impl CPd {
    /// The `struct ibv_pd *` C sees.
    pub(crate) fn as_c(&self) -> *mut IbvPd {
        &self.ibv as *const IbvPd as *mut IbvPd
    }

    /// The Rust PD, borrowed for as long as the caller keeps a count in
    /// [`CPd::users`] (taken by [`CPd::hold`]).
    pub(crate) fn pd(&self) -> Option<&'static Pd<'static>> {
        if let Some(parent) = &self.parent {
            // The PD it extends, held while the parent domain lives.
            return parent.protection.pd();
        }
        let p: *const Pd<'static> = self.pd.as_ref()?;
        // SAFETY: the Pd lives in this leaked box and is neither moved nor
        // dropped while `users` is not 0 (ibv_dealloc_pd checks it first);
        // callers take a count (hold) before keeping the borrow.
        Some(unsafe { &*p })
    }

    /// Whether this is a parent domain (`ibv_alloc_parent_domain`).
    pub(crate) fn is_parent(&self) -> bool {
        self.parent.is_some()
    }

    /// Counts one more object borrowing the PD.
    pub(crate) fn hold(&self) {
        self.users.fetch_add(1, Ordering::AcqRel);
    }

    /// The object counted by [`CPd::hold`] is gone.
    pub(crate) fn release(&self) {
        self.users.fetch_sub(1, Ordering::AcqRel);
    }

    /// The context the PD belongs to (whatever the C view now says).
    pub(crate) fn context(&self) -> *mut IbvContext {
        self.names.context()
    }

    /// Which provider drives the PD's device.
    pub(crate) fn provider(&self) -> ProviderKind {
        self._ctx.provider()
    }

    /// Whether the C view still names this PD (its `context` and
    /// `handle`): what rdma-core sends the kernel for a verb on the PD.
    pub(crate) fn named(&self) -> bool {
        self.names.said_by(self.ibv.context, self.ibv.handle)
    }

    /// Whether the C view's `handle` still names this PD (the verbs that
    /// take the context from elsewhere: `ibv_create_qp_ex`, ...).
    pub(crate) fn handle_named(&self) -> bool {
        self.names.handle_is(self.ibv.handle)
    }
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
    let names = Names::new(ibv.context, ibv.handle);
    let b = Box::into_raw(Box::new(CPd { ibv, magic: MAGIC, names, pd: Some(pd), users: AtomicU32::new(0), parent: None, _ctx: arc }));
    b.cast::<IbvPd>()
}

/// The box of a parent domain of context `c` (`domain.rs` made and
/// checked `parent`): its C `handle` is its PD's.
pub(crate) fn new_parent(c: &context::CContext, parent: Parent) -> *mut IbvPd {
    let ibv = IbvPd { context: c.as_c(), handle: parent.protection.ibv.handle };
    let names = Names::new(ibv.context, ibv.handle);
    let arc = Arc::clone(&c.ctx);
    let b = CPd { ibv, magic: MAGIC, names, pd: None, users: AtomicU32::new(0), parent: Some(parent), _ctx: arc };
    Box::into_raw(Box::new(b)).cast::<IbvPd>()
}

/// `ibv_dealloc_pd`: 0, or the errno value (`EBUSY` while objects use the
/// PD, `ENOENT` when its fields no longer name it: the PD then stays valid).
pub(crate) extern "C" fn ibv_dealloc_pd(pd: *mut IbvPd) -> c_int {
    let Some(c) = from_c(pd) else { return fail_errno(libc::EINVAL) };
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    if c.users.load(Ordering::Acquire) != 0 {
        return fail_errno(libc::EBUSY);
    }
    if let Some(parent) = &c.parent {
        // A parent domain: no kernel object of its own (libmlx5's
        // mlx5_free_pd); its PD and TD are given back.
        parent.release();
        c.magic = 0;
        // SAFETY: as below: the live box, magic cleared, freed once.
        drop(unsafe { Box::from_raw(c as *mut CPd) });
        return 0;
    }
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
