//! `<rdma/mlx5-abi.h>`: the driver data (`udata`) mlx5_ib reads after the
//! core part of a uverbs command and writes after the core response.
//!
//! Only what the provider sends or reads is transcribed: the context
//! (`alloc_ucontext` request v2 and response), PD, CQ (create, resize),
//! SRQ, QP (create, its response), AH (the RoCE destination MAC) and
//! `modify_qp`'s extended form. Every struct is checked field by field
//! against the installed header by `tests/abi_crosscheck.rs`; values the
//! provider chooses are in `mod.rs`'s design note, with their source.

use core::mem::size_of;
use static_assertions::const_assert_eq;

use crate::abi::{abi_struct, c_consts};

/// `MLX5_IB_UVERBS_ABI_VERSION`: the per-device uverbs ABI version
/// mlx5_ib reports (libmlx5 accepts exactly this one).
pub const MLX5_IB_UVERBS_ABI_VERSION: u32 = 1;

c_consts! {
    /// `enum mlx5_lib_caps` ([`Mlx5AllocUcontextReqV2::lib_caps`]).
    LIB_CAP_IDS: u64, prefix "MLX5_";
    LIB_CAP_4K_UAR = 1 << 0;
    LIB_CAP_DYN_UAR = 1 << 1;
}

c_consts! {
    /// `enum mlx5_ib_alloc_uctx_v2_flags` ([`Mlx5AllocUcontextReqV2::flags`]).
    UCTX_FLAG_IDS: u32, prefix "MLX5_";
    IB_ALLOC_UCTX_DEVX = 1 << 0;
}

c_consts! {
    /// `enum mlx5_user_cmds_supp_uhw` ([`Mlx5AllocUcontextResp::cmds_supp_uhw`]).
    SUPP_UHW_IDS: u8, prefix "MLX5_";
    USER_CMDS_SUPP_UHW_QUERY_DEVICE = 1 << 0;
    USER_CMDS_SUPP_UHW_CREATE_AH = 1 << 1;
}

c_consts! {
    /// The `MLX5_QP_FLAG_*` bits of [`Mlx5CreateQp::flags`].
    QP_FLAG_IDS: u32, prefix "MLX5_";
    QP_FLAG_SIGNATURE = 1 << 0;
    QP_FLAG_SCATTER_CQE = 1 << 1;
    QP_FLAG_BFREG_INDEX = 1 << 3;
    QP_FLAG_UAR_PAGE_INDEX = 1 << 10;
}

c_consts! {
    /// `MLX5_IB_CREATE_CQ_FLAGS_*` ([`Mlx5CreateCq::flags`]).
    CQ_FLAG_IDS: u16, prefix "MLX5_IB_";
    CREATE_CQ_FLAGS_CQE_128B_PAD = 1 << 0;
    CREATE_CQ_FLAGS_UAR_PAGE_INDEX = 1 << 1;
    CREATE_CQ_FLAGS_REAL_TIME_TS = 1 << 2;
}

c_consts! {
    /// `enum mlx5_ib_mmap_cmd`: the command in bits 8.. of an mmap page
    /// offset of the device file (`((cmd << 8) | index) * page_size`).
    MMAP_CMD_IDS: u32, prefix "MLX5_IB_";
    MMAP_REGULAR_PAGE = 0;
    MMAP_WC_PAGE = 2;
    MMAP_NC_PAGE = 3;
    MMAP_CORE_CLOCK = 5;
    MMAP_ALLOC_WC = 6;
    MMAP_CLOCK_INFO = 7;
}

c_consts! {
    /// `MLX5_SRQ_FLAG_SIGNATURE` ([`Mlx5CreateSrq::flags`]).
    SRQ_FLAG_IDS: u32, prefix "MLX5_";
    SRQ_FLAG_SIGNATURE = 1 << 0;
}

abi_struct! {
    /// `struct mlx5_ib_alloc_ucontext_req_v2`: how many BlueFlame
    /// registers the library wants and what it can do. libmlx5 sends 48
    /// bytes and retries with 40 and 32 (`offsetof(lib_caps)`) on older
    /// kernels.
    #[repr(C)]
    pub struct Mlx5AllocUcontextReqV2 {
        /// Total BlueFlame registers wanted (libmlx5: 16).
        pub total_num_bfregs: u32,
        /// Of those, dedicated low-latency ones (libmlx5: 4).
        pub num_low_latency_bfregs: u32,
        /// `MLX5_IB_ALLOC_UCTX_*`.
        pub flags: u32,
        /// Must be 0.
        pub comp_mask: u32,
        /// Highest CQE version the library parses (1).
        pub max_cqe_version: u8,
        /// Must be 0.
        pub reserved0: u8,
        /// Must be 0.
        pub reserved1: u16,
        /// Must be 0.
        pub reserved2: u32,
        /// `MLX5_LIB_CAP_*`.
        pub lib_caps: u64,
    }
}
const_assert_eq!(size_of::<Mlx5AllocUcontextReqV2>(), 32);

abi_struct! {
    /// `struct mlx5_ib_alloc_ucontext_resp`: the device limits and the
    /// UAR layout.
    #[repr(C)]
    pub struct Mlx5AllocUcontextResp {
        /// Size of the QP number table (power of two).
        pub qp_tab_size: u32,
        /// Bytes of one BlueFlame register (0: no write-combining, never BF).
        pub bf_reg_size: u32,
        /// Legacy UARs: BlueFlame registers mapped at context creation
        /// (0 when the kernel took `MLX5_LIB_CAP_DYN_UAR`).
        pub tot_bfregs: u32,
        /// Cache line size; doorbell records are spaced by it.
        pub cache_line_size: u32,
        /// Largest send WQE in bytes.
        pub max_sq_desc_sz: u16,
        /// Largest receive WQE in bytes.
        pub max_rq_desc_sz: u16,
        /// Largest send queue in 64-byte basic blocks.
        pub max_send_wqebb: u32,
        /// Largest receive queue in WQEs.
        pub max_recv_wr: u32,
        /// Largest SRQ in WQEs.
        pub max_srq_recv_wr: u32,
        /// Ports of the device.
        pub num_ports: u16,
        /// `MLX5_USER_ALLOC_UCONTEXT_FLOW_ACTION_FLAGS_*`.
        pub flow_action_flags: u16,
        /// `MLX5_IB_ALLOC_UCONTEXT_RESP_MASK_*`.
        pub comp_mask: u32,
        /// Bytes of this response the kernel filled.
        pub response_length: u32,
        /// CQE version in use (0 or 1).
        pub cqe_version: u8,
        /// `MLX5_USER_CMDS_SUPP_UHW_*`.
        pub cmds_supp_uhw: u8,
        /// Raw Ethernet minimum inline mode, off by one.
        pub eth_min_inline: u8,
        /// Bit 0: the clock info page (mmap command 7) exists.
        pub clock_info_versions: u8,
        /// Offset of the core clock in the UAR page.
        pub hca_core_clock_offset: u64,
        /// log2 of the UAR size (0 with `num_uars_per_page` 0: one page).
        pub log_uar_size: u32,
        /// UARs per system page.
        pub num_uars_per_page: u32,
        /// Dynamic BlueFlame registers available.
        pub num_dyn_bfregs: u32,
        /// The dump-fill mkey.
        pub dump_fill_mkey: u32,
    }
}
const_assert_eq!(size_of::<Mlx5AllocUcontextResp>(), 72);

abi_struct! {
    /// `struct mlx5_ib_alloc_pd_resp`.
    #[repr(C)]
    pub struct Mlx5AllocPdResp {
        /// The PD number the device uses in its contexts.
        pub pdn: u32,
    }
}

abi_struct! {
    /// `struct mlx5_ib_create_cq`: the CQ buffer and doorbell record
    /// user space allocated.
    #[repr(C)]
    pub struct Mlx5CreateCq {
        /// Address of the CQE buffer (page aligned).
        pub buf_addr: u64,
        /// Address of the doorbell record (two big-endian u32: consumer
        /// index, arm word).
        pub db_addr: u64,
        /// 64 or 128.
        pub cqe_size: u32,
        /// CQE compression (direct verbs only; 0).
        pub cqe_comp_en: u8,
        /// Compressed CQE format (0).
        pub cqe_comp_res_format: u8,
        /// `MLX5_IB_CREATE_CQ_FLAGS_*` (2: `uar_page_index` is valid).
        pub flags: u16,
        /// Page id of the UAR the CQ is armed through.
        pub uar_page_index: u16,
        /// Must be 0.
        pub reserved0: u16,
        /// Must be 0.
        pub reserved1: u32,
    }
}
const_assert_eq!(size_of::<Mlx5CreateCq>(), 32);

abi_struct! {
    /// `struct mlx5_ib_create_cq_resp`.
    #[repr(C)]
    pub struct Mlx5CreateCqResp {
        /// The CQ number (arm doorbell, CQE lookup).
        pub cqn: u32,
        /// Reserved.
        pub reserved: u32,
    }
}

abi_struct! {
    /// `struct mlx5_ib_resize_cq`: the new CQE buffer.
    #[repr(C)]
    pub struct Mlx5ResizeCq {
        /// Address of the new buffer.
        pub buf_addr: u64,
        /// 64 or 128.
        pub cqe_size: u16,
        /// Must be 0.
        pub reserved0: u16,
        /// Must be 0.
        pub reserved1: u32,
    }
}
const_assert_eq!(size_of::<Mlx5ResizeCq>(), 16);

abi_struct! {
    /// `struct mlx5_ib_create_srq`.
    #[repr(C)]
    pub struct Mlx5CreateSrq {
        /// Address of the WQE buffer.
        pub buf_addr: u64,
        /// Address of the doorbell record (one big-endian u32 counter).
        pub db_addr: u64,
        /// `MLX5_SRQ_FLAG_*`.
        pub flags: u32,
        /// Explicit padding.
        pub reserved0: u32,
        /// User index (CQE version 1), as for QPs.
        pub uidx: u32,
        /// Must be 0.
        pub reserved1: u32,
    }
}
const_assert_eq!(size_of::<Mlx5CreateSrq>(), 32);

abi_struct! {
    /// `struct mlx5_ib_create_srq_resp`.
    #[repr(C)]
    pub struct Mlx5CreateSrqResp {
        /// The SRQ number.
        pub srqn: u32,
        /// Reserved.
        pub reserved: u32,
    }
}

abi_struct! {
    /// `struct mlx5_ib_create_qp`: the QP buffer (RQ first, then SQ) and
    /// doorbell record user space allocated, and their geometry.
    #[repr(C)]
    pub struct Mlx5CreateQp {
        /// Address of the WQE buffer (page aligned).
        pub buf_addr: u64,
        /// Address of the doorbell record (receive counter, send counter).
        pub db_addr: u64,
        /// Send queue size in 64-byte basic blocks (power of two).
        pub sq_wqe_count: u32,
        /// Receive queue size in WQEs (power of two, or 0).
        pub rq_wqe_count: u32,
        /// log2 of the receive WQE stride.
        pub rq_wqe_shift: u32,
        /// `MLX5_QP_FLAG_*`.
        pub flags: u32,
        /// User index reported in CQEs (CQE version 1).
        pub uidx: u32,
        /// BlueFlame register (legacy) or UAR page id (dynamic UARs).
        pub bfreg_index: u32,
        /// Raw packet QPs only: separate SQ buffer (union with `access_key`).
        pub sq_buf_addr: u64,
        /// ECE options.
        pub ece_options: u32,
        /// DCI streams: `log_num_concurent`, `log_num_errored`.
        pub dci_streams: [u8; 2],
        /// Reserved.
        pub reserved: u16,
    }
}
const_assert_eq!(size_of::<Mlx5CreateQp>(), 56);

abi_struct! {
    /// `struct mlx5_ib_create_qp_resp`.
    #[repr(C)]
    pub struct Mlx5CreateQpResp {
        /// The BlueFlame register the kernel picked (legacy UARs).
        pub bfreg_index: u32,
        /// ECE options.
        pub ece_options: u32,
        /// `MLX5_IB_CREATE_QP_RESP_MASK_*`: which of the next are valid.
        pub comp_mask: u32,
        /// Raw packet QPs: TIR number.
        pub tirn: u32,
        /// Raw packet QPs: TIS number.
        pub tisn: u32,
        /// Raw packet QPs: RQ number.
        pub rqn: u32,
        /// Raw packet QPs: SQ number.
        pub sqn: u32,
        /// Reserved.
        pub reserved1: u32,
        /// TIR ICM address.
        pub tir_icm_addr: u64,
    }
}
const_assert_eq!(size_of::<Mlx5CreateQpResp>(), 40);

abi_struct! {
    /// `struct mlx5_ib_create_ah_resp`: the destination MAC the kernel
    /// resolved for a RoCE address (goes into the AV's `rmac`).
    #[repr(C)]
    pub struct Mlx5CreateAhResp {
        /// Bytes filled.
        pub response_length: u32,
        /// Destination MAC.
        pub dmac: [u8; 6],
        /// Reserved.
        pub reserved: [u8; 6],
    }
}
const_assert_eq!(size_of::<Mlx5CreateAhResp>(), 16);

abi_struct! {
    /// `struct mlx5_ib_burst_info` (rate limiting in `modify_qp`).
    #[repr(C)]
    pub struct Mlx5BurstInfo {
        /// Largest burst in bytes.
        pub max_burst_sz: u32,
        /// Typical packet size.
        pub typical_pkt_sz: u16,
        /// Reserved.
        pub reserved: u16,
    }
}

abi_struct! {
    /// `struct mlx5_ib_modify_qp`: the driver data of
    /// `IB_USER_VERBS_EX_CMD_MODIFY_QP` (libmlx5 sends it only for a rate
    /// limit or ECE; a plain transition carries no driver data).
    #[repr(C)]
    pub struct Mlx5ModifyQp {
        /// Which fields are valid.
        pub comp_mask: u32,
        /// Burst settings of the rate limit.
        pub burst_info: Mlx5BurstInfo,
        /// ECE options.
        pub ece_options: u32,
    }
}
const_assert_eq!(size_of::<Mlx5ModifyQp>(), 16);

abi_struct! {
    /// `struct mlx5_ib_modify_qp_resp`.
    #[repr(C)]
    pub struct Mlx5ModifyQpResp {
        /// Bytes filled.
        pub response_length: u32,
        /// DCT number.
        pub dctn: u32,
        /// ECE options in effect.
        pub ece_options: u32,
        /// Reserved.
        pub reserved: u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    #[test]
    fn ucontext_request_bytes_as_libmlx5_sends_them() {
        // The request MLX5.md §9 observed from libmlx5: 16 bfregs, 4 low
        // latency, DEVX, CQE version 1, 4K_UAR | DYN_UAR.
        let r = Mlx5AllocUcontextReqV2 {
            total_num_bfregs: 16,
            num_low_latency_bfregs: 4,
            flags: IB_ALLOC_UCTX_DEVX,
            max_cqe_version: 1,
            lib_caps: LIB_CAP_4K_UAR | LIB_CAP_DYN_UAR,
            ..Default::default()
        };
        let b = r.as_bytes();
        assert_eq!(&b[..12], &[16, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(b[16], 1);
        assert_eq!(&b[24..], &[3, 0, 0, 0, 0, 0, 0, 0]);
    }
}
