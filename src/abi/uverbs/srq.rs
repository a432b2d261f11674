//! Shared receive queues: create (basic and XRC/TM), modify, query, destroy.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use super::{
    write_cmd, CMD_CREATE_SRQ, CMD_CREATE_XSRQ, CMD_DESTROY_SRQ, CMD_MODIFY_SRQ, CMD_QUERY_SRQ,
};

abi_struct! {
    /// `struct ib_uverbs_create_srq` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct CreateSrq {
        /// User address of the [`CreateSrqResp`] buffer.
        pub response: u64,
        /// Value returned in async events for this SRQ.
        pub user_handle: u64,
        /// Handle of the PD.
        pub pd_handle: u32,
        /// Requested depth.
        pub max_wr: u32,
        /// Requested SGEs per WR.
        pub max_sge: u32,
        /// Limit event threshold.
        pub srq_limit: u32,
    }
}
const_assert_eq!(size_of::<CreateSrq>(), 32);
const_assert_eq!(offset_of!(CreateSrq, pd_handle), 16);

abi_struct! {
    /// `struct ib_uverbs_create_xsrq` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct CreateXsrq {
        /// User address of the [`CreateSrqResp`] buffer.
        pub response: u64,
        /// Value returned in async events for this SRQ.
        pub user_handle: u64,
        /// `IB_UVERBS_SRQT_*`.
        pub srq_type: u32,
        /// Handle of the PD.
        pub pd_handle: u32,
        /// Requested depth.
        pub max_wr: u32,
        /// Requested SGEs per WR.
        pub max_sge: u32,
        /// Limit event threshold.
        pub srq_limit: u32,
        /// Tag-matching list size (TM SRQ).
        pub max_num_tags: u32,
        /// Handle of the XRCD (XRC SRQ).
        pub xrcd_handle: u32,
        /// Handle of the CQ (XRC/TM SRQ).
        pub cq_handle: u32,
    }
}
const_assert_eq!(size_of::<CreateXsrq>(), 48);
const_assert_eq!(offset_of!(CreateXsrq, cq_handle), 44);

abi_struct! {
    /// `struct ib_uverbs_create_srq_resp` (`driver_data[]` omitted).
    #[repr(C)]
    pub struct CreateSrqResp {
        /// Handle of the SRQ.
        pub srq_handle: u32,
        /// Actual depth.
        pub max_wr: u32,
        /// Actual SGEs per WR.
        pub max_sge: u32,
        /// SRQ number (XRC).
        pub srqn: u32,
    }
}
const_assert_eq!(size_of::<CreateSrqResp>(), 16);

abi_struct! {
    /// `struct ib_uverbs_modify_srq` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct ModifySrq {
        /// Handle of the SRQ.
        pub srq_handle: u32,
        /// `IBV_SRQ_MAX_WR` / `IBV_SRQ_LIMIT` bits.
        pub attr_mask: u32,
        /// New depth.
        pub max_wr: u32,
        /// New limit threshold.
        pub srq_limit: u32,
    }
}
const_assert_eq!(size_of::<ModifySrq>(), 16);

abi_struct! {
    /// `struct ib_uverbs_query_srq` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct QuerySrq {
        /// User address of the [`QuerySrqResp`] buffer.
        pub response: u64,
        /// Handle of the SRQ.
        pub srq_handle: u32,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<QuerySrq>(), 16);

abi_struct! {
    /// `struct ib_uverbs_query_srq_resp`.
    #[repr(C)]
    pub struct QuerySrqResp {
        /// Depth.
        pub max_wr: u32,
        /// SGEs per WR.
        pub max_sge: u32,
        /// Limit threshold.
        pub srq_limit: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<QuerySrqResp>(), 16);

abi_struct! {
    /// `struct ib_uverbs_destroy_srq`.
    #[repr(C, align(8))]
    pub struct DestroySrq {
        /// User address of the [`DestroySrqResp`] buffer.
        pub response: u64,
        /// Handle of the SRQ.
        pub srq_handle: u32,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<DestroySrq>(), 16);

abi_struct! {
    /// `struct ib_uverbs_destroy_srq_resp`.
    #[repr(C)]
    pub struct DestroySrqResp {
        /// Async events delivered for this SRQ.
        pub events_reported: u32,
    }
}
const_assert_eq!(size_of::<DestroySrqResp>(), 4);

write_cmd! {
    CreateSrq => CMD_CREATE_SRQ, false, CreateSrqResp;
    CreateXsrq => CMD_CREATE_XSRQ, false, CreateSrqResp;
    ModifySrq => CMD_MODIFY_SRQ, false, ();
    QuerySrq => CMD_QUERY_SRQ, false, QuerySrqResp;
    DestroySrq => CMD_DESTROY_SRQ, false, DestroySrqResp;
}
