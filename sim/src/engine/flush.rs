//! The error state: a QP in ERR completes every WQE of its send and
//! receive queues with WR_FLUSH_ERR (one CQE per WQE, signaled or not, as
//! the IB spec requires), now and for WQEs posted later.

use super::consts::{cqe_op, event, syn};
use super::cqe::Cqe;
use super::send::sq_pending;
use super::wqe::{read_send_wqe, SendWqe};
use super::{Engine, EventSink};
use crate::mem::HostMem;
use crate::model::QpState;

impl<M: HostMem, E: EventSink> Engine<'_, M, E> {
    /// Moves `qpn` to ERR (engine-detected) and flushes it.
    pub(crate) fn move_to_error(&mut self, qpn: u32) {
        let Some(qp) = self.dev.qps.get_mut(&qpn) else { return };
        let was = qp.state;
        qp.state = QpState::Err;
        self.enter_error(qpn, was != QpState::Err);
    }

    /// Flushes `qpn` (now in ERR); `first` raises QP_LAST_WQE_REACHED for
    /// a QP on an SRQ.
    pub(crate) fn enter_error(&mut self, qpn: u32, first: bool) {
        self.dev.engine.stalls.remove(&qpn);
        self.flush_sq(qpn);
        self.flush_rq(qpn);
        let Some(qp) = self.dev.qps.get(&qpn) else { return };
        if first && qp.srqn.is_some() {
            let (ctx, handle) = (qp.ctx, qp.user_handle);
            self.events.async_event(ctx, handle, event::QP_LAST_WQE_REACHED);
        }
    }

    /// Flush CQEs for every posted send WQE of `qpn`.
    pub(crate) fn flush_sq(&mut self, qpn: u32) {
        loop {
            let Some(qp) = self.dev.qps.get(&qpn).cloned() else { return };
            if sq_pending(self.sq_db(&qp), &qp) == 0 {
                return;
            }
            let w = read_send_wqe(self.mem, &qp).unwrap_or(SendWqe {
                idx: qp.sq.ci as u16,
                opcode: 0,
                nbb: 1,
                fm_ce_se: 0,
                imm: 0,
                body: Vec::new(),
            });
            self.advance(qpn, w.nbb);
            let cqe = Cqe { opcode: cqe_op::REQ_ERR, syndrome: syn::WR_FLUSH, ..Self::req_cqe(&qp, &w) };
            self.push_cqe(qp.send_cqn, &cqe);
        }
    }

    /// Flush CQEs for every posted receive WQE of `qpn` (not its SRQ's).
    pub(crate) fn flush_rq(&mut self, qpn: u32) {
        loop {
            let Some(qp) = self.dev.qps.get(&qpn).cloned() else { return };
            if qp.srqn.is_some() {
                return;
            }
            let Some(w) = self.peek_recv(&qp) else { return };
            self.consume_recv(qpn, &w);
            self.dev.engine.work += 1;
            let cqe = Cqe {
                opcode: cqe_op::RESP_ERR,
                syndrome: syn::WR_FLUSH,
                qpn,
                srqn_uidx: Self::resp_uidx(&qp),
                wqe_counter: w.counter,
                ..Cqe::default()
            };
            self.push_cqe(qp.recv_cqn, &cqe);
        }
    }
}
