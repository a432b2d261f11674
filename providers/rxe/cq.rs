//! rxe completion queues: the driver response of create/resize CQ and the
//! mapped completion ring (elements are `struct ib_uverbs_wc`).

use core::mem::size_of;

use rustix::fd::AsFd;
use static_assertions::const_assert_eq;
use zerocopy::FromBytes;

use super::queue::{CompletionQueue, Mminfo, Queue};
use crate::abi::abi_struct;
use crate::error::{Error, ErrorKind, Result};

abi_struct! {
    /// `struct rxe_create_cq_resp` (and `struct rxe_resize_cq_resp`, which
    /// has the same layout): where the CQ ring is.
    #[repr(C)]
    pub struct CreateCqResp {
        /// The ring's mapping.
        pub mi: Mminfo,
    }
}
const_assert_eq!(size_of::<CreateCqResp>(), 16);

/// Bytes of driver response that create and resize CQ return.
pub const CQ_RESP_LEN: usize = size_of::<CreateCqResp>();

/// The user-space side of an rxe CQ: its mapped completion ring.
#[derive(Debug)]
pub struct RxeCq {
    queue: CompletionQueue,
}

impl RxeCq {
    /// Maps the ring named in the driver response `drv_out` and checks
    /// that an element can hold a `struct ib_uverbs_wc` (as rdma-core's
    /// `rxe_create_cq` does).
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, drv_out: &[u8]) -> Result<Self> {
        let resp = CreateCqResp::read_from_bytes(drv_out)
            .map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
        // `Queue::map` refuses an element too short for a `Wc`.
        Ok(Self { queue: Queue::map(verb, fd, resp.mi)? })
    }

    /// The completion ring.
    pub fn queue(&self) -> &CompletionQueue {
        &self.queue
    }
}
