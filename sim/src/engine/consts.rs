//! Numbers of the mlx5 wire formats the engine reads and writes (PRM, as
//! rdma-core 44's `mlx5dv.h` / `wqe.h` spell them; see `../shared/MLX5.md`
//! sections 4 and 5).

/// Send WQE opcodes (low byte of the control segment's `opmod_idx_opcode`).
pub mod op {
    /// MLX5_OPCODE_NOP
    pub const NOP: u8 = 0x00;
    /// MLX5_OPCODE_SEND_INVAL
    pub const SEND_INVAL: u8 = 0x01;
    /// MLX5_OPCODE_RDMA_WRITE
    pub const RDMA_WRITE: u8 = 0x08;
    /// MLX5_OPCODE_RDMA_WRITE_IMM
    pub const RDMA_WRITE_IMM: u8 = 0x09;
    /// MLX5_OPCODE_SEND
    pub const SEND: u8 = 0x0a;
    /// MLX5_OPCODE_SEND_IMM
    pub const SEND_IMM: u8 = 0x0b;
    /// MLX5_OPCODE_RDMA_READ
    pub const RDMA_READ: u8 = 0x10;
    /// MLX5_OPCODE_ATOMIC_CS
    pub const ATOMIC_CS: u8 = 0x11;
    /// MLX5_OPCODE_ATOMIC_FA
    pub const ATOMIC_FA: u8 = 0x12;
    /// MLX5_OPCODE_LOCAL_INVAL
    pub const LOCAL_INVAL: u8 = 0x1b;
    /// MLX5_OPCODE_UMR (ibv BIND_MW and LOCAL_INV)
    pub const UMR: u8 = 0x25;
}

/// Control segment `fm_ce_se` bits.
pub mod ctrl {
    /// MLX5_WQE_CTRL_CQ_UPDATE: write a CQE for this WQE.
    pub const CQ_UPDATE: u8 = 0x08;
    /// MLX5_WQE_CTRL_SOLICITED
    pub const SOLICITED: u8 = 0x02;
    /// MLX5_WQE_CTRL_FENCE
    pub const FENCE: u8 = 0x80;
    /// MLX5_WQE_CTRL_INITIATOR_SMALL_FENCE
    pub const SMALL_FENCE: u8 = 0x20;
}

/// CQE opcodes (high nibble of `op_own`).
pub mod cqe_op {
    /// MLX5_CQE_REQ
    pub const REQ: u8 = 0;
    /// MLX5_CQE_RESP_WR_IMM
    pub const RESP_WR_IMM: u8 = 1;
    /// MLX5_CQE_RESP_SEND
    pub const RESP_SEND: u8 = 2;
    /// MLX5_CQE_RESP_SEND_IMM
    pub const RESP_SEND_IMM: u8 = 3;
    /// MLX5_CQE_RESP_SEND_INV
    pub const RESP_SEND_INV: u8 = 4;
    /// MLX5_CQE_REQ_ERR
    pub const REQ_ERR: u8 = 13;
    /// MLX5_CQE_RESP_ERR
    pub const RESP_ERR: u8 = 14;
}

/// Error CQE syndromes (`mlx5_err_cqe.syndrome`, byte 55).
pub mod syn {
    /// IBV_WC_LOC_LEN_ERR
    pub const LOC_LEN: u8 = 0x01;
    /// IBV_WC_LOC_QP_OP_ERR
    pub const LOC_QP_OP: u8 = 0x02;
    /// IBV_WC_LOC_PROT_ERR
    pub const LOC_PROT: u8 = 0x04;
    /// IBV_WC_WR_FLUSH_ERR
    pub const WR_FLUSH: u8 = 0x05;
    /// IBV_WC_MW_BIND_ERR
    pub const MW_BIND: u8 = 0x06;
    /// IBV_WC_BAD_RESP_ERR
    pub const BAD_RESP: u8 = 0x10;
    /// IBV_WC_LOC_ACCESS_ERR
    pub const LOC_ACCESS: u8 = 0x11;
    /// IBV_WC_REM_INV_REQ_ERR
    pub const REM_INV_REQ: u8 = 0x12;
    /// IBV_WC_REM_ACCESS_ERR
    pub const REM_ACCESS: u8 = 0x13;
    /// IBV_WC_REM_OP_ERR
    pub const REM_OP: u8 = 0x14;
    /// IBV_WC_RETRY_EXC_ERR
    pub const RETRY_EXC: u8 = 0x15;
    /// IBV_WC_RNR_RETRY_EXC_ERR
    pub const RNR_RETRY_EXC: u8 = 0x16;
}

/// `enum ib_event_type` values the engine raises.
pub mod event {
    /// IB_EVENT_CQ_ERR
    pub const CQ_ERR: u32 = 0;
    /// IB_EVENT_QP_REQ_ERR (invalid request local work queue error)
    pub const QP_REQ_ERR: u32 = 2;
    /// IB_EVENT_QP_ACCESS_ERR (local access violation work queue error)
    pub const QP_ACCESS_ERR: u32 = 3;
    /// IB_EVENT_SRQ_LIMIT_REACHED
    pub const SRQ_LIMIT_REACHED: u32 = 15;
    /// IB_EVENT_QP_LAST_WQE_REACHED
    pub const QP_LAST_WQE_REACHED: u32 = 16;
}

/// MLX5_INVALID_LKEY: ends a receive WQE's scatter list early.
pub const INVALID_LKEY: u32 = 0x100;
/// MLX5_INLINE_SEG: the byte_count bit that marks an inline segment.
pub const INLINE_SEG: u32 = 0x8000_0000;
/// The user index a context with CQE version 0 gives every QP/SRQ.
pub const NO_UIDX: u32 = 0xff_ffff;
/// Bytes of GRH in front of every UD receive.
pub const GRH_LEN: usize = 40;
/// CQ arm command "next solicited" (MLX5_CQ_DB_REQ_NOT_SOL).
pub const ARM_SOLICITED: u32 = 1 << 24;
