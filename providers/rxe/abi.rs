//! `<rdma/rdma_user_rxe.h>`: the rxe (Soft-RoCE) driver's user ABI — the
//! driver data of its create/resize/modify commands, and the layout of
//! the queues it shares with user space through `mmap`.
//!
//! Queue memory starts with an [`RxeQueueBuf`] header (producer and
//! consumer index on separate cache lines) followed by the elements:
//! [`RxeSendWqe`] for send queues, [`RxeRecvWqe`] for receive queues and
//! SRQs (each followed by its SGEs or inline data, up to the element size
//! `1 << log2_elem_size`), and `struct ib_uverbs_wc`
//! ([`Wc`](crate::abi::uverbs::Wc)) for CQs. The provider reads and writes
//! that memory through raw pointers; these structs give its layout.
//!
//! The flexible arrays of `struct rxe_dma_info` (`inline_data[]` /
//! `sge[]`) and `struct rxe_queue_buf` (`data[]`) are not part of the Rust
//! structs; see [`RXE_QUEUE_BUF_DATA_OFFSET`].

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use crate::abi::uverbs::{union_get, union_set};
use crate::abi::{abi_struct, c_consts};

c_consts! {
    /// The `RXE_NETWORK_TYPE_*` enum ([`RxeAv::network_type`]).
    NETWORK_TYPE_IDS: u8, prefix "";
    RXE_NETWORK_TYPE_IPV4 = 1;
    RXE_NETWORK_TYPE_IPV6 = 2;
}

abi_struct! {
    /// `union rxe_gid`: 16 raw bytes, or the big-endian subnet prefix and
    /// interface id (see [`RxeGid::subnet_prefix`]).
    #[repr(C, align(8))]
    pub struct RxeGid {
        /// The GID bytes (network order).
        pub raw: [u8; 16],
    }
}
const_assert_eq!(size_of::<RxeGid>(), 16);

impl RxeGid {
    /// `global.subnet_prefix`, converted from big-endian.
    pub fn subnet_prefix(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.raw[..8]);
        u64::from_be_bytes(b)
    }

    /// `global.interface_id`, converted from big-endian.
    pub fn interface_id(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.raw[8..]);
        u64::from_be_bytes(b)
    }
}

abi_struct! {
    /// `struct rxe_global_route`.
    #[repr(C, align(8))]
    pub struct RxeGlobalRoute {
        /// Destination GID.
        pub dgid: RxeGid,
        /// Flow label.
        pub flow_label: u32,
        /// Source GID index.
        pub sgid_index: u8,
        /// Hop limit.
        pub hop_limit: u8,
        /// Traffic class.
        pub traffic_class: u8,
        /// Trailing padding of the C struct.
        pub _pad: u8,
    }
}
const_assert_eq!(size_of::<RxeGlobalRoute>(), 24);
const_assert_eq!(offset_of!(RxeGlobalRoute, flow_label), 16);
const_assert_eq!(offset_of!(RxeGlobalRoute, traffic_class), 22);

abi_struct! {
    /// `struct rxe_av`: the address vector rxe keeps per AH / UD WR.
    ///
    /// `sgid_addr` and `dgid_addr` are each a C `union { struct
    /// sockaddr_in; struct sockaddr_in6; }` (28 bytes, family first in host
    /// byte order).
    #[repr(C, align(8))]
    pub struct RxeAv {
        /// Port number.
        pub port_num: u8,
        /// `RXE_NETWORK_TYPE_*`.
        pub network_type: u8,
        /// Destination MAC.
        pub dmac: [u8; 6],
        /// Global route.
        pub grh: RxeGlobalRoute,
        /// Source address as `sockaddr_in` / `sockaddr_in6` bytes.
        pub sgid_addr: [u8; 28],
        /// Destination address as `sockaddr_in` / `sockaddr_in6` bytes.
        pub dgid_addr: [u8; 28],
    }
}
const_assert_eq!(size_of::<RxeAv>(), 88);
const_assert_eq!(offset_of!(RxeAv, grh), 8);
const_assert_eq!(offset_of!(RxeAv, sgid_addr), 32);
const_assert_eq!(offset_of!(RxeAv, dgid_addr), 60);

abi_struct! {
    /// `wr.rdma` of `struct rxe_send_wr`.
    #[repr(C, align(8))]
    pub struct RxeSendWrRdma {
        /// Remote address.
        pub remote_addr: u64,
        /// Remote key.
        pub rkey: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<RxeSendWrRdma>(), 16);

abi_struct! {
    /// `wr.atomic` of `struct rxe_send_wr`.
    #[repr(C, align(8))]
    pub struct RxeSendWrAtomic {
        /// Remote address.
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
const_assert_eq!(size_of::<RxeSendWrAtomic>(), 32);

abi_struct! {
    /// `wr.ud` of `struct rxe_send_wr`.
    #[repr(C, align(8))]
    pub struct RxeSendWrUd {
        /// Remote QP number.
        pub remote_qpn: u32,
        /// Remote Q_Key.
        pub remote_qkey: u32,
        /// P_Key index.
        pub pkey_index: u16,
        /// Reserved.
        pub reserved: u16,
        /// AH number from [`RxeCreateAhResp`] (0: use `av`).
        pub ah_num: u32,
        /// Padding.
        pub pad: [u32; 4],
        /// The address vector (used when `ah_num` is 0).
        pub av: RxeAv,
    }
}
const_assert_eq!(size_of::<RxeSendWrUd>(), 120);
const_assert_eq!(offset_of!(RxeSendWrUd, ah_num), 12);
const_assert_eq!(offset_of!(RxeSendWrUd, av), 32);

abi_struct! {
    /// `wr.mw` of `struct rxe_send_wr` (bind memory window).
    #[repr(C, align(8))]
    pub struct RxeSendWrMw {
        /// Start address of the window.
        pub addr: u64,
        /// Length of the window.
        pub length: u64,
        /// Local key of the underlying MR.
        pub mr_lkey: u32,
        /// Remote key of the MW being bound.
        pub mw_rkey: u32,
        /// New remote key.
        pub rkey: u32,
        /// Access bits.
        pub access: u32,
    }
}
const_assert_eq!(size_of::<RxeSendWrMw>(), 32);

abi_struct! {
    /// `struct rxe_send_wr`: the WR part of a send queue element.
    ///
    /// `ex` is the `imm_data` (`__be32`, stored as is) / `invalidate_rkey`
    /// union; `wr` is the 120-byte union of the per-opcode parts, read and
    /// written with the typed accessors ([`RxeSendWr::rdma`] …).
    #[repr(C, align(8))]
    pub struct RxeSendWr {
        /// Caller's id, returned in the completion.
        pub wr_id: u64,
        /// Reserved (`num_sge` in older headers; rxe uses `dma.num_sge`).
        pub reserved: u32,
        /// `IB_UVERBS_WR_*` opcode.
        pub opcode: u32,
        /// `IBV_SEND_*` flags.
        pub send_flags: u32,
        /// `ex.imm_data` or `ex.invalidate_rkey`.
        pub ex: u32,
        /// The `wr` union's bytes.
        pub wr: [u8; 120],
    }
}
const_assert_eq!(size_of::<RxeSendWr>(), 144);
const_assert_eq!(offset_of!(RxeSendWr, opcode), 12);
const_assert_eq!(offset_of!(RxeSendWr, wr), 24);

impl RxeSendWr {
    /// Reads `wr.rdma`.
    pub fn rdma(&self) -> RxeSendWrRdma {
        union_get(&self.wr)
    }
    /// Writes `wr.rdma` (the rest of the union is zeroed).
    pub fn set_rdma(&mut self, v: RxeSendWrRdma) {
        union_set(&mut self.wr, &v)
    }
    /// Reads `wr.atomic`.
    pub fn atomic(&self) -> RxeSendWrAtomic {
        union_get(&self.wr)
    }
    /// Writes `wr.atomic` (the rest of the union is zeroed).
    pub fn set_atomic(&mut self, v: RxeSendWrAtomic) {
        union_set(&mut self.wr, &v)
    }
    /// Reads `wr.ud`.
    pub fn ud(&self) -> RxeSendWrUd {
        union_get(&self.wr)
    }
    /// Writes `wr.ud`.
    pub fn set_ud(&mut self, v: &RxeSendWrUd) {
        union_set(&mut self.wr, v)
    }
    /// Reads `wr.mw`.
    pub fn mw(&self) -> RxeSendWrMw {
        union_get(&self.wr)
    }
    /// Writes `wr.mw` (the rest of the union is zeroed).
    pub fn set_mw(&mut self, v: RxeSendWrMw) {
        union_set(&mut self.wr, &v)
    }
}

abi_struct! {
    /// `struct rxe_sge`.
    #[repr(C, align(8))]
    pub struct RxeSge {
        /// Start address.
        pub addr: u64,
        /// Length in bytes.
        pub length: u32,
        /// Local key.
        pub lkey: u32,
    }
}
const_assert_eq!(size_of::<RxeSge>(), 16);

abi_struct! {
    /// `struct mminfo`: where to `mmap` a queue (offset on the device fd)
    /// and how big it is.
    #[repr(C, align(8))]
    pub struct Mminfo {
        /// `mmap` offset on the command fd.
        pub offset: u64,
        /// Size of the mapping in bytes.
        pub size: u32,
        /// Padding.
        pub pad: u32,
    }
}
const_assert_eq!(size_of::<Mminfo>(), 16);

abi_struct! {
    /// `struct rxe_dma_info` (the `inline_data[]` / `sge[]` union that
    /// follows is omitted: [`RxeSge`]s or inline bytes start right after).
    #[repr(C, align(8))]
    pub struct RxeDmaInfo {
        /// Total length in bytes.
        pub length: u32,
        /// Bytes left to transfer.
        pub resid: u32,
        /// Current SGE (kernel progress).
        pub cur_sge: u32,
        /// Number of SGEs that follow.
        pub num_sge: u32,
        /// Offset within the current SGE (kernel progress).
        pub sge_offset: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<RxeDmaInfo>(), 24);

abi_struct! {
    /// `struct rxe_send_wqe`: one send queue element (followed by its SGEs
    /// or inline data).
    #[repr(C, align(8))]
    pub struct RxeSendWqe {
        /// The work request.
        pub wr: RxeSendWr,
        /// Completion status (kernel).
        pub status: u32,
        /// WQE state (kernel).
        pub state: u32,
        /// I/O virtual address (kernel).
        pub iova: u64,
        /// Opcode mask (kernel).
        pub mask: u32,
        /// First PSN (kernel).
        pub first_psn: u32,
        /// Last PSN (kernel).
        pub last_psn: u32,
        /// Acked length (kernel).
        pub ack_length: u32,
        /// Send sequence number (kernel).
        pub ssn: u32,
        /// Holds an RDMA read/atomic resource (kernel).
        pub has_rd_atomic: u32,
        /// Data description.
        pub dma: RxeDmaInfo,
    }
}
const_assert_eq!(size_of::<RxeSendWqe>(), 208);
const_assert_eq!(offset_of!(RxeSendWqe, status), 144);
const_assert_eq!(offset_of!(RxeSendWqe, iova), 152);
const_assert_eq!(offset_of!(RxeSendWqe, dma), 184);

abi_struct! {
    /// `struct rxe_recv_wqe`: one receive queue element (followed by its SGEs).
    #[repr(C, align(8))]
    pub struct RxeRecvWqe {
        /// Caller's id, returned in the completion.
        pub wr_id: u64,
        /// Reserved (`num_sge` in older headers).
        pub reserved: u32,
        /// Padding.
        pub padding: u32,
        /// Data description.
        pub dma: RxeDmaInfo,
    }
}
const_assert_eq!(size_of::<RxeRecvWqe>(), 40);
const_assert_eq!(offset_of!(RxeRecvWqe, dma), 16);

abi_struct! {
    /// `struct rxe_create_ah_resp`: driver response of create AH.
    #[repr(C)]
    pub struct RxeCreateAhResp {
        /// AH number to put in [`RxeSendWrUd::ah_num`].
        pub ah_num: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<RxeCreateAhResp>(), 8);

abi_struct! {
    /// `struct rxe_create_cq_resp`: driver response of create CQ.
    #[repr(C, align(8))]
    pub struct RxeCreateCqResp {
        /// Where to map the CQ.
        pub mi: Mminfo,
    }
}
const_assert_eq!(size_of::<RxeCreateCqResp>(), 16);

abi_struct! {
    /// `struct rxe_resize_cq_resp`: driver response of resize CQ.
    #[repr(C, align(8))]
    pub struct RxeResizeCqResp {
        /// Where to map the resized CQ.
        pub mi: Mminfo,
    }
}
const_assert_eq!(size_of::<RxeResizeCqResp>(), 16);

abi_struct! {
    /// `struct rxe_create_qp_resp`: driver response of create QP.
    #[repr(C, align(8))]
    pub struct RxeCreateQpResp {
        /// Where to map the receive queue (size 0 with an SRQ).
        pub rq_mi: Mminfo,
        /// Where to map the send queue.
        pub sq_mi: Mminfo,
    }
}
const_assert_eq!(size_of::<RxeCreateQpResp>(), 32);
const_assert_eq!(offset_of!(RxeCreateQpResp, sq_mi), 16);

abi_struct! {
    /// `struct rxe_create_srq_resp`: driver response of create SRQ.
    #[repr(C, align(8))]
    pub struct RxeCreateSrqResp {
        /// Where to map the SRQ.
        pub mi: Mminfo,
        /// SRQ number.
        pub srq_num: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<RxeCreateSrqResp>(), 24);

abi_struct! {
    /// `struct rxe_modify_srq_cmd`: driver data of modify SRQ.
    #[repr(C, align(8))]
    pub struct RxeModifySrqCmd {
        /// User address of an [`Mminfo`] the kernel fills when the SRQ is resized.
        pub mmap_info_addr: u64,
    }
}
const_assert_eq!(size_of::<RxeModifySrqCmd>(), 8);

abi_struct! {
    /// `struct rxe_queue_buf`: the header at the start of every mapped rxe
    /// queue (`data[]`, the elements, follows at
    /// [`RXE_QUEUE_BUF_DATA_OFFSET`]).
    ///
    /// The indices are shared with the kernel: access them with atomic
    /// loads/stores at [`RXE_QUEUE_BUF_PRODUCER_OFFSET`] /
    /// [`RXE_QUEUE_BUF_CONSUMER_OFFSET`], never through a `&RxeQueueBuf`.
    #[repr(C)]
    pub struct RxeQueueBuf {
        /// log2 of the element size in bytes.
        pub log2_elem_size: u32,
        /// Index mask (number of slots − 1).
        pub index_mask: u32,
        /// Pads `producer_index` onto its own cache line.
        pub pad_1: [u32; 30],
        /// Producer index.
        pub producer_index: u32,
        /// Pads `consumer_index` onto its own cache line.
        pub pad_2: [u32; 31],
        /// Consumer index.
        pub consumer_index: u32,
        /// Pads the header to 384 bytes.
        pub pad_3: [u32; 31],
    }
}
const_assert_eq!(size_of::<RxeQueueBuf>(), 384);

/// Byte offset of `log2_elem_size` in a mapped rxe queue.
pub const RXE_QUEUE_BUF_LOG2_ELEM_SIZE_OFFSET: usize = offset_of!(RxeQueueBuf, log2_elem_size);
/// Byte offset of `index_mask` in a mapped rxe queue.
pub const RXE_QUEUE_BUF_INDEX_MASK_OFFSET: usize = offset_of!(RxeQueueBuf, index_mask);
/// Byte offset of `producer_index` in a mapped rxe queue.
pub const RXE_QUEUE_BUF_PRODUCER_OFFSET: usize = offset_of!(RxeQueueBuf, producer_index);
/// Byte offset of `consumer_index` in a mapped rxe queue.
pub const RXE_QUEUE_BUF_CONSUMER_OFFSET: usize = offset_of!(RxeQueueBuf, consumer_index);
/// Byte offset of the first element (`data[]`) in a mapped rxe queue.
pub const RXE_QUEUE_BUF_DATA_OFFSET: usize = size_of::<RxeQueueBuf>();
const_assert_eq!(RXE_QUEUE_BUF_LOG2_ELEM_SIZE_OFFSET, 0);
const_assert_eq!(RXE_QUEUE_BUF_INDEX_MASK_OFFSET, 4);
const_assert_eq!(RXE_QUEUE_BUF_PRODUCER_OFFSET, 128);
const_assert_eq!(RXE_QUEUE_BUF_CONSUMER_OFFSET, 256);
const_assert_eq!(RXE_QUEUE_BUF_DATA_OFFSET, 384);

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    #[test]
    fn ud_union_places_av_at_c_offset() {
        let mut ud = RxeSendWrUd {
            remote_qpn: 0x11,
            remote_qkey: 0x22,
            ah_num: 5,
            ..Default::default()
        };
        ud.av.port_num = 1;
        ud.av.network_type = RXE_NETWORK_TYPE_IPV6;
        let mut wr = RxeSendWr::default();
        wr.set_ud(&ud);
        // wr starts at 24; ah_num at +12; av.port_num at +32, network_type at +33.
        let b = wr.as_bytes();
        assert_eq!(b[24], 0x11);
        assert_eq!(b[24 + 12], 5);
        assert_eq!(b[24 + 32], 1);
        assert_eq!(b[24 + 33], RXE_NETWORK_TYPE_IPV6);
        assert_eq!(wr.ud(), ud);
    }

    #[test]
    fn gid_halves_are_big_endian() {
        let mut g = RxeGid::default();
        g.raw[0] = 0xfe;
        g.raw[1] = 0x80;
        g.raw[15] = 1;
        assert_eq!(g.subnet_prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(g.interface_id(), 1);
    }
}
