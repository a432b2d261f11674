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
