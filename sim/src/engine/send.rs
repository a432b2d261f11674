//! The requester's loop over a send queue: WQEs from the device's consumer
//! counter up to the doorbell record's send counter, in order; a WQE that
//! waits (RNR NAK, no response) blocks those behind it until its retry
//! timer runs out; completions and the move to ERR on a failure.

use super::consts::{cqe_op, ctrl, syn};
use super::cqe::Cqe;
use super::state::{ack_timeout_ns, rnr_timer_ns, Stall, StallKind, INFINITE_RETRY_NS};
use super::wqe::{read_send_wqe, SendWqe};
use super::{Engine, EventSink};
use crate::mem::HostMem;
use crate::model::{Qp, QpState, QpType};

/// How one WQE ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Completed; the byte count for the CQE.
    Done(u32),
    /// Must be sent again later: RNR (with the responder's timer code) or
    /// no response.
    Stall(StallKind, u8),
    /// Completed in error with this syndrome; the QP goes to ERR.
    Fail(u8),
}

/// WQEBBs the doorbell record says are posted beyond the consumer counter.
pub(crate) fn sq_pending(db: u32, qp: &Qp) -> u32 {
    let n = u32::from((db as u16).wrapping_sub(qp.sq.ci as u16));
    if n > qp.sq.wqe_cnt {
        0
    } else {
        n
    }
}

impl<M: HostMem, E: EventSink> Engine<'_, M, E> {
    /// The doorbell record's send counter of `qp` (dbrec + 4).
    pub(crate) fn sq_db(&self, qp: &Qp) -> u32 {
        self.mem.read_be32(qp.pid, qp.dbrec + 4).unwrap_or(qp.sq.ci)
    }

    /// Executes `qpn`'s send queue as far as it can go.
    pub(crate) fn run_sq(&mut self, qpn: u32) {
        loop {
            let Some(qp) = self.dev.qps.get(&qpn).cloned() else { return };
            match qp.state {
                QpState::Rts => {}
                QpState::Err | QpState::Sqe => return self.flush_sq(qpn),
                _ => return,
            }
            if sq_pending(self.sq_db(&qp), &qp) == 0 {
                return;
            }
            let now = self.dev.engine.now_ns();
            let stall = self.dev.engine.stalls.get(&qpn).copied().filter(|s| s.ci == qp.sq.ci);
            if stall.is_some_and(|s| now < s.until_ns) {
                return;
            }
            let timed_out = stall.is_some_and(|s| s.kind == StallKind::NoResponse && s.retry_left == 0);
            if timed_out && ack_timeout_ns(qp.attrs.timeout).is_some() {
                let w = read_send_wqe(self.mem, &qp).unwrap_or(SendWqe { idx: qp.sq.ci as u16, opcode: 0, nbb: 1, fm_ce_se: 0, imm: 0, body: vec![] });
                return self.fail(&qp, &w, syn::RETRY_EXC);
            }
            let w = match read_send_wqe(self.mem, &qp) {
                Ok(w) => w,
                Err(bad) => {
                    let w = SendWqe { idx: bad.idx, opcode: 0, nbb: 1, fm_ce_se: 0, imm: 0, body: vec![0; 16] };
                    return self.fail(&qp, &w, syn::LOC_QP_OP);
                }
            };
            let out = match self.execute(&qp, &w) {
                Outcome::Stall(kind, code) => match self.stall(&qp, stall, kind, code, now) {
                    Some(s) => {
                        self.dev.engine.stalls.insert(qpn, s);
                        return;
                    }
                    None => Outcome::Fail(syn::RNR_RETRY_EXC),
                },
                other => other,
            };
            self.dev.engine.stalls.remove(&qpn);
            match out {
                Outcome::Done(n) => {
                    self.advance(qpn, w.nbb);
                    if w.fm_ce_se & ctrl::CQ_UPDATE != 0 || qp.sq_sig_all {
                        let cqe = Cqe { opcode: cqe_op::REQ, byte_cnt: n, ..Self::req_cqe(&qp, &w) };
                        self.push_cqe(qp.send_cqn, &cqe);
                    }
                    self.settle();
                }
                Outcome::Fail(s) => return self.fail(&qp, &w, s),
                Outcome::Stall(..) => unreachable!("handled above"),
            }
        }
    }

    /// The retry state after an attempt that met `kind`, or None when the
    /// RNR retries are exhausted.
    fn stall(&self, qp: &Qp, prev: Option<Stall>, kind: StallKind, code: u8, now: u64) -> Option<Stall> {
        let (mut rnr_left, mut retry_left) = match prev {
            Some(s) => (s.rnr_left, s.retry_left),
            None => (qp.attrs.rnr_retry.min(7), qp.attrs.retry_cnt.min(7)),
        };
        let wait = match kind {
            StallKind::Rnr => {
                if rnr_left == 0 {
                    return None;
                }
                if rnr_left != 7 {
                    rnr_left -= 1;
                }
                rnr_timer_ns(code)
            }
            // The requester learns of a lost request only when its timer
            // runs out: the last retry's timeout ends in RETRY_EXC (run_sq).
            StallKind::NoResponse => match ack_timeout_ns(qp.attrs.timeout) {
                None => INFINITE_RETRY_NS,
                Some(t) => {
                    if prev.is_some_and(|p| p.kind == StallKind::NoResponse) {
                        retry_left = retry_left.saturating_sub(1);
                    }
                    t
                }
            },
        };
        Some(Stall { ci: qp.sq.ci, until_ns: now.saturating_add(wait), rnr_left, retry_left, kind })
    }

    /// The fields every requester CQE of `w` on `qp` carries.
    pub(crate) fn req_cqe(qp: &Qp, w: &SendWqe) -> Cqe {
        Cqe {
            qpn: qp.qpn,
            wqe_opcode: w.opcode,
            srqn_uidx: qp.uidx,
            wqe_counter: w.idx,
            ..Cqe::default()
        }
    }

    /// Moves the send consumer counter past a WQE.
    pub(crate) fn advance(&mut self, qpn: u32, nbb: u32) {
        if let Some(q) = self.dev.qps.get_mut(&qpn) {
            q.sq.ci = q.sq.ci.wrapping_add(nbb);
        }
        self.dev.engine.work += 1;
    }

    /// Completes `w` in error (signaled or not) and moves `qp` to ERR
    /// (RC) or SQE (UC/UD: only the send queue stops; IB spec 10.3.1).
    fn fail(&mut self, qp: &Qp, w: &SendWqe, syndrome: u8) {
        self.dev.engine.stalls.remove(&qp.qpn);
        self.advance(qp.qpn, w.nbb);
        let cqe = Cqe { opcode: cqe_op::REQ_ERR, syndrome, ..Self::req_cqe(qp, w) };
        self.push_cqe(qp.send_cqn, &cqe);
        self.settle();
        if qp.qp_type == QpType::Rc {
            self.move_to_error(qp.qpn);
        } else if let Some(q) = self.dev.qps.get_mut(&qp.qpn) {
            if q.state != QpState::Err {
                q.state = QpState::Sqe;
            }
            self.flush_sq(qp.qpn);
        }
    }

    /// Moves the QPs a responder error marked into ERR, raising each one's
    /// affiliated async event.
    pub(crate) fn settle(&mut self) {
        while let Some((q, ev)) = self.dev.engine.pending_errors.pop() {
            let Some(qp) = self.dev.qps.get(&q) else { continue };
            if qp.state != QpState::Err {
                let (ctx, handle) = (qp.ctx, qp.user_handle);
                self.events.async_event(ctx, handle, ev);
            }
            self.move_to_error(q);
        }
    }
}
