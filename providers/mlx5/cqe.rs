//! Completions: reading mlx5 CQEs with the owner bit and turning them
//! into [`Wc`]s as libmlx5 turns them into `ibv_wc` (rdma-core v44
//! `cq.c`: `get_sw_cqe`, `mlx5_parse_cqe`, `handle_good_req`,
//! `handle_responder`, `mlx5_handle_error_cqe`, `mlx5_arm_cq`).
//!
//! A CQE belongs to software when its opcode is not `INVALID` (15) and
//! its owner bit equals bit `log2(ncqe)` of the consumer index (the
//! device flips the bit it writes on each pass). With 128-byte CQEs the
//! 64 bytes that matter are the second half.
//!
//! Where libmlx5 leaves an `ibv_wc` field as the caller's array had it
//! (every field a completion kind does not set: `src_qp` of a send, the
//! opcode of an error...), the [`Wc`] here has 0. Differences on purpose,
//! each for a CQE this provider never asks the device for: a CQE with
//! inline-scattered data (`MLX5_QP_FLAG_SCATTER_CQE` is never set, so
//! the device has no data to put there) completes with
//! `IBV_WC_GENERAL_ERR` instead of libmlx5 copying bytes to an address
//! taken from a WQE; tag-matching (`NO_PACKET`), signature (`SIG_ERR`)
//! and undefined opcodes are refused as malformed instead of returned as
//! a half-filled completion; a `RESIZE_CQ` CQE is consumed silently.

use core::sync::atomic::{fence, Ordering};

use super::buf::{CqGeom, WqBuf};
use super::rq::{RecvQueue, Srq};
use super::sq::{SendQueue, WC_DRIVER2};
use super::wqe::*;
use crate::abi::uverbs::{self, Wc as AbiWc};
use crate::error::{Error, ErrorKind, Result};
use crate::wc::{Wc, WcFlags, WcOut};

/// `IBV_WC_RECV`.
const WC_RECV: u32 = 128;
/// `IBV_WC_RECV_RDMA_WITH_IMM`.
const WC_RECV_RDMA_WITH_IMM: u32 = 129;
/// `IBV_WC_GENERAL_ERR`.
const WC_GENERAL_ERR: u32 = 21;

/// `mlx5_handle_error_cqe`: syndrome to `enum ibv_wc_status`.
pub const fn wc_status(syndrome: u8) -> u32 {
    match syndrome {
        CQE_SYNDROME_LOCAL_LENGTH_ERR => 1,
        CQE_SYNDROME_LOCAL_QP_OP_ERR => 2,
        CQE_SYNDROME_LOCAL_PROT_ERR => 4,
        CQE_SYNDROME_WR_FLUSH_ERR => 5,
        CQE_SYNDROME_MW_BIND_ERR => 6,
        CQE_SYNDROME_BAD_RESP_ERR => 7,
        CQE_SYNDROME_LOCAL_ACCESS_ERR => 8,
        CQE_SYNDROME_REMOTE_INVAL_REQ_ERR => 9,
        CQE_SYNDROME_REMOTE_ACCESS_ERR => 10,
        CQE_SYNDROME_REMOTE_OP_ERR => 11,
        CQE_SYNDROME_TRANSPORT_RETRY_EXC_ERR => 12,
        CQE_SYNDROME_RNR_RETRY_EXC_ERR => 13,
        CQE_SYNDROME_REMOTE_ABORTED_ERR => 16,
        _ => WC_GENERAL_ERR,
    }
}

/// Which queue a CQE completes, as the CQE names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A send WQE: retire through [`SendQueue::complete`].
    Send {
        /// CQE version 1: the QP's user index; version 0: the QP number.
        rsn: u32,
        /// The WQE's index (`wqe_counter`).
        wqe_counter: u16,
    },
    /// A receive: the QP's receive queue, or its SRQ.
    Recv {
        /// CQE version 1: the user index of the QP (or XRC SRQ); version
        /// 0: the QP number.
        rsn: u32,
        /// CQE version 0: the SRQ number (0: none).
        srqn: u32,
        /// The SRQ WQE's index (SRQ only).
        wqe_counter: u16,
    },
}

/// A parsed CQE: the completion without its `wr_id`, and whose it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// Everything but `wr_id` (and, for a UMR send, the opcode).
    pub wc: Wc,
    /// The queue to retire a WQE of.
    pub source: Source,
}

/// Parses the 64 bytes of a software-owned CQE. `Err` for a CQE kind
/// this provider does not handle; `Ok(None)` for one that completes no
/// work request (`RESIZE_CQ`).
#[inline(always)]
pub fn parse(c: &Cqe64, cqe_version: u8) -> core::result::Result<Option<Parsed>, &'static str> {
    let opcode = c.op_own >> 4;
    let qpn = c.sop_drop_qpn.get() & 0xff_ffff;
    let uidx = c.srqn_uidx.get() & 0xff_ffff;
    let mut w = AbiWc { qp_num: qpn, ..Default::default() };
    let scattered = c.op_own & (INLINE_SCATTER_32 | INLINE_SCATTER_64) != 0;
    let source = match opcode {
        CQE_REQ => {
            let (op, len, imm) = match (c.sop_drop_qpn.get() >> 24) as u8 {
                OPCODE_RDMA_WRITE_IMM => (uverbs::WC_RDMA_WRITE, 0, true),
                OPCODE_RDMA_WRITE => (uverbs::WC_RDMA_WRITE, 0, false),
                OPCODE_SEND_IMM => (uverbs::WC_SEND, 0, true),
                OPCODE_SEND | OPCODE_SEND_INVAL => (uverbs::WC_SEND, 0, false),
                OPCODE_RDMA_READ => (uverbs::WC_RDMA_READ, c.byte_cnt.get(), false),
                OPCODE_ATOMIC_CS => (uverbs::WC_COMP_SWAP, 8, false),
                OPCODE_ATOMIC_FA => (uverbs::WC_FETCH_ADD, 8, false),
                OPCODE_TSO => (uverbs::WC_TSO, 0, false),
                // UMR/NOP: the opcode comes from the WQE's record.
                _ => (0, 0, false),
            };
            (w.opcode, w.byte_len) = (op, len);
            if imm {
                w.wc_flags = WcFlags::WITH_IMM.bits();
            }
            Source::Send { rsn: if cqe_version == 1 { uidx } else { qpn }, wqe_counter: c.wqe_counter.get() }
        }
        CQE_RESP_WR_IMM | CQE_RESP_SEND | CQE_RESP_SEND_IMM | CQE_RESP_SEND_INV => {
            let raw = c.imm_inval_pkey;
            w.byte_len = c.byte_cnt.get();
            let mut flags = WcFlags::empty();
            match opcode {
                CQE_RESP_WR_IMM => (w.opcode, w.ex, flags) = (WC_RECV_RDMA_WITH_IMM, raw.get().to_be(), WcFlags::WITH_IMM),
                CQE_RESP_SEND => w.opcode = WC_RECV,
                CQE_RESP_SEND_IMM => (w.opcode, w.ex, flags) = (WC_RECV, raw.get().to_be(), WcFlags::WITH_IMM),
                _ => (w.opcode, w.ex, flags) = (WC_RECV, raw.get(), WcFlags::WITH_INV),
            }
            let f = c.flags_rqpn.get();
            w.slid = c.slid.get();
            w.sl = (f >> 24 & 0xf) as u8;
            w.src_qp = f & 0xff_ffff;
            w.dlid_path_bits = c.ml_path & 0x7f;
            if f >> 28 & 3 != 0 {
                flags |= WcFlags::GRH;
            }
            w.wc_flags = flags.bits();
            w.pkey_index = raw.get() as u16;
            recv_source(cqe_version, qpn, uidx, c.wqe_counter.get())
        }
        CQE_REQ_ERR | CQE_RESP_ERR => {
            let e: &ErrCqe = zerocopy::transmute_ref!(c);
            w.status = wc_status(e.syndrome);
            w.vendor_err = u32::from(e.vendor_err_synd);
            if opcode == CQE_REQ_ERR {
                Source::Send { rsn: if cqe_version == 1 { uidx } else { qpn }, wqe_counter: c.wqe_counter.get() }
            } else {
                recv_source(cqe_version, qpn, uidx, c.wqe_counter.get())
            }
        }
        CQE_RESIZE_CQ => return Ok(None),
        CQE_NO_PACKET => return Err("mlx5: a tag-matching CQE (NO_PACKET), which this provider never enables"),
        CQE_SIG_ERR => return Err("mlx5: a signature-error CQE, which this provider never enables"),
        _ => return Err("mlx5: a CQE with an undefined opcode"),
    };
    if scattered && opcode <= CQE_RESP_SEND_INV {
        // See the module doc: no data was asked into CQEs.
        w.status = WC_GENERAL_ERR;
    }
    Ok(Some(Parsed { wc: Wc::from_abi(w), source }))
}

fn recv_source(cqe_version: u8, qpn: u32, srqn_uidx: u32, wqe_counter: u16) -> Source {
    if cqe_version == 1 {
        Source::Recv { rsn: srqn_uidx, srqn: 0, wqe_counter }
    } else {
        Source::Recv { rsn: qpn, srqn: srqn_uidx, wqe_counter }
    }
}

/// The queue a [`Source`] names, found by the caller.
#[derive(Debug)]
pub enum Target<'q> {
    /// A QP's send queue.
    Send(&'q mut SendQueue),
    /// A QP's own receive queue.
    Recv(&'q mut RecvQueue),
    /// An SRQ and its buffer.
    Srq(&'q mut Srq, &'q mut WqBuf),
}

/// Where a CQ is and its state (libmlx5's `cons_index`, `arm_sn`).
#[derive(Debug)]
pub struct CqRing {
    /// Entries (a power of two).
    ncqe: u32,
    /// 64 or 128.
    cqe_size: u32,
    /// `ncqe` and `cqe_size` checked once (B5 of `buf.rs`): set with
    /// `ncqe`, by `new` and by a resize (`move_to`, under the CQ's lock,
    /// with the buffer it swaps in).
    geom: CqGeom,
    /// Byte offset of the doorbell record pair (consumer index, arm).
    dbrec_offset: usize,
    /// The CQ number (arm doorbell).
    cqn: u32,
    /// 0 or 1 (`cqe_version` of the context).
    cqe_version: u8,
    ci: u32,
    arm_sn: u32,
    /// The buffer the CQ was created with, once a resize moved the
    /// entries out of it: it holds the doorbell record, whose address the
    /// kernel keeps (see [`CqRing::move_to`]).
    dbrec_buf: Option<WqBuf>,
    /// Completions a `poll_with` took and could not hand out (its
    /// closure panicked), handed out before the ring is read again.
    stash: Stash,
}

#[cfg(test)]
#[path = "cqe_tests.rs"]
mod tests;

#[path = "cq_ring.rs"]
mod ring;
pub use ring::{Queues, STASHED};

#[path = "cq_stash.rs"]
pub mod stash;
use stash::Stash;

#[path = "cq_clean.rs"]
mod clean;
#[path = "cq_resize.rs"]
mod resize;
