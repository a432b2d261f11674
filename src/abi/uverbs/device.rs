//! Device-level commands: context, device and port queries, completion
//! channels, and the event records read from the async/completion fds.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use super::{
    write_cmd, CMD_CREATE_COMP_CHANNEL, CMD_GET_CONTEXT, CMD_QUERY_DEVICE, CMD_QUERY_PORT,
    EX_CMD_QUERY_DEVICE,
};

abi_struct! {
    /// `struct ib_uverbs_get_context` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct GetContext {
        /// User address of the [`GetContextResp`] buffer.
        pub response: u64,
    }
}
const_assert_eq!(size_of::<GetContext>(), 8);

abi_struct! {
    /// `struct ib_uverbs_get_context_resp` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct GetContextResp {
        /// The new async event fd.
        pub async_fd: u32,
        /// Number of completion vectors.
        pub num_comp_vectors: u32,
    }
}
const_assert_eq!(size_of::<GetContextResp>(), 8);
const_assert_eq!(offset_of!(GetContextResp, num_comp_vectors), 4);

abi_struct! {
    /// `struct ib_uverbs_query_device` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct QueryDevice {
        /// User address of the [`QueryDeviceResp`] buffer.
        pub response: u64,
    }
}
const_assert_eq!(size_of::<QueryDevice>(), 8);

abi_struct! {
    /// `struct ib_uverbs_query_device_resp`: the device attributes
    /// (`ibv_device_attr`).
    #[repr(C, align(8))]
    pub struct QueryDeviceResp {
        /// Firmware version.
        pub fw_ver: u64,
        /// Node GUID, big-endian (`__be64`) as the kernel stores it.
        pub node_guid: u64,
        /// System image GUID, big-endian (`__be64`).
        pub sys_image_guid: u64,
        /// Largest registrable memory region, bytes.
        pub max_mr_size: u64,
        /// Supported page sizes (bit mask).
        pub page_size_cap: u64,
        /// IEEE vendor id.
        pub vendor_id: u32,
        /// Vendor part id.
        pub vendor_part_id: u32,
        /// Hardware version.
        pub hw_ver: u32,
        /// Maximum number of QPs.
        pub max_qp: u32,
        /// Maximum outstanding WRs per queue.
        pub max_qp_wr: u32,
        /// `IB_UVERBS_DEVICE_*` capability bits (low 32).
        pub device_cap_flags: u32,
        /// Maximum scatter/gather entries per WR.
        pub max_sge: u32,
        /// Maximum SGEs per RDMA read WR.
        pub max_sge_rd: u32,
        /// Maximum number of CQs.
        pub max_cq: u32,
        /// Maximum CQ entries.
        pub max_cqe: u32,
        /// Maximum number of MRs.
        pub max_mr: u32,
        /// Maximum number of PDs.
        pub max_pd: u32,
        /// Maximum outstanding RDMA read/atomic per QP as target.
        pub max_qp_rd_atom: u32,
        /// Maximum outstanding RDMA read/atomic per EE context.
        pub max_ee_rd_atom: u32,
        /// Maximum resources for RDMA read/atomic as target.
        pub max_res_rd_atom: u32,
        /// Maximum outstanding RDMA read/atomic per QP as initiator.
        pub max_qp_init_rd_atom: u32,
        /// Maximum outstanding RDMA read/atomic per EE as initiator.
        pub max_ee_init_rd_atom: u32,
        /// Atomic support level (`enum ib_atomic_cap`).
        pub atomic_cap: u32,
        /// Maximum number of EE contexts.
        pub max_ee: u32,
        /// Maximum number of RDDs.
        pub max_rdd: u32,
        /// Maximum number of memory windows.
        pub max_mw: u32,
        /// Maximum raw IPv6 datagram QPs.
        pub max_raw_ipv6_qp: u32,
        /// Maximum raw Ethertype datagram QPs.
        pub max_raw_ethy_qp: u32,
        /// Maximum multicast groups.
        pub max_mcast_grp: u32,
        /// Maximum QPs per multicast group.
        pub max_mcast_qp_attach: u32,
        /// Maximum QPs attached to multicast groups in total.
        pub max_total_mcast_qp_attach: u32,
        /// Maximum number of address handles.
        pub max_ah: u32,
        /// Maximum number of FMRs (obsolete).
        pub max_fmr: u32,
        /// Maximum remaps per FMR (obsolete).
        pub max_map_per_fmr: u32,
        /// Maximum number of SRQs.
        pub max_srq: u32,
        /// Maximum WRs per SRQ.
        pub max_srq_wr: u32,
        /// Maximum SGEs per SRQ WR.
        pub max_srq_sge: u32,
        /// Number of P_Keys.
        pub max_pkeys: u16,
        /// Local CA ack delay.
        pub local_ca_ack_delay: u8,
        /// Number of physical ports.
        pub phys_port_cnt: u8,
        /// Reserved.
        pub reserved: [u8; 4],
    }
}
const_assert_eq!(size_of::<QueryDeviceResp>(), 176);
const_assert_eq!(offset_of!(QueryDeviceResp, vendor_id), 40);
const_assert_eq!(offset_of!(QueryDeviceResp, max_srq_sge), 164);
const_assert_eq!(offset_of!(QueryDeviceResp, max_pkeys), 168);
const_assert_eq!(offset_of!(QueryDeviceResp, phys_port_cnt), 171);

abi_struct! {
    /// `struct ib_uverbs_ex_query_device`.
    #[repr(C)]
    pub struct ExQueryDevice {
        /// Must be zero.
        pub comp_mask: u32,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<ExQueryDevice>(), 8);

abi_struct! {
    /// The anonymous `per_transport_caps` struct of `struct ib_uverbs_odp_caps`.
    #[repr(C)]
    pub struct OdpPerTransportCaps {
        /// RC on-demand-paging capabilities (`IBV_ODP_SUPPORT_*`).
        pub rc_odp_caps: u32,
        /// UC on-demand-paging capabilities.
        pub uc_odp_caps: u32,
        /// UD on-demand-paging capabilities.
        pub ud_odp_caps: u32,
    }
}
const_assert_eq!(size_of::<OdpPerTransportCaps>(), 12);

abi_struct! {
    /// `struct ib_uverbs_odp_caps`: on-demand paging capabilities.
    #[repr(C, align(8))]
    pub struct OdpCaps {
        /// General ODP capability bits.
        pub general_caps: u64,
        /// Per-transport ODP capability bits.
        pub per_transport_caps: OdpPerTransportCaps,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<OdpCaps>(), 24);
const_assert_eq!(offset_of!(OdpCaps, per_transport_caps), 8);
const_assert_eq!(offset_of!(OdpCaps, reserved), 20);

abi_struct! {
    /// `struct ib_uverbs_rss_caps`: receive-side-scaling capabilities.
    #[repr(C)]
    pub struct RssCaps {
        /// Bit `1 << qp_type` set for each QP type that supports RSS.
        pub supported_qpts: u32,
        /// Maximum number of RWQ indirection tables.
        pub max_rwq_indirection_tables: u32,
        /// Maximum size of one RWQ indirection table.
        pub max_rwq_indirection_table_size: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<RssCaps>(), 16);

abi_struct! {
    /// `struct ib_uverbs_tm_caps`: tag-matching capabilities.
    #[repr(C)]
    pub struct TmCaps {
        /// Maximum size of a rendezvous request header.
        pub max_rndv_hdr_size: u32,
        /// Maximum entries in the tag-matching list.
        pub max_num_tags: u32,
        /// Tag-matching flags.
        pub flags: u32,
        /// Maximum outstanding list operations.
        pub max_ops: u32,
        /// Maximum SGEs per tag-matching entry.
        pub max_sge: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<TmCaps>(), 24);

abi_struct! {
    /// `struct ib_uverbs_cq_moderation_caps`.
    #[repr(C)]
    pub struct CqModerationCaps {
        /// Maximum completion count before an event.
        pub max_cq_moderation_count: u16,
        /// Maximum moderation period, microseconds.
        pub max_cq_moderation_period: u16,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<CqModerationCaps>(), 8);

abi_struct! {
    /// `struct ib_uverbs_ex_query_device_resp`: the extended device
    /// attributes (`ibv_device_attr_ex`). The kernel fills only the first
    /// `response_length` bytes; the rest stays as the caller zeroed it.
    ///
    /// TSO and packet-pacing capabilities are not part of the core uAPI
    /// (they come in driver data, e.g. mlx5's).
    #[repr(C, align(8))]
    pub struct ExQueryDeviceResp {
        /// The legacy device attributes.
        pub base: QueryDeviceResp,
        /// Which optional parts are valid.
        pub comp_mask: u32,
        /// Number of bytes of this struct the kernel wrote.
        pub response_length: u32,
        /// On-demand paging capabilities.
        pub odp_caps: OdpCaps,
        /// Mask of valid completion timestamp bits.
        pub timestamp_mask: u64,
        /// Core clock frequency, kHz.
        pub hca_core_clock: u64,
        /// All `IB_UVERBS_DEVICE_*` capability bits (64-bit).
        pub device_cap_flags_ex: u64,
        /// RSS capabilities.
        pub rss_caps: RssCaps,
        /// Maximum number of RQ-type WQs.
        pub max_wq_type_rq: u32,
        /// `IB_UVERBS_RAW_PACKET_CAP_*` bits.
        pub raw_packet_caps: u32,
        /// Tag-matching capabilities.
        pub tm_caps: TmCaps,
        /// CQ moderation capabilities.
        pub cq_moderation_caps: CqModerationCaps,
        /// Maximum device-memory allocation, bytes.
        pub max_dm_size: u64,
        /// XRC on-demand paging capabilities.
        pub xrc_odp_caps: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<ExQueryDeviceResp>(), 304);
const_assert_eq!(offset_of!(ExQueryDeviceResp, comp_mask), 176);
const_assert_eq!(offset_of!(ExQueryDeviceResp, response_length), 180);
const_assert_eq!(offset_of!(ExQueryDeviceResp, odp_caps), 184);
const_assert_eq!(offset_of!(ExQueryDeviceResp, timestamp_mask), 208);
const_assert_eq!(offset_of!(ExQueryDeviceResp, device_cap_flags_ex), 224);
const_assert_eq!(offset_of!(ExQueryDeviceResp, rss_caps), 232);
const_assert_eq!(offset_of!(ExQueryDeviceResp, tm_caps), 256);
const_assert_eq!(offset_of!(ExQueryDeviceResp, cq_moderation_caps), 280);
const_assert_eq!(offset_of!(ExQueryDeviceResp, max_dm_size), 288);
const_assert_eq!(offset_of!(ExQueryDeviceResp, xrc_odp_caps), 296);

abi_struct! {
    /// `struct ib_uverbs_query_port` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct QueryPort {
        /// User address of the [`QueryPortResp`] buffer.
        pub response: u64,
        /// Port number (1-based).
        pub port_num: u8,
        /// Reserved, must be zero.
        pub reserved: [u8; 7],
    }
}
const_assert_eq!(size_of::<QueryPort>(), 16);
const_assert_eq!(offset_of!(QueryPort, port_num), 8);

abi_struct! {
    /// `struct ib_uverbs_query_port_resp`: the port attributes
    /// (`ibv_port_attr`).
    #[repr(C)]
    pub struct QueryPortResp {
        /// `IB_UVERBS_PCF_*` capability bits.
        pub port_cap_flags: u32,
        /// Maximum message size.
        pub max_msg_sz: u32,
        /// Bad P_Key counter.
        pub bad_pkey_cntr: u32,
        /// Q_Key violation counter.
        pub qkey_viol_cntr: u32,
        /// GID table length.
        pub gid_tbl_len: u32,
        /// P_Key table length.
        pub pkey_tbl_len: u16,
        /// Base LID.
        pub lid: u16,
        /// Subnet manager LID.
        pub sm_lid: u16,
        /// Port state (`enum ibv_port_state`).
        pub state: u8,
        /// Maximum MTU (`enum ibv_mtu`).
        pub max_mtu: u8,
        /// Active MTU (`enum ibv_mtu`).
        pub active_mtu: u8,
        /// LID mask control.
        pub lmc: u8,
        /// Maximum virtual lanes.
        pub max_vl_num: u8,
        /// Subnet manager SL.
        pub sm_sl: u8,
        /// Subnet propagation delay.
        pub subnet_timeout: u8,
        /// InitTypeReply.
        pub init_type_reply: u8,
        /// Active link width.
        pub active_width: u8,
        /// Active link speed.
        pub active_speed: u8,
        /// Physical port state.
        pub phys_state: u8,
        /// Link layer (`IBV_LINK_LAYER_*`).
        pub link_layer: u8,
        /// `IB_UVERBS_QPF_*` flags.
        pub flags: u8,
        /// Reserved.
        pub reserved: u8,
    }
}
const_assert_eq!(size_of::<QueryPortResp>(), 40);
const_assert_eq!(offset_of!(QueryPortResp, pkey_tbl_len), 20);
const_assert_eq!(offset_of!(QueryPortResp, state), 26);
const_assert_eq!(offset_of!(QueryPortResp, link_layer), 37);

abi_struct! {
    /// `struct ib_uverbs_create_comp_channel`.
    #[repr(C, align(8))]
    pub struct CreateCompChannel {
        /// User address of the [`CreateCompChannelResp`] buffer.
        pub response: u64,
    }
}
const_assert_eq!(size_of::<CreateCompChannel>(), 8);

abi_struct! {
    /// `struct ib_uverbs_create_comp_channel_resp`.
    #[repr(C)]
    pub struct CreateCompChannelResp {
        /// The new completion channel fd.
        pub fd: u32,
    }
}
const_assert_eq!(size_of::<CreateCompChannelResp>(), 4);

abi_struct! {
    /// `struct ib_uverbs_async_event_desc`: one record read from the async
    /// event fd.
    #[repr(C, align(8))]
    pub struct AsyncEventDesc {
        /// The `user_handle` of the affected object (or the port number).
        pub element: u64,
        /// `enum ib_event_type`.
        pub event_type: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<AsyncEventDesc>(), 16);

abi_struct! {
    /// `struct ib_uverbs_comp_event_desc`: one record read from a
    /// completion channel fd.
    #[repr(C, align(8))]
    pub struct CompEventDesc {
        /// The `user_handle` of the CQ that has a completion event.
        pub cq_handle: u64,
    }
}
const_assert_eq!(size_of::<CompEventDesc>(), 8);

write_cmd! {
    GetContext => CMD_GET_CONTEXT, false, GetContextResp;
    QueryDevice => CMD_QUERY_DEVICE, false, QueryDeviceResp;
    ExQueryDevice => EX_CMD_QUERY_DEVICE, true, ExQueryDeviceResp;
    QueryPort => CMD_QUERY_PORT, false, QueryPortResp;
    CreateCompChannel => CMD_CREATE_COMP_CHANNEL, false, CreateCompChannelResp;
}
