//! Queue geometry exactly as libmlx5 computes it, so that the kernel gets
//! the same `sq_wqe_count`/`rq_wqe_count`/`rq_wqe_shift` and the caller
//! the same granted capacities as with rdma-core.
//!
//! Sources (rdma-core v44 `providers/mlx5`):
//! * send queue: `verbs.c` `_sq_overhead`, `sq_overhead` (the default
//!   operation set of each QP type), `mlx5_calc_send_wqe`,
//!   `mlx5_calc_sq_size`;
//! * receive queue: `mlx5_calc_rcv_wqe`, `mlx5_calc_rq_size`, and
//!   `create_qp`, which afterwards sets `rq.max_post = rq.wqe_cnt` and
//!   reports `max_send_wr = sq.max_post`, `max_recv_wr = rq.max_post`,
//!   `max_recv_sge = rq.max_gs`, `max_inline_data` as computed;
//! * the QP buffer: `mlx5_calc_wq_size` (receive queue at offset 0, send
//!   queue after it);
//! * SRQ: `mlx5_create_srq` and `srq.c` `mlx5_alloc_srq_buf` (twice the
//!   WQEs plus one for the page-fault wait queue when the device allows
//!   it, the free list ending at `tail`).
//!
//! WQE signatures (`MLX5_QP_SIGNATURE`, `MLX5_SRQ_SIGNATURE`, off by
//! default) are not supported, so their 16 bytes never count.

use super::wqe::{Av, CtrlSeg, DataSeg, AtomicSeg, RaddrSeg, INLINE_HDR, MKEY_CONTEXT_SEG, SEND_WQE_BB, UMR_CTRL_SEG, UMR_KLM_AREA, XRC_SEG};
use crate::qp::QpType;
use core::mem::size_of;

const CTRL: u32 = size_of::<CtrlSeg>() as u32;
const DSEG: u32 = size_of::<DataSeg>() as u32;
const BB: u32 = SEND_WQE_BB;

/// The device limits of `struct mlx5_ib_alloc_ucontext_resp` that bound
/// queue sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// `max_sq_desc_sz`: largest send WQE in bytes.
    pub max_sq_desc_sz: u32,
    /// `max_rq_desc_sz`: largest receive WQE in bytes.
    pub max_rq_desc_sz: u32,
    /// `max_send_wqebb`: largest send queue in basic blocks.
    pub max_send_wqebb: u32,
    /// `max_recv_wr`.
    pub max_recv_wr: u32,
    /// `max_srq_recv_wr`.
    pub max_srq_recv_wr: u32,
}

/// Why a size was refused (libmlx5 answers `EINVAL` to all of them).
pub type SizeError = &'static str;

/// The send queue libmlx5 builds for a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SqSize {
    /// Bytes reserved per WQE (a multiple of 64).
    pub wqe_size: u32,
    /// Basic blocks in the ring (`sq_wqe_count`, a power of two).
    pub wqe_cnt: u32,
    /// Work requests that may be outstanding (reported `max_send_wr`).
    pub max_post: u32,
    /// SGEs per request (reported `max_send_sge`: the request).
    pub max_gs: u32,
    /// Inline bytes per request (reported `max_inline_data`).
    pub max_inline: u32,
}

impl SqSize {
    /// Bytes of the ring.
    pub const fn bytes(&self) -> u32 {
        self.wqe_cnt * BB
    }
}

/// The bytes a WQE of `qp_type` may need beyond its data segments, for
/// the operations libmlx5 enables by default (`_sq_overhead`).
pub const fn sq_overhead(qp_type: QpType) -> u32 {
    let rdma = CTRL + size_of::<RaddrSeg>() as u32;
    let atomic = rdma + size_of::<AtomicSeg>() as u32;
    // BIND_MW / LOCAL_INV are UMR WQEs.
    let mw = CTRL + (UMR_CTRL_SEG + MKEY_CONTEXT_SEG + UMR_KLM_AREA) as u32;
    let connected = max(max(CTRL, rdma), max(atomic, mw));
    match qp_type {
        QpType::Rc | QpType::Uc => connected,
        QpType::XrcSend | QpType::XrcRecv => connected + XRC_SEG as u32,
        // UD's default operations are SEND, SEND_WITH_IMM and TSO: no
        // operation segment, plus the datagram segment.
        QpType::Ud => CTRL + size_of::<Av>() as u32,
    }
}

const fn max(a: u32, b: u32) -> u32 {
    if a > b {
        a
    } else {
        b
    }
}

const fn align(v: u32, a: u32) -> u32 {
    (v + a - 1) & !(a - 1)
}

/// `mlx5_calc_sq_size` (with `mlx5_calc_send_wqe`); `Ok(None)` for
/// `max_send_wr == 0` (no send queue).
pub fn sq_size(lim: &DeviceLimits, qp_type: QpType, max_send_wr: u32, max_send_sge: u32, max_inline: u32) -> Result<Option<SqSize>, SizeError> {
    if max_send_wr == 0 {
        return Ok(None);
    }
    let overhead = sq_overhead(qp_type);
    if overhead > lim.max_sq_desc_sz {
        return Err("the device's largest send WQE cannot hold the QP type's segments");
    }
    let inl_size = if max_inline > 0 {
        let inl = max_inline.checked_add(INLINE_HDR as u32 + 15).ok_or("max_inline_data is too large")?;
        overhead + (inl & !15)
    } else {
        0
    };
    if max_send_sge > (lim.max_sq_desc_sz - overhead) / DSEG {
        return Err("max_send_sge is above what the device's largest send WQE holds");
    }
    let tot = max(overhead + max_send_sge * DSEG, inl_size);
    if tot > lim.max_sq_desc_sz {
        return Err("max_inline_data is above what the device's largest send WQE holds");
    }
    let wqe_size = align(tot, BB);
    if wqe_size > lim.max_sq_desc_sz {
        return Err("the send WQE is larger than the device's largest");
    }
    if max_send_wr > 0x7fff_ffff / lim.max_sq_desc_sz {
        return Err("max_send_wr is too large");
    }
    let wq_size = (max_send_wr * wqe_size).next_power_of_two();
    let wqe_cnt = wq_size / BB;
    if wqe_cnt > lim.max_send_wqebb {
        return Err("max_send_wr is above the device's largest send queue");
    }
    Ok(Some(SqSize {
        wqe_size,
        wqe_cnt,
        max_post: wq_size / wqe_size,
        max_gs: max_send_sge,
        // With no SGE and no inline data the WQE is exactly the overhead
        // and libmlx5's `int` goes to -4 (reported as 0xfffffffc, while
        // its post refuses every inline request): 0 here.
        max_inline: (wqe_size - overhead).saturating_sub(INLINE_HDR as u32),
    }))
}

/// The receive queue libmlx5 builds for a request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RqSize {
    /// WQEs in the ring (`rq_wqe_count`, a power of two).
    pub wqe_cnt: u32,
    /// log2 of the WQE stride (`rq_wqe_shift`).
    pub wqe_shift: u32,
    /// Scatter entries per WQE (reported `max_recv_sge`).
    pub max_gs: u32,
}

impl RqSize {
    /// Bytes of the ring.
    pub const fn bytes(&self) -> u32 {
        self.wqe_cnt << self.wqe_shift
    }

    /// Receives that may be outstanding (reported `max_recv_wr`:
    /// `create_qp` sets `rq.max_post = rq.wqe_cnt`).
    pub const fn max_post(&self) -> u32 {
        self.wqe_cnt
    }
}

/// `mlx5_calc_rq_size` (with `mlx5_calc_rcv_wqe`); `Ok(None)` for no
/// receive queue (`max_recv_wr == 0`, or the QP uses an SRQ).
pub fn rq_size(lim: &DeviceLimits, max_recv_wr: u32, max_recv_sge: u32, uses_srq: bool) -> Result<Option<RqSize>, SizeError> {
    if max_recv_wr == 0 {
        return Ok(None);
    }
    if max_recv_wr > lim.max_recv_wr {
        return Err("max_recv_wr is above the device's largest receive queue");
    }
    if uses_srq {
        return Ok(None);
    }
    let size = max_recv_sge.max(1).checked_mul(DSEG).ok_or("max_recv_sge is too large")?;
    if size > lim.max_rq_desc_sz {
        return Err("max_recv_sge is above what the device's largest receive WQE holds");
    }
    let wqe_size = size.next_power_of_two();
    if wqe_size > lim.max_rq_desc_sz {
        return Err("the receive WQE is larger than the device's largest");
    }
    let wq_size = max_recv_wr.next_power_of_two().checked_mul(wqe_size).ok_or("max_recv_wr is too large")?.max(BB);
    Ok(Some(RqSize { wqe_cnt: wq_size / wqe_size, wqe_shift: wqe_size.trailing_zeros(), max_gs: wqe_size / DSEG }))
}

/// Where the queues of a QP sit in its one buffer (`mlx5_calc_wq_size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpLayout {
    /// The send queue, if any.
    pub sq: Option<SqSize>,
    /// The receive queue, if any.
    pub rq: Option<RqSize>,
    /// Byte offset of the send queue (the receive queue is at 0).
    pub sq_offset: u32,
    /// Bytes of the buffer (allocated rounded up to whole pages).
    pub bytes: u32,
}

/// Both queues of a QP and their places in its buffer.
pub fn qp_layout(lim: &DeviceLimits, qp_type: QpType, cap: &crate::qp::QpCap, uses_srq: bool) -> Result<QpLayout, SizeError> {
    let sq = sq_size(lim, qp_type, cap.max_send_wr, cap.max_send_sge, cap.max_inline_data)?;
    let rq = rq_size(lim, cap.max_recv_wr, cap.max_recv_sge, uses_srq)?;
    let sq_offset = rq.map_or(0, |r| r.bytes());
    Ok(QpLayout { sq, rq, sq_offset, bytes: sq_offset + sq.map_or(0, |s| s.bytes()) })
}

/// An SRQ as libmlx5 builds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqSize {
    /// log2 of the WQE stride.
    pub wqe_shift: u32,
    /// Scatter entries per WQE (reported `max_sge`).
    pub max_gs: u32,
    /// WQEs in the buffer (`srq->max`), wait queue included.
    pub wqe_cnt: u32,
    /// The free list's initial tail; also the reported `max_wr`.
    pub tail: u32,
    /// Whether the WQEs after `tail` form a page-fault wait queue.
    pub waitq: bool,
}

impl SrqSize {
    /// Bytes of the buffer.
    pub const fn bytes(&self) -> u32 {
        self.wqe_cnt << self.wqe_shift
    }

    /// The `max_wr` sent to the kernel (`srq->max - 1`).
    pub const fn kernel_max_wr(&self) -> u32 {
        self.wqe_cnt - 1
    }
}

/// `mlx5_create_srq` + `mlx5_alloc_srq_buf`.
pub fn srq_size(lim: &DeviceLimits, max_wr: u32, max_sge: u32) -> Result<SrqSize, SizeError> {
    if max_wr > lim.max_srq_recv_wr {
        return Err("max_wr is above the device's largest SRQ");
    }
    if max_sge > lim.max_rq_desc_sz / DSEG {
        return Err("max_sge is above what the device's largest receive WQE holds");
    }
    let (want, waitq) = match max_wr.checked_mul(2).and_then(|w| w.checked_add(1)) {
        Some(w) if w <= lim.max_srq_recv_wr => (w, true),
        _ => (max_wr + 1, false),
    };
    let stride = (size_of::<super::wqe::SrqNextSeg>() as u32 + max_sge * DSEG).max(32).next_power_of_two();
    // libmlx5 compares the stride with max_recv_wr here (sic).
    if stride > lim.max_recv_wr {
        return Err("the SRQ WQE is larger than the device allows");
    }
    Ok(SrqSize {
        wqe_shift: stride.trailing_zeros(),
        max_gs: (stride - 16) / DSEG,
        wqe_cnt: want.next_power_of_two(),
        tail: (max_wr + 1).next_power_of_two() - 1,
        waitq,
    })
}

#[cfg(test)]
#[path = "sizing_tests.rs"]
mod tests;
