//! # Safety
//!
//! Shared receive queues: `ibv_create_srq`, `ibv_modify_srq`,
//! `ibv_query_srq`, `ibv_destroy_srq` (`post_srq_recv` is in `post.rs`).
//!
//! An SRQ is a boxed [`CSrq`] whose first field is the C `struct ibv_srq`
//! in an `UnsafeCell` (C writes `srq_context`; the pthread objects are
//! used through raw pointers only). The `Srq<'static>` borrows the `Pd`
//! of a [`CPd`] counted in its `users`; QPs borrow the `Srq`
//! (`&'static`, [`CSrq::hold`]) only while counted in [`CSrq::users`], and
//! resize/destroy (which need it by `&mut`/value) take the write lock and
//! refuse with `EBUSY` while the count is not 0; arming the limit needs
//! only `&Srq` (`Srq::set_limit`).
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::RwLock;

use verbs::srq::{Srq, SrqInitAttr, SrqModify};

use crate::abi::device::IbvContext;
use crate::abi::objects::{IbvPd, IbvSrq, IbvSrqAttr};
use crate::acks::Counters;
use crate::errno::{errno_of, fail_errno, fail_null};
use crate::names::{Names, UNKNOWN};
use crate::pd::{self, CPd};
use crate::registry::{self, Kind};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsSRQ");

/// `IBV_SRQ_MAX_WR`, `IBV_SRQ_LIMIT`.
const SRQ_MAX_WR: c_int = 1;
const SRQ_LIMIT: c_int = 2;

/// `struct ibv_srq_init_attr`.
#[repr(C)]
pub(crate) struct IbvSrqInitAttr {
    pub(crate) srq_context: *mut c_void,
    pub(crate) attr: IbvSrqAttr,
}

/// A shared receive queue: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CSrq {
    ibv: UnsafeCell<IbvSrq>,
    magic: AtomicU64,
    pub(crate) srq: RwLock<Option<Srq<'static>>>,
    users: AtomicU32,
    pd: &'static CPd,
    user_handle: u64,
    /// What `ibv` said when handed out (see `names.rs`).
    names: Names,
}

// SAFETY: the C view is touched only by C or through raw pointers to its
// pthread objects; the rest is Sync.
unsafe impl Sync for CSrq {}
// SAFETY: as above.
unsafe impl Send for CSrq {}

/// The [`CSrq`] behind a C `struct ibv_srq *`, if it is a live one of ours.
#[inline]
pub(crate) fn from_c<'a>(p: *mut IbvSrq) -> Option<&'a CSrq> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_srq we hand out is the first field of a live boxed
    // CSrq (repr(C)); the magic check rejects destroyed ones still mapped.
    let c = unsafe { &*p.cast::<CSrq>() };
    (c.magic.load(Ordering::Relaxed) == MAGIC).then_some(c)
}

impl CSrq {
    /// The Rust SRQ, counted in `users` until [`CSrq::release`].
    pub(crate) fn hold(&self) -> Option<&'static Srq<'static>> {
        let g = self.srq.read().unwrap_or_else(|p| p.into_inner());
        let s: *const Srq<'static> = g.as_ref()?;
        self.users.fetch_add(1, Ordering::AcqRel);
        // SAFETY: counted under the read lock; destroy (write lock)
        // refuses while the count is not 0; modify borrows it shared.
        Some(unsafe { &*s })
    }

    /// Ends a borrow taken by [`CSrq::hold`].
    pub(crate) fn release(&self) {
        self.users.fetch_sub(1, Ordering::AcqRel);
    }

    fn counters(&self) -> Counters {
        use core::mem::offset_of;
        let c = offset_of!(IbvSrq, events_completed);
        Counters::of(self.ibv.get(), offset_of!(IbvSrq, mutex), offset_of!(IbvSrq, cond), c, c)
    }

    /// Counts `n` acknowledged async events and wakes `ibv_destroy_srq`.
    pub(crate) fn ack(&self, n: u32) {
        self.counters().add([n, 0]);
    }

    fn wait_acks(&self, n: u32) {
        // Both slots name the same counter.
        self.counters().wait([n, n]);
    }

    /// The C view's `context` and `handle`.
    fn said(&self) -> (*mut IbvContext, u32) {
        let v = self.ibv.get();
        // SAFETY: plain reads of two fields of the live C view, which only
        // C writes (C's rule: not during a call on the SRQ).
        let context = unsafe { (*v).context };
        // SAFETY: as above.
        let handle = unsafe { (*v).handle };
        (context, handle)
    }

    /// Whether the C view still names this SRQ (verbs on the SRQ: rdma-core
    /// sends `handle` to `context`'s device file).
    pub(crate) fn named(&self) -> bool {
        let (context, handle) = self.said();
        self.names.said_by(context, handle)
    }

    /// Whether the C view's `handle` still names this SRQ (a new QP's
    /// `srq`, sent with the PD's context).
    pub(crate) fn handle_named(&self) -> bool {
        self.names.handle_is(self.said().1)
    }

    /// The `struct ibv_srq *` C sees.
    pub(crate) fn as_c(&self) -> *mut IbvSrq {
        self.ibv.get()
    }
}

/// `ibv_create_srq`: `init_attr->attr` is set to the granted sizes; NULL
/// with errno on failure.
///
/// # Safety
///
/// `init_attr` is NULL or points to a readable and writable
/// `struct ibv_srq_init_attr`.
pub(crate) unsafe extern "C" fn ibv_create_srq(pd: *mut IbvPd, init_attr: *mut IbvSrqInitAttr) -> *mut IbvSrq {
    let Some(cpd) = pd::from_c(pd) else { return fail_null(libc::EINVAL) };
    let cpd: &'static CPd = cpd;
    if init_attr.is_null() {
        return fail_null(libc::EINVAL);
    }
    if !cpd.named() {
        return fail_null(UNKNOWN);
    }
    // SAFETY: non-NULL, the caller promises a valid init attr.
    let ia = unsafe { &mut *init_attr };
    let Some(rpd) = cpd.pd() else { return fail_null(libc::EINVAL) };
    cpd.hold();
    let a = ia.attr;
    let srq = match Srq::create(rpd, SrqInitAttr { max_wr: a.max_wr, max_sge: a.max_sge, srq_limit: a.srq_limit }) {
        Ok(s) => s,
        Err(e) => {
            cpd.release();
            return fail_null(errno_of(&e));
        }
    };
    ia.attr.max_wr = srq.max_wr();
    ia.attr.max_sge = srq.max_sge();
    // SAFETY: IbvSrq is plain C data for which all-zero is valid (NULL, 0,
    // glibc's PTHREAD_{MUTEX,COND}_INITIALIZER).
    let mut ibv: IbvSrq = unsafe { core::mem::zeroed() };
    ibv.context = cpd.context();
    ibv.srq_context = ia.srq_context;
    ibv.pd = pd;
    ibv.handle = srq.handle();
    let user_handle = srq.user_handle();
    let names = Names::new(ibv.context, ibv.handle);
    let b = Box::new(CSrq {
        ibv: UnsafeCell::new(ibv),
        magic: AtomicU64::new(MAGIC),
        srq: RwLock::new(Some(srq)),
        users: AtomicU32::new(0),
        pd: cpd,
        user_handle,
        names,
    });
    let p = Box::into_raw(b);
    registry::insert(user_handle, Kind::Srq, p as usize);
    p.cast()
}

/// `ibv_modify_srq`: 0 or the errno value. Arming the limit works at any
/// time; a resize (`IBV_SRQ_MAX_WR`) is `EBUSY` while QPs use the SRQ
/// (siw cannot resize).
///
/// # Safety
///
/// `attr` is NULL or points to a readable `struct ibv_srq_attr`.
pub(crate) unsafe extern "C" fn ibv_modify_srq(srq: *mut IbvSrq, attr: *mut IbvSrqAttr, mask: c_int) -> c_int {
    let Some(c) = from_c(srq) else { return fail_errno(libc::EINVAL) };
    if attr.is_null() || mask & !(SRQ_MAX_WR | SRQ_LIMIT) != 0 {
        return fail_errno(libc::EINVAL);
    }
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    // SAFETY: non-NULL, the caller promises a readable attr.
    let a = unsafe { attr.read() };
    let change = SrqModify {
        max_wr: (mask & SRQ_MAX_WR != 0).then_some(a.max_wr),
        srq_limit: (mask & SRQ_LIMIT != 0).then_some(a.srq_limit),
    };
    // A resize works while QPs use the SRQ, as in rdma-core
    // (`Srq::modify` takes `&self`); the ring is swapped under its own
    // guard.
    let g = c.srq.read().unwrap_or_else(|p| p.into_inner());
    let Some(inner) = g.as_ref() else { return fail_errno(libc::EINVAL) };
    match inner.modify(change) {
        Ok(()) => 0,
        Err(e) => fail_errno(errno_of(&e)),
    }
}

/// `ibv_query_srq`: 0 or the errno value (`EOPNOTSUPP` on siw, as libsiw).
///
/// # Safety
///
/// `attr` is NULL or points to a writable `struct ibv_srq_attr`.
pub(crate) unsafe extern "C" fn ibv_query_srq(srq: *mut IbvSrq, attr: *mut IbvSrqAttr) -> c_int {
    let Some(c) = from_c(srq) else { return fail_errno(libc::EINVAL) };
    if attr.is_null() {
        return fail_errno(libc::EINVAL);
    }
    if !c.pd.provider().caps().query_srq {
        // libsiw has no query_srq: rdma-core answers before the kernel.
        return fail_errno(libc::EOPNOTSUPP);
    }
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    let g = c.srq.read().unwrap_or_else(|p| p.into_inner());
    let Some(inner) = g.as_ref() else { return fail_errno(libc::EINVAL) };
    match inner.query() {
        Ok(q) => {
            // SAFETY: non-NULL, the caller promises a writable attr.
            unsafe { attr.write(IbvSrqAttr { max_wr: q.max_wr, max_sge: q.max_sge, srq_limit: q.srq_limit }) };
            0
        }
        Err(e) => fail_errno(errno_of(&e)),
    }
}

/// `ibv_destroy_srq`: 0 or the errno value (`EBUSY` while QPs use it,
/// `ENOENT` when its fields name no SRQ: it then stays valid). Waits for
/// the acknowledgement of its async events, as rdma-core does.
pub(crate) extern "C" fn ibv_destroy_srq(srq: *mut IbvSrq) -> c_int {
    let Some(c) = from_c(srq) else { return fail_errno(libc::EINVAL) };
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    let mut g = c.srq.write().unwrap_or_else(|p| p.into_inner());
    if c.users.load(Ordering::Acquire) != 0 {
        return fail_errno(libc::EBUSY);
    }
    let Some(inner) = g.take() else { return fail_errno(libc::EINVAL) };
    let events = match inner.destroy() {
        Ok(n) => n,
        Err(e) => {
            *g = Some(e.object);
            return fail_errno(errno_of(&e.error));
        }
    };
    drop(g);
    c.pd.release();
    registry::remove(c.user_handle);
    c.wait_acks(events);
    c.magic.store(0, Ordering::Relaxed);
    // SAFETY: `srq` is the pointer Box::into_raw gave C for this live box
    // (from_c checked); magic cleared and registry entry gone; freed once.
    drop(unsafe { Box::from_raw(srq.cast::<CSrq>()) });
    0
}
