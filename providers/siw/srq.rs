//! siw shared receive queues: the driver response of create SRQ and the
//! mapped array of `struct siw_rqe`.

use core::mem::size_of;

use rustix::fd::AsFd;
use static_assertions::const_assert_eq;
use zerocopy::FromBytes;

use super::cq::SIW_INVAL_UOBJ_KEY;
use crate::abi::abi_struct;
use crate::error::{Error, ErrorKind, Result};
use crate::mmap::Mapping;

abi_struct! {
    /// `struct siw_uresp_create_srq`.
    #[repr(C)]
    pub struct CreateSrqResp {
        /// Number of RQEs in the mapped array.
        pub num_rqe: u32,
        /// Padding.
        pub pad: u32,
        /// The `mmap` offset of the array.
        pub srq_key: u64,
    }
}
const_assert_eq!(size_of::<CreateSrqResp>(), 16);

/// `sizeof(struct siw_rqe)`: id, flags, num_sge, opcode, unused, 6 SGEs.
pub const RQE_SIZE: usize = 112;

/// Maps `n` elements of `elem` bytes at `key`, refusing siw's invalid key.
pub(crate) fn map_array<Fd: AsFd>(
    verb: &'static str,
    fd: Fd,
    key: u64,
    n: u32,
    elem: usize,
) -> Result<Mapping> {
    let bad = || Error::new(verb, ErrorKind::Malformed);
    if key == SIW_INVAL_UOBJ_KEY || n == 0 {
        return Err(bad());
    }
    let len = (n as usize).checked_mul(elem).ok_or_else(bad)?;
    Mapping::new(verb, fd, key, len)
}

/// The user-space side of a siw SRQ.
#[derive(Debug)]
pub struct SiwSrq {
    /// The RQE array, kept mapped for the SRQ's life (siw's data path
    /// is not implemented; nothing reads it).
    _map: Mapping,
    num_rqe: u32,
}

impl SiwSrq {
    /// Maps `num_rqe * sizeof(siw_rqe)` bytes at `srq_key` from the create
    /// response `drv_out`.
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, drv_out: &[u8]) -> Result<Self> {
        let resp = CreateSrqResp::read_from_bytes(drv_out)
            .map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
        let map = map_array(verb, fd, resp.srq_key, resp.num_rqe, RQE_SIZE)?;
        Ok(Self {
            _map: map,
            num_rqe: resp.num_rqe,
        })
    }

    /// Number of RQEs in the array.
    pub fn num_rqe(&self) -> u32 {
        self.num_rqe
    }
}
