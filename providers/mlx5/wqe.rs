//! The memory layouts the ConnectX reads and writes in user space: send
//! WQE segments, receive / SRQ WQE segments and CQEs (`struct mlx5_wqe_*`,
//! of `<infiniband/mlx5dv.h>`), and the constants that go into them; the
//! CQE layouts are in `cqe_layout.rs`, re-exported here.
//!
//! Every multi-byte field is big-endian on the device, so the fields are
//! zerocopy's big-endian integers (alignment 1); each struct carries the C
//! alignment in its `repr` so that `tests/abi_crosscheck.rs` can compare
//! sizes, alignments and offsets with the header one for one.
//!
//! A send WQE is a run of 16-byte units ("ds") in 64-byte basic blocks
//! (`MLX5_SEND_WQE_BB`): [`CtrlSeg`], then per transport and opcode
//! [`RaddrSeg`] (RDMA, atomics), [`AtomicSeg`] (atomics), [`Av`] (UD),
//! then [`DataSeg`]s or one inline block (a big-endian
//! `length | MLX5_INLINE_SEG` word and the bytes, padded to 16).

use core::mem::size_of;
use static_assertions::const_assert_eq;
use zerocopy::byteorder::network_endian::{U16, U32, U64};

use crate::abi::{abi_struct, c_consts};

pub use super::cqe_layout::*;

c_consts! {
    /// `MLX5_OPCODE_*`: the WQE opcodes (low byte of
    /// [`CtrlSeg::opmod_idx_opcode`]) and the REQ CQE's `sop_drop_qpn >> 24`.
    OPCODE_IDS: u8, prefix "MLX5_";
    OPCODE_NOP = 0x00;
    OPCODE_SEND_INVAL = 0x01;
    OPCODE_RDMA_WRITE = 0x08;
    OPCODE_RDMA_WRITE_IMM = 0x09;
    OPCODE_SEND = 0x0a;
    OPCODE_SEND_IMM = 0x0b;
    OPCODE_TSO = 0x0e;
    OPCODE_RDMA_READ = 0x10;
    OPCODE_ATOMIC_CS = 0x11;
    OPCODE_ATOMIC_FA = 0x12;
    OPCODE_ATOMIC_MASKED_CS = 0x14;
    OPCODE_ATOMIC_MASKED_FA = 0x15;
    OPCODE_LOCAL_INVAL = 0x1b;
    OPCODE_UMR = 0x25;
}

c_consts! {
    /// `MLX5_WQE_CTRL_*`: the bits of [`CtrlSeg::fm_ce_se`].
    FM_CE_SE_IDS: u8, prefix "MLX5_";
    WQE_CTRL_CQ_UPDATE = 2 << 2;
    WQE_CTRL_SOLICITED = 1 << 1;
    WQE_CTRL_FENCE = 4 << 5;
    WQE_CTRL_INITIATOR_SMALL_FENCE = 1 << 5;
}

c_consts! {
    /// WQE constants of `<infiniband/mlx5dv.h>`.
    WQE_CONST_IDS: u32, prefix "MLX5_";
    SEND_WQE_BB = 64;
    SEND_WQE_SHIFT = 6;
    INLINE_SEG = 0x8000_0000;
    INVALID_LKEY = 0x100;
    EXTENDED_UD_AV = 0x8000_0000;
    RCV_DBR = 0;
    SND_DBR = 1;
}

c_consts! {
    /// `MLX5_WQE_UMR_CTRL_FLAG_*` ([`UmrCtrlSeg::flags`]).
    UMR_CTRL_FLAG_IDS: u8, prefix "MLX5_";
    WQE_UMR_CTRL_FLAG_INLINE = 1 << 7;
    WQE_UMR_CTRL_FLAG_CHECK_FREE = 1 << 5;
    WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET = 1 << 4;
    WQE_UMR_CTRL_FLAG_CHECK_QPN = 1 << 3;
}

c_consts! {
    /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_*` ([`UmrCtrlSeg::mkey_mask`]).
    MKEY_MASK_IDS: u64, prefix "MLX5_";
    WQE_UMR_CTRL_MKEY_MASK_LEN = 1 << 0;
    WQE_UMR_CTRL_MKEY_MASK_START_ADDR = 1 << 6;
    WQE_UMR_CTRL_MKEY_MASK_MKEY = 1 << 13;
    WQE_UMR_CTRL_MKEY_MASK_QPN = 1 << 14;
    WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE = 1 << 18;
    WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ = 1 << 19;
    WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE = 1 << 20;
    WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC = 1 << 21;
    WQE_UMR_CTRL_MKEY_MASK_FREE = 1 << 29;
}

c_consts! {
    /// [`MkeyContextSeg::free`] and `access_flags` bits.
    MKEY_CONTEXT_IDS: u8, prefix "MLX5_";
    WQE_MKEY_CONTEXT_FREE = 1 << 6;
    WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC = 1 << 6;
    WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE = 1 << 5;
    WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ = 1 << 4;
    WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE = 1 << 3;
}

abi_struct! {
    /// `struct mlx5_wqe_umr_ctrl_seg`: what a UMR WQE (memory window bind,
    /// local invalidate) changes in the key.
    #[repr(C, align(8))]
    pub struct UmrCtrlSeg {
        /// `MLX5_WQE_UMR_CTRL_FLAG_*`.
        pub flags: u8,
        /// Reserved.
        pub rsvd0: [u8; 3],
        /// Octowords of translation entries that follow (KLMs).
        pub klm_octowords: U16,
        /// Translation offset (0).
        pub translation_offset: U16,
        /// `MLX5_WQE_UMR_CTRL_MKEY_MASK_*`: which context fields apply.
        pub mkey_mask: U64,
        /// Reserved.
        pub rsvd1: [u8; 32],
    }
}

abi_struct! {
    /// `struct mlx5_wqe_mkey_context_seg`: the key's new context.
    #[repr(C, align(8))]
    pub struct MkeyContextSeg {
        /// `MLX5_WQE_MKEY_CONTEXT_FREE`: the key becomes free (invalidate).
        pub free: u8,
        /// Reserved.
        pub reserved1: u8,
        /// `MLX5_WQE_MKEY_CONTEXT_ACCESS_FLAGS_*`.
        pub access_flags: u8,
        /// Reserved.
        pub sf: u8,
        /// `qpn << 8 | key tag` (type 2 window bound to a QP) or `0xffffff00 | tag`.
        pub qpn_mkey: U32,
        /// Reserved.
        pub reserved2: U32,
        /// Flags and PD.
        pub flags_pd: U32,
        /// Start of the window.
        pub start_addr: U64,
        /// Length of the window.
        pub len: U64,
        /// BSF size.
        pub bsf_octword_size: U32,
        /// Reserved.
        pub reserved3: [u8; 16],
        /// Translation size.
        pub translations_octword_size: U32,
        /// Reserved.
        pub reserved4: [u8; 3],
        /// log2 page size.
        pub log_page_size: u8,
        /// Reserved.
        pub reserved: U32,
    }
}

abi_struct! {
    /// `struct mlx5_wqe_umr_klm_seg`: one translation entry (the window's
    /// range in the region).
    #[repr(C, align(8))]
    pub struct UmrKlmSeg {
        /// Bytes (up to 2 GiB).
        pub byte_count: U32,
        /// The region's key.
        pub mkey: U32,
        /// Start address.
        pub address: U64,
    }
}

abi_struct! {
    /// `struct mlx5_wqe_ctrl_seg`: the first 16 bytes of every send WQE.
    #[repr(C, align(4))]
    pub struct CtrlSeg {
        /// `opmod << 24 | wqe_index << 8 | opcode`.
        pub opmod_idx_opcode: U32,
        /// `qpn << 8 | ds` (ds: the WQE's length in 16-byte units).
        pub qpn_ds: U32,
        /// WQE signature (only with `MLX5_QP_FLAG_SIGNATURE`; 0).
        pub signature: u8,
        /// DCI stream channel (0).
        pub dci_stream_channel_id: [u8; 2],
        /// `MLX5_WQE_CTRL_*`: fence mode, completion, solicited event.
        pub fm_ce_se: u8,
        /// Immediate data (as given, already big-endian in `ibv_send_wr`),
        /// or the rkey to invalidate.
        pub imm: U32,
    }
}

abi_struct! {
    /// `struct mlx5_wqe_raddr_seg`: the remote side of RDMA and atomics.
    #[repr(C, align(8))]
    pub struct RaddrSeg {
        /// Remote address.
        pub raddr: U64,
        /// Remote key.
        pub rkey: U32,
        /// Reserved (written 0).
        pub reserved: U32,
    }
}

abi_struct! {
    /// `struct mlx5_wqe_atomic_seg`.
    #[repr(C, align(8))]
    pub struct AtomicSeg {
        /// Swap value (compare-and-swap) or the addend (fetch-and-add).
        pub swap_add: U64,
        /// Compare value (compare-and-swap; not written for fetch-and-add).
        pub compare: U64,
    }
}

abi_struct! {
    /// `struct mlx5_wqe_data_seg`: one gather/scatter entry.
    #[repr(C, align(8))]
    pub struct DataSeg {
        /// Bytes (0 with `MLX5_INVALID_LKEY` ends a receive list).
        pub byte_count: U32,
        /// Local key.
        pub lkey: U32,
        /// Address.
        pub addr: U64,
    }
}

abi_struct! {
    /// `struct mlx5_wqe_av` (= `struct mlx5_wqe_datagram_seg`): a UD
    /// destination. libmlx5 builds it when the AH is created and copies it
    /// into each UD WQE, setting `dqp_dct` and `qkey` per request.
    #[repr(C, align(8))]
    pub struct Av {
        /// `key.qkey.qkey`: the destination's Q_Key.
        pub qkey: U32,
        /// `key.qkey.reserved`.
        pub key_reserved: U32,
        /// Destination QP number `| MLX5_EXTENDED_UD_AV`.
        pub dqp_dct: U32,
        /// Static rate (high nibble) and SL (IB: low nibble; RoCE: bits 1..3).
        pub stat_rate_sl: u8,
        /// IB: source path bits (low 7 bits); `mlid` bit 7.
        pub fl_mlid: u8,
        /// IB: destination LID; RoCE v2: the UDP source port.
        pub rlid: U16,
        /// Reserved.
        pub reserved0: [u8; 4],
        /// RoCE: destination MAC.
        pub rmac: [u8; 6],
        /// Traffic class.
        pub tclass: u8,
        /// Hop limit.
        pub hop_limit: u8,
        /// `grh << 30 | sgid_index << 20 | flow_label` (grh: IB only).
        pub grh_gid_fl: U32,
        /// Destination GID.
        pub rgid: [u8; 16],
    }
}

abi_struct! {
    /// `struct mlx5_wqe_srq_next_seg`: the head of an SRQ WQE, linking the
    /// free list.
    #[repr(C, align(2))]
    pub struct SrqNextSeg {
        /// Reserved.
        pub rsvd0: [u8; 2],
        /// Index of the next free WQE.
        pub next_wqe_index: U16,
        /// Signature (0).
        pub signature: u8,
        /// Reserved.
        pub rsvd1: [u8; 11],
    }
}

const_assert_eq!(size_of::<CtrlSeg>(), 16);
const_assert_eq!(size_of::<RaddrSeg>(), 16);
const_assert_eq!(size_of::<AtomicSeg>(), 16);
const_assert_eq!(size_of::<DataSeg>(), 16);
const_assert_eq!(size_of::<Av>(), 48);
const_assert_eq!(size_of::<SrqNextSeg>(), 16);
const_assert_eq!(size_of::<Cqe64>(), 64);
const_assert_eq!(size_of::<UmrCtrlSeg>(), UMR_CTRL_SEG);
const_assert_eq!(size_of::<MkeyContextSeg>(), MKEY_CONTEXT_SEG);
const_assert_eq!(size_of::<UmrKlmSeg>(), 16);
const_assert_eq!(size_of::<ErrCqe>(), 64);

/// `sizeof(struct mlx5_wqe_inl_data_seg)`: the inline block's length word.
pub const INLINE_HDR: usize = 4;
/// `sizeof(struct mlx5_wqe_umr_ctrl_seg)` (UMR WQEs are not written yet;
/// libmlx5's send-queue overhead counts them).
pub const UMR_CTRL_SEG: usize = 48;
/// `sizeof(struct mlx5_wqe_mkey_context_seg)`.
pub const MKEY_CONTEXT_SEG: usize = 64;
/// `max(sizeof(struct mlx5_wqe_umr_klm_seg), 64)` in `_sq_overhead`.
pub const UMR_KLM_AREA: usize = 64;
/// `sizeof(struct mlx5_wqe_xrc_seg)`.
pub const XRC_SEG: usize = 16;
/// `sizeof(struct mlx5_rwqe_sig)`.
pub const RWQE_SIG: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    #[test]
    fn ctrl_segment_bytes() {
        // An RDMA WRITE at WQE index 0x1234 of QP 0xabcdef, 3 ds, signaled.
        let c = CtrlSeg {
            opmod_idx_opcode: U32::new(0x1234 << 8 | u32::from(OPCODE_RDMA_WRITE)),
            qpn_ds: U32::new(0xab_cdef << 8 | 3),
            fm_ce_se: WQE_CTRL_CQ_UPDATE,
            imm: U32::new(0x0102_0304),
            ..Default::default()
        };
        assert_eq!(c.as_bytes(), &[0, 0x12, 0x34, 0x08, 0xab, 0xcd, 0xef, 3, 0, 0, 0, 8, 1, 2, 3, 4]);
    }

    #[test]
    fn cqe_fields_sit_where_mlx5_md_says() {
        use core::mem::offset_of;
        assert_eq!(offset_of!(Cqe64, flags_rqpn), 24);
        assert_eq!(offset_of!(Cqe64, srqn_uidx), 32);
        assert_eq!(offset_of!(Cqe64, byte_cnt), 44);
        assert_eq!(offset_of!(Cqe64, sop_drop_qpn), 56);
        assert_eq!(offset_of!(Cqe64, op_own), 63);
        assert_eq!(offset_of!(ErrCqe, vendor_err_synd), 54);
        assert_eq!(offset_of!(ErrCqe, syndrome), 55);
        assert_eq!(offset_of!(Av, rgid), 32);
        assert_eq!(offset_of!(Av, grh_gid_fl), 28);
    }
}
