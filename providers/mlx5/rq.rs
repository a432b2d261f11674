//! Receive WQEs: the receive queue of a QP (`mlx5_post_recv`, rdma-core
//! v44 `qp.c`) and the SRQ with its free list (`mlx5_post_srq_recv`,
//! `mlx5_free_srq_wqe`, `set_srq_buf_ll` in `srq.c`).
//!
//! A receive WQE is a run of [`DataSeg`]s; when it has fewer than the
//! queue's `max_gs`, a terminator `{0, MLX5_INVALID_LKEY, 0}` follows.
//! QP receive queues skip zero-length SGEs (as libmlx5 does); SRQs write
//! every SGE. An SRQ WQE starts with a [`SrqNextSeg`] whose
//! `next_wqe_index` links the free list: posts take WQEs at `head`,
//! completions put them back after `tail`, `head == tail` is full.
//!
//! Posting is all-or-nothing, as for the send queue; the doorbell record
//! (receive counter, or the SRQ's 16-bit counter) is stored with a
//! release store after the WQEs. There is no MMIO doorbell for receives.

use core::sync::atomic::Ordering;

use zerocopy::byteorder::network_endian::{U16, U32, U64};

use super::buf::{RqGeom, RqRing, Table, WqBuf};
use super::sizing::{RqSize, SrqSize};
use super::wqe::{DataSeg, SrqNextSeg, INVALID_LKEY, RCV_DBR};
use crate::error::{Error, ErrorKind, Result};
use crate::wr::{PostError, RecvWr, Refusal, Sge};

const SEG: usize = core::mem::size_of::<DataSeg>();

fn data_seg(s: &Sge) -> DataSeg {
    DataSeg { byte_count: U32::new(s.length), lkey: U32::new(s.lkey), addr: U64::new(s.addr) }
}

const END: DataSeg = DataSeg { byte_count: U32::ZERO, lkey: U32::new(INVALID_LKEY), addr: U64::ZERO };

fn refuse(verb: &'static str, kind: ErrorKind, why: &'static str, i: usize) -> PostError {
    PostError::refused(verb, Refusal(kind, why), i)
}

/// Whether `[off, off + len)` and the doorbell word at `db` are inside `buf`.
fn fits(buf: &WqBuf, off: usize, len: usize, db: usize) -> bool {
    off.checked_add(len).is_some_and(|e| e <= buf.len()) && db.checked_add(4).is_some_and(|e| e <= buf.len()) && db.is_multiple_of(4)
}

/// A QP's receive queue.
#[derive(Debug)]
pub struct RecvQueue {
    size: RqSize,
    /// Byte offset of the ring in the QP's buffer (libmlx5: 0; the straight
    /// path takes only that, [`RqGeom`]).
    offset: usize,
    /// Byte offset of the QP's doorbell record pair.
    dbrec_offset: usize,
    /// The ring and receive doorbell word, checked once here for
    /// [`Self::post_one`]'s stores (B7), and the `wr_id` table
    /// (`wqe_cnt` entries), which it owns so that the straight post masks
    /// one index for the WQE and the entry.
    geom: RqGeom,
    head: u32,
    /// `tail + max_post` (`tail`: receives completed so far), the value of
    /// `head` at which the queue is full: the straight post tests
    /// `head - lim` (signed) in three instructions, where `head - tail >=
    /// max_post` took six (a copy forced by two-address arithmetic). While
    /// `0 <= head - tail <= max_post` (every post checks it) the two tests
    /// agree. `max_post == wqe_cnt` (a power of two), so `lim` masked by the
    /// `wr_id` table is `tail` masked.
    lim: u32,
}

impl RecvQueue {
    /// A receive queue of `size` at `offset`, doorbell record at `dbrec_offset`.
    pub fn new(verb: &'static str, size: RqSize, offset: usize, dbrec_offset: usize) -> Result<Self> {
        if !size.wqe_cnt.is_power_of_two() || size.wqe_shift < 4 || size.wqe_shift > 16 || size.max_gs << 4 > 1 << size.wqe_shift {
            return Err(Error::new(verb, ErrorKind::InvalidArgument).with_detail("mlx5: receive queue geometry is not one sizing gives"));
        }
        let db = dbrec_offset.saturating_add(4 * RCV_DBR as usize);
        let geom = RqGeom::new(verb, offset, size.wqe_cnt, size.wqe_shift, size.max_gs, db)?;
        Ok(Self { size, offset, dbrec_offset, geom, head: 0, lim: size.max_post() })
    }

    /// `(head, tail)`: receives posted and completed so far.
    pub fn indices(&self) -> (u32, u32) {
        (self.head, self.tail())
    }

    /// Receives completed so far.
    fn tail(&self) -> u32 {
        self.lim.wrapping_sub(self.size.max_post())
    }

    /// Whether `head` is at or past the queue's room (signed, see `lim`).
    #[inline(always)]
    fn full_at(&self, head: u32) -> bool {
        head.wrapping_sub(self.lim) as i32 >= 0
    }

    /// `ibv_post_recv`.
    pub fn post(&mut self, buf: &mut WqBuf, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        const VERB: &str = "ibv_post_recv";
        if !fits(buf, self.offset, self.size.bytes() as usize, self.dbrec_offset) {
            return Err(refuse(VERB, ErrorKind::InvalidArgument, "mlx5: the buffer does not hold this receive queue", 0));
        }
        for (i, wr) in wrs.iter().enumerate() {
            if wr.sg_list.len() > self.size.max_gs as usize {
                return Err(refuse(VERB, ErrorKind::TooManySge, "num_sge is above the queue's max_recv_sge", i));
            }
            if self.full_at(self.head.wrapping_add(i as u32)) {
                return Err(refuse(VERB, ErrorKind::QueueFull, "the receive queue is full", i));
            }
        }
        if wrs.is_empty() {
            return Ok(());
        }
        let mask = self.size.wqe_cnt - 1;
        for (i, wr) in wrs.iter().enumerate() {
            let ind = self.head.wrapping_add(i as u32) & mask;
            let at = self.offset + ((ind as usize) << self.size.wqe_shift);
            let mut j = 0;
            for s in wr.sg_list.iter().filter(|s| s.length != 0) {
                buf.put(at + j * SEG, data_seg(s));
                j += 1;
            }
            if j < self.size.max_gs as usize {
                buf.put(at + j * SEG, END);
            }
            self.geom.wrid_mut()[ind as usize] = wr.wr_id;
        }
        self.head = self.head.wrapping_add(wrs.len() as u32);
        if let Some(db) = buf.atomic_u32(self.dbrec_offset + 4 * RCV_DBR as usize) {
            db.store((self.head & 0xffff).to_be(), Ordering::Release);
        }
        Ok(())
    }

    /// One receive of at most one SGE (the straight path of
    /// `ibv_post_recv`, and [`Self::post`]'s for a list of one): its WQE
    /// (the data segment unless the SGE is empty, the terminator if the
    /// WQE has room), its `wr_id`, the doorbell record. `false`, nothing
    /// changed, if the queue is full, or its geometry has no view (the
    /// buffer does not hold it, or its WQEs take no SGE, B7): the general
    /// path then posts it or names the error. A WQE slot
    /// (or `wr_id` entry) written and not counted by the record is not the
    /// device's, nor a poll's, yet.
    #[inline(always)]
    pub fn post_one(&mut self, buf: &mut WqBuf, wr_id: u64, sge: Option<&Sge>) -> bool {
        // Ring and doorbell word checked when the queue was made (B7): one
        // comparison here, none per store.
        self.post_one_with(wr_id, sge, |g| buf.rq_ring(g))
    }

    /// Whether `buf` holds this queue's ring and receive doorbell word
    /// (then [`Self::post_one`] into it finds a view, B7).
    pub fn ring_fits(&self, buf: &WqBuf) -> bool {
        self.geom.fits(buf)
    }

    /// [`Self::post_one`] with the ring view `ring` makes of the queue's
    /// geometry (`None`: nothing changed, `false`), asked once the queue
    /// is found not full: the one place a receive's WQE, `wr_id` and
    /// doorbell record are written, whichever way the view is made.
    #[inline(always)]
    pub fn post_one_with<'q>(&'q mut self, wr_id: u64, sge: Option<&Sge>, ring: impl FnOnce(&'q mut RqGeom) -> Option<RqRing<'q>>) -> bool {
        if self.full_at(self.head) {
            return false;
        }
        let Some(mut ring) = ring(&mut self.geom) else { return false };
        let head = self.head;
        // (The `wr_id`, library memory no one reads before the doorbell
        // record counts the WQE, and the WQE, at one masked index. The
        // view's WQEs hold a segment or more, B7: a queue of max_gs 0 has
        // no view and posts the general way. The terminator is stored
        // only if the WQE has room; libmlx5 skips an empty SGE.)
        ring.put_first(head, wr_id, || sge.filter(|s| s.length != 0).map(data_seg), END);
        self.head = head.wrapping_add(1);
        ring.store_db((self.head & 0xffff).to_be());
        true
    }

    /// The QP went to RESET (`mlx5_init_qp_indices`): the queue starts
    /// over at WQE 0; nothing posted is kept.
    pub fn reset(&mut self) {
        (self.head, self.lim) = (0, self.size.max_post());
    }

    /// A responder completion: receives complete in order, so it is the
    /// oldest outstanding one (`rq.tail++`); its `wr_id`.
    pub fn complete(&mut self) -> u64 {
        // (The table's own mask: `wqe_cnt` entries, a power of two, and
        // `lim = tail + wqe_cnt`: entry `tail & mask`.)
        let id = *self.geom.wrid_mut().at_mut(self.lim);
        self.lim = self.lim.wrapping_add(1);
        id
    }
}

/// A shared receive queue.
#[derive(Debug)]
pub struct Srq {
    size: SrqSize,
    dbrec_offset: usize,
    head: u32,
    tail: u32,
    counter: u16,
    wrid: Table<u64>,
}

impl Srq {
    /// An SRQ of `size` at offset 0 of `buf`, doorbell record at
    /// `dbrec_offset`; links the free list (and the wait queue) as
    /// `mlx5_alloc_srq_buf` does.
    pub fn new(verb: &'static str, size: SrqSize, buf: &mut WqBuf, dbrec_offset: usize) -> Result<Self> {
        let n = size.wqe_cnt;
        if !n.is_power_of_two() || n > 1 << 16 || size.tail >= n || size.wqe_shift < 5 || size.wqe_shift > 16 || (size.max_gs + 1) << 4 > 1 << size.wqe_shift {
            return Err(Error::new(verb, ErrorKind::InvalidArgument).with_detail("mlx5: SRQ geometry is not one sizing gives"));
        }
        if !fits(buf, 0, size.bytes() as usize, dbrec_offset) {
            return Err(Error::new(verb, ErrorKind::InvalidArgument).with_detail("mlx5: the buffer does not hold this SRQ"));
        }
        let s = Self { size, dbrec_offset, head: 0, tail: size.tail, counter: 0, wrid: Table::new(verb, n as usize)? };
        for i in 0..size.tail {
            s.link(buf, i, i + 1);
        }
        if size.waitq {
            for i in size.tail + 1..n - 1 {
                s.link(buf, i, i + 1);
            }
        }
        Ok(s)
    }

    fn at(&self, i: u32) -> usize {
        ((i & (self.size.wqe_cnt - 1)) as usize) << self.size.wqe_shift
    }

    fn link(&self, buf: &mut WqBuf, from: u32, to: u32) {
        buf.put(self.at(from) + 2, U16::new(to as u16));
    }

    /// The free-list link of WQE `i` (masked into the queue: the device
    /// never writes links, but nothing read from shared memory is trusted).
    fn next(&self, buf: &WqBuf, i: u32) -> u32 {
        let seg: SrqNextSeg = buf.get(self.at(i)).unwrap_or_default();
        u32::from(seg.next_wqe_index.get()) & (self.size.wqe_cnt - 1)
    }

    /// `(head, tail, counter)`.
    pub fn indices(&self) -> (u32, u32, u16) {
        (self.head, self.tail, self.counter)
    }

    /// `ibv_post_srq_recv`.
    pub fn post(&mut self, buf: &mut WqBuf, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        const VERB: &str = "ibv_post_srq_recv";
        if !fits(buf, 0, self.size.bytes() as usize, self.dbrec_offset) {
            return Err(refuse(VERB, ErrorKind::InvalidArgument, "mlx5: the buffer does not hold this SRQ", 0));
        }
        let mut cur = self.head;
        for (i, wr) in wrs.iter().enumerate() {
            if wr.sg_list.len() > self.size.max_gs as usize {
                return Err(refuse(VERB, ErrorKind::TooManySge, "num_sge is above the SRQ's max_sge", i));
            }
            if cur == self.tail {
                return Err(refuse(VERB, ErrorKind::QueueFull, "the SRQ is full", i));
            }
            cur = self.next(buf, cur);
        }
        for wr in wrs {
            let ind = self.head;
            self.wrid[ind as usize] = wr.wr_id;
            self.head = self.next(buf, ind);
            let scat = self.at(ind) + core::mem::size_of::<SrqNextSeg>();
            for (j, s) in wr.sg_list.iter().enumerate() {
                buf.put(scat + j * SEG, data_seg(s));
            }
            if wr.sg_list.len() < self.size.max_gs as usize {
                buf.put(scat + wr.sg_list.len() * SEG, END);
            }
        }
        if !wrs.is_empty() {
            self.counter = self.counter.wrapping_add(wrs.len() as u16);
            if let Some(db) = buf.atomic_u32(self.dbrec_offset) {
                db.store(u32::from(self.counter).to_be(), Ordering::Release);
            }
        }
        Ok(())
    }

    /// A completion for SRQ WQE `wqe_counter`: its `wr_id`, the WQE back
    /// on the free list after `tail`; `None` (nothing changed) for an
    /// index outside the SRQ.
    pub fn complete(&mut self, buf: &mut WqBuf, wqe_counter: u16) -> Option<u64> {
        let ind = u32::from(wqe_counter);
        if ind >= self.size.wqe_cnt {
            return None;
        }
        let id = self.wrid[ind as usize];
        self.link(buf, self.tail, ind);
        self.tail = ind;
        Some(id)
    }
}

#[cfg(test)]
#[path = "rq_tests.rs"]
mod tests;
