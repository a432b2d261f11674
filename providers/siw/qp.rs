//! siw queue pairs: the driver response of create QP and the mapped SQE
//! and RQE arrays (the RQ only without an SRQ).

use core::mem::size_of;

use rustix::fd::AsFd;
use static_assertions::const_assert_eq;
use zerocopy::FromBytes;

use super::srq::{map_array, RQE_SIZE};
use crate::abi::abi_struct;
use crate::error::{Error, ErrorKind, Result};
use crate::mmap::Mapping;

abi_struct! {
    /// `struct siw_uresp_create_qp`.
    #[repr(C)]
    pub struct CreateQpResp {
        /// siw's QP id.
        pub qp_id: u32,
        /// SQEs in the mapped send array.
        pub num_sqe: u32,
        /// RQEs in the mapped receive array.
        pub num_rqe: u32,
        /// Padding.
        pub pad: u32,
        /// `mmap` offset of the send array.
        pub sq_key: u64,
        /// `mmap` offset of the receive array.
        pub rq_key: u64,
    }
}
const_assert_eq!(size_of::<CreateQpResp>(), 32);

/// `sizeof(struct siw_sqe)`: id, flags, num_sge, opcode, rkey, raddr, 6 SGEs.
pub const SQE_SIZE: usize = 120;

/// The user-space side of a siw QP.
#[derive(Debug)]
pub struct SiwQp {
    sq: Mapping,
    rq: Option<Mapping>,
    id: u32,
    num_sqe: u32,
    num_rqe: u32,
}

impl SiwQp {
    /// Maps `num_sqe * sizeof(siw_sqe)` at `sq_key` and, unless `has_srq`,
    /// `num_rqe * sizeof(siw_rqe)` at `rq_key`.
    pub fn map<Fd: AsFd>(
        verb: &'static str,
        fd: Fd,
        drv_out: &[u8],
        has_srq: bool,
    ) -> Result<Self> {
        let resp = CreateQpResp::read_from_bytes(drv_out)
            .map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
        let sq = map_array(verb, fd.as_fd(), resp.sq_key, resp.num_sqe, SQE_SIZE)?;
        let rq = if has_srq {
            None
        } else {
            Some(map_array(verb, fd, resp.rq_key, resp.num_rqe, RQE_SIZE)?)
        };
        Ok(Self {
            sq,
            rq,
            id: resp.qp_id,
            num_sqe: resp.num_sqe,
            num_rqe: resp.num_rqe,
        })
    }

    /// siw's QP id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// SQEs in the send array.
    pub fn num_sqe(&self) -> u32 {
        self.num_sqe
    }

    /// RQEs in the receive array (0-sized use with an SRQ).
    pub fn num_rqe(&self) -> u32 {
        self.num_rqe
    }

    /// The mapped send array.
    pub fn sq(&self) -> &Mapping {
        &self.sq
    }

    /// The mapped receive array (`None` with an SRQ).
    pub fn rq(&self) -> Option<&Mapping> {
        self.rq.as_ref()
    }
}
