//! Address vectors and QP attributes: the GRH/AH structs, the QP
//! destination used by modify/query QP, and `ib_uverbs_qp_attr`.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

abi_struct! {
    /// `struct ib_uverbs_global_route`: the GRH part of an address.
    #[repr(C)]
    pub struct GlobalRoute {
        /// Destination GID.
        pub dgid: [u8; 16],
        /// Flow label.
        pub flow_label: u32,
        /// Source GID index.
        pub sgid_index: u8,
        /// Hop limit.
        pub hop_limit: u8,
        /// Traffic class.
        pub traffic_class: u8,
        /// Reserved.
        pub reserved: u8,
    }
}
const_assert_eq!(size_of::<GlobalRoute>(), 24);
const_assert_eq!(offset_of!(GlobalRoute, flow_label), 16);
const_assert_eq!(offset_of!(GlobalRoute, sgid_index), 20);

abi_struct! {
    /// `struct ib_uverbs_ah_attr`: an address vector.
    #[repr(C)]
    pub struct AhAttr {
        /// Global route (valid if `is_global`).
        pub grh: GlobalRoute,
        /// Destination LID.
        pub dlid: u16,
        /// Service level.
        pub sl: u8,
        /// Source path bits.
        pub src_path_bits: u8,
        /// Static rate.
        pub static_rate: u8,
        /// Nonzero if `grh` is valid.
        pub is_global: u8,
        /// Port number.
        pub port_num: u8,
        /// Reserved.
        pub reserved: u8,
    }
}
const_assert_eq!(size_of::<AhAttr>(), 32);
const_assert_eq!(offset_of!(AhAttr, dlid), 24);
const_assert_eq!(offset_of!(AhAttr, port_num), 30);

abi_struct! {
    /// `struct ib_uverbs_qp_attr`.
    #[repr(C)]
    pub struct QpAttr {
        /// `IB_QP_*` mask of valid attributes.
        pub qp_attr_mask: u32,
        /// QP state.
        pub qp_state: u32,
        /// Current QP state.
        pub cur_qp_state: u32,
        /// Path MTU.
        pub path_mtu: u32,
        /// Path migration state.
        pub path_mig_state: u32,
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
        /// Primary path.
        pub ah_attr: AhAttr,
        /// Alternate path.
        pub alt_ah_attr: AhAttr,
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
        /// P_Key index.
        pub pkey_index: u16,
        /// Alternate P_Key index.
        pub alt_pkey_index: u16,
        /// Ask for an event when SQD drains.
        pub en_sqd_async_notify: u8,
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
        /// Reserved.
        pub reserved: [u8; 5],
    }
}
const_assert_eq!(size_of::<QpAttr>(), 144);
const_assert_eq!(offset_of!(QpAttr, ah_attr), 40);
const_assert_eq!(offset_of!(QpAttr, alt_ah_attr), 72);
const_assert_eq!(offset_of!(QpAttr, max_send_wr), 104);
const_assert_eq!(offset_of!(QpAttr, pkey_index), 124);
const_assert_eq!(offset_of!(QpAttr, reserved), 139);

abi_struct! {
    /// `struct ib_uverbs_qp_dest`: an address as modify/query QP carry it.
    #[repr(C)]
    pub struct QpDest {
        /// Destination GID.
        pub dgid: [u8; 16],
        /// Flow label.
        pub flow_label: u32,
        /// Destination LID.
        pub dlid: u16,
        /// Reserved.
        pub reserved: u16,
        /// Source GID index.
        pub sgid_index: u8,
        /// Hop limit.
        pub hop_limit: u8,
        /// Traffic class.
        pub traffic_class: u8,
        /// Service level.
        pub sl: u8,
        /// Source path bits.
        pub src_path_bits: u8,
        /// Static rate.
        pub static_rate: u8,
        /// Nonzero if the GRH fields are valid.
        pub is_global: u8,
        /// Port number.
        pub port_num: u8,
    }
}
const_assert_eq!(size_of::<QpDest>(), 32);
const_assert_eq!(offset_of!(QpDest, dlid), 20);
const_assert_eq!(offset_of!(QpDest, sgid_index), 24);
const_assert_eq!(offset_of!(QpDest, port_num), 31);
