//! A WQE the caller built (libmlx5 `mlx5dv_wr_raw_wqe`, `mlx5_wr_raw_wqe`):
//! its bytes are copied into the send queue at the producer index (across
//! the ring's end if need be), the index is written into its control
//! segment, and its completion reports `IBV_WC_DRIVER2`.
//!
//! Only the operations an ordinary post can ask for are taken (SEND with
//! or without immediate or invalidate, RDMA WRITE with or without
//! immediate, RDMA READ, compare-and-swap, fetch-and-add; operation
//! modifier 0) and only for this QP's number: the device reaches memory
//! through the keys in the WQE's segments, as for any post, so a raw WQE
//! can do nothing a `SendWr` could not. A UMR (which would register memory)
//! or any other opcode is refused (`Unsupported`), as is a WQE larger than
//! the queue's WQE size (it would overrun requests still in flight).

use super::*;

/// `IBV_WC_DRIVER2`: the completion opcode libmlx5 records for a raw WQE.
pub const WC_DRIVER2: u32 = 136;

const VERB: &str = "mlx5dv_wr_raw_wqe";

fn refused(kind: ErrorKind, why: &'static str) -> PostError {
    PostError::refused(VERB, Refusal(kind, why), 0)
}

impl SendQueue {
    /// Posts the raw WQE `wqe` (its control segment's `ds` 16-byte units;
    /// `wqe` may be longer) as request `wr_id`, then says what to ring.
    pub fn post_raw(&mut self, buf: &mut WqBuf, wqe: &[u8], wr_id: u64) -> core::result::Result<Ring, PostError> {
        let ring = self.cfg.size.bytes();
        let ring_end = self.cfg.sq_offset.checked_add(ring as usize);
        let db_end = self.cfg.dbrec_offset.checked_add(8);
        if ring_end.is_none_or(|e| e > buf.len()) || db_end.is_none_or(|e| e > buf.len()) || !self.cfg.dbrec_offset.is_multiple_of(4) {
            return Err(refused(ErrorKind::InvalidArgument, "mlx5: the buffer does not hold this send queue"));
        }
        let Some(ctrl) = wqe.get(..16) else {
            return Err(refused(ErrorKind::InvalidArgument, "mlx5: a WQE starts with a 16-byte control segment"));
        };
        let word = |i: usize| u32::from_be_bytes([ctrl[i], ctrl[i + 1], ctrl[i + 2], ctrl[i + 3]]);
        let (opmod_idx_opcode, qpn_ds) = (word(0), word(4));
        let ds = qpn_ds & 0x3f;
        let bytes = ds * 16;
        if ds == 0 || wqe.len() < bytes as usize {
            return Err(refused(ErrorKind::InvalidArgument, "mlx5: the WQE is shorter than its control segment's ds"));
        }
        if bytes > self.cfg.size.wqe_size {
            return Err(refused(ErrorKind::InvalidArgument, "mlx5: the WQE is larger than the send queue's WQE size"));
        }
        if qpn_ds >> 8 != self.cfg.qpn {
            return Err(refused(ErrorKind::InvalidArgument, "mlx5: the WQE names another QP"));
        }
        let opcode = (opmod_idx_opcode & 0xff) as u8;
        let plain = matches!(
            opcode,
            OPCODE_SEND | OPCODE_SEND_IMM | OPCODE_SEND_INVAL | OPCODE_RDMA_WRITE | OPCODE_RDMA_WRITE_IMM | OPCODE_RDMA_READ | OPCODE_ATOMIC_CS | OPCODE_ATOMIC_FA
        );
        if !plain || opmod_idx_opcode >> 24 != 0 {
            return Err(refused(ErrorKind::Unsupported, "mlx5: only the operations of an ordinary post, without modifier"));
        }
        if self.outstanding() >= self.cfg.size.max_post {
            return Err(refused(ErrorKind::QueueFull, "the send queue is full"));
        }
        let idx = self.cur_post & (self.cfg.size.wqe_cnt - 1);
        let start = idx * BB;
        // 16 bytes at a time: a segment never straddles the ring's end.
        for (k, chunk) in wqe[..bytes as usize].chunks_exact(16).enumerate() {
            let mut seg = [0u8; 16];
            seg.copy_from_slice(chunk);
            if k == 0 {
                seg[..4].copy_from_slice(&((opmod_idx_opcode & 0xff00_00ff) | (self.cur_post & 0xffff) << 8).to_be_bytes());
            }
            self.put(buf, start + k as u32 * 16, seg);
        }
        self.table.put(idx, SqEntry { wr_id, wqe_head: self.head, wr_data: WC_DRIVER2 });
        self.cur_post = self.cur_post.wrapping_add(bytes.div_ceil(BB));
        self.fm_cache = 0;
        Ok(self.finish(buf, 1, idx, ds, false))
    }
}

#[cfg(test)]
#[path = "sq_raw_tests.rs"]
mod tests;
