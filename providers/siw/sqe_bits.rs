//! siw's operation and flag encodings shared by the general send path
//! (`post.rs`) and the straight paths (`straight.rs`): which
//! `ibv_wr_opcode`s siw executes and their `SIW_OP_*`, and the
//! `SIW_WQE_*` flags of a request, each one table lookup. Kept below
//! both so that neither imports the other's internals back.

use super::abi::{
    SIW_OP_READ, SIW_OP_SEND, SIW_OP_SEND_REMOTE_INV, SIW_OP_WRITE, SIW_WQE_READ_FENCE, SIW_WQE_SIGNALLED,
    SIW_WQE_SOLICITED, SIW_WQE_VALID,
};
use crate::abi::uverbs::{WR_RDMA_READ, WR_RDMA_WRITE, WR_SEND, WR_SEND_WITH_INV};
use crate::wr::SendFlags;

/// siw's operations (one bit per `ibv_wr_opcode`): SEND, SEND with
/// invalidate, RDMA WRITE, RDMA READ (siw has no immediate data, no
/// atomics; local invalidate and binds are for kernel clients).
const STRAIGHT_OPS: u32 = 1 << WR_SEND | 1 << WR_SEND_WITH_INV | 1 << WR_RDMA_WRITE | 1 << WR_RDMA_READ;

/// The `SIW_OP_*` of each straight `ibv_wr_opcode`, four bits each
/// (opcodes below 16): one shift and mask instead of a match.
const SIW_OPS: u64 = (SIW_OP_SEND as u64) << (4 * WR_SEND)
    | (SIW_OP_SEND_REMOTE_INV as u64) << (4 * WR_SEND_WITH_INV)
    | (SIW_OP_WRITE as u64) << (4 * WR_RDMA_WRITE)
    | (SIW_OP_READ as u64) << (4 * WR_RDMA_READ);
const _: () = assert!(WR_SEND_WITH_INV < 16 && WR_SEND < 16 && WR_RDMA_WRITE < 16 && WR_RDMA_READ < 16);

/// The `SIW_WQE_*` flags (without `VALID`, `INLINE`) of each of the 8
/// combinations of `IBV_SEND_FENCE`, `_SIGNALED`, `_SOLICITED`, a byte
/// each: one shift instead of three tests.
const SQE_FLAGS: u64 = {
    let mut t = 0u64;
    let mut f = 0;
    while f < 8 {
        let mut b = 0u16;
        if f & SendFlags::FENCE.bits() != 0 {
            b |= SIW_WQE_READ_FENCE;
        }
        if f & SendFlags::SIGNALED.bits() != 0 {
            b |= SIW_WQE_SIGNALLED;
        }
        if f & SendFlags::SOLICITED.bits() != 0 {
            b |= SIW_WQE_SOLICITED;
        }
        t |= (b as u64) << (8 * f);
        f += 1;
    }
    t
};
const _: () = assert!(SendFlags::all().bits() == 7 && SIW_WQE_READ_FENCE < 256);

/// Whether the `ibv_wr_opcode` `opcode` is one of siw's four operations
/// (one bit test; an opcode of 32 or more is none), and if so its
/// `SIW_OP_*` (one shift of a table word).
#[inline(always)]
pub(crate) fn siw_op(opcode: u32) -> (bool, u8) {
    let ok = STRAIGHT_OPS.checked_shr(opcode).unwrap_or(0) & 1 != 0;
    (ok, (SIW_OPS >> (4 * (opcode & 15))) as u8 & 15)
}

/// The `SIW_WQE_*` flags of a request with the known `IBV_SEND_*` bits
/// `flags` (at most `SendFlags::all()`: the caller checked) on a QP with
/// `sq_sig_all` `sig_all`: `VALID`, and `SIGNALLED`, `SOLICITED`,
/// `READ_FENCE` as asked (without `INLINE`). One shift of a table word.
/// One table load: [`SQE_FLAGS_ALL`].
#[inline(always)]
pub(crate) fn sqe_flags(flags: u32, sig_all: bool) -> u16 {
    debug_assert!(flags <= SendFlags::all().bits());
    u16::from(SQE_FLAGS_ALL[(flags & 7) as usize | usize::from(sig_all) << 3])
}

/// The `SIW_WQE_*` flags a request is handed over with (without
/// `INLINE`), by its `IBV_SEND_*` bits (low three bits of the index) and
/// `sq_sig_all` (bit 3).
static SQE_FLAGS_ALL: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        let mut f = SIW_WQE_VALID | (SQE_FLAGS >> (8 * (i & 7))) as u8 as u16;
        if i & 8 != 0 {
            f |= SIW_WQE_SIGNALLED;
        }
        t[i] = f as u8;
        i += 1;
    }
    t
};
const _: () = assert!((SIW_WQE_VALID | SIW_WQE_SIGNALLED | SIW_WQE_SOLICITED | SIW_WQE_READ_FENCE) >> 8 == 0);
