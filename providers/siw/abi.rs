//! `<rdma/siw-abi.h>`: the siw (SoftiWARP) driver's user ABI — the driver
//! data of its commands and the send/receive/completion queue elements it
//! shares with user space through `mmap`.
//!
//! siw queues are plain arrays of [`SiwSqe`] / [`SiwRqe`] / [`SiwCqe`]
//! (a CQ mapping ends with a [`SiwCqCtrl`]); ownership of an element is
//! handed over by its `flags` field ([`SIW_WQE_VALID`]), which the
//! provider must access atomically.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use crate::abi::{abi_struct, c_consts};

/// `SIW_NODE_DESC_COMMON`: the node description siw devices report.
pub const SIW_NODE_DESC_COMMON: &str = "Software iWARP stack";

c_consts! {
    /// siw's `#define`d limits with their C names.
    LIMIT_IDS: u32, prefix "";
    /// The siw uverbs ABI version (sysfs `abi_version`).
    SIW_ABI_VERSION = 1;
    /// Maximum SGEs per work request.
    SIW_MAX_SGE = 6;
    /// Largest valid mmap key.
    SIW_UOBJ_MAX_KEY = 0x08_ffff;
    /// Key value meaning "not mappable".
    SIW_INVAL_UOBJ_KEY = SIW_UOBJ_MAX_KEY + 1;
    /// Maximum inline data: the space of `sge[1..]` (`sizeof(struct siw_sge) * (SIW_MAX_SGE - 1)`).
    SIW_MAX_INLINE = (size_of::<SiwSge>() as u32) * (SIW_MAX_SGE - 1);
}

c_consts! {
    /// `enum siw_opcode` ([`SiwSqe::opcode`], [`SiwCqe::opcode`]).
    OPCODE_IDS: u8, prefix "";
    SIW_OP_WRITE = 0;
    SIW_OP_READ = 1;
    SIW_OP_READ_LOCAL_INV = 2;
    SIW_OP_SEND = 3;
    SIW_OP_SEND_WITH_IMM = 4;
    SIW_OP_SEND_REMOTE_INV = 5;
    /// Not supported by siw.
    SIW_OP_FETCH_AND_ADD = 6;
    /// Not supported by siw.
    SIW_OP_COMP_AND_SWAP = 7;
    SIW_OP_RECEIVE = 8;
    /// Provider-internal SQE.
    SIW_OP_READ_RESPONSE = 9;
    /// In-kernel clients only.
    SIW_OP_INVAL_STAG = 10;
    /// In-kernel clients only.
    SIW_OP_REG_MR = 11;
    /// Number of opcodes.
    SIW_NUM_OPCODES = 12;
}

c_consts! {
    /// `enum siw_wqe_flags` ([`SiwSqe::flags`], [`SiwRqe::flags`]).
    WQE_FLAG_IDS: u16, prefix "";
    /// The element is owned by the kernel (posted) / holds a valid completion.
    SIW_WQE_VALID = 1;
    SIW_WQE_INLINE = 1 << 1;
    SIW_WQE_SIGNALLED = 1 << 2;
    SIW_WQE_SOLICITED = 1 << 3;
    SIW_WQE_READ_FENCE = 1 << 4;
    SIW_WQE_REM_INVAL = 1 << 5;
    SIW_WQE_COMPLETED = 1 << 6;
}

c_consts! {
    /// `enum siw_notify_flags` ([`SiwCqCtrl::flags`]).
    NOTIFY_IDS: u32, prefix "";
    SIW_NOTIFY_NOT = 0;
    SIW_NOTIFY_SOLICITED = 1 << 0;
    SIW_NOTIFY_NEXT_COMPLETION = 1 << 1;
    SIW_NOTIFY_MISSED_EVENTS = 1 << 2;
    SIW_NOTIFY_ALL = SIW_NOTIFY_SOLICITED | SIW_NOTIFY_NEXT_COMPLETION | SIW_NOTIFY_MISSED_EVENTS;
}

c_consts! {
    /// `enum siw_wc_status` ([`SiwCqe::status`]).
    WC_STATUS_IDS: u16, prefix "";
    SIW_WC_SUCCESS = 0;
    SIW_WC_LOC_LEN_ERR = 1;
    SIW_WC_LOC_PROT_ERR = 2;
    SIW_WC_LOC_QP_OP_ERR = 3;
    SIW_WC_WR_FLUSH_ERR = 4;
    SIW_WC_BAD_RESP_ERR = 5;
    SIW_WC_LOC_ACCESS_ERR = 6;
    SIW_WC_REM_ACCESS_ERR = 7;
    SIW_WC_REM_INV_REQ_ERR = 8;
    SIW_WC_GENERAL_ERR = 9;
    /// Number of status values.
    SIW_NUM_WC_STATUS = 10;
}

abi_struct! {
    /// `struct siw_uresp_create_cq`: driver response of create CQ.
    #[repr(C, align(8))]
    pub struct SiwUrespCreateCq {
        /// CQ id.
        pub cq_id: u32,
        /// Number of CQEs in the mapping.
        pub num_cqe: u32,
        /// mmap key (offset) of the CQ, or [`SIW_INVAL_UOBJ_KEY`].
        pub cq_key: u64,
    }
}
const_assert_eq!(size_of::<SiwUrespCreateCq>(), 16);

abi_struct! {
    /// `struct siw_uresp_create_qp`: driver response of create QP.
    #[repr(C, align(8))]
    pub struct SiwUrespCreateQp {
        /// QP id.
        pub qp_id: u32,
        /// Number of SQEs.
        pub num_sqe: u32,
        /// Number of RQEs (0 with an SRQ).
        pub num_rqe: u32,
        /// Padding.
        pub pad: u32,
        /// mmap key of the send queue.
        pub sq_key: u64,
        /// mmap key of the receive queue.
        pub rq_key: u64,
    }
}
const_assert_eq!(size_of::<SiwUrespCreateQp>(), 32);
const_assert_eq!(offset_of!(SiwUrespCreateQp, sq_key), 16);

abi_struct! {
    /// `struct siw_ureq_reg_mr`: driver data of register MR.
    #[repr(C)]
    pub struct SiwUreqRegMr {
        /// Key byte of the STag chosen by user space.
        pub stag_key: u8,
        /// Reserved.
        pub reserved: [u8; 3],
        /// Padding.
        pub pad: u32,
    }
}
const_assert_eq!(size_of::<SiwUreqRegMr>(), 8);

abi_struct! {
    /// `struct siw_uresp_reg_mr`: driver response of register MR.
    #[repr(C)]
    pub struct SiwUrespRegMr {
        /// The STag.
        pub stag: u32,
        /// Padding.
        pub pad: u32,
    }
}
const_assert_eq!(size_of::<SiwUrespRegMr>(), 8);

abi_struct! {
    /// `struct siw_uresp_create_srq`: driver response of create SRQ.
    #[repr(C, align(8))]
    pub struct SiwUrespCreateSrq {
        /// Number of RQEs.
        pub num_rqe: u32,
        /// Padding.
        pub pad: u32,
        /// mmap key of the SRQ.
        pub srq_key: u64,
    }
}
const_assert_eq!(size_of::<SiwUrespCreateSrq>(), 16);

abi_struct! {
    /// `struct siw_uresp_alloc_ctx`: driver response of get context.
    #[repr(C)]
    pub struct SiwUrespAllocCtx {
        /// Device id.
        pub dev_id: u32,
        /// Padding.
        pub pad: u32,
    }
}
const_assert_eq!(size_of::<SiwUrespAllocCtx>(), 8);

abi_struct! {
    /// `struct siw_sge` (same layout as `struct ibv_sge`).
    #[repr(C, align(8))]
    pub struct SiwSge {
        /// Local address.
        pub laddr: u64,
        /// Length in bytes.
        pub length: u32,
        /// Local key.
        pub lkey: u32,
    }
}
const_assert_eq!(size_of::<SiwSge>(), 16);

abi_struct! {
    /// `struct siw_sqe`: a send queue element.
    ///
    /// `raddr` is the `raddr` / `base_mr` union; `sge` is the
    /// `sge[SIW_MAX_SGE]` / `access` union (see [`SiwSqe::access`]). Inline
    /// data occupies `sge[1..]`.
    #[repr(C, align(8))]
    pub struct SiwSqe {
        /// Caller's id, returned in the completion.
        pub id: u64,
        /// `SIW_WQE_*` flags; [`SIW_WQE_VALID`] passes ownership to the kernel.
        pub flags: u16,
        /// Number of SGEs (or inline length if [`SIW_WQE_INLINE`]).
        pub num_sge: u8,
        /// `SIW_OP_*`.
        pub opcode: u8,
        /// Remote key.
        pub rkey: u32,
        /// Remote address (`raddr`), or `base_mr` for in-kernel REG_MR.
        pub raddr: u64,
        /// Scatter/gather list (or inline data from `sge[1]` on).
        pub sge: [SiwSge; 6],
    }
}
const_assert_eq!(size_of::<SiwSqe>(), 120);
const_assert_eq!(offset_of!(SiwSqe, flags), 8);
const_assert_eq!(offset_of!(SiwSqe, opcode), 11);
const_assert_eq!(offset_of!(SiwSqe, rkey), 12);
const_assert_eq!(offset_of!(SiwSqe, raddr), 16);
const_assert_eq!(offset_of!(SiwSqe, sge), 24);
const_assert_eq!(SIW_MAX_SGE, 6);

impl SiwSqe {
    /// The `base_mr` member of the `raddr` union.
    pub const fn base_mr(&self) -> u64 {
        self.raddr
    }

    /// The `access` member of the `sge` union (first 8 bytes of `sge[0]`).
    pub const fn access(&self) -> u64 {
        self.sge[0].laddr
    }
}

abi_struct! {
    /// `struct siw_rqe`: a receive queue element.
    #[repr(C, align(8))]
    pub struct SiwRqe {
        /// Caller's id, returned in the completion.
        pub id: u64,
        /// `SIW_WQE_*` flags; [`SIW_WQE_VALID`] passes ownership to the kernel.
        pub flags: u16,
        /// Number of SGEs.
        pub num_sge: u8,
        /// Used by the kernel only; ignored if set by user space.
        pub opcode: u8,
        /// Unused.
        pub unused: u32,
        /// Scatter/gather list.
        pub sge: [SiwSge; 6],
    }
}
const_assert_eq!(size_of::<SiwRqe>(), 112);
const_assert_eq!(offset_of!(SiwRqe, sge), 16);

abi_struct! {
    /// `struct siw_cqe`: a completion queue element.
    ///
    /// `imm_data` is the `imm_data` / `inval_stag` union (see
    /// [`SiwCqe::inval_stag`]); `qp_id` is the `base_qp` (kernel pointer) /
    /// `qp_id` union.
    #[repr(C, align(8))]
    pub struct SiwCqe {
        /// The WR's id.
        pub id: u64,
        /// `SIW_WQE_*` flags; [`SIW_WQE_VALID`] marks a valid completion.
        pub flags: u8,
        /// `SIW_OP_*` of the completed WR.
        pub opcode: u8,
        /// `SIW_WC_*` status.
        pub status: u16,
        /// Bytes transferred.
        pub bytes: u32,
        /// Immediate data (or `inval_stag` in the low 32 bits).
        pub imm_data: u64,
        /// QP number of the completed WR.
        pub qp_id: u64,
    }
}
const_assert_eq!(size_of::<SiwCqe>(), 32);
const_assert_eq!(offset_of!(SiwCqe, status), 10);
const_assert_eq!(offset_of!(SiwCqe, imm_data), 16);
const_assert_eq!(offset_of!(SiwCqe, qp_id), 24);

impl SiwCqe {
    /// The `inval_stag` member of the `imm_data` union (its first 4 bytes).
    pub fn inval_stag(&self) -> u32 {
        let b = self.imm_data.to_ne_bytes();
        u32::from_ne_bytes([b[0], b[1], b[2], b[3]])
    }
}

abi_struct! {
    /// `struct siw_cq_ctrl`: the CQ arming word shared with the kernel,
    /// placed right after the CQEs in the CQ mapping.
    #[repr(C)]
    pub struct SiwCqCtrl {
        /// `SIW_NOTIFY_*` flags.
        pub flags: u32,
        /// Padding.
        pub pad: u32,
    }
}
const_assert_eq!(size_of::<SiwCqCtrl>(), 8);

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    #[test]
    fn union_accessors_read_the_shared_bytes() {
        let mut cqe = SiwCqe::default();
        cqe.as_mut_bytes()[16..20].copy_from_slice(&0x1234_5678u32.to_ne_bytes());
        assert_eq!(cqe.inval_stag(), 0x1234_5678);
        let mut sqe = SiwSqe::default();
        sqe.as_mut_bytes()[24..32].copy_from_slice(&7u64.to_ne_bytes());
        assert_eq!(sqe.access(), 7);
        assert_eq!(SIW_MAX_INLINE, 80);
    }
}
