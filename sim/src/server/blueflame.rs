//! Telling a BlueFlame doorbell from a plain one by what was written, not
//! by when the scanner happened to look.
//!
//! Both start with the same 8-byte store at a BlueFlame register half: the
//! first 8 bytes of the WQE's control segment (`opmod_idx_opcode`,
//! `qpn_ds`). A plain doorbell stops there; a BlueFlame doorbell goes on
//! and copies the whole WQE, `align(ds * 16, 64)` bytes (`ds` is in that
//! first word), from the send queue into the register. So the register's
//! tail — bytes 8.. of the copy — is compared with the WQE the doorbell
//! names, read from the send queue in host memory (written before the
//! doorbell record, which is written before the doorbell):
//!
//! * the tail equals the WQE's (and the WQE's is not all zero): BlueFlame;
//! * otherwise the copy may still be landing (the application can be
//!   preempted in the middle of it), so the doorbell waits, undecided,
//!   until something proves that every store the application made before
//!   has landed: a later doorbell on the same BlueFlame register (either
//!   half; QPs sharing a register take a lock), the QP's doorbell record
//!   moving on (the next post writes it after this copy), the QP gone, or
//!   the context closed. Stores of one x86 thread become visible in
//!   program order (and a lock orders two threads' stores), so at that
//!   point the tail is final: equal to the WQE's, BlueFlame; else plain.
//!
//! The register half is cleared once decided, so a later doorbell is never
//! judged by an earlier copy's bytes. What this cannot see: a copy
//! overwritten by another doorbell on the same half before any scan ran
//! (three posts on one register within one scan; judged plain), and a WQE
//! whose bytes after the first 8 are all zero (judged plain).
//!
//! The engine does not wait for the verdict: it executes the WQE from host
//! memory at the first word, as a NIC does; the verdict is for the trace
//! (`DOORBELL BF|DB`, one line per doorbell, once decided), which
//! `scripts/mlx5diff-record.sh` and the mlx5 provider's tests compare with
//! libmlx5's choice.

use std::sync::Arc;

use super::uar::{Uar, BF_REG_SIZE};
use super::{Daemon, State};
use crate::mem::HostMem;

/// A doorbell whose kind is not known yet.
pub struct Pending {
    ctx: u32,
    uar: Arc<Uar>,
    qpn: u32,
    wqe_index: u16,
    page: u32,
    offset: u32,
    /// The WQE's bytes 8..align(ds * 16, 64), as a BlueFlame copy writes them.
    wqe_tail: Vec<u8>,
    /// The QP's send doorbell record when the doorbell was seen.
    dbrec: Option<u32>,
}

impl Pending {
    /// The BlueFlame register (page, index) the doorbell was written to.
    fn bfreg(&self) -> (u32, u32) {
        (self.page, self.offset / BF_REG_SIZE as u32)
    }
}

/// Bytes a BlueFlame copy of a WQE of `ds` 16-byte units writes, capped at
/// the register half.
fn copy_len(ds: u32) -> usize {
    (ds as usize * 16).next_multiple_of(64).clamp(64, BF_REG_SIZE / 2)
}

/// The WQE at `wqe_index` of `qpn`'s send queue, bytes 8..len, wrapping at
/// the ring's end as libmlx5's copy does; None if the QP or its memory is gone.
fn wqe_tail(d: &Daemon, st: &State, qpn: u32, wqe_index: u16, len: usize) -> Option<(Vec<u8>, Option<u32>)> {
    let qp = st.dev.qps.get(&qpn)?;
    let ring = u64::from(qp.sq.wqe_cnt) * 64;
    if ring == 0 {
        return None;
    }
    let mut out = vec![0u8; len];
    let mut at = u64::from(wqe_index) % u64::from(qp.sq.wqe_cnt) * 64;
    let mut done = 0;
    while done < len {
        let n = (len - done).min((ring - at) as usize);
        d.mem.read(qp.pid, qp.sq.buf + at, &mut out[done..done + n]).ok()?;
        done += n;
        at = (at + n as u64) % ring;
    }
    let dbrec = d.mem.read_be32(qp.pid, qp.dbrec + 4).ok();
    out.drain(..8);
    Some((out, dbrec))
}

/// The verdict if the register shows it: BlueFlame when its tail is the WQE's.
fn shows_blueflame(p: &Pending) -> bool {
    p.wqe_tail.iter().any(|&b| b != 0) && p.uar.tail(p.page, p.offset, p.wqe_tail.len() + 8) == p.wqe_tail
}

fn decide(d: &Daemon, p: &Pending, blueflame: bool) {
    p.uar.clear_tail(p.page, p.offset);
    d.trace.line(format_args!(
        "ctx={} DOORBELL {} qpn={:#x} wqe={} uar={}+{:#x}",
        p.ctx,
        if blueflame { "BF" } else { "DB" },
        p.qpn,
        p.wqe_index,
        p.page,
        p.offset
    ));
}

/// A send doorbell just taken from `uar`: doorbells pending on the same
/// BlueFlame register are decided first (this later store proves their
/// copies landed), then this one is decided or left pending.
#[allow(clippy::too_many_arguments)]
pub fn seen(d: &Daemon, st: &mut State, ctx: u32, uar: &Arc<Uar>, qpn: u32, wqe_index: u16, ds: u32, page: u32, offset: u32) {
    let reg = (page, offset / BF_REG_SIZE as u32);
    let (now, keep): (Vec<Pending>, Vec<Pending>) =
        std::mem::take(&mut st.bf_pending).into_iter().partition(|p| p.ctx == ctx && p.bfreg() == reg);
    st.bf_pending = keep;
    for p in now {
        let bf = shows_blueflame(&p);
        decide(d, &p, bf);
    }
    let len = copy_len(ds);
    let Some((tail, dbrec)) = wqe_tail(d, st, qpn, wqe_index, len) else {
        // not a QP of this context (or its memory is gone): nothing to compare
        let p = Pending { ctx, uar: uar.clone(), qpn, wqe_index, page, offset, wqe_tail: Vec::new(), dbrec: None };
        decide(d, &p, false);
        return;
    };
    let p = Pending { ctx, uar: uar.clone(), qpn, wqe_index, page, offset, wqe_tail: tail, dbrec };
    if shows_blueflame(&p) {
        decide(d, &p, true);
    } else {
        st.bf_pending.push(p);
    }
}

/// Each scan: pending doorbells whose copy has landed, or whose QP's
/// doorbell record moved on, or whose QP is gone, are decided.
pub fn poll(d: &Daemon, st: &mut State) {
    if st.bf_pending.is_empty() {
        return;
    }
    let pending = std::mem::take(&mut st.bf_pending);
    for p in pending {
        // the evidence first, then the register (read after it)
        let moved = match st.dev.qps.get(&p.qpn) {
            Some(qp) => d.mem.read_be32(qp.pid, qp.dbrec + 4).ok() != p.dbrec,
            None => true,
        };
        let bf = shows_blueflame(&p);
        if bf || moved {
            decide(d, &p, bf);
        } else {
            st.bf_pending.push(p);
        }
    }
}

/// The context closed: everything it wrote has landed.
pub fn close(d: &Daemon, st: &mut State, ctx: u32) {
    let (now, keep): (Vec<Pending>, Vec<Pending>) = std::mem::take(&mut st.bf_pending).into_iter().partition(|p| p.ctx == ctx);
    st.bf_pending = keep;
    for p in now {
        let bf = shows_blueflame(&p);
        decide(d, &p, bf);
    }
}
