//! Queue pairs: create (legacy and extended), open, query, modify,
//! destroy.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use super::{
    write_cmd, QpDest, CMD_CREATE_QP, CMD_DESTROY_QP, CMD_MODIFY_QP, CMD_OPEN_QP, CMD_QUERY_QP,
    EX_CMD_CREATE_QP, EX_CMD_MODIFY_QP,
};

c_consts! {
    /// `enum ib_uverbs_create_qp_mask` and `IB_UVERBS_CREATE_QP_SUP_COMP_MASK`.
    CREATE_QP_MASK_IDS: u32, prefix "IB_UVERBS_";
    /// `rwq_ind_tbl_handle` is valid.
    CREATE_QP_MASK_IND_TABLE = 1 << 0;
    /// All `comp_mask` bits the kernel supports.
    CREATE_QP_SUP_COMP_MASK = CREATE_QP_MASK_IND_TABLE;
}

abi_struct! {
    /// `struct ib_uverbs_create_qp` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct CreateQp {
        /// User address of the [`CreateQpResp`] buffer.
        pub response: u64,
        /// Value returned in async events for this QP.
        pub user_handle: u64,
        /// Handle of the PD.
        pub pd_handle: u32,
        /// Handle of the send CQ.
        pub send_cq_handle: u32,
        /// Handle of the receive CQ.
        pub recv_cq_handle: u32,
        /// Handle of the SRQ (if `is_srq`).
        pub srq_handle: u32,
        /// Send queue depth.
        pub max_send_wr: u32,
        /// Receive queue depth.
        pub max_recv_wr: u32,
        /// SGEs per send WR.
        pub max_send_sge: u32,
        /// SGEs per receive WR.
        pub max_recv_sge: u32,
        /// Inline bytes per send WR.
        pub max_inline_data: u32,
        /// Signal every send WR.
        pub sq_sig_all: u8,
        /// `IB_UVERBS_QPT_*`.
        pub qp_type: u8,
        /// Nonzero if `srq_handle` is valid.
        pub is_srq: u8,
        /// Reserved, must be zero.
        pub reserved: u8,
    }
}
const_assert_eq!(size_of::<CreateQp>(), 56);
const_assert_eq!(offset_of!(CreateQp, pd_handle), 16);
const_assert_eq!(offset_of!(CreateQp, sq_sig_all), 52);

abi_struct! {
    /// `struct ib_uverbs_ex_create_qp`.
    #[repr(C, align(8))]
    pub struct ExCreateQp {
        /// Value returned in async events for this QP.
        pub user_handle: u64,
        /// Handle of the PD.
        pub pd_handle: u32,
        /// Handle of the send CQ.
        pub send_cq_handle: u32,
        /// Handle of the receive CQ.
        pub recv_cq_handle: u32,
        /// Handle of the SRQ (if `is_srq`).
        pub srq_handle: u32,
        /// Send queue depth.
        pub max_send_wr: u32,
        /// Receive queue depth.
        pub max_recv_wr: u32,
        /// SGEs per send WR.
        pub max_send_sge: u32,
        /// SGEs per receive WR.
        pub max_recv_sge: u32,
        /// Inline bytes per send WR.
        pub max_inline_data: u32,
        /// Signal every send WR.
        pub sq_sig_all: u8,
        /// `IB_UVERBS_QPT_*`.
        pub qp_type: u8,
        /// Nonzero if `srq_handle` is valid.
        pub is_srq: u8,
        /// Reserved, must be zero.
        pub reserved: u8,
        /// `CREATE_QP_MASK_*` bits.
        pub comp_mask: u32,
        /// `IB_UVERBS_QP_CREATE_*` bits.
        pub create_flags: u32,
        /// RWQ indirection table (if `CREATE_QP_MASK_IND_TABLE`).
        pub rwq_ind_tbl_handle: u32,
        /// Source QPN (`IB_QP_CREATE_SOURCE_QPN`).
        pub source_qpn: u32,
    }
}
const_assert_eq!(size_of::<ExCreateQp>(), 64);

impl ExCreateQp {
    /// The extended command of the base `cmd` with `create_flags` (what
    /// libibverbs' `ibv_cmd_create_qp_ex2` sends): the fields the two share,
    /// copied in one place so that [`base`](Self::base) stays its inverse.
    pub fn from_base(cmd: &CreateQp, create_flags: u32) -> Self {
        let mut x = <Self as zerocopy::FromZeros>::new_zeroed();
        x.user_handle = cmd.user_handle;
        x.pd_handle = cmd.pd_handle;
        x.send_cq_handle = cmd.send_cq_handle;
        x.recv_cq_handle = cmd.recv_cq_handle;
        x.srq_handle = cmd.srq_handle;
        x.max_send_wr = cmd.max_send_wr;
        x.max_recv_wr = cmd.max_recv_wr;
        x.max_send_sge = cmd.max_send_sge;
        x.max_recv_sge = cmd.max_recv_sge;
        x.max_inline_data = cmd.max_inline_data;
        x.sq_sig_all = cmd.sq_sig_all;
        x.qp_type = cmd.qp_type;
        x.is_srq = cmd.is_srq;
        x.create_flags = create_flags;
        x
    }

    /// The base `CREATE_QP` fields of this command (without the flags).
    pub fn base(&self) -> CreateQp {
        let mut c = <CreateQp as zerocopy::FromZeros>::new_zeroed();
        c.user_handle = self.user_handle;
        c.pd_handle = self.pd_handle;
        c.send_cq_handle = self.send_cq_handle;
        c.recv_cq_handle = self.recv_cq_handle;
        c.srq_handle = self.srq_handle;
        c.max_send_wr = self.max_send_wr;
        c.max_recv_wr = self.max_recv_wr;
        c.max_send_sge = self.max_send_sge;
        c.max_recv_sge = self.max_recv_sge;
        c.max_inline_data = self.max_inline_data;
        c.sq_sig_all = self.sq_sig_all;
        c.qp_type = self.qp_type;
        c.is_srq = self.is_srq;
        c
    }
}
const_assert_eq!(offset_of!(ExCreateQp, sq_sig_all), 44);
const_assert_eq!(offset_of!(ExCreateQp, comp_mask), 48);
const_assert_eq!(offset_of!(ExCreateQp, source_qpn), 60);

abi_struct! {
    /// `struct ib_uverbs_open_qp` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct OpenQp {
        /// User address of the [`CreateQpResp`] buffer.
        pub response: u64,
        /// Value returned in async events for this QP.
        pub user_handle: u64,
        /// Handle of the XRCD (the field is named `pd_handle` in C).
        pub pd_handle: u32,
        /// QP number to open.
        pub qpn: u32,
        /// `IB_UVERBS_QPT_*`.
        pub qp_type: u8,
        /// Reserved, must be zero.
        pub reserved: [u8; 7],
    }
}
const_assert_eq!(size_of::<OpenQp>(), 32);
const_assert_eq!(offset_of!(OpenQp, qp_type), 24);

abi_struct! {
    /// `struct ib_uverbs_create_qp_resp` (`driver_data[0]` omitted); also
    /// the response of [`OpenQp`].
    #[repr(C)]
    pub struct CreateQpResp {
        /// Handle of the QP.
        pub qp_handle: u32,
        /// QP number.
        pub qpn: u32,
        /// Actual send queue depth.
        pub max_send_wr: u32,
        /// Actual receive queue depth.
        pub max_recv_wr: u32,
        /// Actual SGEs per send WR.
        pub max_send_sge: u32,
        /// Actual SGEs per receive WR.
        pub max_recv_sge: u32,
        /// Actual inline bytes per send WR.
        pub max_inline_data: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<CreateQpResp>(), 32);

abi_struct! {
    /// `struct ib_uverbs_ex_create_qp_resp`.
    #[repr(C)]
    pub struct ExCreateQpResp {
        /// The legacy response.
        pub base: CreateQpResp,
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// Number of bytes of this struct the kernel wrote.
        pub response_length: u32,
    }
}
const_assert_eq!(size_of::<ExCreateQpResp>(), 40);

abi_struct! {
    /// `struct ib_uverbs_query_qp` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct QueryQp {
        /// User address of the [`QueryQpResp`] buffer.
        pub response: u64,
        /// Handle of the QP.
        pub qp_handle: u32,
        /// `IB_QP_*` mask of attributes wanted.
        pub attr_mask: u32,
    }
}
const_assert_eq!(size_of::<QueryQp>(), 16);

abi_struct! {
    /// `struct ib_uverbs_query_qp_resp` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct QueryQpResp {
        /// Primary path.
        pub dest: QpDest,
        /// Alternate path.
        pub alt_dest: QpDest,
        /// Send queue depth.
        pub max_send_wr: u32,
        /// Receive queue depth.
        pub max_recv_wr: u32,
        /// SGEs per send WR.
        pub max_send_sge: u32,
        /// SGEs per receive WR.
        pub max_recv_sge: u32,
        /// Inline bytes per send WR.
        pub max_inline_data: u32,
        /// Q_Key.
        pub qkey: u32,
        /// Receive PSN.
        pub rq_psn: u32,
        /// Send PSN.
        pub sq_psn: u32,
        /// Destination QP number.
        pub dest_qp_num: u32,
        /// Remote access bits.
        pub qp_access_flags: u32,
        /// P_Key index.
        pub pkey_index: u16,
        /// Alternate P_Key index.
        pub alt_pkey_index: u16,
        /// QP state.
        pub qp_state: u8,
        /// Current QP state.
        pub cur_qp_state: u8,
        /// Path MTU.
        pub path_mtu: u8,
        /// Path migration state.
        pub path_mig_state: u8,
        /// SQ is draining.
        pub sq_draining: u8,
        /// Outstanding RDMA reads/atomics as initiator.
        pub max_rd_atomic: u8,
        /// Outstanding RDMA reads/atomics as target.
        pub max_dest_rd_atomic: u8,
        /// Minimum RNR NAK timer.
        pub min_rnr_timer: u8,
        /// Port number.
        pub port_num: u8,
        /// Local ack timeout.
        pub timeout: u8,
        /// Retry count.
        pub retry_cnt: u8,
        /// RNR retry count.
        pub rnr_retry: u8,
        /// Alternate port number.
        pub alt_port_num: u8,
        /// Alternate local ack timeout.
        pub alt_timeout: u8,
        /// Signal every send WR.
        pub sq_sig_all: u8,
        /// Reserved.
        pub reserved: [u8; 5],
    }
}
const_assert_eq!(size_of::<QueryQpResp>(), 128);
const_assert_eq!(offset_of!(QueryQpResp, max_send_wr), 64);
const_assert_eq!(offset_of!(QueryQpResp, pkey_index), 104);
const_assert_eq!(offset_of!(QueryQpResp, qp_state), 108);
const_assert_eq!(offset_of!(QueryQpResp, reserved), 123);

abi_struct! {
    /// `struct ib_uverbs_modify_qp` (`driver_data[0]` omitted).
    #[repr(C, align(8))]
    pub struct ModifyQp {
        /// Primary path.
        pub dest: QpDest,
        /// Alternate path.
        pub alt_dest: QpDest,
        /// Handle of the QP.
        pub qp_handle: u32,
        /// `IB_QP_*` mask of attributes to change.
        pub attr_mask: u32,
        /// Q_Key.
        pub qkey: u32,
        /// Receive PSN.
        pub rq_psn: u32,
        /// Send PSN.
        pub sq_psn: u32,
        /// Destination QP number.
        pub dest_qp_num: u32,
        /// Remote access bits.
        pub qp_access_flags: u32,
        /// P_Key index.
        pub pkey_index: u16,
        /// Alternate P_Key index.
        pub alt_pkey_index: u16,
        /// New QP state.
        pub qp_state: u8,
        /// Current QP state (if `IB_QP_CUR_STATE`).
        pub cur_qp_state: u8,
        /// Path MTU.
        pub path_mtu: u8,
        /// Path migration state.
        pub path_mig_state: u8,
        /// Ask for an event when SQD drains.
        pub en_sqd_async_notify: u8,
        /// Outstanding RDMA reads/atomics as initiator.
        pub max_rd_atomic: u8,
        /// Outstanding RDMA reads/atomics as target.
        pub max_dest_rd_atomic: u8,
        /// Minimum RNR NAK timer.
        pub min_rnr_timer: u8,
        /// Port number.
        pub port_num: u8,
        /// Local ack timeout.
        pub timeout: u8,
        /// Retry count.
        pub retry_cnt: u8,
        /// RNR retry count.
        pub rnr_retry: u8,
        /// Alternate port number.
        pub alt_port_num: u8,
        /// Alternate local ack timeout.
        pub alt_timeout: u8,
        /// Reserved, must be zero.
        pub reserved: [u8; 2],
    }
}
const_assert_eq!(size_of::<ModifyQp>(), 112);
const_assert_eq!(offset_of!(ModifyQp, qp_handle), 64);
const_assert_eq!(offset_of!(ModifyQp, pkey_index), 92);
const_assert_eq!(offset_of!(ModifyQp, qp_state), 96);
const_assert_eq!(offset_of!(ModifyQp, reserved), 110);

abi_struct! {
    /// `struct ib_uverbs_ex_modify_qp`.
    #[repr(C, align(8))]
    pub struct ExModifyQp {
        /// The legacy command.
        pub base: ModifyQp,
        /// Rate limit, kbps (`IB_QP_RATE_LIMIT`).
        pub rate_limit: u32,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<ExModifyQp>(), 120);

abi_struct! {
    /// `struct ib_uverbs_ex_modify_qp_resp`.
    #[repr(C)]
    pub struct ExModifyQpResp {
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// Number of bytes of this struct the kernel wrote.
        pub response_length: u32,
    }
}
const_assert_eq!(size_of::<ExModifyQpResp>(), 8);

abi_struct! {
    /// `struct ib_uverbs_destroy_qp`.
    #[repr(C, align(8))]
    pub struct DestroyQp {
        /// User address of the [`DestroyQpResp`] buffer.
        pub response: u64,
        /// Handle of the QP.
        pub qp_handle: u32,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<DestroyQp>(), 16);

abi_struct! {
    /// `struct ib_uverbs_destroy_qp_resp`.
    #[repr(C)]
    pub struct DestroyQpResp {
        /// Async events delivered for this QP.
        pub events_reported: u32,
    }
}
const_assert_eq!(size_of::<DestroyQpResp>(), 4);

write_cmd! {
    CreateQp => CMD_CREATE_QP, false, CreateQpResp;
    ExCreateQp => EX_CMD_CREATE_QP, true, ExCreateQpResp;
    OpenQp => CMD_OPEN_QP, false, CreateQpResp;
    QueryQp => CMD_QUERY_QP, false, QueryQpResp;
    ModifyQp => CMD_MODIFY_QP, false, ();
    ExModifyQp => EX_CMD_MODIFY_QP, true, ExModifyQpResp;
    DestroyQp => CMD_DESTROY_QP, false, DestroyQpResp;
}
