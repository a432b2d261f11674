//! Work requests as the write-format `POST_SEND` / `POST_RECV` /
//! `POST_SRQ_RECV` commands carry them.
//!
//! Buffer layout of a post command: the command struct, then `wr_count`
//! WR records of `wqe_size` bytes each ([`SendWr`] or [`RecvWr`]), then
//! `sge_count` [`Sge`] records. rxe and siw ring their send doorbell with a
//! [`PostSend`] of zero WRs.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use super::{union_get, union_set, write_cmd, CMD_POST_RECV, CMD_POST_SEND, CMD_POST_SRQ_RECV};

c_consts! {
    /// `enum ib_uverbs_wr_opcode`.
    WR_OPCODE_IDS: u32, prefix "IB_UVERBS_";
    WR_RDMA_WRITE = 0;
    WR_RDMA_WRITE_WITH_IMM = 1;
    WR_SEND = 2;
    WR_SEND_WITH_IMM = 3;
    WR_RDMA_READ = 4;
    WR_ATOMIC_CMP_AND_SWP = 5;
    WR_ATOMIC_FETCH_AND_ADD = 6;
    WR_LOCAL_INV = 7;
    WR_BIND_MW = 8;
    WR_SEND_WITH_INV = 9;
    WR_TSO = 10;
    WR_RDMA_READ_WITH_INV = 11;
    WR_MASKED_ATOMIC_CMP_AND_SWP = 12;
    WR_MASKED_ATOMIC_FETCH_AND_ADD = 13;
}

/// `IB_UVERBS_WR_FLUSH` (Linux 6.2+; newer than the 6.1 headers the
/// cross-check compiles against).
pub const WR_FLUSH: u32 = 14;
/// `IB_UVERBS_WR_ATOMIC_WRITE` (Linux 6.2+; newer than the 6.1 headers the
/// cross-check compiles against).
pub const WR_ATOMIC_WRITE: u32 = 15;

abi_struct! {
    /// `struct ib_uverbs_sge`: a scatter/gather element (same layout as
    /// `struct ibv_sge`).
    #[repr(C, align(8))]
    pub struct Sge {
        /// Start address.
        pub addr: u64,
        /// Length in bytes.
        pub length: u32,
        /// Local key of the MR covering it.
        pub lkey: u32,
    }
}
const_assert_eq!(size_of::<Sge>(), 16);
const_assert_eq!(offset_of!(Sge, lkey), 12);

abi_struct! {
    /// `wr.rdma` of `struct ib_uverbs_send_wr`.
    #[repr(C, align(8))]
    pub struct SendWrRdma {
        /// Remote address.
        pub remote_addr: u64,
        /// Remote key.
        pub rkey: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<SendWrRdma>(), 16);

abi_struct! {
    /// `wr.atomic` of `struct ib_uverbs_send_wr`.
    #[repr(C, align(8))]
    pub struct SendWrAtomic {
        /// Remote address (8-byte aligned).
        pub remote_addr: u64,
        /// Compare value (CAS) or addend (FAA).
        pub compare_add: u64,
        /// Swap value (CAS).
        pub swap: u64,
        /// Remote key.
        pub rkey: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<SendWrAtomic>(), 32);

abi_struct! {
    /// `wr.ud` of `struct ib_uverbs_send_wr`.
    #[repr(C)]
    pub struct SendWrUd {
        /// Handle of the address handle.
        pub ah: u32,
        /// Remote QP number.
        pub remote_qpn: u32,
        /// Remote Q_Key.
        pub remote_qkey: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<SendWrUd>(), 16);

abi_struct! {
    /// `struct ib_uverbs_send_wr`.
    ///
    /// The `ex` union (`imm_data` / `invalidate_rkey`) is the `u32` field
    /// `ex`; the `wr` union (`rdma` / `atomic` / `ud`) is 32 bytes of
    /// storage read and written with [`SendWr::rdma`], [`SendWr::set_rdma`]
    /// and their `atomic` / `ud` siblings.
    #[repr(C, align(8))]
    pub struct SendWr {
        /// Caller's id, returned in the completion.
        pub wr_id: u64,
        /// Number of SGEs of this WR.
        pub num_sge: u32,
        /// `WR_*` opcode.
        pub opcode: u32,
        /// `IBV_SEND_*` flags.
        pub send_flags: u32,
        /// `ex.imm_data` (`__be32`, stored as is) or `ex.invalidate_rkey`.
        pub ex: u32,
        /// The `wr` union's bytes.
        pub wr: [u8; 32],
    }
}
const_assert_eq!(size_of::<SendWr>(), 56);
const_assert_eq!(offset_of!(SendWr, ex), 20);
const_assert_eq!(offset_of!(SendWr, wr), 24);

impl SendWr {
    /// Reads `wr.rdma`.
    pub fn rdma(&self) -> SendWrRdma {
        union_get(&self.wr)
    }
    /// Writes `wr.rdma` (the rest of the union is zeroed).
    pub fn set_rdma(&mut self, v: SendWrRdma) {
        union_set(&mut self.wr, &v)
    }
    /// Reads `wr.atomic`.
    pub fn atomic(&self) -> SendWrAtomic {
        union_get(&self.wr)
    }
    /// Writes `wr.atomic`.
    pub fn set_atomic(&mut self, v: SendWrAtomic) {
        union_set(&mut self.wr, &v)
    }
    /// Reads `wr.ud`.
    pub fn ud(&self) -> SendWrUd {
        union_get(&self.wr)
    }
    /// Writes `wr.ud` (the rest of the union is zeroed).
    pub fn set_ud(&mut self, v: SendWrUd) {
        union_set(&mut self.wr, &v)
    }
}

abi_struct! {
    /// `struct ib_uverbs_post_send` (the `send_wr[]` array is omitted).
    #[repr(C, align(8))]
    pub struct PostSend {
        /// User address of the [`PostSendResp`] buffer.
        pub response: u64,
        /// Handle of the QP.
        pub qp_handle: u32,
        /// Number of WRs that follow.
        pub wr_count: u32,
        /// Number of SGEs that follow the WRs.
        pub sge_count: u32,
        /// Size of one WR record in bytes.
        pub wqe_size: u32,
    }
}
const_assert_eq!(size_of::<PostSend>(), 24);

abi_struct! {
    /// `struct ib_uverbs_post_send_resp`.
    #[repr(C)]
    pub struct PostSendResp {
        /// Index of the first WR that failed.
        pub bad_wr: u32,
    }
}
const_assert_eq!(size_of::<PostSendResp>(), 4);

abi_struct! {
    /// `struct ib_uverbs_recv_wr`.
    #[repr(C, align(8))]
    pub struct RecvWr {
        /// Caller's id, returned in the completion.
        pub wr_id: u64,
        /// Number of SGEs of this WR.
        pub num_sge: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<RecvWr>(), 16);

abi_struct! {
    /// `struct ib_uverbs_post_recv` (the `recv_wr[]` array is omitted).
    #[repr(C, align(8))]
    pub struct PostRecv {
        /// User address of the [`PostRecvResp`] buffer.
        pub response: u64,
        /// Handle of the QP.
        pub qp_handle: u32,
        /// Number of WRs that follow.
        pub wr_count: u32,
        /// Number of SGEs that follow the WRs.
        pub sge_count: u32,
        /// Size of one WR record in bytes.
        pub wqe_size: u32,
    }
}
const_assert_eq!(size_of::<PostRecv>(), 24);

abi_struct! {
    /// `struct ib_uverbs_post_recv_resp`.
    #[repr(C)]
    pub struct PostRecvResp {
        /// Index of the first WR that failed.
        pub bad_wr: u32,
    }
}
const_assert_eq!(size_of::<PostRecvResp>(), 4);

abi_struct! {
    /// `struct ib_uverbs_post_srq_recv` (the `recv[]` array is omitted).
    #[repr(C, align(8))]
    pub struct PostSrqRecv {
        /// User address of the [`PostSrqRecvResp`] buffer.
        pub response: u64,
        /// Handle of the SRQ.
        pub srq_handle: u32,
        /// Number of WRs that follow.
        pub wr_count: u32,
        /// Number of SGEs that follow the WRs.
        pub sge_count: u32,
        /// Size of one WR record in bytes.
        pub wqe_size: u32,
    }
}
const_assert_eq!(size_of::<PostSrqRecv>(), 24);

abi_struct! {
    /// `struct ib_uverbs_post_srq_recv_resp`.
    #[repr(C)]
    pub struct PostSrqRecvResp {
        /// Index of the first WR that failed.
        pub bad_wr: u32,
    }
}
const_assert_eq!(size_of::<PostSrqRecvResp>(), 4);

write_cmd! {
    PostSend => CMD_POST_SEND, false, PostSendResp;
    PostRecv => CMD_POST_RECV, false, PostRecvResp;
    PostSrqRecv => CMD_POST_SRQ_RECV, false, PostSrqRecvResp;
}

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    #[test]
    fn send_wr_union_accessors_place_fields_like_c() {
        let mut wr = SendWr::default();
        wr.set_atomic(SendWrAtomic {
            remote_addr: 1,
            compare_add: 2,
            swap: 3,
            rkey: 4,
            reserved: 0,
        });
        // wr.atomic.swap sits at 24 + 16, rkey at 24 + 24.
        assert_eq!(wr.as_bytes()[40], 3);
        assert_eq!(wr.as_bytes()[48], 4);
        assert_eq!(wr.atomic().compare_add, 2);
        wr.set_ud(SendWrUd {
            ah: 9,
            remote_qpn: 10,
            remote_qkey: 11,
            reserved: 0,
        });
        assert_eq!(wr.ud().remote_qkey, 11);
        // set_ud zeroes the bytes the atomic variant left behind.
        assert!(wr.as_bytes()[40..].iter().all(|&x| x == 0));
        assert_eq!(wr.rdma().remote_addr, 9 | (10 << 32));
    }
}
