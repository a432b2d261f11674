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

use super::ctx::Doorbell;
use super::registry::{Entry, MadeBf, MadeSlot};
use super::sq::StraightRing;
use crate::providers::seam::StraightWr;
use crate::wr::Sge;

/// A QP's slot and doorbell, for the straight posts (see the module).
#[derive(Debug)]
pub struct Direct {
    made: MadeSlot,
    db: Doorbell,
    /// The BlueFlame register by address, if the QP holds it alone.
    bf: Option<MadeBf>,
}

impl Direct {
    pub(super) fn new(made: MadeSlot, db: Doorbell, bf: Option<MadeBf>) -> Self {
        Self { made, db, bf }
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
}
