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

use super::{Ring, SendQueue};
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
const _: () = assert!(WR_RDMA_WRITE < 32 && WR_RDMA_WRITE_WITH_IMM < 32 && WR_SEND < 32 && WR_SEND_WITH_IMM < 32 && WR_RDMA_READ < 32);

/// `fm_ce_se` of a combination `f` of `IBV_SEND_FENCE`, `_SIGNALED`,
/// `_SOLICITED`.
const fn fm_ce_se(f: u32) -> u8 {
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
    b
}
const _: () = assert!(SendFlags::all().bits() == 7);

/// The inline bytes that fit the first basic block after the control
/// segment (the common small inline post): one block, which cannot wrap
/// the ring's end, and `ds` of at most 4; with a remote address segment,
/// 16 fewer.
const FIT: u32 = (WINDOW_MIN - 16 - INLINE_HDR) as u32;

/// What the straight path needs of a send queue beyond its
/// configuration, computed once when the queue is made.
#[derive(Clone, Copy, Debug)]
pub(super) struct Straight {
    /// The straight operations of the transport (none for UD).
    ops: u32,
    /// `qpn << 8`, the control segment's second word without `ds`.
    qpn8: u32,
    /// The control segment's third word as stored (`fm_ce_se` in its last
    /// byte, `MLX5_WQE_CTRL_CQ_UPDATE` with `sq_sig_all`) for each of the
    /// 8 flag combinations: one load instead of a shift, an or and a
    /// shift.
    fm: [u32; 8],
    /// `1 << 31` (the largest SGE length) if the queue takes an SGE, else
    /// 0: an SGE of `1..=sge_max` bytes in one compare.
    sge_max: u32,
    /// The inline bytes a one-block WQE takes, without a remote address
    /// segment (index 0) and with (index 1): [`FIT`] (16 fewer with the
    /// segment) within the queue's `max_inline`; `1..=fit` in one compare.
    fit: [u32; 2],
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
        let sig = if cfg.sig_all { WQE_CTRL_CQ_UPDATE } else { 0 };
        let inl = cfg.size.max_inline;
        Self {
            ops,
            qpn8: cfg.qpn << 8,
            fm: core::array::from_fn(|f| u32::from_ne_bytes([0, 0, 0, fm_ce_se(f as u32) | sig])),
            sge_max: if cfg.size.max_gs != 0 { 1 << 31 } else { 0 },
            fit: [FIT.min(inl), (FIT - 16).min(inl)],
            bf_ds: [if bf.prefer { max } else { 0 }, max],
        }
    }
}

/// The `MLX5_OPCODE_*` of a straight `ibv_wr_opcode`.
const fn mlx5_op(op: u32) -> u8 {
    match op {
        WR_RDMA_WRITE => OPCODE_RDMA_WRITE,
        WR_RDMA_WRITE_WITH_IMM => OPCODE_RDMA_WRITE_IMM,
        WR_SEND => OPCODE_SEND,
        WR_SEND_WITH_IMM => OPCODE_SEND_IMM,
        _ => OPCODE_RDMA_READ,
    }
}

impl SendQueue {
    /// `ibv_post_send` of the one request `s` through the straight path:
    /// `Some` (what to ring: [`StraightRing`]; the doorbell record is
    /// stored) if it was
    /// written, `None` — nothing stored, no index moved — if it is not a
    /// straight request or the general path must judge it.
    ///
    /// The operation is matched once, here: each straight one has its own
    /// body ([`Self::post_op`]), where its `MLX5_OPCODE_*`, whether the
    /// WQE has a remote address segment and immediate data are constants.
    #[inline(always)]
    pub fn post_straight<'b, W: StraightWr + ?Sized>(&mut self, buf: &'b mut WqBuf, s: &W) -> Option<StraightRing<'b>> {
        let flags = s.flags();
        // A fence inherited from a bind or local invalidate goes the
        // general way (it is dropped when the request fences itself).
        if flags > SendFlags::all().bits() || self.fm_cache != 0 {
            return None;
        }
        let op = s.opcode();
        const _: () = assert!(WR_RDMA_WRITE == 0 && WR_RDMA_WRITE_WITH_IMM == 1 && WR_SEND == 2 && WR_SEND_WITH_IMM == 3 && WR_RDMA_READ == 4);
        if op < 2 {
            if op == WR_RDMA_WRITE {
                self.post_op::<W, WR_RDMA_WRITE>(buf, s, flags)
            } else {
                self.post_op::<W, WR_RDMA_WRITE_WITH_IMM>(buf, s, flags)
            }
        } else if op < 4 {
            if op == WR_SEND {
                self.post_op::<W, WR_SEND>(buf, s, flags)
            } else {
                self.post_op::<W, WR_SEND_WITH_IMM>(buf, s, flags)
            }
        } else if op == WR_RDMA_READ {
            self.post_op::<W, WR_RDMA_READ>(buf, s, flags)
        } else {
            None
        }
    }

    /// [`Self::post_straight`] of a request of the straight operation
    /// `OP` (`s.opcode()`), with `flags` (`<= 7`).
    #[inline(always)]
    fn post_op<'b, W: StraightWr + ?Sized, const OP: u32>(&mut self, buf: &'b mut WqBuf, s: &W, flags: u32) -> Option<StraightRing<'b>> {
        // Constants of the operation.
        let remote = matches!(OP, WR_RDMA_WRITE | WR_RDMA_WRITE_WITH_IMM | WR_RDMA_READ);
        let raddr = u32::from(remote);
        let has_imm = matches!(OP, WR_RDMA_WRITE_WITH_IMM | WR_SEND_WITH_IMM);
        if self.straight.ops & 1 << OP == 0 {
            return None;
        }
        if self.head.wrapping_sub(self.tail) >= self.cfg.size.max_post {
            return None;
        }
        // The ring and the doorbell record, checked in the buffer once.
        let cur = self.cur_post;
        let mut ring = buf.sq_ring_at(&self.geom, cur)?;
        // The remote address segment, at 16, if the operation has one:
        // its fields read where it is stored (no pointer to them waits
        // across the checks). `rkey` and the reserved word in one store.
        macro_rules! raddr {
            ($w:expr) => {
                if remote {
                    let (remote_addr, rkey) = s.rdma_fields();
                    let rkey_rsvd: u64 = zerocopy::transmute!([rkey.to_be(), 0u32]);
                    $w.put::<16, [u64; 2]>([remote_addr.to_be(), rkey_rsvd]);
                }
            };
        }
        // The rest of a WQE of `ds` units (the control segment, the
        // remote address, the data) in `nbb` blocks whose data is stored
        // (`inline`: 1 if the data is inline), and its post: after the
        // last check, nothing here declines. A macro, expanded in each
        // shape's arm, so that each arm has its `ds`, `nbb` and `inline`
        // as constants instead of merging them across the match (in
        // registers or on the stack). The remote address segment is
        // stored before (`raddr!`).
        macro_rules! finish {
            ($ds:expr, $nbb:expr, $inline:expr) => {{
                let (ds, nbb): (u32, u32) = ($ds, $nbb);
                let mut w = ring.cur();
                let st = &self.straight;
                let words = [U32::new((cur & 0xffff) << 8 | u32::from(mlx5_op(OP))), U32::new(st.qpn8 | ds)];
                w.put::<0, [U32; 2]>(words);
                // `fm_ce_se`, then the immediate data: big-endian already
                // (as `ibv_send_wr` holds it); one store.
                let imm = if has_imm { s.ex() } else { 0 };
                w.put::<8, u64>(zerocopy::transmute!([st.fm[flags as usize], imm]));
                // (the table has `wqe_cnt` entries: `at_mut`'s mask is the
                // ring's; `wqe_head` and `wr_data` (0) in one store)
                self.table.put_plain(cur, s.wr_id(), self.head);
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
                        StraightRing::Block { first: cur & (self.cfg.size.wqe_cnt - 1), block: ring.into_cur_block() }
                    } else {
                        StraightRing::Ring(Ring::BlueFlame { first: cur & (self.cfg.size.wqe_cnt - 1), chunks: nbb })
                    }
                } else {
                    StraightRing::Ring(Ring::Doorbell(zerocopy::transmute!(words)))
                })
            }};
        }
        match s.data()? {
            // `1..=1 << 31` bytes, if the queue takes an SGE; a zero-length
            // one (no data segment, as libmlx5 skips it) goes the general
            // way.
            Plain::Sge(g) if g.length.wrapping_sub(1) < self.straight.sge_max => {
                let seg = DataSeg { byte_count: U32::new(g.length), lkey: U32::new(g.lkey), addr: U64::new(g.addr) };
                let mut w = ring.cur();
                if remote {
                    raddr!(w);
                    w.put::<32, DataSeg>(seg);
                    finish!(3, 1, 0)
                } else {
                    w.put::<16, DataSeg>(seg);
                    finish!(2, 1, 0)
                }
            }
            Plain::Empty => {
                raddr!(ring.cur());
                finish!(1 + raddr, 1, 0)
            }
            Plain::Inline(d) if OP != WR_RDMA_READ => {
                // `1..=fit` bytes: one block, written with the arm's
                // constants as an SGE is.
                if (d.len() as u64).wrapping_sub(1) < u64::from(self.straight.fit[raddr as usize]) {
                    let n = d.len() as u32;
                    let hdr = U32::new(n | INLINE_SEG);
                    let mut w = ring.cur();
                    raddr!(w);
                    if remote {
                        w.put::<32, U32>(hdr);
                    } else {
                        w.put::<16, U32>(hdr);
                    }
                    let stored = w.put_bytes(16 + 16 * raddr as usize + INLINE_HDR, d);
                    debug_assert!(stored);
                    // (`div_ceil` as an add and a shift: `n` is small)
                    return finish!(1 + raddr + ((n + INLINE_HDR as u32 + 15) >> 4), 1, 1);
                }
                if d.is_empty() {
                    // No inline segment for no bytes.
                    raddr!(ring.cur());
                    return finish!(1 + raddr, 1, 1);
                }
                if d.len() > self.cfg.size.max_inline as usize {
                    return None;
                }
                let n = d.len() as u32;
                let hdr = U32::new(n | INLINE_SEG);
                // (`n <= max_inline`, far below overflow)
                let ds = 1 + raddr + ((n + INLINE_HDR as u32 + 15) >> 4);
                let nbb = (ds + 3) >> 2;
                // A WQE that would wrap the ring's end goes the general
                // way (`None`).
                let mut w = ring.wqes(cur & (self.cfg.size.wqe_cnt - 1), nbb)?;
                raddr!(w);
                if remote {
                    w.put::<32, U32>(hdr);
                } else {
                    w.put::<16, U32>(hdr);
                }
                // Inside the WQE's blocks (`ds` counts them).
                let stored = w.put_bytes(16 + 16 * raddr as usize + INLINE_HDR, d);
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
