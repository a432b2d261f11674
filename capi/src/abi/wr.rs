//! `<infiniband/verbs.h>` data-path structs: `ibv_sge`, `ibv_send_wr`,
//! `ibv_recv_wr`, `ibv_wc`, `ibv_mw_bind`.
//!
//! C's anonymous unions of two 32-bit fields (`imm_data` /
//! `invalidate_rkey`) are a single `u32` named after the first member.

use core::ffi::{c_int, c_uint, c_void};

use super::objects::{IbvAh, IbvMr, IbvMw};

/// `struct ibv_sge`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvSge {
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

/// `wr.rdma` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvRdmaWr {
    pub(crate) remote_addr: u64,
    pub(crate) rkey: u32,
}

/// `wr.atomic` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvAtomicWr {
    pub(crate) remote_addr: u64,
    pub(crate) compare_add: u64,
    pub(crate) swap: u64,
    pub(crate) rkey: u32,
}

/// `wr.ud` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvUdWr {
    pub(crate) ah: *mut IbvAh,
    pub(crate) remote_qpn: u32,
    pub(crate) remote_qkey: u32,
}

/// The `wr` union of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union IbvSendWrWr {
    pub(crate) rdma: IbvRdmaWr,
    pub(crate) atomic: IbvAtomicWr,
    pub(crate) ud: IbvUdWr,
}

/// `qp_type.xrc` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvXrcWr {
    pub(crate) remote_srqn: u32,
}

/// `struct ibv_mw_bind_info`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvMwBindInfo {
    pub(crate) mr: *mut IbvMr,
    pub(crate) addr: u64,
    pub(crate) length: u64,
    pub(crate) mw_access_flags: c_uint,
}

/// `bind_mw` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvBindMwWr {
    pub(crate) mw: *mut IbvMw,
    pub(crate) rkey: u32,
    pub(crate) bind_info: IbvMwBindInfo,
}

/// `tso` of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct IbvTsoWr {
    pub(crate) hdr: *mut c_void,
    pub(crate) hdr_sz: u16,
    pub(crate) mss: u16,
}

/// The anonymous `bind_mw` / `tso` union at the end of `struct ibv_send_wr`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union IbvSendWrExt {
    pub(crate) bind_mw: IbvBindMwWr,
    pub(crate) tso: IbvTsoWr,
}

/// `struct ibv_send_wr`.
#[repr(C)]
pub(crate) struct IbvSendWr {
    pub(crate) wr_id: u64,
    pub(crate) next: *mut IbvSendWr,
    pub(crate) sg_list: *mut IbvSge,
    pub(crate) num_sge: c_int,
    /// `enum ibv_wr_opcode`
    pub(crate) opcode: c_int,
    pub(crate) send_flags: c_uint,
    /// `imm_data` (big-endian) or `invalidate_rkey`.
    pub(crate) imm_data: u32,
    pub(crate) wr: IbvSendWrWr,
    /// `union { struct { uint32_t remote_srqn; } xrc; } qp_type`
    pub(crate) qp_type: IbvXrcWr,
    /// The anonymous union: C names its members `bind_mw` and `tso`.
    pub(crate) bind_mw: IbvSendWrExt,
}

/// `struct ibv_recv_wr`.
#[repr(C)]
pub(crate) struct IbvRecvWr {
    pub(crate) wr_id: u64,
    pub(crate) next: *mut IbvRecvWr,
    pub(crate) sg_list: *mut IbvSge,
    pub(crate) num_sge: c_int,
}

/// `struct ibv_mw_bind` (`ibv_bind_mw`'s argument).
#[repr(C)]
pub(crate) struct IbvMwBind {
    pub(crate) wr_id: u64,
    pub(crate) send_flags: c_uint,
    pub(crate) bind_info: IbvMwBindInfo,
}

/// `struct ibv_wc`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct IbvWc {
    pub(crate) wr_id: u64,
    /// `enum ibv_wc_status`
    pub(crate) status: c_int,
    /// `enum ibv_wc_opcode`
    pub(crate) opcode: c_int,
    pub(crate) vendor_err: u32,
    pub(crate) byte_len: u32,
    /// `imm_data` (big-endian) or `invalidated_rkey`.
    pub(crate) imm_data: u32,
    pub(crate) qp_num: u32,
    pub(crate) src_qp: u32,
    pub(crate) wc_flags: c_uint,
    pub(crate) pkey_index: u16,
    pub(crate) slid: u16,
    pub(crate) sl: u8,
    pub(crate) dlid_path_bits: u8,
}
