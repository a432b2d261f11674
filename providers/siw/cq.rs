//! siw completion queues: the driver response of create CQ, the mapped
//! CQE array with its trailing `struct siw_cq_ctrl`, and arming the CQ for
//! a completion event, which on siw is a plain store into that control word
//! (the kernel reads it when it adds a CQE), not a system call.

use core::mem::size_of;
use core::sync::atomic::{AtomicU32, Ordering};

use rustix::fd::AsFd;
use zerocopy::FromBytes;

use super::abi::{SiwCqCtrl, SiwUrespCreateCq};
use super::ring::CqRing;
use crate::error::{Error, ErrorKind, Result};

pub use super::abi::{SIW_INVAL_UOBJ_KEY, SIW_NOTIFY_NEXT_COMPLETION, SIW_NOTIFY_NOT, SIW_NOTIFY_SOLICITED};

/// `struct siw_uresp_create_cq`.
pub type CreateCqResp = SiwUrespCreateCq;
/// `sizeof(struct siw_cqe)`.
pub const CQE_SIZE: usize = size_of::<super::abi::SiwCqe>();
/// `sizeof(struct siw_cq_ctrl)`.
pub const CQ_CTRL_SIZE: usize = size_of::<SiwCqCtrl>();

/// The user-space side of a siw CQ.
#[derive(Debug)]
pub struct SiwCq {
    ring: CqRing,
    id: u32,
}

impl SiwCq {
    /// Maps `num_cqe * sizeof(siw_cqe) + sizeof(siw_cq_ctrl)` bytes at
    /// `cq_key` (from the driver response `drv_out`) and disarms the CQ.
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, drv_out: &[u8]) -> Result<Self> {
        let resp = CreateCqResp::read_from_bytes(drv_out).map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
        let ring = CqRing::map(verb, fd, resp.cq_key, resp.num_cqe, CQ_CTRL_SIZE)?;
        let cq = Self { ring, id: resp.cq_id };
        cq.ctrl_flags().store(SIW_NOTIFY_NOT, Ordering::SeqCst);
        Ok(cq)
    }

    fn ctrl_flags(&self) -> &AtomicU32 {
        match self.ring.mapping().atomic_u32(self.ring.len() as usize * CQE_SIZE) {
            Some(a) => a,
            // `map` sized the mapping to hold the control word right there.
            None => unreachable!("siw CQ mapping holds its control word"),
        }
    }

    /// `ibv_req_notify_cq` on siw: stores `SIW_NOTIFY_SOLICITED`, or
    /// `SOLICITED | NEXT_COMPLETION`, into `siw_cq_ctrl.flags` (as
    /// rdma-core: a sequentially consistent store, so that it is ordered
    /// before any later look at the CQ).
    pub fn arm(&self, solicited_only: bool) {
        let flags = if solicited_only {
            SIW_NOTIFY_SOLICITED
        } else {
            SIW_NOTIFY_SOLICITED | SIW_NOTIFY_NEXT_COMPLETION
        };
        self.ctrl_flags().store(flags, Ordering::SeqCst);
    }

    /// The current `siw_cq_ctrl.flags` (the kernel clears it when it
    /// signals an event).
    pub fn notify_flags(&self) -> u32 {
        self.ctrl_flags().load(Ordering::SeqCst)
    }

    /// siw's CQ id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Number of CQEs in the mapped array.
    pub fn num_cqe(&self) -> u32 {
        self.ring.len()
    }

    /// The CQE array.
    #[inline(always)]
    pub fn ring(&self) -> &CqRing {
        &self.ring
    }
}
