//! The straight send and receive paths for the C library (feature
//! `internals`): `ibv_post_send` of one plain request (and `ibv_post_recv`
//! of one with at most one SGE) reaches the provider's ring from an
//! `ibv_send_wr`'s (`ibv_recv_wr`'s) fields without building a [`SendWr`]
//! that the provider then takes apart again (what it costs: BENCHMARKS.md,
//! the C ABI rows). A request is judged where [`QueuePair::post_send`](super::QueuePair::post_send)
//! judges its straight path, and anything that path would not take is
//! left untouched for the general one.
//!
//! The rings are reached through [`AnyQp::send_straight`] and
//! [`AnyQp::recv_straight`], whose results do not depend on the
//! transport's type: a caller holding QPs of several transports (the C
//! library's) matches once and posts through one copy of the path.
//!
//! [`SendWr`]: crate::wr::SendWr

use rustix::fd::BorrowedFd;

use super::{AnyQp, QpInner, QpType, Transport};
use crate::cmd::channel::RingFailed;
use crate::providers::seam::StraightWr;
use crate::providers::AnyQueues;
use crate::wr::Sge;

/// See [`AnyQp::mlx5_direct`].
#[cfg(feature = "mlx5")]
pub use crate::providers::mlx5::direct::Direct as Mlx5Direct;

/// The send side of a QP that may send now (RTS or SQD), for one
/// request through the straight path.
pub struct SendStraight<'q> {
    qp: &'q mut AnyQueues,
    dev: BorrowedFd<'q>,
    qp_type: QpType,
}

impl SendStraight<'_> {
    /// `ibv_post_send` of one straight request (SEND, RDMA WRITE or READ
    /// with at most one SGE or inline data): `None` if this path does not
    /// take it (nothing written: post it with [`QueuePair::post_send`](super::QueuePair::post_send),
    /// which names any error), else the outcome of the doorbell (a failed
    /// one leaves the request queued, as [`QueuePair::post_send`](super::QueuePair::post_send)'s does;
    /// [`RingFailed::error`] says why).
    #[doc(alias = "ibv_post_send")]
    #[inline(always)]
    pub fn post<W: StraightWr + ?Sized>(self, s: &W) -> Option<Result<(), RingFailed>> {
        self.qp.post_send_straight(self.dev, self.qp_type, s)
    }
}

/// The receive queue of a QP that may take receives now (INIT, RTR,
/// RTS, SQD), for one request through the straight path.
pub struct RecvStraight<'q> {
    qp: &'q mut AnyQueues,
    max_sge: u32,
}

impl RecvStraight<'_> {
    /// `ibv_post_recv` of one request of at most one SGE: `true` if it was
    /// posted, `false` (nothing written: post it with
    /// [`QueuePair::post_recv`](super::QueuePair::post_recv), which names any error) if the queue is
    /// full, takes no SGE, or is not there: the QP uses an SRQ, or its
    /// provider has no straight path).
    #[doc(alias = "ibv_post_recv")]
    #[inline(always)]
    pub fn post(self, wr_id: u64, sge: Option<&Sge>) -> bool {
        self.qp.post_recv_straight(self.max_sge, wr_id, sge)
    }
}

impl QpInner<'_> {
    #[inline(always)]
    fn send_straight(&mut self, qp_type: QpType) -> SendStraight<'_> {
        SendStraight { qp: &mut self.ring, dev: self.dev, qp_type }
    }

    #[inline(always)]
    fn recv_straight(&mut self) -> RecvStraight<'_> {
        RecvStraight { qp: &mut self.ring, max_sge: self.cap.max_recv_sge }
    }
}

impl<T: Transport> AnyQp<'_, T> {
    /// The send side for [`SendStraight::post`], in RTS or SQD (not UD,
    /// whose requests need a destination); `None` otherwise.
    #[doc(hidden)]
    #[inline(always)]
    pub fn send_straight(&mut self) -> Option<SendStraight<'_>> {
        let inner = match self {
            _ if T::QP_TYPE == QpType::Ud => return None,
            AnyQp::Rts(qp) => &mut qp.inner,
            AnyQp::Sqd(qp) => &mut qp.inner,
            _ => return None,
        };
        Some(inner.send_straight(T::QP_TYPE))
    }

    /// [`AnyQp::send_straight`] for a caller that knows the transport
    /// (`qp_type`, which must be `T`'s: the C library's, from its own
    /// state bits), so that callers holding QPs of several transports get
    /// one value from each of their arms.
    #[doc(hidden)]
    #[inline(always)]
    pub fn send_straight_as(&mut self, qp_type: QpType) -> Option<SendStraight<'_>> {
        debug_assert_eq!(qp_type, T::QP_TYPE);
        let inner = match self {
            _ if T::QP_TYPE == QpType::Ud => return None,
            AnyQp::Rts(qp) => &mut qp.inner,
            AnyQp::Sqd(qp) => &mut qp.inner,
            _ => return None,
        };
        Some(inner.send_straight(qp_type))
    }

    /// The mlx5 provider's handle on this QP's slot and doorbell, for
    /// posts that do not go through the QP (the C library's, which keeps
    /// its own record of the state: see [`Mlx5Direct`]); `None` on other
    /// providers. Its memory stays valid after the QP is gone, but the
    /// QP's slot may then be a later QP's: a post through it must be
    /// refused by its `may` once this QP is gone.
    #[cfg(feature = "mlx5")]
    #[doc(hidden)]
    pub fn mlx5_direct(&self) -> Option<Mlx5Direct> {
        let inner = match self {
            AnyQp::Reset(qp) => &qp.inner,
            AnyQp::Init(qp) => &qp.inner,
            AnyQp::Rtr(qp) => &qp.inner,
            AnyQp::Rts(qp) => &qp.inner,
            AnyQp::Sqd(qp) => &qp.inner,
            AnyQp::Error(qp) => &qp.inner,
        };
        #[allow(unreachable_patterns)]
        match &inner.ring {
            AnyQueues::Mlx5(q) => Some(q.direct()),
            _ => None,
        }
    }

    /// The receive queue for [`RecvStraight::post`], in INIT, RTR, RTS or
    /// SQD; `None` otherwise (ERROR has its own flush rules, see
    /// [`QueuePair::post_recv`](super::QueuePair::post_recv)).
    #[doc(hidden)]
    #[inline(always)]
    pub fn recv_straight(&mut self) -> Option<RecvStraight<'_>> {
        let inner = match self {
            AnyQp::Init(qp) => &mut qp.inner,
            AnyQp::Rtr(qp) => &mut qp.inner,
            AnyQp::Rts(qp) => &mut qp.inner,
            AnyQp::Sqd(qp) => &mut qp.inner,
            AnyQp::Reset(_) | AnyQp::Error(_) => return None,
        };
        Some(inner.recv_straight())
    }
}
