//! `<rdma/ib_user_ioctl_verbs.h>`: enums, flags and structs shared by the
//! ioctl interface.
//!
//! Enumerators become `u32` constants named after the C name without the
//! `IB_UVERBS_` prefix (`IB_UVERBS_ACCESS_LOCAL_WRITE` is
//! [`ACCESS_LOCAL_WRITE`]); each group has a `*_IDS` table of
//! `(C name, value)` pairs. `enum rdma_driver_id` is the newtype
//! [`RdmaDriverId`].

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::uverbs::QueryPortResp;

/// `enum rdma_driver_id`: which kernel driver backs a device (reported
/// over RDMA netlink and required in the ioctl header for driver-namespace
/// attributes).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(transparent)]
pub struct RdmaDriverId(pub u32);

impl RdmaDriverId {
    /// `RDMA_DRIVER_UNKNOWN`
    pub const UNKNOWN: Self = Self(0);
    /// `RDMA_DRIVER_MLX5`
    pub const MLX5: Self = Self(1);
    /// `RDMA_DRIVER_MLX4`
    pub const MLX4: Self = Self(2);
    /// `RDMA_DRIVER_CXGB3`
    pub const CXGB3: Self = Self(3);
    /// `RDMA_DRIVER_CXGB4`
    pub const CXGB4: Self = Self(4);
    /// `RDMA_DRIVER_MTHCA`
    pub const MTHCA: Self = Self(5);
    /// `RDMA_DRIVER_BNXT_RE`
    pub const BNXT_RE: Self = Self(6);
    /// `RDMA_DRIVER_OCRDMA`
    pub const OCRDMA: Self = Self(7);
    /// `RDMA_DRIVER_NES`
    pub const NES: Self = Self(8);
    /// `RDMA_DRIVER_I40IW`
    pub const I40IW: Self = Self(9);
    /// `RDMA_DRIVER_IRDMA` (same value as `RDMA_DRIVER_I40IW`)
    pub const IRDMA: Self = Self(9);
    /// `RDMA_DRIVER_VMW_PVRDMA`
    pub const VMW_PVRDMA: Self = Self(10);
    /// `RDMA_DRIVER_QEDR`
    pub const QEDR: Self = Self(11);
    /// `RDMA_DRIVER_HNS`
    pub const HNS: Self = Self(12);
    /// `RDMA_DRIVER_USNIC`
    pub const USNIC: Self = Self(13);
    /// `RDMA_DRIVER_RXE`
    pub const RXE: Self = Self(14);
    /// `RDMA_DRIVER_HFI1`
    pub const HFI1: Self = Self(15);
    /// `RDMA_DRIVER_QIB`
    pub const QIB: Self = Self(16);
    /// `RDMA_DRIVER_EFA`
    pub const EFA: Self = Self(17);
    /// `RDMA_DRIVER_SIW`
    pub const SIW: Self = Self(18);
    /// `RDMA_DRIVER_ERDMA`
    pub const ERDMA: Self = Self(19);
    /// `RDMA_DRIVER_MANA` (Linux 6.2+; newer than the 6.1 uAPI headers the
    /// cross-check compiles against, which end at `RDMA_DRIVER_ERDMA`).
    pub const MANA: Self = Self(20);

    /// Every known driver id with its C enumerator name (`IRDMA` is listed
    /// under its first name, `RDMA_DRIVER_I40IW`).
    pub const ALL: &'static [(Self, &'static str)] = &[
        (Self::UNKNOWN, "RDMA_DRIVER_UNKNOWN"),
        (Self::MLX5, "RDMA_DRIVER_MLX5"),
        (Self::MLX4, "RDMA_DRIVER_MLX4"),
        (Self::CXGB3, "RDMA_DRIVER_CXGB3"),
        (Self::CXGB4, "RDMA_DRIVER_CXGB4"),
        (Self::MTHCA, "RDMA_DRIVER_MTHCA"),
        (Self::BNXT_RE, "RDMA_DRIVER_BNXT_RE"),
        (Self::OCRDMA, "RDMA_DRIVER_OCRDMA"),
        (Self::NES, "RDMA_DRIVER_NES"),
        (Self::I40IW, "RDMA_DRIVER_I40IW"),
        (Self::VMW_PVRDMA, "RDMA_DRIVER_VMW_PVRDMA"),
        (Self::QEDR, "RDMA_DRIVER_QEDR"),
        (Self::HNS, "RDMA_DRIVER_HNS"),
        (Self::USNIC, "RDMA_DRIVER_USNIC"),
        (Self::RXE, "RDMA_DRIVER_RXE"),
        (Self::HFI1, "RDMA_DRIVER_HFI1"),
        (Self::QIB, "RDMA_DRIVER_QIB"),
        (Self::EFA, "RDMA_DRIVER_EFA"),
        (Self::SIW, "RDMA_DRIVER_SIW"),
        (Self::ERDMA, "RDMA_DRIVER_ERDMA"),
        (Self::MANA, "RDMA_DRIVER_MANA"),
    ];

    /// The C enumerator name (`"RDMA_DRIVER_RXE"`), or `None` for an id
    /// this crate does not know.
    pub fn name(self) -> Option<&'static str> {
        Self::ALL
            .iter()
            .find(|(id, _)| *id == self)
            .map(|(_, n)| *n)
    }
}

/// `IB_UVERBS_ACCESS_OPTIONAL_FIRST`: first access bit the kernel may ignore.
pub const ACCESS_OPTIONAL_FIRST: u32 = 1 << 20;
/// `IB_UVERBS_ACCESS_OPTIONAL_LAST`: last access bit the kernel may ignore.
pub const ACCESS_OPTIONAL_LAST: u32 = 1 << 29;

c_consts! {
    /// `enum ib_uverbs_core_support`.
    CORE_SUPPORT_IDS: u32, prefix "IB_UVERBS_";
    /// The kernel ignores unknown optional access bits in MR registration.
    CORE_SUPPORT_OPTIONAL_MR_ACCESS = 1 << 0;
}

c_consts! {
    /// `enum ib_uverbs_access_flags`.
    ACCESS_IDS: u32, prefix "IB_UVERBS_";
    ACCESS_LOCAL_WRITE = 1 << 0;
    ACCESS_REMOTE_WRITE = 1 << 1;
    ACCESS_REMOTE_READ = 1 << 2;
    ACCESS_REMOTE_ATOMIC = 1 << 3;
    ACCESS_MW_BIND = 1 << 4;
    ACCESS_ZERO_BASED = 1 << 5;
    ACCESS_ON_DEMAND = 1 << 6;
    ACCESS_HUGETLB = 1 << 7;
    ACCESS_RELAXED_ORDERING = ACCESS_OPTIONAL_FIRST;
    /// All optional access bits.
    ACCESS_OPTIONAL_RANGE = ((ACCESS_OPTIONAL_LAST << 1) - 1) & !(ACCESS_OPTIONAL_FIRST - 1);
}

c_consts! {
    /// `enum ib_uverbs_srq_type`.
    SRQT_IDS: u32, prefix "IB_UVERBS_";
    SRQT_BASIC = 0;
    SRQT_XRC = 1;
    SRQT_TM = 2;
}

c_consts! {
    /// `enum ib_uverbs_wq_type` and `enum ib_uverbs_wq_flags`.
    WQ_IDS: u32, prefix "IB_UVERBS_";
    WQT_RQ = 0;
    WQ_FLAGS_CVLAN_STRIPPING = 1 << 0;
    WQ_FLAGS_SCATTER_FCS = 1 << 1;
    WQ_FLAGS_DELAY_DROP = 1 << 2;
    WQ_FLAGS_PCI_WRITE_END_PADDING = 1 << 3;
}

c_consts! {
    /// `enum ib_uverbs_qp_type`.
    QPT_IDS: u32, prefix "IB_UVERBS_";
    QPT_RC = 2;
    QPT_UC = 3;
    QPT_UD = 4;
    QPT_RAW_PACKET = 8;
    QPT_XRC_INI = 9;
    QPT_XRC_TGT = 10;
    QPT_DRIVER = 0xff;
}

c_consts! {
    /// `enum ib_uverbs_qp_create_flags`.
    QP_CREATE_IDS: u32, prefix "IB_UVERBS_";
    QP_CREATE_BLOCK_MULTICAST_LOOPBACK = 1 << 1;
    QP_CREATE_SCATTER_FCS = 1 << 8;
    QP_CREATE_CVLAN_STRIPPING = 1 << 9;
    QP_CREATE_PCI_WRITE_END_PADDING = 1 << 11;
    QP_CREATE_SQ_SIG_ALL = 1 << 12;
}

c_consts! {
    /// `enum ib_uverbs_query_port_cap_flags` (`port_cap_flags`).
    PCF_IDS: u32, prefix "IB_UVERBS_";
    PCF_SM = 1 << 1;
    PCF_NOTICE_SUP = 1 << 2;
    PCF_TRAP_SUP = 1 << 3;
    PCF_OPT_IPD_SUP = 1 << 4;
    PCF_AUTO_MIGR_SUP = 1 << 5;
    PCF_SL_MAP_SUP = 1 << 6;
    PCF_MKEY_NVRAM = 1 << 7;
    PCF_PKEY_NVRAM = 1 << 8;
    PCF_LED_INFO_SUP = 1 << 9;
    PCF_SM_DISABLED = 1 << 10;
    PCF_SYS_IMAGE_GUID_SUP = 1 << 11;
    PCF_PKEY_SW_EXT_PORT_TRAP_SUP = 1 << 12;
    PCF_EXTENDED_SPEEDS_SUP = 1 << 14;
    PCF_CM_SUP = 1 << 16;
    PCF_SNMP_TUNNEL_SUP = 1 << 17;
    PCF_REINIT_SUP = 1 << 18;
    PCF_DEVICE_MGMT_SUP = 1 << 19;
    PCF_VENDOR_CLASS_SUP = 1 << 20;
    PCF_DR_NOTICE_SUP = 1 << 21;
    PCF_CAP_MASK_NOTICE_SUP = 1 << 22;
    PCF_BOOT_MGMT_SUP = 1 << 23;
    PCF_LINK_LATENCY_SUP = 1 << 24;
    PCF_CLIENT_REG_SUP = 1 << 25;
    PCF_LINK_SPEED_WIDTH_TABLE_SUP = 1 << 27;
    PCF_VENDOR_SPECIFIC_MADS_TABLE_SUP = 1 << 28;
    PCF_MCAST_PKEY_TRAP_SUPPRESSION_SUP = 1 << 29;
    PCF_MCAST_FDB_TOP_SUP = 1 << 30;
    PCF_HIERARCHY_INFO_SUP = 1 << 31;
    /// The port's GIDs are derived from IP addresses (RoCE); an internal
    /// flag, not an IBA one.
    PCF_IP_BASED_GIDS = 1 << 26;
}

c_consts! {
    /// `enum ib_uverbs_query_port_flags` (`QueryPortResp::flags`).
    QPF_IDS: u32, prefix "IB_UVERBS_";
    /// The port requires a GRH on every packet (RoCE).
    QPF_GRH_REQUIRED = 1 << 0;
}

c_consts! {
    /// Flow-action (IPsec ESP) enums.
    FLOW_ACTION_IDS: u32, prefix "IB_UVERBS_";
    FLOW_ACTION_ESP_KEYMAT_AES_GCM = 0;
    FLOW_ACTION_IV_ALGO_SEQ = 0;
    FLOW_ACTION_ESP_REPLAY_NONE = 0;
    FLOW_ACTION_ESP_REPLAY_BMP = 1;
    FLOW_ACTION_ESP_FLAGS_INLINE_CRYPTO = 0;
    FLOW_ACTION_ESP_FLAGS_FULL_OFFLOAD = 1 << 0;
    FLOW_ACTION_ESP_FLAGS_TUNNEL = 0;
    FLOW_ACTION_ESP_FLAGS_TRANSPORT = 1 << 1;
    FLOW_ACTION_ESP_FLAGS_DECRYPT = 0;
    FLOW_ACTION_ESP_FLAGS_ENCRYPT = 1 << 2;
    FLOW_ACTION_ESP_FLAGS_ESN_NEW_WINDOW = 1 << 3;
}

c_consts! {
    /// `enum ib_uverbs_read_counters_flags`, `enum ib_uverbs_advise_mr_advice`,
    /// `enum ib_uverbs_advise_mr_flag`.
    MISC_IDS: u32, prefix "IB_UVERBS_";
    READ_COUNTERS_PREFER_CACHED = 1 << 0;
    ADVISE_MR_ADVICE_PREFETCH = 0;
    ADVISE_MR_ADVICE_PREFETCH_WRITE = 1;
    ADVISE_MR_ADVICE_PREFETCH_NO_FAULT = 2;
    ADVISE_MR_FLAG_FLUSH = 1 << 0;
}

c_consts! {
    /// `enum ib_uverbs_gid_type`.
    GID_TYPE_IDS: u32, prefix "IB_UVERBS_";
    GID_TYPE_IB = 0;
    GID_TYPE_ROCE_V1 = 1;
    GID_TYPE_ROCE_V2 = 2;
}

abi_struct! {
    /// `struct ib_uverbs_flow_action_esp_keymat_aes_gcm`.
    #[repr(C, align(8))]
    pub struct FlowActionEspKeymatAesGcm {
        /// Initialization vector.
        pub iv: u64,
        /// `FLOW_ACTION_IV_ALGO_*`.
        pub iv_algo: u32,
        /// Salt.
        pub salt: u32,
        /// ICV length.
        pub icv_len: u32,
        /// Key length in bytes.
        pub key_len: u32,
        /// AES key.
        pub aes_key: [u32; 8],
    }
}
const_assert_eq!(size_of::<FlowActionEspKeymatAesGcm>(), 56);

abi_struct! {
    /// `struct ib_uverbs_flow_action_esp_replay_bmp`.
    #[repr(C)]
    pub struct FlowActionEspReplayBmp {
        /// Replay window size.
        pub size: u32,
    }
}
const_assert_eq!(size_of::<FlowActionEspReplayBmp>(), 4);

abi_struct! {
    /// `struct ib_uverbs_flow_action_esp_encap`.
    #[repr(C, align(8))]
    pub struct FlowActionEspEncap {
        /// User address of a `flow_xxx_filter`.
        pub val_ptr: u64,
        /// User address of the next [`FlowActionEspEncap`].
        pub next_ptr: u64,
        /// Length of the filter `val_ptr` points to.
        pub len: u16,
        /// Flow spec type of that filter.
        pub r#type: u16,
        /// Trailing padding of the C struct.
        pub _pad: u32,
    }
}
const_assert_eq!(size_of::<FlowActionEspEncap>(), 24);
const_assert_eq!(offset_of!(FlowActionEspEncap, r#type), 18);

abi_struct! {
    /// `struct ib_uverbs_flow_action_esp`.
    #[repr(C, align(8))]
    pub struct FlowActionEsp {
        /// Security parameter index.
        pub spi: u32,
        /// Initial sequence number.
        pub seq: u32,
        /// Traffic-flow-confidentiality padding.
        pub tfc_pad: u32,
        /// `FLOW_ACTION_ESP_FLAGS_*`.
        pub flags: u32,
        /// Hard packet limit.
        pub hard_limit_pkts: u64,
    }
}
const_assert_eq!(size_of::<FlowActionEsp>(), 24);

abi_struct! {
    /// `struct ib_uverbs_query_port_resp_ex`: the response of the ioctl
    /// `UVERBS_METHOD_QUERY_PORT`.
    ///
    /// Linux 6.6 split the 6.1 header's `__u8 reserved[6]` into
    /// `__u8 reserved[2]; __u32 active_speed_ex;`; this struct uses the
    /// newer layout (older kernels leave `active_speed_ex` zero).
    #[repr(C)]
    pub struct QueryPortRespEx {
        /// The legacy port attributes.
        pub legacy_resp: QueryPortResp,
        /// Extended port capability bits (`PortCapabilityMask2`).
        pub port_cap_flags2: u16,
        /// Reserved.
        pub reserved: [u8; 2],
        /// Active link speed beyond the 8-bit `active_speed` encoding (0 if
        /// the kernel does not report it).
        pub active_speed_ex: u32,
    }
}
const_assert_eq!(size_of::<QueryPortRespEx>(), 48);
const_assert_eq!(offset_of!(QueryPortRespEx, port_cap_flags2), 40);
const_assert_eq!(offset_of!(QueryPortRespEx, active_speed_ex), 44);

abi_struct! {
    /// `struct ib_uverbs_qp_cap`: the `UVERBS_ATTR_CREATE_QP_CAP` attribute.
    #[repr(C)]
    pub struct QpCap {
        /// Send queue depth.
        pub max_send_wr: u32,
        /// Receive queue depth.
        pub max_recv_wr: u32,
        /// SGEs per send WR.
        pub max_send_sge: u32,
        /// SGEs per receive WR.
        pub max_recv_sge: u32,
        /// Inline data bytes per send WR.
        pub max_inline_data: u32,
    }
}
const_assert_eq!(size_of::<QpCap>(), 20);

abi_struct! {
    /// `struct ib_uverbs_gid_entry`: one entry of
    /// `UVERBS_METHOD_QUERY_GID_TABLE` / `QUERY_GID_ENTRY`.
    #[repr(C, align(8))]
    pub struct GidEntry {
        /// The GID, 16 bytes in network order (declared `__aligned_u64 gid[2]`).
        pub gid: [u64; 2],
        /// Index in the port's GID table.
        pub gid_index: u32,
        /// Port number.
        pub port_num: u32,
        /// `GID_TYPE_*`.
        pub gid_type: u32,
        /// ifindex of the associated netdev, 0 if none.
        pub netdev_ifindex: u32,
    }
}
const_assert_eq!(size_of::<GidEntry>(), 32);
const_assert_eq!(offset_of!(GidEntry, gid_index), 16);
const_assert_eq!(offset_of!(GidEntry, netdev_ifindex), 28);

impl GidEntry {
    /// The GID as its 16 raw bytes (network order).
    pub fn gid_bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out.copy_from_slice(self.gid.as_bytes());
        out
    }
}
