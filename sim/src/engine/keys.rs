//! Memory keys as the NIC checks them: lkeys of local scatter/gather
//! entries (MR, PD, bounds, LOCAL_WRITE) and rkeys of remote accesses (MR or
//! bound memory window, PD, QP for type-2 windows, remote access bits,
//! bounds), and the DMA that follows.

use super::consts::syn;
use super::wqe::{Gather, Sge};
use super::{Engine, EventSink};
use crate::mem::{HostMem, Pid};
use crate::model::{access, Mr, Qp};

/// A checked range of host memory: process and host virtual address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRange {
    /// Owning process.
    pub pid: Pid,
    /// Host virtual address.
    pub addr: u64,
}

/// Whether `[addr, addr + len)` lies in `[base, base + size)`.
fn within(addr: u64, len: u64, base: u64, size: u64) -> bool {
    addr >= base && addr.checked_add(len).is_some_and(|end| end <= base.saturating_add(size))
}

/// The host address of `addr` (iova space) inside `mr`.
fn host_of(mr: &Mr, addr: u64) -> HostRange {
    HostRange { pid: mr.pid, addr: mr.addr.wrapping_add(addr.wrapping_sub(mr.iova)) }
}

impl<M: HostMem, E: EventSink> Engine<'_, M, E> {
    /// Checks an lkey access of `len` bytes at `addr` for a QP of PD `pdn`.
    pub(crate) fn local_range(&self, pdn: u32, lkey: u32, addr: u64, len: u64, write: bool) -> Option<HostRange> {
        let mr = self.dev.mrs.get(&lkey)?;
        if !mr.valid || mr.pdn != pdn || !within(addr, len, mr.iova, mr.length) {
            return None;
        }
        if write && mr.access & access::LOCAL_WRITE == 0 {
            return None;
        }
        Some(host_of(mr, addr))
    }

    /// Reads a send's payload. Err: the syndrome (LOC_PROT).
    pub(crate) fn gather(&self, pdn: u32, g: &Gather) -> Result<Vec<u8>, u8> {
        match g {
            Gather::Inline(b) => Ok(b.clone()),
            Gather::Sges(sges) => {
                let total = usize::try_from(g.len()).map_err(|_| syn::LOC_LEN)?;
                if total > 1 << 31 {
                    return Err(syn::LOC_LEN);
                }
                // Every key is checked before anything is allocated or read.
                let ranges = sges
                    .iter()
                    .map(|s| self.local_range(pdn, s.lkey, s.addr, u64::from(s.len), false).ok_or(syn::LOC_PROT))
                    .collect::<Result<Vec<_>, u8>>()?;
                let mut out = vec![0u8; total];
                let mut at = 0;
                for (s, r) in sges.iter().zip(ranges) {
                    let n = s.len as usize;
                    self.mem.read(r.pid, r.addr, &mut out[at..at + n]).map_err(|_| syn::LOC_PROT)?;
                    at += n;
                }
                Ok(out)
            }
        }
    }

    /// Checks that `sges` can take `len` bytes: Err(LOC_LEN) if too small,
    /// Err(LOC_PROT) for a bad lkey on the part that would be written.
    pub(crate) fn check_scatter(&self, pdn: u32, sges: &[Sge], len: usize) -> Result<(), u8> {
        let room: u64 = sges.iter().map(|s| u64::from(s.len)).sum();
        if room < len as u64 {
            return Err(syn::LOC_LEN);
        }
        let mut left = len as u64;
        for s in sges {
            if left == 0 {
                break;
            }
            let n = left.min(u64::from(s.len));
            self.local_range(pdn, s.lkey, s.addr, n, true).ok_or(syn::LOC_PROT)?;
            left -= n;
        }
        Ok(())
    }

    /// Writes `data` across `sges` (checked as [`Self::check_scatter`]).
    pub(crate) fn scatter(&self, pdn: u32, sges: &[Sge], data: &[u8]) -> Result<(), u8> {
        self.check_scatter(pdn, sges, data.len())?;
        let mut at = 0;
        for s in sges {
            if at == data.len() {
                break;
            }
            let n = (data.len() - at).min(s.len as usize);
            let r = self.local_range(pdn, s.lkey, s.addr, n as u64, true).ok_or(syn::LOC_PROT)?;
            self.mem.write(r.pid, r.addr, &data[at..at + n]).map_err(|_| syn::LOC_PROT)?;
            at += n;
        }
        Ok(())
    }

    /// Checks a remote access through `rkey` by responder `qp`: `need` is
    /// the IBV_ACCESS_REMOTE_* bit. A zero-length access checks nothing.
    pub(crate) fn remote_range(&self, qp: &Qp, rkey: u32, addr: u64, len: u64, need: u32) -> Option<HostRange> {
        if len == 0 {
            return Some(HostRange { pid: qp.pid, addr: 0 });
        }
        if let Some(mr) = self.dev.mrs.get(&rkey) {
            let ok = mr.valid && mr.pdn == qp.pdn && mr.access & need != 0 && within(addr, len, mr.iova, mr.length);
            return ok.then(|| host_of(mr, addr));
        }
        let mw = self.dev.mws.get(&(rkey >> 8))?;
        let b = mw.bound?;
        if mw.rkey != rkey || mw.pdn != qp.pdn || b.access & need == 0 || !within(addr, len, b.addr, b.length) {
            return None;
        }
        if b.qpn.is_some_and(|q| q != qp.qpn) {
            return None;
        }
        let mr = self.dev.mrs.get(&b.mr_key)?;
        if !mr.valid || !within(addr, len, mr.iova, mr.length) {
            return None;
        }
        Some(host_of(mr, addr))
    }
}
