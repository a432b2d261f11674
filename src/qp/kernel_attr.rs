//! Transitions whose attributes the kernel computed: the connection
//! manager's `INIT_QP_ATTR` answers with a `struct ib_uverbs_qp_attr` and
//! an attribute mask for the next state (rdma-core's `rdma_init_qp_attr`
//! followed by `ibv_modify_qp`). Crate-internal: [`crate::cm`] drives them.

use crate::abi::uverbs::{AhAttr, ModifyQp, QpAttr, QpDest};

use super::attr::{
    TransitionAttr, IBV_QP_ACCESS_FLAGS, IBV_QP_ALT_PATH, IBV_QP_AV, IBV_QP_CUR_STATE, IBV_QP_DEST_QPN,
    IBV_QP_EN_SQD_ASYNC_NOTIFY, IBV_QP_MAX_DEST_RD_ATOMIC, IBV_QP_MAX_QP_RD_ATOMIC, IBV_QP_MIN_RNR_TIMER,
    IBV_QP_PATH_MIG_STATE, IBV_QP_PATH_MTU, IBV_QP_PKEY_INDEX, IBV_QP_PORT, IBV_QP_QKEY, IBV_QP_RETRY_CNT,
    IBV_QP_RNR_RETRY, IBV_QP_RQ_PSN, IBV_QP_SQ_PSN, IBV_QP_STATE, IBV_QP_TIMEOUT,
};
use super::state::{QpState, Transport};
use super::transition::Transition;
use super::QueuePair;

/// The attributes of one `INIT_QP_ATTR` answer, with the caller's
/// overrides of the RDMA READ depths (`rdma_accept`'s
/// `responder_resources` / `initiator_depth`), applied only where the
/// kernel's mask has the field.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KernelAttr {
    pub(crate) attr: QpAttr,
    pub(crate) max_dest_rd_atomic: Option<u8>,
    pub(crate) max_rd_atomic: Option<u8>,
}

fn dest(a: &AhAttr) -> QpDest {
    QpDest {
        dgid: a.grh.dgid,
        flow_label: a.grh.flow_label,
        dlid: a.dlid,
        reserved: 0,
        sgid_index: a.grh.sgid_index,
        hop_limit: a.grh.hop_limit,
        traffic_class: a.grh.traffic_class,
        sl: a.sl,
        src_path_bits: a.src_path_bits,
        static_rate: a.static_rate,
        is_global: a.is_global,
        port_num: a.port_num,
    }
}

impl TransitionAttr for KernelAttr {
    fn apply(&self, cmd: &mut ModifyQp) -> u32 {
        let a = &self.attr;
        let mask = a.qp_attr_mask & !IBV_QP_STATE & ((1 << 21) - 1);
        let has = |bit: u32| mask & bit != 0;
        // Narrowing casts below: the kernel's u32 fields hold enum values
        // that fit the command's u8 fields (states, MTU, migration state).
        if has(IBV_QP_CUR_STATE) {
            cmd.cur_qp_state = a.cur_qp_state as u8;
        }
        if has(IBV_QP_EN_SQD_ASYNC_NOTIFY) {
            cmd.en_sqd_async_notify = a.en_sqd_async_notify;
        }
        if has(IBV_QP_ACCESS_FLAGS) {
            cmd.qp_access_flags = a.qp_access_flags;
        }
        if has(IBV_QP_PKEY_INDEX) {
            cmd.pkey_index = a.pkey_index;
        }
        if has(IBV_QP_PORT) {
            cmd.port_num = a.port_num;
        }
        if has(IBV_QP_QKEY) {
            cmd.qkey = a.qkey;
        }
        if has(IBV_QP_AV) {
            cmd.dest = dest(&a.ah_attr);
        }
        if has(IBV_QP_PATH_MTU) {
            cmd.path_mtu = a.path_mtu as u8;
        }
        if has(IBV_QP_TIMEOUT) {
            cmd.timeout = a.timeout;
        }
        if has(IBV_QP_RETRY_CNT) {
            cmd.retry_cnt = a.retry_cnt;
        }
        if has(IBV_QP_RNR_RETRY) {
            cmd.rnr_retry = a.rnr_retry;
        }
        if has(IBV_QP_RQ_PSN) {
            cmd.rq_psn = a.rq_psn;
        }
        if has(IBV_QP_MAX_QP_RD_ATOMIC) {
            cmd.max_rd_atomic = self.max_rd_atomic.unwrap_or(a.max_rd_atomic);
        }
        if has(IBV_QP_ALT_PATH) {
            cmd.alt_dest = dest(&a.alt_ah_attr);
            cmd.alt_pkey_index = a.alt_pkey_index;
            cmd.alt_port_num = a.alt_port_num;
            cmd.alt_timeout = a.alt_timeout;
        }
        if has(IBV_QP_MIN_RNR_TIMER) {
            cmd.min_rnr_timer = a.min_rnr_timer;
        }
        if has(IBV_QP_SQ_PSN) {
            cmd.sq_psn = a.sq_psn;
        }
        if has(IBV_QP_MAX_DEST_RD_ATOMIC) {
            cmd.max_dest_rd_atomic = self.max_dest_rd_atomic.unwrap_or(a.max_dest_rd_atomic);
        }
        if has(IBV_QP_PATH_MIG_STATE) {
            cmd.path_mig_state = a.path_mig_state as u8;
        }
        if has(IBV_QP_DEST_QPN) {
            cmd.dest_qp_num = a.dest_qp_num;
        }
        // IB_QP_CAP is never part of a connection manager answer; any
        // other bit is left out rather than sent with a zero value.
        mask & ((1 << 21) - 1) & !(1 << 19)
    }
}

impl<'a, T: Transport, S: QpState> QueuePair<'a, T, S> {
    /// `ibv_modify_qp` to `N` with attributes the kernel computed.
    pub(crate) fn modify_kernel<N: QpState>(self, attr: &KernelAttr) -> Transition<'a, T, S, N> {
        self.modify_to(attr)
    }

    /// The same QP typed in state `N`, without a command: for transitions
    /// the kernel made itself (iWARP: `iw_cm` moves the QP to RTS when the
    /// connection is established). The caller checked the state with
    /// `QUERY_QP`.
    pub(crate) fn assume_state<N: QpState>(self) -> QueuePair<'a, T, N> {
        QueuePair::from_inner(self.inner)
    }
}
