//! The QP states as types (for [`QueuePair`](super::QueuePair)'s
//! typestate) and as a runtime value ([`QpStateKind`]), the QP transport
//! types ([`Rc`], [`Uc`], [`Ud`]), and the capability markers that decide
//! where posting work requests is allowed.
//!
//! Typestate documents and enforces the *legal call sequence*; it is not a
//! soundness argument: the device may move a QP to the error state at any
//! time, after which its work requests complete with flush errors.

use super::attr::{
    ConnInitAttr, RcRtrAttr, RcRtsAttr, SqPsnAttr, TransitionAttr, UcRtrAttr, UdInitAttr, UdRtrAttr,
};

pub use super::kind::{QpStateKind, QpType};

mod sealed {
    pub trait Sealed {}
}



/// A QP state at the type level. Sealed: only the six states below.
pub trait QpState: sealed::Sealed {
    /// The runtime value of this state.
    const KIND: QpStateKind;
}

/// States in which `ibv_post_send` is allowed: RTS; SQD, where the posted
/// requests wait until the QP is back in RTS; and ERROR, where the IB spec
/// (a QP in the Error state completes every work request with a flush
/// error) and rdma-core + rxe accept them, each completing with
/// `IBV_WC_WR_FLUSH_ERR` (siw cannot, see
/// [`QueuePair::post_send`](super::QueuePair::post_send)).
pub trait CanPostSend: QpState {}

/// States in which `ibv_post_recv` is allowed (every state from INIT on;
/// receives posted in ERROR complete with a flush error).
pub trait CanPostRecv: QpState {}

macro_rules! states {
    ($($(#[$m:meta])* $name:ident = $kind:ident;)*) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name;
        impl sealed::Sealed for $name {}
        impl QpState for $name {
            const KIND: QpStateKind = QpStateKind::$kind;
        }
    )*};
}

states! {
    /// `IBV_QPS_RESET`: just created or reset; nothing can be posted.
    Reset = Reset;
    /// `IBV_QPS_INIT`: receives can be posted, nothing is processed.
    Init = Init;
    /// `IBV_QPS_RTR`: ready to receive.
    Rtr = Rtr;
    /// `IBV_QPS_RTS`: ready to send.
    Rts = Rts;
    /// `IBV_QPS_SQD`: send queue drained.
    Sqd = Sqd;
    /// `IBV_QPS_ERR`: in error; outstanding work completes flushed.
    Error = Error;
}

impl CanPostSend for Rts {}
impl CanPostSend for Sqd {}
impl CanPostSend for Error {}
impl CanPostRecv for Init {}
impl CanPostRecv for Rtr {}
impl CanPostRecv for Rts {}
impl CanPostRecv for Sqd {}
impl CanPostRecv for Error {}



/// A QP transport type at the type level: which attribute struct each
/// transition takes. Sealed: [`Rc`], [`Uc`], [`Ud`].
pub trait Transport: sealed::Sealed {
    /// The runtime value.
    const QP_TYPE: QpType;
    /// What RESET → INIT needs.
    type InitAttr: TransitionAttr;
    /// What INIT → RTR needs.
    type RtrAttr: TransitionAttr;
    /// What RTR → RTS needs.
    type RtsAttr: TransitionAttr;
}

/// Reliable connected (`IBV_QPT_RC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rc;
/// Unreliable connected (`IBV_QPT_UC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uc;
/// Unreliable datagram (`IBV_QPT_UD`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ud;
/// XRC sending side (`IBV_QPT_XRC_SEND`): connected like RC, sends to
/// XRC SRQs of the remote XRC domain; has no receive queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XrcSend;

impl sealed::Sealed for Rc {}
impl sealed::Sealed for Uc {}
impl sealed::Sealed for Ud {}
impl sealed::Sealed for XrcSend {}

impl Transport for Rc {
    const QP_TYPE: QpType = QpType::Rc;
    type InitAttr = ConnInitAttr;
    type RtrAttr = RcRtrAttr;
    type RtsAttr = RcRtsAttr;
}

impl Transport for Uc {
    const QP_TYPE: QpType = QpType::Uc;
    type InitAttr = ConnInitAttr;
    type RtrAttr = UcRtrAttr;
    type RtsAttr = SqPsnAttr;
}

impl Transport for Ud {
    const QP_TYPE: QpType = QpType::Ud;
    type InitAttr = UdInitAttr;
    type RtrAttr = UdRtrAttr;
    type RtsAttr = SqPsnAttr;
}

impl Transport for XrcSend {
    const QP_TYPE: QpType = QpType::XrcSend;
    type InitAttr = ConnInitAttr;
    type RtrAttr = RcRtrAttr;
    type RtsAttr = RcRtsAttr;
}
