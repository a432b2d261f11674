//! [`CqRing::move_to`]: a CQ moved to a bigger or smaller buffer
//! (`ibv_resize_cq`, libmlx5 `mlx5_resize_cq` and
//! `mlx5_cq_resize_copy_cqes`).
//!
//! User space allocates the new buffer (every entry invalid) and sends
//! its address with `RESIZE_CQ`; the device writes a `RESIZE_CQ` CQE into
//! the old buffer at its producer index and writes every later CQE into
//! the new one, from the next index on. Once the command returned, the
//! CQEs still waiting in the old buffer, from the consumer index up to
//! that marker, are copied into the new buffer one index further on
//! (each with the owner bit of its new place), and the consumer index
//! steps over the marker: the copies and then the device's new CQEs
//! follow in order.
//!
//! The doorbell record does not move: the kernel keeps the address the
//! CQ was created with. It lives in the CQ's first buffer, which this
//! ring keeps (`dbrec_buf`) once the entries moved out of it.

use super::*;

impl CqRing {
    /// Where the doorbell record is: the buffer the CQ was created with.
    #[inline(always)]
    pub(super) fn dbrec_buf<'a>(&'a self, buf: &'a WqBuf) -> &'a WqBuf {
        self.dbrec_buf.as_ref().unwrap_or(buf)
    }

    /// Moves the ring from `buf` into `new` (`ncqe` entries of the same
    /// size, every one invalid) once the kernel switched the CQ to it:
    /// copies the CQEs waiting before the device's `RESIZE_CQ` marker and
    /// steps over the marker. `buf` then is the new buffer; the old one is
    /// kept if it holds the doorbell record, else dropped (the kernel let
    /// go of it). `Err` (the ring moved all the same, as libmlx5 does,
    /// without copying) if the marker is not where software owns the
    /// entries: the device did not write it, or wrote it beyond a full
    /// ring.
    pub fn move_to(&mut self, buf: &mut WqBuf, mut new: WqBuf, ncqe: u32) -> core::result::Result<(), &'static str> {
        let result = self.copy_waiting(buf, &mut new, ncqe);
        let old = core::mem::replace(buf, new);
        if self.dbrec_buf.is_none() {
            self.dbrec_buf = Some(old);
        }
        self.ncqe = ncqe;
        // The checked geometry moves with the ring, under the same `&mut`.
        self.geom = CqGeom::new(ncqe, self.cqe_size);
        if result.is_ok() {
            self.ci = self.ci.wrapping_add(1);
        }
        result
    }

    /// Copies old entry `i` to new entry `i + 1` from the consumer index
    /// up to the `RESIZE_CQ` marker.
    fn copy_waiting(&self, old: &WqBuf, new: &mut WqBuf, ncqe: u32) -> core::result::Result<(), &'static str> {
        let size = self.cqe_size as usize;
        if !ncqe.is_power_of_two() || ncqe as usize * size > new.len() || self.ncqe as usize * size > old.len() {
            return Err("mlx5: the CQ buffers do not hold their rings");
        }
        let mut i = self.ci;
        loop {
            if !self.owned_at(old, i) {
                return Err("mlx5: no RESIZE_CQ CQE where the resized CQ's entries end");
            }
            // Read after the owner byte said the entry is complete.
            fence(Ordering::Acquire);
            let at = self.clean_at(i);
            let Some(c) = old.get::<Cqe64>(at) else { return Err("mlx5: the CQ buffer does not hold its ring") };
            if c.op_own >> 4 == CQE_RESIZE_CQ {
                return Ok(());
            }
            if i.wrapping_sub(self.ci) >= ncqe {
                return Err("mlx5: more CQEs waiting than the resized CQ holds");
            }
            let j = i.wrapping_add(1);
            let dst = (j & (ncqe - 1)) as usize * size + size - 64;
            if size > 64 {
                let first: [u8; 64] = old.get(at - 64).unwrap_or([0; 64]);
                new.put(dst - 64, first);
            }
            let mut moved = c;
            moved.op_own = (c.op_own & !CQE_OWNER_MASK) | u8::from(j & ncqe != 0);
            new.put(dst, moved);
            i = j;
        }
    }
}

#[cfg(test)]
#[path = "cq_resize_tests.rs"]
mod tests;
