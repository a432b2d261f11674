//! The CQE layouts of `<infiniband/mlx5dv.h>` (`struct mlx5_cqe64`,
//! `struct mlx5_err_cqe`) and the CQE and CQ doorbell constants, in the
//! same big-endian zerocopy form as the WQE segments (re-exported by
//! `wqe.rs`; cross-checked by `tests/abi_crosscheck.rs`).

use core::mem::size_of;
use static_assertions::const_assert_eq;
use zerocopy::byteorder::network_endian::{U16, U32, U64};

use crate::abi::{abi_struct, c_consts};

c_consts! {
    /// `MLX5_CQE_*`: the CQE opcodes (`op_own >> 4`) and the owner bit.
    CQE_OPCODE_IDS: u8, prefix "MLX5_";
    CQE_OWNER_MASK = 1;
    CQE_REQ = 0;
    CQE_RESP_WR_IMM = 1;
    CQE_RESP_SEND = 2;
    CQE_RESP_SEND_IMM = 3;
    CQE_RESP_SEND_INV = 4;
    CQE_RESIZE_CQ = 5;
    CQE_NO_PACKET = 6;
    CQE_SIG_ERR = 12;
    CQE_REQ_ERR = 13;
    CQE_RESP_ERR = 14;
    CQE_INVALID = 15;
    INLINE_SCATTER_32 = 0x4;
    INLINE_SCATTER_64 = 0x8;
}

c_consts! {
    /// `MLX5_CQE_SYNDROME_*` ([`ErrCqe::syndrome`]).
    SYNDROME_IDS: u8, prefix "MLX5_";
    CQE_SYNDROME_LOCAL_LENGTH_ERR = 0x01;
    CQE_SYNDROME_LOCAL_QP_OP_ERR = 0x02;
    CQE_SYNDROME_LOCAL_PROT_ERR = 0x04;
    CQE_SYNDROME_WR_FLUSH_ERR = 0x05;
    CQE_SYNDROME_MW_BIND_ERR = 0x06;
    CQE_SYNDROME_BAD_RESP_ERR = 0x10;
    CQE_SYNDROME_LOCAL_ACCESS_ERR = 0x11;
    CQE_SYNDROME_REMOTE_INVAL_REQ_ERR = 0x12;
    CQE_SYNDROME_REMOTE_ACCESS_ERR = 0x13;
    CQE_SYNDROME_REMOTE_OP_ERR = 0x14;
    CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR = 0x15;
    CQE_SYNDROME_RNR_RETRY_EXC_ERR = 0x16;
    CQE_SYNDROME_REMOTE_ABORTED_ERR = 0x22;
}

c_consts! {
    /// The CQ doorbell: arm commands and the UAR offset of the arm store.
    CQ_DB_IDS: u32, prefix "MLX5_";
    CQ_DOORBELL = 0x20;
    CQ_DB_REQ_NOT_SOL = 1 << 24;
    CQ_DB_REQ_NOT = 0;
}

abi_struct! {
    /// `struct mlx5_cqe64`: a completion (the last 64 bytes of a 128-byte
    /// CQE).
    #[repr(C, align(8))]
    pub struct Cqe64 {
        /// Reserved.
        pub rsvd0: [u8; 2],
        /// WQE id (striding RQ).
        pub wqe_id: U16,
        /// Reserved.
        pub rsvd4: [u8; 13],
        /// Destination LID path bits (low 7 bits).
        pub ml_path: u8,
        /// Reserved.
        pub rsvd20: [u8; 4],
        /// Source LID.
        pub slid: U16,
        /// SL in bits 24..27, GRH present in 28..29, source QP in 0..23.
        pub flags_rqpn: U32,
        /// Header-data split / IP checksum flags.
        pub hds_ip_ext: u8,
        /// L4/L3 header types.
        pub l4_hdr_type_etc: u8,
        /// VLAN.
        pub vlan_info: U16,
        /// SRQ number, or (CQE version 1) the user index, in bits 0..23.
        pub srqn_uidx: U32,
        /// Immediate data (raw), the invalidated rkey, or the P_Key index.
        pub imm_inval_pkey: U32,
        /// Application (tag matching).
        pub app: u8,
        /// Application opcode.
        pub app_op: u8,
        /// Application info.
        pub app_info: U16,
        /// Bytes received or read.
        pub byte_cnt: U32,
        /// Timestamp.
        pub timestamp: U64,
        /// The WQE opcode (requester) in bits 24..31, QP number in 0..23.
        pub sop_drop_qpn: U32,
        /// Index of the WQE that completed (its `opmod_idx_opcode` index).
        pub wqe_counter: U16,
        /// Signature.
        pub signature: u8,
        /// CQE opcode in bits 4..7, inline scatter in 2..3, owner in 0.
        pub op_own: u8,
    }
}

abi_struct! {
    /// `struct mlx5_err_cqe`: the same 64 bytes for an error completion.
    #[repr(C, align(4))]
    pub struct ErrCqe {
        /// Reserved.
        pub rsvd0: [u8; 32],
        /// SRQ number or user index.
        pub srqn: U32,
        /// Reserved.
        pub rsvd1: [u8; 18],
        /// Vendor syndrome (`ibv_wc.vendor_err`).
        pub vendor_err_synd: u8,
        /// `MLX5_CQE_SYNDROME_*`.
        pub syndrome: u8,
        /// The failed WQE's opcode in bits 24..31, QP number in 0..23.
        pub s_wqe_opcode_qpn: U32,
        /// Index of the failed WQE.
        pub wqe_counter: U16,
        /// Signature.
        pub signature: u8,
        /// As in [`Cqe64::op_own`].
        pub op_own: u8,
    }
}

const_assert_eq!(size_of::<Cqe64>(), 64);
const_assert_eq!(size_of::<ErrCqe>(), 64);
