//! Completion queue entries: the 64-byte CQE (the second half of a 128-byte
//! one), written body first and the `op_own` byte last; overrun detection
//! against the consumer index in the doorbell record; arming and the
//! completion event that follows a CQE on an armed CQ.

use super::consts::{cqe_op, event, ARM_SOLICITED};
use super::{Engine, EventSink};
use crate::mem::HostMem;
use crate::model::ARM_UNSET;

/// What goes into one CQE.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cqe {
    /// CQE opcode (`cqe_op`).
    pub opcode: u8,
    /// Error syndrome (error CQEs only).
    pub syndrome: u8,
    /// Vendor error syndrome (error CQEs only).
    pub vendor_err: u8,
    /// QPN (low 24 bits of sop_drop_qpn).
    pub qpn: u32,
    /// Send WQE opcode (high byte of sop_drop_qpn; requester CQEs).
    pub wqe_opcode: u8,
    /// srqn_uidx: the user index (CQE version 1) or the SRQ number.
    pub srqn_uidx: u32,
    /// Byte count.
    pub byte_cnt: u32,
    /// imm_inval_pkey as a number (written big-endian).
    pub imm: u32,
    /// flags_rqpn: source QP | GRH/SL bits.
    pub flags_rqpn: u32,
    /// WQE counter.
    pub wqe_counter: u16,
    /// The completion is solicited (fires a "next solicited" arm).
    pub solicited: bool,
}

impl Cqe {
    /// The 64 bytes of `mlx5_cqe64` (owner bit still clear).
    pub fn encode(&self, owner: u8) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[24..28].copy_from_slice(&self.flags_rqpn.to_be_bytes());
        b[32..36].copy_from_slice(&(self.srqn_uidx & 0xff_ffff).to_be_bytes());
        b[36..40].copy_from_slice(&self.imm.to_be_bytes());
        b[44..48].copy_from_slice(&self.byte_cnt.to_be_bytes());
        if self.is_error() {
            b[54] = self.vendor_err;
            b[55] = self.syndrome;
        }
        let sop = (u32::from(self.wqe_opcode) << 24) | (self.qpn & 0xff_ffff);
        b[56..60].copy_from_slice(&sop.to_be_bytes());
        b[60..62].copy_from_slice(&self.wqe_counter.to_be_bytes());
        b[63] = (self.opcode << 4) | (owner & 1);
        b
    }

    /// REQ_ERR or RESP_ERR.
    pub fn is_error(&self) -> bool {
        self.opcode == cqe_op::REQ_ERR || self.opcode == cqe_op::RESP_ERR
    }
}

impl<M: HostMem, E: EventSink> Engine<'_, M, E> {
    /// Writes `cqe` into CQ `cqn` and fires its completion event if armed.
    /// An overrun (no free entry, judged by the doorbell record's consumer
    /// index) raises IB_EVENT_CQ_ERR once and drops the CQE, as does a CQ
    /// whose buffer cannot be written.
    pub(crate) fn push_cqe(&mut self, cqn: u32, cqe: &Cqe) {
        let Some(cq) = self.dev.cqs.get(&cqn) else { return };
        if cq.overrun || cq.ncqe == 0 || !cq.ncqe.is_power_of_two() {
            return;
        }
        if cq.armed.is_none() && cq.channel.is_some() {
            // An arm the application stored before this CQE's work was
            // posted, whose UAR doorbell the scanner has not read yet: the
            // arm came first, so it is taken first (see `pending_arm`).
            if let Some(word) = self.pending_arm(cqn) {
                self.arm(cqn, word);
            }
        }
        let Some(cq) = self.dev.cqs.get(&cqn) else { return };
        let (pid, ncqe, pi) = (cq.pid, cq.ncqe, cq.pi);
        let ci = self.mem.read_be32(pid, cq.dbrec).map(|v| v & 0xff_ffff);
        let full = match ci {
            Ok(ci) => (pi.wrapping_sub(ci) & 0xff_ffff) >= ncqe,
            Err(_) => true,
        };
        let slot = u64::from(pi & (ncqe - 1));
        let at = cq.buf + slot * u64::from(cq.cqe_size) + u64::from(cq.cqe_size.saturating_sub(64));
        let owner = ((pi / ncqe) & 1) as u8;
        let bytes = cqe.encode(owner);
        let wrote = !full
            && self.mem.write(pid, at, &bytes[..63]).is_ok()
            && self.mem.write(pid, at + 63, &bytes[63..]).is_ok();
        let cq = self.dev.cqs.get_mut(&cqn).expect("looked up above");
        if !wrote {
            cq.overrun = true;
            let (ctx, handle) = (cq.ctx, cq.user_handle);
            self.events.async_event(ctx, handle, event::CQ_ERR);
            return;
        }
        cq.pi = pi.wrapping_add(1);
        self.dev.engine.work += 1;
        let fire = match cq.armed {
            Some(false) => true,
            Some(true) => cqe.solicited || cqe.is_error(),
            None => false,
        };
        if fire {
            self.fire(cqn);
        }
    }

    /// Sends CQ `cqn`'s completion event (if it has a channel) and disarms it.
    fn fire(&mut self, cqn: u32) {
        let Some(cq) = self.dev.cqs.get_mut(&cqn) else { return };
        cq.armed = None;
        if let Some(ch) = cq.channel {
            let handle = cq.user_handle;
            self.events.completion(ch, handle);
        }
    }

    /// The arm word in CQ `cqn`'s doorbell record, if it is one not taken
    /// yet. libmlx5 (and our provider) store it there before writing it to
    /// the UAR, and post work after both; the engine runs posted work from
    /// the QP's doorbell record (`Engine::progress`) without waiting for the
    /// UAR doorbell, so the work can be run in a scan that read the UAR
    /// before the arm landed there. A CQE on an unarmed CQ first looks here:
    /// without it, that CQE found the CQ unarmed and the UAR arm that came
    /// next (its consumer index now behind) fired at once, even when armed
    /// for solicited completions only (the flaky
    /// `rxe_completion_events_end_to_end` on the simulator).
    fn pending_arm(&self, cqn: u32) -> Option<u32> {
        let cq = self.dev.cqs.get(&cqn)?;
        let word = self.mem.read_be32(cq.pid, cq.dbrec + 4).ok()?;
        (word != ARM_UNSET && word != cq.arm_taken).then_some(word)
    }

    /// The arm doorbell: `word` = arm_sn << 28 | cmd | consumer index.
    /// Returns false (and does nothing) for a word taken already (from the
    /// doorbell record, or the same arm seen twice).
    pub(crate) fn arm(&mut self, cqn: u32, word: u32) -> bool {
        let Some(cq) = self.dev.cqs.get_mut(&cqn) else { return false };
        if cq.arm_taken == word {
            return false;
        }
        cq.arm_taken = word;
        cq.arm_sn = (word >> 28) & 3;
        cq.armed = Some(word & (0xf << 24) == ARM_SOLICITED);
        let ci = word & 0xff_ffff;
        if ci != cq.pi & 0xff_ffff {
            self.fire(cqn);
        }
        true
    }
}
