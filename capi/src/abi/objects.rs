//! `<infiniband/verbs.h>` object structs (`ibv_pd`, `ibv_mr`, `ibv_cq`,
//! `ibv_qp`, `ibv_srq`, `ibv_ah`, `ibv_mw`, `ibv_comp_channel`) and the
//! attribute structs of QPs, SRQs, AHs and async events.

use core::ffi::{c_int, c_uint, c_void};

use super::device::{AnyFn, IbvContext, IbvGid};

/// `struct ibv_pd`.
#[repr(C)]
pub(crate) struct IbvPd {
    pub(crate) context: *mut IbvContext,
    pub(crate) handle: u32,
}

/// `struct ibv_td`.
#[repr(C)]
pub(crate) struct IbvTd {
    pub(crate) context: *mut IbvContext,
}

/// `struct ibv_td_init_attr`.
#[repr(C)]
pub(crate) struct IbvTdInitAttr {
    pub(crate) comp_mask: u32,
}

/// `ibv_parent_domain_init_attr.alloc`.
pub(crate) type PdAllocFn = unsafe extern "C" fn(*mut IbvPd, *mut core::ffi::c_void, usize, usize, u64) -> *mut core::ffi::c_void;
/// `ibv_parent_domain_init_attr.free`.
pub(crate) type PdFreeFn = unsafe extern "C" fn(*mut IbvPd, *mut core::ffi::c_void, *mut core::ffi::c_void, u64);

/// `struct ibv_parent_domain_init_attr`.
#[repr(C)]
pub(crate) struct IbvParentDomainInitAttr {
    pub(crate) pd: *mut IbvPd,
    pub(crate) td: *mut IbvTd,
    pub(crate) comp_mask: u32,
    pub(crate) alloc: Option<PdAllocFn>,
    pub(crate) free: Option<PdFreeFn>,
    pub(crate) pd_context: *mut core::ffi::c_void,
}

/// `struct ibv_mr`.
#[repr(C)]
pub(crate) struct IbvMr {
    pub(crate) context: *mut IbvContext,
    pub(crate) pd: *mut IbvPd,
    pub(crate) addr: *mut c_void,
    pub(crate) length: usize,
    pub(crate) handle: u32,
    pub(crate) lkey: u32,
    pub(crate) rkey: u32,
}

/// `struct ibv_mw`.
#[repr(C)]
pub(crate) struct IbvMw {
    pub(crate) context: *mut IbvContext,
    pub(crate) pd: *mut IbvPd,
    pub(crate) rkey: u32,
    pub(crate) handle: u32,
    /// `enum ibv_mw_type`
    pub(crate) type_: c_int,
}

/// `struct ibv_comp_channel`.
#[repr(C)]
pub(crate) struct IbvCompChannel {
    pub(crate) context: *mut IbvContext,
    pub(crate) fd: c_int,
    /// Number of CQs using the channel.
    pub(crate) refcnt: c_int,
}

/// `struct ibv_cq`.
#[repr(C)]
pub(crate) struct IbvCq {
    pub(crate) context: *mut IbvContext,
    pub(crate) channel: *mut IbvCompChannel,
    pub(crate) cq_context: *mut c_void,
    pub(crate) handle: u32,
    pub(crate) cqe: c_int,
    pub(crate) mutex: libc::pthread_mutex_t,
    pub(crate) cond: libc::pthread_cond_t,
    pub(crate) comp_events_completed: u32,
    pub(crate) async_events_completed: u32,
}

/// `struct ibv_cq_ex`: `struct ibv_cq`'s fields, then the extended
/// polling API (filled by `ibv_create_cq_ex`; a plain CQ leaves them NULL).
#[repr(C)]
pub(crate) struct IbvCqEx {
    pub(crate) context: *mut IbvContext,
    pub(crate) channel: *mut IbvCompChannel,
    pub(crate) cq_context: *mut c_void,
    pub(crate) handle: u32,
    pub(crate) cqe: c_int,
    pub(crate) mutex: libc::pthread_mutex_t,
    pub(crate) cond: libc::pthread_cond_t,
    pub(crate) comp_events_completed: u32,
    pub(crate) async_events_completed: u32,
    pub(crate) comp_mask: u32,
    /// `enum ibv_wc_status`
    pub(crate) status: c_int,
    pub(crate) wr_id: u64,
    pub(crate) start_poll: AnyFn,
    pub(crate) next_poll: AnyFn,
    pub(crate) end_poll: AnyFn,
    pub(crate) read_opcode: AnyFn,
    pub(crate) read_vendor_err: AnyFn,
    pub(crate) read_byte_len: AnyFn,
    pub(crate) read_imm_data: AnyFn,
    pub(crate) read_qp_num: AnyFn,
    pub(crate) read_src_qp: AnyFn,
    pub(crate) read_wc_flags: AnyFn,
    pub(crate) read_slid: AnyFn,
    pub(crate) read_sl: AnyFn,
    pub(crate) read_dlid_path_bits: AnyFn,
    pub(crate) read_completion_ts: AnyFn,
    pub(crate) read_cvlan: AnyFn,
    pub(crate) read_flow_tag: AnyFn,
    pub(crate) read_tm_info: AnyFn,
    pub(crate) read_completion_wallclock_ns: AnyFn,
}

/// `struct ibv_cq_init_attr_ex` (`ibv_create_cq_ex`).
#[repr(C)]
pub(crate) struct IbvCqInitAttrEx {
    pub(crate) cqe: u32,
    pub(crate) cq_context: *mut c_void,
    pub(crate) channel: *mut IbvCompChannel,
    pub(crate) comp_vector: u32,
    /// `IBV_WC_EX_WITH_*`: what the `read_*` calls may ask for.
    pub(crate) wc_flags: u64,
    /// `IBV_CQ_INIT_ATTR_MASK_FLAGS` (1), `IBV_CQ_INIT_ATTR_MASK_PD` (2).
    pub(crate) comp_mask: u32,
    /// `IBV_CREATE_CQ_ATTR_SINGLE_THREADED` (1), `IGNORE_OVERRUN` (2).
    pub(crate) flags: u32,
    pub(crate) parent_domain: *mut IbvPd,
}

/// `struct ibv_poll_cq_attr` (`ibv_start_poll`).
#[repr(C)]
pub(crate) struct IbvPollCqAttr {
    pub(crate) comp_mask: u32,
}

/// `struct ibv_srq`.
#[repr(C)]
pub(crate) struct IbvSrq {
    pub(crate) context: *mut IbvContext,
    pub(crate) srq_context: *mut c_void,
    pub(crate) pd: *mut IbvPd,
    pub(crate) handle: u32,
    pub(crate) mutex: libc::pthread_mutex_t,
    pub(crate) cond: libc::pthread_cond_t,
    pub(crate) events_completed: u32,
}

/// `struct ibv_qp`.
#[repr(C)]
pub(crate) struct IbvQp {
    pub(crate) context: *mut IbvContext,
    pub(crate) qp_context: *mut c_void,
    pub(crate) pd: *mut IbvPd,
    pub(crate) send_cq: *mut IbvCq,
    pub(crate) recv_cq: *mut IbvCq,
    pub(crate) srq: *mut IbvSrq,
    pub(crate) handle: u32,
    pub(crate) qp_num: u32,
    /// `enum ibv_qp_state`
    pub(crate) state: c_int,
    /// `enum ibv_qp_type`
    pub(crate) qp_type: c_int,
    pub(crate) mutex: libc::pthread_mutex_t,
    pub(crate) cond: libc::pthread_cond_t,
    pub(crate) events_completed: u32,
}

/// `struct ibv_qp_ex`: `struct ibv_qp` (`qp_base`), then the work-request
/// builder API (filled by `ibv_create_qp_ex`/`ibv_qp_to_qp_ex`; a plain QP
/// leaves it NULL).
#[repr(C)]
pub(crate) struct IbvQpEx {
    pub(crate) qp_base: IbvQp,
    pub(crate) comp_mask: u64,
    pub(crate) wr_id: u64,
    pub(crate) wr_flags: c_uint,
    pub(crate) wr_atomic_cmp_swp: AnyFn,
    pub(crate) wr_atomic_fetch_add: AnyFn,
    pub(crate) wr_bind_mw: AnyFn,
    pub(crate) wr_local_inv: AnyFn,
    pub(crate) wr_rdma_read: AnyFn,
    pub(crate) wr_rdma_write: AnyFn,
    pub(crate) wr_rdma_write_imm: AnyFn,
    pub(crate) wr_send: AnyFn,
    pub(crate) wr_send_imm: AnyFn,
    pub(crate) wr_send_inv: AnyFn,
    pub(crate) wr_send_tso: AnyFn,
    pub(crate) wr_set_ud_addr: AnyFn,
    pub(crate) wr_set_xrc_srqn: AnyFn,
    pub(crate) wr_set_inline_data: AnyFn,
    pub(crate) wr_set_inline_data_list: AnyFn,
    pub(crate) wr_set_sge: AnyFn,
    pub(crate) wr_set_sge_list: AnyFn,
    pub(crate) wr_start: AnyFn,
    pub(crate) wr_complete: AnyFn,
    pub(crate) wr_abort: AnyFn,
    pub(crate) wr_atomic_write: AnyFn,
}

/// `struct ibv_ah`.
#[repr(C)]
pub(crate) struct IbvAh {
    pub(crate) context: *mut IbvContext,
    pub(crate) pd: *mut IbvPd,
    pub(crate) handle: u32,
}

/// `struct ibv_global_route`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvGlobalRoute {
    pub(crate) dgid: IbvGid,
    pub(crate) flow_label: u32,
    pub(crate) sgid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
}

/// `struct ibv_ah_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvAhAttr {
    pub(crate) grh: IbvGlobalRoute,
    pub(crate) dlid: u16,
    pub(crate) sl: u8,
    pub(crate) src_path_bits: u8,
    pub(crate) static_rate: u8,
    pub(crate) is_global: u8,
    pub(crate) port_num: u8,
}

/// `struct ibv_qp_cap`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvQpCap {
    pub(crate) max_send_wr: u32,
    pub(crate) max_recv_wr: u32,
    pub(crate) max_send_sge: u32,
    pub(crate) max_recv_sge: u32,
    pub(crate) max_inline_data: u32,
}

/// `struct ibv_qp_init_attr`.
#[repr(C)]
pub(crate) struct IbvQpInitAttr {
    pub(crate) qp_context: *mut c_void,
    pub(crate) send_cq: *mut IbvCq,
    pub(crate) recv_cq: *mut IbvCq,
    pub(crate) srq: *mut IbvSrq,
    pub(crate) cap: IbvQpCap,
    /// `enum ibv_qp_type`
    pub(crate) qp_type: c_int,
    pub(crate) sq_sig_all: c_int,
}

/// `struct ibv_rx_hash_conf` (inside [`IbvQpInitAttrEx`]).
#[repr(C)]
pub(crate) struct IbvRxHashConf {
    pub(crate) rx_hash_function: u8,
    pub(crate) rx_hash_key_len: u8,
    pub(crate) rx_hash_key: *mut u8,
    pub(crate) rx_hash_fields_mask: u64,
}

/// `struct ibv_qp_init_attr_ex` (`ibv_create_qp_ex`): `struct
/// ibv_qp_init_attr`'s fields first, as verbs.h relies on.
#[repr(C)]
pub(crate) struct IbvQpInitAttrEx {
    pub(crate) qp_context: *mut c_void,
    pub(crate) send_cq: *mut IbvCq,
    pub(crate) recv_cq: *mut IbvCq,
    pub(crate) srq: *mut IbvSrq,
    pub(crate) cap: IbvQpCap,
    pub(crate) qp_type: c_int,
    pub(crate) sq_sig_all: c_int,
    /// `IBV_QP_INIT_ATTR_*`
    pub(crate) comp_mask: u32,
    pub(crate) pd: *mut IbvPd,
    pub(crate) xrcd: *mut c_void,
    pub(crate) create_flags: u32,
    pub(crate) max_tso_header: u16,
    pub(crate) rwq_ind_tbl: *mut c_void,
    pub(crate) rx_hash_conf: IbvRxHashConf,
    pub(crate) source_qpn: u32,
    pub(crate) send_ops_flags: u64,
}

/// `struct ibv_qp_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvQpAttr {
    /// `enum ibv_qp_state`
    pub(crate) qp_state: c_int,
    pub(crate) cur_qp_state: c_int,
    /// `enum ibv_mtu`
    pub(crate) path_mtu: c_int,
    /// `enum ibv_mig_state`
    pub(crate) path_mig_state: c_int,
    pub(crate) qkey: u32,
    pub(crate) rq_psn: u32,
    pub(crate) sq_psn: u32,
    pub(crate) dest_qp_num: u32,
    pub(crate) qp_access_flags: c_uint,
    pub(crate) cap: IbvQpCap,
    pub(crate) ah_attr: IbvAhAttr,
    pub(crate) alt_ah_attr: IbvAhAttr,
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
    pub(crate) rate_limit: u32,
}

/// `struct ibv_srq_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvSrqAttr {
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) srq_limit: u32,
}

/// The `element` union of `struct ibv_async_event`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union IbvAsyncElement {
    pub(crate) cq: *mut IbvCq,
    pub(crate) qp: *mut IbvQp,
    pub(crate) srq: *mut IbvSrq,
    pub(crate) wq: *mut c_void,
    pub(crate) port_num: c_int,
}

/// `struct ibv_async_event`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvAsyncEvent {
    pub(crate) element: IbvAsyncElement,
    /// `enum ibv_event_type`
    pub(crate) event_type: c_int,
}
