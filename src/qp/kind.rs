//! The QP type and state as runtime values: plain data below the
//! handles (the providers and the work requests read them).

/// A QP state as a runtime value (`enum ibv_qp_state`).
#[doc(alias = "ibv_qp_state")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpStateKind {
    /// `IBV_QPS_RESET`.
    Reset = 0,
    /// `IBV_QPS_INIT`.
    Init = 1,
    /// `IBV_QPS_RTR`: ready to receive.
    Rtr = 2,
    /// `IBV_QPS_RTS`: ready to send.
    Rts = 3,
    /// `IBV_QPS_SQD`: send queue drained.
    Sqd = 4,
    /// `IBV_QPS_SQE`: send queue error.
    Sqe = 5,
    /// `IBV_QPS_ERR`.
    Error = 6,
}

impl QpStateKind {
    /// Converts the kernel's `qp_state` value.
    pub fn from_raw(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Reset,
            1 => Self::Init,
            2 => Self::Rtr,
            3 => Self::Rts,
            4 => Self::Sqd,
            5 => Self::Sqe,
            6 => Self::Error,
            _ => return None,
        })
    }
}

/// `enum ibv_qp_type` for the QP types this crate creates.
#[doc(alias = "ibv_qp_type")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpType {
    /// `IBV_QPT_RC`: reliable connected.
    Rc = 2,
    /// `IBV_QPT_UC`: unreliable connected.
    Uc = 3,
    /// `IBV_QPT_UD`: unreliable datagram.
    Ud = 4,
    /// `IBV_QPT_XRC_SEND`: the sending side of XRC (`IB_QPT_XRC_INI`).
    XrcSend = 9,
    /// `IBV_QPT_XRC_RECV`: the receiving side of XRC (`IB_QPT_XRC_TGT`),
    /// created in an XRC domain (see [`crate::xrc`]).
    XrcRecv = 10,
}
