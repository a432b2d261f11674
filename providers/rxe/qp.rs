//! rxe queue pairs: the driver response of create QP and the two mapped
//! rings (send queue always, receive queue unless the QP uses an SRQ).

use core::mem::size_of;

use rustix::fd::{AsFd, BorrowedFd};
use static_assertions::const_assert_eq;
use zerocopy::FromBytes;

use super::post::{self, SendLimits};
use super::queue::{Mminfo, Queue, RecvQueue, SendQueue};
use crate::abi::abi_struct;
use crate::cmd::channel::{Doorbell, RingFailed};
use crate::error::{Error, ErrorKind, Result};
use crate::qp::kind::QpType;
use crate::wr::{PostError, SendWr};

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
    sq: SendQueue,
    rq: Option<RecvQueue>,
    /// The send capacities the kernel granted.
    lim: SendLimits,
    /// This QP's send doorbell, built once.
    doorbell: Doorbell,
}

impl RxeQp {
    /// Maps the rings named in the create response `drv_out`: the SQ, and
    /// the RQ unless `has_srq` (as rdma-core's `map_queue_pair`). `handle`
    /// and `lim` are the QP's handle and granted send capacities.
    pub fn map<Fd: AsFd>(
        verb: &'static str,
        fd: Fd,
        drv_out: &[u8],
        has_srq: bool,
        handle: u32,
        lim: SendLimits,
    ) -> Result<Self> {
        let resp = CreateQpResp::read_from_bytes(drv_out)
            .map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
        let rq = if has_srq {
            None
        } else {
            Some(Queue::map(verb, fd.as_fd(), resp.rq_mi)?)
        };
        let sq = Queue::map(verb, fd, resp.sq_mi)?;
        Ok(Self { sq, rq, lim, doorbell: Doorbell::new(handle) })
    }

    /// `ibv_post_send` on an rxe QP of transport `qp_type`: writes and
    /// publishes the requests (all or none, see [`post::post_send`]), then
    /// rings the doorbell through `dev`, the device file. A doorbell that
    /// fails is reported at index `wrs.len()`: the requests are posted,
    /// the kernel was not told.
    ///
    /// The straight path ([`post::post_gather`]) and the doorbell are
    /// inlined; everything else is one out-of-line call in tail position,
    /// so the inlined part keeps nothing in registers across a call.
    #[inline(always)]
    pub fn post_send(&mut self, dev: BorrowedFd<'_>, qp_type: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        if post::post_gather(&mut self.sq, qp_type, &self.lim, wrs) {
            return self.ring(dev, 1);
        }
        self.post_send_general(dev, qp_type, wrs)
    }

    #[inline(never)]
    fn post_send_general(&mut self, dev: BorrowedFd<'_>, qp_type: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        post::post_general(&mut self.sq, qp_type, &self.lim, wrs)?;
        if wrs.is_empty() {
            return Ok(());
        }
        self.ring(dev, wrs.len())
    }

    /// [`RxeQp::post_send`] of one request through the straight path
    /// ([`post::post_straight`]; the C library's `ibv_post_send`): `None`
    /// if that path does not take it (nothing written: post it the
    /// general way, which names any error), else the doorbell's outcome
    /// (on a failure the request is queued and the kernel was not told;
    /// [`RingFailed::error`] makes the error).
    #[inline(always)]
    pub fn post_straight<W: post::StraightWr + ?Sized>(
        &mut self,
        dev: BorrowedFd<'_>,
        qp_type: QpType,
        s: &W,
    ) -> Option<core::result::Result<(), RingFailed>> {
        if post::post_straight(&mut self.sq, qp_type, &self.lim, s) {
            Some(self.doorbell.ring_small(dev))
        } else {
            None
        }
    }

    /// Rings the doorbell after `posted` requests. A failure is made into
    /// its error out of line, in tail position: the inlined part calls
    /// nothing, so it keeps nothing in registers across a call.
    #[inline(always)]
    fn ring(&self, dev: BorrowedFd<'_>, posted: usize) -> core::result::Result<(), PostError> {
        match self.doorbell.ring_small(dev) {
            Ok(()) => Ok(()),
            Err(failed) => ring_failed(failed, posted),
        }
    }

    /// The send ring.
    pub fn sq(&self) -> &SendQueue {
        &self.sq
    }

    /// The receive ring (`None` with an SRQ).
    pub fn rq(&self) -> Option<&RecvQueue> {
        self.rq.as_ref()
    }

    /// The receive ring, for the producer (`None` with an SRQ).
    pub fn rq_mut(&mut self) -> Option<&mut RecvQueue> {
        self.rq.as_mut()
    }
}

/// A doorbell that failed after `posted` requests were queued: its error
/// (the requests stay queued; the kernel was not told).
#[cold]
#[inline(never)]
fn ring_failed(failed: RingFailed, posted: usize) -> core::result::Result<(), PostError> {
    Err(PostError { error: failed.error("ibv_post_send"), index: posted })
}
