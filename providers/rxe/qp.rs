//! rxe queue pairs: the driver response of create QP and the two mapped
//! rings (send queue always, receive queue unless the QP uses an SRQ).

use core::mem::size_of;

use rustix::fd::AsFd;
use static_assertions::const_assert_eq;
use zerocopy::FromBytes;

use super::queue::{Mminfo, Queue};
use crate::abi::abi_struct;
use crate::error::{Error, ErrorKind, Result};

abi_struct! {
    /// `struct rxe_create_qp_resp`.
    #[repr(C)]
    pub struct CreateQpResp {
        /// The receive queue's mapping (unused with an SRQ).
        pub rq_mi: Mminfo,
        /// The send queue's mapping.
        pub sq_mi: Mminfo,
    }
}
const_assert_eq!(size_of::<CreateQpResp>(), 32);

/// The user-space side of an rxe QP.
#[derive(Debug)]
pub struct RxeQp {
    sq: Queue,
    rq: Option<Queue>,
}

impl RxeQp {
    /// Maps the rings named in the create response `drv_out`: the SQ, and
    /// the RQ unless `has_srq` (as rdma-core's `map_queue_pair`).
    pub fn map<Fd: AsFd>(
        verb: &'static str,
        fd: Fd,
        drv_out: &[u8],
        has_srq: bool,
    ) -> Result<Self> {
        let resp = CreateQpResp::read_from_bytes(drv_out)
            .map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
        let rq = if has_srq {
            None
        } else {
            Some(Queue::map(verb, fd.as_fd(), resp.rq_mi)?)
        };
        let sq = Queue::map(verb, fd, resp.sq_mi)?;
        Ok(Self { sq, rq })
    }

    /// The send ring.
    pub fn sq(&self) -> &Queue {
        &self.sq
    }

    /// The receive ring (`None` with an SRQ).
    pub fn rq(&self) -> Option<&Queue> {
        self.rq.as_ref()
    }

    /// The send ring, for the producer.
    pub fn sq_mut(&mut self) -> &mut Queue {
        &mut self.sq
    }

    /// The receive ring, for the producer (`None` with an SRQ).
    pub fn rq_mut(&mut self) -> Option<&mut Queue> {
        self.rq.as_mut()
    }
}
