//! rxe shared receive queues: the driver response of create SRQ, the
//! driver command of modify SRQ (through which the kernel returns the new
//! ring after a resize), and the mapped receive ring.

use core::mem::size_of;

use rustix::fd::AsFd;
use static_assertions::const_assert_eq;
use zerocopy::FromBytes;

use super::queue::{Mminfo, Queue, RecvQueue};
use crate::abi::abi_struct;
use crate::error::{Error, ErrorKind, Result};

abi_struct! {
    /// `struct rxe_create_srq_resp`.
    #[repr(C)]
    pub struct CreateSrqResp {
        /// The receive ring's mapping.
        pub mi: Mminfo,
        /// The SRQ number.
        pub srq_num: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<CreateSrqResp>(), 24);

abi_struct! {
    /// `struct rxe_modify_srq_cmd`: the user address of a [`Mminfo`] that
    /// the kernel fills in when it resizes the ring (rxe writes it there
    /// instead of into the response).
    #[repr(C)]
    pub struct ModifySrqCmd {
        /// User address of a `struct mminfo`.
        pub mmap_info_addr: u64,
    }
}
const_assert_eq!(size_of::<ModifySrqCmd>(), 8);

/// The user-space side of an rxe SRQ.
#[derive(Debug)]
pub struct RxeSrq {
    queue: RecvQueue,
    srq_num: u32,
}

impl RxeSrq {
    /// Maps the ring named in the create response `drv_out`.
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, drv_out: &[u8]) -> Result<Self> {
        let resp = CreateSrqResp::read_from_bytes(drv_out)
            .map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
        let queue = Queue::map(verb, fd, resp.mi)?;
        Ok(Self {
            queue,
            srq_num: resp.srq_num,
        })
    }

    /// Replaces the ring with the one the kernel described in `mi` after a
    /// resize. On a mapping failure the old ring is kept.
    pub fn remap<Fd: AsFd>(&mut self, verb: &'static str, fd: Fd, mi: Mminfo) -> Result<()> {
        self.queue = Queue::map(verb, fd, mi)?;
        Ok(())
    }

    /// The SRQ number rxe assigned.
    pub fn srq_num(&self) -> u32 {
        self.srq_num
    }

    /// The receive ring.
    pub fn queue(&self) -> &RecvQueue {
        &self.queue
    }
}
