//! `<infiniband/verbs.h>`'s `struct ibv_device_attr_ex` and its capability
//! sub-structs (what `ibv_query_device_ex` fills).

use super::device::IbvDeviceAttr;

/// `per_transport_caps` of `struct ibv_odp_caps`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvOdpPerTransport {
    pub(crate) rc_odp_caps: u32,
    pub(crate) uc_odp_caps: u32,
    pub(crate) ud_odp_caps: u32,
}

/// `struct ibv_odp_caps`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvOdpCaps {
    pub(crate) general_caps: u64,
    pub(crate) per_transport_caps: IbvOdpPerTransport,
}

/// `struct ibv_tso_caps`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvTsoCaps {
    pub(crate) max_tso: u32,
    pub(crate) supported_qpts: u32,
}

/// `struct ibv_rss_caps`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvRssCaps {
    pub(crate) supported_qpts: u32,
    pub(crate) max_rwq_indirection_tables: u32,
    pub(crate) max_rwq_indirection_table_size: u32,
    pub(crate) rx_hash_fields_mask: u64,
    pub(crate) rx_hash_function: u8,
}

/// `struct ibv_packet_pacing_caps`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvPacketPacingCaps {
    pub(crate) qp_rate_limit_min: u32,
    pub(crate) qp_rate_limit_max: u32,
    pub(crate) supported_qpts: u32,
}

/// `struct ibv_tm_caps`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvTmCaps {
    pub(crate) max_rndv_hdr_size: u32,
    pub(crate) max_num_tags: u32,
    pub(crate) flags: u32,
    pub(crate) max_ops: u32,
    pub(crate) max_sge: u32,
}

/// `struct ibv_cq_moderation_caps`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvCqModerationCaps {
    pub(crate) max_cq_count: u16,
    pub(crate) max_cq_period: u16,
}

/// `struct ibv_pci_atomic_caps`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvPciAtomicCaps {
    pub(crate) fetch_add: u16,
    pub(crate) swap: u16,
    pub(crate) compare_swap: u16,
}

/// `struct ibv_device_attr_ex`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvDeviceAttrEx {
    pub(crate) orig_attr: IbvDeviceAttr,
    pub(crate) comp_mask: u32,
    pub(crate) odp_caps: IbvOdpCaps,
    pub(crate) completion_timestamp_mask: u64,
    pub(crate) hca_core_clock: u64,
    pub(crate) device_cap_flags_ex: u64,
    pub(crate) tso_caps: IbvTsoCaps,
    pub(crate) rss_caps: IbvRssCaps,
    pub(crate) max_wq_type_rq: u32,
    pub(crate) packet_pacing_caps: IbvPacketPacingCaps,
    /// `enum ibv_raw_packet_caps` bits
    pub(crate) raw_packet_caps: u32,
    pub(crate) tm_caps: IbvTmCaps,
    pub(crate) cq_mod_caps: IbvCqModerationCaps,
    pub(crate) max_dm_size: u64,
    pub(crate) pci_atomic_caps: IbvPciAtomicCaps,
    pub(crate) xrc_odp_caps: u32,
    pub(crate) phys_port_cnt_ex: u32,
}

/// `struct ibv_query_device_ex_input`.
#[repr(C)]
pub(crate) struct IbvQueryDeviceExInput {
    pub(crate) comp_mask: u32,
}
