//! siw's straight paths (the provider seam's `post_send_straight` and
//! `post_recv_straight`): one plain request read field by field from the
//! caller's (for the C library: an `ibv_send_wr`'s) fields into its
//! `struct siw_sqe` / `struct siw_rqe`, with no `SendWr` built and taken
//! apart again. A request is judged here as [`post::post_send`](super::post::post_send)
//! judges it (siw's four operations, its inline and RDMA READ rules); a
//! request this path does not take is left untouched (nothing written,
//! nothing handed over) for the general path, which names the error.

use core::mem::offset_of;

use super::abi::{
    SiwSge, SiwSqe, SIW_OP_READ, SIW_OP_SEND, SIW_OP_SEND_REMOTE_INV, SIW_OP_WRITE, SIW_WQE_INLINE,
    SIW_WQE_READ_FENCE, SIW_WQE_SIGNALLED, SIW_WQE_SOLICITED, SIW_WQE_VALID,
};
use super::post::{
    SendLimits, RQE, RQE_ID, RQE_NUM_SGE, RQE_SGE, SQE_ID, SQE_INLINE, SQE_NUM_SGE, SQE_RADDR, SQE_RKEY, SQE_SGE,
};
use super::ring::{Producer, SendRing, SlotMut};
use crate::abi::uverbs::{WR_RDMA_READ, WR_RDMA_WRITE, WR_SEND, WR_SEND_WITH_INV};
use crate::providers::seam::{Plain, StraightWr};
use crate::qp::kind::QpType;
use crate::wr::{SendFlags, Sge};

// `num_sge` and `opcode`, adjacent bytes after the flags word: one store.
const _: () = assert!(SQE_NUM_SGE + 1 == offset_of!(SiwSqe, opcode));

/// siw's operations (one bit per `ibv_wr_opcode`): SEND, SEND with
/// invalidate, RDMA WRITE, RDMA READ (siw has no immediate data, no
/// atomics; local invalidate and binds are for kernel clients).
const STRAIGHT_OPS: u32 = 1 << WR_SEND | 1 << WR_SEND_WITH_INV | 1 << WR_RDMA_WRITE | 1 << WR_RDMA_READ;

/// The `SIW_OP_*` of each straight `ibv_wr_opcode`, four bits each
/// (opcodes below 16): one shift and mask instead of a match.
const SIW_OPS: u64 = (SIW_OP_SEND as u64) << (4 * WR_SEND)
    | (SIW_OP_SEND_REMOTE_INV as u64) << (4 * WR_SEND_WITH_INV)
    | (SIW_OP_WRITE as u64) << (4 * WR_RDMA_WRITE)
    | (SIW_OP_READ as u64) << (4 * WR_RDMA_READ);
const _: () = assert!(WR_SEND_WITH_INV < 16 && WR_SEND < 16 && WR_RDMA_WRITE < 16 && WR_RDMA_READ < 16);

/// The `SIW_WQE_*` flags (without `VALID`, `INLINE`) of each of the 8
/// combinations of `IBV_SEND_FENCE`, `_SIGNALED`, `_SOLICITED`, a byte
/// each: one shift instead of three tests.
const SQE_FLAGS: u64 = {
    let mut t = 0u64;
    let mut f = 0;
    while f < 8 {
        let mut b = 0u16;
        if f & SendFlags::FENCE.bits() != 0 {
            b |= SIW_WQE_READ_FENCE;
        }
        if f & SendFlags::SIGNALED.bits() != 0 {
            b |= SIW_WQE_SIGNALLED;
        }
        if f & SendFlags::SOLICITED.bits() != 0 {
            b |= SIW_WQE_SOLICITED;
        }
        t |= (b as u64) << (8 * f);
        f += 1;
    }
    t
};
const _: () = assert!(SendFlags::all().bits() == 7 && SIW_WQE_READ_FENCE < 256);

/// Whether the `ibv_wr_opcode` `opcode` is one of siw's four operations
/// (one bit test; an opcode of 32 or more is none), and if so its
/// `SIW_OP_*` (one shift of a table word).
#[inline(always)]
pub(super) fn siw_op(opcode: u32) -> (bool, u8) {
    let ok = STRAIGHT_OPS.checked_shr(opcode).unwrap_or(0) & 1 != 0;
    (ok, (SIW_OPS >> (4 * (opcode & 15))) as u8 & 15)
}

/// The `SIW_WQE_*` flags of a request with the known `IBV_SEND_*` bits
/// `flags` (at most `SendFlags::all()`: the caller checked) on a QP with
/// `sq_sig_all` `sig_all`: `VALID`, and `SIGNALLED`, `SOLICITED`,
/// `READ_FENCE` as asked (without `INLINE`). One shift of a table word.
/// One table load: [`SQE_FLAGS_ALL`].
#[inline(always)]
pub(super) fn sqe_flags(flags: u32, sig_all: bool) -> u16 {
    debug_assert!(flags <= SendFlags::all().bits());
    u16::from(SQE_FLAGS_ALL[(flags & 7) as usize | usize::from(sig_all) << 3])
}

/// The `SIW_WQE_*` flags a request is handed over with (without
/// `INLINE`), by its `IBV_SEND_*` bits (low three bits of the index) and
/// `sq_sig_all` (bit 3).
static SQE_FLAGS_ALL: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        let mut f = SIW_WQE_VALID | (SQE_FLAGS >> (8 * (i & 7))) as u8 as u16;
        if i & 8 != 0 {
            f |= SIW_WQE_SIGNALLED;
        }
        t[i] = f as u8;
        i += 1;
    }
    t
};
const _: () = assert!((SIW_WQE_VALID | SIW_WQE_SIGNALLED | SIW_WQE_SOLICITED | SIW_WQE_READ_FENCE) >> 8 == 0);

/// Writes and hands over one straight request `s` on the send queue `sq`
/// (of transport `qp_type`, capacities `lim`): `Some(ring)` if it was,
/// with whether the kernel must be told (as [`post::post_send`](super::post::post_send)
/// returns it); `None`, nothing written, if it is not a straight request
/// (another operation or transport, unknown flag bits, several SGEs) or
/// the general path must judge it (a full queue, data over the
/// capacities, an RDMA READ siw refuses, inline data siw does not send).
#[inline(always)]
pub fn post_send_straight<W: StraightWr + ?Sized>(sq: &mut SendRing, qp_type: QpType, lim: &SendLimits, s: &W) -> Option<bool> {
    let opcode = s.opcode();
    let flags = s.flags();
    // siw's QPs are RC.
    let (ok, siw_op) = siw_op(opcode);
    if qp_type != QpType::Rc || !ok || flags & !SendFlags::all().bits() != 0 {
        return None;
    }
    let read = opcode == WR_RDMA_READ;
    // iWARP cannot fence an RDMA READ.
    if read && flags & SendFlags::FENCE.bits() != 0 {
        return None;
    }
    let data = s.data()?;
    let fits = match data {
        // An RDMA READ lands in exactly one SGE.
        Plain::Empty => !read,
        // A message is at most 2^31 bytes.
        Plain::Sge(g) => lim.max_sge >= 1 && g.length <= 1 << 31,
        // Inline data only with SEND and RDMA WRITE.
        Plain::Inline(d) => d.len() <= lim.max_inline as usize && (opcode == WR_SEND || opcode == WR_RDMA_WRITE),
    };
    if !fits {
        return None;
    }
    let mut prod = sq.producer_mut();
    let mut slot = prod.first()?;
    let (num_sge, inline) = match data {
        Plain::Empty => (0u8, 0),
        Plain::Sge(g) => {
            // `ibv_sge` and `siw_sge` are one layout.
            slot.put::<SQE_SGE, Sge>(*g);
            (1, 0)
        }
        Plain::Inline(d) => {
            slot.put::<SQE_SGE, SiwSge>(SiwSge { laddr: 0, length: d.len() as u32, lkey: 0 });
            // At most `SIW_MAX_INLINE` (the granted `max_inline_data` is
            // capped there), the size of `sge[1..]`.
            if !slot.put_bytes(SQE_INLINE, d) {
                return None;
            }
            (1, SIW_WQE_INLINE)
        }
    };
    slot.put::<SQE_ID, u64>(s.wr_id());
    slot.put::<SQE_NUM_SGE, [u8; 2]>([num_sge, siw_op]);
    // SEND with invalidate: the rkey to invalidate; SEND: zeros (the
    // kernel does not read them).
    let (raddr, rkey) = s.remote();
    slot.put::<SQE_RKEY, u32>(if opcode == WR_SEND_WITH_INV { s.ex() } else { rkey });
    slot.put::<SQE_RADDR, u64>(raddr);
    prod.give(0, inline | sqe_flags(flags, lim.sig_all));
    let ring = prod.capacity() == 1 || !prod.previous_pending();
    prod.advance(1);
    Some(ring)
}

/// One receive request of at most one SGE, written and handed over: the
/// straight path of `ibv_post_recv`. `false`, nothing written, if the
/// element at the position is not free or the queue takes no SGE
/// (`max_sge` 0): the general path then names the error. One SGE always
/// fits the element.
#[inline(always)]
pub fn post_recv_straight(mut prod: Producer<'_, RQE>, max_sge: u32, wr_id: u64, sge: Option<&Sge>) -> bool {
    // Nothing written: the general path names the error.
    if sge.is_some() && max_sge == 0 {
        return false;
    }
    let Some(mut slot) = prod.first() else { return false };
    put_recv_one(&mut slot, wr_id, sge);
    prod.give(0, SIW_WQE_VALID);
    prod.advance(1);
    true
}

/// Writes a receive of at most one SGE into `slot` (everything but the
/// flags): its id, the SGE count and the SGE. One SGE always fits the
/// element (`SIW_MAX_SGE` of them do).
#[inline(always)]
pub(super) fn put_recv_one(slot: &mut SlotMut<'_, RQE>, wr_id: u64, sge: Option<&Sge>) {
    slot.put::<RQE_ID, u64>(wr_id);
    match sge {
        Some(g) => {
            slot.put::<RQE_NUM_SGE, u8>(1);
            // `ibv_sge` and `siw_sge` are one layout.
            slot.put::<RQE_SGE, Sge>(*g);
        }
        None => slot.put::<RQE_NUM_SGE, u8>(0),
    }
}
