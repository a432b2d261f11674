//! Connecting queue pairs through an id: the QP transitions the kernel
//! computes (`INIT_QP_ATTR`) and the `CONNECT`/`ACCEPT` commands, in the
//! order librdmacm uses.
//!
//! * InfiniBand/RoCE: the library moves the QP. Active side:
//!   [`CmId::init_qp`], [`CmId::connect`], then on
//!   [`EventKind::ConnectResponse`] [`CmId::establish`] (INIT again with
//!   the connection's attributes, RTR, RTS, then the ready-to-use
//!   message). Passive side: [`CmId::init_qp`], [`CmId::accept`] (RTR, RTS,
//!   then the reply); [`EventKind::Established`] follows.
//! * iWARP: the kernel's `iw_cm` moves the QP to RTS itself when the
//!   connection is up; the same calls check the QP's state with
//!   `QUERY_QP` and hand it back typed RTS.

// Transitions hand the QP back by value on failure, as `qp`'s own do.
#![allow(clippy::result_large_err)]

use zerocopy::FromZeros;

use crate::abi::ucma::{
    Accept, ConnParam as AbiConnParam, Connect, InitQpAttr, RDMA_MAX_PRIVATE_DATA, RDMA_USER_CM_CMD_ACCEPT,
    RDMA_USER_CM_CMD_CONNECT, RDMA_USER_CM_CMD_INIT_QP_ATTR,
};
use crate::abi::uverbs::QpAttr as AbiQpAttr;
use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::qp::{AnyQp, Init, KernelAttr, QpState, QpStateKind, QueuePair, Reset, Rts, Transition, TransitionError, Transport};

use super::event::{Event, EventKind};
use super::id::CmId;

/// A transition through the connection manager that can fail after the
/// QP already changed state: the QP comes back in the state it is in.
pub type CmTransition<'a, T, N> = core::result::Result<QueuePair<'a, T, N>, TransitionError<AnyQp<'a, T>>>;

/// `struct rdma_conn_param` for [`CmId::connect`] and [`CmId::accept`].
/// The default is what rdma-core's `rping` sends: one outstanding RDMA
/// READ each way, 7 retries, 7 RNR retries, no private data.
#[doc(alias = "rdma_conn_param")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnParam<'p> {
    /// Private data for the peer (at most 56 bytes on an InfiniBand/RoCE
    /// connect, 196 on accept; the kernel refuses more).
    pub private_data: &'p [u8],
    /// Incoming RDMA READs/atomics this side accepts at once (at most the
    /// device's `max_qp_rd_atom`).
    pub responder_resources: u8,
    /// Outgoing RDMA READs/atomics at once (at most `max_qp_init_rd_atom`).
    pub initiator_depth: u8,
    /// Flow control (InfiniBand).
    pub flow_control: u8,
    /// Transport retries (0..=7).
    pub retry_count: u8,
    /// RNR retries (0..=7, 7 = forever).
    pub rnr_retry_count: u8,
    /// The QP receives from an SRQ.
    pub srq: bool,
}

impl Default for ConnParam<'_> {
    fn default() -> Self {
        Self {
            private_data: &[],
            responder_resources: 1,
            initiator_depth: 1,
            flow_control: 1,
            retry_count: 7,
            rnr_retry_count: 7,
            srq: false,
        }
    }
}

impl ConnParam<'_> {
    /// The kernel's form, checked against the device's limits.
    fn kernel_form(self, verb: &'static str, ctx: &Context, qp_num: u32) -> Result<AbiConnParam> {
        if self.private_data.len() > RDMA_MAX_PRIVATE_DATA - 1 {
            return Err(Error::invalid(verb, "private_data is longer than 255 bytes"));
        }
        if self.retry_count > 7 || self.rnr_retry_count > 7 {
            return Err(Error::invalid(verb, "retry_count and rnr_retry_count are 3-bit fields (0..=7)"));
        }
        let dev = ctx.query_device()?;
        if u32::from(self.responder_resources) > dev.ex.base.max_qp_rd_atom {
            return Err(Error::invalid(verb, "responder_resources exceeds the device's max_qp_rd_atom"));
        }
        if u32::from(self.initiator_depth) > dev.ex.base.max_qp_init_rd_atom {
            return Err(Error::invalid(verb, "initiator_depth exceeds the device's max_qp_init_rd_atom"));
        }
        let mut p = AbiConnParam::new_zeroed();
        p.qp_num = qp_num;
        p.private_data[..self.private_data.len()].copy_from_slice(self.private_data);
        p.private_data_len = self.private_data.len() as u8;
        p.srq = u8::from(self.srq);
        p.responder_resources = self.responder_resources;
        p.initiator_depth = self.initiator_depth;
        p.flow_control = self.flow_control;
        p.retry_count = self.retry_count;
        p.rnr_retry_count = self.rnr_retry_count;
        p.valid = 1;
        Ok(p)
    }
}

/// Whether `ctx`'s device speaks iWARP (the kernel moves its QPs).
fn is_iwarp(ctx: &Context) -> bool {
    ctx.provider_caps().iwarp
}

impl<'ch> CmId<'ch> {
    /// `rdma_init_qp_attr`: the attributes and mask the kernel computes
    /// for moving this id's QP to `state`.
    #[doc(alias = "rdma_init_qp_attr")]
    pub(crate) fn init_qp_attr(&self, state: QpStateKind) -> Result<AbiQpAttr> {
        let cmd = InitQpAttr { response: 0, id: self.handle(), qp_state: state as u32 };
        self.channel().file.call(
            "rdma_init_qp_attr",
            RDMA_USER_CM_CMD_INIT_QP_ATTR,
            &cmd,
            core::mem::offset_of!(InitQpAttr, response),
        )
    }

    fn kernel_attr(&self, state: QpStateKind, rd: Option<u8>, dest_rd: Option<u8>) -> Result<KernelAttr> {
        Ok(KernelAttr { attr: self.init_qp_attr(state)?, max_rd_atomic: rd, max_dest_rd_atomic: dest_rd })
    }

    /// RESET → INIT with the attributes the connection manager computes
    /// for this id (port, P_Key index, access; `rdma_create_qp`'s first
    /// step). The id must be bound to a device (address resolved, or a
    /// connection request's id).
    #[doc(alias = "rdma_create_qp")]
    pub fn init_qp<'a, T: Transport>(&self, qp: QueuePair<'a, T, Reset>) -> Transition<'a, T, Reset, Init> {
        match self.kernel_attr(QpStateKind::Init, None, None) {
            Ok(attr) => qp.modify_kernel(&attr),
            Err(error) => Err(TransitionError { error, qp }),
        }
    }

    /// `rdma_connect`: sends the connection request for `qp` (in INIT,
    /// after [`init_qp`](Self::init_qp) and a resolved route). Then wait
    /// for [`EventKind::ConnectResponse`] (InfiniBand/RoCE) or
    /// [`EventKind::Established`] (iWARP) and call
    /// [`establish`](Self::establish); or
    /// [`Rejected`](EventKind::Rejected)/[`Unreachable`](EventKind::Unreachable)/[`ConnectError`](EventKind::ConnectError).
    #[doc(alias = "rdma_connect")]
    pub fn connect<T: Transport>(&self, qp: &QueuePair<'_, T, Init>, param: &ConnParam<'_>) -> Result<()> {
        const VERB: &str = "rdma_connect";
        let conn_param = param.kernel_form(VERB, qp.pd().context(), qp.qp_num())?;
        let cmd = Connect { conn_param, id: self.handle(), ..Connect::new_zeroed() };
        self.send(VERB, RDMA_USER_CM_CMD_CONNECT, &cmd)
    }

    /// Finishes an active connection when `event` (of this id) is
    /// [`EventKind::ConnectResponse`]: on InfiniBand/RoCE the QP goes
    /// INIT → RTR → RTS with the connection's attributes, then the
    /// ready-to-use message is sent (the peer sees
    /// [`EventKind::Established`]); on iWARP (`event` is
    /// [`EventKind::Established`]) the kernel already moved the QP to RTS.
    pub fn establish<'a, T: Transport>(&self, qp: QueuePair<'a, T, Init>, event: &Event<'_>) -> CmTransition<'a, T, Rts> {
        const VERB: &str = "rdma_connect";
        if !event.is_for(self) {
            return Err(fail(Error::invalid(VERB, "the event is about another id"), qp));
        }
        if is_iwarp(qp.pd().context()) {
            if event.kind() != EventKind::Established {
                return Err(fail(Error::invalid(VERB, "iWARP: establish needs the RDMA_CM_EVENT_ESTABLISHED event"), qp));
            }
            return kernel_moved_to_rts(VERB, qp);
        }
        if event.kind() != EventKind::ConnectResponse {
            return Err(fail(Error::invalid(VERB, "establish needs the RDMA_CM_EVENT_CONNECT_RESPONSE event"), qp));
        }
        let p = event.param();
        let qp = self.to_rts(VERB, qp, Some(p.initiator_depth.max(1)), Some(p.responder_resources.max(1)))?;
        // The ready-to-use message (librdmacm: an ACCEPT without parameters).
        let cmd = Accept { uid: self.context(), id: self.handle(), ..Accept::new_zeroed() };
        match self.send(VERB, RDMA_USER_CM_CMD_ACCEPT, &cmd) {
            Ok(()) => Ok(qp),
            Err(error) => Err(fail_any(error, qp.into())),
        }
    }

    /// `rdma_accept`: accepts the connection request this id came from
    /// with `qp` (in INIT, after [`init_qp`](Self::init_qp)). On
    /// InfiniBand/RoCE the QP goes RTR → RTS first; on iWARP the kernel
    /// moves it. [`EventKind::Established`] follows when the peer
    /// confirms.
    #[doc(alias = "rdma_accept")]
    pub fn accept<'a, T: Transport>(&self, qp: QueuePair<'a, T, Init>, param: &ConnParam<'_>) -> CmTransition<'a, T, Rts> {
        const VERB: &str = "rdma_accept";
        let conn_param = match param.kernel_form(VERB, qp.pd().context(), qp.qp_num()) {
            Ok(p) => p,
            Err(error) => return Err(fail(error, qp)),
        };
        let cmd = Accept { uid: self.context(), conn_param, id: self.handle(), ..Accept::new_zeroed() };
        if is_iwarp(qp.pd().context()) {
            if let Err(error) = self.send(VERB, RDMA_USER_CM_CMD_ACCEPT, &cmd) {
                return Err(fail(error, qp));
            }
            return kernel_moved_to_rts(VERB, qp);
        }
        let qp = self.to_rts(VERB, qp, Some(param.initiator_depth), Some(param.responder_resources))?;
        match self.send(VERB, RDMA_USER_CM_CMD_ACCEPT, &cmd) {
            Ok(()) => Ok(qp),
            Err(error) => Err(fail_any(error, qp.into())),
        }
    }

    /// INIT (again, now with the connection's access rights) → RTR → RTS,
    /// each with the kernel's attributes (librdmacm's
    /// `ucma_modify_qp_rtr` / `ucma_modify_qp_rts`).
    fn to_rts<'a, T: Transport>(
        &self,
        verb: &'static str,
        qp: QueuePair<'a, T, Init>,
        init_depth: Option<u8>,
        resp_res: Option<u8>,
    ) -> CmTransition<'a, T, Rts> {
        let attr = |s| self.kernel_attr(s, init_depth, resp_res).map_err(|e| named(verb, e));
        let init = match attr(QpStateKind::Init) {
            Ok(a) => a,
            Err(error) => return Err(fail(error, qp)),
        };
        let qp = qp.modify_kernel::<Init>(&init).map_err(|e| fail(e.error, e.qp))?;
        let rtr = match attr(QpStateKind::Rtr) {
            Ok(a) => a,
            Err(error) => return Err(fail(error, qp)),
        };
        let qp = qp.modify_kernel::<crate::qp::Rtr>(&rtr).map_err(|e| fail(e.error, e.qp))?;
        let rts = match attr(QpStateKind::Rts) {
            Ok(a) => a,
            Err(error) => return Err(fail_any(error, qp.into())),
        };
        qp.modify_kernel::<Rts>(&rts).map_err(|e| fail_any(e.error, e.qp.into()))
    }
}

/// The kernel error of a step inside `verb`, with the step named.
fn named(verb: &'static str, e: Error) -> Error {
    match e.errno() {
        Some(errno) => Error::with_errno(verb, e.kind(), errno).with_detail("rdma_init_qp_attr failed"),
        None => e,
    }
}

fn fail<'a, T: Transport, S: QpState>(error: Error, qp: QueuePair<'a, T, S>) -> TransitionError<AnyQp<'a, T>>
where
    AnyQp<'a, T>: From<QueuePair<'a, T, S>>,
{
    TransitionError { error, qp: qp.into() }
}

fn fail_any<'a, T: Transport>(error: Error, qp: AnyQp<'a, T>) -> TransitionError<AnyQp<'a, T>> {
    TransitionError { error, qp }
}

/// iWARP: the kernel moved the QP; check with `QUERY_QP` and retype it.
fn kernel_moved_to_rts<'a, T: Transport>(verb: &'static str, qp: QueuePair<'a, T, Init>) -> CmTransition<'a, T, Rts> {
    match qp.query() {
        Ok(a) if a.qp_state == Some(QpStateKind::Rts) => Ok(qp.assume_state::<Rts>()),
        Ok(_) => Err(fail(
            Error::new(verb, ErrorKind::WrongState).with_detail("iWARP: the kernel did not move the QP to RTS"),
            qp,
        )),
        Err(error) => Err(fail(error, qp)),
    }
}
