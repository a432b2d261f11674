//! siw through the provider seam ([`crate::providers::seam`]): its match
//! rule, its capabilities (no CQ resize, memory windows, address handles
//! or SRQ query: refused before the kernel, as libsiw leaves those ops
//! out), and the hooks that send each create command and map the arrays
//! the kernel names in the driver response.

use core::mem::MaybeUninit;

use rustix::fd::BorrowedFd;
use zerocopy::{FromZeros, IntoBytes};

use super::cq::SiwCq;
use super::mr::{SiwUreqRegMr, SiwUrespRegMr};
use super::post::SendLimits;
use super::ring::RecvRing;
use super::qp::SiwQp;
use super::srq::SiwSrq;
use super::{poll, post, straight};
use crate::abi::uverbs::{CreateCq, ModifySrq, RegMr, RegMrResp};
use crate::abi::RdmaDriverId;
use crate::cmd::device::{get_context, ContextReply};
use crate::cmd::channel::RingFailed;
use crate::cmd::Channel;
use crate::error::Result;
use crate::providers::claim::Claim;
use crate::providers::seam::{
    no_recv_queue, Caps, DriverCmd, Provider, ProviderContext, ProviderCq, ProviderQp, ProviderSrq, ResizeFailed,
    QpCreateCmd, SrqCreateCmd, StraightWr,
};
use crate::qp::kind::QpType;
use crate::wc::{Wc, WcOut};
use crate::wr::{PostError, RecvWr, SendWr, Sge};

/// The siw provider (SoftiWARP).
#[derive(Clone, Copy, Debug)]
pub struct Siw;

impl Provider for Siw {
    const NAME: &'static str = "siw";
    const DRIVER_ID: RdmaDriverId = RdmaDriverId::SIW;
    const NAME_PREFIX: Option<&'static str> = None;
    const MIN_ABI: u32 = 1;
    const MAX_ABI: u32 = 1;
    const CAPS: Caps = Caps {
        iwarp: true,
        roce: false,
        // `siw_mr_add_mem` keeps `start`: siw ignores `hca_va`.
        addresses_regions_by_iova: false,
        cq_resize: false,
        cqe_size_choice: false,
        memory_windows: false,
        address_handles: false,
        query_srq: false,
        multicast: false,
        // RDMA WRITE, SEND, RDMA READ, SEND with invalidate: no immediate
        // data, atomics, local invalidate or memory windows.
        send_ops: 1 << 0 | 1 << 2 | 1 << 4 | 1 << 9,
        doorbell_names_qp: false,
        notify_names_cq: false,
        refuses_posts_in_error: true,
        // rdma-core's siw has no create_qp_ex (ibv_create_qp_ex with any
        // creation flag is EOPNOTSUPP).
        qp_create_flags: 0,
        parent_domains: false,
        query_qp_send_caps_from_library: false,
    };
    type Context = SiwContext;
    type Cq = SiwCq;
    type Qp = SiwQp;
    type Srq = SiwSrq;
}

/// A siw context: the device id of `struct siw_uresp_alloc_ctx`.
#[derive(Debug)]
pub struct SiwContext {
    dev_id: u32,
}

impl ProviderContext for SiwContext {
    fn open(chan: &Channel) -> Result<(ContextReply, Self)> {
        let mut drv_out = [0u8; 8]; // struct siw_uresp_alloc_ctx
        let reply = get_context(chan, &[], &mut drv_out)?;
        let dev_id = u32::from_ne_bytes([drv_out[0], drv_out[1], drv_out[2], drv_out[3]]);
        Ok((reply, SiwContext { dev_id }))
    }

    fn dev_id(&self) -> u32 {
        self.dev_id
    }

    /// siw's kernel driver requires `siw_ureq_reg_mr` and answers
    /// `siw_uresp_reg_mr` (rdma-core `siw_reg_mr`), refusing the bare
    /// command with `EINVAL`.
    fn reg_mr(&self, dc: &mut DriverCmd<'_, RegMr>) -> Result<RegMrResp> {
        let req = SiwUreqRegMr::new_zeroed();
        let mut out = SiwUrespRegMr::new_zeroed();
        dc.send(req.as_bytes(), out.as_mut_bytes())
    }
}

impl ProviderCq for SiwCq {
    type Ctx = SiwContext;

    fn create(_: &SiwContext, dc: &mut DriverCmd<'_, CreateCq>) -> Result<Self> {
        let mut drv_out = [0u8; 16];
        dc.send(&[], &mut drv_out)?;
        SiwCq::map(dc.verb(), dc.channel(), &drv_out)
    }

    /// A store into the mapped control word, no system call.
    fn req_notify(&self, _: &SiwContext, _: &Channel, _: u32, solicited_only: bool) -> Result<()> {
        self.arm(solicited_only);
        Ok(())
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        poll::is_empty(self.ring())
    }

    #[inline(always)]
    fn poll<S: WcOut>(&self, out: &mut [S]) -> core::result::Result<usize, Claim> {
        poll::poll(self.ring(), out)
    }

    #[inline(always)]
    fn poll_nonempty(&self, out: &mut [MaybeUninit<Wc>]) -> core::result::Result<usize, Claim> {
        poll::poll_nonempty(self.ring(), out)
    }

    #[inline(always)]
    fn poll_held<S: WcOut>(&self, out: &mut [S]) -> core::result::Result<usize, Claim> {
        poll::copy_run(self.ring(), out)
    }

    #[inline(always)]
    fn poll_leave<S: WcOut>(cq: crate::swap_cell::Held<'_, Self>, out: &mut [S]) -> Result<usize> {
        poll::poll_leave(cq, out)
    }

    #[inline(always)]
    fn poll_leave_wait(cq: crate::swap_cell::Held<'_, Self>, out: &mut [MaybeUninit<Wc>]) -> i32 {
        poll::poll_leave_wait(cq, out)
    }

    #[inline(always)]
    fn poll_with(&self, max: usize, f: impl FnMut(&Wc)) -> core::result::Result<usize, Claim> {
        poll::poll_with(self.ring(), max, f)
    }

    fn ring_slots(&self) -> u32 {
        self.num_cqe()
    }

    fn notify_flags(&self) -> Option<u32> {
        Some(SiwCq::notify_flags(self))
    }
}

impl ProviderQp for SiwQp {
    type Ctx = SiwContext;

    fn create<C: QpCreateCmd>(_: &SiwContext, dc: &mut DriverCmd<'_, C>) -> Result<Self> {
        let mut drv_out = [0u8; 32];
        let resp = *C::base(&dc.send(&[], &mut drv_out)?);
        let core = dc.core().request();
        let lim = SendLimits::new(resp.max_send_sge, resp.max_inline_data, core.sq_sig_all != 0);
        SiwQp::map(dc.verb(), dc.channel(), &drv_out, core.is_srq != 0, resp.qp_handle, lim)
    }

    #[inline(always)]
    fn post_send(&mut self, dev: BorrowedFd<'_>, _: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        SiwQp::post_send(self, dev, wrs)
    }

    #[inline(always)]
    fn post_recv(&mut self, max_sge: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        let Some(rq) = self.rq_mut() else { return Err(no_recv_queue()) };
        let mut prod = rq.producer_mut();
        if post::give_recv_one(&mut prod, max_sge, wrs) {
            prod.advance(1);
            return Ok(());
        }
        drop(prod);
        // Out of line and in tail position: the one-request path above
        // keeps no register and no stack frame for it.
        post_recv_general(rq, max_sge, wrs)
    }

    #[inline(always)]
    fn post_send_straight<W: StraightWr + ?Sized>(
        &mut self,
        dev: BorrowedFd<'_>,
        qp_type: QpType,
        s: &W,
    ) -> Option<core::result::Result<(), RingFailed>> {
        self.post_straight(dev, qp_type, s)
    }

    #[inline(always)]
    fn post_recv_straight(&mut self, max_sge: u32, wr_id: u64, sge: Option<&Sge>) -> bool {
        match self.rq_mut() {
            Some(rq) => straight::post_recv_straight(rq.producer_mut(), max_sge, wr_id, sge),
            None => false,
        }
    }

    fn queue_slots(&self) -> (u32, Option<u32>) {
        (self.num_sqe(), self.rq().map(|_| self.num_rqe()))
    }
}

/// A QP's `ibv_post_recv` past its one-request path: lists and refusals.
#[inline(never)]
fn post_recv_general(rq: &mut RecvRing, max_sge: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
    post::post_recv_list("ibv_post_recv", rq.producer_mut(), max_sge, wrs)
}

impl ProviderSrq for SiwSrq {
    type Ctx = SiwContext;

    fn create<C: SrqCreateCmd>(_: &SiwContext, dc: &mut DriverCmd<'_, C>) -> Result<Self> {
        let mut drv_out = [0u8; 16];
        dc.send(&[], &mut drv_out)?;
        SiwSrq::map(dc.verb(), dc.channel(), &drv_out)
    }

    /// siw answers a resize with `EOPNOTSUPP`; its ring never moves.
    fn modify(&mut self, _: &SiwContext, dc: &mut DriverCmd<'_, ModifySrq>, _: bool) -> core::result::Result<(), ResizeFailed> {
        dc.send(&[], &mut [])?;
        Ok(())
    }

    fn set_limit(&self, _: &SiwContext, dc: &mut DriverCmd<'_, ModifySrq>) -> Result<()> {
        dc.send(&[], &mut [])
    }

    #[inline(always)]
    fn post_recv(&self, max_sge: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        post::post_recv("ibv_post_srq_recv", self.ring().producer_shared(), max_sge, wrs)
    }

    fn ring_slots(&self) -> u32 {
        self.num_rqe()
    }
}
