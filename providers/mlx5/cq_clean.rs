//! [`CqRing::clean`]: dropping one QP's completions from a CQ when the QP
//! goes to RESET (libmlx5 `__mlx5_cq_clean`, called from `mlx5_modify_qp`):
//! the CQEs still waiting that name the QP are removed, the others keep
//! their order and move up to close the gap, and the consumer index moves
//! past the freed entries.

use super::*;
use zerocopy::IntoBytes;

/// `enum mlx5_cqe_opcode` values of responder CQEs (`is_responder`).
const fn is_responder(opcode: u8) -> bool {
    matches!(opcode, CQE_RESP_WR_IMM | CQE_RESP_SEND | CQE_RESP_SEND_IMM | CQE_RESP_SEND_INV | CQE_RESP_ERR)
}

impl CqRing {
    /// Offset of the 64 bytes that matter of entry `i`.
    pub(super) fn clean_at(&self, i: u32) -> usize {
        (i & (self.ncqe - 1)) as usize * self.cqe_size as usize + self.cqe_size as usize - 64
    }

    /// Whether software owns entry `i` (a CQE the device wrote on the
    /// pass `i` belongs to).
    pub(super) fn owned_at(&self, buf: &WqBuf, i: u32) -> bool {
        let op_own: u8 = buf.get(self.clean_at(i) + 63).unwrap_or(CQE_INVALID << 4);
        op_own >> 4 != CQE_INVALID && (op_own & CQE_OWNER_MASK != 0) == (i & self.ncqe != 0)
    }

    /// Removes the waiting CQEs of the QP with user index `uidx` and
    /// number `qpn` (CQEs name it by the first with CQE version 1, by the
    /// second with version 0). A
    /// responder CQE of a QP on an SRQ hands its SRQ WQE to `srq_free`
    /// (its `wqe_counter`), as `mlx5_free_srq_wqe` does. Returns how many
    /// were removed; the consumer index record is stored (release: after
    /// the moved entries) if any was.
    pub fn clean(&mut self, buf: &mut WqBuf, uidx: u32, qpn: u32, mut srq_free: impl FnMut(u16)) -> u32 {
        let entries = self.ncqe as usize * self.cqe_size as usize;
        if entries > buf.len() || self.dbrec_offset.checked_add(8).is_none_or(|e| e > self.dbrec_buf(buf).len()) {
            return 0;
        }
        // The producer index: the first entry from `ci` that software does
        // not own (new CQEs cannot name this QP: it is in RESET already).
        let mut pi = self.ci;
        while pi.wrapping_sub(self.ci) < self.ncqe && self.owned_at(buf, pi) {
            pi = pi.wrapping_add(1);
        }
        // Backwards from the newest: drop the QP's, move the others up by
        // the number dropped so far (keeping the owner bit of the slot
        // they land in).
        let mut freed = 0u32;
        let mut i = pi;
        while i != self.ci {
            i = i.wrapping_sub(1);
            let at = self.clean_at(i);
            let Some(c) = buf.get::<Cqe64>(at) else { return freed };
            let (named, rsn) = if self.cqe_version == 1 { (c.srqn_uidx.get(), uidx) } else { (c.sop_drop_qpn.get(), qpn) };
            if named & 0xff_ffff == rsn {
                if is_responder(c.op_own >> 4) {
                    srq_free(c.wqe_counter.get());
                }
                freed += 1;
            } else if freed > 0 {
                let dst = self.clean_at(i.wrapping_add(freed));
                let dst_owner = buf.get::<u8>(dst + 63).unwrap_or(0) & CQE_OWNER_MASK;
                // A 128-byte CQE moves whole: its first half too.
                let half = self.cqe_size as usize - 64;
                if half > 0 {
                    let first: [u8; 64] = buf.get(at - half).unwrap_or([0; 64]);
                    buf.put(dst - half, first);
                }
                let mut moved = c;
                moved.op_own = (c.op_own & !CQE_OWNER_MASK) | dst_owner;
                // The owner byte last and atomically: a poller may test it
                // without the CQ's lock (`provider::peek`).
                buf.put_bytes(dst, &moved.as_bytes()[..63]);
                if let Some(o) = buf.atomic_u8(dst + 63) {
                    o.store(moved.op_own, Ordering::Release);
                }
            }
        }
        if freed > 0 {
            self.ci = self.ci.wrapping_add(freed);
            self.update_ci(buf);
        }
        freed
    }
}
