//! Reading work queue entries out of the applications' rings: send WQEs
//! (control segment, then the opcode's segments, possibly straddling the
//! end of the ring), receive WQEs (RQ and SRQ scatter lists).

use super::consts::{INLINE_SEG, INVALID_LKEY};
use crate::mem::{DmaFault, HostMem, Pid};
use crate::model::Qp;

/// One scatter/gather entry as a data segment carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sge {
    /// Address (the lkey's I/O virtual address space).
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// Local key.
    pub lkey: u32,
}

/// Where a send's payload comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gather {
    /// Bytes copied into the WQE (inline segment).
    Inline(Vec<u8>),
    /// Data segments.
    Sges(Vec<Sge>),
}

impl Gather {
    /// Total payload length.
    pub fn len(&self) -> u64 {
        match self {
            Gather::Inline(b) => b.len() as u64,
            Gather::Sges(s) => s.iter().map(|g| u64::from(g.len)).sum(),
        }
    }
}

/// A send WQE, unwrapped from the ring.
#[derive(Debug, Clone)]
pub struct SendWqe {
    /// WQE index (control segment bits 8-23).
    pub idx: u16,
    /// mlx5 opcode.
    pub opcode: u8,
    /// WQEBBs it occupies.
    pub nbb: u32,
    /// Control flags (CQ_UPDATE, SOLICITED, FENCE).
    pub fm_ce_se: u8,
    /// Control segment bytes 12..16 as they are (immediate in wire order,
    /// or an rkey for SEND_INV/UMR).
    pub imm: u32,
    /// The WQE's bytes (ds * 16), control segment included.
    pub body: Vec<u8>,
}

/// A malformed send WQE (the requester completes it with LOC_QP_OP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadWqe {
    /// The index the WQE would have.
    pub idx: u16,
}

/// Big-endian field readers over a byte slice (callers check lengths).
pub fn be16(b: &[u8], off: usize) -> u16 {
    u16::from_be_bytes([b[off], b[off + 1]])
}
/// Reads a BE u32 at `off`.
pub fn be32(b: &[u8], off: usize) -> u32 {
    u32::from_be_bytes([b[off], b[off + 1], b[off + 2], b[off + 3]])
}
/// Reads a BE u64 at `off`.
pub fn be64(b: &[u8], off: usize) -> u64 {
    (u64::from(be32(b, off)) << 32) | u64::from(be32(b, off + 4))
}

/// Reads `len` bytes at byte offset `off` of a ring of `ring_len` bytes at
/// `buf`, wrapping to the ring's start.
fn read_ring(mem: &impl HostMem, pid: Pid, buf: u64, ring_len: u64, off: u64, len: usize) -> Result<Vec<u8>, DmaFault> {
    let mut out = vec![0u8; len];
    let off = off % ring_len;
    let first = usize::try_from((ring_len - off).min(len as u64)).unwrap_or(len);
    mem.read(pid, buf + off, &mut out[..first])?;
    if first < len {
        mem.read(pid, buf, &mut out[first..])?;
    }
    Ok(out)
}

/// Reads the send WQE at the QP's consumer counter.
pub fn read_send_wqe(mem: &impl HostMem, qp: &Qp) -> Result<SendWqe, BadWqe> {
    let bad = BadWqe { idx: qp.sq.ci as u16 };
    let cnt = u64::from(qp.sq.wqe_cnt);
    if cnt == 0 || !cnt.is_power_of_two() {
        return Err(bad);
    }
    let ring_len = cnt << 6;
    let off = (u64::from(qp.sq.ci) & (cnt - 1)) << 6;
    let ctrl = read_ring(mem, qp.pid, qp.sq.buf, ring_len, off, 16).map_err(|_| bad)?;
    let opmod_idx_opcode = be32(&ctrl, 0);
    let ds = (be32(&ctrl, 4) & 0x3f) as usize;
    if ds == 0 {
        return Err(bad);
    }
    let nbb = (ds * 16).div_ceil(64) as u32;
    if u64::from(nbb) > cnt {
        return Err(bad);
    }
    let body = read_ring(mem, qp.pid, qp.sq.buf, ring_len, off, ds * 16).map_err(|_| bad)?;
    Ok(SendWqe {
        idx: (opmod_idx_opcode >> 8) as u16,
        opcode: opmod_idx_opcode as u8,
        nbb,
        fm_ce_se: ctrl[11],
        imm: be32(&ctrl, 12),
        body,
    })
}

/// A cursor over the segments after the control segment.
pub struct Segs<'a> {
    body: &'a [u8],
    off: usize,
}

impl<'a> Segs<'a> {
    /// Segments of `wqe`, starting after its control segment.
    pub fn new(wqe: &'a SendWqe) -> Self {
        Segs { body: &wqe.body, off: 16 }
    }

    /// The next `n` bytes (a fixed-size segment), if the WQE has them.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.body.get(self.off..self.off + n)?;
        self.off += n;
        Some(s)
    }

    /// The rest as a payload: one inline segment or data segments.
    pub fn gather(&mut self) -> Option<Gather> {
        let mut sges = Vec::new();
        while self.off + 4 <= self.body.len() {
            let bc = be32(self.body, self.off);
            if bc & INLINE_SEG != 0 {
                let len = (bc & !INLINE_SEG) as usize;
                let data = self.body.get(self.off + 4..self.off + 4 + len)?;
                if !sges.is_empty() {
                    return None;
                }
                self.off += (4 + len).div_ceil(16) * 16;
                return Some(Gather::Inline(data.to_vec()));
            }
            let seg = self.take(16)?;
            let sge = Sge { len: bc, lkey: be32(seg, 4), addr: be64(seg, 8) };
            if sge.len != 0 {
                sges.push(sge);
            }
        }
        Some(Gather::Sges(sges))
    }
}

/// Parses a receive WQE's scatter list (`bytes` = the WQE after any next
/// segment): data segments up to the MLX5_INVALID_LKEY terminator or the
/// end of the WQE; zero-length entries carry nothing.
pub fn parse_scatter(bytes: &[u8]) -> Vec<Sge> {
    let mut out = Vec::new();
    for seg in bytes.chunks_exact(16) {
        let sge = Sge { len: be32(seg, 0), lkey: be32(seg, 4), addr: be64(seg, 8) };
        if sge.lkey == INVALID_LKEY {
            break;
        }
        if sge.len != 0 {
            out.push(sge);
        }
    }
    out
}
