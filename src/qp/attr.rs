//! Attribute structs: one per transition and transport (the fields a
//! transition requires are plain fields, not a mask), the address vector,
//! capacities, and what `ibv_query_qp` returns.
//!
//! The attribute masks sent with each transition are the ones rdma-core's
//! `ibv_rc_pingpong` / `ibv_uc_pingpong` / `ibv_ud_pingpong` use.

use crate::abi::uverbs::{ModifyQp, QpDest, QueryQpResp};
use crate::ah::attr::{AhAttr, GlobalRoute};
use crate::attr_check::{self as check, width};
use crate::context::Context;
use crate::error::{Error, Result};

use super::state::QpStateKind;

/// Defines `enum ibv_qp_attr_mask` bits as `pub const u32`s.
macro_rules! c_consts_local {
    ($($name:ident = $v:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` (`enum ibv_qp_attr_mask`).")]
        pub const $name: u32 = $v;
    )*};
}

c_consts_local! {
    IBV_QP_STATE = 1 << 0;
    IBV_QP_CUR_STATE = 1 << 1;
    IBV_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2;
    IBV_QP_ACCESS_FLAGS = 1 << 3;
    IBV_QP_PKEY_INDEX = 1 << 4;
    IBV_QP_PORT = 1 << 5;
    IBV_QP_QKEY = 1 << 6;
    IBV_QP_AV = 1 << 7;
    IBV_QP_PATH_MTU = 1 << 8;
    IBV_QP_TIMEOUT = 1 << 9;
    IBV_QP_RETRY_CNT = 1 << 10;
    IBV_QP_RNR_RETRY = 1 << 11;
    IBV_QP_RQ_PSN = 1 << 12;
    IBV_QP_MAX_QP_RD_ATOMIC = 1 << 13;
    IBV_QP_ALT_PATH = 1 << 14;
    IBV_QP_MIN_RNR_TIMER = 1 << 15;
    IBV_QP_SQ_PSN = 1 << 16;
    IBV_QP_MAX_DEST_RD_ATOMIC = 1 << 17;
    IBV_QP_PATH_MIG_STATE = 1 << 18;
    IBV_QP_CAP = 1 << 19;
    IBV_QP_DEST_QPN = 1 << 20;
}

/// Every `ibv_qp_attr_mask` bit `ibv_query_qp` can ask for.
pub const IBV_QP_ALL: u32 = (1 << 21) - 1;

pub use crate::query::Mtu;


/// `qp_access_flags`: what the remote side may do — the same
/// `enum ibv_access_flags` as memory regions use (the remote bits matter).
pub type QpAccess = crate::access::AccessFlags;

/// The modify/query form of an address (`struct ib_uverbs_qp_dest`).
pub(crate) fn ah_to_dest(ah: &AhAttr) -> QpDest {
    let g = ah.grh.unwrap_or_default();
    QpDest {
        dgid: g.dgid,
        flow_label: g.flow_label,
        dlid: ah.dlid,
        reserved: 0,
        sgid_index: g.sgid_index,
        hop_limit: g.hop_limit,
        traffic_class: g.traffic_class,
        sl: ah.sl,
        src_path_bits: ah.src_path_bits,
        static_rate: ah.static_rate,
        is_global: u8::from(ah.grh.is_some()),
        port_num: ah.port_num,
    }
}

/// The address in a query reply.
pub(crate) fn ah_from_dest(d: &QpDest) -> AhAttr {
    let grh = (d.is_global != 0).then_some(GlobalRoute {
        dgid: d.dgid,
        flow_label: d.flow_label,
        sgid_index: d.sgid_index,
        hop_limit: d.hop_limit,
        traffic_class: d.traffic_class,
    });
    AhAttr {
        grh,
        dlid: d.dlid,
        sl: d.sl,
        src_path_bits: d.src_path_bits,
        static_rate: d.static_rate,
        port_num: d.port_num,
    }
}

/// Queue capacities (`struct ibv_qp_cap`).
#[doc(alias = "ibv_qp_cap")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCap {
    /// Send work requests.
    pub max_send_wr: u32,
    /// Receive work requests (ignored with an SRQ).
    pub max_recv_wr: u32,
    /// Scatter/gather entries per send request.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive request.
    pub max_recv_sge: u32,
    /// Inline bytes per send request.
    pub max_inline_data: u32,
}

/// `ibv_modify_qp`, the verb a refused attribute names.
const MODIFY: &str = "ibv_modify_qp";

/// Fills the transition-specific part of a `MODIFY_QP` command. Sealed
/// in practice: implemented by this module's attribute structs.
pub trait TransitionAttr {
    /// Writes the fields into `cmd` and returns their `IBV_QP_*` mask
    /// (without `IBV_QP_STATE`, which the transition adds).
    fn apply(&self, cmd: &mut ModifyQp) -> u32;

    /// Checks the fields before the command is sent: a field out of its
    /// range (a PSN or QP number wider than 24 bits, a retry count wider
    /// than 3, a timer wider than 5, a port the device does not have, a
    /// P_Key or sgid index past its table, a RoCE address without a GRH…)
    /// is an `InvalidArgument` error of `ibv_modify_qp` whose
    /// [detail](crate::Error::detail) names the field.
    fn check(&self, ctx: &Context) -> Result<()> {
        let _ = ctx;
        Ok(())
    }
}

/// The port and P_Key index of a RESET → INIT transition.
fn check_port_pkey(ctx: &Context, port_num: u8, pkey_index: u16) -> Result<()> {
    let port = ctx.port_checked(MODIFY, port_num)?;
    check::pkey_index(MODIFY, &port, pkey_index)
}

/// RESET → INIT for RC and UC (`ibv_rc_pingpong`'s mask: state, P_Key
/// index, port, access flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnInitAttr {
    /// P_Key table index.
    pub pkey_index: u16,
    /// Local port (from 1).
    pub port_num: u8,
    /// What the remote side may do.
    pub access: QpAccess,
}

impl Default for ConnInitAttr {
    /// P_Key index 0, port 1, no remote access (`ibv_rc_pingpong`'s
    /// values; add `REMOTE_WRITE` etc. for one-sided operations).
    fn default() -> Self {
        Self { pkey_index: 0, port_num: 1, access: QpAccess::empty() }
    }
}

impl TransitionAttr for ConnInitAttr {
    fn apply(&self, cmd: &mut ModifyQp) -> u32 {
        cmd.pkey_index = self.pkey_index;
        cmd.port_num = self.port_num;
        cmd.qp_access_flags = self.access.bits();
        IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS
    }

    fn check(&self, ctx: &Context) -> Result<()> {
        if crate::access::unknown_access(self.access) {
            return Err(Error::invalid(MODIFY, "qp_access_flags has bits this library does not know"));
        }
        check_port_pkey(ctx, self.port_num, self.pkey_index)
    }
}

/// RESET → INIT for UD (mask: state, P_Key index, port, Q_Key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdInitAttr {
    /// P_Key table index.
    pub pkey_index: u16,
    /// Local port (from 1).
    pub port_num: u8,
    /// Q_Key.
    pub qkey: u32,
}

/// The Q_Key rdma-core's `ibv_ud_pingpong` uses.
pub const DEFAULT_QKEY: u32 = 0x1111_1111;

impl Default for UdInitAttr {
    /// P_Key index 0, port 1, Q_Key [`DEFAULT_QKEY`].
    fn default() -> Self {
        Self { pkey_index: 0, port_num: 1, qkey: DEFAULT_QKEY }
    }
}

impl TransitionAttr for UdInitAttr {
    fn apply(&self, cmd: &mut ModifyQp) -> u32 {
        cmd.pkey_index = self.pkey_index;
        cmd.port_num = self.port_num;
        cmd.qkey = self.qkey;
        IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY
    }

    fn check(&self, ctx: &Context) -> Result<()> {
        check_port_pkey(ctx, self.port_num, self.pkey_index)
    }
}

/// INIT → RTR for RC (mask: state, AV, path MTU, dest QPN, RQ PSN,
/// max dest RD atomic, min RNR timer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcRtrAttr {
    /// Path MTU.
    pub path_mtu: Mtu,
    /// The remote QP number.
    pub dest_qp_num: u32,
    /// Starting receive PSN (24 bits).
    pub rq_psn: u32,
    /// Incoming RDMA reads/atomics outstanding.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer (`IBV_RNR_TIMER_*` code).
    pub min_rnr_timer: u8,
    /// The path to the remote QP.
    pub ah_attr: AhAttr,
}

impl Default for RcRtrAttr {
    /// `ibv_rc_pingpong`'s values: MTU 1024, `max_dest_rd_atomic` 1,
    /// `min_rnr_timer` 12; destination QPN, PSN and address zero (fill in
    /// `dest_qp_num`, `rq_psn` and `ah_attr`, or use
    /// [`connect`](super::QueuePair::connect)).
    fn default() -> Self {
        Self {
            path_mtu: Mtu::Mtu1024,
            dest_qp_num: 0,
            rq_psn: 0,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ah_attr: AhAttr::default(),
        }
    }
}

impl TransitionAttr for RcRtrAttr {
    fn apply(&self, cmd: &mut ModifyQp) -> u32 {
        UcRtrAttr {
            path_mtu: self.path_mtu,
            dest_qp_num: self.dest_qp_num,
            rq_psn: self.rq_psn,
            ah_attr: self.ah_attr,
        }
        .apply(cmd);
        cmd.max_dest_rd_atomic = self.max_dest_rd_atomic;
        cmd.min_rnr_timer = self.min_rnr_timer;
        IBV_QP_AV
            | IBV_QP_PATH_MTU
            | IBV_QP_DEST_QPN
            | IBV_QP_RQ_PSN
            | IBV_QP_MAX_DEST_RD_ATOMIC
            | IBV_QP_MIN_RNR_TIMER
    }

    fn check(&self, ctx: &Context) -> Result<()> {
        check::bits(MODIFY, self.min_rnr_timer.into(), width::TIMER, "min_rnr_timer is wider than 5 bits")?;
        check_rtr(ctx, self.dest_qp_num, self.rq_psn, &self.ah_attr)
    }
}

/// The fields INIT → RTR of RC and UC share.
fn check_rtr(ctx: &Context, dest_qp_num: u32, rq_psn: u32, ah: &AhAttr) -> Result<()> {
    check::bits(MODIFY, dest_qp_num, width::PSN, "dest_qp_num is wider than 24 bits")?;
    check::bits(MODIFY, rq_psn, width::PSN, "rq_psn is wider than 24 bits")?;
    ctx.check_ah(MODIFY, ah)
}

/// INIT → RTR for UC (mask: state, AV, path MTU, dest QPN, RQ PSN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UcRtrAttr {
    /// Path MTU.
    pub path_mtu: Mtu,
    /// The remote QP number.
    pub dest_qp_num: u32,
    /// Starting receive PSN (24 bits).
    pub rq_psn: u32,
    /// The path to the remote QP.
    pub ah_attr: AhAttr,
}

impl Default for UcRtrAttr {
    /// MTU 1024; destination QPN, PSN and address zero.
    fn default() -> Self {
        Self { path_mtu: Mtu::Mtu1024, dest_qp_num: 0, rq_psn: 0, ah_attr: AhAttr::default() }
    }
}

impl TransitionAttr for UcRtrAttr {
    fn apply(&self, cmd: &mut ModifyQp) -> u32 {
        cmd.path_mtu = self.path_mtu as u8;
        cmd.dest_qp_num = self.dest_qp_num;
        cmd.rq_psn = self.rq_psn;
        cmd.dest = ah_to_dest(&self.ah_attr);
        IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN
    }

    fn check(&self, ctx: &Context) -> Result<()> {
        check_rtr(ctx, self.dest_qp_num, self.rq_psn, &self.ah_attr)
    }
}

/// INIT → RTR for UD: nothing but the state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdRtrAttr;

impl TransitionAttr for UdRtrAttr {
    fn apply(&self, _cmd: &mut ModifyQp) -> u32 {
        0
    }
}

/// RTR → RTS for RC (mask: state, timeout, retry count, RNR retry, SQ
/// PSN, max RD atomic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RcRtsAttr {
    /// Starting send PSN (24 bits).
    pub sq_psn: u32,
    /// Local ACK timeout (4.096 µs × 2^timeout; 0 = infinite).
    pub timeout: u8,
    /// Retries on timeout (0–7).
    pub retry_cnt: u8,
    /// Retries on RNR NAK (0–7, 7 = infinite).
    pub rnr_retry: u8,
    /// Outgoing RDMA reads/atomics outstanding.
    pub max_rd_atomic: u8,
}

impl Default for RcRtsAttr {
    /// `ibv_rc_pingpong`'s values: timeout 14 (about 67 ms), 7 retries,
    /// 7 RNR retries (infinite), one outstanding RDMA read/atomic, SQ PSN 0.
    fn default() -> Self {
        Self { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 }
    }
}

impl TransitionAttr for RcRtsAttr {
    fn apply(&self, cmd: &mut ModifyQp) -> u32 {
        cmd.sq_psn = self.sq_psn;
        cmd.timeout = self.timeout;
        cmd.retry_cnt = self.retry_cnt;
        cmd.rnr_retry = self.rnr_retry;
        cmd.max_rd_atomic = self.max_rd_atomic;
        IBV_QP_TIMEOUT
            | IBV_QP_RETRY_CNT
            | IBV_QP_RNR_RETRY
            | IBV_QP_SQ_PSN
            | IBV_QP_MAX_QP_RD_ATOMIC
    }

    fn check(&self, _ctx: &Context) -> Result<()> {
        self.check_fields()
    }
}

impl RcRtsAttr {
    /// The width checks (no device needed).
    fn check_fields(&self) -> Result<()> {
        check::bits(MODIFY, self.sq_psn, width::PSN, "sq_psn is wider than 24 bits")?;
        check::bits(MODIFY, self.timeout.into(), width::TIMER, "timeout is wider than 5 bits")?;
        check::bits(MODIFY, self.retry_cnt.into(), width::RETRY, "retry_cnt is wider than 3 bits")?;
        check::bits(MODIFY, self.rnr_retry.into(), width::RETRY, "rnr_retry is wider than 3 bits")
    }
}

/// RTR → RTS for UC and UD (mask: state, SQ PSN).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SqPsnAttr {
    /// Starting send PSN (24 bits).
    pub sq_psn: u32,
}

impl TransitionAttr for SqPsnAttr {
    fn apply(&self, cmd: &mut ModifyQp) -> u32 {
        cmd.sq_psn = self.sq_psn;
        IBV_QP_SQ_PSN
    }

    fn check(&self, _ctx: &Context) -> Result<()> {
        check::bits(MODIFY, self.sq_psn, width::PSN, "sq_psn is wider than 24 bits")
    }
}

/// What `ibv_query_qp` reports (`struct ibv_qp_attr` plus the
/// `ibv_qp_init_attr` parts the kernel returns: `cap`, `sq_sig_all`).
#[doc(alias = "ibv_qp_attr")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpAttr {
    /// The state the QP is in now.
    pub qp_state: Option<QpStateKind>,
    /// The current state as the kernel reports it in `cur_qp_state`.
    pub cur_qp_state: Option<QpStateKind>,
    /// Path MTU (`None` before RTR).
    pub path_mtu: Option<Mtu>,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Remote QP number.
    pub dest_qp_num: u32,
    /// Remote access rights.
    pub qp_access_flags: QpAccess,
    /// Primary path.
    pub ah_attr: AhAttr,
    /// P_Key index.
    pub pkey_index: u16,
    /// Port number.
    pub port_num: u8,
    /// Outgoing RDMA reads/atomics outstanding.
    pub max_rd_atomic: u8,
    /// Incoming RDMA reads/atomics outstanding.
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer.
    pub min_rnr_timer: u8,
    /// Local ACK timeout.
    pub timeout: u8,
    /// Retry count.
    pub retry_cnt: u8,
    /// RNR retry count.
    pub rnr_retry: u8,
    /// The send queue is draining (SQD).
    pub sq_draining: bool,
    /// Capacities (`ibv_qp_init_attr.cap`).
    pub cap: QpCap,
    /// Every send request is signalled (`ibv_qp_init_attr.sq_sig_all`).
    pub sq_sig_all: bool,
}

impl QpAttr {
    pub(crate) fn from_kernel(r: &QueryQpResp) -> Self {
        Self {
            qp_state: QpStateKind::from_raw(r.qp_state),
            cur_qp_state: QpStateKind::from_raw(r.cur_qp_state),
            path_mtu: Mtu::from_raw(r.path_mtu),
            qkey: r.qkey,
            rq_psn: r.rq_psn,
            sq_psn: r.sq_psn,
            dest_qp_num: r.dest_qp_num,
            qp_access_flags: QpAccess::from_bits_retain(r.qp_access_flags),
            ah_attr: ah_from_dest(&r.dest),
            pkey_index: r.pkey_index,
            port_num: r.port_num,
            max_rd_atomic: r.max_rd_atomic,
            max_dest_rd_atomic: r.max_dest_rd_atomic,
            min_rnr_timer: r.min_rnr_timer,
            timeout: r.timeout,
            retry_cnt: r.retry_cnt,
            rnr_retry: r.rnr_retry,
            sq_draining: r.sq_draining != 0,
            cap: QpCap {
                max_send_wr: r.max_send_wr,
                max_recv_wr: r.max_recv_wr,
                max_send_sge: r.max_send_sge,
                max_recv_sge: r.max_recv_sge,
                max_inline_data: r.max_inline_data,
            },
            sq_sig_all: r.sq_sig_all != 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn rts_fields_are_checked_by_width() {
        let ok = RcRtsAttr { sq_psn: 0xff_ffff, timeout: 31, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 255 };
        ok.check_fields().unwrap();
        for (bad, field) in [
            (RcRtsAttr { sq_psn: 1 << 24, ..ok }, "sq_psn"),
            (RcRtsAttr { timeout: 32, ..ok }, "timeout"),
            (RcRtsAttr { retry_cnt: 8, ..ok }, "retry_cnt"),
            (RcRtsAttr { rnr_retry: 8, ..ok }, "rnr_retry"),
        ] {
            let e = bad.check_fields().unwrap_err();
            assert_eq!((e.verb(), e.kind()), ("ibv_modify_qp", ErrorKind::InvalidArgument));
            assert!(e.detail().unwrap().starts_with(field), "{e}");
        }
    }
}
