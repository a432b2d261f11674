//! siw's straight paths (the provider seam's `post_send_straight` and
//! `post_recv_straight`): one plain request read field by field from the
//! caller's (for the C library: an `ibv_send_wr`'s) fields into its
//! `struct siw_sqe` / `struct siw_rqe`, with no `SendWr` built and taken
//! apart again. A request is judged here as [`post::post_send`](super::post::post_send)
//! judges it (siw's four operations, its inline and RDMA READ rules); a
//! request this path does not take is left untouched (nothing written,
//! nothing handed over) for the general path, which names the error.

use core::mem::offset_of;

use super::abi::{SiwSge, SiwSqe, SIW_WQE_INLINE, SIW_WQE_VALID};
use super::post::{
    put_recv_one, SendLimits, RQE, SQE_ID, SQE_INLINE, SQE_NUM_SGE, SQE_RADDR, SQE_RKEY, SQE_SGE,
};
use super::ring::{Producer, SendRing};
use super::sqe_bits::{siw_op, sqe_flags};
use crate::abi::uverbs::{WR_RDMA_READ, WR_RDMA_WRITE, WR_SEND, WR_SEND_WITH_INV};
use crate::providers::seam::{Plain, StraightWr};
use crate::qp::kind::QpType;
use crate::wr::{SendFlags, Sge};

// `num_sge` and `opcode`, adjacent bytes after the flags word: one store.
const _: () = assert!(SQE_NUM_SGE + 1 == offset_of!(SiwSqe, opcode));


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
    // Nothing written: the general path names the error. (A test of
    // `max_sge` only where the SGE is, which the caller may know.)
    if let (Some(_), 0) = (sge, max_sge) {
        return false;
    }
    let Some(mut slot) = prod.first() else { return false };
    put_recv_one(&mut slot, wr_id, sge);
    prod.give(0, SIW_WQE_VALID);
    prod.advance(1);
    true
}
