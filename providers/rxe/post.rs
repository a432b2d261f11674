//! The rxe data path: send WQEs and receive WQEs written in place into
//! the kernel-mapped rings (`struct rxe_send_wqe` / `struct rxe_recv_wqe`
//! of `<rdma/rdma_user_rxe.h>`), and completions read from the CQ ring.
//!
//! Facts from rdma-core's `providers/rxe/rxe.c` and the kernel's
//! `rxe_req.c` this follows:
//! * a send WQE is the header (`rxe_send_wr` + state + `rxe_dma_info`,
//!   208 bytes) followed by the SGEs (`struct rxe_sge`, same layout as
//!   `ibv_sge`) or by the inline bytes; the kernel computes `mask`,
//!   `ssn`, PSNs itself and expects `state == 0` (posted);
//! * `iova` is the atomic or RDMA remote address;
//! * UD sends carry the kernel AH index (`wr.ud.ah_num`, kernels ≥ 5.12);
//! * the kernel processes the send queue when it gets a `POST_SEND`
//!   command of zero work requests (the doorbell); receive queues need no
//!   doorbell, the kernel looks at them when a packet arrives.
//!
//! Every request of a list is checked before the first is written, and
//! the queue must have room for all of them: a refused list leaves the
//! ring untouched (the producer index is published only at the end).

use core::mem::{offset_of, size_of};
use core::sync::atomic::Ordering;

use static_assertions::const_assert_eq;

use super::abi::{RxeDmaInfo, RxeRecvWqe, RxeSendWqe, RxeSendWrAtomic, RxeSendWrMw, RxeSendWrRdma, RxeSge};
use super::queue::{Claim, CompletionQueue, Consumer, Producer, SendQueue, SlotMut};
use crate::providers::claim::{outcome, polled, stopped, Polled};
use crate::providers::dispatch::poll_result;

/// What every CQ slot holds.
const CQ_MIN: usize = size_of::<AbiWc>();
use crate::abi::abi_struct;
use crate::abi::uverbs::Wc as AbiWc;
use crate::error::ErrorKind;
use crate::qp::kind::QpType;
use crate::swap_cell::Held;
use crate::wc::Wc;
use crate::wr::{
    check_recv, check_send, sge_len, unknown_send_flags, Payload, PostError, RecvWr, Refusal, SendFlags, SendOp, SendWr, Sge,
    SEND_INLINE,
};

const SEND_HDR: usize = size_of::<RxeSendWqe>();
const RECV_HDR: usize = size_of::<RxeRecvWqe>();
/// What every send slot holds (checked when the ring is mapped).
const SEND_MIN: usize = SEND_HDR + size_of::<RxeSge>();
/// What every receive slot holds.
const RECV_MIN: usize = RECV_HDR + size_of::<RxeSge>();

// The fields of `struct rxe_send_wqe` user space writes. The rest (`mask`,
// the PSNs, `ack_length`, `ssn`) belong to the kernel, which sets them
// before it reads them; rdma-core does not write them either.
const WR_ID: usize = offset_of!(RxeSendWqe, wr.wr_id);
const OPCODE: usize = offset_of!(RxeSendWqe, wr.opcode);
const SEND_FLAGS: usize = offset_of!(RxeSendWqe, wr.send_flags);
const EX: usize = offset_of!(RxeSendWqe, wr.ex);
const WR_UNION: usize = offset_of!(RxeSendWqe, wr.wr);
const STATUS_STATE: usize = offset_of!(RxeSendWqe, status);
const IOVA: usize = offset_of!(RxeSendWqe, iova);
const HAS_RD_ATOMIC: usize = offset_of!(RxeSendWqe, has_rd_atomic);
const SEND_DMA: usize = offset_of!(RxeSendWqe, dma);
// Fields of `RxeDmaInfo`, relative to it.
const DMA_RESID: usize = offset_of!(RxeDmaInfo, resid);
const DMA_CUR_SGE: usize = offset_of!(RxeDmaInfo, cur_sge);
const DMA_SGE_OFFSET: usize = offset_of!(RxeDmaInfo, sge_offset);
const RDMA_RKEY: usize = WR_UNION + offset_of!(RxeSendWrRdma, rkey);
// The pairs stored as one u64.
const_assert_eq!(offset_of!(RxeDmaInfo, num_sge), offset_of!(RxeDmaInfo, cur_sge) + 4);
const_assert_eq!(offset_of!(RxeDmaInfo, reserved), offset_of!(RxeDmaInfo, sge_offset) + 4);
const_assert_eq!(offset_of!(RxeSendWrRdma, reserved), offset_of!(RxeSendWrRdma, rkey) + 4);
const_assert_eq!(offset_of!(RxeSendWqe, state), STATUS_STATE + 4);
const RECV_WR_ID: usize = offset_of!(RxeRecvWqe, wr_id);
const RECV_DMA: usize = offset_of!(RxeRecvWqe, dma);

abi_struct! {
    /// The head of `wr.ud` in `struct rxe_send_wr`: everything the kernel
    /// reads of it when `ah_num` is set (the address vector after it is
    /// only for kernels older than 5.12, which return no AH index).
    #[repr(C)]
    pub struct UdHead {
        /// Destination QP number.
        pub remote_qpn: u32,
        /// Q_Key.
        pub remote_qkey: u32,
        /// P_Key index (GSI only).
        pub pkey_index: u16,
        /// Reserved.
        pub reserved: u16,
        /// The kernel's AH index.
        pub ah_num: u32,
    }
}
const_assert_eq!(size_of::<UdHead>(), 16);

/// What a send queue accepts (the capacities the kernel granted).
#[derive(Clone, Copy, Debug)]
pub struct SendLimits {
    /// `max_send_sge`.
    pub max_sge: u32,
    /// `max_inline_data`.
    pub max_inline: u32,
}

/// Checks `wr` and writes it into `slot`; `Ok(true)` for a bind (whose
/// window takes its new rkey once the list is published). On error the
/// slot holds a partial WQE, which is harmless: it is not published.
#[inline(always)]
fn write_send(
    slot: &mut SlotMut<'_, SEND_MIN>,
    wr: &SendWr<'_>,
    qp_type: QpType,
    lim: &SendLimits,
) -> Result<bool, Refusal> {
    let mut len = check_send(wr, qp_type, lim.max_sge, lim.max_inline)?;
    let mut iova = 0;
    let mut ex = 0;
    let mut bind = false;
    let mut atomic_wr = None;
    match wr.op {
        SendOp::Send => {}
        SendOp::SendWithImm { imm } => ex = imm.to_be(),
        SendOp::SendWithInv { invalidate_rkey } => ex = invalidate_rkey,
        SendOp::LocalInv { rkey } => ex = rkey,
        SendOp::RdmaWrite { remote_addr, rkey } | SendOp::RdmaRead { remote_addr, rkey } => {
            // The kernel reads `wr.rdma.remote_addr` again when it retries.
            slot.put::<WR_UNION, _>(RxeSendWrRdma { remote_addr, rkey, reserved: 0 });
            iova = remote_addr;
        }
        SendOp::RdmaWriteWithImm { remote_addr, rkey, imm } => {
            ex = imm.to_be();
            slot.put::<WR_UNION, _>(RxeSendWrRdma { remote_addr, rkey, reserved: 0 });
            iova = remote_addr;
        }
        SendOp::AtomicCmpSwp { remote_addr, rkey, compare, swap } => {
            slot.put::<WR_UNION, _>(RxeSendWrAtomic { remote_addr, compare_add: compare, swap, rkey, reserved: 0 });
            iova = remote_addr;
        }
        SendOp::AtomicFetchAdd { remote_addr, rkey, add } => {
            slot.put::<WR_UNION, _>(RxeSendWrAtomic { remote_addr, compare_add: add, swap: 0, rkey, reserved: 0 });
            iova = remote_addr;
        }
        // librxe's `wr_atomic_write`: RETH fields in `wr.rdma`, the 8 bytes
        // in `dma.atomic_wr` (where SGEs would go), `dma.length` 8.
        SendOp::AtomicWrite { remote_addr, rkey, value } => {
            slot.put::<WR_UNION, _>(RxeSendWrRdma { remote_addr, rkey, reserved: 0 });
            iova = remote_addr;
            atomic_wr = Some(value);
            len = 8;
        }
        SendOp::BindMw(b) => {
            slot.put::<WR_UNION, _>(RxeSendWrMw {
                addr: b.addr(),
                length: b.length(),
                mr_lkey: b.mr_lkey(),
                mw_rkey: b.mw_rkey(),
                rkey: b.rkey(),
                access: b.access().bits(),
            });
            bind = true;
        }
    }
    if let Some(ud) = wr.ud {
        let ah_num = ud.ah.ah_num();
        // Kernels before 5.12 return no AH index and want the whole
        // address vector in each WQE; that form is not implemented.
        if ah_num == 0 {
            return Err(Refusal(ErrorKind::Unsupported, "the kernel gave the AH no index (kernels before 5.12)"));
        }
        slot.put::<WR_UNION, _>(UdHead {
            remote_qpn: ud.remote_qpn,
            remote_qkey: ud.remote_qkey,
            pkey_index: 0,
            reserved: 0,
            ah_num,
        });
    }
    slot.put::<WR_ID, u64>(wr.wr_id);
    slot.put::<OPCODE, u32>(wr.op.opcode());
    let (inline, num_sge) = match wr.payload {
        Payload::Sges(s) => (0, s.len() as u32),
        Payload::Inline(_) => (SEND_INLINE, 0),
    };
    slot.put::<SEND_FLAGS, u32>(wr.flags.bits() | inline);
    slot.put::<EX, u32>(ex);
    // `status` 0 and `state` 0 (posted): the kernel reports `status` as
    // it finds it for a WQE that succeeds.
    slot.put::<STATUS_STATE, u64>(0);
    slot.put::<IOVA, u64>(iova);
    // Set by the kernel when it takes a read/atomic credit for the WQE.
    slot.put::<HAS_RD_ATOMIC, u32>(0);
    slot.put::<SEND_DMA, _>(RxeDmaInfo { length: len, resid: len, cur_sge: 0, num_sge, sge_offset: 0, reserved: 0 });
    if let Some(v) = atomic_wr {
        if !slot.put_bytes(SEND_HDR, &v) {
            return Err(Refusal(ErrorKind::InvalidArgument, "the kernel's send queue element has no room for ATOMIC_WRITE's 8 bytes"));
        }
    }
    // More than the granted capacity was refused above; this refuses what
    // the granted capacity allows but the kernel's element cannot hold.
    match wr.payload {
        // `ibv_sge` and `rxe_sge` are one layout.
        Payload::Sges(s) if !slot.put_all(SEND_HDR, s) => {
            Err(Refusal(ErrorKind::TooManySge, "the SGEs do not fit in the kernel's send queue element"))
        }
        Payload::Inline(d) if !slot.put_bytes(SEND_HDR, d) => {
            Err(Refusal(ErrorKind::InlineTooLarge, "the inline data does not fit in the kernel's send queue element"))
        }
        _ => Ok(bind),
    }
}

/// A refused request: out of line, so that the fast path keeps its
/// registers for the work.
#[cold]
#[inline(never)]
fn refuse(verb: &'static str, why: Refusal, index: usize) -> PostError {
    PostError::refused(verb, why, index)
}

/// A list longer than the free slots.
const FULL: Refusal = Refusal(ErrorKind::QueueFull, "the queue has fewer free slots than the list has requests");

const POST_SEND: &str = "ibv_post_send";

/// `ibv_post_send` on rxe: checks and writes every WQE of `wrs` into the
/// send ring, publishes them with one release store, and returns; the
/// caller rings the doorbell. If a request is refused nothing is
/// published: the slots written so far are not the kernel's to read and
/// the next post overwrites them.
#[inline(always)]
pub fn post_send(
    sq: &mut SendQueue,
    qp_type: QpType,
    lim: &SendLimits,
    wrs: &[SendWr<'_>],
) -> Result<(), PostError> {
    if post_gather(sq, qp_type, lim, wrs) {
        Ok(())
    } else {
        post_general(sq, qp_type, lim, wrs)
    }
}

/// The straight path, inlined into the caller: one request with a gather
/// list of at most one SGE, on a connected QP, of an operation that needs
/// no more than the transport check (SEND, SEND with immediate or
/// invalidate, RDMA WRITE with or without immediate, RDMA READ). `true`
/// if it was written and published; `false`, with nothing published, for
/// anything else and for anything it would refuse, which the caller then
/// hands to [`post_general`]. The straight path never refuses on its own,
/// so there is one place where requests are judged.
#[inline(always)]
pub fn post_gather(sq: &mut SendQueue, qp_type: QpType, lim: &SendLimits, wrs: &[SendWr<'_>]) -> bool {
    match wrs {
        [wr] if matches!(wr.payload, Payload::Sges(_)) => post_plain(sq, qp_type, lim, wr),
        _ => false,
    }
}

/// Everything [`post_gather`] leaves, out of line: one request with
/// inline data (the same straight path; its copy is a `memcpy` call, whose
/// saved registers the gather path should not pay for), lists, and every
/// request that is refused.
#[inline(never)]
pub fn post_general(sq: &mut SendQueue, qp_type: QpType, lim: &SendLimits, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
    if let [wr @ SendWr { payload: Payload::Inline(_), .. }] = wrs {
        if post_plain(sq, qp_type, lim, wr) {
            return Ok(());
        }
    }
    post_list(sq, qp_type, lim, wrs)
}

pub use crate::providers::seam::{Plain, StraightWr};

/// The operations of the straight path, one bit per `ibv_wr_opcode`:
/// SEND (with immediate data or invalidate), RDMA WRITE (with immediate
/// data), RDMA READ: those that need no more than the transport check.
const STRAIGHT_OPS: u32 = 1 << crate::abi::uverbs::WR_SEND
    | 1 << crate::abi::uverbs::WR_SEND_WITH_IMM
    | 1 << crate::abi::uverbs::WR_SEND_WITH_INV
    | 1 << crate::abi::uverbs::WR_RDMA_WRITE
    | 1 << crate::abi::uverbs::WR_RDMA_WRITE_WITH_IMM
    | 1 << crate::abi::uverbs::WR_RDMA_READ;

/// The straight path of [`post_gather`] (and of one request with inline
/// data): `true` if `wr` was written and published, `false` (nothing
/// published) if it is not that kind of request or something about it
/// needs the full checks.
#[inline(always)]
fn post_plain(sq: &mut SendQueue, qp_type: QpType, lim: &SendLimits, wr: &SendWr<'_>) -> bool {
    // A UD send needs a destination (and goes the general way); unknown
    // flag bits are refused there.
    if wr.ud.is_some() || qp_type == QpType::Ud || !wr.op.valid_for(qp_type) || unknown_send_flags(wr.flags) {
        return false;
    }
    let data = match wr.payload {
        Payload::Sges([]) => Plain::Empty,
        Payload::Sges([s]) if sge_fits(lim, s) => Plain::Sge(s),
        // Nothing can land in inline data.
        Payload::Inline(d) if inline_fits(lim, d) && !matches!(wr.op, SendOp::RdmaRead { .. }) => Plain::Inline(d),
        _ => return false,
    };
    if !matches!(
        wr.op,
        SendOp::Send
            | SendOp::SendWithImm { .. }
            | SendOp::SendWithInv { .. }
            | SendOp::RdmaWrite { .. }
            | SendOp::RdmaRead { .. }
            | SendOp::RdmaWriteWithImm { .. }
    ) {
        return false;
    }
    let mut prod = sq.producer_mut();
    let Some(mut slot) = prod.slot(0) else {
        return false;
    };
    let Some((len, num_sge, inline)) = put_plain_data(&mut slot, data) else { return false };
    // Each arm stores what its operation carries, so that none of it
    // stays in a register past the match. For SEND the remote address and
    // key are zero: the kernel does not read them.
    match wr.op {
        SendOp::RdmaWrite { remote_addr, rkey } | SendOp::RdmaRead { remote_addr, rkey } => {
            put_remote(&mut slot, remote_addr, rkey, 0);
        }
        SendOp::RdmaWriteWithImm { remote_addr, rkey, imm } => put_remote(&mut slot, remote_addr, rkey, imm.to_be()),
        SendOp::SendWithImm { imm } => put_remote(&mut slot, 0, 0, imm.to_be()),
        SendOp::SendWithInv { invalidate_rkey } => put_remote(&mut slot, 0, 0, invalidate_rkey),
        _ => put_remote(&mut slot, 0, 0, 0),
    }
    put_plain_header(&mut slot, wr.wr_id, wr.op.opcode(), wr.flags.bits() | inline, len, num_sge);
    prod.publish(1);
    true
}

/// Whether the straight path may write one SGE of `g` for a queue of
/// capacities `lim`: the queue takes SGEs, and a message is at most 2^31
/// bytes. Anything else goes the general way, which names the error.
#[inline(always)]
fn sge_fits(lim: &SendLimits, g: &Sge) -> bool {
    lim.max_sge >= 1 && g.length <= 1 << 31
}

/// Whether the straight path may write the inline bytes `d` for a queue
/// of capacities `lim` (an RDMA READ, whose data cannot land in inline
/// bytes, the caller refuses).
#[inline(always)]
fn inline_fits(lim: &SendLimits, d: &[u8]) -> bool {
    d.len() <= lim.max_inline as usize && d.len() <= 1 << 31
}

/// Writes the data of a straight request after the WQE's header: the
/// SGE, or the inline bytes. Returns `(length, num_sge, IBV_SEND_INLINE
/// or 0)`; `None`, with the slot only partly written (harmless: it is not
/// published), if the inline bytes do not fit the kernel's element (the
/// granted `max_inline_data` fits unless the kernel lied; then the full
/// path names the error).
#[inline(always)]
fn put_plain_data(slot: &mut SlotMut<'_, SEND_MIN>, data: Plain<'_>) -> Option<(u32, u32, u32)> {
    match data {
        Plain::Empty => Some((0, 0, 0)),
        Plain::Sge(s) => {
            // `ibv_sge` and `rxe_sge` are one layout.
            slot.put::<SEND_HDR, Sge>(*s);
            Some((s.length, 1, 0))
        }
        Plain::Inline(d) => slot.put_bytes(SEND_HDR, d).then_some((d.len() as u32, 0, SEND_INLINE)),
    }
}

/// The header fields of a straight request's WQE but the operands
/// ([`put_remote`]): `flags` with `IBV_SEND_INLINE` if the data is inline;
/// `status` 0 and `state` 0 (posted); `has_rd_atomic` 0 (the kernel sets
/// it when it takes a read/atomic credit); the DMA state of `len` bytes in
/// `num_sge` SGEs.
#[inline(always)]
fn put_plain_header(slot: &mut SlotMut<'_, SEND_MIN>, wr_id: u64, opcode: u32, flags: u32, len: u32, num_sge: u32) {
    slot.put::<WR_ID, u64>(wr_id);
    slot.put::<OPCODE, u32>(opcode);
    slot.put::<SEND_FLAGS, u32>(flags);
    slot.put::<STATUS_STATE, u64>(0);
    slot.put::<HAS_RD_ATOMIC, u32>(0);
    // `RxeDmaInfo { length: len, resid: len, cur_sge: 0, num_sge,
    // sge_offset: 0, reserved: 0 }` in four stores: `num_sge` is a
    // constant of the data's shape, so `cur_sge` and it go as one u64
    // constant, and the two zeros after as another.
    slot.put::<SEND_DMA, u32>(len);
    slot.put::<{ SEND_DMA + DMA_RESID }, u32>(len);
    slot.put::<{ SEND_DMA + DMA_CUR_SGE }, u64>(pair(0, num_sge));
    slot.put::<{ SEND_DMA + DMA_SGE_OFFSET }, u64>(0);
}

/// Two adjacent `u32` fields as one `u64` store (`lo` at the lower
/// address).
#[inline(always)]
const fn pair(lo: u32, hi: u32) -> u64 {
    if cfg!(target_endian = "little") {
        lo as u64 | (hi as u64) << 32
    } else {
        (lo as u64) << 32 | hi as u64
    }
}

/// Writes and publishes one straight request `s` on a send queue of
/// transport `qp_type`: `true` if it was, `false` (nothing published) if
/// it is not a straight request (another operation, a UD QP, unknown
/// flag bits, several SGEs) or something about it needs the full checks
/// (which then name the error). It never refuses on its own: the caller
/// hands what it leaves to the general path, so there is one place where
/// requests are judged.
#[inline(always)]
pub fn post_straight<W: StraightWr + ?Sized>(sq: &mut SendQueue, qp_type: QpType, lim: &SendLimits, s: &W) -> bool {
    // UD needs a destination; XRC's receive side sends nothing.
    let ops = match qp_type {
        QpType::Rc | QpType::XrcSend => STRAIGHT_OPS,
        QpType::Uc => STRAIGHT_OPS & !(1 << crate::abi::uverbs::WR_RDMA_READ),
        QpType::Ud | QpType::XrcRecv => 0,
    };
    let opcode = s.opcode();
    // `checked_shr`: an opcode of 32 or more is no straight one.
    if ops.checked_shr(opcode).unwrap_or(0) & 1 == 0 || s.flags() & !SendFlags::all().bits() != 0 {
        return false;
    }
    let Some(data) = s.data() else { return false };
    let fits = match data {
        Plain::Empty => true,
        Plain::Sge(g) => sge_fits(lim, g),
        // Nothing can land in inline data.
        Plain::Inline(d) => inline_fits(lim, d) && opcode != crate::abi::uverbs::WR_RDMA_READ,
    };
    if !fits {
        return false;
    }
    let mut prod = sq.producer_mut();
    let Some(mut slot) = prod.slot(0) else {
        return false;
    };
    let Some((len, num_sge, inline)) = put_plain_data(&mut slot, data) else { return false };
    // For SEND the remote address and key are zero: the kernel does not
    // read them.
    let (remote_addr, rkey) = s.remote();
    put_remote(&mut slot, remote_addr, rkey, s.ex());
    put_plain_header(&mut slot, s.wr_id(), opcode, s.flags() | inline, len, num_sge);
    prod.publish(1);
    true
}

/// The straight path's operation fields: `ex` (immediate data or rkey to
/// invalidate), `wr.rdma`, and `iova` (the remote address).
#[inline(always)]
fn put_remote(slot: &mut SlotMut<'_, SEND_MIN>, remote_addr: u64, rkey: u32, ex: u32) {
    slot.put::<EX, u32>(ex);
    // `RxeSendWrRdma { remote_addr, rkey, reserved: 0 }`, the key and the
    // zero as one u64.
    slot.put::<WR_UNION, u64>(remote_addr);
    slot.put::<RDMA_RKEY, u64>(pair(rkey, 0));
    slot.put::<IOVA, u64>(remote_addr);
}

/// A list (or nothing, or a request the straight path left): every
/// request checked and written, then one publication for all.
#[inline]
fn post_list(sq: &mut SendQueue, qp_type: QpType, lim: &SendLimits, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
    let mut prod = sq.producer_mut();
    let free = prod.free();
    if wrs.len() > free as usize {
        return Err(refuse(POST_SEND, FULL, free as usize));
    }
    let mut binds = false;
    for (i, wr) in wrs.iter().enumerate() {
        // `i < wrs.len() <= free`: there is a slot.
        let Some(mut slot) = prod.slot(i as u32) else {
            return Err(refuse(POST_SEND, FULL, i));
        };
        match write_send(&mut slot, wr, qp_type, lim) {
            Ok(bind) => binds |= bind,
            Err(why) => return Err(refuse(POST_SEND, why, i)),
        }
    }
    prod.publish(wrs.len() as u32);
    if binds {
        for wr in wrs {
            if let SendOp::BindMw(b) = wr.op {
                b.commit();
            }
        }
    }
    Ok(())
}

/// Checks `wr` and writes it into `slot` (a receive WQE: header, SGEs).
#[inline(always)]
fn write_recv(slot: &mut SlotMut<'_, RECV_MIN>, wr: &RecvWr<'_>, max_sge: u32) -> Result<(), Refusal> {
    check_recv(wr, max_sge)?;
    if !slot.put_all(RECV_HDR, wr.sg_list) {
        // More SGEs than the kernel's element holds.
        return Err(Refusal(ErrorKind::TooManySge, "the SGEs do not fit in the kernel's receive queue element"));
    }
    // The kernel's `dma.length` is 32 bits, as rdma-core's sum is.
    put_recv_header(slot, wr.wr_id, sge_len(wr.sg_list) as u32, wr.sg_list.len() as u32);
    Ok(())
}

/// The header of a receive WQE: `wr_id` and the DMA state of `len` bytes
/// in `num_sge` SGEs (written after them).
#[inline(always)]
fn put_recv_header(slot: &mut SlotMut<'_, RECV_MIN>, wr_id: u64, len: u32, num_sge: u32) {
    slot.put::<RECV_WR_ID, u64>(wr_id);
    // `RxeDmaInfo { length: len, resid: len, cur_sge: 0, num_sge,
    // sge_offset: 0, reserved: 0 }`, as in `put_plain_header`.
    slot.put::<RECV_DMA, u32>(len);
    slot.put::<{ RECV_DMA + DMA_RESID }, u32>(len);
    slot.put::<{ RECV_DMA + DMA_CUR_SGE }, u64>(pair(0, num_sge));
    slot.put::<{ RECV_DMA + DMA_SGE_OFFSET }, u64>(0);
}

/// One receive request of at most one SGE, written and published: the
/// straight path of `ibv_post_recv` (the C library's, through the
/// `internals` feature, and [`post_recv`]'s for a list of one). `false`,
/// nothing written, if the queue is full or takes no SGE (`max_sge` 0):
/// the general path then names the error. One SGE always fits the
/// element (`RECV_MIN`), so nothing is checked at run time but room.
#[inline(always)]
pub fn post_recv_straight(mut prod: Producer<'_, RECV_MIN>, max_sge: u32, wr_id: u64, sge: Option<&Sge>) -> bool {
    if sge.is_some() && max_sge == 0 {
        return false;
    }
    let Some(mut slot) = prod.slot(0) else {
        return false;
    };
    put_recv_one(&mut slot, wr_id, sge);
    prod.publish(1);
    true
}

/// A receive WQE of at most one SGE (which always fits the element).
#[inline(always)]
fn put_recv_one(slot: &mut SlotMut<'_, RECV_MIN>, wr_id: u64, sge: Option<&Sge>) {
    let (len, num_sge) = match sge {
        Some(g) => {
            // `ibv_sge` and `rxe_sge` are one layout.
            slot.put::<RECV_HDR, Sge>(*g);
            (g.length, 1)
        }
        None => (0, 0),
    };
    put_recv_header(slot, wr_id, len, num_sge);
}

/// `ibv_post_recv` / `ibv_post_srq_recv` on rxe: checks and writes every
/// receive WQE of `wrs`, and publishes them. No doorbell. If a request is
/// refused nothing is published.
#[inline(always)]
pub fn post_recv(
    verb: &'static str,
    mut prod: Producer<'_, RECV_MIN>,
    max_sge: u32,
    wrs: &[RecvWr<'_>],
) -> Result<(), PostError> {
    if put_recv_first(&mut prod, max_sge, wrs) {
        prod.publish(1);
        return Ok(());
    }
    post_recv_list(verb, prod, max_sge, wrs)
}

/// The one-request path of [`post_recv`]: one request of at most one SGE
/// (the common case), written into the first free slot with the straight
/// path's stores (one SGE always fits the element: no run-time bound
/// check) and no loop; the caller then publishes one slot. `false`,
/// nothing written, for what it does not take (a list, more SGEs, a queue
/// that takes none, a full queue): the general way names the error.
#[inline(always)]
pub fn put_recv_first(prod: &mut Producer<'_, RECV_MIN>, max_sge: u32, wrs: &[RecvWr<'_>]) -> bool {
    let [wr] = wrs else { return false };
    let sge = match wr.sg_list {
        [] => None,
        [g] if max_sge > 0 => Some(g),
        _ => return false,
    };
    let Some(mut slot) = prod.slot(0) else { return false };
    put_recv_one(&mut slot, wr.wr_id, sge);
    true
}

/// [`post_recv`] of what its one-request path leaves, out of line (its
/// loop and checks would give that path their registers and frame).
#[inline(never)]
pub fn post_recv_list(verb: &'static str, mut prod: Producer<'_, RECV_MIN>, max_sge: u32, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
    let free = prod.free();
    if wrs.len() > free as usize {
        return Err(refuse(verb, FULL, free as usize));
    }
    for (i, wr) in wrs.iter().enumerate() {
        // `i < wrs.len() <= free`: there is a slot.
        let Some(mut slot) = prod.slot(i as u32) else {
            return Err(refuse(verb, FULL, i));
        };
        if let Err(why) = write_recv(&mut slot, wr, max_sge) {
            return Err(refuse(verb, why, i));
        }
    }
    prod.publish(wrs.len() as u32);
    Ok(())
}

/// Whether the CQ ring is empty: the test every poll starts with, made
/// without taking the claim flag (an answer that is stale by the time it
/// returns is as good as one taken a moment earlier).
#[inline(always)]
pub fn is_empty(cq: &CompletionQueue) -> bool {
    // The consumer index first: the acquire load of the producer index
    // after it then costs no second load of the ring's address.
    let cons = cq.consumer_word().load(Ordering::Relaxed);
    cq.producer_word().load(Ordering::Acquire) == cons
}

/// `ibv_poll_cq` on rxe: copies up to `out.len()` completions from the
/// ring and frees their slots. Returns how many (the first that many
/// elements of `out` are written: `out` may be uninitialised memory, see
/// [`crate::wc::WcOut`]). Another thread's copying poll is waited for
/// ([`Queue::consumer_contended`](super::queue::Queue::consumer_contended));
/// a `poll_with` closure holding the CQ is `Err(Claim::Lent)` at once. The empty case is inlined into
/// the caller; the copying is not.
#[inline(always)]
pub fn poll<S: crate::wc::WcOut>(cq: &CompletionQueue, out: &mut [S]) -> Result<usize, Claim> {
    if is_empty(cq) || out.is_empty() {
        return Ok(0);
    }
    poll_copy(cq, out).map(|n| n as usize)
}

/// [`poll`] past the empty check (`Cq::poll`'s copy): one out-of-line
/// call, its outcome read back here.
#[inline(always)]
pub fn poll_copy<S: crate::wc::WcOut>(cq: &CompletionQueue, out: &mut [S]) -> Result<u32, Claim> {
    outcome(poll_copied(cq, out))
}

/// [`poll_copy`]'s out-of-line part.
#[inline(never)]
fn poll_copied<S: crate::wc::WcOut>(cq: &CompletionQueue, out: &mut [S]) -> Polled {
    poll_claim(cq, out)
}

/// [`poll`] past the empty check, for a caller that makes its own
/// out-of-line call around it (the C library's `ibv_poll_cq`, through
/// `ProviderCq::poll_leave_wait`): claims the CQ, copies up to `out.len()`
/// completions, frees their slots, and returns how many.
#[inline(always)]
pub fn poll_nonempty<S: crate::wc::WcOut>(cq: &CompletionQueue, out: &mut [S]) -> Result<u32, Claim> {
    outcome(poll_claim(cq, out))
}

/// [`poll_nonempty`] as a [`Polled`].
#[inline(always)]
fn poll_claim<S: crate::wc::WcOut>(cq: &CompletionQueue, out: &mut [S]) -> Polled {
    match cq.consumer_now() {
        Some(c) => copy_claimed(c, out),
        None => poll_contended(cq, out),
    }
}

/// [`poll_nonempty`] when the CQ's claim was taken: waits for another
/// thread's copying poll (or stops at once with [`Claim::Lent`] while a
/// `poll_with` closure runs), then copies. Out of line and whole, so the
/// uncontended poll saves no register for it (it is a tail call).
#[cold]
#[inline(never)]
fn poll_contended<S: crate::wc::WcOut>(cq: &CompletionQueue, out: &mut [S]) -> Polled {
    match cq.consumer_contended() {
        Ok(c) => copy_slow(c, out),
        Err(claim) => stopped(claim),
    }
}

/// The copy of [`poll_nonempty`] under the claim `c`: the records before
/// the end of the ring at rxe's element stride inline; a batch that wraps
/// (or a ring of another stride) and one whose flag words need putting
/// right go on out of line, as tail calls that take the claim along.
#[inline(always)]
fn copy_claimed<S: crate::wc::WcOut>(c: Consumer<'_, CQ_MIN>, out: &mut [S]) -> Polled {
    let (cons, n) = c.ready(out.len());
    // `ready` caps `n` at `out.len()`.
    let got = out.get_mut(..n as usize).unwrap_or_default();
    // The records are copied as they are, their flag words ORed together
    // on the way (one instruction each); only a batch in which one of the
    // two swapped bits is set is gone over again to put them right.
    let copied = c.reader::<AbiWc>().copy_fast::<WC_FLAGS, CQE_LOG2, _>(cons, got, |slot, wc| {
        slot.set(Wc::from_abi(wc));
    });
    match copied {
        None => copy_slow(c, out),
        Some(flags) if flags & FLAGS_SWAPPED != 0 => fix_release(c, cons, got),
        Some(_) => {
            c.release(cons, n);
            polled(n)
        }
    }
}

/// `Cq::poll`'s copy on rxe, holding the CQ's resize guard `cq` (see
/// `ProviderCq::poll_leave`): the uncontended poll of records before the
/// end of the ring at rxe's element stride, `Cq::poll`'s one out-of-line
/// function, with the guard's release; the rest (a claim another poller
/// holds, a batch that wraps, another stride) a tail call that takes the
/// guard along. Its own function (no other provider's copy beside it, to
/// which more registers would be saved for), reached by one jump from
/// `Cq::poll`, whose `Result` it writes: `Cq::poll` keeps nothing across
/// a call and its empty poll needs no stack frame. `out` may be empty
/// (nothing copied, the index stored as it was).
#[inline(never)]
pub(crate) fn poll_leave<S: crate::wc::WcOut>(cq: Held<'_, super::cq::RxeCq>, out: &mut [S]) -> crate::error::Result<usize> {
    let Some(c) = cq.get().queue().consumer_now() else {
        return poll_leave_slow(cq, out);
    };
    let (cons, n) = c.ready(out.len());
    // `ready` caps `n` at `out.len()`.
    let got = out.get_mut(..n as usize).unwrap_or_default();
    // The records are copied as they are, their flag words ORed together
    // on the way (one instruction each); only a batch in which one of the
    // two swapped bits is set is gone over again to put them right.
    let copied = c.reader::<AbiWc>().copy_fast::<WC_FLAGS, CQE_LOG2, _>(cons, got, |slot, wc| {
        slot.set(Wc::from_abi(wc));
    });
    let Some(flags) = copied else {
        // Nothing copied: the general way, claimed afresh.
        drop(c);
        return poll_leave_slow(cq, out);
    };
    if flags & FLAGS_SWAPPED != 0 {
        // The claim goes along (released there): only the guard's leave
        // is left to do after the call, which so keeps one register.
        return poll_result(fix_release(c, cons, got));
    }
    c.release(cons, n);
    Ok(n as usize)
}

/// [`poll_leave`] of what its inline part does not take: waits for
/// another thread's copying poll (`Busy` at once while a `poll_with`
/// closure holds the CQ), then copies any batch. Drops the guard last.
#[cold]
#[inline(never)]
fn poll_leave_slow<S: crate::wc::WcOut>(cq: Held<'_, super::cq::RxeCq>, out: &mut [S]) -> crate::error::Result<usize> {
    let q = cq.get().queue();
    let c = match q.consumer_now() {
        Some(c) => c,
        None => q.consumer_contended().map_err(crate::providers::dispatch::busy)?,
    };
    poll_result(copy_slow(c, out))
}

/// [`copy_claimed`] of any batch: the wrapped one, or a ring whose stride
/// is not [`CQE_LOG2`]'s. Takes the claim along and drops it.
#[cold]
#[inline(never)]
fn copy_slow<S: crate::wc::WcOut>(c: Consumer<'_, CQ_MIN>, out: &mut [S]) -> Polled {
    let (cons, n) = c.ready(out.len());
    let got = out.get_mut(..n as usize).unwrap_or_default();
    let flags = c.reader::<AbiWc>().copy_into_or::<WC_FLAGS, _>(cons, got, |slot, wc| {
        slot.set(Wc::from_abi(wc));
    });
    if flags & FLAGS_SWAPPED != 0 {
        return fix_release(c, cons, got);
    }
    c.release(cons, n);
    polled(n)
}

/// Puts right the flag words of the completions of `got` (copied from the
/// slots from `cons`, still the consumer's: the kernel has not changed
/// them) in which one of the two swapped bits is set, then frees the
/// slots and drops the claim. Out of line: only a send with invalidate
/// (or a checksum flag) brings it.
#[cold]
#[inline(never)]
fn fix_release<S: crate::wc::WcOut>(c: Consumer<'_, CQ_MIN>, cons: u32, got: &mut [S]) -> Polled {
    c.reader::<AbiWc>().copy_into_or::<WC_FLAGS, _>(cons, got, |slot, wc| {
        if wc.wc_flags & FLAGS_SWAPPED != 0 {
            let flags = kernel_wc_flags_to_ibv(wc.wc_flags);
            slot.set(Wc::from_abi(wc)).as_abi_mut().wc_flags = flags;
        }
    });
    let n = got.len() as u32;
    c.release(cons, n);
    polled(n)
}

/// Drops the completions of QP `qp_num` that are waiting in `cq` (the QP
/// went to RESET: rdma-core's hardware providers clean its CQs then, and
/// rdma-core's test suite relies on it when it brings a QP back from ERR:
/// the flushed completions of its old work requests are gone). Waits for
/// another thread's copying poll; `Err(Claim::Lent)` while a `poll_with`
/// closure holds the CQ (nothing is dropped then). Returns how many.
pub fn discard_qp(cq: &CompletionQueue, qp_num: u32) -> Result<u32, Claim> {
    let c = match cq.consumer_now() {
        Some(c) => c,
        None => cq.consumer_contended()?,
    };
    let (cons, n) = c.ready(usize::MAX);
    Ok(c.discard::<AbiWc>(cons, n, |wc| wc.qp_num != qp_num))
}

/// Frees, when dropped, the slots of the completions already handed to
/// a `poll_with` closure: at the end of the poll, or while unwinding from
/// a panic in the closure (the completions it was given are then
/// consumed, not handed out a second time).
struct Handed<'c, 'q> {
    c: &'c Consumer<'q, CQ_MIN>,
    cons: u32,
    n: u32,
}

impl Drop for Handed<'_, '_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.c.release(self.cons, self.n);
    }
}

/// Hands up to `max` completions to `f`, in ring order, then frees their
/// slots with one release store. Returns how many, or `Err` with the
/// state of the claim if another consumer holds the CQ (never waits,
/// whoever holds it: a poll of the same CQ from inside `f` gets
/// [`Claim::Lent`]). Each
/// completion is read into a local `Wc` (the kernel's flag bits put
/// right) that `f` borrows; when `f` is inlined, only the fields it reads
/// are loaded. A panic in `f` frees the slots handed out so far and the
/// claim.
#[inline(always)]
pub fn poll_with(cq: &CompletionQueue, max: usize, mut f: impl FnMut(&Wc)) -> Result<usize, Claim> {
    if is_empty(cq) || max == 0 {
        return Ok(0);
    }
    let c = cq.try_consumer()?;
    c.lend();
    let ring = c.reader::<AbiWc>();
    let (cons, n) = c.ready(max);
    // Dropped before `c`: the slots are freed before the claim.
    let mut handed = Handed { c: &c, cons, n: 0 };
    let hand = |mut wc: AbiWc| {
        wc.wc_flags = kernel_wc_flags_to_ibv(wc.wc_flags);
        handed.n += 1;
        f(Wc::from_abi_ref(&wc));
    };
    if max == 1 {
        // One completion (a latency loop's wait; `max` is a constant
        // once this is inlined): its one slot, without `for_each`'s split
        // of the batch at the end of the ring.
        if n == 1 {
            let mut hand = hand;
            hand(ring.get(cons));
        }
    } else {
        ring.for_each(cons, n as usize, hand);
    }
    Ok(n as usize)
}

/// Where a CQ record's flag word is.
const WC_FLAGS: usize = offset_of!(AbiWc, wc_flags);

/// The two bits [`kernel_wc_flags_to_ibv`] swaps.
const FLAGS_SWAPPED: u32 = 0b1100;

/// `log2_elem_size` of the CQ rings rxe makes: its element is `struct
/// rxe_cqe`, the union of the kernel's `struct ib_wc` (72 bytes on a
/// 64-bit kernel) and `struct ib_uverbs_wc` (48), rounded up to a power of
/// two by `rxe_queue_init`. The copy loop takes it as a constant stride;
/// a ring whose header says otherwise is copied by the general loop.
const CQE_LOG2: u32 = 7;

/// rxe writes the kernel's `enum ib_wc_flags` into the ring, whose bits
/// 2 and 3 are swapped relative to `enum ibv_wc_flags`:
/// `IB_WC_WITH_INVALIDATE` is bit 2 (libibverbs' `IBV_WC_IP_CSUM_OK`) and
/// `IB_WC_IP_CSUM_OK` is bit 3 (`IBV_WC_WITH_INV`). rdma-core copies the
/// record unchanged, so its users see a send-with-invalidate as
/// "checksum ok"; we translate.
#[inline]
pub const fn kernel_wc_flags_to_ibv(k: u32) -> u32 {
    // Swapping two bits is flipping both when they differ.
    let differ = ((k >> 1) ^ k) & 0b100;
    k ^ (differ | (differ << 1))
}

#[cfg(test)]
mod tests {
    use super::kernel_wc_flags_to_ibv;

    /// The CQ claim on plain memory (a memfd stands in for the device
    /// file, as in `benches/rings.rs`): re-entry, contention and a panic
    /// in a `poll_with` closure.
    #[cfg(feature = "std")]
    mod claim {
        use core::sync::atomic::Ordering;

        use super::super::{poll, poll_with, Claim, CompletionQueue};
        use crate::abi::uverbs::Wc as AbiWc;
        use crate::mmap::Mapping;
        use crate::providers::rxe::queue::{Mminfo, Queue};
        use crate::wc::Wc;
        use rustix::fd::OwnedFd;
        use zerocopy::FromZeros;

        const SLOTS: u32 = 8;
        const LOG2: u32 = 6;
        const LEN: usize = 384 + ((SLOTS as usize) << LOG2);

        /// A CQ ring holding completions with `wr_id`s `ids` (the test
        /// plays the kernel: writes the slots, then the producer index).
        fn cq_with(ids: &[u64]) -> (OwnedFd, CompletionQueue) {
            let fd = rustix::fs::memfd_create("verbs-claim-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
            rustix::fs::ftruncate(&fd, LEN as u64).unwrap();
            let mut kernel = Mapping::new("test", &fd, 0, LEN).unwrap();
            assert!(kernel.write::<u32>(0, LOG2) && kernel.write::<u32>(4, SLOTS - 1));
            let cq: CompletionQueue = Queue::map("test", &fd, Mminfo { offset: 0, size: LEN as u32, pad: 0 }).unwrap();
            for (i, &id) in ids.iter().enumerate() {
                let mut wc = AbiWc::new_zeroed();
                wc.wr_id = id;
                assert!(kernel.write(cq.slot_offset(i as u32), wc));
            }
            cq.producer_word().store(ids.len() as u32, Ordering::Release);
            (fd, cq)
        }

        fn ids(cq: &CompletionQueue) -> Vec<u64> {
            let mut out = [Wc::ZERO; 8];
            let n = poll(cq, &mut out).expect("the CQ is free");
            out[..n].iter().map(Wc::wr_id).collect()
        }

        #[test]
        fn discarding_a_qps_completions_keeps_the_others_in_order() {
            let (_fd, cq) = cq_with(&[1, 2, 3, 4, 5, 6]);
            // wr_ids 2, 3 and 5 belong to QP 9; rewrite their qp_num as
            // the kernel would have written it.
            let c = cq.try_consumer().unwrap();
            let (cons, n) = c.ready(usize::MAX);
            assert_eq!((cons, n), (0, 6));
            drop(c);
            for i in [1u32, 2, 4] {
                let off = cq.slot_offset(i) + core::mem::offset_of!(AbiWc, qp_num);
                // The test plays the kernel: a second mapping of the memfd.
                let mut k = Mapping::new("test", &_fd, 0, LEN).unwrap();
                assert!(k.write::<u32>(off, 9));
            }
            assert_eq!(super::super::discard_qp(&cq, 9), Ok(3));
            assert_eq!(ids(&cq), [1, 4, 6]);
            assert_eq!(super::super::discard_qp(&cq, 9), Ok(0), "an empty CQ");
            // A claim lent to caller code: nothing is dropped.
            let (_fd2, cq2) = cq_with(&[7]);
            let c = cq2.try_consumer().unwrap();
            c.lend();
            assert_eq!(super::super::discard_qp(&cq2, 0), Err(Claim::Lent));
            drop(c);
            assert_eq!(ids(&cq2), [7]);
        }

        #[test]
        fn polling_from_inside_poll_with_is_refused_not_a_deadlock() {
            let (_fd, cq) = cq_with(&[1, 2, 3]);
            let mut seen = Vec::new();
            let n = poll_with(&cq, 2, |wc| {
                seen.push(wc.wr_id());
                let mut out = [Wc::ZERO; 4];
                assert_eq!(poll(&cq, &mut out), Err(Claim::Lent));
                assert_eq!(poll_with(&cq, 4, |_| panic!("handed out twice")), Err(Claim::Lent));
            })
            .unwrap();
            assert_eq!((n, seen), (2, vec![1, 2]));
            assert_eq!(ids(&cq), [3], "the inner polls took nothing");
        }

        #[test]
        fn a_poll_waits_for_another_threads_copying_poll_but_not_for_a_lent_claim() {
            let (_fd, cq) = cq_with(&[7, 8]);
            // Another thread's copying poll holds the claim (library code,
            // bounded): this thread's polls wait for it (issue 24 item 6;
            // they used to fail with `Held`, i.e. `ErrorKind::Busy`).
            let c = cq.try_consumer().unwrap();
            std::thread::scope(|s| {
                let copying = s.spawn(|| {
                    let mut out = [Wc::ZERO; 1];
                    poll(&cq, &mut out).map(|n| (n, out[0].wr_id()))
                });
                std::thread::sleep(core::time::Duration::from_millis(20));
                drop(c);
                assert_eq!(copying.join().unwrap(), Ok((1, 7)), "the poll waited for the held claim");
            });
            // `poll_with` never waits (its callers get `Busy` from a
            // closure on another thread anyway, so they retry).
            let c = cq.try_consumer().unwrap();
            assert_eq!(poll_with(&cq, 1, |_| ()), Err(Claim::Held));
            drop(c);
            assert_eq!(ids(&cq), [8]);
            // A claim lent to caller code is refused at once.
            let (_fd, cq) = cq_with(&[9]);
            let c = cq.try_consumer().unwrap();
            c.lend();
            let mut out = [Wc::ZERO; 1];
            assert_eq!(poll(&cq, &mut out), Err(Claim::Lent));
            assert_eq!(poll_with(&cq, 1, |_| ()), Err(Claim::Lent));
            drop(c);
            assert_eq!(ids(&cq), [9]);
        }

        #[test]
        fn a_panic_in_the_closure_releases_the_cq_and_consumes_what_it_saw() {
            let (_fd, cq) = cq_with(&[1, 2, 3, 4]);
            let r = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| {
                poll_with(&cq, 4, |wc| assert_ne!(wc.wr_id(), 2, "caller code panics"))
            }));
            assert!(r.is_err());
            // The claim is free again, and 1 and 2 were handed out once.
            assert_eq!(ids(&cq), [3, 4]);
            assert_eq!(ids(&cq), [0u64; 0]);
        }
    }

    #[test]
    fn wc_flags_swap_bits_2_and_3_only() {
        for k in 0u32..64 {
            for high in [0u32, 1 << 31, 0xffff_0000] {
                let v = k | high;
                let (b2, b3) = ((v >> 2) & 1, (v >> 3) & 1);
                let want = (v & !0b1100) | (b2 << 3) | (b3 << 2);
                assert_eq!(kernel_wc_flags_to_ibv(v), want, "{v:#x}");
            }
        }
        // IB_WC_WITH_INVALIDATE (kernel bit 2) is IBV_WC_WITH_INV (bit 3).
        assert_eq!(kernel_wc_flags_to_ibv(1 << 2), 1 << 3);
    }
}
