//! The siw data path, posting side: send and receive work requests
//! written in place into the mapped arrays (`struct siw_sqe` /
//! `struct siw_rqe` of `<rdma/siw-abi.h>`).
//!
//! Facts from the kernel's `siw_qp.c` / `siw_qp_rx.c` / `siw_verbs.c` and
//! rdma-core's `providers/siw/siw.c` this follows:
//! * operations: SEND, SEND with invalidate (`SIW_OP_SEND_REMOTE_INV`,
//!   the rkey to invalidate in `rkey`), RDMA WRITE, RDMA READ. siw has no
//!   immediate data (its tx path refuses `SIW_OP_SEND_WITH_IMM`), no
//!   atomics, and local invalidate / fast registration only for kernel
//!   clients: those are refused here with an `Unsupported` error;
//! * inline data sits in `sge[1..]` (at most 80 bytes), its length in
//!   `sge[0].length`; the kernel accepts it only with SEND and RDMA WRITE;
//! * an RDMA READ lands in exactly one SGE (iWARP) and cannot be fenced;
//! * a send element is handed over with its flags (`VALID`, `SIGNALLED`
//!   also for `sq_sig_all`, `SOLICITED`, `READ_FENCE`, `INLINE`); a
//!   receive element with flags exactly `VALID` (the kernel compares);
//! * the kernel looks at a user send queue when it gets a zero-WR
//!   `POST_SEND` (the doorbell, which processes the queue in the system
//!   call) and then goes on by itself while it finds valid elements: a
//!   post whose previous element is still valid needs no doorbell;
//!   receive queues need none.
//!
//! Every request of a list is checked, and the elements for all of them
//! found free, before the first is handed over: a refused list leaves
//! every element as it was.

use core::mem::offset_of;

use super::abi::{
    SiwRqe, SiwSge, SiwSqe, SIW_MAX_INLINE, SIW_MAX_SGE, SIW_OP_READ, SIW_OP_SEND, SIW_OP_SEND_REMOTE_INV, SIW_OP_WRITE,
    SIW_WQE_INLINE, SIW_WQE_READ_FENCE, SIW_WQE_SIGNALLED, SIW_WQE_SOLICITED, SIW_WQE_VALID,
};
use super::ring::{Producer, SendRing, SlotMut};
use super::sqe_bits;
use crate::abi::uverbs::WR_RDMA_READ;
use crate::error::ErrorKind;
use crate::qp::kind::QpType;
use crate::wr::{check_recv, check_send, Payload, PostError, RecvWr, Refusal, SendFlags, SendOp, SendWr, Sge};

const SQE: usize = core::mem::size_of::<SiwSqe>();
pub(super) const RQE: usize = core::mem::size_of::<SiwRqe>();

// Field offsets, shared with the straight paths (straight.rs).
pub(super) const SQE_ID: usize = offset_of!(SiwSqe, id);
pub(super) const SQE_NUM_SGE: usize = offset_of!(SiwSqe, num_sge);
const SQE_OPCODE: usize = offset_of!(SiwSqe, opcode);
pub(super) const SQE_RKEY: usize = offset_of!(SiwSqe, rkey);
pub(super) const SQE_RADDR: usize = offset_of!(SiwSqe, raddr);
pub(super) const SQE_SGE: usize = offset_of!(SiwSqe, sge);
/// Inline data: from `sge[1]` on.
pub(super) const SQE_INLINE: usize = SQE_SGE + core::mem::size_of::<SiwSge>();
pub(super) const RQE_ID: usize = offset_of!(SiwRqe, id);
pub(super) const RQE_NUM_SGE: usize = offset_of!(SiwRqe, num_sge);
pub(super) const RQE_SGE: usize = offset_of!(SiwRqe, sge);

/// What a send queue accepts: the capacities the kernel granted, capped
/// at what a `struct siw_sqe` holds.
#[derive(Clone, Copy, Debug)]
pub struct SendLimits {
    /// `max_send_sge` (at most `SIW_MAX_SGE`).
    pub max_sge: u32,
    /// `max_inline_data` (at most `SIW_MAX_INLINE`).
    pub max_inline: u32,
    /// `sq_sig_all`: every request is signaled.
    pub sig_all: bool,
}

impl SendLimits {
    /// The limits of a QP granted `max_sge` / `max_inline`.
    pub fn new(max_sge: u32, max_inline: u32, sig_all: bool) -> Self {
        Self { max_sge: max_sge.min(SIW_MAX_SGE), max_inline: max_inline.min(SIW_MAX_INLINE), sig_all }
    }
}

const POST_SEND: &str = "ibv_post_send";

/// A list longer than the free elements.
const FULL: Refusal = Refusal(ErrorKind::QueueFull, "the queue has fewer free elements than the list has requests");

/// A refused request, out of line.
#[cold]
#[inline(never)]
fn refuse(verb: &'static str, why: Refusal, index: usize) -> PostError {
    PostError::refused(verb, why, index)
}

/// What siw cannot do with `op`, or `None` if it can.
#[inline(always)]
const fn lacks(op: &SendOp<'_>) -> Option<&'static str> {
    match op {
        SendOp::Send | SendOp::SendWithInv { .. } | SendOp::RdmaWrite { .. } | SendOp::RdmaRead { .. } => None,
        SendOp::SendWithImm { .. } | SendOp::RdmaWriteWithImm { .. } => {
            Some("siw (iWARP) has no immediate data: SEND and RDMA WRITE with immediate are not supported")
        }
        SendOp::AtomicCmpSwp { .. } | SendOp::AtomicFetchAdd { .. } | SendOp::AtomicWrite { .. } => {
            Some("siw (iWARP) has no atomic operations")
        }
        SendOp::LocalInv { .. } => Some("siw offers local invalidate to kernel clients only"),
        SendOp::BindMw(_) => Some("siw has no memory windows"),
    }
}

/// The checks of one send request: the provider-independent ones
/// (siw's QPs are RC), then what siw lacks or restricts.
#[inline(always)]
fn check_siw_send(wr: &SendWr<'_>, lim: &SendLimits) -> Result<(), Refusal> {
    check_send(wr, QpType::Rc, lim.max_sge, lim.max_inline)?;
    if let Some(why) = lacks(&wr.op) {
        return Err(Refusal(ErrorKind::Unsupported, why));
    }
    if let Payload::Inline(_) = wr.payload {
        if !matches!(wr.op, SendOp::Send | SendOp::RdmaWrite { .. }) {
            return Err(Refusal(ErrorKind::Unsupported, "siw sends inline data only with SEND and RDMA WRITE"));
        }
    }
    if let SendOp::RdmaRead { .. } = wr.op {
        match wr.payload {
            Payload::Sges([_]) => {}
            Payload::Sges([]) => {
                return Err(Refusal(ErrorKind::InvalidArgument, "an RDMA READ on siw (iWARP) lands in exactly one SGE"))
            }
            _ => return Err(Refusal(ErrorKind::TooManySge, "an RDMA READ on siw (iWARP) lands in exactly one SGE")),
        }
        if wr.flags.contains(SendFlags::FENCE) {
            return Err(Refusal(ErrorKind::Unsupported, "siw cannot fence an RDMA READ"));
        }
    }
    Ok(())
}

/// The `SIW_WQE_*` flags a (checked) send request is handed over with.
#[inline(always)]
fn sqe_flags(wr: &SendWr<'_>, lim: &SendLimits) -> u16 {
    let mut flags = SIW_WQE_VALID;
    if let Payload::Inline(_) = wr.payload {
        flags |= SIW_WQE_INLINE;
    }
    if wr.flags.contains(SendFlags::SIGNALED) || lim.sig_all {
        flags |= SIW_WQE_SIGNALLED;
    }
    if wr.flags.contains(SendFlags::SOLICITED) {
        flags |= SIW_WQE_SOLICITED;
    }
    if wr.flags.contains(SendFlags::FENCE) {
        flags |= SIW_WQE_READ_FENCE;
    }
    flags
}

/// Writes the checked request `wr` into `slot` (everything but the flags).
#[inline(always)]
fn write_send(slot: &mut SlotMut<'_, SQE>, wr: &SendWr<'_>) {
    let (opcode, raddr, rkey) = match wr.op {
        SendOp::SendWithInv { invalidate_rkey } => (SIW_OP_SEND_REMOTE_INV, 0, invalidate_rkey),
        SendOp::RdmaWrite { remote_addr, rkey } => (SIW_OP_WRITE, remote_addr, rkey),
        SendOp::RdmaRead { remote_addr, rkey } => (SIW_OP_READ, remote_addr, rkey),
        // `check_siw_send` let only these four through.
        _ => (SIW_OP_SEND, 0, 0),
    };
    slot.put::<SQE_ID, u64>(wr.wr_id);
    slot.put::<SQE_OPCODE, u8>(opcode);
    slot.put::<SQE_RKEY, u32>(rkey);
    slot.put::<SQE_RADDR, u64>(raddr);
    match wr.payload {
        Payload::Sges(s) => {
            slot.put::<SQE_NUM_SGE, u8>(s.len() as u8);
            // `ibv_sge` and `siw_sge` are one layout; `check_send` capped
            // the count at `SIW_MAX_SGE`, which the element holds.
            let fits = slot.put_all(SQE_SGE, s);
            debug_assert!(fits);
        }
        Payload::Inline(d) => {
            slot.put::<SQE_NUM_SGE, u8>(1);
            slot.put::<SQE_SGE, SiwSge>(SiwSge { laddr: 0, length: d.len() as u32, lkey: 0 });
            // At most `SIW_MAX_INLINE` (checked), the size of `sge[1..]`.
            let fits = slot.put_bytes(SQE_INLINE, d);
            debug_assert!(fits);
        }
    }
}

/// `ibv_post_send` on siw: finds free elements for every request of
/// `wrs`, checks and writes each, then hands them over in order.
/// Returns whether the kernel must be told (the doorbell): `false` if
/// the list is empty, or if the element before the first one written is
/// still the kernel's (it is working through the queue and will go on to
/// these) and the list did not go round the whole array. If a request is
/// refused nothing is handed over: the elements written so far are still
/// user space's and the next post overwrites them.
#[inline]
pub fn post_send(sq: &mut SendRing, lim: &SendLimits, wrs: &[SendWr<'_>]) -> Result<bool, PostError> {
    let [wr] = wrs else { return post_send_list(sq, lim, wrs) };
    // One request (the common case): one element, no loops.
    let mut prod = sq.producer_mut();
    let Some(mut slot) = prod.first() else {
        return Err(refuse(POST_SEND, FULL, 0));
    };
    if let Err(why) = check_siw_send(wr, lim) {
        return Err(refuse(POST_SEND, why, 0));
    }
    write_send(&mut slot, wr);
    prod.give(0, sqe_flags(wr, lim));
    let ring = prod.capacity() == 1 || !prod.previous_pending();
    prod.advance(1);
    Ok(ring)
}

/// The straight path of `ibv_post_send` on siw, inlined into the caller:
/// one request of one SGE (or inline data, see below) on an RC QP, of
/// one of siw's four operations, written and handed over. `Some(ring)`
/// (whether the kernel must be told, as [`post_send`] returns it) if it
/// was; `None`, nothing written, for anything else and for anything
/// [`post_send`] would refuse, which the caller then hands to it. This
/// path never refuses on its own, so there is one place where requests
/// are judged: it takes exactly what `check_siw_send` lets through with
/// one SGE, and writes the element as `write_send` and `sqe_flags` do.
#[inline(always)]
pub fn post_gather(sq: &mut SendRing, lim: &SendLimits, wrs: &[SendWr<'_>]) -> Option<bool> {
    let [wr @ SendWr { payload: Payload::Sges([g]), ud: None, .. }] = wrs else { return None };
    // Unknown flag bits, a queue that takes no SGE, a message over 2^31
    // bytes: the general way names the error.
    let flags = wr.flags.bits();
    if flags & !SendFlags::all().bits() != 0 || lim.max_sge == 0 || g.length > 1 << 31 {
        return None;
    }
    // siw's four operations (a bit test of the tag, which is the
    // `ibv_wr_opcode`); the rest, and a fenced RDMA READ (iWARP cannot),
    // the general way refuses.
    let tag = wr.op.opcode();
    let (ok, opcode) = sqe_bits::siw_op(tag);
    if !ok || tag == WR_RDMA_READ && flags & SendFlags::FENCE.bits() != 0 {
        return None;
    }
    let mut prod = sq.producer_mut();
    let mut slot = prod.first()?;
    // Each arm stores what its operation carries, so that none of it
    // stays in a register past the match. SEND: zeros (the kernel does
    // not read them).
    match wr.op {
        SendOp::RdmaWrite { remote_addr, rkey } | SendOp::RdmaRead { remote_addr, rkey } => {
            slot.put::<SQE_RKEY, u32>(rkey);
            slot.put::<SQE_RADDR, u64>(remote_addr);
        }
        SendOp::SendWithInv { invalidate_rkey } => {
            slot.put::<SQE_RKEY, u32>(invalidate_rkey);
            slot.put::<SQE_RADDR, u64>(0);
        }
        _ => {
            slot.put::<SQE_RKEY, u32>(0);
            slot.put::<SQE_RADDR, u64>(0);
        }
    }
    slot.put::<SQE_ID, u64>(wr.wr_id);
    slot.put::<SQE_NUM_SGE, [u8; 2]>([1, opcode]);
    // `ibv_sge` and `siw_sge` are one layout.
    slot.put::<SQE_SGE, crate::wr::Sge>(*g);
    prod.give(0, sqe_bits::sqe_flags(flags, lim.sig_all));
    let ring = prod.capacity() == 1 || !prod.previous_pending();
    prod.advance(1);
    Some(ring)
}

/// [`post_send`] of a list other than one request, out of line (its
/// loops would give the one-request case their registers and frame).
#[inline(never)]
fn post_send_list(sq: &mut SendRing, lim: &SendLimits, wrs: &[SendWr<'_>]) -> Result<bool, PostError> {
    let mut prod = sq.producer_mut();
    let n = wrs.len().min(u32::MAX as usize) as u32;
    let free = prod.reserve(n);
    if (free as usize) < wrs.len() {
        return Err(refuse(POST_SEND, FULL, free as usize));
    }
    if n == 0 {
        return Ok(false);
    }
    for (k, wr) in wrs.iter().enumerate() {
        // `k < n == free`: reserved.
        let Some(mut slot) = prod.slot(k as u32) else {
            return Err(refuse(POST_SEND, FULL, k));
        };
        if let Err(why) = check_siw_send(wr, lim) {
            return Err(refuse(POST_SEND, why, k));
        }
        write_send(&mut slot, wr);
    }
    for (k, wr) in wrs.iter().enumerate() {
        prod.give(k as u32, sqe_flags(wr, lim));
    }
    let ring = n >= prod.capacity() || !prod.previous_pending();
    prod.advance(n);
    Ok(ring)
}

/// Checks `wr` and writes it into `slot` (everything but the flags).
#[inline(always)]
fn write_recv(slot: &mut SlotMut<'_, RQE>, wr: &RecvWr<'_>, max_sge: u32) -> Result<(), Refusal> {
    check_recv(wr, max_sge.min(SIW_MAX_SGE))?;
    slot.put::<RQE_ID, u64>(wr.wr_id);
    slot.put::<RQE_NUM_SGE, u8>(wr.sg_list.len() as u8);
    if !slot.put_all(RQE_SGE, wr.sg_list) {
        return Err(Refusal(ErrorKind::TooManySge, "the SGEs do not fit in the kernel's receive queue element"));
    }
    Ok(())
}

/// `ibv_post_recv` / `ibv_post_srq_recv` on siw: finds free elements
/// for every receive of `wrs`, checks and writes each, then hands them
/// over in order (flags exactly `SIW_WQE_VALID`). No doorbell. If a
/// request is refused nothing is handed over.
#[inline(always)]
pub fn post_recv(verb: &'static str, mut prod: Producer<'_, RQE>, max_sge: u32, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
    if give_recv_one(&mut prod, max_sge, wrs) {
        prod.advance(1);
        return Ok(());
    }
    post_recv_list(verb, prod, max_sge, wrs)
}

/// The one-request path of [`post_recv`]: one request of one SGE (the
/// common case), written with the straight path's stores (one
/// SGE always fits the element: no run-time bound check), no loop, and
/// handed over; the caller then advances `prod` by one. `false`, nothing
/// written, for what it does not take (a list, more SGEs, a queue that
/// takes none, a full queue): the general way ([`post_recv_list`]) names
/// the error.
#[inline(always)]
pub fn give_recv_one(prod: &mut Producer<'_, RQE>, max_sge: u32, wrs: &[RecvWr<'_>]) -> bool {
    // A receive without SGEs (only zero-length messages land in it; siw
    // has no immediate data) goes the general way too.
    let [RecvWr { wr_id, sg_list: [g] }] = wrs else { return false };
    if max_sge == 0 {
        return false;
    }
    let Some(mut slot) = prod.first() else { return false };
    put_recv_one(&mut slot, *wr_id, Some(g));
    prod.give(0, SIW_WQE_VALID)
}

/// [`post_recv`] of what its one-request path leaves, out of line (its
/// loops and checks would give that path their registers and frame):
/// lists, and every request that is refused.
#[inline(never)]
pub fn post_recv_list(verb: &'static str, mut prod: Producer<'_, RQE>, max_sge: u32, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
    let n = wrs.len().min(u32::MAX as usize) as u32;
    let free = prod.reserve(n);
    if (free as usize) < wrs.len() {
        return Err(refuse(verb, FULL, free as usize));
    }
    for (k, wr) in wrs.iter().enumerate() {
        // `k < n == free`: reserved.
        let Some(mut slot) = prod.slot(k as u32) else {
            return Err(refuse(verb, FULL, k));
        };
        if let Err(why) = write_recv(&mut slot, wr, max_sge) {
            return Err(refuse(verb, why, k));
        }
    }
    for k in 0..n {
        prod.give(k, SIW_WQE_VALID);
    }
    prod.advance(n);
    Ok(())
}

/// Writes a receive of at most one SGE into `slot` (everything but the
/// flags): its id, the SGE count and the SGE. One SGE always fits the
/// element (`SIW_MAX_SGE` of them do).
#[inline(always)]
pub(crate) fn put_recv_one(slot: &mut SlotMut<'_, RQE>, wr_id: u64, sge: Option<&Sge>) {
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
