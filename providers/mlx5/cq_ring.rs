//! [`CqRing`]'s consumer side: ownership test, polling with retirement
//! of the WQEs each completion covers, the consumer-index doorbell
//! record and arming (`mlx5_arm_cq`).

use super::*;
use crate::providers::mlx5::buf::{Cqe64At, CqeRing};
use crate::providers::mlx5::sq::SqEntry;

const VERB: &str = "ibv_poll_cq";

/// Set in [`CqRing::published`] while completions wait in the stash (a
/// consumer index's bit 31 is never one `peek_empty` reads: it masks the
/// index by `ncqe - 1 < 2^24` and takes its bit `log2(ncqe) <= 24`).
pub const STASHED: u32 = 1 << 31;

/// [`FAST_REQ`]: the byte count is the CQE's (RDMA READ).
const FAST_LEN_FROM_CQE: u32 = 1 << 24;

/// A successful requester CQE's opcode byte (`sop_drop_qpn >> 24`) as
/// the poll's fast path completes it, as [`parse`] does: 0 for one it
/// leaves to [`parse`] (UMR, NOP, undefined), else `1 << 31 | byte_len
/// << 16 | wc_flags << 8 | IBV_WC_* opcode` (byte_len: 8 for atomics, or
/// [`FAST_LEN_FROM_CQE`]). One load instead of a branch per opcode.
static FAST_REQ: [u32; 256] = {
    const fn entry(op: u8) -> u32 {
        const IMM: u32 = WcFlags::WITH_IMM.bits() << 8;
        let e = match op {
            OPCODE_RDMA_WRITE => uverbs::WC_RDMA_WRITE,
            OPCODE_RDMA_WRITE_IMM => uverbs::WC_RDMA_WRITE | IMM,
            OPCODE_SEND | OPCODE_SEND_INVAL => uverbs::WC_SEND,
            OPCODE_SEND_IMM => uverbs::WC_SEND | IMM,
            OPCODE_RDMA_READ => uverbs::WC_RDMA_READ | FAST_LEN_FROM_CQE,
            OPCODE_ATOMIC_CS => uverbs::WC_COMP_SWAP | 8 << 16,
            OPCODE_ATOMIC_FA => uverbs::WC_FETCH_ADD | 8 << 16,
            OPCODE_TSO => uverbs::WC_TSO,
            _ => return 0,
        };
        1 << 31 | e
    }
    let mut t = [0; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = entry(i as u8);
        i += 1;
    }
    t
};

/// What [`CqRing::complete_one`] made of a CQE.
pub(super) enum Step {
    /// A completion.
    Done(Wc),
    /// Nothing to report (`RESIZE_CQ`): consumed.
    Skip,
    /// A CQE this provider cannot complete.
    Fail(&'static str),
}

/// The queues a CQ's completions may name, found by the caller (the
/// context's user-index or QP-number table, later).
pub trait Queues {
    /// The queue `source` names, or `None` if no such QP/SRQ exists.
    fn find(&mut self, source: Source) -> Option<Target<'_>>;
}

/// `v` in the high half of an `ibv_wc` word (fields `(lo, hi)` at
/// offsets `(8k, 8k + 4)` of word `k`).
#[inline(always)]
const fn hi(v: u32) -> u64 {
    if cfg!(target_endian = "little") { (v as u64) << 32 } else { v as u64 }
}

/// A successful requester completion as `ibv_wc`'s six words (six stores
/// instead of one per field; status, vendor_err, imm, src_qp and the rest
/// are 0, as [`parse`] leaves them).
#[inline(always)]
fn req_wc(wr_id: u64, opcode: u32, byte_len: u32, qp_num: u32, wc_flags: u32) -> Wc {
    req_wc_words(wr_id, hi(opcode), hi(byte_len), hi(qp_num), hi(wc_flags))
}

/// [`req_wc`] of its words: `hi(opcode)`, `hi(byte_len)`, `hi(qp_num)`
/// and `hi(wc_flags)`.
#[inline(always)]
fn req_wc_words(wr_id: u64, w1: u64, w2: u64, w3: u64, w4: u64) -> Wc {
    let words: [u64; 6] = [wr_id, w1, w2, w3, w4, 0];
    Wc::from_abi(zerocopy::transmute!(words))
}

/// The words a [`FAST_REQ`] entry `t` (not 0) gives every completion of
/// its opcode: `hi(opcode)`, `hi(byte_len)` (0 if it is the CQE's), and
/// `hi(wc_flags)`; and whether the byte count is the CQE's.
#[inline(always)]
fn req_words(t: u32) -> (u64, u64, u64, bool) {
    (hi(t & 0xff), hi(t >> 16 & 0xff), hi(t >> 8 & 0xff), t & FAST_LEN_FROM_CQE != 0)
}

/// Bits of a CQE's word 7 (bytes 56..64, byte 56 the low byte) that every
/// CQE of a [`req_run`] shares: `sop_drop_qpn` (the opcode byte, then the
/// QP number) and of `op_own` all but the solicited-event bit (opcode
/// `REQ`, no inline-scatter or compression format, the owner bit).
const RUN_KEY: u64 = 0xfd << 56 | 0xffff_ffff;

/// The poll's tight loop: the successful requester CQEs (as [`FAST_REQ`]
/// takes them) of the send queue `sq` of user index (CQE version 1) or
/// QP number `rsn`, software-owned, from `ci` on, each completed into
/// `out` in turn; stops before the first other CQE, at the ring's end
/// (the caller's loop goes on), or when `out` is full. Returns how many
/// (the consumer index moves past them).
/// One load and one comparison take a CQE's owner bit, kind, QP and
/// opcode (word 7 under [`RUN_KEY`], against the first CQE's); the words
/// the opcode gives are worked out when it changes, not per CQE. The
/// loop is [`req_cqes`] for the first CQE's kind of byte count (the
/// CQE's, or the opcode's): no test of it per CQE.
/// Out of line, so that its few live values keep their registers.
#[inline(never)]
fn req_run<S: WcOut, const V1: bool>(ring: &CqeRing<'_>, log: u32, ci0: u32, out: &mut [S], rsn: u32, sq: &mut SendQueue) -> usize {
    // The entry table, checked once: each lookup masks its index. A queue
    // that ever posted a WQE with driver data (a UMR's or a raw WQE's
    // opcode) has none: its CQEs go the general way, one by one.
    let Some((entries, mask)) = sq.plain_entries() else { return 0 };
    // (Word 7 as `word` loads it: `sop_drop_qpn`, big-endian, in the low
    // half, so its value is the low half byte-swapped.)
    let first = ring.word(ci0, 7);
    let sop = (first as u32).swap_bytes();
    let t = FAST_REQ[(sop >> 24) as usize];
    if t == 0 || !V1 && sop & 0xff_ffff != rsn {
        return 0;
    }
    let want = u64::from((ci0 >> log) & u32::from(CQE_OWNER_MASK)) << 56 | first & 0xffff_ffff;
    let run = Run { ring, ci0, rsn, entries, mask, want, t };
    let (n, last) = match t & FAST_LEN_FROM_CQE != 0 {
        true => req_cqes::<S, V1, true>(run, out),
        false => req_cqes::<S, V1, false>(run, out),
    };
    if let Some(last) = last {
        // The run's last CQE again (software's until the doorbell record
        // frees it), rather than its WQE head kept in a register the loop
        // needs: the tail moves past every WQE the run covered.
        let head = entries[usize::from(((last.word(7) >> 32) as u16).swap_bytes()) & mask].wqe_head;
        sq.retire(head);
    }
    n
}

/// What [`req_run`] hands [`req_cqes`]: the ring, the run's first index,
/// its queue's `rsn` and entry table (`entries[c & mask]`), word 7 of its
/// first CQE under [`RUN_KEY`] with the owner bit software owns (`want`),
/// and that CQE's [`FAST_REQ`] entry (`t`, not 0).
struct Run<'r, 'b> {
    ring: &'r CqeRing<'b>,
    ci0: u32,
    rsn: u32,
    entries: &'r [SqEntry],
    mask: usize,
    want: u64,
    t: u32,
}

/// [`req_run`]'s loop for runs whose byte count is the CQE's (`LEN`: RDMA
/// READ) or the opcode's (every other opcode [`FAST_REQ`] takes): a CQE
/// of the other kind ends the run (the caller's loop starts the next).
/// Returns how many CQEs it completed into `out`, and the last of them.
#[inline(always)]
fn req_cqes<'r, S: WcOut, const V1: bool, const LEN: bool>(run: Run<'r, '_>, out: &mut [S]) -> (usize, Option<Cqe64At<'r>>) {
    let Run { ring, ci0, rsn, entries, mask, mut want, t } = run;
    let qp_word = hi((want as u32).swap_bytes() & 0xff_ffff);
    let (mut w1, mut w2, mut w4, _) = req_words(t);
    // The user index as word 4's low half holds it (`srqn_uidx`,
    // big-endian: its low 24 bits).
    let uidx_mask = 0xff_ffff_u32.swap_bytes();
    let uidx = rsn.swap_bytes();
    ring.run64(ci0, out, |c, slot| {
        let w7 = c.word(7);
        if w7 & RUN_KEY != want {
            // Owned, of this QP, but another opcode: the run goes on with
            // its words, if the fast path takes it with this kind of byte
            // count.
            if (w7 ^ want) & RUN_KEY & !0xff != 0 {
                return false;
            }
            let t = FAST_REQ[(w7 & 0xff) as usize];
            if t == 0 || (t & FAST_LEN_FROM_CQE != 0) != LEN {
                return false;
            }
            (w1, w2, w4, _) = req_words(t);
            want = want & !0xff | w7 & 0xff;
        }
        // Owned: the rest is read after the owner byte (acquire).
        fence(Ordering::Acquire);
        if V1 && c.word(4) as u32 & uidx_mask != uidx {
            return false;
        }
        // (The tail moves once, after the run.)
        // (No entry has driver data: `plain_entries`.)
        let e = entries[usize::from(((w7 >> 32) as u16).swap_bytes()) & mask];
        let w2 = if LEN { hi(((c.word(5) >> 32) as u32).swap_bytes()) } else { w2 };
        slot.set(req_wc_words(e.wr_id, w1, w2, qp_word, w4));
        true
    })
}

impl CqRing {
    /// A CQ of `ncqe` entries of `cqe_size` bytes at offset 0 of its
    /// buffer, doorbell record at `dbrec_offset`.
    pub fn new(verb: &'static str, ncqe: u32, cqe_size: u32, dbrec_offset: usize, cqn: u32, cqe_version: u8) -> Result<Self> {
        if !ncqe.is_power_of_two() || ncqe > 1 << 24 || !matches!(cqe_size, 64 | 128) || cqe_version > 1 || !dbrec_offset.is_multiple_of(4) {
            return Err(Error::new(verb, ErrorKind::InvalidArgument).with_detail("mlx5: CQ geometry or CQE version the provider does not take"));
        }
        Ok(Self { ncqe, cqe_size, geom: CqGeom::new(ncqe, cqe_size), dbrec_offset, cqn, cqe_version, ci: 0, arm_sn: 0, dbrec_buf: None, stash: Stash::default() })
    }

    /// Whether `buf` holds the ring and the doorbell record pair.
    #[inline(always)]
    fn fits(&self, buf: &WqBuf) -> bool {
        let ring = self.ncqe as usize * self.cqe_size as usize;
        let db = self.dbrec_buf(buf).len();
        ring <= buf.len() && self.dbrec_offset.checked_add(8).is_some_and(|e| e <= db)
    }

    /// Offset of the 64 bytes that matter of entry `i`.
    #[inline(always)]
    fn cqe64_at(&self, i: u32) -> usize {
        (i & (self.ncqe - 1)) as usize * self.cqe_size as usize + self.cqe_size as usize - 64
    }

    /// Marks every entry invalid (`op_own = 0xf0`), as
    /// `mlx5_alloc_cq_buf` does before the CQ is created.
    pub fn init(&self, buf: &mut WqBuf) -> Result<()> {
        if !self.fits(buf) {
            return Err(Error::new("ibv_create_cq", ErrorKind::InvalidArgument).with_detail("mlx5: the buffer does not hold this CQ"));
        }
        for i in 0..self.ncqe {
            buf.put(self.cqe64_at(i) + 63, CQE_INVALID << 4);
        }
        Ok(())
    }

    /// `(ncqe, cqe_size)`.
    pub fn geometry(&self) -> (u32, u32) {
        (self.ncqe, self.cqe_size)
    }

    /// The consumer index (`cons_index`).
    pub fn ci(&self) -> u32 {
        self.ci
    }

    /// What a poll publishes for the test for a waiting completion that
    /// takes no lock (`Mlx5Cq::peek_empty`): the consumer index, with
    /// [`STASHED`] set while completions wait in the stash.
    #[inline(always)]
    pub fn published(&self) -> u32 {
        self.ci | if self.stash.is_empty() { 0 } else { STASHED }
    }

    /// Whether no completion waits: none in the stash, and software does
    /// not own the CQE at the consumer index.
    #[inline(always)]
    pub fn is_empty(&self, buf: &WqBuf) -> bool {
        self.stash.is_empty() && !self.has_cqe(buf)
    }

    /// Puts completions a `poll_with` took and could not hand out back,
    /// before any still waiting there ([`Stash::put_back`]).
    pub fn put_back(&mut self, wcs: &[Wc]) -> bool {
        self.stash.put_back(wcs)
    }

    /// The offset of the CQE at the consumer index if software owns it
    /// (`get_sw_cqe`'s test of the owner byte).
    #[inline(always)]
    fn sw_cqe(&self, buf: &WqBuf) -> Option<usize> {
        let at = self.cqe64_at(self.ci);
        let op_own: u8 = buf.get(at + 63)?;
        if op_own >> 4 == CQE_INVALID || (op_own & CQE_OWNER_MASK != 0) != (self.ci & self.ncqe != 0) {
            return None;
        }
        Some(at)
    }

    /// Whether software owns the CQE at the consumer index (the owner byte
    /// only; nothing else of the CQE is read).
    #[inline(always)]
    pub fn has_cqe(&self, buf: &WqBuf) -> bool {
        self.sw_cqe(buf).is_some()
    }

    /// The CQE at the consumer index if software owns it (`get_sw_cqe`),
    /// read after the owner byte (acquire: no byte of it is read before
    /// the owner bit said it is complete).
    #[inline(always)]
    pub fn peek(&self, buf: &WqBuf) -> Option<Cqe64> {
        let at = self.sw_cqe(buf)?;
        fence(Ordering::Acquire);
        buf.get(at)
    }

    /// Stores the consumer index into the doorbell record (after every
    /// read of the CQEs it frees: release).
    #[inline(always)]
    pub fn update_ci(&self, buf: &WqBuf) {
        if let Some(db) = self.dbrec_buf(buf).atomic_u32(self.dbrec_offset) {
            db.store((self.ci & 0xff_ffff).to_be(), Ordering::Release);
        }
    }

    /// `ibv_poll_cq`: up to `out.len()` completions, each with its
    /// `wr_id` from the queue `queues` finds for it (retiring the WQEs it
    /// covers). A CQE that cannot be completed (see [`parse`], or naming
    /// no queue) is an error when it is the first of the call, else the
    /// call stops before it and the next reports it; either way it is
    /// consumed once reported.
    /// Each completion is stored straight into `out` (`Wc` or
    /// `MaybeUninit<Wc>`: a store, no caller code, runs under the caller's
    /// lock). The consumer index is kept in a register and stored, with
    /// its doorbell record, once per call.
    ///
    /// A successful requester CQE of an ordinary opcode (what a poll
    /// mostly sees) is read word by word and written straight into `out`
    /// here; every other kind goes through [`parse`] ([`Self::complete_one`]).
    #[inline(always)]
    pub fn poll<S: WcOut>(&mut self, buf: &WqBuf, out: &mut [S], queues: &mut impl Queues) -> Result<usize> {
        let r = self.poll_deferred(buf, out, queues);
        self.update_ci(buf);
        r
    }

    /// [`Self::poll`] without the store of the doorbell record, which the
    /// caller makes after ([`Self::update_ci`]): until then the device
    /// keeps off the consumed entries, so they stay as they were.
    #[inline(always)]
    pub fn poll_deferred<S: WcOut>(&mut self, buf: &WqBuf, out: &mut [S], queues: &mut impl Queues) -> Result<usize> {
        // The geometry was checked when it was set; only the buffer's
        // length here. (The doorbell record is checked where it is stored.)
        let Some(ring) = buf.cqe_ring_of(&self.geom) else {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument).with_detail("mlx5: the buffer does not hold this CQ"));
        };
        let log = self.geom.log();
        let v1 = self.cqe_version == 1;
        let mut ci = self.ci;
        // What a panicking `poll_with` put back is older than the ring's.
        let mut n = if self.stash.is_empty() { 0 } else { self.stash.drain(out) };
        let mut failed = None;
        while n < out.len() {
            let w7 = ring.word(ci, 7);
            let op_own = (w7 >> 56) as u32;
            // The owner bit software owns at this index: its wrap bit.
            let own = (ci >> log) & u32::from(CQE_OWNER_MASK);
            // One test for what a poll mostly sees: a requester CQE
            // (opcode 0, no inline-scatter bits) that software owns.
            if (op_own ^ own) & 0xfd == 0 {
                // The owner byte said the CQE is complete: the rest of it
                // is read after (acquire).
                fence(Ordering::Acquire);
                let sop = u32::from_be(w7 as u32);
                if FAST_REQ[(sop >> 24) as usize] != 0 {
                    let rsn = if v1 { u32::from_be(ring.word(ci, 4) as u32) & 0xff_ffff } else { sop & 0xff_ffff };
                    let wqe_counter = u16::from_be((w7 >> 32) as u16);
                    if let Some(Target::Send(sq)) = queues.find(Source::Send { rsn, wqe_counter }) {
                        if out.len() - n == 1 {
                            // The last (or only: `poll_with`) slot: inline.
                            let t = FAST_REQ[(sop >> 24) as usize];
                            let e = sq.complete(wqe_counter);
                            let byte_len = if t & FAST_LEN_FROM_CQE != 0 { u32::from_be((ring.word(ci, 5) >> 32) as u32) } else { t >> 16 & 0xff };
                            // A raw WQE reports IBV_WC_DRIVER2, as in libmlx5.
                            let opcode = if e.wr_data == WC_DRIVER2 { WC_DRIVER2 } else { t & 0xff };
                            out[n].set(req_wc(e.wr_id, opcode, byte_len, sop & 0xff_ffff, t >> 8 & 0xff));
                            n += 1;
                            ci = ci.wrapping_add(1);
                            continue;
                        }
                        // This CQE and the run of the same queue's after it.
                        let n2 = match v1 {
                            true => req_run::<S, true>(&ring, log, ci, &mut out[n..], rsn, sq),
                            false => req_run::<S, false>(&ring, log, ci, &mut out[n..], rsn, sq),
                        };
                        if n2 > 0 {
                            (ci, n) = (ci.wrapping_add(n2 as u32), n + n2);
                            continue;
                        }
                    }
                }
            } else if op_own >= u32::from(CQE_INVALID) << 4 || (op_own ^ own) & u32::from(CQE_OWNER_MASK) != 0 {
                // INVALID, or the device's still.
                break;
            }
            fence(Ordering::Acquire);
            match self.complete_one(buf, ci, queues) {
                Step::Done(wc) => {
                    out[n].set(wc);
                    n += 1;
                }
                Step::Skip => {}
                Step::Fail(why) => {
                    failed = Some(why);
                    break;
                }
            }
            ci = ci.wrapping_add(1);
        }
        let result = match failed {
            Some(why) if n == 0 => {
                ci = ci.wrapping_add(1);
                Err(Error::new(VERB, ErrorKind::Malformed).with_detail(why))
            }
            _ => Ok(n),
        };
        self.ci = ci;
        result
    }

    /// The completion of the software-owned CQE at index `ci`, of any
    /// kind ([`parse`]), retiring what it covers in the queue `queues`
    /// finds.
    #[inline(never)]
    pub(super) fn complete_one(&self, buf: &WqBuf, ci: u32, queues: &mut impl Queues) -> Step {
        let Some(c) = buf.get::<Cqe64>(self.cqe64_at(ci)) else { return Step::Fail("mlx5: the buffer does not hold this CQ") };
        let p = match parse(&c, self.cqe_version) {
            Ok(Some(p)) => p,
            Ok(None) => return Step::Skip,
            Err(why) => return Step::Fail(why),
        };
        let from_record = c.op_own >> 4 == CQE_REQ && !matches!((c.sop_drop_qpn.get() >> 24) as u8, OPCODE_RDMA_WRITE_IMM
            | OPCODE_RDMA_WRITE | OPCODE_SEND_IMM | OPCODE_SEND | OPCODE_SEND_INVAL | OPCODE_RDMA_READ | OPCODE_ATOMIC_CS | OPCODE_ATOMIC_FA | OPCODE_TSO);
        let mut wc = p.wc;
        let a = wc.as_abi_mut();
        match (p.source, queues.find(p.source)) {
            (Source::Send { wqe_counter, .. }, Some(Target::Send(sq))) => {
                let e = sq.complete(wqe_counter);
                a.wr_id = e.wr_id;
                if from_record || e.wr_data == WC_DRIVER2 {
                    a.opcode = e.wr_data;
                }
            }
            (Source::Recv { .. }, Some(Target::Recv(rq))) => a.wr_id = rq.complete(),
            (Source::Recv { wqe_counter, .. }, Some(Target::Srq(srq, sbuf))) => match srq.complete(sbuf, wqe_counter) {
                Some(id) => a.wr_id = id,
                None => return Step::Fail("mlx5: a CQE names an SRQ WQE outside the SRQ"),
            },
            _ => return Step::Fail("mlx5: a CQE names no QP or SRQ of this context"),
        }
        Step::Done(wc)
    }

    /// `ibv_req_notify_cq`: stores the arm word into the doorbell record
    /// and returns the 8 bytes to store, as they are, at UAR `+ 0x20`
    /// (`MLX5_CQ_DOORBELL`) after a write-combining flush.
    pub fn arm(&self, buf: &WqBuf, solicited_only: bool) -> [u8; 8] {
        let cmd = if solicited_only { CQ_DB_REQ_NOT_SOL } else { CQ_DB_REQ_NOT };
        let v = (self.arm_sn & 3) << 28 | cmd | (self.ci & 0xff_ffff);
        if let Some(db) = self.dbrec_buf(buf).atomic_u32(self.dbrec_offset + 4) {
            db.store(v.to_be(), Ordering::Release);
        }
        (u64::from(v) << 32 | u64::from(self.cqn)).to_be_bytes()
    }

    /// A completion event was read for this CQ (`mlx5_cq_event`).
    pub fn event(&mut self) {
        self.arm_sn = self.arm_sn.wrapping_add(1);
    }
}
