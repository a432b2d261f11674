//! Queue pairs (`struct ibv_qp`) with the state in the type.
//!
//! A [`QueuePair<'a, T, S>`] is a QP of transport `T` ([`Rc`], [`Uc`],
//! [`Ud`]) known to be in state `S` ([`Reset`], [`Init`], [`Rtr`], [`Rts`],
//! [`Sqd`], [`Error`]). Transitions consume the QP and return it in the
//! new state, or — if the kernel refuses — hand it back unchanged in a
//! [`TransitionError`]:
//!
//! ```text
//! create ─▶ Reset ─into_init─▶ Init ─into_rtr─▶ Rtr ─into_rts─▶ Rts ⇄ Sqd
//!            ▲                                                   │
//!            └──── into_reset (any state) ◀── into_error (any) ◀─┘
//! ```
//!
//! `post_send` exists only where [`CanPostSend`] holds (RTS, SQD, ERROR),
//! `post_recv` only where [`CanPostRecv`] holds (INIT and later); calling
//! them elsewhere does not compile (see `tests/ui/`). [`AnyQp`] is the
//! runtime-state form for code that keeps QPs in tables.
//!
//! The QP borrows its PD, CQs and SRQ, so none of them can be destroyed
//! while it exists; its rings are mapped from the kernel and unmapped only
//! after the kernel destroyed the QP.

// Failed transitions and destroys hand the QP back by value: no heap to
// box it in, and giving it back is the point.
#![allow(clippy::result_large_err)]
// With no provider compiled in (a no_std core build), a QP cannot exist
// (its queues are an empty enum) and code after a transition is dead.
#![cfg_attr(not(any(feature = "rxe", feature = "siw")), allow(unused_variables, unreachable_code))]
pub mod attr;
pub mod connect;
mod create_flags;
mod dynamic;
pub(crate) mod kind;
pub mod state;
mod transition;
mod kernel_attr;
#[cfg(feature = "internals")]
mod straight;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use straight::{RecvStraight, SendStraight};
#[cfg(all(feature = "internals", feature = "mlx5"))]
#[doc(hidden)]
pub use straight::Mlx5Direct;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use crate::providers::seam::{Plain, StraightWr};
pub(crate) use kernel_attr::KernelAttr;

use core::marker::PhantomData;

use rustix::fd::{AsFd, BorrowedFd};
use zerocopy::FromZeros;

use crate::abi::uverbs::{CreateQp, DestroyQp, ExCreateQp, QueryQp};
use crate::context::Context;
use crate::cq::Cq;
use crate::error::{ErrorKind, Result};
use crate::pd::{DestroyError, Pd};
use crate::providers::seam::{DriverCmd, QpCreateCmd};
use crate::providers::AnyQueues;
use crate::srq::Srq;

pub use crate::ah::{AhAttr, GlobalRoute};
pub use attr::{
    ConnInitAttr, Mtu, QpAccess, QpAttr, QpCap, RcRtrAttr, RcRtsAttr, SqPsnAttr, TransitionAttr,
    UcRtrAttr, UdInitAttr, UdRtrAttr,
};
pub use connect::{ConnectError, ConnectOpts, Endpoint};
pub use create_flags::QpCreateFlags;
pub use dynamic::AnyQp;
pub use state::{
    CanPostRecv, CanPostSend, Error, Init, QpState, QpStateKind, QpType, Rc, Reset, Rtr, Rts, Sqd,
    Transport, Uc, Ud, XrcSend,
};
pub use transition::Transition;
pub use crate::wr::{MwBind, Payload, PostError, RecvWr, SendFlags, SendOp, SendWr, Sge, UdDest};

/// An RC queue pair in state `S` (default: just created).
pub type RcQp<'a, S = Reset> = QueuePair<'a, Rc, S>;
/// A UC queue pair in state `S`.
pub type UcQp<'a, S = Reset> = QueuePair<'a, Uc, S>;
/// A UD queue pair in state `S`.
pub type UdQp<'a, S = Reset> = QueuePair<'a, Ud, S>;

/// What a QP is created with (`struct ibv_qp_init_attr`; the QP type is
/// the transport type parameter).
#[doc(alias = "ibv_qp_init_attr")]
#[derive(Clone, Copy, Debug)]
pub struct QpInitAttr<'a> {
    /// CQ for send completions.
    pub send_cq: &'a Cq<'a>,
    /// CQ for receive completions.
    pub recv_cq: &'a Cq<'a>,
    /// Shared receive queue; the QP then has no receive queue of its own.
    pub srq: Option<&'a Srq<'a>>,
    /// Requested capacities (the kernel may grant more).
    pub cap: QpCap,
    /// Generate a completion for every send request.
    pub sq_sig_all: bool,
}

/// A transition that was refused: the error and the QP, unchanged.
///
/// It converts into [`crate::Error`] (dropping the QP, which is then
/// destroyed), so `?` works in a function returning
/// [`verbs::Result`](crate::Result). Keep `qp` to retry or tear down.
/// A `Box<dyn std::error::Error>` or `anyhow::Error` needs a `'static`
/// error, and the QP borrows its PD: convert first
/// (`.map_err(verbs::Error::from)?`).
///
/// ```no_run
/// # use verbs::qp::{ConnInitAttr, QpAccess, RcQp};
/// fn bring_up<'a>(qp: RcQp<'a>) -> verbs::Result<RcQp<'a, verbs::qp::Init>> {
///     let attr = ConnInitAttr { pkey_index: 0, port_num: 1, access: QpAccess::empty() };
///     Ok(qp.into_init(attr)?)
/// }
/// fn main() -> Result<(), Box<dyn std::error::Error>> {
/// #   let qp: RcQp<'static> = unimplemented!();
///     let attr = ConnInitAttr { pkey_index: 0, port_num: 1, access: QpAccess::empty() };
///     let _qp = qp.into_init(attr).map_err(verbs::Error::from)?;
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct TransitionError<Q> {
    /// Why (usually `InvalidArgument`, naming `ibv_modify_qp`).
    pub error: crate::Error,
    /// The QP, still in its previous state.
    pub qp: Q,
}

impl<Q> TransitionError<Q> {
    /// The error's kind.
    pub fn kind(&self) -> crate::ErrorKind {
        self.error.kind()
    }
}

impl<Q> From<TransitionError<Q>> for crate::Error {
    /// The error alone; the QP is dropped (destroyed).
    fn from(e: TransitionError<Q>) -> Self {
        e.error
    }
}

impl<Q> core::fmt::Display for TransitionError<Q> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The error is the message: not also returned as `source()`, so
        // that error-chain printers do not say it twice.
        write!(f, "{} (the QP is unchanged)", self.error)
    }
}

crate::error::box_error_from!([Q] TransitionError<Q>, |e| e.error);

/// The state-independent part of a QP; owns the kernel object.
#[derive(Debug)]
struct QpInner<'a> {
    pd: &'a Pd<'a>,
    /// The device file (the context's), kept at hand for the doorbell.
    dev: BorrowedFd<'a>,
    send_cq: &'a Cq<'a>,
    recv_cq: &'a Cq<'a>,
    srq: Option<&'a Srq<'a>>,
    handle: u32,
    qp_num: u32,
    user_handle: u64,
    cap: QpCap,
    sq_sig_all: bool,
    /// The provider's queues.
    ring: AnyQueues,
    live: bool,
}

/// A queue pair of transport `T` in state `S` (`struct ibv_qp`).
#[doc(alias = "ibv_qp")]
#[derive(Debug)]
pub struct QueuePair<'a, T: Transport, S: QpState> {
    inner: QpInner<'a>,
    _state: PhantomData<(T, S)>,
}

impl<'a, T: Transport> QueuePair<'a, T, Reset> {
    /// `ibv_create_qp`: creates a QP of transport `T` in `pd`, in RESET.
    ///
    /// Capacities above the device's limits are refused by the kernel
    /// (`InvalidArgument`); a transport the device lacks (UC/UD on siw) is
    /// an `Unsupported` error naming `ibv_create_qp`.
    #[doc(alias = "ibv_create_qp")]
    pub fn create(pd: &'a Pd<'a>, init: QpInitAttr<'a>) -> Result<Self> {
        Self::create_inner("ibv_create_qp", pd, init, QpCreateFlags::empty())
    }

    /// `ibv_create_qp_ex` with `IBV_QP_INIT_ATTR_CREATE_FLAGS`: as
    /// [`create`](Self::create), with creation flags. Flags the provider's
    /// library does not pass are `Unsupported` before the kernel (all of
    /// them on rxe and siw, as rdma-core's providers answer); the kernel
    /// refuses the ones the device or the QP type cannot have (mlx5_ib:
    /// `SCATTER_FCS` and `CVLAN_STRIPPING` are for raw packet QPs,
    /// `Unsupported` here). No flag: exactly [`create`](Self::create).
    #[doc(alias = "ibv_create_qp_ex")]
    pub fn create_with_flags(pd: &'a Pd<'a>, init: QpInitAttr<'a>, flags: QpCreateFlags) -> Result<Self> {
        // No flag is `ibv_create_qp` (what a C caller of it reaches here
        // through the C library), and its errors name that verb.
        let verb = if flags.is_empty() { "ibv_create_qp" } else { "ibv_create_qp_ex" };
        Self::create_inner(verb, pd, init, flags)
    }

    fn create_inner(verb: &'static str, pd: &'a Pd<'a>, init: QpInitAttr<'a>, flags: QpCreateFlags) -> Result<Self> {
        let ctx = pd.context();
        let limit = i32::MAX as u32;
        let c = init.cap;
        if [
            c.max_send_wr,
            c.max_recv_wr,
            c.max_send_sge,
            c.max_recv_sge,
            c.max_inline_data,
        ]
        .iter()
        .any(|&v| v > limit)
        {
            return Err(crate::Error::new(verb, ErrorKind::InvalidArgument));
        }
        let passed = ctx.provider_caps().qp_create_flags;
        if flags.bits() & !passed != 0 {
            return Err(crate::Error::new(verb, ErrorKind::Unsupported)
                .with_detail("the provider takes none of these QP creation flags"));
        }
        let user_handle = crate::user_handle::next();
        let mut cmd = CreateQp::new_zeroed();
        cmd.user_handle = user_handle;
        cmd.pd_handle = pd.handle();
        cmd.send_cq_handle = init.send_cq.handle();
        cmd.recv_cq_handle = init.recv_cq.handle();
        if let Some(srq) = init.srq {
            cmd.srq_handle = srq.handle();
            cmd.is_srq = 1;
        }
        cmd.max_send_wr = c.max_send_wr;
        cmd.max_recv_wr = c.max_recv_wr;
        cmd.max_send_sge = c.max_send_sge;
        cmd.max_recv_sge = c.max_recv_sge;
        cmd.max_inline_data = c.max_inline_data;
        cmd.sq_sig_all = u8::from(init.sq_sig_all);
        cmd.qp_type = T::QP_TYPE as u8;
        let (ring, resp) = if flags.is_empty() {
            send_create(ctx, verb, cmd, &c, init.srq.is_some())?
        } else {
            send_create(ctx, verb, extended(&cmd, flags), &c, init.srq.is_some())?
        };
        let cap = QpCap {
            max_send_wr: resp.max_send_wr,
            max_recv_wr: resp.max_recv_wr,
            max_send_sge: resp.max_send_sge,
            max_recv_sge: resp.max_recv_sge,
            max_inline_data: resp.max_inline_data,
        };
        let inner = QpInner {
            pd,
            dev: ctx.channel().as_fd(),
            send_cq: init.send_cq,
            recv_cq: init.recv_cq,
            srq: init.srq,
            handle: resp.qp_handle,
            qp_num: resp.qpn,
            user_handle,
            cap,
            sq_sig_all: init.sq_sig_all,
            ring,
            live: true,
        };
        Ok(Self {
            inner,
            _state: PhantomData,
        })
    }
}

/// Sends a QP's create command through its provider: the queues and
/// the legacy part of the response.
fn send_create<C: QpCreateCmd>(
    ctx: &Context,
    verb: &'static str,
    cmd: C,
    c: &QpCap,
    has_srq: bool,
) -> Result<(AnyQueues, crate::abi::uverbs::CreateQpResp)> {
    let mut dc = DriverCmd::new(ctx.channel(), verb, cmd);
    let made = AnyQueues::create(ctx.provider_state(), &mut dc).map_err(|e| {
        // The kernel's bare EINVAL: name the capacity the device refuses
        // (an extra query, on this error path only).
        match (e.kind(), cap_over_device_limit(ctx, c, has_srq)) {
            (ErrorKind::InvalidArgument, Some(detail)) if dc.sent().is_none() => e.with_detail(detail),
            _ => e,
        }
    });
    let (ring, resp) = dc.finish(made, |r| destroy_cmd(ctx, C::base(&r).qp_handle))?;
    Ok((ring, *C::base(&resp)))
}

/// The extended `CREATE_QP` of `cmd` with creation flags (what
/// libibverbs' `ibv_cmd_create_qp_ex2` sends).
fn extended(cmd: &CreateQp, flags: QpCreateFlags) -> ExCreateQp {
    ExCreateQp::from_base(cmd, flags.bits())
}

/// Which requested capacity is above the device's limit
/// (`ibv_query_device`), if one is.
fn cap_over_device_limit(ctx: &crate::Context, c: &QpCap, has_srq: bool) -> Option<&'static str> {
    let a = ctx.query_device().ok()?.ex.base;
    if c.max_send_wr > a.max_qp_wr {
        Some("max_send_wr exceeds the device's max_qp_wr")
    } else if !has_srq && c.max_recv_wr > a.max_qp_wr {
        Some("max_recv_wr exceeds the device's max_qp_wr")
    } else if c.max_send_sge > a.max_sge {
        Some("max_send_sge exceeds the device's max_sge")
    } else if !has_srq && c.max_recv_sge > a.max_sge {
        Some("max_recv_sge exceeds the device's max_sge")
    } else {
        None
    }
}

impl<'a, T: Transport, S: QpState> QueuePair<'a, T, S> {
    fn from_inner(inner: QpInner<'a>) -> Self {
        Self {
            inner,
            _state: PhantomData,
        }
    }

    /// The QP number (`ibv_qp.qp_num`).
    pub fn qp_num(&self) -> u32 {
        self.inner.qp_num
    }

    /// The kernel's handle for this QP.
    pub fn handle(&self) -> u32 {
        self.inner.handle
    }

    /// The value the kernel reports in this QP's async events.
    pub fn user_handle(&self) -> u64 {
        self.inner.user_handle
    }

    /// The state this QP is in, as far as the type system knows.
    pub fn state(&self) -> QpStateKind {
        S::KIND
    }

    /// The transport type.
    pub fn qp_type(&self) -> QpType {
        T::QP_TYPE
    }

    /// The capacities the kernel granted at creation.
    pub fn cap(&self) -> QpCap {
        self.inner.cap
    }

    /// Whether every send request generates a completion.
    pub fn sq_sig_all(&self) -> bool {
        self.inner.sq_sig_all
    }

    /// The PD the QP belongs to.
    pub fn pd(&self) -> &'a Pd<'a> {
        self.inner.pd
    }

    /// The send CQ.
    pub fn send_cq(&self) -> &'a Cq<'a> {
        self.inner.send_cq
    }

    /// The receive CQ.
    pub fn recv_cq(&self) -> &'a Cq<'a> {
        self.inner.recv_cq
    }

    /// The SRQ, if the QP uses one.
    pub fn srq(&self) -> Option<&'a Srq<'a>> {
        self.inner.srq
    }

    fn ctx(&self) -> &'a Context {
        self.inner.pd.context()
    }

    /// The sizes of the rings mapped from the kernel, in slots: the send
    /// queue's and the receive queue's (`None` with an SRQ). rxe counts
    /// ring slots (`index_mask + 1`, one always kept free), siw array
    /// entries (`num_sqe`, `num_rqe`).
    pub fn mapped_queue_slots(&self) -> (u32, Option<u32>) {
        self.inner.ring.queue_slots()
    }

    /// `ibv_query_qp`: the QP's attributes as the kernel reports them (its
    /// real state included, which may be ERROR even if the type says
    /// otherwise: the device can fail a QP at any time).
    #[doc(alias = "ibv_query_qp")]
    pub fn query(&self) -> Result<QpAttr> {
        let mut cmd = QueryQp::new_zeroed();
        cmd.qp_handle = self.inner.handle;
        cmd.attr_mask = attr::IBV_QP_ALL;
        let r = self
            .ctx()
            .channel()
            .exec("ibv_query_qp", &cmd, &[], &mut [])?;
        let mut a = QpAttr::from_kernel(&r);
        if self.ctx().provider_caps().query_qp_send_caps_from_library {
            let granted = self.inner.cap;
            a.cap.max_send_wr = granted.max_send_wr;
            a.cap.max_send_sge = granted.max_send_sge;
            a.cap.max_inline_data = granted.max_inline_data;
        }
        Ok(a)
    }

    /// `ibv_destroy_qp`, in any state: destroys the QP, then unmaps its
    /// rings. On failure the QP comes back with the error. On success
    /// returns the number of async events the kernel delivered for it.
    #[doc(alias = "ibv_destroy_qp")]
    pub fn destroy(mut self) -> core::result::Result<u32, DestroyError<Self>> {
        match destroy_cmd(self.ctx(), self.inner.handle) {
            Ok(n) => {
                self.inner.live = false;
                Ok(n)
            }
            Err(error) => Err(DestroyError {
                error,
                object: self,
            }),
        }
    }
}

impl<T: Transport, S: CanPostSend> QueuePair<'_, T, S> {
    /// `ibv_post_send`: queues the send work requests `wrs` and rings the
    /// doorbell once for the whole list.
    ///
    /// All-or-nothing: every request is checked first (opcode valid for
    /// the transport, SGE count, inline size, UD destination, atomic
    /// alignment, room in the send queue); if one is refused, nothing of
    /// the list is written and the [`PostError`] names it. If the
    /// doorbell itself fails (a kernel error), the requests are already
    /// queued and `index` is `wrs.len()`. An empty list does nothing.
    ///
    /// In ERROR (a QP moved there with [`QueuePair::into_error`]) the
    /// requests are accepted and each completes with `WR_FLUSH_ERR`, as
    /// the IB spec says and rdma-core + rxe do: a memory-window bind too
    /// (its new rkey then grants nothing).
    ///
    /// siw (iWARP): a QP the kernel failed (a TERMINATE from the peer, a
    /// disconnection) has its send queue flushed once, on that transition;
    /// requests posted after it are accepted but never completed, as with
    /// rdma-core's libsiw. The connection manager's `DISCONNECTED` event
    /// and the QP's async event say when to stop posting
    /// (`tests/device/faults_access.rs`). On a siw QP typed ERROR, where
    /// that is known, requests are refused (`WrongState`, nothing written)
    /// instead of left in the ring for ever.
    ///
    /// The method exists only in the states that allow sending (RTS, SQD,
    /// ERROR).
    #[doc(alias = "ibv_post_send")]
    #[inline(always)]
    pub fn post_send(&mut self, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        if S::KIND == QpStateKind::Error {
            self.inner.can_flush_late_send(wrs)?;
        }
        self.inner.post_send(T::QP_TYPE, wrs)
    }

    /// libmlx5's `mlx5dv_wr_raw_wqe` (posted at once, as its
    /// `ibv_wr_complete` does): the WQE `wqe` as the caller built it
    /// (control segment first, its `ds` 16-byte units long), request
    /// `wr_id`, whose completion reports opcode `IBV_WC_DRIVER2` (136).
    /// Only on mlx5 (else `Unsupported`), only for this QP's number and
    /// the operations an ordinary post can ask for (SEND, RDMA WRITE and
    /// READ, the two atomics, without modifier; else `Unsupported`); one
    /// larger than the queue's WQE size or shorter than its `ds` is
    /// `InvalidArgument`, a full queue `QueueFull`. Nothing is written when
    /// refused.
    #[doc(alias = "mlx5dv_wr_raw_wqe")]
    pub fn post_raw_wqe(&mut self, wqe: &[u8], wr_id: u64) -> core::result::Result<(), PostError> {
        self.inner.ring.post_raw_wqe(wqe, wr_id)
    }
}

impl<T: Transport, S: CanPostRecv> QueuePair<'_, T, S> {
    /// `ibv_post_recv`: queues the receive work requests `wrs` (no system
    /// call). All-or-nothing like [`QueuePair::post_send`]. A QP created
    /// with an SRQ has no receive queue: post to the SRQ instead
    /// (`InvalidArgument`).
    ///
    /// A QP the device moved to ERROR (after an error completion; its type
    /// still says RTS, [`QueuePair::query`] says ERROR) does not complete
    /// receives posted afterwards on rxe, which looks at a receive queue
    /// only when a packet arrives or the QP is moved to ERROR: call
    /// [`QueuePair::into_error`] (legal from ERROR), after which every
    /// receive, posted before or after, completes with `WR_FLUSH_ERR`
    /// (`tests/device/faults_access.rs`). siw flushes its receive queue
    /// only on the transition to ERROR, so on a QP typed ERROR it refuses
    /// receives (`WrongState`, nothing written): they would never complete.
    ///
    /// The method exists only in the states that allow posting receives
    /// (INIT and later).
    #[doc(alias = "ibv_post_recv")]
    #[inline(always)]
    pub fn post_recv(&mut self, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        if S::KIND != QpStateKind::Error {
            // The result as it is: a `?` and a new `Ok(())` would copy it
            // through memory.
            return self.inner.post_recv(wrs);
        }
        self.inner.can_flush_late_recv(wrs)?;
        self.inner.post_recv(wrs)?;
        // Receives posted in ERROR must complete with a flush error; see
        // `flush_recv`. Not on the fast path: only a QP typed as ERROR
        // pays for it.
        self.inner.flush_recv().map_err(|error| PostError { error, index: wrs.len() })
    }
}

impl QpInner<'_> {
    /// Refuses receives posted to a QP in ERROR where they could never
    /// complete: siw flushes its receive queue only on the transition to
    /// ERROR (`siw_rq_flush`), never again (ERROR to ERROR does nothing),
    /// and user space cannot add the flush completions itself (the kernel
    /// owns the CQ's producer side).
    #[cold]
    fn can_flush_late_recv(&self, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        match self.ring.caps().refuses_posts_in_error {
            true if !wrs.is_empty() => Err(PostError::refused(
                "ibv_post_recv",
                crate::wr::Refusal(
                    ErrorKind::WrongState,
                    "siw never completes a receive posted after the QP entered ERROR (it flushes only on the transition)",
                ),
                0,
            )),
            _ => Ok(()),
        }
    }

    /// Refuses sends posted to a QP in ERROR where they could never
    /// complete: siw flushes its send queue only on the transition to
    /// ERROR; its doorbell in ERROR flushes the kernel's own requests, not
    /// the mapped ring's (`siw_post_send`, `siw_sq_flush_wr`).
    #[cold]
    fn can_flush_late_send(&self, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        match self.ring.caps().refuses_posts_in_error {
            true if !wrs.is_empty() => Err(PostError::refused(
                "ibv_post_send",
                crate::wr::Refusal(
                    ErrorKind::WrongState,
                    "siw never completes a send posted after the QP entered ERROR (it flushes only on the transition)",
                ),
                0,
            )),
            _ => Ok(()),
        }
    }

    /// Makes the provider flush receives posted while the QP is in ERROR.
    /// rxe looks at a receive queue only when a packet arrives or the QP
    /// is (re)moved to ERROR, and refuses a zero-WR `POST_RECV`
    /// (`EOPNOTSUPP`), so this re-applies ERROR (ERROR → ERROR is legal).
    fn flush_recv(&self) -> Result<()> {
        let mut cmd = crate::abi::uverbs::ModifyQp::new_zeroed();
        cmd.qp_handle = self.handle;
        cmd.qp_state = QpStateKind::Error as u8;
        cmd.attr_mask = attr::IBV_QP_STATE;
        self.pd.context().channel().exec("ibv_post_recv", &cmd, &[], &mut [])
    }

    // Inlined into the typed `post_send`, so that the transport is a
    // constant and the per-transport checks fold away.
    #[inline(always)]
    fn post_send(&mut self, qp_type: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        self.ring.post_send(self.dev, qp_type, wrs)
    }

    #[inline(always)]
    fn post_recv(&mut self, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        if wrs.is_empty() {
            return Ok(());
        }
        self.ring.post_recv(&self.cap.max_recv_sge, wrs)
    }
}

fn destroy_cmd(ctx: &Context, handle: u32) -> Result<u32> {
    let mut cmd = DestroyQp::new_zeroed();
    cmd.qp_handle = handle;
    ctx.channel()
        .exec("ibv_destroy_qp", &cmd, &[], &mut [])
        .map(|r| r.events_reported)
}

impl Drop for QpInner<'_> {
    fn drop(&mut self) {
        // The rings are a field: unmapped after the destroy below.
        if self.live {
            if let Err(e) = destroy_cmd(self.pd.context(), self.handle) {
                crate::error::report_drop_failure(e);
            }
        }
    }
}
