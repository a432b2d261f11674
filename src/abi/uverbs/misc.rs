//! Address handles, multicast attach/detach, work queues and RWQ
//! indirection tables, and the device capability bit enums.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use super::{
    write_cmd, AhAttr, CMD_ATTACH_MCAST, CMD_CREATE_AH, CMD_DESTROY_AH, CMD_DETACH_MCAST,
    EX_CMD_CREATE_RWQ_IND_TBL, EX_CMD_CREATE_WQ, EX_CMD_DESTROY_RWQ_IND_TBL, EX_CMD_DESTROY_WQ,
    EX_CMD_MODIFY_WQ,
};

c_consts! {
    /// `enum ib_uverbs_device_cap_flags` (`device_cap_flags_ex`).
    DEVICE_CAP_IDS: u64, prefix "IB_UVERBS_";
    DEVICE_RESIZE_MAX_WR = 1 << 0;
    DEVICE_BAD_PKEY_CNTR = 1 << 1;
    DEVICE_BAD_QKEY_CNTR = 1 << 2;
    DEVICE_RAW_MULTI = 1 << 3;
    DEVICE_AUTO_PATH_MIG = 1 << 4;
    DEVICE_CHANGE_PHY_PORT = 1 << 5;
    DEVICE_UD_AV_PORT_ENFORCE = 1 << 6;
    DEVICE_CURR_QP_STATE_MOD = 1 << 7;
    DEVICE_SHUTDOWN_PORT = 1 << 8;
    DEVICE_PORT_ACTIVE_EVENT = 1 << 10;
    DEVICE_SYS_IMAGE_GUID = 1 << 11;
    DEVICE_RC_RNR_NAK_GEN = 1 << 12;
    DEVICE_SRQ_RESIZE = 1 << 13;
    DEVICE_N_NOTIFY_CQ = 1 << 14;
    DEVICE_MEM_WINDOW = 1 << 17;
    DEVICE_UD_IP_CSUM = 1 << 18;
    DEVICE_XRC = 1 << 20;
    DEVICE_MEM_MGT_EXTENSIONS = 1 << 21;
    DEVICE_MEM_WINDOW_TYPE_2A = 1 << 23;
    DEVICE_MEM_WINDOW_TYPE_2B = 1 << 24;
    DEVICE_RC_IP_CSUM = 1 << 25;
    /// Deprecated: use [`RAW_PACKET_CAP_IP_CSUM`].
    DEVICE_RAW_IP_CSUM = 1 << 26;
    DEVICE_MANAGED_FLOW_STEERING = 1 << 29;
    /// Deprecated: use [`RAW_PACKET_CAP_SCATTER_FCS`].
    DEVICE_RAW_SCATTER_FCS = 1 << 34;
    DEVICE_PCI_WRITE_END_PADDING = 1 << 36;
}

/// `IB_UVERBS_DEVICE_FLUSH_GLOBAL` (Linux 6.2+, not in the 6.1 headers).
pub const DEVICE_FLUSH_GLOBAL: u64 = 1 << 38;
/// `IB_UVERBS_DEVICE_FLUSH_PERSISTENT` (Linux 6.2+, not in the 6.1 headers).
pub const DEVICE_FLUSH_PERSISTENT: u64 = 1 << 39;
/// `IB_UVERBS_DEVICE_ATOMIC_WRITE` (Linux 6.2+, not in the 6.1 headers).
pub const DEVICE_ATOMIC_WRITE: u64 = 1 << 40;

c_consts! {
    /// `enum ib_uverbs_raw_packet_caps`.
    RAW_PACKET_CAP_IDS: u32, prefix "IB_UVERBS_";
    RAW_PACKET_CAP_CVLAN_STRIPPING = 1 << 0;
    RAW_PACKET_CAP_SCATTER_FCS = 1 << 1;
    RAW_PACKET_CAP_IP_CSUM = 1 << 2;
    RAW_PACKET_CAP_DELAY_DROP = 1 << 3;
}

abi_struct! {
    /// `struct ib_uverbs_create_ah` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct CreateAh {
        /// User address of the [`CreateAhResp`] buffer.
        pub response: u64,
        /// Value identifying the AH in events.
        pub user_handle: u64,
        /// Handle of the PD.
        pub pd_handle: u32,
        /// Reserved, must be zero.
        pub reserved: u32,
        /// The address.
        pub attr: AhAttr,
    }
}
const_assert_eq!(size_of::<CreateAh>(), 56);
const_assert_eq!(offset_of!(CreateAh, attr), 24);

abi_struct! {
    /// `struct ib_uverbs_create_ah_resp` (`driver_data[]` omitted).
    #[repr(C)]
    pub struct CreateAhResp {
        /// Handle of the new AH.
        pub ah_handle: u32,
    }
}
const_assert_eq!(size_of::<CreateAhResp>(), 4);

abi_struct! {
    /// `struct ib_uverbs_destroy_ah`.
    #[repr(C)]
    pub struct DestroyAh {
        /// Handle of the AH.
        pub ah_handle: u32,
    }
}
const_assert_eq!(size_of::<DestroyAh>(), 4);

abi_struct! {
    /// `struct ib_uverbs_attach_mcast` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct AttachMcast {
        /// Multicast GID.
        pub gid: [u8; 16],
        /// Handle of the QP.
        pub qp_handle: u32,
        /// Multicast LID.
        pub mlid: u16,
        /// Reserved, must be zero.
        pub reserved: u16,
    }
}
const_assert_eq!(size_of::<AttachMcast>(), 24);
const_assert_eq!(offset_of!(AttachMcast, mlid), 20);

abi_struct! {
    /// `struct ib_uverbs_detach_mcast` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct DetachMcast {
        /// Multicast GID.
        pub gid: [u8; 16],
        /// Handle of the QP.
        pub qp_handle: u32,
        /// Multicast LID.
        pub mlid: u16,
        /// Reserved, must be zero.
        pub reserved: u16,
    }
}
const_assert_eq!(size_of::<DetachMcast>(), 24);

abi_struct! {
    /// `struct ib_uverbs_ex_create_wq`.
    #[repr(C, align(8))]
    pub struct ExCreateWq {
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// `IB_UVERBS_WQT_*`.
        pub wq_type: u32,
        /// Value returned in async events for this WQ.
        pub user_handle: u64,
        /// Handle of the PD.
        pub pd_handle: u32,
        /// Handle of the CQ.
        pub cq_handle: u32,
        /// Requested depth.
        pub max_wr: u32,
        /// Requested SGEs per WR.
        pub max_sge: u32,
        /// `IB_UVERBS_WQ_FLAGS_*` bits.
        pub create_flags: u32,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<ExCreateWq>(), 40);
const_assert_eq!(offset_of!(ExCreateWq, user_handle), 8);

abi_struct! {
    /// `struct ib_uverbs_ex_create_wq_resp`.
    #[repr(C)]
    pub struct ExCreateWqResp {
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// Number of bytes of this struct the kernel wrote.
        pub response_length: u32,
        /// Handle of the WQ.
        pub wq_handle: u32,
        /// Actual depth.
        pub max_wr: u32,
        /// Actual SGEs per WR.
        pub max_sge: u32,
        /// WQ number.
        pub wqn: u32,
    }
}
const_assert_eq!(size_of::<ExCreateWqResp>(), 24);

abi_struct! {
    /// `struct ib_uverbs_ex_destroy_wq`.
    #[repr(C)]
    pub struct ExDestroyWq {
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// Handle of the WQ.
        pub wq_handle: u32,
    }
}
const_assert_eq!(size_of::<ExDestroyWq>(), 8);

abi_struct! {
    /// `struct ib_uverbs_ex_destroy_wq_resp`.
    #[repr(C)]
    pub struct ExDestroyWqResp {
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// Number of bytes of this struct the kernel wrote.
        pub response_length: u32,
        /// Async events delivered for this WQ.
        pub events_reported: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<ExDestroyWqResp>(), 16);

abi_struct! {
    /// `struct ib_uverbs_ex_modify_wq`.
    #[repr(C)]
    pub struct ExModifyWq {
        /// Which attributes to change.
        pub attr_mask: u32,
        /// Handle of the WQ.
        pub wq_handle: u32,
        /// New state.
        pub wq_state: u32,
        /// Current state.
        pub curr_wq_state: u32,
        /// `IB_UVERBS_WQ_FLAGS_*` values.
        pub flags: u32,
        /// Which bits of `flags` to apply.
        pub flags_mask: u32,
    }
}
const_assert_eq!(size_of::<ExModifyWq>(), 24);

abi_struct! {
    /// `struct ib_uverbs_ex_create_rwq_ind_table` (the `wq_handles[]`
    /// array that follows is omitted).
    #[repr(C)]
    pub struct ExCreateRwqIndTable {
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// log2 of the number of WQ handles that follow.
        pub log_ind_tbl_size: u32,
    }
}
const_assert_eq!(size_of::<ExCreateRwqIndTable>(), 8);

abi_struct! {
    /// `struct ib_uverbs_ex_create_rwq_ind_table_resp`.
    #[repr(C)]
    pub struct ExCreateRwqIndTableResp {
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// Number of bytes of this struct the kernel wrote.
        pub response_length: u32,
        /// Handle of the table.
        pub ind_tbl_handle: u32,
        /// Table number.
        pub ind_tbl_num: u32,
    }
}
const_assert_eq!(size_of::<ExCreateRwqIndTableResp>(), 16);

abi_struct! {
    /// `struct ib_uverbs_ex_destroy_rwq_ind_table`.
    #[repr(C)]
    pub struct ExDestroyRwqIndTable {
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// Handle of the table.
        pub ind_tbl_handle: u32,
    }
}
const_assert_eq!(size_of::<ExDestroyRwqIndTable>(), 8);

write_cmd! {
    CreateAh => CMD_CREATE_AH, false, CreateAhResp;
    DestroyAh => CMD_DESTROY_AH, false, ();
    AttachMcast => CMD_ATTACH_MCAST, false, ();
    DetachMcast => CMD_DETACH_MCAST, false, ();
    ExCreateWq => EX_CMD_CREATE_WQ, true, ExCreateWqResp;
    ExDestroyWq => EX_CMD_DESTROY_WQ, true, ExDestroyWqResp;
    ExModifyWq => EX_CMD_MODIFY_WQ, true, ();
    ExCreateRwqIndTable => EX_CMD_CREATE_RWQ_IND_TBL, true, ExCreateRwqIndTableResp;
    ExDestroyRwqIndTable => EX_CMD_DESTROY_RWQ_IND_TBL, true, ();
}
