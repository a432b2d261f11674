//! Shared receive queues (`struct ibv_srq`): create, modify (resize,
//! limit), query, destroy.
//!
//! The receive ring is kernel memory mapped into the process and owned by
//! the [`Srq`]; it is unmapped only after the kernel destroyed the SRQ (or,
//! on an rxe resize, after the kernel switched to the new ring).
//!
//! The SRQ limit: after [`Srq::modify`] sets a nonzero `srq_limit`, the
//! device raises one `IBV_EVENT_SRQ_LIMIT_REACHED` async event when the
//! number of posted receives drops below it, and disarms (the limit reads
//! back as 0). Observing that needs posted receives, i.e. the data path.

use core::sync::atomic::{AtomicU32, Ordering};

use zerocopy::FromZeros;

use crate::abi::ioctl_verbs::SRQT_XRC;
use crate::abi::uverbs::{CreateSrq, CreateXsrq, DestroySrq, ModifySrq, QuerySrq};
use crate::context::Context;
use crate::cq::Cq;
use crate::error::{Error, ErrorKind, Result};
use crate::pd::{DestroyError, Pd};
use crate::providers::seam::{DriverCmd, ResizeFailed};
use crate::providers::AnySrq;
use crate::swap_cell::SwapCell;
use crate::xrc::Xrcd;

/// `IBV_SRQ_MAX_WR`: resize the SRQ.
const IBV_SRQ_MAX_WR: u32 = 1 << 0;
/// `IBV_SRQ_LIMIT`: set (arm) the limit.
const IBV_SRQ_LIMIT: u32 = 1 << 1;

/// What to ask for when creating an SRQ (`struct ibv_srq_init_attr`'s
/// `attr`).
#[doc(alias = "ibv_srq_init_attr")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqInitAttr {
    /// Receive work requests the SRQ must hold (at least 1).
    pub max_wr: u32,
    /// Scatter/gather entries per receive work request.
    pub max_sge: u32,
    /// Limit threshold; 0 = not armed.
    pub srq_limit: u32,
}

/// An SRQ's attributes (`struct ibv_srq_attr`).
#[doc(alias = "ibv_srq_attr")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// Receive work requests the SRQ holds.
    pub max_wr: u32,
    /// Scatter/gather entries per receive work request.
    pub max_sge: u32,
    /// Limit threshold (0 = not armed).
    pub srq_limit: u32,
}

/// What [`Srq::modify`] changes (`ibv_modify_srq`'s `attr_mask`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqModify {
    /// `IBV_SRQ_MAX_WR`: resize to hold at least this many requests.
    pub max_wr: Option<u32>,
    /// `IBV_SRQ_LIMIT`: arm the limit event at this level (0 disarms).
    pub srq_limit: Option<u32>,
}

/// The provider's user-space side of an SRQ (its ring), or `Dead`.
type Ring = AnySrq;

/// A shared receive queue (`struct ibv_srq`).
#[doc(alias = "ibv_srq")]
#[derive(Debug)]
pub struct Srq<'a> {
    pd: &'a Pd<'a>,
    /// XRC SRQs borrow their domain and CQ.
    xrc: Option<(&'a Xrcd<'a>, &'a Cq<'a>)>,
    handle: u32,
    user_handle: u64,
    /// Granted; changed by a resize.
    max_wr: AtomicU32,
    max_sge: u32,
    /// The mapped ring: shared by posters, replaced by a resize (see
    /// `src/swap_cell.rs`).
    ring: SwapCell<Ring>,
    live: bool,
}

impl<'a> Srq<'a> {
    /// `ibv_create_srq`: creates an SRQ in `pd`. The kernel may round
    /// `max_wr`/`max_sge` up; [`Srq::max_wr`] and [`Srq::max_sge`] tell
    /// the actual values. Whether `max_wr` may be 0 is the provider's and
    /// kernel's to say, as in rdma-core (libibverbs checks nothing): mlx5
    /// takes it (libmlx5 and mlx5_ib size the queue for `max_wr + 1`, and
    /// the SRQ holds no receive: [`Srq::max_wr`] is 0), the rxe and siw
    /// kernels refuse it (`EINVAL`). Values above the device limits are
    /// refused by the provider or the kernel.
    #[doc(alias = "ibv_create_srq")]
    pub fn create(pd: &'a Pd<'a>, attr: SrqInitAttr) -> Result<Self> {
        Self::create_inner("ibv_create_srq", pd, attr, None)
    }

    /// `ibv_create_srq_ex` with `IBV_SRQT_XRC`: an SRQ in XRC domain `xrcd`
    /// whose completions go to `cq`. Reachable only where
    /// [`Xrcd::open`] works (not on rxe or siw).
    #[doc(alias = "ibv_create_srq_ex")]
    pub fn create_xrc(
        pd: &'a Pd<'a>,
        xrcd: &'a Xrcd<'a>,
        cq: &'a Cq<'a>,
        attr: SrqInitAttr,
    ) -> Result<Self> {
        Self::create_inner("ibv_create_srq_ex", pd, attr, Some((xrcd, cq)))
    }

    fn create_inner(
        verb: &'static str,
        pd: &'a Pd<'a>,
        attr: SrqInitAttr,
        xrc: Option<(&'a Xrcd<'a>, &'a Cq<'a>)>,
    ) -> Result<Self> {
        if attr.max_wr > i32::MAX as u32 || attr.max_sge > i32::MAX as u32 {
            return Err(Error::new(verb, ErrorKind::InvalidArgument));
        }
        let ctx = pd.context();
        let user_handle = crate::user_handle::next();
        let state = ctx.provider_state();
        let (ring, resp) = match xrc {
            None => {
                let mut cmd = CreateSrq::new_zeroed();
                cmd.user_handle = user_handle;
                cmd.pd_handle = pd.handle();
                cmd.max_wr = attr.max_wr;
                cmd.max_sge = attr.max_sge;
                cmd.srq_limit = attr.srq_limit;
                let mut dc = DriverCmd::new(ctx.channel(), verb, cmd);
                let made = AnySrq::create(state, &mut dc);
                dc.finish(made, |r| destroy_cmd(ctx, r.srq_handle))?
            }
            Some((xrcd, cq)) => {
                let mut cmd = CreateXsrq::new_zeroed();
                cmd.user_handle = user_handle;
                cmd.srq_type = SRQT_XRC;
                cmd.pd_handle = pd.handle();
                cmd.max_wr = attr.max_wr;
                cmd.max_sge = attr.max_sge;
                cmd.srq_limit = attr.srq_limit;
                cmd.xrcd_handle = xrcd.handle();
                cmd.cq_handle = cq.handle();
                let mut dc = DriverCmd::new(ctx.channel(), verb, cmd);
                let made = AnySrq::create(state, &mut dc);
                dc.finish(made, |r| destroy_cmd(ctx, r.srq_handle))?
            }
        };
        Ok(Self {
            pd,
            xrc,
            handle: resp.srq_handle,
            user_handle,
            max_wr: AtomicU32::new(resp.max_wr),
            max_sge: resp.max_sge,
            ring: SwapCell::new(ring),
            live: true,
        })
    }

    /// The kernel's handle for this SRQ.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The value the kernel reports in this SRQ's async events.
    pub fn user_handle(&self) -> u64 {
        self.user_handle
    }

    /// The XRC domain, for an XRC SRQ.
    pub fn xrcd(&self) -> Option<&'a Xrcd<'a>> {
        self.xrc.map(|(x, _)| x)
    }

    /// The PD this SRQ belongs to.
    pub fn pd(&self) -> &'a Pd<'a> {
        self.pd
    }

    /// Receive work requests the SRQ holds (as the kernel granted, updated
    /// by a resize).
    pub fn max_wr(&self) -> u32 {
        self.max_wr.load(Ordering::Relaxed)
    }

    /// Scatter/gather entries per receive work request (as granted).
    pub fn max_sge(&self) -> u32 {
        self.max_sge
    }

    /// The SRQ number the device gave it, where user space learns it
    /// (rxe: `rxe_create_srq_resp.srq_num`); `None` on other providers.
    pub fn srq_num(&self) -> Option<u32> {
        self.ring.enter_wait().srq_num()
    }

    /// Slots of the mapped receive ring as its provider counts them (rxe:
    /// `index_mask + 1`; siw: the RQEs of the array,
    /// `siw_uresp_create_srq.num_rqe`); `None` on a dead SRQ.
    pub fn ring_slots(&self) -> Option<u32> {
        self.ring.enter_wait().ring_slots()
    }

    fn ctx(&self) -> &'a Context {
        self.pd.context()
    }

    /// `ibv_modify_srq`: resizes the SRQ (`max_wr`, rxe only: siw answers
    /// `EOPNOTSUPP`, an `Unsupported` error) and/or arms the limit event
    /// (`srq_limit`). On rxe a resize moves the ring: the kernel writes the
    /// new mapping through the address passed in `rxe_modify_srq_cmd`, and
    /// the new ring replaces the old one, with the receives already posted.
    ///
    /// Takes `&self`, as in C: QPs that use the SRQ, and threads posting
    /// to it, keep their references. A post on another thread waits while
    /// the ring is replaced (one system call and one `mmap`); the resize
    /// waits a bounded time for posts in progress, and if they do not
    /// finish in time it is a `Busy` error and nothing changed.
    #[doc(alias = "ibv_modify_srq")]
    pub fn modify(&self, change: SrqModify) -> Result<()> {
        const VERB: &str = "ibv_modify_srq";
        if let (None, Some(limit)) = (change.max_wr, change.srq_limit) {
            // The ring stays: no need to hold it.
            return self.set_limit(limit);
        }
        let mut cmd = ModifySrq::new_zeroed();
        cmd.srq_handle = self.handle;
        if let Some(max_wr) = change.max_wr {
            if max_wr == 0 || max_wr > i32::MAX as u32 {
                return Err(Error::new(VERB, ErrorKind::InvalidArgument));
            }
            cmd.attr_mask |= IBV_SRQ_MAX_WR;
            cmd.max_wr = max_wr;
        }
        if let Some(limit) = change.srq_limit {
            cmd.attr_mask |= IBV_SRQ_LIMIT;
            cmd.srq_limit = limit;
        }
        let ctx = self.ctx();
        let Some(mut ring) = self.ring.exclusive() else {
            return Err(Error::new(VERB, ErrorKind::Busy).with_detail("receives were being posted to the SRQ meanwhile, or another resize ran"));
        };
        let mut dc = DriverCmd::new(ctx.channel(), VERB, cmd);
        match ring.modify(ctx.provider_state(), &mut dc, change.max_wr.is_some()) {
            Ok(()) => {}
            Err(ResizeFailed::Unchanged(e)) => return Err(e),
            Err(ResizeFailed::Dead(e)) => {
                *ring = AnySrq::Dead;
                return Err(e.with_detail("the new ring could not be mapped: the SRQ is now dead (every later call fails)"));
            }
        }
        drop(ring);
        if change.max_wr.is_some() {
            // The granted size (the kernel may round up).
            self.max_wr.store(self.query()?.max_wr, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `ibv_modify_srq` with `IBV_SRQ_LIMIT` only: arms the limit event at
    /// `srq_limit` (0 disarms). Unlike [`Srq::modify`] it takes `&self`:
    /// the ring does not move, so QPs sharing the SRQ may keep using it.
    #[doc(alias = "ibv_modify_srq")]
    pub fn set_limit(&self, srq_limit: u32) -> Result<()> {
        const VERB: &str = "ibv_modify_srq";
        let mut cmd = ModifySrq::new_zeroed();
        cmd.srq_handle = self.handle;
        cmd.attr_mask = IBV_SRQ_LIMIT;
        cmd.srq_limit = srq_limit;
        let ctx = self.ctx();
        let ring = self.ring.enter_wait();
        ring.set_limit(ctx.provider_state(), &mut DriverCmd::new(ctx.channel(), VERB, cmd))
    }

    /// `ibv_post_srq_recv`: queues receive work requests on the SRQ (no
    /// system call).
    ///
    /// All-or-nothing: every request is checked (SGE count) and the ring
    /// must have room for the whole list; if not, nothing is written and
    /// the [`PostError`](crate::wr::PostError) names the request. Posting
    /// takes `&self` because QPs share the SRQ: posters on several
    /// threads are serialised by an atomic claim flag (uncontended: one
    /// compare-exchange), never a system call.
    #[doc(alias = "ibv_post_srq_recv")]
    #[inline]
    pub fn post_recv(
        &self,
        wrs: &[crate::wr::RecvWr<'_>],
    ) -> core::result::Result<(), crate::wr::PostError> {
        if wrs.is_empty() {
            return Ok(());
        }
        // A resize on another thread holds the ring for one system call
        // and one mmap: posters wait for it, as they wait for each other.
        let ring = self.ring.enter_wait();
        ring.post_recv(self.max_sge, wrs)
    }

    /// `ibv_query_srq`: the SRQ's current attributes.
    #[doc(alias = "ibv_query_srq")]
    pub fn query(&self) -> Result<SrqAttr> {
        let mut cmd = QuerySrq::new_zeroed();
        cmd.srq_handle = self.handle;
        let r = self
            .ctx()
            .channel()
            .exec("ibv_query_srq", &cmd, &[], &mut [])?;
        Ok(SrqAttr {
            max_wr: r.max_wr,
            max_sge: r.max_sge,
            srq_limit: r.srq_limit,
        })
    }

    /// `ibv_destroy_srq`: destroys the SRQ, then unmaps its ring. On
    /// failure (`EBUSY` while a QP uses it) the SRQ comes back with the
    /// error. On success returns the number of async events the kernel
    /// delivered for it.
    #[doc(alias = "ibv_destroy_srq")]
    #[allow(clippy::result_large_err)] // the SRQ comes back by value; no heap
    pub fn destroy(mut self) -> core::result::Result<u32, DestroyError<Self>> {
        match destroy_cmd(self.ctx(), self.handle) {
            Ok(n) => {
                self.live = false;
                Ok(n)
            }
            Err(error) => Err(DestroyError {
                error,
                object: self,
            }),
        }
    }
}

fn destroy_cmd(ctx: &Context, handle: u32) -> Result<u32> {
    let mut cmd = DestroySrq::new_zeroed();
    cmd.srq_handle = handle;
    ctx.channel()
        .exec("ibv_destroy_srq", &cmd, &[], &mut [])
        .map(|r| r.events_reported)
}

impl Drop for Srq<'_> {
    fn drop(&mut self) {
        // The ring mapping is a field: unmapped after the destroy below.
        if self.live {
            if let Err(e) = destroy_cmd(self.ctx(), self.handle) {
                crate::error::report_drop_failure(e);
            }
        }
    }
}
