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
use super::ring::CqRing;
use crate::abi::uverbs::Wc as AbiWc;
use crate::providers::claim::Claim;
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
    use core::sync::atomic::Ordering;
    cq.flags8(cq.next()).load(Ordering::Relaxed) & (super::abi::SIW_WQE_VALID as u8) == 0
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

/// [`poll`] past the empty check.
#[inline(never)]
fn poll_copy<S: crate::wc::WcOut>(cq: &CqRing, out: &mut [S]) -> Result<usize, Claim> {
    let c = cq.consumer()?;
    let mut n = 0;
    for slot in out.iter_mut() {
        let Some(cqe) = c.take() else { break };
        slot.set(to_wc(&cqe));
        n += 1;
    }
    Ok(n)
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
    let mut n = 0;
    while n < max {
        let Some(cqe) = c.take() else { break };
        n += 1;
        f(&to_wc(&cqe));
    }
    Ok(n)
}
