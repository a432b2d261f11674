//! The responder: taking receive WQEs from a QP's receive queue or its
//! SRQ (a linked list followed by `next_wqe_index`), delivering SENDs into
//! them (UD: behind a 40-byte GRH), and the responder's CQEs and errors.

use super::consts::{cqe_op, event, syn, GRH_LEN, NO_UIDX};
use super::cqe::Cqe;
use super::wqe::{be16, parse_scatter, Sge};
use super::{Engine, EventSink};
use crate::mem::HostMem;
use crate::model::{Qp, QpState, QpType};

/// A receive WQE the responder may take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvWqe {
    /// CQE wqe_counter: the RQ counter, or the SRQ WQE index.
    pub counter: u16,
    /// Scatter list.
    pub sges: Vec<Sge>,
    /// Taken from SRQ `srqn`; the index its link names next.
    pub srq: Option<(u32, u16)>,
}

/// What the responder answers the requester.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resp {
    /// Done (or, on UC/UD, silently dropped: the requester cannot know).
    Ack,
    /// RNR NAK carrying the responder's min_rnr_timer code (RC only).
    Rnr(u8),
    /// No answer at all: no such QP, or not ready to receive (RC: the
    /// requester's retry timer runs).
    NoResponse,
    /// NAK: the requester completes in error with this syndrome.
    Nak(u8),
}

/// A SEND as the responder sees it.
pub struct Incoming<'a> {
    /// The sending QP.
    pub src: u32,
    /// Payload (UD: the GRH is put in front by [`Engine::deliver_send`]).
    pub data: &'a [u8],
    /// RESP_SEND, RESP_SEND_IMM or RESP_SEND_INV.
    pub cqe_opcode: u8,
    /// Immediate (wire order as a number) or the rkey to invalidate.
    pub imm: u32,
    /// The requester set SOLICITED.
    pub solicited: bool,
    /// UD: the GRH to write first.
    pub grh: Option<[u8; GRH_LEN]>,
}

/// How many WQEs a producer counter (16 bits) is ahead of a consumer.
fn ahead(db: u32, ci: u32) -> u32 {
    u32::from((db as u16).wrapping_sub(ci as u16))
}

impl<M: HostMem, E: EventSink> Engine<'_, M, E> {
    /// QP `qpn` if it can receive a `ty` packet (RTR and later, not ERR;
    /// none while the port's link is down).
    pub(crate) fn receiver(&self, qpn: u32, ty: QpType) -> Option<Qp> {
        if self.dev.engine.link_down {
            return None; // nothing reaches the wire (EngineState::link_down)
        }
        let q = self.dev.qps.get(&qpn)?;
        let ready = matches!(q.state, QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe);
        (q.qp_type == ty && ready).then(|| q.clone())
    }

    /// srqn_uidx of a responder CQE of `qp`: its user index (CQE version 1),
    /// else the SRQ number or 0.
    pub(crate) fn resp_uidx(qp: &Qp) -> u32 {
        if qp.uidx == NO_UIDX {
            qp.srqn.unwrap_or(0)
        } else {
            qp.uidx
        }
    }

    /// The next receive WQE of `qp`, not consumed.
    pub(crate) fn peek_recv(&self, qp: &Qp) -> Option<RecvWqe> {
        if let Some(srqn) = qp.srqn {
            let srq = self.dev.srqs.get(&srqn)?;
            let db = self.mem.read_be32(srq.pid, srq.dbrec).ok()?;
            if ahead(db, srq.consumed) == 0 {
                return None;
            }
            let shift = if srq.wqe_shift != 0 { srq.wqe_shift } else { srq.wq.wqe_shift };
            if !(5..=16).contains(&shift) {
                return None; // a next segment and one data segment at least
            }
            let idx = if srq.wq.wqe_cnt.is_power_of_two() { srq.head & (srq.wq.wqe_cnt - 1) } else { srq.head };
            let mut b = vec![0u8; 1 << shift];
            self.mem.read(srq.pid, srq.wq.buf + (u64::from(idx) << shift), &mut b).ok()?;
            let next = be16(&b, 2);
            return Some(RecvWqe { counter: idx as u16, sges: parse_scatter(&b[16..]), srq: Some((srqn, next)) });
        }
        let db = self.mem.read_be32(qp.pid, qp.dbrec).ok()?;
        let pending = ahead(db, qp.rq.ci);
        if pending == 0 || pending > qp.rq.wqe_cnt {
            return None;
        }
        let idx = qp.rq.ci & (qp.rq.wqe_cnt - 1);
        let shift = qp.rq.wqe_shift.min(16);
        let mut b = vec![0u8; 1 << shift];
        self.mem.read(qp.pid, qp.rq.buf + (u64::from(idx) << shift), &mut b).ok()?;
        Some(RecvWqe { counter: qp.rq.ci as u16, sges: parse_scatter(&b), srq: None })
    }

    /// Takes `w` (peeked from `qpn`) off its queue; an SRQ falling below
    /// its limit raises IB_EVENT_SRQ_LIMIT_REACHED once.
    pub(crate) fn consume_recv(&mut self, qpn: u32, w: &RecvWqe) {
        if let Some((srqn, next)) = w.srq {
            let Some(srq) = self.dev.srqs.get_mut(&srqn) else { return };
            srq.head = u32::from(next);
            srq.consumed = srq.consumed.wrapping_add(1);
            if srq.limit > 0 {
                let db = self.mem.read_be32(srq.pid, srq.dbrec).unwrap_or(srq.consumed);
                if ahead(db, srq.consumed) < srq.limit {
                    srq.limit = 0;
                    let (ctx, handle) = (srq.ctx, srq.user_handle);
                    self.events.async_event(ctx, handle, event::SRQ_LIMIT_REACHED);
                }
            }
        } else if let Some(qp) = self.dev.qps.get_mut(&qpn) {
            qp.rq.ci = qp.rq.ci.wrapping_add(1);
        }
    }

    /// Consumes `w` of `dst` with an error CQE; an RC responder then goes
    /// to ERR (after the requester's completion).
    fn recv_error(&mut self, dst: &Qp, w: &RecvWqe, syndrome: u8) {
        self.consume_recv(dst.qpn, w);
        let cqe = Cqe {
            opcode: cqe_op::RESP_ERR,
            syndrome,
            qpn: dst.qpn,
            srqn_uidx: Self::resp_uidx(dst),
            wqe_counter: w.counter,
            ..Cqe::default()
        };
        self.push_cqe(dst.recv_cqn, &cqe);
        if dst.qp_type == QpType::Rc {
            let ev = if syndrome == syn::LOC_PROT { event::QP_ACCESS_ERR } else { event::QP_REQ_ERR };
            self.dev.engine.pending_errors.push((dst.qpn, ev));
        }
    }

    /// Consumes `w` of `dst` with a successful responder CQE.
    pub(crate) fn recv_done(&mut self, dst: &Qp, w: &RecvWqe, cqe: Cqe) {
        self.consume_recv(dst.qpn, w);
        let cqe = Cqe { qpn: dst.qpn, srqn_uidx: Self::resp_uidx(dst), wqe_counter: w.counter, ..cqe };
        self.push_cqe(dst.recv_cqn, &cqe);
    }

    /// What a responder with no receive WQE answers.
    pub(crate) fn no_recv(dst: &Qp) -> Resp {
        if dst.qp_type == QpType::Rc {
            Resp::Rnr(dst.attrs.min_rnr_timer)
        } else {
            Resp::Ack
        }
    }

    /// Delivers a SEND to `dst`.
    pub(crate) fn deliver_send(&mut self, dst: &Qp, m: &Incoming<'_>) -> Resp {
        let Some(w) = self.peek_recv(dst) else { return Self::no_recv(dst) };
        let owned;
        let payload: &[u8] = match m.grh {
            Some(g) => {
                owned = [&g[..], m.data].concat();
                &owned
            }
            None => m.data,
        };
        if let Err(s) = self.scatter(dst.pdn, &w.sges, payload) {
            self.recv_error(dst, &w, s);
            return match (dst.qp_type, s) {
                (QpType::Rc, syn::LOC_LEN) => Resp::Nak(syn::REM_INV_REQ),
                (QpType::Rc, _) => Resp::Nak(syn::REM_OP),
                _ => Resp::Ack,
            };
        }
        if m.cqe_opcode == cqe_op::RESP_SEND_INV && !self.invalidate(dst.pdn, m.imm, Some(dst.qpn)) {
            self.recv_error(dst, &w, syn::REM_INV_REQ);
            return Resp::Nak(syn::REM_INV_REQ);
        }
        let mut flags_rqpn = m.src & 0xff_ffff;
        if m.grh.is_some() {
            // GRH present (bits 28-29); RoCE v2 over IPv4 or IPv6 (bits 24-25).
            let v4 = payload.get(20) == Some(&0x45);
            flags_rqpn |= (1 << 28) | (if v4 { 2 } else { 1 } << 24);
        }
        let cqe = Cqe {
            opcode: m.cqe_opcode,
            byte_cnt: payload.len() as u32,
            imm: m.imm,
            flags_rqpn,
            solicited: m.solicited,
            ..Cqe::default()
        };
        self.recv_done(dst, &w, cqe);
        Resp::Ack
    }
}
