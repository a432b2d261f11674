//! The kernel-format structs of the `ibv_copy_*_kern` helpers librdmacm
//! uses: `struct ib_uverbs_ah_attr` / `ib_uverbs_qp_attr`
//! (`<rdma/ib_user_verbs.h>`), `struct ib_user_path_rec`
//! (`<rdma/ib_user_sa.h>`) and libibverbs' `struct ibv_sa_path_rec`
//! (`<infiniband/sa.h>`).

use core::ffi::c_int;

use super::device::IbvGid;

/// `struct ib_uverbs_global_route`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbUverbsGlobalRoute {
    pub(crate) dgid: [u8; 16],
    pub(crate) flow_label: u32,
    pub(crate) sgid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
    pub(crate) reserved: u8,
}

/// `struct ib_uverbs_ah_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbUverbsAhAttr {
    pub(crate) grh: IbUverbsGlobalRoute,
    pub(crate) dlid: u16,
    pub(crate) sl: u8,
    pub(crate) src_path_bits: u8,
    pub(crate) static_rate: u8,
    pub(crate) is_global: u8,
    pub(crate) port_num: u8,
    pub(crate) reserved: u8,
}

/// `struct ib_uverbs_qp_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbUverbsQpAttr {
    pub(crate) qp_attr_mask: u32,
    pub(crate) qp_state: u32,
    pub(crate) cur_qp_state: u32,
    pub(crate) path_mtu: u32,
    pub(crate) path_mig_state: u32,
    pub(crate) qkey: u32,
    pub(crate) rq_psn: u32,
    pub(crate) sq_psn: u32,
    pub(crate) dest_qp_num: u32,
    pub(crate) qp_access_flags: u32,
    pub(crate) ah_attr: IbUverbsAhAttr,
    pub(crate) alt_ah_attr: IbUverbsAhAttr,
    pub(crate) max_send_wr: u32,
    pub(crate) max_recv_wr: u32,
    pub(crate) max_send_sge: u32,
    pub(crate) max_recv_sge: u32,
    pub(crate) max_inline_data: u32,
    pub(crate) pkey_index: u16,
    pub(crate) alt_pkey_index: u16,
    pub(crate) en_sqd_async_notify: u8,
    pub(crate) sq_draining: u8,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) min_rnr_timer: u8,
    pub(crate) port_num: u8,
    pub(crate) timeout: u8,
    pub(crate) retry_cnt: u8,
    pub(crate) rnr_retry: u8,
    pub(crate) alt_port_num: u8,
    pub(crate) alt_timeout: u8,
    pub(crate) reserved: [u8; 5],
}

/// `struct ib_user_path_rec` (kernel format, rdma_ucm).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbUserPathRec {
    pub(crate) dgid: [u8; 16],
    pub(crate) sgid: [u8; 16],
    pub(crate) dlid: u16,
    pub(crate) slid: u16,
    pub(crate) raw_traffic: u32,
    pub(crate) flow_label: u32,
    pub(crate) reversible: u32,
    pub(crate) mtu: u32,
    pub(crate) pkey: u16,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
    pub(crate) numb_path: u8,
    pub(crate) sl: u8,
    pub(crate) mtu_selector: u8,
    pub(crate) rate_selector: u8,
    pub(crate) rate: u8,
    pub(crate) packet_life_time_selector: u8,
    pub(crate) packet_life_time: u8,
    pub(crate) preference: u8,
}

/// `struct ibv_sa_path_rec` (libibverbs format).
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvSaPathRec {
    pub(crate) dgid: IbvGid,
    pub(crate) sgid: IbvGid,
    pub(crate) dlid: u16,
    pub(crate) slid: u16,
    pub(crate) raw_traffic: c_int,
    pub(crate) flow_label: u32,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
    pub(crate) reversible: c_int,
    pub(crate) numb_path: u8,
    pub(crate) pkey: u16,
    pub(crate) sl: u8,
    pub(crate) mtu_selector: u8,
    pub(crate) mtu: u8,
    pub(crate) rate_selector: u8,
    pub(crate) rate: u8,
    pub(crate) packet_life_time_selector: u8,
    pub(crate) packet_life_time: u8,
    pub(crate) preference: u8,
}
