//! # Safety
//!
//! Queue pairs: `ibv_create_qp`, `ibv_modify_qp`, `ibv_query_qp`,
//! `ibv_destroy_qp` (RC, UC, UD). The data path is in `post.rs`.
//!
//! A QP is a boxed [`CQp`] whose first field is the C view, a
//! `struct ibv_qp_ex` (which begins with the `struct ibv_qp`, so the same
//! box serves `ibv_create_qp_ex`/`ibv_qp_to_qp_ex`), in an `UnsafeCell` (C writes `qp_context`; `state` is updated under the
//! `qp` lock; the pthread mutex/condition are used through raw pointers
//! only). The Rust QP is a typestate `QueuePair`, kept as a run-time
//! state wrapper ([`Any`] over `verbs::qp::AnyQp`) in a [`QpLock`], which
//! every verb and post takes. It borrows the `Pd` of a [`CPd`], the `Cq`s
//! of [`CCq`]s and the `Srq` of a [`CSrq`] as `&'static`: each is
//! counted in its owner's `users` for as long as the QP exists (taken
//! with `hold`, given back after the kernel destroyed the QP), and the
//! owners refuse to change, move or free them while counted.
//!
//! `ibv_destroy_qp` waits, as rdma-core does, until `ibv_ack_async_event`
//! acknowledged as many events as the kernel reports for the QP.
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::c_int;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;

use verbs::abi::uverbs::{ModifyQp, QpDest, QueryQp};
use zerocopy::FromZeros;
use verbs::qp::{AnyQp, QpCap, QpCreateFlags, QpInitAttr, QpStateKind, QueuePair, Rc, TransitionAttr, Uc, Ud};

use crate::abi::device::IbvContext;
use crate::abi::objects::{IbvAhAttr, IbvGlobalRoute, IbvPd, IbvQp, IbvQpAttr, IbvQpCap, IbvQpEx, IbvQpInitAttr, IbvQpInitAttrEx};
use crate::cq::{self, CCq};
use crate::acks::Counters;
use crate::errno::{errno_of, fail_errno, fail_null};
use crate::names::{Names, UNKNOWN};
use crate::pd::{self, CPd};
use crate::registry::{self, Kind};
use crate::srq::{self, CSrq};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsQP\0");
/// The magic of a QP with the provider's own handle on its queues
/// (invariant D: stored only in a [`CQp`] whose `direct` is `Some`, which
/// never changes): the posts find such a QP, and know it has the handle,
/// with the one compare that checks the C handle ([`from_c_direct`]).
#[cfg(feature = "mlx5")]
const MAGIC_DIRECT: u64 = u64::from_be_bytes(*b"verbsQPd");

/// `enum ibv_qp_type` values this library creates.
pub(crate) const QPT_RC: c_int = 2;
pub(crate) const QPT_UC: c_int = 3;
pub(crate) const QPT_UD: c_int = 4;

/// `IBV_QP_STATE` and `IBV_QP_CUR_STATE` of `enum ibv_qp_attr_mask`.
const ATTR_STATE: c_int = 1;
const ATTR_CUR_STATE: c_int = 1 << 1;

/// A QP of any transport in any state.
pub(crate) enum Any {
    Rc(AnyQp<'static, Rc>),
    Uc(AnyQp<'static, Uc>),
    Ud(AnyQp<'static, Ud>),
}

macro_rules! each {
    ($e:expr, $q:ident => $body:expr) => {
        match $e {
            Any::Rc($q) => $body,
            Any::Uc($q) => $body,
            Any::Ud($q) => $body,
        }
    };
}
pub(crate) use each;

/// A pattern of [`Any`] whose inner `AnyQp` matches `$p`, for any transport.
macro_rules! each_pat {
    ($($p:tt)*) => {
        Any::Rc($($p)*) | Any::Uc($($p)*) | Any::Ud($($p)*)
    };
}

impl Any {
    /// The receive queue for the straight post path (INIT to SQD on rxe;
    /// see `verbs::qp::AnyQp::recv_straight`). Its type does not depend on
    /// the transport, so the post path after it is one copy for all three
    /// (the send side: [`QpGuard::send_straight`]).
    #[inline(always)]
    pub(crate) fn recv_straight(&mut self) -> Option<verbs::qp::RecvStraight<'_>> {
        each!(self, q => q.recv_straight())
    }
}

/// The lock of a QP's Rust side: one flag, taken with one
/// compare-exchange and given back with one release store, as
/// rdma-core's per-queue spinlocks. It replaces a `std` mutex, whose lock
/// and unlock also test and record poisoning (the posts are the hot path
/// of the C ABI). Holders run no caller code and never panic while
/// holding it in the post paths; the verbs that make kernel commands
/// under it (modify, query, destroy, multicast) hold it for one system
/// call. A waiter spins a little, then yields its time slice.
///
/// A panic while it is held releases it (the guard's `Drop`), as the
/// mutex it replaces was taken over when poisoned: the QP is consistent,
/// every change of it is one kernel command.
///
/// Beside the value it keeps [`Straight`] bits saying which straight post
/// path the value takes (invariant F1: they always describe the value as
/// it is whenever the lock is free): computed when the lock is made and
/// again when a guard that handed the value out mutably
/// (`DerefMut`) gives the lock back, and read by the post paths
/// ([`QpGuard::send_straight`], [`QpGuard::recv_straight`]) instead of
/// matching the transport and the state on every post.
///
/// The bits are also read without the lock, by the posts of a provider
/// whose QP has a handle of its own ([`CQp::direct`]), under that
/// handle's lock: a guard clears the state's bits when it hands the value
/// out mutably (before anything changes it), so such a post finds them
/// set only while the value is in the state they describe (F2).
pub(crate) struct QpLock {
    held: AtomicBool,
    /// [`Straight`] bits of `qp` (F1, F2); written under the lock.
    straight: AtomicU8,
    /// [`Straight::RECV_DIRECT`] and [`Straight::SEND_DIRECT`] if the
    /// provider's handle has the queue (D1); fixed at creation.
    direct: u8,
    qp: UnsafeCell<Option<Any>>,
}

/// The straight post paths a QP's value takes (bits of `QpLock::straight`).
struct Straight;

impl Straight {
    /// `Some(Rc | Uc)` in RTS or SQD: `verbs::qp::AnyQp::send_straight` is `Some`.
    const SEND: u8 = 1;
    /// `Some(_)` in INIT, RTR, RTS or SQD: [`Any::recv_straight`] is `Some`.
    const RECV: u8 = 2;
    /// The provider's doorbell names the QP by its C fields (librxe's: a
    /// post first checks [`CQp::named`], see `post.rs`); fixed at creation.
    const NAMES: u8 = 4;
    /// `Some(Uc(_))`: with [`Straight::SEND`], the transport the straight
    /// post names without a match of the value (`QpGuard::send_straight`).
    const UC: u8 = 8;
    /// `Some(Rc)` in RTS or SQD (a subset of [`Straight::SEND`]): the
    /// common case of [`QpGuard::send_straight_rc`].
    const SEND_RC: u8 = 16;
    /// [`Straight::RECV`] of a QP whose provider handle ([`CQp::direct`])
    /// found a receive queue its buffer holds in the QP's slot
    /// (`Mlx5Direct::has_recv`: not a QP on an SRQ), D1: the direct
    /// receive takes the slot's entry with no match
    /// ([`CQp::may_recv_direct`]).
    const RECV_DIRECT: u8 = 32;
    /// [`Straight::SEND`] of a QP whose handle found a send queue in the
    /// slot (`Mlx5Direct::has_send`), D1 ([`CQp::may_send_direct`]).
    const SEND_DIRECT: u8 = 64;
    /// The bits that are fixed when the QP is made (the rest describe its
    /// state, and are cleared while it changes: F2).
    const FIXED: u8 = Self::NAMES;

    /// The bits of `v` with the `fixed` ones and the direct ones `direct`
    /// allows ([`Straight::derive`]).
    fn with(v: &Option<Any>, fixed: u8, direct: u8) -> u8 {
        Self::derive(Self::of(v) | fixed, direct)
    }

    /// `bits` with [`Straight::RECV_DIRECT`] if `RECV` is set and `direct`
    /// has it, and [`Straight::SEND_DIRECT`] if `SEND` is and `direct` has
    /// it.
    fn derive(bits: u8, direct: u8) -> u8 {
        let recv = if bits & Self::RECV != 0 { Self::RECV_DIRECT } else { 0 };
        let send = if bits & Self::SEND != 0 { Self::SEND_DIRECT } else { 0 };
        bits | ((recv | send) & direct)
    }

    /// The bits of `v`.
    fn of(v: &Option<Any>) -> u8 {
        use verbs::qp::AnyQp::{Init, Rtr, Rts, Sqd};
        let mut bits = 0;
        if matches!(v, Some(Any::Rc(Rts(_) | Sqd(_)) | Any::Uc(Rts(_) | Sqd(_)))) {
            bits |= Self::SEND;
        }
        if matches!(v, Some(Any::Rc(Rts(_) | Sqd(_)))) {
            bits |= Self::SEND_RC;
        }
        if matches!(v, Some(each_pat!(Init(_) | Rtr(_) | Rts(_) | Sqd(_)))) {
            bits |= Self::RECV;
        }
        if matches!(v, Some(Any::Uc(_))) {
            bits |= Self::UC;
        }
        bits
    }
}

// F1 needs five distinct bits: were two the same (`UC` and `SEND_RC` were
// both 8 when two branches met), `plain_rc` would say yes to a UC QP in
// any state and `send_straight_rc`'s `assert_unchecked` would be false.
const _: () = {
    let all = [Straight::SEND, Straight::RECV, Straight::NAMES, Straight::UC, Straight::SEND_RC, Straight::RECV_DIRECT, Straight::SEND_DIRECT];
    let (mut or, mut i) = (0u8, 0);
    while i < all.len() {
        assert!(all[i].is_power_of_two() && or & all[i] == 0, "Straight bits must be distinct single bits");
        or |= all[i];
        i += 1;
    }
};

const _: fn() = || {
    fn send<T: Send>() {}
    send::<Any>();
};

// SAFETY: the `Option<Any>` is reached only through a `QpGuard`, and at
// most one exists at a time (the flag: acquire on taking, release on
// giving back), so it is used by one thread at a time; `Any` is `Send`.
unsafe impl Sync for QpLock {}

impl QpLock {
    /// `names`: the provider's doorbell names the QP ([`Straight::NAMES`]);
    /// `direct`: the direct bits its handle allows ([`QpLock::direct`]).
    fn new(qp: Option<Any>, names: bool, direct: u8) -> Self {
        let bits = Straight::with(&qp, if names { Straight::NAMES } else { 0 }, direct);
        Self { held: AtomicBool::new(false), straight: AtomicU8::new(bits), direct, qp: UnsafeCell::new(qp) }
    }

    #[inline(always)]
    fn lock(&self) -> QpGuard<'_> {
        if self.held.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            self.lock_slow();
        }
        QpGuard { lock: self, changed: false }
    }

    /// The lock if it is free now (one compare-exchange), else `None`:
    /// the straight post paths, which leave a contended QP to the general
    /// path (which waits), so that they make no call while holding values.
    ///
    /// A guard is made only when the exchange succeeded: a guard's `Drop`
    /// gives the lock back, so one made and dropped on failure (as the
    /// eager `bool::then_some(QpGuard { .. })` did) would release the lock
    /// another thread holds, and two threads would then use the QP at
    /// once (issue 29: a post racing `ibv_modify_qp` found the QP taken
    /// out by the modify, `EINVAL`).
    #[inline(always)]
    fn try_lock(&self) -> Option<QpGuard<'_>> {
        match self.held.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => Some(QpGuard { lock: self, changed: false }),
            Err(_) => None,
        }
    }

    /// Computes the [`Straight`] bits of the value again (F1), before a
    /// guard that handed it out mutably gives the lock back.
    #[cold]
    #[inline(never)]
    fn restate(&self) {
        // SAFETY: called by the holder of the flag (a guard's drop): no
        // other reference to the value exists.
        let v = unsafe { &*self.qp.get() };
        let fixed = self.straight.load(Ordering::Relaxed) & Straight::FIXED;
        self.straight.store(Straight::with(v, fixed, self.direct), Ordering::Relaxed);
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self) {
        let mut spins = 0u32;
        loop {
            if !self.held.load(Ordering::Relaxed)
                && self.held.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                return;
            }
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(64) {
                std::thread::yield_now();
            } else {
                core::hint::spin_loop();
            }
        }
    }
}

/// A held [`QpLock`]: derefs to the QP (`None` once destroyed).
pub(crate) struct QpGuard<'a> {
    lock: &'a QpLock,
    /// The value was handed out mutably (it may have another transport
    /// state now): the lock's [`Straight`] bits are computed again before
    /// it is given back.
    changed: bool,
}

impl QpGuard<'_> {
    /// Whether the provider's doorbell names the QP by its C fields (one
    /// load, under the lock; see `post.rs`).
    #[inline(always)]
    pub(crate) fn doorbell_names_qp(&self) -> bool {
        (self.lock.straight.load(Ordering::Relaxed) & Straight::NAMES) != 0
    }

    /// `verbs::qp::AnyQp::send_straight` of the value, judged by the lock's
    /// [`Straight`] bits (one load) instead of a match of the transport
    /// and the state. Does not count as a change: the straight path only
    /// writes into the queues' rings, never another state.
    #[inline(always)]
    pub(crate) fn send_straight(&mut self) -> Option<verbs::qp::SendStraight<'_>> {
        let bits = self.lock.straight.load(Ordering::Relaxed);
        if bits & Straight::SEND == 0 {
            return None;
        }
        // SAFETY: this guard holds the flag: no other reference to the
        // value exists (as in `deref_mut`).
        let v = unsafe { &mut *self.lock.qp.get() };
        use verbs::qp::AnyQp::{Rts, Sqd};
        // SAFETY: F1: the bits describe the value, and `SEND` is set only
        // for these variants (`Straight::of`).
        unsafe { core::hint::assert_unchecked(matches!(v, Some(Any::Rc(Rts(_) | Sqd(_)) | Any::Uc(Rts(_) | Sqd(_))))) };
        // The transport from the bits (`UC`, which `Straight::of` sets
        // from the same value) rather than from the arm that matched, so
        // the two arms give one value and a provider that does not read
        // the transport (mlx5) pays nothing for it.
        let qp_type = if bits & Straight::UC != 0 { verbs::qp::QpType::Uc } else { verbs::qp::QpType::Rc };
        match v.as_mut()? {
            Any::Rc(q) => q.send_straight_as(qp_type),
            Any::Uc(q) => q.send_straight_as(qp_type),
            Any::Ud(_) => None,
        }
    }

    /// Whether the value is an RC QP in RTS or SQD whose provider's
    /// doorbell does not name it (the common case of a post: one load and
    /// one compare of the [`Straight`] bits, under the lock); then
    /// [`QpGuard::send_straight_rc`] is `Some` and no names test is due.
    /// (Only the F1 test asks it: `post.rs` tests the names bit first.)
    #[cfg(test)]
    pub(crate) fn plain_rc(&self) -> bool {
        (self.lock.straight.load(Ordering::Relaxed) & (Straight::NAMES | Straight::SEND_RC)) == Straight::SEND_RC
    }

    /// [`QpGuard::send_straight`] of an RC QP: `None` unless
    /// [`Straight::SEND_RC`] is set. After [`QpGuard::plain_rc`] said
    /// `true`, the test folds into its (the same load under the lock), and
    /// the transport is known: no match of the variant is left.
    #[inline(always)]
    pub(crate) fn send_straight_rc(&mut self) -> Option<verbs::qp::SendStraight<'_>> {
        if self.lock.straight.load(Ordering::Relaxed) & Straight::SEND_RC == 0 {
            return None;
        }
        // SAFETY: as in `send_straight`.
        let v = unsafe { &mut *self.lock.qp.get() };
        use verbs::qp::AnyQp::{Rts, Sqd};
        // SAFETY: F1: the bits describe the value, and `SEND_RC` is set
        // only for these variants (`Straight::of`).
        unsafe { core::hint::assert_unchecked(matches!(v, Some(Any::Rc(Rts(_) | Sqd(_))))) };
        match v.as_mut()? {
            Any::Rc(q) => q.send_straight_as(verbs::qp::QpType::Rc),
            Any::Uc(_) | Any::Ud(_) => None,
        }
    }

    /// [`Any::recv_straight`] of the value, as [`QpGuard::send_straight`].
    #[inline(always)]
    pub(crate) fn recv_straight(&mut self) -> Option<verbs::qp::RecvStraight<'_>> {
        if self.lock.straight.load(Ordering::Relaxed) & Straight::RECV == 0 {
            return None;
        }
        // SAFETY: as in `send_straight`.
        let v = unsafe { &mut *self.lock.qp.get() };
        use verbs::qp::AnyQp::{Init, Rtr, Rts, Sqd};
        // SAFETY: F1, `RECV` is set only for these variants.
        unsafe { core::hint::assert_unchecked(matches!(v, Some(each_pat!(Init(_) | Rtr(_) | Rts(_) | Sqd(_))))) };
        v.as_mut()?.recv_straight()
    }
}

impl core::ops::Deref for QpGuard<'_> {
    type Target = Option<Any>;
    #[inline(always)]
    fn deref(&self) -> &Option<Any> {
        // SAFETY: this guard holds the flag: no other guard exists, so no
        // other reference to the value (see `QpLock`'s `Sync`).
        unsafe { &*self.lock.qp.get() }
    }
}

impl core::ops::DerefMut for QpGuard<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Option<Any> {
        if !self.changed {
            // F2: the state's bits cleared before the value can change
            // (set again, from the value, when the guard lets go).
            let bits = &self.lock.straight;
            bits.store(bits.load(Ordering::Relaxed) & Straight::FIXED, Ordering::Relaxed);
        }
        self.changed = true;
        // SAFETY: as in `deref`; the borrow is bounded by the guard's.
        unsafe { &mut *self.lock.qp.get() }
    }
}

impl Drop for QpGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.changed {
            self.lock.restate();
        }
        self.lock.held.store(false, Ordering::Release);
    }
}

/// A queue pair: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CQp {
    ibv: UnsafeCell<IbvQpEx>,
    magic: AtomicU64,
    /// `None` once destroyed.
    qp: QpLock,
    pd: &'static CPd,
    send_cq: &'static CCq,
    recv_cq: &'static CCq,
    srq: Option<&'static CSrq>,
    user_handle: u64,
    /// The `ibv_wr_*` batch of a QP made with send operations.
    wr: Option<Mutex<crate::qp_ex::Batch>>,
    /// What `ibv` said when handed out (see `names.rs`).
    names: Names,
    /// `struct mlx5dv_qp_ex` (`mlx5dv_qp_ex_from_ibv_qp_ex`): C only reads it.
    #[cfg(feature = "mlx5")]
    pub(crate) dv: crate::mlx5dv::DvQpEx,
    /// The mlx5 provider's own handle on the QP's queues, fixed when the
    /// QP is made (`None` on other providers): the straight posts go
    /// through it under the provider's lock alone, judged by `qp`'s
    /// [`Straight`] bits (F2), not under `qp`'s lock as well.
    #[cfg(feature = "mlx5")]
    direct: Option<verbs::qp::Mlx5Direct>,
}

// SAFETY: the C view is touched only by C, under `qp`'s lock, or through
// raw pointers to its pthread objects; the rest is Sync.
unsafe impl Sync for CQp {}
// SAFETY: as above.
unsafe impl Send for CQp {}

/// The [`CQp`] behind a C `struct ibv_qp *`, if it is a live one of ours.
#[inline]
pub(crate) fn from_c<'a>(p: *mut IbvQp) -> Option<&'a CQp> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_qp we hand out is the first field of a live boxed
    // CQp (repr(C)); the magic check rejects destroyed ones still mapped.
    let c = unsafe { &*p.cast::<CQp>() };
    let m = c.magic.load(Ordering::Relaxed);
    #[cfg(feature = "mlx5")]
    if m == MAGIC_DIRECT {
        return Some(c);
    }
    (m == MAGIC).then_some(c)
}

/// [`from_c`] of a live QP of ours with the provider's own handle on its
/// queues ([`CQp::direct_unchecked`] may be called on it); `None` for any
/// other pointer (which [`from_c`] then judges).
#[cfg(feature = "mlx5")]
#[inline(always)]
pub(crate) fn from_c_direct<'a>(p: *mut IbvQp) -> Option<&'a CQp> {
    if p.is_null() {
        return None;
    }
    // SAFETY: as in `from_c`.
    let c = unsafe { &*p.cast::<CQp>() };
    (c.magic.load(Ordering::Relaxed) == MAGIC_DIRECT).then_some(c)
}

impl CQp {
    /// The provider's own handle on the queues ([`CQp::direct`]'s field),
    /// if it has one.
    #[cfg(feature = "mlx5")]
    #[inline(always)]
    pub(crate) fn direct(&self) -> Option<&verbs::qp::Mlx5Direct> {
        self.direct.as_ref()
    }

    /// [`CQp::direct`] of a QP known to have the handle, with no test.
    ///
    /// # Safety
    ///
    /// [`from_c_direct`] returned `self`.
    #[cfg(feature = "mlx5")]
    #[inline(always)]
    pub(crate) unsafe fn direct_unchecked(&self) -> &verbs::qp::Mlx5Direct {
        // SAFETY: `from_c_direct` found `MAGIC_DIRECT`, stored only when
        // `direct` is `Some` (invariant D), and `direct` never changes.
        unsafe { self.direct.as_ref().unwrap_unchecked() }
    }

    /// Whether the QP is in a state whose sends take the straight path
    /// (RC or UC in RTS or SQD): for a post through [`CQp::direct`], asked
    /// under the provider's lock (F2). A QP with such a handle has a
    /// provider whose doorbell does not name it (see `create`).
    #[cfg(feature = "mlx5")]
    #[inline(always)]
    pub(crate) fn may_send_direct(&self) -> bool {
        self.qp.straight.load(Ordering::Relaxed) & Straight::SEND_DIRECT != 0
    }

    /// As [`CQp::may_send_direct`], for receives (INIT to SQD), of a QP
    /// whose handle has a receive queue: under the provider's slot lock,
    /// `true` only while the slot holds this QP's entry (D1), what
    /// `Mlx5Direct::post_recv_fitted` asks of its `may`.
    #[cfg(feature = "mlx5")]
    #[inline(always)]
    pub(crate) fn may_recv_direct(&self) -> bool {
        self.qp.straight.load(Ordering::Relaxed) & Straight::RECV_DIRECT != 0
    }

    /// The QP, locked (see [`QpLock`]).
    #[inline(always)]
    pub(crate) fn lock(&self) -> QpGuard<'_> {
        self.qp.lock()
    }

    /// The QP, locked, if no one holds it now (see [`QpLock::try_lock`]).
    #[inline(always)]
    pub(crate) fn try_lock(&self) -> Option<QpGuard<'_>> {
        self.qp.try_lock()
    }

    /// If this library has the QP in `g` (this QP's lock, held) in INIT or
    /// RTR, not ready to send, retypes it in the state the kernel reports
    /// when the kernel moved it on its own (to RTS on iWARP, where the
    /// connection manager does, after librdmacm's RTR and RTS requests,
    /// which the kernel answers without a state change; or to ERROR:
    /// [`AnyQp::refresh_state`]), and keeps the C view's `state` in step.
    /// Returns whether the QP was in INIT or RTR (and so was asked about).
    /// A failed query leaves everything as it was.
    pub(crate) fn refresh_if_not_ready(&self, g: &mut QpGuard<'_>) -> bool {
        if !g.as_ref().is_some_and(|a| matches!(each!(a, q => q.state()), QpStateKind::Init | QpStateKind::Rtr)) {
            return false;
        }
        let Some(any) = g.take() else { return false };
        let any = match any {
            Any::Rc(q) => Any::Rc(q.refresh_state().unwrap_or_else(|e| e.qp)),
            Any::Uc(q) => Any::Uc(q.refresh_state().unwrap_or_else(|e| e.qp)),
            Any::Ud(q) => Any::Ud(q.refresh_state().unwrap_or_else(|e| e.qp)),
        };
        let state = each!(&any, q => q.state());
        **g = Some(any);
        // SAFETY: `state` is written only under the lock (held by the
        // caller through `g`).
        unsafe { (*self.ibv.get()).qp_base.state = state as c_int };
        true
    }

    /// The `ibv_wr_*` batch (a QP made by `ibv_create_qp_ex` with send
    /// operations), else `None`.
    pub(crate) fn wr_batch(&self) -> Option<&Mutex<crate::qp_ex::Batch>> {
        self.wr.as_ref()
    }

    /// Whether the C view's `context` and `handle` still name this QP:
    /// what rdma-core sends the kernel for a verb on the QP (and librxe
    /// with the doorbell of every post, see `names.rs`).
    #[inline(always)]
    pub(crate) fn named(&self) -> bool {
        let v = self.as_c();
        // SAFETY: plain reads of two fields of the live C view, which only
        // C writes after creation (C's rule: not during a call on the QP).
        let context = unsafe { (*v).context };
        // SAFETY: as above.
        let handle = unsafe { (*v).handle };
        self.names.said_by(context, handle)
    }

    /// Which provider drives the QP's device.
    pub(crate) fn provider(&self) -> verbs::ProviderKind {
        self.pd.provider()
    }

    /// `ibv_qp.qp_type`.
    pub(crate) fn qp_type(&self) -> c_int {
        let p = self.as_c().wrapping_byte_add(core::mem::offset_of!(IbvQp, qp_type)).cast::<c_int>();
        // SAFETY: set at creation, never written after.
        unsafe { p.read() }
    }

    fn counters(&self) -> Counters {
        use core::mem::offset_of;
        let c = offset_of!(IbvQp, events_completed);
        Counters::of(self.as_c(), offset_of!(IbvQp, mutex), offset_of!(IbvQp, cond), c, c)
    }

    /// Counts `n` acknowledged async events and wakes `ibv_destroy_qp`.
    pub(crate) fn ack(&self, n: u32) {
        self.counters().add([n, 0]);
    }

    fn wait_acks(&self, n: u32) {
        // Both slots name the same counter.
        self.counters().wait([n, n]);
    }

    /// `qp_context` as C last set it.
    fn qp_context(&self) -> *mut core::ffi::c_void {
        let p = self.as_c().wrapping_byte_add(core::mem::offset_of!(IbvQp, qp_context)).cast::<*mut core::ffi::c_void>();
        // SAFETY: a plain read of a pointer field C may write (C gives no
        // more ordering than rdma-core does for the same field).
        unsafe { p.read() }
    }

    /// The `struct ibv_qp *` C sees (`qp_base`, at the same address).
    pub(crate) fn as_c(&self) -> *mut IbvQp {
        self.ibv.get().cast()
    }
}

/// Gives back the borrows a QP took (after it is gone or was never made).
fn release(pd: &CPd, send: &CCq, recv: &CCq, srq: Option<&CSrq>) {
    pd.release();
    send.release();
    recv.release();
    if let Some(s) = srq {
        s.release();
    }
}

/// `IBV_QP_INIT_ATTR_PD`, `IBV_QP_INIT_ATTR_CREATE_FLAGS`,
/// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`.
const QP_INIT_ATTR_PD: u32 = 1;
const QP_INIT_ATTR_CREATE_FLAGS: u32 = 4;
const QP_INIT_ATTR_SEND_OPS_FLAGS: u32 = 64;

/// `verbs_context.create_qp_ex` (behind the `ibv_create_qp_ex` inline when
/// the mask is more than `IBV_QP_INIT_ATTR_PD`): a QP of a PD as
/// `ibv_create_qp` makes it, with the `ibv_wr_*` table when `attr` has
/// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS` ([`wants_wr_table`], `crate::qp_ex`). Creation flags go to
/// `QueuePair::create_with_flags` (the provider passes them to the kernel
/// or refuses them, `EOPNOTSUPP`: rxe and siw take none); SOURCE_QPN and
/// unknown flags are refused with `EOPNOTSUPP`, as are TSO and
/// ATOMIC_WRITE send operations, XRC domains and RSS.
///
/// # Safety
///
/// `attr` is NULL or points to a readable and writable `struct
/// ibv_qp_init_attr_ex`.
pub(crate) unsafe extern "C" fn create_qp_ex(context: *mut IbvContext, attr: *mut IbvQpInitAttrEx) -> *mut IbvQp {
    // SAFETY: the caller's promise, passed on.
    unsafe { create_qp_ex_with(context, attr, false) }
}

/// [`create_qp_ex`], with the `ibv_wr_*` table when `attr` has
/// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS` (whatever operations it names, as
/// libmlx5's `mlx5_qp_fill_wr_pfns` and rxe install every one the QP type
/// has) or when `wr_api` (`mlx5dv_create_qp` with mlx5 send operations).
///
/// # Safety
///
/// As [`create_qp_ex`].
pub(crate) unsafe fn create_qp_ex_with(context: *mut IbvContext, attr: *mut IbvQpInitAttrEx, wr_api: bool) -> *mut IbvQp {
    if attr.is_null() {
        return fail_null(libc::EINVAL);
    }
    // SAFETY: non-NULL; the caller promises a valid struct.
    let a = unsafe { &*attr };
    if a.comp_mask & QP_INIT_ATTR_PD == 0 {
        return fail_null(libc::EINVAL);
    }
    let send_ops = if a.comp_mask & QP_INIT_ATTR_SEND_OPS_FLAGS != 0 { a.send_ops_flags } else { 0 };
    let create_flags = if a.comp_mask & QP_INIT_ATTR_CREATE_FLAGS != 0 { a.create_flags } else { 0 };
    let Some(create_flags) = QpCreateFlags::from_bits(create_flags) else { return fail_null(libc::EOPNOTSUPP) };
    if a.comp_mask & !(QP_INIT_ATTR_PD | QP_INIT_ATTR_CREATE_FLAGS | QP_INIT_ATTR_SEND_OPS_FLAGS) != 0
        || send_ops & !crate::qp_ex::SUPPORTED_SEND_OPS != 0
    {
        return fail_null(libc::EOPNOTSUPP);
    }
    // What the device cannot do at all is refused at creation, as a
    // provider without those operations does (the provider's
    // `Caps::send_ops`: siw has no immediate data, atomics, local
    // invalidate or memory windows).
    let device_ops = pd::from_c(a.pd).and_then(|p| p.pd()).map_or(!0, |p| p.context().provider_caps().send_ops);
    if send_ops & !device_ops != 0 {
        return fail_null(libc::EOPNOTSUPP);
    }
    let wr_api = wants_wr_table(a.comp_mask, wr_api);
    // SAFETY: struct ibv_qp_init_attr_ex begins with every field of struct
    // ibv_qp_init_attr (layout test), which create reads and writes back
    // (the granted caps), as verbs.h's own PD-only path does.
    unsafe { create(a.pd, attr.cast::<IbvQpInitAttr>(), wr_api, Some(context), create_flags) }
}

/// Whether a QP made by `create_qp_ex` gets the `ibv_wr_*` table:
/// `comp_mask` (of `struct ibv_qp_init_attr_ex`) has
/// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`, even naming no operation, or
/// `dv_send_ops` (`mlx5dv_create_qp` with
/// `MLX5DV_QP_INIT_ATTR_MASK_SEND_OPS_FLAGS`), as libmlx5 decides.
pub(crate) fn wants_wr_table(comp_mask: u32, dv_send_ops: bool) -> bool {
    dv_send_ops || comp_mask & QP_INIT_ATTR_SEND_OPS_FLAGS != 0
}

/// `ibv_create_qp`: see [`create`].
///
/// # Safety
///
/// As [`create`].
pub(crate) unsafe extern "C" fn ibv_create_qp(pd: *mut IbvPd, init_attr: *mut IbvQpInitAttr) -> *mut IbvQp {
    // SAFETY: the caller's promise, passed on.
    unsafe { create(pd, init_attr, false, None, QpCreateFlags::empty()) }
}

/// `ibv_create_qp` and `create_qp_ex`: an RC, UC or UD QP in RESET; `init_attr->cap` is set
/// to the granted capacities. NULL with errno on failure.
///
/// # Safety
///
/// `init_attr` is NULL or points to a readable and writable
/// `struct ibv_qp_init_attr`. `wr_api`: with the `ibv_wr_*` table.
/// `context`: the context the command goes to (`ibv_create_qp_ex`'s
/// argument), else `pd->context` (`ibv_create_qp`); the PD, CQs and SRQ
/// are named by their C fields, as rdma-core names them (`names.rs`).
/// `flags`: `ibv_create_qp_ex`'s creation flags.
unsafe fn create(
    pd: *mut IbvPd,
    init_attr: *mut IbvQpInitAttr,
    wr_api: bool,
    context: Option<*mut IbvContext>,
    flags: QpCreateFlags,
) -> *mut IbvQp {
    let Some(cpd) = pd::from_c(pd) else { return fail_null(libc::EINVAL) };
    let cpd: &'static CPd = cpd;
    if init_attr.is_null() {
        return fail_null(libc::EINVAL);
    }
    // SAFETY: non-NULL, the caller promises a valid init attr.
    let ia = unsafe { &mut *init_attr };
    let (Some(scq), Some(rcq)) = (cq::from_c(ia.send_cq), cq::from_c(ia.recv_cq)) else {
        return fail_null(libc::EINVAL);
    };
    let (scq, rcq): (&'static CCq, &'static CCq) = (scq, rcq);
    let csrq: Option<&'static CSrq> = if ia.srq.is_null() {
        None
    } else {
        match srq::from_c(ia.srq) {
            Some(s) => Some(s),
            None => return fail_null(libc::EINVAL),
        }
    };
    let pd_named = match context {
        None => cpd.named(),
        Some(ctx) => cpd.handle_named() && ctx == cpd.context(),
    };
    if !pd_named || !scq.handle_named() || !rcq.handle_named() || csrq.is_some_and(|s| !s.handle_named()) {
        return fail_null(UNKNOWN);
    }
    if !matches!(ia.qp_type, QPT_RC | QPT_UC | QPT_UD) {
        return fail_null(libc::EOPNOTSUPP);
    }
    let Some(rpd) = cpd.pd() else { return fail_null(libc::EINVAL) };
    // Take every borrow first; give them back if anything fails.
    cpd.hold();
    let held = (scq.hold(), rcq.hold(), csrq.map(|s| s.hold()));
    let (Some(send_cq), Some(recv_cq)) = (held.0, held.1) else {
        release(cpd, scq, rcq, csrq);
        return fail_null(libc::EINVAL);
    };
    let srq_ref = match held.2 {
        None => None,
        Some(Some(s)) => Some(s),
        Some(None) => {
            release(cpd, scq, rcq, csrq);
            return fail_null(libc::EINVAL);
        }
    };
    let c = ia.cap;
    let init = QpInitAttr {
        send_cq,
        recv_cq,
        srq: srq_ref,
        cap: QpCap {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        },
        sq_sig_all: ia.sq_sig_all != 0,
    };
    let made = match ia.qp_type {
        QPT_RC => QueuePair::<Rc, _>::create_with_flags(rpd, init, flags).map(|q| Any::Rc(q.into())),
        QPT_UC => QueuePair::<Uc, _>::create_with_flags(rpd, init, flags).map(|q| Any::Uc(q.into())),
        _ => QueuePair::<Ud, _>::create_with_flags(rpd, init, flags).map(|q| Any::Ud(q.into())),
    };
    let qp = match made {
        Ok(q) => q,
        Err(e) => {
            release(cpd, scq, rcq, csrq);
            return fail_null(errno_of(&e));
        }
    };
    let (handle, qp_num, user_handle, cap) = each!(&qp, q => (q.handle(), q.qp_num(), q.user_handle(), q.cap()));
    ia.cap = IbvQpCap {
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
    };
    // SAFETY: IbvQpEx is plain C data for which all-zero is valid (NULL,
    // 0, None, glibc's PTHREAD_{MUTEX,COND}_INITIALIZER).
    let mut ex: IbvQpEx = unsafe { core::mem::zeroed() };
    let ibv = &mut ex.qp_base;
    ibv.context = cpd.context();
    ibv.qp_context = ia.qp_context;
    ibv.pd = pd;
    ibv.send_cq = ia.send_cq;
    ibv.recv_cq = ia.recv_cq;
    ibv.srq = ia.srq;
    ibv.handle = handle;
    ibv.qp_num = qp_num;
    ibv.state = QpStateKind::Reset as c_int;
    ibv.qp_type = ia.qp_type;
    if wr_api {
        crate::qp_ex::set_api(&mut ex);
    }
    let names = cpd.provider().caps().doorbell_names_qp;
    // A doorbell that names the QP by its C fields needs the names test
    // of the posts under `qp`'s lock: no direct posts then.
    #[cfg(feature = "mlx5")]
    let direct = if names { None } else { each!(&qp, q => q.mlx5_direct()) };
    // Invariant D: `MAGIC_DIRECT` exactly when `direct` is `Some`.
    #[cfg(feature = "mlx5")]
    let magic = if direct.is_some() { MAGIC_DIRECT } else { MAGIC };
    #[cfg(not(feature = "mlx5"))]
    let magic = MAGIC;
    // D1: the queues the handle found in the slot.
    #[cfg(feature = "mlx5")]
    let direct_bits = direct.as_ref().map_or(0, |d| {
        (if d.has_recv() { Straight::RECV_DIRECT } else { 0 }) | if d.has_send() { Straight::SEND_DIRECT } else { 0 }
    });
    #[cfg(not(feature = "mlx5"))]
    let direct_bits = 0;
    let b = Box::new(CQp {
        ibv: UnsafeCell::new(ex),
        magic: AtomicU64::new(magic),
        qp: QpLock::new(Some(qp), names, direct_bits),
        pd: cpd,
        send_cq: scq,
        recv_cq: rcq,
        srq: csrq,
        user_handle,
        wr: wr_api.then(|| crate::qp_ex::Batch::new(cap.max_send_wr)),
        names: Names::new(cpd.context(), handle),
        #[cfg(feature = "mlx5")]
        dv: crate::mlx5dv::DvQpEx::new(wr_api),
        #[cfg(feature = "mlx5")]
        direct,
    });
    let p = Box::into_raw(b);
    registry::insert(user_handle, Kind::Qp, p as usize);
    p.cast()
}

/// C's attributes and mask as a `MODIFY_QP` command.
struct CModify<'a> {
    attr: &'a IbvQpAttr,
    mask: c_int,
}

fn dest_of(a: &IbvAhAttr) -> QpDest {
    let mut d = QpDest::new_zeroed();
    d.dgid = a.grh.dgid.raw;
    d.flow_label = a.grh.flow_label;
    d.sgid_index = a.grh.sgid_index;
    d.hop_limit = a.grh.hop_limit;
    d.traffic_class = a.grh.traffic_class;
    d.dlid = a.dlid;
    d.sl = a.sl;
    d.src_path_bits = a.src_path_bits;
    d.static_rate = a.static_rate;
    d.is_global = a.is_global;
    d.port_num = a.port_num;
    d
}

fn ah_of(d: &QpDest) -> IbvAhAttr {
    IbvAhAttr {
        grh: IbvGlobalRoute {
            dgid: crate::abi::device::IbvGid { raw: d.dgid },
            flow_label: d.flow_label,
            sgid_index: d.sgid_index,
            hop_limit: d.hop_limit,
            traffic_class: d.traffic_class,
        },
        dlid: d.dlid,
        sl: d.sl,
        src_path_bits: d.src_path_bits,
        static_rate: d.static_rate,
        is_global: d.is_global,
        port_num: d.port_num,
    }
}

impl TransitionAttr for CModify<'_> {
    fn apply(&self, cmd: &mut ModifyQp) -> u32 {
        let a = self.attr;
        cmd.cur_qp_state = a.cur_qp_state as u8;
        cmd.path_mtu = a.path_mtu as u8;
        cmd.path_mig_state = a.path_mig_state as u8;
        cmd.qkey = a.qkey;
        cmd.rq_psn = a.rq_psn;
        cmd.sq_psn = a.sq_psn;
        cmd.dest_qp_num = a.dest_qp_num;
        cmd.qp_access_flags = a.qp_access_flags;
        cmd.pkey_index = a.pkey_index;
        cmd.alt_pkey_index = a.alt_pkey_index;
        cmd.en_sqd_async_notify = a.en_sqd_async_notify;
        cmd.max_rd_atomic = a.max_rd_atomic;
        cmd.max_dest_rd_atomic = a.max_dest_rd_atomic;
        cmd.min_rnr_timer = a.min_rnr_timer;
        cmd.port_num = a.port_num;
        cmd.timeout = a.timeout;
        cmd.retry_cnt = a.retry_cnt;
        cmd.rnr_retry = a.rnr_retry;
        cmd.alt_port_num = a.alt_port_num;
        cmd.alt_timeout = a.alt_timeout;
        cmd.dest = dest_of(&a.ah_attr);
        cmd.alt_dest = dest_of(&a.alt_ah_attr);
        // The kernel reads only the fields the mask names.
        (self.mask & !ATTR_STATE) as u32
    }
}

fn state_of(v: c_int) -> Option<QpStateKind> {
    u8::try_from(v).ok().and_then(QpStateKind::from_raw)
}

/// `ibv_modify_qp`: 0 or the errno value; transitions the IB spec forbids
/// get the kernel's `EINVAL` and leave the QP as it was.
///
/// # Safety
///
/// `attr` is NULL or points to a readable `struct ibv_qp_attr`.
pub(crate) unsafe extern "C" fn ibv_modify_qp(qp: *mut IbvQp, attr: *mut IbvQpAttr, attr_mask: c_int) -> c_int {
    let Some(c) = from_c(qp) else { return fail_errno(libc::EINVAL) };
    if attr.is_null() {
        return fail_errno(libc::EINVAL);
    }
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    // SAFETY: non-NULL, the caller promises a readable attr.
    let a = unsafe { &*attr };
    let mut g = c.lock();
    let Some(any) = g.take() else { return fail_errno(libc::EINVAL) };
    let cur = each!(&any, q => q.state());
    let to = if attr_mask & ATTR_STATE != 0 { state_of(a.qp_state) } else { Some(cur) };
    if attr_mask & ATTR_CUR_STATE != 0 && state_of(a.cur_qp_state).is_none() {
        *g = Some(any);
        return fail_errno(libc::EINVAL);
    }
    let Some(to) = to else {
        *g = Some(any);
        return fail_errno(libc::EINVAL);
    };
    let m = CModify { attr: a, mask: attr_mask };
    let r = match any {
        Any::Rc(q) => q.modify(to, &m).map(Any::Rc).map_err(|e| (e.error, Any::Rc(e.qp))),
        Any::Uc(q) => q.modify(to, &m).map(Any::Uc).map_err(|e| (e.error, Any::Uc(e.qp))),
        Any::Ud(q) => q.modify(to, &m).map(Any::Ud).map_err(|e| (e.error, Any::Ud(e.qp))),
    };
    match r {
        Ok(q) => {
            *g = Some(q);
            if attr_mask & ATTR_STATE != 0 {
                // SAFETY: `state` is written only under the lock (held).
                unsafe { (*c.ibv.get()).qp_base.state = to as c_int };
            }
            0
        }
        Err((e, q)) => {
            *g = Some(q);
            fail_errno(errno_of(&e))
        }
    }
}

/// `ibv_query_qp`: fills `attr` and `init_attr` (0 or the errno value).
///
/// # Safety
///
/// `attr` and `init_attr` are NULL or point to writable structs.
pub(crate) unsafe extern "C" fn ibv_query_qp(qp: *mut IbvQp, attr: *mut IbvQpAttr, attr_mask: c_int, init_attr: *mut IbvQpInitAttr) -> c_int {
    let Some(c) = from_c(qp) else { return fail_errno(libc::EINVAL) };
    if attr.is_null() || init_attr.is_null() {
        return fail_errno(libc::EINVAL);
    }
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    let g = c.lock();
    let Some(any) = g.as_ref() else { return fail_errno(libc::EINVAL) };
    let mut cmd = QueryQp::new_zeroed();
    cmd.qp_handle = each!(any, q => q.handle());
    cmd.attr_mask = attr_mask as u32;
    let ctx = c.pd.pd().map(|p| p.context());
    let Some(ctx) = ctx else { return fail_errno(libc::EINVAL) };
    let r = match ctx.channel().exec("ibv_query_qp", &cmd, &[], &mut []) {
        Ok(r) => r,
        Err(e) => return fail_errno(errno_of(&e)),
    };
    let mut cap = IbvQpCap {
        max_send_wr: r.max_send_wr,
        max_recv_wr: r.max_recv_wr,
        max_send_sge: r.max_send_sge,
        max_recv_sge: r.max_recv_sge,
        max_inline_data: r.max_inline_data,
    };
    if ctx.provider_caps().query_qp_send_caps_from_library {
        // As libmlx5's mlx5_query_qp: the send queue's own (mlx5_ib answers
        // 0 for a user QP's).
        let granted = each!(any, q => q.cap());
        cap.max_send_wr = granted.max_send_wr;
        cap.max_send_sge = granted.max_send_sge;
        cap.max_inline_data = granted.max_inline_data;
    }
    let out = IbvQpAttr {
        qp_state: c_int::from(r.qp_state),
        cur_qp_state: c_int::from(r.cur_qp_state),
        path_mtu: c_int::from(r.path_mtu),
        path_mig_state: c_int::from(r.path_mig_state),
        qkey: r.qkey,
        rq_psn: r.rq_psn,
        sq_psn: r.sq_psn,
        dest_qp_num: r.dest_qp_num,
        qp_access_flags: r.qp_access_flags,
        cap,
        ah_attr: ah_of(&r.dest),
        alt_ah_attr: ah_of(&r.alt_dest),
        pkey_index: r.pkey_index,
        alt_pkey_index: r.alt_pkey_index,
        en_sqd_async_notify: 0,
        sq_draining: r.sq_draining,
        max_rd_atomic: r.max_rd_atomic,
        max_dest_rd_atomic: r.max_dest_rd_atomic,
        min_rnr_timer: r.min_rnr_timer,
        port_num: r.port_num,
        timeout: r.timeout,
        retry_cnt: r.retry_cnt,
        rnr_retry: r.rnr_retry,
        alt_port_num: r.alt_port_num,
        alt_timeout: r.alt_timeout,
        rate_limit: 0,
    };
    // SAFETY: non-NULL, the caller promises a writable struct.
    unsafe { attr.write(out) };
    let init = IbvQpInitAttr {
        qp_context: c.qp_context(),
        send_cq: c.send_cq.as_c(),
        recv_cq: c.recv_cq.as_c(),
        srq: c.srq.map_or(core::ptr::null_mut(), |s| s.as_c()),
        cap,
        qp_type: c.qp_type(),
        sq_sig_all: c_int::from(r.sq_sig_all != 0),
    };
    // SAFETY: as above.
    unsafe { init_attr.write(init) };
    if attr_mask & ATTR_STATE != 0 {
        let state = c.as_c().wrapping_byte_add(core::mem::offset_of!(IbvQp, state)).cast::<c_int>();
        // SAFETY: `state` is written only under the lock (held), as
        // rdma-core updates it after a query.
        unsafe { state.write(c_int::from(r.qp_state)) };
    }
    0
}

/// `ibv_destroy_qp`: 0 or the errno value (`ENOENT` when its fields name
/// no QP: it then stays valid). Waits for the acknowledgement of the async
/// events the kernel delivered for the QP, as rdma-core does.
pub(crate) extern "C" fn ibv_destroy_qp(qp: *mut IbvQp) -> c_int {
    let Some(c) = from_c(qp) else { return fail_errno(libc::EINVAL) };
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    let mut g = c.lock();
    let Some(any) = g.take() else { return fail_errno(libc::EINVAL) };
    let r = match any {
        Any::Rc(q) => q.destroy().map_err(|e| (e.error, Any::Rc(e.object))),
        Any::Uc(q) => q.destroy().map_err(|e| (e.error, Any::Uc(e.object))),
        Any::Ud(q) => q.destroy().map_err(|e| (e.error, Any::Ud(e.object))),
    };
    let events = match r {
        Ok(n) => n,
        Err((e, q)) => {
            *g = Some(q);
            return fail_errno(errno_of(&e));
        }
    };
    drop(g);
    release(c.pd, c.send_cq, c.recv_cq, c.srq);
    registry::remove(c.user_handle);
    c.wait_acks(events);
    c.magic.store(0, Ordering::Relaxed);
    // SAFETY: `qp` is the pointer Box::into_raw gave C for this live box
    // (from_c checked); magic cleared and registry entry gone; freed once.
    drop(unsafe { Box::from_raw(qp.cast::<CQp>()) });
    0
}

#[cfg(test)]
mod tests {
    use super::QpLock;

    #[test]
    fn a_failed_try_lock_leaves_the_holders_lock_held() {
        let lock = QpLock::new(None, false, 0);
        let held = lock.lock();
        // Refused while held, and the refusal must not give the lock back
        // (it did when the guard was built eagerly and dropped: issue 29).
        assert!(lock.try_lock().is_none());
        assert!(lock.try_lock().is_none(), "the first refusal released the holder's lock");
        drop(held);
        let again = lock.try_lock();
        assert!(again.is_some(), "free after the holder let go");
        assert!(lock.try_lock().is_none());
    }

    #[test]
    fn the_straight_bits_follow_the_value_and_keep_the_provider_bit() {
        for names in [false, true] {
            let lock = QpLock::new(None, names, 0);
            let mut g = lock.lock();
            // No QP (destroyed): neither straight path, whatever the provider.
            assert!(g.send_straight().is_none() && g.recv_straight().is_none());
            assert_eq!(g.doorbell_names_qp(), names);
            // A guard that handed the value out mutably recomputes the bits
            // when it lets go; the provider's bit stays.
            *g = None;
            drop(g);
            let mut g = lock.lock();
            assert!(g.send_straight().is_none() && g.recv_straight().is_none());
            assert_eq!(g.doorbell_names_qp(), names, "restate kept the provider bit");
            // Nor the RC fast path: its bit is not set for no QP.
            assert!(!g.plain_rc() && g.send_straight_rc().is_none());
        }
    }

    #[test]
    fn the_direct_bits_need_the_state_and_the_handles_queue() {
        use super::Straight;
        let bits = |l: &QpLock| l.straight.load(core::sync::atomic::Ordering::Relaxed);
        let both = Straight::RECV_DIRECT | Straight::SEND_DIRECT;
        for direct in [0, Straight::RECV_DIRECT, both] {
            let lock = QpLock::new(None, false, direct);
            // No QP: no state, so no direct post (D1), whatever the handle.
            assert_eq!(bits(&lock) & both, 0);
            let mut g = lock.lock();
            *g = None;
            drop(g);
            assert_eq!(bits(&lock) & both, 0, "restated");
            assert_eq!(lock.direct, direct);
        }
        // Each direct bit needs its state bit and the handle's queue.
        for (b, direct, out) in [
            (Straight::RECV, 0, 0),
            (Straight::RECV, both, Straight::RECV_DIRECT),
            (Straight::RECV, Straight::SEND_DIRECT, 0),
            (Straight::SEND | Straight::SEND_RC, both, Straight::SEND_DIRECT),
            (Straight::SEND | Straight::RECV, Straight::RECV_DIRECT, Straight::RECV_DIRECT),
            (Straight::SEND | Straight::RECV | Straight::NAMES, both, both),
            (Straight::NAMES | Straight::UC, both, 0),
        ] {
            assert_eq!(Straight::derive(b, direct), b | out, "{b:#x} {direct:#x}");
        }
    }
}
