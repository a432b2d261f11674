//! The memory behind an mlx5 CQ, QP or SRQ and the driver data that
//! tells the kernel where it is (libmlx5 `create_cq`, `create_qp`,
//! `mlx5_create_srq` in `verbs.c`).
//!
//! Each object gets one [`WqBuf`]: its ring at offset 0 (a QP's receive
//! queue first, its send queue after it, `mlx5_calc_wq_size`) and its
//! doorbell record right after the ring, on a cache line of its own
//! (libmlx5 carves records out of shared pages; one per object's buffer
//! is simpler and costs at most a page). The buffer is page aligned,
//! zeroed, never moves, and must outlive the kernel object: the owner
//! drops it only after the destroy command succeeded.
//!
//! QPs never ask for `MLX5_QP_FLAG_SCATTER_CQE`: [`super::cqe`] does not
//! read data out of CQEs, so the device must put every byte in the
//! receive buffers.

use super::abi::{Mlx5CreateCq, Mlx5CreateQp, Mlx5CreateSrq};
use super::buf::{AllocType, WqBuf};
use super::cqe::CqRing;
use super::rq::{RecvQueue, Srq};
use super::sizing::{qp_layout, srq_size, DeviceLimits, QpLayout, SrqSize};
use super::sq::{BlueFlame, SendQueue, SqConfig};
use crate::error::{Error, ErrorKind, Result};
use crate::qp::{QpCap, QpType};

/// Bytes of the CQEs this provider asks for when neither the caller nor
/// `MLX5_CQE_SIZE` chose (libmlx5's default).
pub const CQE_SIZE: u32 = 64;

/// The CQE size of a new CQ (libmlx5 `get_cqe_size`): the caller's
/// choice, else the `MLX5_CQE_SIZE` environment variable (read as C's
/// `atoi`), else 64; anything but 64 or 128 is `InvalidArgument`.
pub fn cqe_size(verb: &'static str, chosen: Option<u32>) -> Result<u32> {
    let size = match chosen {
        Some(s) => Some(s),
        None => std::env::var_os("MLX5_CQE_SIZE").map(|v| atoi(v.as_encoded_bytes())),
    };
    match size {
        None => Ok(CQE_SIZE),
        Some(s @ (64 | 128)) => Ok(s),
        Some(_) => Err(invalid(verb, "mlx5: a CQE is 64 or 128 bytes (cqe_size, MLX5_CQE_SIZE)")),
    }
}

/// C's `atoi` for the sizes that matter: leading blanks, an optional
/// sign, the leading digits; anything else is 0 (a size no CQ has).
fn atoi(s: &[u8]) -> u32 {
    let s = s.trim_ascii_start();
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = digits.iter().take_while(|b| b.is_ascii_digit()).fold(0u32, |n, &b| n.saturating_mul(10).saturating_add(u32::from(b - b'0')));
    if neg { 0 } else { n }
}
/// Largest CQ (`ncqe <= 2^24`).
const MAX_NCQE: u32 = 1 << 24;

/// Where the doorbell record goes after `ring_bytes` of ring.
fn dbrec_after(ring_bytes: usize, cache_line: u32) -> usize {
    ring_bytes.next_multiple_of(cache_line.max(64) as usize)
}

fn invalid(verb: &'static str, why: &'static str) -> Error {
    Error::new(verb, ErrorKind::InvalidArgument).with_detail(why)
}

/// A CQ's memory before the kernel knows it.
#[derive(Debug)]
pub struct CqMem {
    /// Ring and doorbell record.
    pub buf: WqBuf,
    /// Entries (a power of two); the kernel is asked for `ncqe - 1`.
    pub ncqe: u32,
    /// Byte offset of the doorbell record pair.
    pub dbrec_offset: usize,
    /// Bytes per entry: 64 or 128 (the 64 bytes that matter are the last).
    pub cqe_size: u32,
}

impl CqMem {
    /// The buffer for at least `cqe` completions of `cqe_size` bytes (64
    /// or 128): `roundup_pow2(cqe + 1)` entries, every one marked invalid
    /// (`mlx5_alloc_cq_buf`).
    pub fn new(verb: &'static str, cqe: u32, cqe_size: u32, cache_line: u32) -> Result<Self> {
        if !matches!(cqe_size, 64 | 128) {
            return Err(invalid(verb, "mlx5: a CQE is 64 or 128 bytes"));
        }
        let ncqe = cqe.checked_add(1).map(u32::next_power_of_two).filter(|&n| n <= MAX_NCQE);
        let Some(ncqe) = ncqe else { return Err(invalid(verb, "mlx5: more CQEs than a CQ holds (2^24 - 1)")) };
        let ring = ncqe as usize * cqe_size as usize;
        let dbrec_offset = dbrec_after(ring, cache_line);
        let mut buf = WqBuf::alloc(verb, dbrec_offset + 8, AllocType::from_env("MLX_CQ"))?;
        // cqn and version do not matter for marking the entries.
        CqRing::new(verb, ncqe, cqe_size, dbrec_offset, 0, 0)?.init(&mut buf)?;
        Ok(Self { buf, ncqe, dbrec_offset, cqe_size })
    }

    /// The `cqe` of the core command (`ncqe - 1`).
    pub fn kernel_cqe(&self) -> u32 {
        self.ncqe - 1
    }

    /// The driver data of `CREATE_CQ` (legacy UARs: no UAR page index, the
    /// CQ is armed through the first UAR page).
    pub fn request(&self) -> Mlx5CreateCq {
        Mlx5CreateCq { buf_addr: self.buf.addr(), db_addr: self.buf.addr() + self.dbrec_offset as u64, cqe_size: self.cqe_size, ..Default::default() }
    }

    /// The ring state once the kernel named the CQ (`cqe` as granted must
    /// be `ncqe - 1`: libmlx5 uses it as the index mask).
    pub fn ring(&self, verb: &'static str, granted_cqe: u32, cqn: u32, cqe_version: u8) -> Result<CqRing> {
        if granted_cqe != self.kernel_cqe() {
            return Err(Error::new(verb, ErrorKind::Malformed).with_detail("mlx5: the kernel granted another CQ size than the buffer holds"));
        }
        CqRing::new(verb, self.ncqe, self.cqe_size, self.dbrec_offset, cqn, cqe_version)
    }
}

/// A QP's memory before the kernel knows it.
#[derive(Debug)]
pub struct QpMem {
    /// Receive queue, send queue, doorbell record.
    pub buf: WqBuf,
    /// Where the queues are.
    pub layout: QpLayout,
    /// Byte offset of the doorbell record pair (receive, send).
    pub dbrec_offset: usize,
}

impl QpMem {
    /// Sizes the queues for `cap` as libmlx5 does and maps the buffer.
    pub fn new(verb: &'static str, lim: &DeviceLimits, qp_type: QpType, cap: &QpCap, uses_srq: bool, cache_line: u32) -> Result<Self> {
        if !matches!(qp_type, QpType::Rc | QpType::Uc | QpType::Ud) {
            return Err(Error::new(verb, ErrorKind::Unsupported).with_detail("mlx5: only RC, UC and UD QPs are implemented"));
        }
        let layout = qp_layout(lim, qp_type, cap, uses_srq).map_err(|why| invalid(verb, why))?;
        let dbrec_offset = dbrec_after(layout.bytes as usize, cache_line);
        let buf = WqBuf::alloc(verb, dbrec_offset + 8, AllocType::from_env("MLX_QP"))?;
        Ok(Self { buf, layout, dbrec_offset })
    }

    /// The driver data of `CREATE_QP` for user index `uidx`.
    pub fn request(&self, uidx: u32) -> Mlx5CreateQp {
        let rq = self.layout.rq.unwrap_or_default();
        Mlx5CreateQp {
            buf_addr: self.buf.addr(),
            db_addr: self.buf.addr() + self.dbrec_offset as u64,
            sq_wqe_count: self.layout.sq.map_or(0, |s| s.wqe_cnt),
            rq_wqe_count: rq.wqe_cnt,
            rq_wqe_shift: if rq.wqe_cnt == 0 { 0 } else { rq.wqe_shift },
            flags: 0,
            uidx,
            bfreg_index: 0,
            ..Default::default()
        }
    }

    /// What the QP can hold, as libmlx5 reports it back to the caller.
    pub fn granted(&self) -> QpCap {
        let (sq, rq) = (self.layout.sq.unwrap_or_default(), self.layout.rq.unwrap_or_default());
        QpCap {
            max_send_wr: sq.max_post,
            max_recv_wr: rq.max_post(),
            max_send_sge: sq.max_gs,
            max_recv_sge: rq.max_gs,
            max_inline_data: sq.max_inline,
        }
    }

    /// The queues' writers once the kernel named the QP.
    pub fn queues(&self, verb: &'static str, qpn: u32, qp_type: QpType, sig_all: bool, atomics: bool, bf: BlueFlame) -> Result<(Option<SendQueue>, Option<RecvQueue>)> {
        let sq = match self.layout.sq {
            Some(size) => Some(SendQueue::new(
                verb,
                SqConfig { qpn, qp_type, size, sq_offset: self.layout.sq_offset as usize, dbrec_offset: self.dbrec_offset, sig_all, atomics, bf },
            )?),
            None => None,
        };
        let rq = match self.layout.rq {
            Some(size) => Some(RecvQueue::new(verb, size, 0, self.dbrec_offset)?),
            None => None,
        };
        Ok((sq, rq))
    }
}

/// An SRQ's memory before the kernel knows it.
#[derive(Debug)]
pub struct SrqMem {
    /// WQEs and doorbell record.
    pub buf: WqBuf,
    /// The geometry.
    pub size: SrqSize,
    /// Byte offset of the doorbell record.
    pub dbrec_offset: usize,
}

impl SrqMem {
    /// Sizes the SRQ for `max_wr`/`max_sge` as libmlx5 does and maps it.
    pub fn new(verb: &'static str, lim: &DeviceLimits, max_wr: u32, max_sge: u32, cache_line: u32) -> Result<Self> {
        let size = srq_size(lim, max_wr, max_sge).map_err(|why| invalid(verb, why))?;
        let dbrec_offset = dbrec_after(size.bytes() as usize, cache_line);
        let buf = WqBuf::alloc(verb, dbrec_offset + 8, AllocType::from_env("MLX_SRQ"))?;
        Ok(Self { buf, size, dbrec_offset })
    }

    /// The `max_wr` and `max_sge` of the core command.
    pub fn kernel_attr(&self) -> (u32, u32) {
        (self.size.kernel_max_wr(), self.size.max_gs)
    }

    /// The driver data of `CREATE_SRQ` for user index `uidx`.
    pub fn request(&self, uidx: u32) -> Mlx5CreateSrq {
        Mlx5CreateSrq { buf_addr: self.buf.addr(), db_addr: self.buf.addr() + self.dbrec_offset as u64, flags: 0, uidx, ..Default::default() }
    }

    /// The SRQ writer, its free list linked in the buffer.
    pub fn srq(&mut self, verb: &'static str) -> Result<Srq> {
        Srq::new(verb, self.size, &mut self.buf, self.dbrec_offset)
    }
}

#[cfg(test)]
#[path = "res_tests.rs"]
mod tests;
