//! The verbs of the mlx5 data path on a context's [`RegRef`]: post to a
//! QP or SRQ in its slot and ring its doorbell; poll a CQ, reaching the
//! queues its completions name; arm it.
//!
//! Locks (see [`super::registry`]): a post holds its queue's slot; a poll
//! holds the CQ's slot and, inside it, one QP or SRQ slot at a time. No
//! path takes a CQ slot while holding a QP or SRQ slot, so they cannot
//! deadlock; no caller code runs under any of them.

use super::cqe::{Queues, Source, Target};
use super::ctx::Doorbell;
use super::registry::{Entry, MadeBf, MadeSlot, RegRef, SlotGuard};
use super::sq::StraightRing;
use crate::ah::Ah;
use crate::providers::seam::StraightWr;
use crate::error::ErrorKind;
use crate::wc::{Wc, WcOut};
use crate::wr::{PostError, RecvWr, SendWr, Sge};

fn gone(verb: &'static str) -> PostError {
    PostError::new(verb, ErrorKind::InvalidArgument, 0)
}

/// `ibv_post_send` on the QP in slot `uidx`, then its doorbell.
#[inline]
pub fn post_send(reg: &RegRef, uidx: u32, db: Doorbell, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
    const VERB: &str = "ibv_post_send";
    let mut g = reg.lock(uidx).ok_or_else(|| gone(VERB))?;
    let Entry::Qp { sq: Some(sq), buf, .. } = &mut *g else { return Err(gone(VERB)) };
    // A UD request's vector: the AH's slot (locked after the QP's; only
    // posts lock AH slots, so the order cannot cycle).
    let av_of = |ah: &Ah<'_>| match reg.lock(ah.ah_num()).as_deref() {
        Some(Entry::Ah { av }) => Some(*av),
        _ => None,
    };
    let ring = sq.post(buf, wrs, av_of)?;
    reg.uars().ring_send(&db, sq, buf, ring);
    Ok(())
}

/// `mlx5dv_wr_raw_wqe` + `ibv_wr_complete` of the WQE `wqe` (request
/// `wr_id`) on the QP in slot `uidx`, then its doorbell
/// ([`SendQueue::post_raw`](super::sq::SendQueue::post_raw)).
pub fn post_raw(reg: &RegRef, uidx: u32, db: Doorbell, wqe: &[u8], wr_id: u64) -> Result<(), PostError> {
    const VERB: &str = "mlx5dv_wr_raw_wqe";
    let mut g = reg.lock(uidx).ok_or_else(|| gone(VERB))?;
    let Entry::Qp { sq: Some(sq), buf, .. } = &mut *g else { return Err(gone(VERB)) };
    let ring = sq.post_raw(buf, wqe, wr_id)?;
    reg.uars().ring_send(&db, sq, buf, ring);
    Ok(())
}

/// `ibv_post_send` of the one request `s` on the QP in `slot` (of
/// `reg`'s table) through the straight path
/// ([`SendQueue::post_straight`]), then its doorbell: `false`, nothing
/// written, if that path does not take it. (`bf` by reference: its
/// `Option` is read where the ring needs it, after the WQE, not kept in
/// a register from before the slot's lock: inline post 193 -> 189.)
///
/// [`SendQueue::post_straight`]: super::sq::SendQueue::post_straight
#[inline(always)]
pub fn post_send_straight<W: StraightWr + ?Sized>(reg: &RegRef, slot: &MadeSlot, db: &Doorbell, bf: &Option<MadeBf>, s: &W) -> bool {
    // The slot by address (`RegRef::made`, as `post_recv_one` takes it):
    // one pointer loaded instead of the table's address and the slot's
    // offset formed from its index. Were it ever another queue's, its
    // entry is matched below as the checked path matches it: anything but
    // a QP with a send queue is `false`, nothing written (the general
    // path then names the error).
    let mut g = slot.lock();
    let Entry::Qp { sq: Some(sq), buf, .. } = &mut *g else { return false };
    let Some(ring) = sq.post_straight(buf, s) else { return false };
    // A one-block BlueFlame copy to a register the QP holds alone goes
    // through its handle (`bf`: the register by address, worked out when
    // the QP was made), still under the slot's lock.
    match (ring, bf) {
        (StraightRing::Block { block, .. }, Some(bf)) => bf.ring_block(block),
        (StraightRing::Block { block, .. }, None) => _ = reg.uars().ring_block(db, block),
        (StraightRing::Ring(r), _) => _ = reg.uars().ring_send(db, sq, buf, r),
    };
    true
}

/// `ibv_post_recv` on the QP in slot `uidx`.
#[inline]
pub fn post_recv(reg: &RegRef, uidx: u32, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
    const VERB: &str = "ibv_post_recv";
    let mut g = reg.lock(uidx).ok_or_else(|| gone(VERB))?;
    match &mut *g {
        Entry::Qp { rq: Some(rq), buf, .. } => rq.post(buf, wrs),
        _ => Err(gone(VERB)),
    }
}

/// `ibv_post_recv` of one request of at most one SGE on the QP in
/// `slot` ([`RecvQueue::post_one`](super::rq::RecvQueue::post_one)):
/// `false`, nothing written, if not taken.
#[inline(always)]
pub fn post_recv_one(slot: &MadeSlot, wr_id: u64, sge: Option<&Sge>) -> bool {
    let mut g = slot.lock();
    match &mut *g {
        Entry::Qp { rq: Some(rq), buf, .. } => rq.post_one(buf, wr_id, sge),
        _ => false,
    }
}

/// `ibv_post_srq_recv` on the SRQ in slot `uidx`.
#[inline]
pub fn post_srq_recv(reg: &RegRef, uidx: u32, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
    const VERB: &str = "ibv_post_srq_recv";
    let mut g = reg.lock(uidx).ok_or_else(|| gone(VERB))?;
    match &mut *g {
        Entry::Srq { srq, buf, .. } => srq.post(buf, wrs),
        _ => Err(gone(VERB)),
    }
}

/// The queues a poll reaches: one slot locked at a time, kept while
/// consecutive completions name the same queue (libmlx5's `cur_rsc`) and
/// let go before another is locked, so a poller never waits while it
/// holds a QP or SRQ slot.
struct Lookup<'r> {
    reg: &'r RegRef,
    /// The user index the held slot was found for, with bit 24 set for a
    /// send (user indices have 24 bits); [`NO_KEY`] when none is held.
    key: u32,
    /// The slot held.
    held: Option<SlotGuard<'r>>,
}

/// [`Lookup::key`] with nothing held (bits no user index has).
const NO_KEY: u32 = u32::MAX;

impl<'r> Lookup<'r> {
    #[inline(always)]
    fn new(reg: &'r RegRef) -> Self {
        Self { reg, key: NO_KEY, held: None }
    }
}

impl Queues for Lookup<'_> {
    #[inline(always)]
    fn find(&mut self, source: Source) -> Option<Target<'_>> {
        let (rsn, send) = match source {
            Source::Send { rsn, .. } => (rsn & 0xff_ffff, true),
            Source::Recv { rsn, .. } => (rsn & 0xff_ffff, false),
        };
        let key = rsn | u32::from(send) << 24;
        if self.key != key {
            self.key = NO_KEY;
            drop(self.held.take());
            let mut g = self.reg.lock_queue(rsn)?;
            // A QP on an SRQ: its receives complete in the SRQ's slot
            // (libmlx5 `get_resp_ctx_v1`).
            let srq = match &*g {
                Entry::Qp { srq_uidx: Some(s), .. } if !send => Some(*s),
                _ => None,
            };
            if let Some(s) = srq {
                drop(g);
                g = self.reg.lock_queue(s)?;
            }
            self.key = key;
            // `held` is `None` (taken above; only this function fills
            // it): the old value needs no drop, which spares a reload and
            // test of it after the lock's atomics.
            let old = self.held.replace(g);
            debug_assert!(old.is_none());
            core::mem::forget(old);
        }
        let g = self.held.as_mut()?;
        match (send, &mut **g) {
            (true, Entry::Qp { sq: Some(sq), .. }) => Some(Target::Send(sq)),
            (false, Entry::Qp { rq: Some(rq), srq_uidx: None, .. }) => Some(Target::Recv(rq)),
            (false, Entry::Srq { srq, buf, .. }) => Some(Target::Srq(srq, buf)),
            _ => None,
        }
    }
}

/// `ibv_poll_cq` of the CQ in slot `cq`: up to `out.len()` completions.
/// A CQE this provider cannot complete (a kind it does not handle, or one
/// naming no queue of the context) is consumed and skipped: `Err` with
/// how many were polled before it. Always inlined: into `Mlx5Cq::poll`
/// and into the C library's one out-of-line poll (`poll_leave_wait`).
#[inline(always)]
pub fn poll<S: WcOut>(reg: &RegRef, cq: u32, out: &mut [S]) -> Result<usize, usize> {
    let Some(g) = reg.lock(cq) else { return Ok(0) };
    poll_locked(reg, g, out)
}

/// [`poll`] of the CQ whose slot `g` holds (anything else: `Ok(0)`).
#[inline(always)]
fn poll_locked<S: WcOut>(reg: &RegRef, mut g: SlotGuard<'_>, out: &mut [S]) -> Result<usize, usize> {
    let Entry::Cq { ring, buf } = &mut *g else { return Ok(0) };
    // (No separate test for an empty CQ: the poll stops at the first CQE
    // software does not own, with nothing consumed, and stores the
    // consumer index as it was, as libmlx5 does at CQ_EMPTY.)
    let mut look = Lookup::new(reg);
    let r = ring.poll(buf, out, &mut look);
    let published = ring.published();
    drop(look);
    g.publish(published);
    r.map_err(|_| 0)
}

/// Up to `out.len()` completions of the CQ in slot `cq` for `poll_with`
/// (0: empty, or a CQE this provider cannot complete, consumed and
/// skipped), with the doorbell record stored as [`poll`] stores it: the
/// chunk's completions are copies, so their entries go back to the device
/// at once, and `poll_with` ends with no second lock of the slot. (The CQ
/// stays lent to the closure by `Mlx5Cq`'s own flag, which its lock-free
/// empty test reads.)
///
/// The CQ's slot by address (`Mlx5Cq`'s, made with it): one pointer
/// loaded rather than the slot's address formed from its index; were it
/// ever another object's, its entry is matched as [`poll`] matches it.
#[inline(always)]
pub fn poll_chunk<S: WcOut>(cq: &MadeSlot, out: &mut [S]) -> usize {
    poll_locked(cq.reg(), cq.lock(), out).unwrap_or_else(|n| n)
}

/// Puts completions [`poll_chunk`] took and `poll_with` could not hand
/// out (its closure panicked) back into the CQ in slot `cq`, to be handed
/// out first by the next polls; `false` if they could not be kept.
#[cold]
pub fn put_back(reg: &RegRef, cq: u32, wcs: &[Wc]) -> bool {
    let Some(mut g) = reg.lock(cq) else { return false };
    let Entry::Cq { ring, .. } = &mut *g else { return false };
    let kept = ring.put_back(wcs);
    let published = ring.published();
    g.publish(published);
    kept
}

/// Whether the CQ in slot `cq` has no completion waiting.
pub fn is_empty(reg: &RegRef, cq: u32) -> bool {
    let Some(g) = reg.lock(cq) else { return true };
    match &*g {
        Entry::Cq { ring, buf } => ring.is_empty(buf),
        _ => true,
    }
}

/// `ibv_req_notify_cq` of the CQ in slot `cq` (`mlx5_arm_cq`): the arm
/// word in its doorbell record, then the UAR doorbell.
pub fn arm(reg: &RegRef, cq: u32, solicited_only: bool) -> bool {
    let Some(g) = reg.lock(cq) else { return false };
    let Entry::Cq { ring, buf } = &*g else { return false };
    let word = ring.arm(buf, solicited_only);
    reg.uars().arm_cq(word)
}

/// A completion event was read for the CQ in slot `cq` (`mlx5_cq_event`).
pub fn cq_event(reg: &RegRef, cq: u32) {
    if let Some(mut g) = reg.lock(cq) {
        if let Entry::Cq { ring, .. } = &mut *g {
            ring.event();
        }
    }
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;
