//! [`AnyQp`]: a queue pair whose state is known only at run time, for
//! code that keeps QPs of different states in one table.

use super::state::{Error, Init, QpStateKind, Reset, Rtr, Rts, Sqd, Transport};
use super::{QpAttr, QueuePair, TransitionError};
use crate::error::Result;

/// A QP of transport `T` in any state. Convert a typed QP with `From`,
/// get it back with the `try_into_*` methods (which hand the `AnyQp` back
/// if the state does not match).
#[derive(Debug)]
pub enum AnyQp<'a, T: Transport> {
    /// In RESET.
    Reset(QueuePair<'a, T, Reset>),
    /// In INIT.
    Init(QueuePair<'a, T, Init>),
    /// In RTR.
    Rtr(QueuePair<'a, T, Rtr>),
    /// In RTS.
    Rts(QueuePair<'a, T, Rts>),
    /// In SQD.
    Sqd(QueuePair<'a, T, Sqd>),
    /// In ERROR.
    Error(QueuePair<'a, T, Error>),
}

macro_rules! each {
    ($self:expr, $qp:ident => $e:expr) => {
        match $self {
            AnyQp::Reset($qp) => $e,
            AnyQp::Init($qp) => $e,
            AnyQp::Rtr($qp) => $e,
            AnyQp::Rts($qp) => $e,
            AnyQp::Sqd($qp) => $e,
            AnyQp::Error($qp) => $e,
        }
    };
}

macro_rules! conversions {
    ($($state:ident, $try_into:ident;)*) => {$(
        impl<'a, T: Transport> From<QueuePair<'a, T, $state>> for AnyQp<'a, T> {
            fn from(qp: QueuePair<'a, T, $state>) -> Self {
                AnyQp::$state(qp)
            }
        }

        impl<'a, T: Transport> AnyQp<'a, T> {
            #[doc = concat!("The typed QP if it is in ", stringify!($state), ", else `Err(self)`.")]
            pub fn $try_into(self) -> core::result::Result<QueuePair<'a, T, $state>, Self> {
                match self {
                    AnyQp::$state(qp) => Ok(qp),
                    other => Err(other),
                }
            }
        }
    )*};
}

conversions! {
    Reset, try_into_reset;
    Init, try_into_init;
    Rtr, try_into_rtr;
    Rts, try_into_rts;
    Sqd, try_into_sqd;
    Error, try_into_error;
}

impl<'a, T: Transport> AnyQp<'a, T> {
    /// The state this QP is in (as last set through this library).
    pub fn state(&self) -> QpStateKind {
        each!(self, qp => qp.state())
    }

    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        each!(self, qp => qp.qp_num())
    }

    /// `ibv_query_qp`.
    #[doc(alias = "ibv_query_qp")]
    pub fn query(&self) -> Result<QpAttr> {
        each!(self, qp => qp.query())
    }

    /// `ibv_query_qp`, then this QP retyped in the state the kernel reports
    /// if the kernel moved it on its own: to RTS (iWARP: the connection
    /// manager moves a connected QP there when the connection is
    /// established, after the RTR/RTS requests librdmacm makes, which the
    /// kernel answers without a state change) or to ERROR (a failed
    /// request, a broken connection). Any other difference leaves the QP
    /// as it was: those states are entered only by `ibv_modify_qp`. A
    /// failed query hands the QP back unchanged.
    #[doc(alias = "ibv_query_qp")]
    pub fn refresh_state(self) -> core::result::Result<Self, TransitionError<Self>> {
        let kernel = match self.query() {
            Ok(a) => a.qp_state,
            Err(error) => return Err(TransitionError { error, qp: self }),
        };
        Ok(match (kernel, self) {
            (Some(QpStateKind::Rts), AnyQp::Init(qp)) => AnyQp::Rts(qp.assume_state()),
            (Some(QpStateKind::Rts), AnyQp::Rtr(qp)) => AnyQp::Rts(qp.assume_state()),
            (Some(QpStateKind::Error), any) => each!(any, qp => AnyQp::Error(qp.assume_state())),
            (_, any) => any,
        })
    }

    /// `ibv_modify_qp` to ERROR from whatever state the QP is in.
    pub fn into_error(self) -> core::result::Result<Self, TransitionError<Self>> {
        each!(self, qp => qp.into_error().map(Self::from).map_err(wrap))
    }

    /// `ibv_modify_qp` to RESET from whatever state the QP is in.
    pub fn into_reset(self) -> core::result::Result<Self, TransitionError<Self>> {
        each!(self, qp => qp.into_reset().map(Self::from).map_err(wrap))
    }

    /// `ibv_destroy_qp` in whatever state the QP is in; on failure the QP
    /// comes back with the error.
    #[doc(alias = "ibv_destroy_qp")]
    pub fn destroy(self) -> core::result::Result<u32, crate::pd::DestroyError<Self>> {
        each!(self, qp => qp.destroy().map_err(|e| crate::pd::DestroyError {
            error: e.error,
            object: Self::from(e.object),
        }))
    }
}

fn wrap<'a, T: Transport, Q: Into<AnyQp<'a, T>>>(
    e: TransitionError<Q>,
) -> TransitionError<AnyQp<'a, T>> {
    TransitionError {
        error: e.error,
        qp: e.qp.into(),
    }
}

/// For the C library (feature `internals`): C's `ibv_modify_qp` names the
/// target state at run time and any attribute mask, and posts without
/// knowing the state; these methods do what the typed API does, with the
/// state checked at run time.
#[cfg(feature = "internals")]
impl<'a, T: Transport> AnyQp<'a, T> {
    /// `ibv_modify_qp` to state `to` with `attr`'s fields and mask (any
    /// pair of states: the kernel refuses the transitions the IB spec
    /// forbids, `EINVAL`, and the QP comes back unchanged).
    #[doc(alias = "ibv_modify_qp")]
    pub fn modify(
        self,
        to: QpStateKind,
        attr: &impl super::TransitionAttr,
    ) -> core::result::Result<Self, TransitionError<Self>> {
        fn go<'a, T: Transport, S: super::QpState, A: super::TransitionAttr>(
            qp: QueuePair<'a, T, S>,
            to: QpStateKind,
            attr: &A,
        ) -> core::result::Result<AnyQp<'a, T>, TransitionError<QueuePair<'a, T, S>>> {
            match to {
                QpStateKind::Reset => qp.modify_to::<Reset, A>(attr).map(AnyQp::from),
                QpStateKind::Init => qp.modify_to::<Init, A>(attr).map(AnyQp::from),
                QpStateKind::Rtr => qp.modify_to::<Rtr, A>(attr).map(AnyQp::from),
                QpStateKind::Rts => qp.modify_to::<Rts, A>(attr).map(AnyQp::from),
                QpStateKind::Sqd => qp.modify_to::<Sqd, A>(attr).map(AnyQp::from),
                QpStateKind::Error => qp.modify_to::<Error, A>(attr).map(AnyQp::from),
                // SQE is entered only by the device.
                QpStateKind::Sqe => Err(TransitionError {
                    error: crate::Error::new("ibv_modify_qp", crate::ErrorKind::InvalidArgument),
                    qp,
                }),
            }
        }
        each!(self, qp => go(qp, to, attr).map_err(wrap))
    }

    /// `ibv_post_send` in RTS, SQD or ERROR (where the requests complete
    /// with `WR_FLUSH_ERR`, see [`QueuePair::post_send`]); in any other
    /// state an `InvalidArgument` error for the first request (what the
    /// kernel answers a doorbell on a QP not ready to send).
    #[doc(alias = "ibv_post_send")]
    #[inline(always)]
    pub fn post_send(&mut self, wrs: &[crate::wr::SendWr<'_>]) -> core::result::Result<(), crate::wr::PostError> {
        match self {
            AnyQp::Rts(qp) => qp.post_send(wrs),
            AnyQp::Sqd(qp) => qp.post_send(wrs),
            AnyQp::Error(qp) => qp.post_send(wrs),
            _ => Err(crate::wr::PostError::new("ibv_post_send", crate::ErrorKind::InvalidArgument, 0)),
        }
    }

    /// [`QueuePair::post_raw_wqe`] in RTS, SQD or ERROR; in any other state
    /// `InvalidArgument`.
    #[doc(alias = "mlx5dv_wr_raw_wqe")]
    pub fn post_raw_wqe(&mut self, wqe: &[u8], wr_id: u64) -> core::result::Result<(), crate::wr::PostError> {
        match self {
            AnyQp::Rts(qp) => qp.post_raw_wqe(wqe, wr_id),
            AnyQp::Sqd(qp) => qp.post_raw_wqe(wqe, wr_id),
            AnyQp::Error(qp) => qp.post_raw_wqe(wqe, wr_id),
            _ => Err(crate::wr::PostError::new("mlx5dv_wr_raw_wqe", crate::ErrorKind::InvalidArgument, 0)),
        }
    }

    /// `ibv_post_recv` in INIT or later; in RESET an `InvalidArgument`
    /// error for the first request.
    #[doc(alias = "ibv_post_recv")]
    #[inline(always)]
    pub fn post_recv(&mut self, wrs: &[crate::wr::RecvWr<'_>]) -> core::result::Result<(), crate::wr::PostError> {
        match self {
            AnyQp::Init(qp) => qp.post_recv(wrs),
            AnyQp::Rtr(qp) => qp.post_recv(wrs),
            AnyQp::Rts(qp) => qp.post_recv(wrs),
            AnyQp::Sqd(qp) => qp.post_recv(wrs),
            AnyQp::Error(qp) => qp.post_recv(wrs),
            AnyQp::Reset(_) => Err(crate::wr::PostError::new("ibv_post_recv", crate::ErrorKind::InvalidArgument, 0)),
        }
    }

    /// The kernel's handle for this QP.
    pub fn handle(&self) -> u32 {
        each!(self, qp => qp.handle())
    }

    /// The value the kernel reports in this QP's async events.
    pub fn user_handle(&self) -> u64 {
        each!(self, qp => qp.user_handle())
    }

    /// The capacities granted at creation.
    pub fn cap(&self) -> super::QpCap {
        each!(self, qp => qp.cap())
    }
}

impl AnyQp<'_, super::Ud> {
    /// `ibv_attach_mcast` on a UD QP whose state is known only at run time
    /// (see [`QueuePair::attach_mcast`]).
    #[doc(alias = "ibv_attach_mcast")]
    pub fn attach_mcast(&self, gid: &[u8; 16], lid: u16) -> Result<()> {
        each!(self, qp => qp.attach_mcast(gid, lid))
    }

    /// `ibv_detach_mcast` on a UD QP whose state is known only at run time
    /// (see [`QueuePair::detach_mcast`]).
    #[doc(alias = "ibv_detach_mcast")]
    pub fn detach_mcast(&self, gid: &[u8; 16], lid: u16) -> Result<()> {
        each!(self, qp => qp.detach_mcast(gid, lid))
    }
}
