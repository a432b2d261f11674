//! The mlx5 send queue: WQEs written in place into the QP buffer as
//! libmlx5's `_mlx5_post_send` writes them (rdma-core v44 `qp.c`), the
//! doorbell record, and the doorbell decision of `post_send_db`.
//!
//! Posting is all-or-nothing: every request of a list is lowered and
//! checked (pass 1) before the first byte is stored (pass 2); a refused
//! list leaves the ring, the indices, the wr_id table and the doorbell
//! record as they were. (libmlx5 posts the requests before the bad one.)
//!
//! The bytes of each WQE equal libmlx5's, including what it leaves
//! alone: the padding after inline data and fetch-and-add's `compare`
//! keep whatever the ring held. Binds and local invalidates are UMR WQEs
//! ([`umr`]). Not written: XRC, type 1 window binds; and libmlx5's
//! `ATOMIC_WRITE`-less opcode table means `IBV_WR_ATOMIC_WRITE` is refused
//! as it is there.

use core::sync::atomic::Ordering;

use zerocopy::byteorder::network_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

use super::buf::{SqGeom, Table, WqBuf};
use super::sizing::SqSize;
use super::wqe::*;
use crate::ah::Ah;
use crate::error::{Error, ErrorKind, Result};
use crate::qp::QpType;
use crate::wr::{Payload, PostError, Refusal, SendFlags, SendOp, SendWr};

const VERB: &str = "ibv_post_send";
const BB: u32 = SEND_WQE_BB;

/// The library's record of one WQE slot (libmlx5's `wrid`, `wqe_head`
/// and `wr_data` arrays in one entry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(C)]
pub struct SqEntry {
    /// The request's `wr_id`.
    pub wr_id: u64,
    /// The request's number in posting order (`sq.head` when posted).
    pub wqe_head: u32,
    /// The `ibv_wc_opcode` of a UMR WQE (0 otherwise).
    pub wr_data: u32,
}

/// The BlueFlame register a QP rings (libmlx5's `struct mlx5_bf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlueFlame {
    /// The register can take WQE copies: it is not register 0 of a legacy
    /// context (`bf->uuarn != 0`) and `MLX5_SHUT_UP_BF` is not set.
    pub enabled: bool,
    /// `MLX5_POST_SEND_PREFER_BF` (libmlx5's default: on): copy non-inline
    /// WQEs too.
    pub prefer: bool,
    /// `bf->buf_size`: half of `bf_reg_size` (the register alternates
    /// halves).
    pub buf_size: u32,
}

/// Where a send queue is and what it was granted.
#[derive(Clone, Copy, Debug)]
pub struct SqConfig {
    /// The QP number (in every control segment).
    pub qpn: u32,
    /// RC, UC or UD.
    pub qp_type: QpType,
    /// The geometry [`super::sizing::sq_size`] computed.
    pub size: SqSize,
    /// Byte offset of the ring in the QP's buffer.
    pub sq_offset: usize,
    /// Byte offset of the QP's doorbell record pair (receive, send).
    pub dbrec_offset: usize,
    /// `sq_sig_all`: every WQE asks for a completion.
    pub sig_all: bool,
    /// The device does atomics (`atomic_cap != IBV_ATOMIC_NONE`).
    pub atomics: bool,
    /// The QP's BlueFlame register.
    pub bf: BlueFlame,
}

/// A UD destination, lowered: the AH's vector and the request's QP/Q_Key.
#[derive(Clone, Copy, Debug)]
pub struct UdAv {
    /// The address vector of the AH.
    pub av: Av,
    /// Destination QP number.
    pub remote_qpn: u32,
    /// Destination Q_Key.
    pub remote_qkey: u32,
}

/// A send request with its UD destination resolved to an address vector.
#[derive(Clone, Copy, Debug)]
pub struct Req<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// The operation.
    pub op: SendOp<'a>,
    /// Signaled, fenced, solicited.
    pub flags: SendFlags,
    /// Gather list or inline bytes.
    pub payload: Payload<'a>,
    /// The destination (UD only).
    pub ud: Option<UdAv>,
}

impl<'a> Req<'a> {
    /// Lowers `wr`, asking `av_of` for the vector of its AH.
    pub(crate) fn from_wr(wr: &SendWr<'a>, av_of: &impl Fn(&Ah<'_>) -> Option<Av>) -> core::result::Result<Self, Refusal> {
        let ud = match wr.ud {
            None => None,
            Some(d) => {
                let av = av_of(d.ah).ok_or(Refusal(ErrorKind::InvalidArgument, "the AH has no mlx5 address vector"))?;
                Some(UdAv { av, remote_qpn: d.remote_qpn, remote_qkey: d.remote_qkey })
            }
        };
        Ok(Self { wr_id: wr.wr_id, op: wr.op, flags: wr.flags, payload: wr.payload, ud })
    }
}

/// What the caller must do to the UAR after a post (the doorbell record
/// is already stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ring {
    /// Nothing was posted.
    Nothing,
    /// One 64-bit store of these 8 bytes (the last WQE's control segment,
    /// as they are in memory) to `register + offset`.
    Doorbell([u8; 8]),
    /// Copy `chunks` 64-byte basic blocks from `first` (wrapping at the
    /// ring's end: [`SendQueue::block`]) to `register + offset`.
    BlueFlame {
        /// Basic block index of the WQE.
        first: u32,
        /// 64-byte chunks to copy.
        chunks: u32,
    },
}

/// An mlx5 send queue: indices, wr_id table and the writer.
#[derive(Debug)]
pub struct SendQueue {
    cfg: SqConfig,
    /// Basic blocks written so far (`sq.cur_post`, wraps).
    cur_post: u32,
    /// Requests posted so far (`sq.head`).
    head: u32,
    /// Requests retired by completions (`sq.tail`).
    tail: u32,
    /// Fence the next WQE inherits (`fm_cache`: after a bind/invalidate).
    fm_cache: u8,
    table: entries::SqTable,
    /// The straight path's constants (`sq_straight.rs`).
    straight: straight::Straight,
    /// Where the ring and the doorbell record lie in the buffer, checked
    /// once here (the straight path's view, `WqBuf::sq_ring`).
    geom: SqGeom,
}

impl SendQueue {
    /// A send queue of `cfg`'s geometry; its tables are allocated here.
    pub fn new(verb: &'static str, cfg: SqConfig) -> Result<Self> {
        if !matches!(cfg.qp_type, QpType::Rc | QpType::Uc | QpType::Ud) {
            return Err(Error::new(verb, ErrorKind::Unsupported).with_detail("mlx5: only RC, UC and UD send queues are written"));
        }
        let n = cfg.size.wqe_cnt;
        if !n.is_power_of_two() || cfg.size.wqe_size == 0 || cfg.size.max_post == 0 || n > 1 << 24 {
            return Err(Error::new(verb, ErrorKind::InvalidArgument).with_detail("mlx5: send queue geometry is not one sizing gives"));
        }
        let geom = SqGeom::new(cfg.sq_offset, n, cfg.dbrec_offset.saturating_add(4 * SND_DBR as usize));
        let straight = straight::Straight::new(&cfg);
        Ok(Self { cfg, cur_post: 0, head: 0, tail: 0, fm_cache: 0, table: entries::SqTable::new(verb, n)?, straight, geom })
    }

    /// The configuration.
    pub fn config(&self) -> &SqConfig {
        &self.cfg
    }

    /// `(cur_post, head, tail)`.
    pub fn indices(&self) -> (u32, u32, u32) {
        (self.cur_post, self.head, self.tail)
    }

    /// Requests posted and not yet retired by a completion.
    pub fn outstanding(&self) -> u32 {
        self.head.wrapping_sub(self.tail)
    }

    /// `ibv_post_send` of `wrs`, asking `av_of` for each UD request's
    /// address vector (which must answer the same for the same AH
    /// throughout the call).
    pub fn post(&mut self, buf: &mut WqBuf, wrs: &[SendWr<'_>], av_of: impl Fn(&Ah<'_>) -> Option<Av>) -> core::result::Result<Ring, PostError> {
        self.post_lowered(buf, wrs.len(), |i| Req::from_wr(&wrs[i], &av_of))
    }

    /// Posts the `n` lowered requests `get(0..n)` (called twice per
    /// request: to check, then to write; it must answer the same both
    /// times).
    pub fn post_with<'a>(&mut self, buf: &mut WqBuf, n: usize, get: impl Fn(usize) -> Req<'a>) -> core::result::Result<Ring, PostError> {
        self.post_lowered(buf, n, |i| Ok(get(i)))
    }

    fn post_lowered<'a>(
        &mut self,
        buf: &mut WqBuf,
        n: usize,
        get: impl Fn(usize) -> core::result::Result<Req<'a>, Refusal>,
    ) -> core::result::Result<Ring, PostError> {
        let ring_end = self.cfg.sq_offset.checked_add(self.cfg.size.bytes() as usize);
        let db_end = self.cfg.dbrec_offset.checked_add(8);
        if ring_end.is_none_or(|e| e > buf.len()) || db_end.is_none_or(|e| e > buf.len()) || !self.cfg.dbrec_offset.is_multiple_of(4) {
            return Err(PostError::refused(VERB, Refusal(ErrorKind::InvalidArgument, "mlx5: the buffer does not hold this send queue"), 0));
        }
        if n == 1 {
            // One request (the common case): lowered and checked once, then
            // written; a refusal still stores nothing.
            let r = get(0).map_err(|e| PostError::refused(VERB, e, 0))?;
            self.check(&r).map_err(|e| PostError::refused(VERB, e, 0))?;
            if self.outstanding() >= self.cfg.size.max_post {
                return Err(PostError::refused(VERB, Refusal(ErrorKind::QueueFull, "the send queue is full"), 0));
            }
            let mut next_fence = self.fm_cache;
            let (idx, ds, inl) = self.write(buf, &r, 0, &mut next_fence);
            if let SendOp::BindMw(b) = r.op {
                b.commit();
            }
            self.fm_cache = next_fence;
            return Ok(self.finish(buf, 1, idx, ds, inl));
        }
        for i in 0..n {
            let r = get(i).map_err(|e| PostError::refused(VERB, e, i))?;
            self.check(&r).map_err(|e| PostError::refused(VERB, e, i))?;
            if self.outstanding().wrapping_add(i as u32) >= self.cfg.size.max_post {
                return Err(PostError::refused(VERB, Refusal(ErrorKind::QueueFull, "the send queue is full"), i));
            }
        }
        if n == 0 {
            return Ok(Ring::Nothing);
        }
        let mut next_fence = self.fm_cache;
        let (mut last_idx, mut last_ds, mut inl) = (0, 0, false);
        for i in 0..n {
            let Ok(r) = get(i) else { continue };
            let (idx, ds, is_inline) = self.write(buf, &r, i as u32, &mut next_fence);
            if let SendOp::BindMw(b) = r.op {
                // The window answers to its new key once the bind is posted.
                b.commit();
            }
            (last_idx, last_ds) = (idx, ds);
            inl |= is_inline;
        }
        self.fm_cache = next_fence;
        Ok(self.finish(buf, n, last_idx, last_ds, inl))
    }

    /// After the `n` WQEs of a post are written (the last at basic block
    /// `last_idx`, `last_ds` 16-byte units, any inline): the indices, the
    /// doorbell record, and what to ring.
    #[inline(always)]
    fn finish(&mut self, buf: &mut WqBuf, n: usize, last_idx: u32, last_ds: u32, inl: bool) -> Ring {
        self.head = self.head.wrapping_add(n as u32);
        // The WQE stores must reach memory before the device can see the
        // new counter (libmlx5: udma_to_device_barrier): release store.
        if let Some(db) = buf.atomic_u32(self.cfg.dbrec_offset + 4 * SND_DBR as usize) {
            db.store((self.cur_post & 0xffff).to_be(), Ordering::Release);
        }
        let bf = self.cfg.bf;
        if n == 1 && bf.enabled && (inl || bf.prefer) && last_ds > 1 && last_ds <= bf.buf_size / 16 {
            Ring::BlueFlame { first: last_idx, chunks: (last_ds * 16).div_ceil(BB) }
        } else {
            let ctrl = buf.get::<[u8; 8]>(self.cfg.sq_offset + (last_idx * BB) as usize).unwrap_or_default();
            Ring::Doorbell(ctrl)
        }
    }

    /// Stores `seg` at byte `pos` of the ring (taken modulo its size:
    /// segments are 16-byte aligned and never straddle the end).
    #[inline(always)]
    fn put<T: IntoBytes + Immutable>(&self, buf: &mut WqBuf, pos: u32, seg: T) {
        let at = self.cfg.sq_offset + (pos & (self.cfg.size.bytes() - 1)) as usize;
        let stored = buf.put(at, seg);
        debug_assert!(stored, "checked against the buffer length before the first store");
    }

    /// Writes one checked request at `cur_post`; returns (basic block
    /// index, ds, inline).
    fn write(&mut self, buf: &mut WqBuf, r: &Req<'_>, nreq: u32, next_fence: &mut u8) -> (u32, u32, bool) {
        let ring = self.cfg.size.bytes();
        let idx = self.cur_post & (self.cfg.size.wqe_cnt - 1);
        let start = idx * BB;
        let mut pos = start + 16;
        let fence = if r.flags.contains(SendFlags::FENCE) { WQE_CTRL_FENCE } else { *next_fence };
        *next_fence = 0;
        let mut fm = fence;
        if self.cfg.sig_all || r.flags.contains(SendFlags::SIGNALED) {
            fm |= WQE_CTRL_CQ_UPDATE;
        }
        if r.flags.contains(SendFlags::SOLICITED) {
            fm |= WQE_CTRL_SOLICITED;
        }
        let mut wr_data = 0;
        let raddr = |remote_addr: u64, rkey: u32| RaddrSeg { raddr: U64::new(remote_addr), rkey: U32::new(rkey), reserved: U32::ZERO };
        let (opcode, imm) = match r.op {
            SendOp::Send => (OPCODE_SEND, 0),
            SendOp::SendWithImm { imm } => (OPCODE_SEND_IMM, imm),
            SendOp::SendWithInv { invalidate_rkey } => (OPCODE_SEND_INVAL, invalidate_rkey),
            SendOp::RdmaWrite { remote_addr, rkey } => {
                self.put(buf, pos, raddr(remote_addr, rkey));
                pos += 16;
                (OPCODE_RDMA_WRITE, 0)
            }
            SendOp::RdmaWriteWithImm { remote_addr, rkey, imm } => {
                self.put(buf, pos, raddr(remote_addr, rkey));
                pos += 16;
                (OPCODE_RDMA_WRITE_IMM, imm)
            }
            SendOp::RdmaRead { remote_addr, rkey } => {
                self.put(buf, pos, raddr(remote_addr, rkey));
                pos += 16;
                (OPCODE_RDMA_READ, 0)
            }
            SendOp::AtomicCmpSwp { remote_addr, rkey, compare, swap } => {
                self.put(buf, pos, raddr(remote_addr, rkey));
                self.put(buf, pos + 16, AtomicSeg { swap_add: U64::new(swap), compare: U64::new(compare) });
                pos += 32;
                (OPCODE_ATOMIC_CS, 0)
            }
            SendOp::AtomicFetchAdd { remote_addr, rkey, add } => {
                self.put(buf, pos, raddr(remote_addr, rkey));
                // libmlx5 writes only swap_add; compare keeps the ring's bytes.
                self.put(buf, pos + 16, U64::new(add));
                pos += 32;
                (OPCODE_ATOMIC_FA, 0)
            }
            SendOp::BindMw(b) => {
                let p = umr::BindParams { rkey: b.rkey(), mr_lkey: b.mr_lkey(), addr: b.addr(), length: b.length(), access: b.access(), type1: b.is_type1() };
                pos = self.write_umr(buf, pos, Some(p));
                (*next_fence, wr_data) = (WQE_CTRL_INITIATOR_SMALL_FENCE, umr::WC_BIND_MW);
                (OPCODE_UMR, b.mw_rkey())
            }
            SendOp::LocalInv { rkey } => {
                pos = self.write_umr(buf, pos, None);
                (*next_fence, wr_data) = (WQE_CTRL_INITIATOR_SMALL_FENCE, umr::WC_LOCAL_INV);
                (OPCODE_UMR, rkey)
            }
            // Refused by `check`.
            SendOp::AtomicWrite { .. } => (OPCODE_NOP, 0),
        };
        if let Some(ud) = r.ud {
            let mut av = ud.av;
            av.dqp_dct = U32::new(ud.remote_qpn | EXTENDED_UD_AV);
            av.qkey = U32::new(ud.remote_qkey);
            self.put(buf, pos, av);
            pos += 48;
        }
        let mut ds = (pos - start) / 16;
        let inline = match r.payload {
            Payload::Inline(d) => {
                if !d.is_empty() {
                    let len = d.len() as u32;
                    self.put(buf, pos, U32::new(len | INLINE_SEG));
                    let at = (pos + INLINE_HDR as u32) & (ring - 1);
                    let first = d.len().min((ring - at) as usize);
                    let stored = buf.put_bytes(self.cfg.sq_offset + at as usize, &d[..first])
                        && buf.put_bytes(self.cfg.sq_offset, &d[first..]);
                    debug_assert!(stored, "inline bytes fit the ring (max_inline < wqe_size)");
                    ds += (len + INLINE_HDR as u32).div_ceil(16);
                }
                true
            }
            Payload::Sges(sges) => {
                for s in sges.iter().filter(|s| s.length != 0) {
                    let byte_count = if r.op.is_atomic() { 8 } else { s.length };
                    self.put(buf, pos, DataSeg { byte_count: U32::new(byte_count), lkey: U32::new(s.lkey), addr: U64::new(s.addr) });
                    pos += 16;
                    ds += 1;
                }
                false
            }
        };
        self.put(
            buf,
            start,
            CtrlSeg {
                opmod_idx_opcode: U32::new((self.cur_post & 0xffff) << 8 | u32::from(opcode)),
                qpn_ds: U32::new(self.cfg.qpn << 8 | ds),
                signature: 0,
                dci_stream_channel_id: [0; 2],
                fm_ce_se: fm,
                imm: U32::new(imm),
            },
        );
        self.table.put(idx, SqEntry { wr_id: r.wr_id, wqe_head: self.head.wrapping_add(nreq), wr_data });
        self.cur_post = self.cur_post.wrapping_add((ds * 16).div_ceil(BB));
        (idx, ds, inline)
    }

    /// Basic block `i` (modulo the ring) as eight 64-bit words, for the
    /// BlueFlame copy (`mlx5_bf_copy` reads the ring the same way).
    #[inline]
    pub fn block(&self, buf: &WqBuf, i: u32) -> [u64; 8] {
        let at = self.cfg.sq_offset + ((i & (self.cfg.size.wqe_cnt - 1)) * BB) as usize;
        buf.get(at).unwrap_or_default()
    }

    /// Whether `buf` holds this queue's ring and send doorbell word
    /// (then [`WqBuf::sq_ring_at`] of it is `Some`; B8 in direct.rs).
    #[inline(always)]
    pub fn ring_fits(&self, buf: &WqBuf) -> bool {
        self.geom.fits(buf)
    }

    /// The QP went to RESET (`mlx5_init_qp_indices`): the queue starts
    /// over at WQE 0, as the device's does; nothing posted is kept.
    pub fn reset(&mut self) {
        (self.cur_post, self.head, self.tail, self.fm_cache) = (0, 0, 0, 0);
    }

    /// A requester completion for the WQE at `wqe_counter`: retires it and
    /// every unsignaled WQE before it (`sq.tail = wqe_head + 1`) and
    /// returns its entry.
    #[inline(always)]
    pub fn complete(&mut self, wqe_counter: u16) -> SqEntry {
        let e = self.entry(wqe_counter);
        self.retire(e.wqe_head);
        e
    }

    /// The entry of the WQE at `wqe_counter`, retiring nothing (a run of
    /// completions retires once, after its last: [`Self::retire`]).
    #[inline(always)]
    pub fn entry(&self, wqe_counter: u16) -> SqEntry {
        self.table[usize::from(wqe_counter) & (self.cfg.size.wqe_cnt as usize - 1)]
    }

    /// The entries of all `wqe_cnt` WQEs (a slice of exactly that many)
    /// and `wqe_cnt - 1`, for a loop that looks up many: `entries[c &
    /// mask]` needs no bounds check; `None` once a WQE with driver data
    /// was posted ([`SqEntry::wr_data`] not 0, see `SqTable` below):
    /// every entry of the slice has `wr_data == 0`.
    #[inline(always)]
    pub fn plain_entries(&self) -> Option<(&[SqEntry], usize)> {
        self.table.plain()
    }

    /// Retires every WQE up to the one whose entry has `wqe_head`
    /// (`sq.tail = wqe_head + 1`).
    #[inline(always)]
    pub fn retire(&mut self, wqe_head: u32) {
        self.tail = wqe_head.wrapping_add(1);
    }
}

/// The SQ's entry table with what a completion run needs to know of it.
mod entries {
    use super::{SqEntry, Table};
    use crate::error::Result;

    /// `wqe_cnt` [`SqEntry`]s (zeroed at creation), and whether any ever
    /// held driver data (`wr_data != 0`: a UMR's or a raw WQE's opcode).
    ///
    /// **Exact by construction**: the fields are private to this module,
    /// every write goes through [`Self::put`] (which tests `wr_data`) or
    /// [`Self::put_plain`] (which writes `wr_data: 0`), and the flag is
    /// never cleared: while [`Self::plain`] answers `Some`, no entry has
    /// had `wr_data != 0` since the table was made, so every entry has
    /// `wr_data == 0`. (A QP reset keeps the table and the flag: stale
    /// entries are as they were.)
    #[derive(Debug)]
    pub(super) struct SqTable {
        t: Table<SqEntry>,
        /// `wqe_cnt - 1` while no entry was written with driver data, then
        /// `usize::MAX` (no slice ends there: [`Self::plain`] is `None`
        /// with the same one test that checks the table's length).
        run_mask: usize,
    }

    impl SqTable {
        /// `wqe_cnt` zeroed entries (`wqe_cnt` a power of two).
        pub(super) fn new(verb: &'static str, wqe_cnt: u32) -> Result<Self> {
            let t = Table::new(verb, wqe_cnt as usize)?;
            Ok(Self { t, run_mask: (wqe_cnt as usize).wrapping_sub(1) })
        }

        /// Stores `e` at `idx` (below `wqe_cnt`: the callers mask it; no
        /// other is stored), marking the table for good if `e` has driver
        /// data.
        #[inline(always)]
        pub(super) fn put(&mut self, idx: u32, e: SqEntry) {
            if e.wr_data != 0 {
                self.run_mask = usize::MAX;
            }
            if let Some(slot) = self.t.get_mut(idx as usize) {
                *slot = e;
            }
        }

        /// Stores an entry without driver data at `cur & (wqe_cnt - 1)`
        /// (the straight post: `Table::at_mut`'s mask), `wqe_head` and
        /// `wr_data` (0) as one 64-bit word.
        #[inline(always)]
        pub(super) fn put_plain(&mut self, cur: u32, wr_id: u64, wqe_head: u32) {
            let head_data: u64 = zerocopy::transmute!([wqe_head, 0u32]);
            *self.t.at_mut(cur) = zerocopy::transmute!([wr_id, head_data]);
        }

        /// All `wqe_cnt` entries and `wqe_cnt - 1`, if no entry was ever
        /// written with driver data.
        #[inline(always)]
        pub(super) fn plain(&self) -> Option<(&[SqEntry], usize)> {
            let mask = self.run_mask;
            Some((self.t.get(..=mask)?, mask))
        }
    }

    impl core::ops::Deref for SqTable {
        type Target = [SqEntry];
        #[inline(always)]
        fn deref(&self) -> &[SqEntry] {
            &self.t
        }
    }
}

#[path = "sq_check.rs"]
mod check;
#[path = "sq_raw.rs"]
mod raw;
pub use raw::WC_DRIVER2;
#[path = "sq_straight.rs"]
mod straight;
pub use straight::StraightRing;
#[path = "umr.rs"]
pub mod umr;

#[cfg(test)]
#[path = "sq_tests.rs"]
mod tests;
