//! UD queue pairs through the connection manager (RDMA_PS_UDP): the QP is
//! brought to RTS with the Q_Key and port the kernel computes, then
//! `rdma_connect` / `rdma_accept` exchange QP numbers and Q_Keys (a SIDR
//! exchange on InfiniBand/RoCE). The peer's address arrives in the event
//! ([`Event::ud`](super::Event::ud)) as address-handle attributes.

// Transitions hand the QP back by value on failure, as `qp`'s own do.
#![allow(clippy::result_large_err)]

use zerocopy::FromZeros;

use crate::abi::ucma::{Accept, Connect, RDMA_MAX_PRIVATE_DATA, RDMA_USER_CM_CMD_ACCEPT, RDMA_USER_CM_CMD_CONNECT};
use crate::error::{Error, Result};
use crate::qp::{AnyQp, QpStateKind, QueuePair, Reset, Rts, SqPsnAttr, TransitionError, Ud, UdRtrAttr};

use super::connect::CmTransition;
use super::id::CmId;

fn any<'a, S>(e: TransitionError<QueuePair<'a, Ud, S>>) -> TransitionError<AnyQp<'a, Ud>>
where
    S: crate::qp::QpState,
    AnyQp<'a, Ud>: From<QueuePair<'a, Ud, S>>,
{
    TransitionError { error: e.error, qp: e.qp.into() }
}

/// The Q_Key the kernel gives RDMA_PS_UDP ids (`RDMA_UDP_QKEY`).
pub const RDMA_UDP_QKEY: u32 = 0x0123_4567;

fn conn_param(verb: &'static str, qp_num: u32, qkey: u32, private_data: &[u8]) -> Result<crate::abi::ucma::ConnParam> {
    if private_data.len() > RDMA_MAX_PRIVATE_DATA - 1 {
        return Err(Error::invalid(verb, "private_data is longer than 255 bytes"));
    }
    let mut p = crate::abi::ucma::ConnParam::new_zeroed();
    p.qp_num = qp_num;
    p.qkey = qkey;
    p.private_data[..private_data.len()].copy_from_slice(private_data);
    p.private_data_len = private_data.len() as u8;
    p.valid = 1;
    Ok(p)
}

impl CmId<'_> {
    /// `rdma_create_qp` for UD: RESET → INIT with the kernel's P_Key index,
    /// port and Q_Key, → RTR → RTS (send PSN 0), as librdmacm does.
    #[doc(alias = "rdma_create_qp")]
    /// A failure hands the QP back in the state it reached.
    pub fn init_ud_qp<'a>(&self, qp: QueuePair<'a, Ud, Reset>) -> CmTransition<'a, Ud, Rts> {
        let attr = match self.init_qp_attr(QpStateKind::Init) {
            Ok(attr) => crate::qp::KernelAttr { attr, max_rd_atomic: None, max_dest_rd_atomic: None },
            Err(error) => return Err(TransitionError { error, qp: qp.into() }),
        };
        let qp = qp.modify_kernel::<crate::qp::Init>(&attr).map_err(any)?;
        let qp = qp.into_rtr(UdRtrAttr).map_err(any)?;
        qp.into_rts(SqPsnAttr { sq_psn: 0 }).map_err(any)
    }

    /// `rdma_connect` for a UD id: asks the peer's listener for its QP
    /// number and Q_Key; [`EventKind::Established`](super::EventKind::Established)
    /// follows with them and the address ([`Event::ud`](super::Event::ud)).
    #[doc(alias = "rdma_connect")]
    pub fn connect_ud(&self, qp: &QueuePair<'_, Ud, Rts>, private_data: &[u8]) -> Result<()> {
        const VERB: &str = "rdma_connect";
        let conn_param = conn_param(VERB, qp.qp_num(), RDMA_UDP_QKEY, private_data)?;
        let cmd = Connect { conn_param, id: self.handle(), ..Connect::new_zeroed() };
        self.send(VERB, RDMA_USER_CM_CMD_CONNECT, &cmd)
    }

    /// `rdma_accept` for a UD connection request: answers with `qp`'s number
    /// and the id's Q_Key. The requester's QP number, Q_Key and address are
    /// in the request event ([`Event::ud`](super::Event::ud)).
    #[doc(alias = "rdma_accept")]
    pub fn accept_ud(&self, qp: &QueuePair<'_, Ud, Rts>, private_data: &[u8]) -> Result<()> {
        const VERB: &str = "rdma_accept";
        let conn_param = conn_param(VERB, qp.qp_num(), RDMA_UDP_QKEY, private_data)?;
        let cmd = Accept { uid: self.context(), conn_param, id: self.handle(), ..Accept::new_zeroed() };
        self.send(VERB, RDMA_USER_CM_CMD_ACCEPT, &cmd)
    }
}
