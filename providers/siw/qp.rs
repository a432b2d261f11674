//! siw queue pairs: the driver response of create QP, the mapped SQE and
//! RQE arrays (the RQ only without an SRQ), and the send doorbell.

use rustix::fd::{AsFd, BorrowedFd};
use zerocopy::FromBytes;

use super::abi::SiwUrespCreateQp;
use super::post::{self, SendLimits};
use super::ring::{RecvRing, SendRing};
use super::straight;
use crate::providers::seam::StraightWr;
use crate::qp::kind::QpType;
use crate::cmd::channel::{Doorbell, RingFailed};
use crate::error::{Error, ErrorKind, Result};
use crate::wr::{PostError, SendWr};

/// `struct siw_uresp_create_qp`.
pub type CreateQpResp = SiwUrespCreateQp;

/// `sizeof(struct siw_sqe)`.
pub const SQE_SIZE: usize = core::mem::size_of::<super::abi::SiwSqe>();

/// The user-space side of a siw QP.
#[derive(Debug)]
pub struct SiwQp {
    sq: SendRing,
    rq: Option<RecvRing>,
    id: u32,
    lim: SendLimits,
    doorbell: Doorbell,
    /// The last doorbell failed: the kernel may not be working through
    /// the send queue although its elements are valid, so the next post
    /// rings whatever it finds.
    must_ring: bool,
}

impl SiwQp {
    /// Maps `num_sqe * sizeof(siw_sqe)` at `sq_key` and, unless `has_srq`,
    /// `num_rqe * sizeof(siw_rqe)` at `rq_key`. `handle` is the QP's
    /// handle (for the doorbell), `lim` its granted send capacities.
    pub fn map<Fd: AsFd>(
        verb: &'static str,
        fd: Fd,
        drv_out: &[u8],
        has_srq: bool,
        handle: u32,
        lim: SendLimits,
    ) -> Result<Self> {
        let resp = CreateQpResp::read_from_bytes(drv_out).map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
        let sq = SendRing::map(verb, fd.as_fd(), resp.sq_key, resp.num_sqe, 0)?;
        let rq = if has_srq { None } else { Some(RecvRing::map(verb, fd, resp.rq_key, resp.num_rqe, 0)?) };
        Ok(Self { sq, rq, id: resp.qp_id, lim, doorbell: Doorbell::new(handle), must_ring: false })
    }

    /// `ibv_post_send` on a siw QP: writes and hands over the requests
    /// (all or none, see [`post::post_send`]), then rings the doorbell
    /// through `dev` unless the kernel is still working through the
    /// queue. A doorbell that fails is reported at index `wrs.len()`: the
    /// requests are posted, the kernel was not told.
    ///
    /// The straight path ([`post::post_gather`]) and the doorbell are
    /// inlined; everything else is one out-of-line call in tail position,
    /// so the inlined part keeps nothing in registers across a call.
    #[inline(always)]
    pub fn post_send(&mut self, dev: BorrowedFd<'_>, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        match post::post_gather(&mut self.sq, &self.lim, wrs) {
            Some(ring) if ring || self.must_ring => self.ring(dev, 1),
            Some(_) => Ok(()),
            None => self.post_send_general(dev, wrs),
        }
    }

    /// Rings the doorbell after `posted` requests; a failure is reported
    /// at index `posted` (the requests are queued, the kernel was not
    /// told) and makes the next post ring whatever it finds.
    ///
    /// The flag is cleared before the system call and set again by the
    /// failure, which is made into its error out of line, in tail
    /// position: the inlined part calls nothing, so it keeps nothing in
    /// registers across a call.
    #[inline(always)]
    fn ring(&mut self, dev: BorrowedFd<'_>, posted: usize) -> core::result::Result<(), PostError> {
        self.must_ring = false;
        match self.doorbell.ring_small(dev) {
            Ok(()) => Ok(()),
            Err(failed) => self.ring_failed(failed, posted),
        }
    }

    /// [`SiwQp::ring`]'s failure: the next post must ring whatever it
    /// finds.
    #[cold]
    #[inline(never)]
    fn ring_failed(&mut self, failed: RingFailed, posted: usize) -> core::result::Result<(), PostError> {
        self.must_ring = true;
        Err(PostError { error: failed.error("ibv_post_send"), index: posted })
    }

    /// [`SiwQp::post_send`] past its straight path: lists, inline data,
    /// and every request that is refused.
    #[inline(never)]
    fn post_send_general(&mut self, dev: BorrowedFd<'_>, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        let ring = post::post_send(&mut self.sq, &self.lim, wrs)?;
        if !(ring || self.must_ring && !wrs.is_empty()) {
            return Ok(());
        }
        self.ring(dev, wrs.len())
    }

    /// [`SiwQp::post_send`] of one request through the straight path
    /// ([`straight::post_send_straight`]; the C library's
    /// `ibv_post_send`): `None` if that path does not take it (nothing
    /// written: post it the general way, which names any error), else the
    /// doorbell's outcome when one was rung (on a failure the request is
    /// queued and the kernel was not told; [`RingFailed::error`] makes the
    /// error).
    #[inline(always)]
    pub fn post_straight<W: StraightWr + ?Sized>(
        &mut self,
        dev: BorrowedFd<'_>,
        qp_type: QpType,
        s: &W,
    ) -> Option<core::result::Result<(), RingFailed>> {
        let ring = straight::post_send_straight(&mut self.sq, qp_type, &self.lim, s)?;
        if !(ring || self.must_ring) {
            return Some(Ok(()));
        }
        let r = self.doorbell.ring_small(dev);
        self.must_ring = r.is_err();
        Some(r)
    }

    /// siw's QP id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// SQEs in the send array.
    pub fn num_sqe(&self) -> u32 {
        self.sq.len()
    }

    /// RQEs in the receive array (0 with an SRQ).
    pub fn num_rqe(&self) -> u32 {
        self.rq.as_ref().map_or(0, RecvRing::len)
    }

    /// The send array.
    pub fn sq(&self) -> &SendRing {
        &self.sq
    }

    /// The receive array (`None` with an SRQ).
    pub fn rq(&self) -> Option<&RecvRing> {
        self.rq.as_ref()
    }

    /// The receive array, for the producer (`None` with an SRQ).
    pub fn rq_mut(&mut self) -> Option<&mut RecvRing> {
        self.rq.as_mut()
    }
}
