//! The siw data path, completion side: `struct siw_cqe` read from the
//! mapped CQ array and translated into `struct ibv_wc` (as rdma-core's
//! `copy_cqe`), and the CQ arming word.
//!
//! What siw reports: the WR id, its own opcode (`SIW_OP_*` of the send
//! request, `SIW_OP_RECEIVE` for a receive) and status (`SIW_WC_*`, a
//! numbering of its own), the byte count and the QP number. No immediate
//! data (siw has none); for user CQs the kernel does not report an
//! invalidated rkey either (the `SIW_WQE_REM_INVAL` flag is set only for
//! kernel consumers), but if it ever does, the completion carries
//! `IBV_WC_WITH_INV` and the rkey.

use super::abi::{
    SiwCqe, SIW_NUM_WC_STATUS, SIW_OP_COMP_AND_SWAP, SIW_OP_FETCH_AND_ADD, SIW_OP_READ, SIW_OP_READ_LOCAL_INV,
    SIW_OP_RECEIVE, SIW_OP_SEND, SIW_OP_SEND_REMOTE_INV, SIW_OP_SEND_WITH_IMM, SIW_OP_WRITE, SIW_WQE_REM_INVAL,
};
use super::cq::SiwCq;
use super::ring::CqRing;
use crate::abi::uverbs::Wc as AbiWc;
use crate::providers::claim::Claim;
use crate::swap_cell::Held;
use crate::wc::{WcFlags, Wc};

/// `enum ibv_wc_status` of each `SIW_WC_*` (rdma-core's `map_cqe_status`).
const STATUS: [u32; SIW_NUM_WC_STATUS as usize] = [
    0,  // SUCCESS
    1,  // LOC_LEN_ERR
    4,  // LOC_PROT_ERR
    2,  // LOC_QP_OP_ERR
    5,  // WR_FLUSH_ERR
    7,  // BAD_RESP_ERR
    8,  // LOC_ACCESS_ERR
    10, // REM_ACCESS_ERR
    9,  // REM_INV_REQ_ERR
    21, // GENERAL_ERR
];

/// `IBV_WC_GENERAL_ERR`: what a status siw does not define becomes (its
/// raw value is kept in `vendor_err`).
const GENERAL_ERR: u32 = 21;

/// Added to a `SIW_OP_*` value this library does not map, so that it
/// reads as [`WcOpcode::Other`](crate::wc::WcOpcode::Other) and not as
/// another operation.
pub const UNKNOWN_OPCODE_BASE: u32 = 0x1000;

/// `enum ibv_wc_opcode` of a `SIW_OP_*` (rdma-core's `map_cqe_opcode`).
#[inline(always)]
const fn wc_opcode(op: u8) -> u32 {
    match op {
        SIW_OP_WRITE => 1,
        SIW_OP_READ | SIW_OP_READ_LOCAL_INV => 2,
        SIW_OP_SEND | SIW_OP_SEND_WITH_IMM | SIW_OP_SEND_REMOTE_INV => 0,
        SIW_OP_COMP_AND_SWAP => 3,
        SIW_OP_FETCH_AND_ADD => 4,
        SIW_OP_RECEIVE => 128,
        other => UNKNOWN_OPCODE_BASE + other as u32,
    }
}

/// The `ibv_wc` of a CQE.
#[inline(always)]
pub fn to_wc(cqe: &SiwCqe) -> Wc {
    let (status, vendor_err) = match STATUS.get(cqe.status as usize) {
        Some(&s) => (s, 0),
        None => (GENERAL_ERR, u32::from(cqe.status)),
    };
    let (wc_flags, ex) = if u16::from(cqe.flags) & SIW_WQE_REM_INVAL != 0 {
        (WcFlags::WITH_INV.bits(), cqe.inval_stag())
    } else {
        (0, 0)
    };
    Wc::from_abi(AbiWc {
        wr_id: cqe.id,
        status,
        opcode: wc_opcode(cqe.opcode),
        vendor_err,
        byte_len: cqe.bytes,
        ex,
        qp_num: cqe.qp_id as u32,
        src_qp: 0,
        wc_flags,
        pkey_index: 0,
        slid: 0,
        sl: 0,
        dlid_path_bits: 0,
        port_num: 0,
        reserved: 0,
    })
}

/// Whether the CQ has nothing at its position: the test every poll starts
/// with, made without the claim (a stale answer is as good as one taken a
/// moment earlier). Reads only the flags byte, an atomic.
#[inline(always)]
pub fn is_empty(cq: &CqRing) -> bool {
    cq.next_flags8() & (super::abi::SIW_WQE_VALID as u8) == 0
}

/// `ibv_poll_cq` on siw: moves up to `out.len()` completions into `out`,
/// handing each element back to the kernel as it is read. Returns how
/// many; waits for another thread's copying poll, or is `Err` with
/// [`Claim::Lent`] at once while a `poll_with` closure holds the CQ. The empty case is inlined into the caller; the
/// copying is not (it would give every caller of `Cq::poll`, rxe's
/// included, its registers and stack frame).
#[inline(always)]
pub fn poll<S: crate::wc::WcOut>(cq: &CqRing, out: &mut [S]) -> Result<usize, Claim> {
    if out.is_empty() || is_empty(cq) {
        return Ok(0);
    }
    poll_copy(cq, out)
}

/// [`poll`] of a CQ just found not empty (the C library's `ibv_poll_cq`,
/// which looked already): no second look, straight to the copy (a CQ
/// that another poller emptied meanwhile, or an empty `out`, gives 0),
/// inlined: its caller there is itself out of line (one stack frame and
/// no call per poll, as [`copy_run`] in `Cq::poll`'s).
#[inline(always)]
pub fn poll_nonempty(cq: &CqRing, out: &mut [core::mem::MaybeUninit<Wc>]) -> Result<usize, Claim> {
    copy_run(cq, out)
}

/// [`poll`] past the empty check.
#[inline(never)]
fn poll_copy<S: crate::wc::WcOut>(cq: &CqRing, out: &mut [S]) -> Result<usize, Claim> {
    copy_run(cq, out)
}

/// [`poll_copy`] inlined, for a caller that is itself out of line
/// (`Cq::poll`'s, past its empty check): a batch that cannot wrap takes
/// [`Consumer::run_straight`](super::ring::Consumer::run_straight), any
/// other the general [`Consumer::run`](super::ring::Consumer::run).
#[inline(always)]
pub fn copy_run<S: crate::wc::WcOut>(cq: &CqRing, out: &mut [S]) -> Result<usize, Claim> {
    let c = cq.consumer()?;
    let (run, seen) = match c.run_straight(out, copy_common) {
        Some(r) => r,
        None => c.run(out, copy_common),
    };
    Ok(finish(run, seen, out))
}

/// The end of a copying poll: the run copied again if one of its
/// completions was not common, then handed back. Returns how many.
#[inline(always)]
fn finish<S: crate::wc::WcOut, const E: usize>(run: super::ring::Run<'_, '_, E>, seen: u32, out: &mut [S]) -> usize {
    let n = run.len();
    if seen & RARE != 0 || seen >> 16 >= u32::from(SIW_NUM_WC_STATUS) {
        copy_again(&run, out);
    }
    run.hand_back();
    n
}

/// `Cq::poll`'s copy on siw, holding the CQ's resize guard `cq` (see
/// `ProviderCq::poll_leave`): the uncontended poll of a batch that does
/// not wrap, inline into `Cq::poll`'s one out-of-line function with the
/// guard's release and the `Result`; the rest (a claim another poller
/// holds or a `poll_with` closure has, a batch that may wrap) a tail call
/// that takes the guard along.
#[inline(always)]
pub(crate) fn poll_leave<S: crate::wc::WcOut>(cq: Held<'_, SiwCq>, out: &mut [S]) -> crate::error::Result<usize> {
    let Ok(c) = cq.get().ring().try_consumer() else {
        return poll_leave_slow(cq, out);
    };
    let Some((run, seen)) = c.run_straight(out, copy_common) else {
        // Nothing read: the general way, claimed afresh.
        drop(c);
        return poll_leave_slow(cq, out);
    };
    Ok(finish(run, seen, out))
}

/// [`poll_leave`] of what its inline part does not take: waits for
/// another thread's copying poll (`Busy` at once while a `poll_with`
/// closure holds the CQ), then copies any batch. Drops the guard last.
#[cold]
#[inline(never)]
fn poll_leave_slow<S: crate::wc::WcOut>(cq: Held<'_, SiwCq>, out: &mut [S]) -> crate::error::Result<usize> {
    copy_run(cq.get().ring(), out).map_err(crate::providers::dispatch::busy)
}

/// The bits of a CQE's word at byte 8 (flags, opcode, status) that
/// [`copy_common`] does not translate: the rkey-invalidated flag. (A
/// status siw does not define is told by the status half.)
const RARE: u32 = SIW_WQE_REM_INVAL as u32;

/// `enum ibv_wc_status` of the low four bits of a status: [`STATUS`],
/// then `IBV_WC_GENERAL_ERR` (a batch with such a status is copied again
/// by [`to_wc`], which sets `vendor_err`).
const STATUS16: [u32; 16] = {
    let mut t = [GENERAL_ERR; 16];
    let mut i = 0;
    while i < STATUS.len() {
        t[i] = STATUS[i];
        i += 1;
    }
    t
};

/// [`wc_opcode`] of every byte, already in the upper half of the
/// `ibv_wc` word it shares with the status (`pair(0, opcode)`): one load,
/// no bound check, no shift.
static OPCODES: [u64; 256] = {
    let mut t = [0; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = pair(0, wc_opcode(i as u8));
        i += 1;
    }
    t
};

/// Two adjacent `u32` fields of `struct ibv_wc` as one `u64` store
/// (`lo` at the lower address).
#[inline(always)]
const fn pair(lo: u32, hi: u32) -> u64 {
    if cfg!(target_endian = "little") {
        lo as u64 | (hi as u64) << 32
    } else {
        (lo as u64) << 32 | hi as u64
    }
}

/// The copy of the common completion: as [`to_wc`] for one that has no
/// invalidated rkey and a status siw defines, in six 8-byte stores.
/// Returns the CQE's word at byte 8 (flags, opcode, status), which the
/// caller ORs over the batch to find whether one was not common.
#[inline(always)]
fn copy_common<S: crate::wc::WcOut>(slot: &mut S, cqe: &SiwCqe) -> u32 {
    let words: [u64; 6] = [
        cqe.id,
        pair(STATUS16[usize::from(cqe.status & 15)], 0) | OPCODES[usize::from(cqe.opcode)],
        pair(0, cqe.bytes),
        pair(0, cqe.qp_id as u32),
        0,
        0,
    ];
    slot.set(Wc::from_abi(zerocopy::transmute!(words)));
    u32::from(cqe.flags) | u32::from(cqe.opcode) << 8 | u32::from(cqe.status) << 16
}

/// Copies the run again, each completion through [`to_wc`]: a batch in
/// which one has an invalidated rkey or a status siw does not define.
#[cold]
#[inline(never)]
fn copy_again<S: crate::wc::WcOut, const E: usize>(run: &super::ring::Run<'_, '_, E>, out: &mut [S]) {
    for (k, slot) in out.iter_mut().enumerate().take(run.len()) {
        if let Some(cqe) = run.get(k) {
            slot.set(to_wc(&cqe));
        }
    }
}

/// Hands up to `max` completions to `f`, oldest first; each element is
/// handed back to the kernel before `f` sees its completion, so a panic
/// in `f` consumes exactly the completions handed out (and the claim is
/// released while unwinding). Returns how many, or `Err` with the state
/// of the claim if another consumer holds the CQ (a poll from inside `f`
/// gets [`Claim::Lent`]).
#[inline(always)]
pub fn poll_with(cq: &CqRing, max: usize, mut f: impl FnMut(&Wc)) -> Result<usize, Claim> {
    if max == 0 || is_empty(cq) {
        return Ok(0);
    }
    let c = cq.try_consumer()?;
    c.lend();
    Ok(c.take_each(max, to_wc, |wc| f(&wc)))
}
