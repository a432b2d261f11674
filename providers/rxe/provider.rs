//! rxe through the provider seam ([`crate::providers::seam`]): its match
//! rule, its capabilities, and the hooks that send each create command
//! and map the rings the kernel names in the driver response.

use core::mem::MaybeUninit;

use rustix::fd::BorrowedFd;
use zerocopy::{FromZeros, IntoBytes};

use super::ah::RxeCreateAhResp;
use super::cq::{RxeCq, CQ_RESP_LEN};
use super::post::{self, SendLimits};
use super::qp::RxeQp;
use super::queue::{Mminfo, RecvQueue};
use super::srq::{ModifySrqCmd, RxeSrq};
use crate::abi::uverbs::{
    CreateAh, CreateAhResp, CreateCq, ModifySrq, ReqNotifyCq, ResizeCq,
};
use crate::abi::RdmaDriverId;
use crate::cmd::channel::RingFailed;
use crate::cmd::device::{get_context, ContextReply};
use crate::cmd::Channel;
use crate::error::Result;
use crate::providers::claim::Claim;
use crate::providers::seam::{QpCreateCmd, SrqCreateCmd, 
    no_recv_queue, Caps, DriverCmd, Provider, ProviderContext, ProviderCq, ProviderQp, ProviderSrq, ResizeFailed,
    StraightWr,
};
use crate::qp::kind::QpType;
use crate::wc::{Wc, WcOut};
use crate::wr::{PostError, RecvWr, SendWr, Sge};

/// The rxe provider (Soft-RoCE, `rdma_rxe`).
#[derive(Clone, Copy, Debug)]
pub struct Rxe;

impl Provider for Rxe {
    const NAME: &'static str = "rxe";
    const DRIVER_ID: RdmaDriverId = RdmaDriverId::RXE;
    const NAME_PREFIX: Option<&'static str> = Some("rxe");
    const MIN_ABI: u32 = 1;
    const MAX_ABI: u32 = 2;
    const CAPS: Caps = Caps {
        iwarp: false,
        roce: true,
        // `mr->ibmr.iova`, against which rxe checks local SGEs and peers'
        // addresses.
        addresses_regions_by_iova: true,
        cq_resize: true,
        cqe_size_choice: false,
        memory_windows: true,
        address_handles: true,
        query_srq: true,
        multicast: true,
        send_ops: !0,
        doorbell_names_qp: true,
        notify_names_cq: true,
        refuses_posts_in_error: false,
        // rdma-core's rxe_create_qp_ex takes no creation flags
        // (RXE_QP_CREATE_FLAGS_SUP is 0: EOPNOTSUPP), nor does the kernel.
        qp_create_flags: 0,
        parent_domains: false,
        query_qp_send_caps_from_library: false,
    };
    type Context = RxeContext;
    type Cq = RxeCq;
    type Qp = RxeQp;
    type Srq = RxeSrq;
}

/// An rxe context: nothing beyond the kernel's (no driver data).
#[derive(Debug)]
pub struct RxeContext;

impl ProviderContext for RxeContext {
    fn open(chan: &Channel) -> Result<(ContextReply, Self)> {
        get_context(chan, &[], &mut []).map(|r| (r, RxeContext))
    }

    fn create_ah(&self, dc: &mut DriverCmd<'_, CreateAh>) -> Result<(CreateAhResp, u32)> {
        let mut out = RxeCreateAhResp::new_zeroed();
        let resp = dc.send(&[], out.as_mut_bytes())?;
        Ok((resp, out.ah_num))
    }
}

impl ProviderCq for RxeCq {
    type Ctx = RxeContext;

    fn create(_: &RxeContext, dc: &mut DriverCmd<'_, CreateCq>) -> Result<Self> {
        let mut drv_out = [0u8; CQ_RESP_LEN];
        dc.send(&[], &mut drv_out)?;
        RxeCq::map(dc.verb(), dc.channel(), &drv_out)
    }

    fn resize(&mut self, _: &RxeContext, dc: &mut DriverCmd<'_, ResizeCq>) -> core::result::Result<(), ResizeFailed> {
        let mut drv_out = [0u8; CQ_RESP_LEN];
        dc.send(&[], &mut drv_out)?;
        // The kernel already switched rings. If mapping the new one
        // fails, the CQ is dead: the old ring is unmapped (the kernel no
        // longer writes it) and every later call fails with `Dead`
        // instead of polling a ring nobody fills.
        let verb = dc.verb();
        match super::injected_remap_failure(verb).and_then(|()| RxeCq::map(verb, dc.channel(), &drv_out)) {
            Ok(new) => {
                *self = new;
                Ok(())
            }
            Err(e) => Err(ResizeFailed::Dead(e)),
        }
    }

    fn req_notify(&self, _: &RxeContext, chan: &Channel, handle: u32, solicited_only: bool) -> Result<()> {
        let cmd = ReqNotifyCq { cq_handle: handle, solicited_only: u32::from(solicited_only) };
        chan.exec("ibv_req_notify_cq", &cmd, &[], &mut [])
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        post::is_empty(self.queue())
    }

    #[inline(always)]
    fn poll<S: WcOut>(&self, out: &mut [S]) -> core::result::Result<usize, Claim> {
        post::poll(self.queue(), out)
    }

    #[inline(always)]
    fn poll_nonempty(&self, out: &mut [MaybeUninit<Wc>]) -> core::result::Result<usize, Claim> {
        post::poll_nonempty(self.queue(), out).map(|n| n as usize)
    }

    #[inline(always)]
    fn poll_held<S: WcOut>(&self, out: &mut [S]) -> core::result::Result<usize, Claim> {
        post::poll_copy(self.queue(), out).map(|n| n as usize)
    }

    #[inline(always)]
    fn poll_leave<S: WcOut>(cq: crate::swap_cell::Held<'_, Self>, out: &mut [S]) -> Result<usize> {
        post::poll_leave(cq, out)
    }

    #[inline(always)]
    fn poll_with(&self, max: usize, f: impl FnMut(&Wc)) -> core::result::Result<usize, Claim> {
        post::poll_with(self.queue(), max, f)
    }

    fn discard_qp(&self, qp_num: u32) {
        let _ = post::discard_qp(self.queue(), qp_num);
    }

    fn ring_slots(&self) -> u32 {
        self.queue().slots()
    }
}

impl ProviderQp for RxeQp {
    type Ctx = RxeContext;

    fn create<C: QpCreateCmd>(_: &RxeContext, dc: &mut DriverCmd<'_, C>) -> Result<Self> {
        let mut drv_out = [0u8; 32];
        let resp = *C::base(&dc.send(&[], &mut drv_out)?);
        let lim = SendLimits { max_sge: resp.max_send_sge, max_inline: resp.max_inline_data };
        let has_srq = dc.core().request().is_srq != 0;
        RxeQp::map(dc.verb(), dc.channel(), &drv_out, has_srq, resp.qp_handle, lim)
    }

    #[inline(always)]
    fn post_send(&mut self, dev: BorrowedFd<'_>, qp_type: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        RxeQp::post_send(self, dev, qp_type, wrs)
    }

    #[inline(always)]
    fn post_recv(&mut self, max_sge: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        let Some(rq) = self.rq_mut() else { return Err(no_recv_queue()) };
        let mut prod = rq.producer_mut();
        if post::put_recv_first(&mut prod, max_sge, wrs) {
            prod.publish(1);
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
            Some(rq) => post::post_recv_straight(rq.producer_mut(), max_sge, wr_id, sge),
            None => false,
        }
    }

    fn queue_slots(&self) -> (u32, Option<u32>) {
        (self.sq().slots(), self.rq().map(|q| q.slots()))
    }
}

/// A QP's `ibv_post_recv` past its one-request path: lists and refusals.
#[inline(never)]
fn post_recv_general(rq: &mut RecvQueue, max_sge: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
    post::post_recv_list("ibv_post_recv", rq.producer_mut(), max_sge, wrs)
}

impl ProviderSrq for RxeSrq {
    type Ctx = RxeContext;

    fn create<C: SrqCreateCmd>(_: &RxeContext, dc: &mut DriverCmd<'_, C>) -> Result<Self> {
        let mut drv_out = [0u8; 24];
        dc.send(&[], &mut drv_out)?;
        RxeSrq::map(dc.verb(), dc.channel(), &drv_out)
    }

    fn modify(&mut self, _: &RxeContext, dc: &mut DriverCmd<'_, ModifySrq>, resize: bool) -> core::result::Result<(), ResizeFailed> {
        let mut mi = Mminfo::default();
        let mi_out: &mut Mminfo = &mut mi;
        // The kernel writes the new `struct mminfo` to this address during
        // the command; `mi_out` stays borrowed until after it (the
        // channel's invariant on addresses given to the kernel).
        let ucmd = ModifySrqCmd { mmap_info_addr: core::ptr::from_mut(mi_out).expose_provenance() as u64 };
        dc.send(ucmd.as_bytes(), &mut [])?;
        let new_mi = *mi_out;
        if resize {
            // The kernel already switched rings: if the new one cannot be
            // mapped the SRQ is dead.
            let verb = dc.verb();
            if let Err(e) = super::injected_remap_failure(verb).and_then(|()| self.remap(verb, dc.channel(), new_mi)) {
                return Err(ResizeFailed::Dead(e));
            }
        }
        Ok(())
    }

    fn set_limit(&self, _: &RxeContext, dc: &mut DriverCmd<'_, ModifySrq>) -> Result<()> {
        // rxe reads its driver command (the address for a new ring's
        // location) with every modify; with no resize it writes nothing
        // there. Same borrow rule as in `modify`.
        let mut mi = Mminfo::default();
        let mi_out: &mut Mminfo = &mut mi;
        let ucmd = ModifySrqCmd { mmap_info_addr: core::ptr::from_mut(mi_out).expose_provenance() as u64 };
        dc.send(ucmd.as_bytes(), &mut [])
    }

    #[inline(always)]
    fn post_recv(&self, max_sge: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        post::post_recv("ibv_post_srq_recv", self.queue().producer_shared(), max_sge, wrs)
    }

    fn ring_slots(&self) -> u32 {
        self.queue().slots()
    }

    fn srq_num(&self) -> Option<u32> {
        Some(RxeSrq::srq_num(self))
    }
}
