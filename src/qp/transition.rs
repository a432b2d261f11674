//! State transitions (`ibv_modify_qp` with `IBV_QP_STATE`): each consumes
//! the QP and returns it in the new state, or hands it back unchanged with
//! the error (a field out of range is refused before the syscall, see
//! [`TransitionAttr::check`]; otherwise the kernel's).

use zerocopy::FromZeros;

use crate::abi::uverbs::ModifyQp;

use super::attr::{TransitionAttr, IBV_QP_STATE};
use super::state::{Error, Init, QpState, Reset, Rtr, Rts, Sqd, Transport};
use super::{QueuePair, TransitionError};

/// A transition that changes nothing but the state (ERROR, RESET, SQD).
struct StateOnly;

impl TransitionAttr for StateOnly {
    fn apply(&self, _cmd: &mut ModifyQp) -> u32 {
        0
    }
}

/// The result of a transition from state `S` to `N`.
pub type Transition<'a, T, S, N> =
    core::result::Result<QueuePair<'a, T, N>, TransitionError<QueuePair<'a, T, S>>>;

impl<'a, T: Transport, S: QpState> QueuePair<'a, T, S> {
    /// Sends `MODIFY_QP` to state `N` with `attr`'s fields and mask. The
    /// kernel applies all of it or nothing, so on error the QP is still in
    /// `S` and is returned as such.
    pub(super) fn modify_to<N: QpState, A: TransitionAttr>(self, attr: &A) -> Transition<'a, T, S, N> {
        if let Err(error) = attr.check(self.ctx()) {
            return Err(TransitionError { error, qp: self });
        }
        let mut cmd = ModifyQp::new_zeroed();
        cmd.qp_handle = self.inner.handle;
        cmd.qp_state = N::KIND as u8;
        cmd.attr_mask = IBV_QP_STATE | attr.apply(&mut cmd);
        match self
            .ctx()
            .channel()
            .exec("ibv_modify_qp", &cmd, &[], &mut [])
        {
            Ok(()) => {
                if N::KIND == super::state::QpStateKind::Reset {
                    self.discard_completions();
                }
                let mut inner = self.inner;
                inner.ring.state_changed(N::KIND);
                Ok(QueuePair::from_inner(inner))
            }
            Err(error) => Err(TransitionError { error: crate::attr_check::explain_gid_error(error), qp: self }),
        }
    }

    /// `ibv_modify_qp` to ERROR, from any state: outstanding work requests
    /// complete with flush errors.
    #[doc(alias = "ibv_modify_qp")]
    pub fn into_error(self) -> Transition<'a, T, S, Error> {
        self.modify_to(&StateOnly)
    }

    /// The QP went to RESET: its completions still waiting in its CQs are
    /// dropped, as rdma-core's hardware providers do (`mlx5_cq_clean`),
    /// so that a QP brought back up does not hand out the flushed
    /// completions of its earlier life.
    fn discard_completions(&self) {
        let (send, recv) = (self.inner.send_cq, self.inner.recv_cq);
        send.discard_qp(self.inner.qp_num);
        if !core::ptr::eq(send, recv) {
            recv.discard_qp(self.inner.qp_num);
        }
    }

    /// `ibv_modify_qp` to RESET, from any state: the queues are emptied
    /// (the QP's completions still waiting in its CQs are dropped, as
    /// rdma-core's hardware providers do; rxe) and the QP can be brought
    /// up again.
    #[doc(alias = "ibv_modify_qp")]
    pub fn into_reset(self) -> Transition<'a, T, S, Reset> {
        self.modify_to(&StateOnly)
    }
}

impl<'a, T: Transport> QueuePair<'a, T, Reset> {
    /// `ibv_modify_qp` RESET → INIT with the transport's init attributes
    /// ([`ConnInitAttr`](super::ConnInitAttr) for RC/UC,
    /// [`UdInitAttr`](super::UdInitAttr) for UD).
    #[doc(alias = "ibv_modify_qp")]
    pub fn into_init(self, attr: T::InitAttr) -> Transition<'a, T, Reset, Init> {
        self.modify_to(&attr)
    }
}

impl<'a, T: Transport> QueuePair<'a, T, Init> {
    /// `ibv_modify_qp` INIT → RTR ([`RcRtrAttr`](super::RcRtrAttr),
    /// [`UcRtrAttr`](super::UcRtrAttr), or nothing for UD).
    #[doc(alias = "ibv_modify_qp")]
    pub fn into_rtr(self, attr: T::RtrAttr) -> Transition<'a, T, Init, Rtr> {
        self.modify_to(&attr)
    }
}

impl<'a, T: Transport> QueuePair<'a, T, Rtr> {
    /// `ibv_modify_qp` RTR → RTS ([`RcRtsAttr`](super::RcRtsAttr), or
    /// [`SqPsnAttr`](super::SqPsnAttr) for UC/UD).
    #[doc(alias = "ibv_modify_qp")]
    pub fn into_rts(self, attr: T::RtsAttr) -> Transition<'a, T, Rtr, Rts> {
        self.modify_to(&attr)
    }
}

impl<'a, T: Transport> QueuePair<'a, T, Rts> {
    /// `ibv_modify_qp` RTS → SQD: stop processing new send requests
    /// (`sq_draining` reads true until the outstanding ones finished).
    #[doc(alias = "ibv_modify_qp")]
    pub fn into_sqd(self) -> Transition<'a, T, Rts, Sqd> {
        self.modify_to(&StateOnly)
    }
}

impl<'a, T: Transport> QueuePair<'a, T, Sqd> {
    /// `ibv_modify_qp` SQD → RTS: resume sending. Only once the send queue
    /// has drained (`IBV_EVENT_SQ_DRAINED`, or `query().sq_draining` false):
    /// before that the kernel refuses and the QP comes back still in SQD.
    #[doc(alias = "ibv_modify_qp")]
    pub fn resume(self) -> Transition<'a, T, Sqd, Rts> {
        self.modify_to(&StateOnly)
    }
}
