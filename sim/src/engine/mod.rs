//! The NIC half: what a ConnectX does with the queues userspace owns.
//!
//! The command half calls in here when a doorbell is seen (UAR writes,
//! found by the daemon's doorbell scanner), when a QP changes state, and
//! periodically ([`Engine::progress`]) for work that waits on time or on
//! the peer (RNR retries, receive queues that were empty).
//!
//! Contract with the command half (`server/`):
//! - the command half owns object creation/destruction in [`Device`] and
//!   MODIFY_QP's attribute bookkeeping; on a transition to ERR it calls
//!   [`Engine::qp_error`]; on a transition to RESET it zeroes the QP's
//!   `sq.ci`/`rq.ci` itself (libmlx5 zeroes its indices and doorbell record);
//! - the engine writes CQEs and raises completion/async events through
//!   [`EventSink`]; it never creates or destroys objects, but it moves QPs
//!   to ERR (RC errors) or SQE (UC/UD send-queue errors) in the model.
//!
//! What it models, file by file: `wqe` (reading send WQEs out of the ring,
//! wrap included, and receive scatter lists), `send` (the requester's
//! in-order loop, retry timers, completions), `rdma` (each opcode and its
//! delivery: RC/UC by the QP's destination, UD by the datagram segment),
//! `mcast` (UD datagrams to a multicast GID, to every attached QP), `recv` (RQ and SRQ consumption, UD's GRH, responder CQEs and errors),
//! `keys` (lkey/rkey/window checks and the DMA), `umr` (memory windows),
//! `cqe` (CQE layout, owner bit, overrun, arming), `flush` (ERR), `state`
//! (what survives between calls: retry timers, the clock, whether the
//! port's link is down: then no peer is reachable). What it does
//! not: packets (delivery is a copy between the two QPs' memories on the
//! one port), PSNs, MTU segmentation, QP1, XRC, scatter to CQE
//! (declined, as the device may), signature/crypto/DEVX objects, and
//! responder resources for READ/atomics (`max_dest_rd_atomic` is not
//! enforced).

mod consts;
mod cqe;
mod flush;
mod keys;
mod mcast;
mod rdma;
mod recv;
mod send;
mod state;
mod umr;
mod wqe;
#[cfg(test)]
mod tests;

pub use consts::{cqe_op, ctrl, event, op, syn};
pub use cqe::Cqe;
pub use mcast::{is_multicast_gid, MULTICAST_QPN};
pub use state::{EngineState, Stall, StallKind};

use crate::mem::HostMem;
use crate::model::{Device, QpState};

/// Where the engine reports events: the daemon forwards them to the
/// processes' completion-channel and async-event descriptors.
pub trait EventSink {
    /// A completion event for the CQ whose `user_handle` is given, on
    /// completion channel `channel` (struct ib_uverbs_comp_event_desc).
    fn completion(&mut self, channel: u32, cq_user_handle: u64);
    /// An async event for context `ctx` (struct ib_uverbs_async_event_desc:
    /// element = the object's user handle or the port number, event_type =
    /// enum ib_event_type).
    fn async_event(&mut self, ctx: u32, element: u64, event_type: u32);
}

/// One borrow of the device for one engine step.
pub struct Engine<'a, M: HostMem, E: EventSink> {
    /// The device state.
    pub dev: &'a mut Device,
    /// Host memory (DMA).
    pub mem: &'a M,
    /// Event output.
    pub events: &'a mut E,
}

impl<M: HostMem, E: EventSink> Engine<'_, M, E> {
    /// A send doorbell for `qpn` (a UAR/BlueFlame write naming that QP):
    /// executes the send queue up to the doorbell record's send counter
    /// (a QP in ERR or SQE flushes what was posted instead).
    pub fn sq_doorbell(&mut self, qpn: u32) {
        self.run_sq(qpn);
        self.settle();
    }

    /// A CQ arm doorbell: `word` is the arm word (the high 32 bits of the
    /// 64-bit big-endian value written at UAR + 0x20: arm_sn << 28 | cmd
    /// | ci), for CQ `cqn` (the low 32 bits). A consumer index behind the
    /// producer fires the event at once.
    /// Returns false for an arm word taken already (the same word seen
    /// again, or taken from the CQ's doorbell record by a CQE, see
    /// `push_cqe`).
    pub fn cq_arm(&mut self, cqn: u32, word: u32) -> bool {
        self.arm(cqn, word)
    }

    /// QP `qpn` entered ERR (MODIFY_QP, or the engine itself): flush.
    pub fn qp_error(&mut self, qpn: u32) {
        if let Some(qp) = self.dev.qps.get_mut(&qpn) {
            qp.state = QpState::Err;
            self.enter_error(qpn, true);
            self.settle();
        }
    }

    /// Work that waits on time or on a peer (RNR retries, transport retry
    /// timeouts, WQEs posted before the QP reached RTS or to a QP in ERR,
    /// receives posted to a QP in ERR). Returns whether anything happened.
    pub fn progress(&mut self) -> bool {
        let before = self.dev.engine.work;
        let mut qpns: Vec<u32> = self.dev.qps.keys().copied().collect();
        qpns.sort_unstable();
        let qps = &self.dev.qps;
        self.dev.engine.stalls.retain(|q, s| qps.get(q).is_some_and(|qp| qp.state == QpState::Rts && qp.sq.ci == s.ci));
        for qpn in qpns {
            match self.dev.qps.get(&qpn).map(|q| q.state) {
                Some(QpState::Rts) => self.run_sq(qpn),
                Some(QpState::Err) => {
                    self.flush_sq(qpn);
                    self.flush_rq(qpn);
                }
                Some(QpState::Sqe) => self.flush_sq(qpn),
                _ => {}
            }
            self.settle();
        }
        self.dev.engine.work != before
    }
}
