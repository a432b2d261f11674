//! The straight send path of mlx5 (the provider seam's
//! `post_send_straight`): one plain request — SEND, SEND with immediate,
//! RDMA WRITE (with immediate), RDMA READ on an RC or UC QP, with one SGE,
//! inline bytes or no data — read field by field from the caller's
//! request ([`StraightWr`]: a `SendWr` of a list of one, or a C
//! `ibv_send_wr`) straight into its WQE, in one pass and with the ring and
//! doorbell record checked in the buffer once ([`WqBuf::sq_ring`]).
//!
//! The WQE is byte for byte the one [`SendQueue::post_with`] writes
//! (libmlx5's `_mlx5_post_send`), the indices, the wr_id table, the
//! doorbell record and the doorbell decision are the same. Anything this
//! path does not take — another operation or transport, unknown flags,
//! several SGEs, data over the capacities, a full queue, a WQE that would
//! wrap the ring's end, a fence inherited from a bind — is left untouched
//! (nothing stored) for the general path, which writes it or names the
//! error (`sq_straight_tests.rs` proves both against the general writer).

use zerocopy::byteorder::network_endian::{U32, U64};

use super::{Ring, SendQueue, SqEntry};
use crate::abi::uverbs::{WR_RDMA_READ, WR_RDMA_WRITE, WR_RDMA_WRITE_WITH_IMM, WR_SEND, WR_SEND_WITH_IMM};
use crate::providers::mlx5::buf::{SqBlock, WqBuf, WINDOW_MIN};
use crate::providers::mlx5::wqe::*;
use crate::providers::seam::{Plain, StraightWr};
use crate::qp::QpType;
use crate::wr::SendFlags;

/// The straight operations an RC QP takes (one bit per `ibv_wr_opcode`).
const RC_OPS: u32 = 1 << WR_SEND | 1 << WR_SEND_WITH_IMM | 1 << WR_RDMA_WRITE | 1 << WR_RDMA_WRITE_WITH_IMM | 1 << WR_RDMA_READ;
/// UC has no RDMA READ.
const UC_OPS: u32 = RC_OPS & !(1 << WR_RDMA_READ);
/// The operations with immediate data (big-endian in the request).
const IMM_OPS: u32 = 1 << WR_SEND_WITH_IMM | 1 << WR_RDMA_WRITE_WITH_IMM;
const _: () = assert!(WR_RDMA_WRITE < 8 && WR_RDMA_WRITE_WITH_IMM < 8 && WR_SEND < 8 && WR_SEND_WITH_IMM < 8 && WR_RDMA_READ < 8);

/// The `MLX5_OPCODE_*` of each straight `ibv_wr_opcode`, a byte each.
const MLX5_OPS: u64 = (OPCODE_RDMA_WRITE as u64) << (8 * WR_RDMA_WRITE)
    | (OPCODE_RDMA_WRITE_IMM as u64) << (8 * WR_RDMA_WRITE_WITH_IMM)
    | (OPCODE_SEND as u64) << (8 * WR_SEND)
    | (OPCODE_SEND_IMM as u64) << (8 * WR_SEND_WITH_IMM)
    | (OPCODE_RDMA_READ as u64) << (8 * WR_RDMA_READ);

/// `fm_ce_se` of each of the 8 combinations of `IBV_SEND_FENCE`,
/// `_SIGNALED`, `_SOLICITED`, a byte each: one shift instead of three
/// tests.
const FM_CE_SE: u64 = {
    let mut t = 0u64;
    let mut f = 0;
    while f < 8 {
        let mut b = 0u8;
        if f & SendFlags::FENCE.bits() != 0 {
            b |= WQE_CTRL_FENCE;
        }
        if f & SendFlags::SIGNALED.bits() != 0 {
            b |= WQE_CTRL_CQ_UPDATE;
        }
        if f & SendFlags::SOLICITED.bits() != 0 {
            b |= WQE_CTRL_SOLICITED;
        }
        t |= (b as u64) << (8 * f);
        f += 1;
    }
    t
};
const _: () = assert!(SendFlags::all().bits() == 7);

/// What the straight path needs of a send queue beyond its
/// configuration, computed once when the queue is made.
#[derive(Clone, Copy, Debug)]
pub(super) struct Straight {
    /// The straight operations of the transport (none for UD).
    ops: u32,
    /// `qpn << 8`, the control segment's second word without `ds`.
    qpn8: u32,
    /// `MLX5_WQE_CTRL_CQ_UPDATE` with `sq_sig_all`, else 0.
    sig: u8,
    /// The largest `ds` a BlueFlame copy takes, for a WQE without inline
    /// data (index 0) and with (index 1); 0 where BlueFlame is not used.
    bf_ds: [u32; 2],
}

impl Straight {
    pub(super) fn new(cfg: &super::SqConfig) -> Self {
        let ops = match cfg.qp_type {
            QpType::Rc => RC_OPS,
            QpType::Uc => UC_OPS,
            _ => 0,
        };
        let bf = cfg.bf;
        let max = if bf.enabled { bf.buf_size / 16 } else { 0 };
        Self {
            ops,
            qpn8: cfg.qpn << 8,
            sig: if cfg.sig_all { WQE_CTRL_CQ_UPDATE } else { 0 },
            bf_ds: [if bf.prefer { max } else { 0 }, max],
        }
    }
}

impl SendQueue {
    /// `ibv_post_send` of the one request `s` through the straight path:
    /// `Some` (what to ring: [`StraightRing`]; the doorbell record is
    /// stored) if it was
    /// written, `None` — nothing stored, no index moved — if it is not a
    /// straight request or the general path must judge it.
    #[inline(always)]
    pub fn post_straight<'b, W: StraightWr + ?Sized>(&mut self, buf: &'b mut WqBuf, s: &W) -> Option<StraightRing<'b>> {
        let opcode = s.opcode();
        let flags = s.flags();
        // `checked_shr`: an opcode of 32 or more is no straight one. A
        // fence inherited from a bind or local invalidate goes the
        // general way (it is dropped when the request fences itself).
        if self.straight.ops.checked_shr(opcode).unwrap_or(0) & 1 == 0 || flags & !SendFlags::all().bits() != 0 || self.fm_cache != 0 {
            return None;
        }
        if self.head.wrapping_sub(self.tail) >= self.cfg.size.max_post {
            return None;
        }
        // The ring and the doorbell record, checked in the buffer once.
        let cur = self.cur_post;
        let mut ring = buf.sq_ring_at(&self.geom, cur)?;
        // The remote address segment's fields, if the operation has one:
        // asked in each shape's arm once its data is judged, and read
        // where the segment is stored (`raddr!`), so that no pointer to
        // them waits across the checks.
        macro_rules! remote {
            () => {{
                let remote = s.rdma_remote(opcode);
                let raddr = u32::from(remote.is_some());
                (remote, raddr)
            }};
        }
        // The remote address segment, at 16.
        macro_rules! raddr {
            ($r:expr) => {{
                let (remote_addr, rkey) = $r();
                ring.cur().put::<16, RaddrSeg>(RaddrSeg { raddr: U64::new(remote_addr), rkey: U32::new(rkey), reserved: U32::ZERO });
            }};
        }
        // The rest of a WQE of `ds` units (the control segment, the
        // remote address, the data) in `nbb` blocks whose data is stored
        // (`inline`: 1 if the data is inline), and its post: after the
        // last check, nothing here declines. A macro, expanded in each
        // shape's arm, so that each arm has its `ds`, `nbb`, `inline` and
        // (where it branched on it) `raddr` as constants instead of
        // merging them across the match (in registers or on the stack).
        // The remote address segment is stored before (`raddr!`).
        macro_rules! finish {
            ($ds:expr, $nbb:expr, $inline:expr) => {{
                let (ds, nbb): (u32, u32) = ($ds, $nbb);
                let mut w = ring.cur();
                let st = &self.straight;
                let imm = if IMM_OPS >> opcode & 1 != 0 { s.ex() } else { 0 };
                let fm = (FM_CE_SE >> (8 * flags)) as u8 | st.sig;
                let op = (MLX5_OPS >> (8 * opcode)) as u8;
                let words = [U32::new((cur & 0xffff) << 8 | u32::from(op)), U32::new(st.qpn8 | ds)];
                w.put::<0, [U32; 2]>(words);
                // `imm` is big-endian already (as `ibv_send_wr` holds it).
                w.put::<8, [u32; 2]>([u32::from_ne_bytes([0, 0, 0, fm]), imm]);
                // (the table has `wqe_cnt` entries: `at_mut`'s mask is the
                // ring's)
                *self.table.at_mut(cur) = SqEntry { wr_id: s.wr_id(), wqe_head: self.head, wr_data: 0 };
                let idx = cur & (self.cfg.size.wqe_cnt - 1);
                self.head = self.head.wrapping_add(1);
                let next = cur.wrapping_add(nbb);
                self.cur_post = next;
                // The WQE stores must reach memory before the device can see
                // the new counter (SAFETY.md, the mlx5 barriers): release
                // store.
                ring.store_db((next & 0xffff).to_be());
                // libmlx5's choice (`post_send_db`): BlueFlame for one WQE of
                // more than one unit that fits the register's half.
                Some(if ds > 1 && ds <= st.bf_ds[$inline] {
                    if nbb == 1 {
                        StraightRing::Block { first: idx, block: ring.into_cur_block() }
                    } else {
                        StraightRing::Ring(Ring::BlueFlame { first: idx, chunks: nbb })
                    }
                } else {
                    StraightRing::Ring(Ring::Doorbell(zerocopy::transmute!(words)))
                })
            }};
        }
        match s.data()? {
            Plain::Sge(g) if self.cfg.size.max_gs != 0 && g.length <= 1 << 31 => {
                // A zero-length SGE is skipped (no data segment), as
                // libmlx5 skips it.
                let (remote, raddr) = remote!();
                if g.length == 0 {
                    if let Some(r) = &remote {
                        raddr!(r);
                    }
                    return finish!(1 + raddr, 1, 0);
                }
                let seg = DataSeg { byte_count: U32::new(g.length), lkey: U32::new(g.lkey), addr: U64::new(g.addr) };
                match &remote {
                    None => {
                        ring.cur().put::<16, DataSeg>(seg);
                        finish!(2, 1, 0)
                    }
                    Some(r) => {
                        raddr!(r);
                        ring.cur().put::<32, DataSeg>(seg);
                        finish!(3, 1, 0)
                    }
                }
            }
            Plain::Empty => {
                let (remote, raddr) = remote!();
                if let Some(r) = &remote {
                    raddr!(r);
                }
                finish!(1 + raddr, 1, 0)
            }
            Plain::Inline(d) if d.len() <= self.cfg.size.max_inline as usize && opcode != WR_RDMA_READ => {
                let n = d.len() as u32;
                let (remote, raddr) = remote!();
                if n == 0 {
                    // No inline segment for no bytes.
                    if let Some(r) = &remote {
                        raddr!(r);
                    }
                    return finish!(1 + raddr, 1, 1);
                }
                let hdr = U32::new(n | INLINE_SEG);
                // Bytes that fit the first basic block (the common small
                // inline post): one block, which cannot wrap the ring's
                // end, and `ds` of at most 4; written with the arm's
                // constants as an SGE is.
                const FIT: u32 = (WINDOW_MIN - 16 - INLINE_HDR) as u32;
                match &remote {
                    None if n <= FIT => {
                        let mut w = ring.cur();
                        w.put::<16, U32>(hdr);
                        let stored = w.put_bytes(16 + INLINE_HDR, d);
                        debug_assert!(stored);
                        return finish!(1 + (n + INLINE_HDR as u32).div_ceil(16), 1, 1);
                    }
                    Some(r) if n <= FIT - 16 => {
                        raddr!(r);
                        let mut w = ring.cur();
                        w.put::<32, U32>(hdr);
                        let stored = w.put_bytes(32 + INLINE_HDR, d);
                        debug_assert!(stored);
                        return finish!(2 + (n + INLINE_HDR as u32).div_ceil(16), 1, 1);
                    }
                    _ => {}
                }
                let ds = 1 + raddr + (n + INLINE_HDR as u32).div_ceil(16);
                let nbb = ds.div_ceil(4);
                // A WQE that would wrap the ring's end goes the general
                // way (`None`).
                let mut w = ring.wqes(cur & (self.cfg.size.wqe_cnt - 1), nbb)?;
                if let Some(r) = &remote {
                    let (remote_addr, rkey) = r();
                    w.put::<16, RaddrSeg>(RaddrSeg { raddr: U64::new(remote_addr), rkey: U32::new(rkey), reserved: U32::ZERO });
                }
                let at_data = if raddr == 0 {
                    w.put::<16, U32>(hdr);
                    16
                } else {
                    w.put::<32, U32>(hdr);
                    32
                };
                // Inside the WQE's blocks (`ds` counts them).
                let stored = w.put_bytes(at_data + INLINE_HDR, d);
                debug_assert!(stored);
                finish!(ds, nbb, 1)
            }
            _ => None,
        }
    }
}

/// What to ring after a straight post (the doorbell record is stored).
#[derive(Clone, Copy, Debug)]
pub enum StraightRing<'b> {
    /// A BlueFlame copy of the one basic block `first`, read from the
    /// ring (`block`) as it is copied.
    Block {
        /// Basic block index of the WQE.
        first: u32,
        /// Its 64 bytes in the ring.
        block: SqBlock<'b>,
    },
    /// Anything else, as [`SendQueue::post_with`] would ask.
    Ring(Ring),
}

impl StraightRing<'_> {
    /// As a [`Ring`] (what the general path returns for the same post).
    pub fn ring(&self) -> Ring {
        match *self {
            StraightRing::Block { first, .. } => Ring::BlueFlame { first, chunks: 1 },
            StraightRing::Ring(r) => r,
        }
    }
}

#[cfg(test)]
#[path = "sq_straight_tests.rs"]
mod tests;
