//! One QP's straight posts without its `QueuePair` (feature `internals`,
//! for the C library): its slot by address and its doorbell, taken from
//! the provider's QP when the QP is made ([`Mlx5Qp::direct`]) and kept
//! beside it.
//!
//! The C library's QP holds its Rust `QueuePair` under a lock of its own
//! (a modify moves the value); a post through that lock then takes the
//! slot's lock too. The slot's lock is what keeps the rings consistent
//! (a poll takes it as well), so a post through this handle takes only
//! that one and asks the caller, under it, whether the QP may take the
//! request now (the caller's record of the state: a modify clears it
//! before it changes the QP, and a reset of the rings happens under the
//! slot's lock, so a post that finds the record set under the lock comes
//! before the reset or after the QP is ready again).
//!
//! Whatever it holds stays valid for as long as the handle lives: the
//! [`MadeSlot`] keeps the context's table mapped (registry G4), so a
//! handle that outlives its QP reaches a slot of that table, matched like
//! any other: a freed slot holds no QP (nothing is written), but one the
//! context has given to a later QP holds that QP, which the handle would
//! post on. So `may()` (asked first, under the slot's lock) must say no
//! once the QP is gone: the C library's does (no state bits without a
//! value), and its handle is dropped with its QP (`ibv_destroy_qp`).
//!
//! [`Mlx5Qp::direct`]: super::provider::Mlx5Qp::direct
//!
//! # Safety
//!
//! **B8 — the direct receive and send.** [`Direct::post_recv_fitted`]
//! takes the slot's entry as a QP with a receive queue with no match, and
//! the ring view with no comparison of its geometry against the buffer;
//! [`Direct::post_send_fitted`] takes it as a QP with a send queue with
//! no match, and the send ring's geometry as fitting the buffer. Each is
//! an `unsafe fn`: its caller promises that, under the slot's lock,
//! `may()` says yes only while the slot holds the entry `Mlx5Qp::create`
//! filled for the QP this handle was made from, and that the handle says
//! [`Direct::has_recv`] (or [`Direct::has_send`]). Both are found once,
//! under the slot's lock, when the handle is made (`Direct::new`: the
//! entry has a receive queue whose ring and doorbell word the buffer
//! holds, `RecvQueue::ring_fits`; a send queue whose ring and doorbell
//! word it holds, `SendQueue::ring_fits`), and they stand while the entry
//! lives: the provider never assigns an `Entry::Qp`'s `rq`, `sq` or `buf` after the slot
//! is filled (a reset, a post, a completion call methods of the queue,
//! which keep its geometry, private and set only by its constructor, and
//! a buffer's length never changes), and the slot is emptied only by the
//! QP's `Drop` (`reset::forget_qp`). The C library's proof of its part
//! is invariant D1 in SAFETY.md (`capi/src/qp.rs`, `Straight::RECV_DIRECT`).
#![allow(unsafe_code)]

use super::ctx::Doorbell;
use super::registry::{Entry, MadeBf, MadeSlot};
use super::buf::WqBuf;
use super::sq::{SendQueue, StraightRing};
use crate::providers::seam::StraightWr;
use crate::wr::Sge;

/// A QP's slot and doorbell, for the straight posts (see the module).
#[derive(Debug)]
pub struct Direct {
    made: MadeSlot,
    db: Doorbell,
    /// The BlueFlame register by address, if the QP holds it alone.
    bf: Option<MadeBf>,
    /// The slot's QP had, when the handle was made, a receive queue its
    /// buffer holds (B8).
    rq: bool,
    /// The slot's QP had, when the handle was made, a send queue its
    /// buffer holds (B8).
    sq: bool,
}

impl Direct {
    /// The handle on the QP in `made` (its entry as `Mlx5Qp::create`
    /// filled it), which it looks at once, under the slot's lock, for
    /// [`Direct::has_recv`].
    pub(super) fn new(made: MadeSlot, db: Doorbell, bf: Option<MadeBf>) -> Self {
        let (rq, sq) = match &*made.lock() {
            Entry::Qp { rq, sq, buf, .. } => (rq.as_ref().is_some_and(|rq| rq.ring_fits(buf)), sq.as_ref().is_some_and(|sq| sq.ring_fits(buf))),
            _ => (false, false),
        };
        Self { made, db, bf, rq, sq }
    }

    /// Whether the QP has a send queue its buffer holds (found when the
    /// handle was made): what [`Direct::post_send_fitted`] needs, besides
    /// its caller's `may`.
    pub fn has_send(&self) -> bool {
        self.sq
    }

    /// Whether the QP has a receive queue its buffer holds (found when
    /// the handle was made: a QP on an SRQ has none): what
    /// [`Direct::post_recv_fitted`] needs, besides its caller's `may`.
    pub fn has_recv(&self) -> bool {
        self.rq
    }

    /// `ibv_post_send` of the one request `s` through the straight path,
    /// then the doorbell, if `may()` (asked under the slot's lock) says
    /// the QP may send now: `false`, nothing written, if not, or if that
    /// path does not take the request (the general path then judges it).
    #[doc(alias = "ibv_post_send")]
    #[inline(always)]
    pub fn post_send<W: StraightWr + ?Sized>(&self, may: impl FnOnce() -> bool, s: &W) -> bool {
        let mut g = self.made.lock();
        if !may() {
            return false;
        }
        let Entry::Qp { sq: Some(sq), buf, .. } = &mut *g else { return false };
        self.send_on(sq, buf, s)
    }

    /// [`Direct::post_send`] with no match of the slot's entry and no
    /// comparison of the send ring against the buffer (B8): `false`,
    /// nothing written, if `may()` says no or the straight path does not
    /// take the request.
    ///
    /// # Safety
    ///
    /// [`Direct::has_send`], and `may()` as for
    /// [`Direct::post_recv_fitted`]: `true`, under the slot's lock, only
    /// while the slot holds the entry `Mlx5Qp::create` filled for the QP
    /// this handle was made from, its `sq` not replaced.
    #[doc(alias = "ibv_post_send")]
    #[inline(always)]
    pub unsafe fn post_send_fitted<W: StraightWr + ?Sized>(&self, may: impl FnOnce() -> bool, s: &W) -> bool {
        let mut g = self.made.lock();
        if !may() {
            return false;
        }
        let Entry::Qp { sq: Some(sq), buf, .. } = &mut *g else {
            // SAFETY: the caller's promise: the slot holds this handle's
            // QP, which `has_send` found with a send queue (B8).
            unsafe { core::hint::unreachable_unchecked() }
        };
        // SAFETY: B8: `has_send` found this queue's ring and doorbell word
        // in this buffer, and neither the queue's geometry (private, set
        // by its constructor) nor the buffer's length has changed since.
        unsafe { core::hint::assert_unchecked(sq.ring_fits(buf)) };
        self.send_on(sq, buf, s)
    }

    /// The straight post of `s` on the slot's send queue, then the
    /// doorbell (the slot's lock held).
    #[inline(always)]
    fn send_on<W: StraightWr + ?Sized>(&self, sq: &mut SendQueue, buf: &mut WqBuf, s: &W) -> bool {
        let Some(ring) = sq.post_straight(buf, s) else { return false };
        let uars = self.made.reg().uars();
        match (ring, &self.bf) {
            (StraightRing::Block { block, .. }, Some(bf)) => bf.ring_block(block),
            (StraightRing::Block { block, .. }, None) => _ = uars.ring_block(&self.db, block),
            (StraightRing::Ring(r), _) => _ = uars.ring_send(&self.db, sq, buf, r),
        };
        true
    }

    /// `ibv_post_recv` of one request of at most one SGE, if `may()`
    /// (asked under the slot's lock) says the QP may take receives now:
    /// `false`, nothing written, if not, or if the queue does not take it
    /// (full, no receive queue: a QP on an SRQ). `wr_id` is read where it
    /// is stored (under the lock): a value loaded before the lock is
    /// taken would hold a register through the whole post.
    #[doc(alias = "ibv_post_recv")]
    #[inline(always)]
    pub fn post_recv(&self, may: impl FnOnce() -> bool, wr_id: &u64, sge: Option<&Sge>) -> bool {
        let mut g = self.made.lock();
        if !may() {
            return false;
        }
        match &mut *g {
            Entry::Qp { rq: Some(rq), buf, .. } => rq.post_one(buf, *wr_id, sge),
            _ => false,
        }
    }

    /// [`Direct::post_recv`] with no match of the slot's entry and no
    /// comparison of the receive ring against the buffer (B8): `false`,
    /// nothing written, if `may()` says no or the queue is full.
    ///
    /// # Safety
    ///
    /// [`Direct::has_recv`], and while the slot's lock is held (where it
    /// is asked), `may()` returns `true` only if the slot holds the entry
    /// `Mlx5Qp::create` filled for the QP this handle was made from, its
    /// `rq` and `buf` not replaced (the provider never does; a caller
    /// holding the context's registry must not either).
    #[doc(alias = "ibv_post_recv")]
    #[inline(always)]
    pub unsafe fn post_recv_fitted(&self, may: impl FnOnce() -> bool, wr_id: &u64, sge: Option<&Sge>) -> bool {
        let mut g = self.made.lock();
        if !may() {
            return false;
        }
        let Entry::Qp { rq: Some(rq), buf, .. } = &mut *g else {
            // SAFETY: the caller's promise: the slot holds this handle's
            // QP, which `has_recv` found with a receive queue (B8).
            unsafe { core::hint::unreachable_unchecked() }
        };
        // SAFETY: `has_recv`: `ring_fits` was true for this queue and
        // buffer when the handle was made, and neither was replaced since
        // (B8): `fits` of the queue's geometry and this buffer stands.
        rq.post_one_with(*wr_id, sge, |g| Some(unsafe { buf.rq_ring_unchecked(g) }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::mlx5::buf::WqBuf;
    use crate::providers::mlx5::registry::RegRef;
    use crate::providers::mlx5::res::QpMem;
    use crate::providers::mlx5::sizing::DeviceLimits;
    use crate::qp::{QpCap, QpType};
    use crate::wr::RecvWr;

    const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 1024, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
    const SGE: Sge = Sge { addr: 0x1000, length: 8, lkey: 1 };

    /// A context's slot table on a memfd standing in for its UAR pages
    /// (the memfd is returned to keep it open), and a doorbell on it.
    fn rig() -> (rustix::fd::OwnedFd, RegRef, Doorbell) {
        let uar = rustix::fs::memfd_create("verbs-direct-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&uar, 8 * 4096).unwrap();
        let reg = RegRef::new("test", super::super::ctx::tests::sim_uars(&uar)).unwrap();
        let db = reg.uars().doorbell(1).unwrap();
        (uar, reg, db)
    }

    /// A QP's entry in a slot of `reg` (`srq`: on an SRQ, no receive
    /// queue; `short`: put with a one-page buffer, too short for its ring).
    fn qp(reg: &RegRef, db: &Doorbell, recv_wr: u32, srq: bool, short: bool) -> u32 {
        let cap = QpCap { max_send_wr: 4, max_recv_wr: recv_wr, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
        qp_of(reg, db, &cap, srq, short)
    }

    /// [`qp`] of the capabilities `cap`.
    fn qp_of(reg: &RegRef, db: &Doorbell, cap: &QpCap, srq: bool, short: bool) -> u32 {
        let m = QpMem::new("test", &LIM, QpType::Rc, cap, srq, 64).unwrap();
        let (sq, rq) = m.queues("test", 0x42, QpType::Rc, false, false, db.blueflame()).unwrap();
        let buf = if short { WqBuf::new("test", 4096).unwrap() } else { m.buf };
        reg.insert(Entry::Qp { sq, rq, buf, srq_uidx: srq.then_some(0) }).unwrap()
    }

    /// An RC QP of `send_wr` sends in a slot of `reg` (`short`: put with a
    /// one-page buffer, too short for its send ring).
    fn sender(reg: &RegRef, db: &Doorbell, send_wr: u32, short: bool) -> u32 {
        let cap = QpCap { max_send_wr: send_wr, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 16 };
        qp_of(reg, db, &cap, false, short)
    }

    /// A buffer, word by word.
    fn words(buf: &WqBuf) -> Vec<u64> {
        (0..buf.len() / 8).map(|i| buf.get::<u64>(i * 8).unwrap()).collect()
    }

    /// The slot's buffer, word by word, and its send queue's indices.
    fn send_state(reg: &RegRef, uidx: u32) -> (Vec<u64>, (u32, u32, u32)) {
        let g = reg.lock(uidx).unwrap();
        let Entry::Qp { sq: Some(sq), buf, .. } = &*g else { panic!("no send queue") };
        (words(buf), sq.indices())
    }

    #[test]
    fn the_fitted_send_needs_a_send_ring_its_buffer_holds_and_posts_as_the_checked_one() {
        use crate::wr::{Payload, SendWr};
        let (_uar, reg, db) = rig();
        let (a, b) = (sender(&reg, &db, 4, false), sender(&reg, &db, 4, false));
        let (da, dbb) = (Direct::new(reg.made(a), db, None), Direct::new(reg.made(b), db, None));
        assert!(da.has_send() && dbb.has_send());
        // 1024 sends: 64 KiB of ring, past a one-page buffer.
        let short = sender(&reg, &db, 1024, true);
        assert!(!Direct::new(reg.made(short), db, None).has_send(), "a buffer that does not hold the send ring");
        let sg = [SGE];
        let write = SendWr::rdma_write(0x51, &sg, 0x2000, 6).signaled();
        assert!(!Direct::new(reg.made(short), db, None).post_send(|| true, &write), "refused by the checked post too");

        let before = send_state(&reg, a);
        // SAFETY: `has_send` (above); `may` says no.
        assert!(!unsafe { da.post_send_fitted(|| false, &write) });
        assert_eq!(send_state(&reg, a), before, "`may` said no: nothing written");
        let inline = SendWr { payload: Payload::Inline(&[7u8; 8]), ..write };
        let send = SendWr::send(0x53, &sg);
        for (i, wr) in [write, inline, send, write, inline].iter().enumerate() {
            // SAFETY: `has_send`; slot `a` holds the QP the handle was made
            // from, whose queues and buffer this test never replaces.
            let fitted = unsafe { da.post_send_fitted(|| true, wr) };
            assert_eq!(fitted, dbb.post_send(|| true, wr), "send {i}: taken alike");
            assert_eq!(fitted, i < 4, "send {i}: straight until the queue (4) is full");
            assert_eq!(send_state(&reg, a).0[..], send_state(&reg, b).0[..], "send {i}: the same WQEs and doorbell record");
            assert_eq!(send_state(&reg, a).1, send_state(&reg, b).1, "send {i}: the same indices");
        }
    }

    /// The slot's buffer, word by word, and its receive queue's indices.
    fn state(reg: &RegRef, uidx: u32) -> (Vec<u64>, (u32, u32)) {
        let g = reg.lock(uidx).unwrap();
        let Entry::Qp { rq: Some(rq), buf, .. } = &*g else { panic!("no receive queue") };
        (words(buf), rq.indices())
    }

    #[test]
    fn the_fitted_receive_needs_a_receive_queue_its_buffer_holds_and_posts_as_the_checked_one() {
        let (_uar, reg, db) = rig();
        let (a, b) = (qp(&reg, &db, 4, false, false), qp(&reg, &db, 4, false, false));
        let da = Direct::new(reg.made(a), db, None);
        assert!(da.has_recv());
        assert!(!Direct::new(reg.made(qp(&reg, &db, 4, true, false)), db, None).has_recv(), "a QP on an SRQ");
        // 1024 receives of one SGE: 16 KiB of ring, past a one-page buffer.
        let short = qp(&reg, &db, 1024, false, true);
        assert!(!Direct::new(reg.made(short), db, None).has_recv(), "a buffer that does not hold the ring");
        assert!(!Direct::new(reg.made(short), db, None).post_recv(|| true, &1, Some(&SGE)), "refused by the checked post too");

        let before = state(&reg, a);
        // SAFETY: `has_recv` (above); `may` says no.
        assert!(!unsafe { da.post_recv_fitted(|| false, &5, Some(&SGE)) });
        assert_eq!(state(&reg, a), before, "`may` said no: nothing written");
        for (i, sge) in [Some(&SGE), None, Some(&SGE), Some(&Sge { length: 0, ..SGE })].into_iter().enumerate() {
            // SAFETY: `has_recv`; slot `a` holds the QP the handle was made
            // from, whose queue and buffer this test never replaces.
            assert!(unsafe { da.post_recv_fitted(|| true, &(0x70 + i as u64), sge) });
            let sg: &[Sge] = sge.map_or(&[], core::slice::from_ref);
            super::super::ops::post_recv(&reg, b, &[RecvWr::new(0x70 + i as u64, sg)]).unwrap();
            assert_eq!(state(&reg, a), state(&reg, b), "receive {i}: the same WQE, doorbell record and indices");
        }
        // SAFETY: as above.
        assert!(!unsafe { da.post_recv_fitted(|| true, &9, Some(&SGE)) }, "full (4 receives)");
        let mut g = reg.lock(a).unwrap();
        let Entry::Qp { rq: Some(rq), .. } = &mut *g else { panic!() };
        assert_eq!([rq.complete(), rq.complete(), rq.complete(), rq.complete()], [0x70, 0x71, 0x72, 0x73], "the wr_ids in order");
    }
}
