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
    SIW_OP_RECEIVE, SIW_OP_SEND, SIW_OP_SEND_REMOTE_INV, SIW_OP_SEND_WITH_IMM, SIW_OP_WRITE, SIW_WQE_REM_INVAL, SIW_WQE_VALID,
};
use super::cq::SiwCq;
use super::ring::{Consumer, CqRing};
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
    cq.next_flags8() & (SIW_WQE_VALID as u8) == 0
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
/// (the C library's `ibv_poll_cq`, past its empty check): claims the CQ
/// (waiting for another thread's copying poll) and copies the run, a
/// batch that cannot wrap by the one-stretch walk.
#[inline(always)]
pub fn copy_run<S: crate::wc::WcOut>(cq: &CqRing, out: &mut [S]) -> Result<usize, Claim> {
    let c = cq.consumer()?;
    Ok(match drain(&c, out, true) {
        Some(n) => n,
        None => drain(&c, out, false).unwrap_or(0),
    })
}

/// The copy of a claimed CQ: each common completion (flags exactly
/// `VALID`, a status siw defines) translated into its slot by
/// [`copy_common`] and its element handed back in the same step; from
/// the first other one on, [`to_wc`] out of line ([`drain_rare`]).
/// `straight`: see [`Consumer::drain`](super::ring::Consumer::drain).
#[inline(always)]
fn drain<S: crate::wc::WcOut, const E: usize>(c: &Consumer<'_, E>, out: &mut [S], straight: bool) -> Option<usize> {
    c.drain(out, straight, |cqe| cqe.status < SIW_NUM_WC_STATUS, copy_common, drain_rare)
}

/// The rest of a copy from a completion that is not common on: each
/// through [`to_wc`], out of line.
#[cold]
#[inline(never)]
fn drain_rare<S: crate::wc::WcOut, const E: usize>(c: &Consumer<'_, E>, out: &mut [S]) -> usize {
    let mut slots = out.iter_mut();
    c.take_each(slots.len(), to_wc, |wc| {
        if let Some(slot) = slots.next() {
            slot.set(wc);
        }
    })
}

/// `Cq::poll`'s copy on siw, holding the CQ's resize guard `cq` (see
/// `ProviderCq::poll_leave`): the uncontended poll of a batch that does
/// not wrap, `Cq::poll`'s one out-of-line function (its own: see rxe's
/// `poll_leave`), with the guard's release; the rest (a claim another
/// poller holds or a `poll_with` closure has, a batch that may wrap) a
/// tail call that takes the guard along.
#[inline(never)]
pub(crate) fn poll_leave<S: crate::wc::WcOut>(cq: Held<'_, SiwCq>, out: &mut [S]) -> crate::error::Result<usize> {
    let Ok(c) = cq.get().ring().try_consumer() else {
        return poll_leave_slow(cq, out);
    };
    let Some(n) = drain(&c, out, true) else {
        // Nothing read: the general way, claimed afresh.
        drop(c);
        return poll_leave_slow(cq, out);
    };
    Ok(n)
}

/// [`poll_leave`] of what its inline part does not take: waits for
/// another thread's copying poll (`Busy` at once while a `poll_with`
/// closure holds the CQ), then copies any batch. Drops the guard last.
#[cold]
#[inline(never)]
fn poll_leave_slow<S: crate::wc::WcOut>(cq: Held<'_, SiwCq>, out: &mut [S]) -> crate::error::Result<usize> {
    let c = cq.get().ring().consumer().map_err(crate::providers::dispatch::busy)?;
    Ok(drain(&c, out, false).unwrap_or(0))
}

/// The C library's `ibv_poll_cq` on siw (see
/// `ProviderCq::poll_leave_wait`): [`poll_leave`] answering the count in
/// a register, its one out-of-line function reached by a jump from
/// `ibv_poll_cq`'s own; the rest (a claim another poller holds, a batch
/// that may wrap) a tail call that takes the guard along. `extern "C"`
/// (see `ProviderCq::poll_leave_wait`): `Held` and the slice are two
/// words each, passed in registers as in Rust's own calls.
#[allow(improper_ctypes_definitions)]
#[inline(never)]
pub(crate) extern "C" fn poll_leave_wait(cq: Held<'_, SiwCq>, out: &mut [core::mem::MaybeUninit<Wc>]) -> i32 {
    let Ok(c) = cq.get().ring().try_consumer() else {
        return poll_leave_wait_slow(cq, out);
    };
    let Some(n) = drain(&c, out, true) else {
        // Nothing read: the general way, claimed afresh.
        drop(c);
        return poll_leave_wait_slow(cq, out);
    };
    n as i32
}

/// [`poll_leave_wait`] of what its inline part does not take: waits
/// while another poll holds the CQ (a `poll_with` closure too, as C's
/// callers wait on rdma-core's lock), then copies any batch. Drops the
/// guard last.
#[allow(improper_ctypes_definitions)]
#[cold]
#[inline(never)]
extern "C" fn poll_leave_wait_slow(cq: Held<'_, SiwCq>, out: &mut [core::mem::MaybeUninit<Wc>]) -> i32 {
    let c = loop {
        if let Ok(c) = cq.get().ring().consumer() {
            break c;
        }
        core::hint::spin_loop();
    };
    drain(&c, out, false).unwrap_or(0) as i32
}

/// The tables of [`copy_common`], in one static (one register holds
/// both): `status`, the `enum ibv_wc_status` of the low four bits of a
/// status ([`STATUS`], then `IBV_WC_GENERAL_ERR`: a batch with such a
/// status is copied again by [`to_wc`], which sets `vendor_err`);
/// `opcodes`, [`wc_opcode`] of every byte, already in the upper half of
/// the `ibv_wc` word it shares with the status (`pair(0, opcode)`): one
/// load, no bound check, no shift.
struct Tables {
    opcodes: [u64; 256],
    status: [u32; 16],
}

static TABLES: Tables = {
    let mut t = Tables { opcodes: [0; 256], status: [GENERAL_ERR; 16] };
    let mut i = 0;
    while i < STATUS.len() {
        t.status[i] = STATUS[i];
        i += 1;
    }
    let mut i = 0;
    while i < 256 {
        t.opcodes[i] = pair(0, wc_opcode(i as u8));
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

/// The copy of a common completion (flags exactly `VALID`, a status siw
/// defines): as [`to_wc`], in six 8-byte stores.
#[inline(always)]
fn copy_common<S: crate::wc::WcOut>(slot: &mut S, cqe: &SiwCqe) {
    let words: [u64; 6] = [
        cqe.id,
        pair(TABLES.status[usize::from(cqe.status & 15)], 0) | TABLES.opcodes[usize::from(cqe.opcode)],
        pair(0, cqe.bytes),
        pair(0, cqe.qp_id as u32),
        0,
        0,
    ];
    slot.set(Wc::from_abi(zerocopy::transmute!(words)));
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
