//! siw shared receive queues: the driver response of create SRQ and the
//! mapped array of `struct siw_rqe`.

use rustix::fd::AsFd;
use zerocopy::FromBytes;

use super::abi::SiwUrespCreateSrq;
use super::ring::RecvRing;
use crate::error::{Error, ErrorKind, Result};

/// `struct siw_uresp_create_srq`.
pub type CreateSrqResp = SiwUrespCreateSrq;

/// `sizeof(struct siw_rqe)`.
pub const RQE_SIZE: usize = core::mem::size_of::<super::abi::SiwRqe>();

/// The user-space side of a siw SRQ.
#[derive(Debug)]
pub struct SiwSrq {
    ring: RecvRing,
}

impl SiwSrq {
    /// Maps `num_rqe * sizeof(siw_rqe)` bytes at `srq_key` from the create
    /// response `drv_out`.
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, drv_out: &[u8]) -> Result<Self> {
        let resp = CreateSrqResp::read_from_bytes(drv_out).map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
        Ok(Self { ring: RecvRing::map(verb, fd, resp.srq_key, resp.num_rqe, 0)? })
    }

    /// Number of RQEs in the array.
    pub fn num_rqe(&self) -> u32 {
        self.ring.len()
    }

    /// The RQE array (posted to through its shared producer).
    #[inline(always)]
    pub fn ring(&self) -> &RecvRing {
        &self.ring
    }
}
