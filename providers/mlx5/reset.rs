//! A QP's move to RESET, as libmlx5's `mlx5_modify_qp` follows it: the
//! QP's completions still waiting in its CQs are dropped (`mlx5_cq_clean`,
//! an SRQ WQE a dropped receive held goes back on the SRQ's free list),
//! then its queues start over at WQE 0 and its doorbell record is zeroed
//! (`mlx5_init_qp_indices`), as the device's QP context is. Without this,
//! a QP brought back up would post at its old indices while the device
//! reads from 0, and run the old WQEs again.
//!
//! Locks: each slot is taken alone, except the CQ's with, inside it, the
//! SRQ's (the order a poll takes them in, see [`super::ops`]).

use super::registry::{Entry, RegRef};
use super::wqe::{RCV_DBR, SND_DBR};
use core::sync::atomic::Ordering;

/// The user index of the QP numbered `qpn` and its SRQ's slot, if any.
fn find_qp(reg: &RegRef, qpn: u32) -> Option<(u32, Option<u32>)> {
    (0..super::registry::SLOTS as u32).find_map(|i| match reg.lock(i).as_deref() {
        Some(Entry::Qp { sq: Some(sq), srq_uidx, .. }) if sq.config().qpn == qpn => Some((i, *srq_uidx)),
        _ => None,
    })
}

/// Drops the completions of QP `qpn` waiting in the CQ in slot `cq`;
/// returns how many.
pub fn clean_cq(reg: &RegRef, cq: u32, qpn: u32) -> u32 {
    let Some((uidx, srq)) = find_qp(reg, qpn) else { return 0 };
    clean_slot(reg, cq, uidx, qpn, srq)
}

/// [`clean_cq`] of the QP in slot `uidx`, numbered `qpn`, on SRQ slot
/// `srq`, if slot `cq` holds a CQ.
fn clean_slot(reg: &RegRef, cq: u32, uidx: u32, qpn: u32, srq: Option<u32>) -> u32 {
    let Some(mut g) = reg.lock(cq) else { return 0 };
    let Entry::Cq { ring, buf } = &mut *g else { return 0 };
    let freed = ring.clean(buf, uidx, qpn, |wqe_counter| {
        let Some(s) = srq else { return };
        if let Some(mut sg) = reg.lock(s) {
            if let Entry::Srq { srq, buf, .. } = &mut *sg {
                let _ = srq.complete(buf, wqe_counter);
            }
        }
    });
    let published = ring.published();
    g.publish(published);
    freed
}

/// The QP in slot `uidx` was destroyed (`mlx5_destroy_qp`): its
/// completions still waiting in any CQ are dropped (else they would be
/// taken for those of the next QP given the slot), then the slot is
/// freed. The CQs are found by looking at every slot (the kernel's CQ
/// handles are not kept here); destroying a QP is a control-path call.
pub fn forget_qp(reg: &RegRef, uidx: u32) {
    let found = match reg.lock(uidx).as_deref() {
        Some(Entry::Qp { sq, srq_uidx, .. }) => Some((sq.as_ref().map_or(u32::MAX, |s| s.config().qpn), *srq_uidx)),
        _ => None,
    };
    if let Some((qpn, srq)) = found {
        for cq in 0..super::registry::SLOTS as u32 {
            clean_slot(reg, cq, uidx, qpn, srq);
        }
    }
    reg.remove(uidx);
}

/// Starts the queues of the QP in slot `uidx` over and zeroes its
/// doorbell record.
pub fn reset_qp(reg: &RegRef, uidx: u32) {
    let Some(mut g) = reg.lock(uidx) else { return };
    let Entry::Qp { sq, rq, buf, .. } = &mut *g else { return };
    let dbrec = sq.as_ref().map(|s| s.config().dbrec_offset);
    if let Some(sq) = sq {
        sq.reset();
    }
    if let Some(rq) = rq {
        rq.reset();
    }
    for word in [RCV_DBR, SND_DBR] {
        if let Some(db) = dbrec.and_then(|d| buf.atomic_u32(d + 4 * word as usize)) {
            db.store(0, Ordering::Release);
        }
    }
}

#[cfg(test)]
#[path = "reset_tests.rs"]
mod tests;
