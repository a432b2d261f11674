//! Memory windows: the UMR WQE libmlx5 posts for `ibv_bind_mw`,
//! IBV_WR_BIND_MW and IBV_WR_LOCAL_INV (UMR control segment, mkey context
//! segment, one KLM), LOCAL_INVAL, and SEND_WITH_INV's invalidation.

use super::consts::syn;
use super::send::Outcome;
use super::wqe::{be32, be64, Segs, SendWqe};
use super::{Engine, EventSink};
use crate::mem::HostMem;
use crate::model::{access, MwBinding, Qp};

/// UMR control flag: fail unless the window is free (type 2 bind).
const CHECK_FREE: u8 = 1 << 5;
/// UMR control flag: fail unless the window is bound to this QP.
const CHECK_QPN: u8 = 1 << 3;
/// Mkey context `free` bit.
const MKC_FREE: u8 = 1 << 6;

/// IBV_ACCESS_* bits from the mkey context's access_flags byte.
fn mkc_access(f: u8) -> u32 {
    let mut a = 0;
    if f & (1 << 3) != 0 {
        a |= access::LOCAL_WRITE;
    }
    if f & (1 << 4) != 0 {
        a |= access::REMOTE_READ;
    }
    if f & (1 << 5) != 0 {
        a |= access::REMOTE_WRITE;
    }
    if f & (1 << 6) != 0 {
        a |= access::REMOTE_ATOMIC;
    }
    a
}

impl<M: HostMem, E: EventSink> Engine<'_, M, E> {
    /// A UMR WQE: bind or free the memory window whose key is in the
    /// control segment's immediate.
    pub(crate) fn umr(&mut self, qp: &Qp, w: &SendWqe) -> Outcome {
        match self.try_umr(qp, w) {
            Some(()) => Outcome::Done(0),
            None => Outcome::Fail(syn::MW_BIND),
        }
    }

    fn try_umr(&mut self, qp: &Qp, w: &SendWqe) -> Option<()> {
        let mut segs = Segs::new(w);
        let uctrl = segs.take(48)?;
        let mkc = segs.take(64)?;
        let flags = uctrl[0];
        let new_low = be32(mkc, 4) & 0xff;
        let mw = self.dev.mws.get(&(w.imm >> 8))?;
        if mw.pdn != qp.pdn {
            return None;
        }
        if mkc[0] & MKC_FREE != 0 {
            // LOCAL_INV (type 2: the key must be the bound one, bound here)
            // or a type-1 unbind.
            if flags & CHECK_QPN != 0 && (mw.rkey != w.imm || mw.bound.and_then(|b| b.qpn) != Some(qp.qpn)) {
                return None;
            }
            let mw = self.dev.mws.get_mut(&(w.imm >> 8))?;
            mw.bound = None;
            if mw.mw_type == 1 {
                mw.rkey = (mw.rkey & !0xff) | new_low;
            }
            return Some(());
        }
        let klm = segs.take(16)?;
        let (len, mkey, addr) = (u64::from(be32(klm, 0)), be32(klm, 4), be64(klm, 8));
        if flags & CHECK_FREE != 0 && mw.bound.is_some() {
            return None;
        }
        if be64(mkc, 16) != addr || be64(mkc, 24) != len {
            return None; // zero-based windows are not modelled
        }
        let granted = mkc_access(mkc[2]);
        let mr = self.dev.mrs.get(&mkey)?;
        let inside = addr >= mr.iova && addr.checked_add(len).is_some_and(|e| e <= mr.iova.saturating_add(mr.length));
        let needs_lw = granted & (access::REMOTE_WRITE | access::REMOTE_ATOMIC) != 0;
        if !mr.valid || mr.pdn != qp.pdn || mr.access & access::MW_BIND == 0 || !inside {
            return None;
        }
        if needs_lw && mr.access & access::LOCAL_WRITE == 0 {
            return None;
        }
        let mw = self.dev.mws.get_mut(&(w.imm >> 8))?;
        let qpn = (mw.mw_type == 2).then_some(qp.qpn);
        mw.bound = Some(MwBinding { mr_key: mkey, addr, length: len, access: granted, qpn });
        mw.rkey = (mw.rkey & !0xff) | new_low;
        Some(())
    }

    /// LOCAL_INVAL of `rkey`.
    pub(crate) fn local_inval(&mut self, qp: &Qp, rkey: u32) -> Outcome {
        if self.invalidate(qp.pdn, rkey, None) {
            Outcome::Done(0)
        } else {
            Outcome::Fail(syn::MW_BIND)
        }
    }

    /// Invalidates a type-2 window (bound to `qpn` if given) or an MR,
    /// by its exact key in PD `pdn`. False if there is nothing to invalidate.
    pub(crate) fn invalidate(&mut self, pdn: u32, rkey: u32, qpn: Option<u32>) -> bool {
        if let Some(mw) = self.dev.mws.get_mut(&(rkey >> 8)) {
            let bound_here = mw.bound.is_some_and(|b| qpn.is_none() || b.qpn == qpn);
            if mw.rkey == rkey && mw.pdn == pdn && mw.mw_type == 2 && bound_here {
                mw.bound = None;
                return true;
            }
        }
        match self.dev.mrs.get_mut(&rkey) {
            Some(mr) if mr.pdn == pdn && qpn.is_none() => {
                mr.valid = false;
                true
            }
            _ => false,
        }
    }
}
