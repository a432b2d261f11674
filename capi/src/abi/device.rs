//! `<infiniband/verbs.h>` device-level structs: `ibv_device`, `ibv_context`
//! (with `ibv_context_ops` at offset 8), `verbs_context`, `ibv_device_attr`,
//! `ibv_port_attr`, `ibv_gid_entry`.
//!
//! Transcribed field by field from rdma-core 44's header; `src/layout_test.rs`
//! compiles a C program against the installed header and compares every size,
//! alignment and offset.

use core::ffi::{c_char, c_int, c_uint, c_void};

use super::objects::{IbvCq, IbvMw, IbvPd, IbvQp, IbvSrq};
use super::wr::{IbvMwBind, IbvRecvWr, IbvSendWr, IbvWc};

/// A function pointer slot whose signature does not matter here (never set by
/// us, or set only to NULL): same size and alignment as any C function pointer.
pub(crate) type AnyFn = Option<unsafe extern "C" fn()>;

/// `IBV_SYSFS_NAME_MAX`
pub(crate) const SYSFS_NAME_MAX: usize = 64;
/// `IBV_SYSFS_PATH_MAX`
pub(crate) const SYSFS_PATH_MAX: usize = 256;

/// `struct _ibv_device_ops` (obsolete, always NULL).
#[repr(C)]
pub(crate) struct IbvDeviceOps {
    pub(crate) _dummy1: AnyFn,
    pub(crate) _dummy2: AnyFn,
}

/// `struct ibv_device`.
#[repr(C)]
pub(crate) struct IbvDevice {
    pub(crate) _ops: IbvDeviceOps,
    /// `enum ibv_node_type`
    pub(crate) node_type: c_int,
    /// `enum ibv_transport_type`
    pub(crate) transport_type: c_int,
    pub(crate) name: [c_char; SYSFS_NAME_MAX],
    pub(crate) dev_name: [c_char; SYSFS_NAME_MAX],
    pub(crate) dev_path: [c_char; SYSFS_PATH_MAX],
    pub(crate) ibdev_path: [c_char; SYSFS_PATH_MAX],
}

/// `post_send` / `post_recv` style entry of `ibv_context_ops`.
pub(crate) type PostSendFn =
    unsafe extern "C" fn(qp: *mut IbvQp, wr: *mut IbvSendWr, bad: *mut *mut IbvSendWr) -> c_int;
pub(crate) type PostRecvFn =
    unsafe extern "C" fn(qp: *mut IbvQp, wr: *mut IbvRecvWr, bad: *mut *mut IbvRecvWr) -> c_int;
pub(crate) type PostSrqRecvFn =
    unsafe extern "C" fn(srq: *mut IbvSrq, wr: *mut IbvRecvWr, bad: *mut *mut IbvRecvWr) -> c_int;
pub(crate) type PollCqFn = unsafe extern "C" fn(cq: *mut IbvCq, n: c_int, wc: *mut IbvWc) -> c_int;
pub(crate) type ReqNotifyFn = unsafe extern "C" fn(cq: *mut IbvCq, solicited_only: c_int) -> c_int;
pub(crate) type AllocMwFn = unsafe extern "C" fn(pd: *mut IbvPd, ty: c_int) -> *mut IbvMw;
pub(crate) type BindMwFn =
    unsafe extern "C" fn(qp: *mut IbvQp, mw: *mut IbvMw, bind: *mut IbvMwBind) -> c_int;
pub(crate) type DeallocMwFn = unsafe extern "C" fn(mw: *mut IbvMw) -> c_int;

/// `struct ibv_context_ops`: the data-path entries the `static inline`
/// functions of verbs.h call (`ibv_post_send`, `ibv_poll_cq`, …) and the
/// obsolete `_compat_*` slots.
#[repr(C)]
pub(crate) struct IbvContextOps {
    pub(crate) _compat_query_device: AnyFn,
    pub(crate) _compat_query_port: AnyFn,
    pub(crate) _compat_alloc_pd: AnyFn,
    pub(crate) _compat_dealloc_pd: AnyFn,
    pub(crate) _compat_reg_mr: AnyFn,
    pub(crate) _compat_rereg_mr: AnyFn,
    pub(crate) _compat_dereg_mr: AnyFn,
    pub(crate) alloc_mw: Option<AllocMwFn>,
    pub(crate) bind_mw: Option<BindMwFn>,
    pub(crate) dealloc_mw: Option<DeallocMwFn>,
    pub(crate) _compat_create_cq: AnyFn,
    pub(crate) poll_cq: Option<PollCqFn>,
    pub(crate) req_notify_cq: Option<ReqNotifyFn>,
    pub(crate) _compat_cq_event: AnyFn,
    pub(crate) _compat_resize_cq: AnyFn,
    pub(crate) _compat_destroy_cq: AnyFn,
    pub(crate) _compat_create_srq: AnyFn,
    pub(crate) _compat_modify_srq: AnyFn,
    pub(crate) _compat_query_srq: AnyFn,
    pub(crate) _compat_destroy_srq: AnyFn,
    pub(crate) post_srq_recv: Option<PostSrqRecvFn>,
    pub(crate) _compat_create_qp: AnyFn,
    pub(crate) _compat_query_qp: AnyFn,
    pub(crate) _compat_modify_qp: AnyFn,
    pub(crate) _compat_destroy_qp: AnyFn,
    pub(crate) post_send: Option<PostSendFn>,
    pub(crate) post_recv: Option<PostRecvFn>,
    pub(crate) _compat_create_ah: AnyFn,
    pub(crate) _compat_destroy_ah: AnyFn,
    pub(crate) _compat_attach_mcast: AnyFn,
    pub(crate) _compat_detach_mcast: AnyFn,
    pub(crate) _compat_async_event: AnyFn,
}

/// `struct ibv_context`.
#[repr(C)]
pub(crate) struct IbvContext {
    pub(crate) device: *mut IbvDevice,
    pub(crate) ops: IbvContextOps,
    pub(crate) cmd_fd: c_int,
    pub(crate) async_fd: c_int,
    pub(crate) num_comp_vectors: c_int,
    pub(crate) mutex: libc::pthread_mutex_t,
    /// `__VERBS_ABI_IS_EXTENDED` (`UINTPTR_MAX`) marks a `verbs_context`.
    pub(crate) abi_compat: *mut c_void,
}

/// `verbs_context.query_port`: what the `ibv_query_port` inline calls.
pub(crate) type QueryPortFn = unsafe extern "C" fn(
    ctx: *mut IbvContext,
    port: u8,
    attr: *mut IbvPortAttr,
    attr_len: usize,
) -> c_int;

/// `verbs_context.query_device_ex`: what the `ibv_query_device_ex` inline calls.
pub(crate) type QueryDeviceExFn = unsafe extern "C" fn(
    ctx: *mut IbvContext,
    input: *const super::device_ex::IbvQueryDeviceExInput,
    attr: *mut super::device_ex::IbvDeviceAttrEx,
    attr_size: usize,
) -> c_int;

/// `struct verbs_context`: the extended-verbs table that sits right before
/// `ibv_context` (`context` is its last field).
#[repr(C)]
pub(crate) struct VerbsContext {
    pub(crate) query_port: Option<QueryPortFn>,
    pub(crate) advise_mr: AnyFn,
    pub(crate) alloc_null_mr: AnyFn,
    pub(crate) read_counters: AnyFn,
    pub(crate) attach_counters_point_flow: AnyFn,
    pub(crate) create_counters: AnyFn,
    pub(crate) destroy_counters: AnyFn,
    pub(crate) reg_dm_mr: AnyFn,
    pub(crate) alloc_dm: AnyFn,
    pub(crate) free_dm: AnyFn,
    pub(crate) modify_flow_action_esp: AnyFn,
    pub(crate) destroy_flow_action: AnyFn,
    pub(crate) create_flow_action_esp: AnyFn,
    pub(crate) modify_qp_rate_limit: AnyFn,
    pub(crate) alloc_parent_domain: AnyFn,
    pub(crate) dealloc_td: AnyFn,
    pub(crate) alloc_td: AnyFn,
    pub(crate) modify_cq: AnyFn,
    pub(crate) post_srq_ops: AnyFn,
    pub(crate) destroy_rwq_ind_table: AnyFn,
    pub(crate) create_rwq_ind_table: AnyFn,
    pub(crate) destroy_wq: AnyFn,
    pub(crate) modify_wq: AnyFn,
    pub(crate) create_wq: AnyFn,
    pub(crate) query_rt_values: AnyFn,
    pub(crate) create_cq_ex: AnyFn,
    pub(crate) priv_: *mut c_void,
    pub(crate) query_device_ex: Option<QueryDeviceExFn>,
    pub(crate) ibv_destroy_flow: AnyFn,
    pub(crate) abi_placeholder2: AnyFn,
    pub(crate) ibv_create_flow: AnyFn,
    pub(crate) abi_placeholder1: AnyFn,
    pub(crate) open_qp: AnyFn,
    pub(crate) create_qp_ex: AnyFn,
    pub(crate) get_srq_num: AnyFn,
    pub(crate) create_srq_ex: AnyFn,
    pub(crate) open_xrcd: AnyFn,
    pub(crate) close_xrcd: AnyFn,
    pub(crate) _abi_placeholder3: u64,
    /// `sizeof(struct verbs_context)`: the inline helpers test an op's
    /// presence against it.
    pub(crate) sz: usize,
    pub(crate) context: IbvContext,
}

/// `struct ibv_device_attr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvDeviceAttr {
    pub(crate) fw_ver: [c_char; 64],
    /// big-endian
    pub(crate) node_guid: u64,
    /// big-endian
    pub(crate) sys_image_guid: u64,
    pub(crate) max_mr_size: u64,
    pub(crate) page_size_cap: u64,
    pub(crate) vendor_id: u32,
    pub(crate) vendor_part_id: u32,
    pub(crate) hw_ver: u32,
    pub(crate) max_qp: c_int,
    pub(crate) max_qp_wr: c_int,
    pub(crate) device_cap_flags: c_uint,
    pub(crate) max_sge: c_int,
    pub(crate) max_sge_rd: c_int,
    pub(crate) max_cq: c_int,
    pub(crate) max_cqe: c_int,
    pub(crate) max_mr: c_int,
    pub(crate) max_pd: c_int,
    pub(crate) max_qp_rd_atom: c_int,
    pub(crate) max_ee_rd_atom: c_int,
    pub(crate) max_res_rd_atom: c_int,
    pub(crate) max_qp_init_rd_atom: c_int,
    pub(crate) max_ee_init_rd_atom: c_int,
    /// `enum ibv_atomic_cap`
    pub(crate) atomic_cap: c_int,
    pub(crate) max_ee: c_int,
    pub(crate) max_rdd: c_int,
    pub(crate) max_mw: c_int,
    pub(crate) max_raw_ipv6_qp: c_int,
    pub(crate) max_raw_ethy_qp: c_int,
    pub(crate) max_mcast_grp: c_int,
    pub(crate) max_mcast_qp_attach: c_int,
    pub(crate) max_total_mcast_qp_attach: c_int,
    pub(crate) max_ah: c_int,
    pub(crate) max_fmr: c_int,
    pub(crate) max_map_per_fmr: c_int,
    pub(crate) max_srq: c_int,
    pub(crate) max_srq_wr: c_int,
    pub(crate) max_srq_sge: c_int,
    pub(crate) max_pkeys: u16,
    pub(crate) local_ca_ack_delay: u8,
    pub(crate) phys_port_cnt: u8,
}

/// `struct ibv_port_attr`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvPortAttr {
    /// `enum ibv_port_state`
    pub(crate) state: c_int,
    /// `enum ibv_mtu`
    pub(crate) max_mtu: c_int,
    /// `enum ibv_mtu`
    pub(crate) active_mtu: c_int,
    pub(crate) gid_tbl_len: c_int,
    pub(crate) port_cap_flags: u32,
    pub(crate) max_msg_sz: u32,
    pub(crate) bad_pkey_cntr: u32,
    pub(crate) qkey_viol_cntr: u32,
    pub(crate) pkey_tbl_len: u16,
    pub(crate) lid: u16,
    pub(crate) sm_lid: u16,
    pub(crate) lmc: u8,
    pub(crate) max_vl_num: u8,
    pub(crate) sm_sl: u8,
    pub(crate) subnet_timeout: u8,
    pub(crate) init_type_reply: u8,
    pub(crate) active_width: u8,
    pub(crate) active_speed: u8,
    pub(crate) phys_state: u8,
    pub(crate) link_layer: u8,
    pub(crate) flags: u8,
    pub(crate) port_cap_flags2: u16,
}

/// `struct ibv_gid_entry`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvGidEntry {
    /// `union ibv_gid`: 16 raw bytes (network order), 8-aligned.
    pub(crate) gid: IbvGid,
    pub(crate) gid_index: u32,
    pub(crate) port_num: u32,
    pub(crate) gid_type: u32,
    pub(crate) ndev_ifindex: u32,
}

/// `union ibv_gid`: `raw[16]` or two big-endian 64-bit halves.
#[repr(C, align(8))]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvGid {
    pub(crate) raw: [u8; 16],
}
