//! The provider seam: everything a provider implements to plug into the
//! object layer, and nothing else.
//!
//! A provider is a zero-sized type implementing [`Provider`]: its match
//! rule (driver id, device-name prefix, ABI range), its [`Caps`] (what it
//! cannot do is refused before the kernel, as rdma-core's dummy ops), and
//! one associated type per object that has user-space state:
//!
//! | associated type | trait | holds (rxe / siw / mlx5) |
//! |---|---|---|
//! | [`Provider::Context`] | [`ProviderContext`] | nothing / siw `dev_id` / the ucontext answer, UAR mappings |
//! | [`Provider::Cq`] | [`ProviderCq`] | mapped ring / CQE array + control word / CQ buffer + doorbell record |
//! | [`Provider::Qp`] | [`ProviderQp`] | mapped SQ/RQ + doorbell command / SQE/RQE arrays / WQ buffer, doorbell record, UAR |
//! | [`Provider::Srq`] | [`ProviderSrq`] | mapped ring / RQE array / SRQ buffer + doorbell record |
//!
//! The object layer (`src/`) never names a provider: it builds the core
//! command of each verb (`struct ib_uverbs_create_cq`, …) and hands it to
//! the provider as a [`DriverCmd`], which the provider sends once with its
//! driver data (`drv_in` after the core request, `drv_out` after the core
//! response: rxe and siw answer mmap offsets there; mlx5 sends the buffer
//! and doorbell-record addresses, the UAR index and sizes it allocated,
//! and reads back the CQ/QP/SRQ numbers). The provider may adjust the core
//! command before sending it ([`DriverCmd::core_mut`]). If the provider
//! fails after the command was sent, the object layer destroys the kernel
//! object ([`DriverCmd::sent`] says whether there is one).
//!
//! Runtime dispatch is one `match` per call over the enums that
//! [`registry!`](super::dispatch) generates from the one registration list
//! in `providers/mod.rs`; every arm calls the provider's `#[inline]`
//! methods directly, so the data path (`post_send`, `post_recv`,
//! `poll_cq`) has no indirect call (measured: BENCHMARKS.md).
//!
//! Not an `unsafe trait`: the object layer relies on nothing a provider
//! promises for soundness. A provider's own unsafe code (mapped rings,
//! doorbells) carries its own proofs, listed in SAFETY.md.

use core::fmt::Debug;
use core::mem::MaybeUninit;

use rustix::fd::BorrowedFd;
use zerocopy::FromZeros;

use super::claim::Claim;
use crate::abi::uverbs::{
    AllocPd, AllocPdResp, CreateAh, CreateAhResp, CreateCq, CreateQp, CreateQpResp, CreateSrqResp, ExCreateQp,
    ModifySrq, RegMr, RegMrResp, ResizeCq, WriteCommand,
};
use crate::abi::RdmaDriverId;
use crate::cmd::channel::RingFailed;
use crate::cmd::device::ContextReply;
use crate::cmd::Channel;
use crate::error::{Error, ErrorKind, Result};
use crate::qp::kind::{QpStateKind, QpType};
use crate::swap_cell::Held;
use crate::wc::{Wc, WcOut};
use crate::wr::{PostError, RecvWr, SendOp, SendWr, Sge};

/// What a provider can and cannot do, for the checks that refuse an
/// operation before the kernel sees it (rdma-core's dummy ops) and the
/// few places where the transport changes what the core does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caps {
    /// iWARP: Ethernet link layer, connected through TCP; addresses have
    /// no GRH, and the connection manager moves the QPs.
    pub iwarp: bool,
    /// RoCE: Ethernet link layer, addressed by GID (every address needs a
    /// GRH).
    pub roce: bool,
    /// The kernel driver addresses a memory region by the I/O virtual
    /// address it was registered with (`hca_va`, what `ibv_reg_mr_iova`
    /// sets); `false`: by its buffer address (siw ignores `hca_va`).
    pub addresses_regions_by_iova: bool,
    /// `ibv_resize_cq` exists.
    pub cq_resize: bool,
    /// A CQ's entry size may be chosen ([`CqOptions::cqe_size`](crate::CqOptions::cqe_size),
    /// libmlx5's `mlx5dv_create_cq` `cqe_size`: 64 or 128 bytes).
    pub cqe_size_choice: bool,
    /// `ibv_alloc_mw` exists.
    pub memory_windows: bool,
    /// `ibv_create_ah` exists.
    pub address_handles: bool,
    /// `ibv_query_srq` exists.
    pub query_srq: bool,
    /// `ibv_attach_mcast` / `ibv_detach_mcast` exist.
    pub multicast: bool,
    /// Send operations the device executes, as `ibv_create_qp_ex`'s
    /// `send_ops_flags` name them (`IBV_QP_EX_WITH_*`: `1 << IBV_WR_*` for
    /// the first ten, ATOMIC_WRITE is `1 << 12`): what it may ask for (`!0`:
    /// no limit beyond the library's own).
    pub send_ops: u64,
    /// The send doorbell is a kernel command naming the QP by handle (an
    /// unknown handle is the kernel's `ENOENT`).
    pub doorbell_names_qp: bool,
    /// Arming a CQ is a kernel command naming it by handle (else a store
    /// into mapped memory).
    pub notify_names_cq: bool,
    /// A post to a QP typed ERROR is refused (`WrongState`): the provider
    /// flushes only on the transition to ERROR, so such requests would
    /// never complete (siw).
    pub refuses_posts_in_error: bool,
    /// QP creation flags (`IBV_QP_CREATE_*` of `ibv_create_qp_ex`) the
    /// provider's library passes to the kernel, which then judges them
    /// for the QP type and the device; the others are refused before the
    /// kernel (`Unsupported`), as rdma-core's providers do.
    pub qp_create_flags: u32,
    /// `ibv_alloc_td` and `ibv_alloc_parent_domain` exist (libmlx5 has
    /// them; rdma-core's rxe and siw do not).
    pub parent_domains: bool,
    /// `ibv_query_qp`'s send capacities (`max_send_wr`, `max_send_sge`,
    /// `max_inline_data`) are the library's, granted at creation: the
    /// kernel answers 0 for a user QP's (mlx5_ib), and libmlx5's
    /// `mlx5_query_qp` reports its send queue's own.
    pub query_qp_send_caps_from_library: bool,
}

/// A core command on its way to the kernel, lent to the provider to add
/// its driver data. Sent at most once, through [`DriverCmd::send`].
#[derive(Debug)]
pub struct DriverCmd<'a, C: WriteCommand> {
    chan: &'a Channel,
    verb: &'static str,
    cmd: C,
    sent: Option<C::Resp>,
    cqe_size: Option<u32>,
}

impl<'a, C: WriteCommand> DriverCmd<'a, C>
where
    C::Resp: FromZeros + Copy,
{
    /// The core command `cmd` of verb `verb`, to be sent on `chan`.
    pub fn new(chan: &'a Channel, verb: &'static str, cmd: C) -> Self {
        Self { chan, verb, cmd, sent: None, cqe_size: None }
    }

    /// The command with the CQE size the caller chose (`CREATE_CQ` of a
    /// provider with [`Caps::cqe_size_choice`]).
    pub fn with_cqe_size(mut self, cqe_size: Option<u32>) -> Self {
        self.cqe_size = cqe_size;
        self
    }

    /// The CQE size the caller chose, if any (else the provider's default).
    pub fn cqe_size(&self) -> Option<u32> {
        self.cqe_size
    }

    /// The verb, for errors.
    pub fn verb(&self) -> &'static str {
        self.verb
    }

    /// The device's command channel (and file, for mappings).
    pub fn channel(&self) -> &'a Channel {
        self.chan
    }

    /// The core command as the object layer built it.
    pub fn core(&self) -> &C {
        &self.cmd
    }

    /// The core command, for a provider that adjusts it before sending
    /// (mlx5 rounds sizes as libmlx5 does).
    pub fn core_mut(&mut self) -> &mut C {
        &mut self.cmd
    }

    /// Sends the command with the provider's driver data: `drv_in` after
    /// the core request, `drv_out` filled from the bytes after the core
    /// response. A second send is refused (`InvalidArgument`): the kernel
    /// object exists once.
    pub fn send(&mut self, drv_in: &[u8], drv_out: &mut [u8]) -> Result<C::Resp> {
        if self.sent.is_some() {
            return Err(Error::new(self.verb, ErrorKind::InvalidArgument)
                .with_detail("provider bug: the command was already sent"));
        }
        let resp = self.chan.exec(self.verb, &self.cmd, drv_in, drv_out)?;
        self.sent = Some(resp);
        Ok(resp)
    }

    /// The core response, if the command was sent and succeeded.
    pub fn sent(&self) -> Option<C::Resp> {
        self.sent
    }

    /// The core response, for a provider whose library reports what it
    /// granted rather than what the kernel echoed (libmlx5 answers a QP's
    /// `max_inline_data`, `max_send_wr`, `max_recv_wr` and `max_recv_sge`
    /// from the queues it sized); `None` before a successful send.
    pub fn sent_mut(&mut self) -> Option<&mut C::Resp> {
        self.sent.as_mut()
    }

    /// The outcome of a create hook that was given this command: the
    /// object and the core response; or the hook's error, after `undo`
    /// (the object's destroy command) destroyed the kernel object if the
    /// command had created one (the provider's setup, e.g. mapping its
    /// rings, failed). A failed undo is logged through
    /// [`report_drop_failure`](crate::error::report_drop_failure): the
    /// setup error is the one to report.
    pub(crate) fn finish<T, D>(&self, made: Result<T>, undo: impl FnOnce(C::Resp) -> Result<D>) -> Result<(T, C::Resp)> {
        match (made, self.sent) {
            (Ok(t), Some(r)) => Ok((t, r)),
            (Err(e), Some(r)) => {
                if let Err(d) = undo(r) {
                    crate::error::report_drop_failure(d);
                }
                Err(e)
            }
            (Err(e), None) => Err(e),
            (Ok(_), None) => Err(Error::new(self.verb, ErrorKind::InvalidArgument)
                .with_detail("provider bug: the create command was never sent")),
        }
    }
}

/// A resize (CQ) or modify (SRQ) that failed: whether the object is as
/// it was, or dead (the kernel switched to a new ring that could not be
/// mapped: every later call fails with [`ErrorKind::Dead`]).
#[derive(Debug)]
pub enum ResizeFailed {
    /// Nothing changed.
    Unchanged(Error),
    /// The object is dead.
    Dead(Error),
}

impl From<Error> for ResizeFailed {
    fn from(e: Error) -> Self {
        ResizeFailed::Unchanged(e)
    }
}

/// A provider: its match rule, its capabilities and its per-object state.
/// Registered with one line in `providers/mod.rs`.
pub trait Provider: 'static {
    /// Short name, as rdma-core names the provider library (`rxe`).
    const NAME: &'static str;
    /// Kernel driver id (`enum rdma_driver_id`) that selects it.
    const DRIVER_ID: RdmaDriverId;
    /// Device-name prefix accepted when the driver id is unknown
    /// (sysfs-only discovery); `None` if matched by driver id only.
    const NAME_PREFIX: Option<&'static str>;
    /// PCI (vendor, device) ids it drives, matched against the device's
    /// `modalias` when the driver id is unknown (sysfs-only discovery), as
    /// libibverbs' `VERBS_PCI_MATCH`; empty if none.
    const PCI_IDS: &'static [(u16, u16)] = &[];
    /// Lowest per-device uverbs ABI version it speaks.
    const MIN_ABI: u32;
    /// Highest per-device uverbs ABI version it speaks.
    const MAX_ABI: u32;
    /// What it can do.
    const CAPS: Caps;
    /// Per-context state (`alloc_ucontext`'s answer).
    type Context: ProviderContext;
    /// Per-CQ state.
    type Cq: ProviderCq<Ctx = Self::Context>;
    /// Per-QP state.
    type Qp: ProviderQp<Ctx = Self::Context>;
    /// Per-SRQ state.
    type Srq: ProviderSrq<Ctx = Self::Context>;
}

/// The provider's per-context state, and the hooks of the verbs whose
/// objects have no user-space state of their own (PD, MR, AH): each sends
/// its core command with the provider's driver data.
pub trait ProviderContext: Debug + Send + Sync + Sized {
    /// `ibv_open_device`'s `alloc_context`: sends `GET_CONTEXT` on `chan`
    /// ([`crate::cmd::device::get_context`]) with the provider's driver
    /// data and keeps what the answer says (and maps, e.g. UAR pages).
    fn open(chan: &Channel) -> Result<(ContextReply, Self)>;

    /// The provider's device id from the context answer (siw's
    /// `dev_id`); 0 where it has none.
    fn dev_id(&self) -> u32 {
        0
    }

    /// `ibv_alloc_pd`.
    fn alloc_pd(&self, dc: &mut DriverCmd<'_, AllocPd>) -> Result<AllocPdResp> {
        dc.send(&[], &mut [])
    }

    /// `ibv_reg_mr`.
    fn reg_mr(&self, dc: &mut DriverCmd<'_, RegMr>) -> Result<RegMrResp> {
        dc.send(&[], &mut [])
    }

    /// `ibv_create_ah`: the core answer and the provider's AH number (the
    /// rxe `ah_num` a UD request carries; 0 where there is none).
    fn create_ah(&self, dc: &mut DriverCmd<'_, CreateAh>) -> Result<(CreateAhResp, u32)> {
        dc.send(&[], &mut []).map(|r| (r, 0))
    }

    /// The kernel destroyed the AH whose provider number was `ah_num`
    /// (mlx5 frees the address vector it kept).
    fn destroy_ah(&self, ah_num: u32) {
        let _ = ah_num;
    }
}

/// A provider's completion queue.
pub trait ProviderCq: Debug + Send + Sync + Sized {
    /// The provider's context state.
    type Ctx;

    /// `ibv_create_cq`: sends `dc` (`cqe`, `comp_vector`, channel set)
    /// with the driver data and sets up the user-space side (maps the
    /// ring, or hands the kernel a buffer it allocated).
    fn create(ctx: &Self::Ctx, dc: &mut DriverCmd<'_, CreateCq>) -> Result<Self>;

    /// `ibv_resize_cq` (only called if [`Caps::cq_resize`]): sends `dc`
    /// and moves to the new ring. The object layer reads the granted
    /// size from [`DriverCmd::sent`].
    fn resize(&mut self, ctx: &Self::Ctx, dc: &mut DriverCmd<'_, ResizeCq>) -> core::result::Result<(), ResizeFailed> {
        let _ = (ctx, dc);
        Err(ResizeFailed::Unchanged(Error::new("ibv_resize_cq", ErrorKind::Unsupported)))
    }

    /// `ibv_req_notify_cq` of the CQ with kernel handle `handle` (a
    /// command on `chan`, or a doorbell through `ctx`'s UAR, or a store
    /// into mapped memory).
    fn req_notify(&self, ctx: &Self::Ctx, chan: &Channel, handle: u32, solicited_only: bool) -> Result<()>;

    /// Whether no completion is waiting (without taking the claim flag).
    fn is_empty(&self) -> bool;

    /// [`ProviderCq::is_empty`] for the C library's `ibv_poll_cq`, whose
    /// non-empty answer waits out a CQ lent to a `poll_with` closure
    /// ([`ProviderCq::poll_leave_wait`]): a provider whose `is_empty` also
    /// reports a lent CQ as not empty (so that a poll from the closure is
    /// refused) may leave that test out here, since a C poll never runs
    /// inside a `poll_with` closure's lending and an empty ring answers 0
    /// either way.
    #[inline(always)]
    fn is_empty_c(&self) -> bool {
        self.is_empty()
    }

    /// `ibv_poll_cq`: moves up to `out.len()` completions into `out`.
    fn poll<S: WcOut>(&self, out: &mut [S]) -> core::result::Result<usize, Claim>;

    /// [`ProviderCq::poll`] of a CQ just found not empty.
    #[inline(always)]
    fn poll_nonempty(&self, out: &mut [MaybeUninit<Wc>]) -> core::result::Result<usize, Claim> {
        self.poll(out)
    }

    /// [`ProviderCq::poll`] of a CQ just found not empty, from a caller
    /// that is itself out of line (`Cq::poll`'s), so the copy may be
    /// inlined into it.
    #[inline(always)]
    fn poll_held<S: WcOut>(&self, out: &mut [S]) -> core::result::Result<usize, Claim> {
        self.poll(out)
    }

    /// `Cq::poll`'s copy of a CQ it found not empty, with the CQ's
    /// resize guard (`cq`, which leaves the CQ when dropped), into `out`
    /// (which may be empty), as the verb's `Result`: one out-of-line
    /// function, reached by a jump from `Cq::poll` (which so keeps no
    /// register for it and its empty poll needs no stack frame). The
    /// default: [`ProviderCq::poll_held`], then the guard dropped. A
    /// provider may pass `cq` on to an out-of-line part in tail position.
    #[inline(always)]
    fn poll_leave<S: WcOut>(cq: Held<'_, Self>, out: &mut [S]) -> Result<usize> {
        poll_leave_held(cq, out)
    }

    /// The C library's `ibv_poll_cq` of a CQ it found not empty, with the
    /// CQ's resize guard (`cq`, dropped last), into `out` (not empty):
    /// one out-of-line function, reached by a jump, that answers the
    /// count in a register. It waits while another poll holds the CQ (a
    /// `poll_with` closure too: C's callers wait on rdma-core's CQ lock),
    /// so the count is its only answer (`out` is a C array: at most
    /// `c_int::MAX` elements, so the count fits). The out-of-line part
    /// is `extern "C"` (an unwind would abort there, as it would in
    /// `ibv_poll_cq`), so that `ibv_poll_cq` can jump to it: a call that
    /// may unwind out of an `extern "C"` function cannot be a jump. The default:
    /// [`ProviderCq::poll_nonempty`] until the CQ is free.
    #[inline(always)]
    fn poll_leave_wait(cq: Held<'_, Self>, out: &mut [MaybeUninit<Wc>]) -> i32 {
        poll_leave_wait_held(cq, out)
    }

    /// `ibv_start_poll`/`next`/`end`: hands up to `max` completions to `f`.
    fn poll_with(&self, max: usize, f: impl FnMut(&Wc)) -> core::result::Result<usize, Claim>;

    /// A completion event was read for this CQ (`ibv_get_cq_event`; mlx5
    /// counts them into the arm doorbell's sequence number).
    fn event(&self) {}

    /// Drops the completions of QP `qp_num` (moved to RESET), where the
    /// provider does (rxe).
    fn discard_qp(&self, qp_num: u32) {
        let _ = qp_num;
    }

    /// Slots of the ring as the provider counts them (rxe `index_mask +
    /// 1`, siw `num_cqe`).
    fn ring_slots(&self) -> u32;

    /// The arming state kept in mapped memory (siw `siw_cq_ctrl.flags`);
    /// `None` where arming is a kernel command.
    fn notify_flags(&self) -> Option<u32> {
        None
    }
}

/// The default [`ProviderCq::poll_leave`].
#[inline(never)]
fn poll_leave_held<Q: ProviderCq, S: WcOut>(cq: Held<'_, Q>, out: &mut [S]) -> Result<usize> {
    if out.is_empty() {
        return Ok(0);
    }
    cq.get().poll_held(out).map_err(super::dispatch::busy)
}

/// The default [`ProviderCq::poll_leave_wait`] (`extern "C"`: see
/// siw's `poll_leave_wait`).
#[allow(improper_ctypes_definitions)]
#[inline(never)]
extern "C" fn poll_leave_wait_held<Q: ProviderCq>(cq: Held<'_, Q>, out: &mut [MaybeUninit<Wc>]) -> i32 {
    loop {
        if let Ok(n) = cq.get().poll_nonempty(out) {
            return n as i32;
        }
        core::hint::spin_loop();
    }
}

/// A provider's queue pair: its send and receive queues.
pub trait ProviderQp: Debug + Send + Sync + Sized {
    /// The provider's context state.
    type Ctx;

    /// `ibv_create_qp`: sends `dc` (its `qp_type`, `is_srq`, `sq_sig_all`
    /// and capacities are the request, [`QpCreateCmd::request`]) with the
    /// driver data and sets up the queues. The granted capacities are in
    /// the response ([`QpCreateCmd::base`]).
    fn create<C: QpCreateCmd>(ctx: &Self::Ctx, dc: &mut DriverCmd<'_, C>) -> Result<Self>;

    /// `ibv_post_send`: all or nothing, then the doorbell (`dev`: the
    /// device file, for providers whose doorbell is a command).
    fn post_send(&mut self, dev: BorrowedFd<'_>, qp_type: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError>;

    /// `ibv_post_recv` of a non-empty list: all or nothing; a QP with an
    /// SRQ has no receive queue ([`no_recv_queue`]).
    fn post_recv(&mut self, max_sge: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError>;

    /// libmlx5's `mlx5dv_wr_raw_wqe`: a WQE the caller built, then the
    /// doorbell (`Unsupported` but on mlx5).
    fn post_raw_wqe(&mut self, wqe: &[u8], wr_id: u64) -> core::result::Result<(), PostError> {
        let _ = (wqe, wr_id);
        Err(PostError::new("mlx5dv_wr_raw_wqe", ErrorKind::Unsupported, 0))
    }

    /// The straight send path of the C library (one plain request, see
    /// `src/qp/straight.rs`): `None` if not taken (nothing written).
    #[inline(always)]
    fn post_send_straight<W: StraightWr + ?Sized>(
        &mut self,
        dev: BorrowedFd<'_>,
        qp_type: QpType,
        s: &W,
    ) -> Option<core::result::Result<(), RingFailed>> {
        let _ = (dev, qp_type, s);
        None
    }

    /// The straight receive path: `true` if posted, `false` if not taken
    /// (nothing written).
    #[inline(always)]
    fn post_recv_straight(&mut self, max_sge: u32, wr_id: u64, sge: Option<&Sge>) -> bool {
        let _ = (max_sge, wr_id, sge);
        false
    }

    /// Sizes of the send and receive queues in slots as the provider
    /// counts them (`None`: no receive queue, the QP uses an SRQ).
    fn queue_slots(&self) -> (u32, Option<u32>);

    /// The kernel moved the QP to `to` (`ibv_modify_qp` succeeded): a
    /// provider whose queue indices live in user space resets them on
    /// RESET (libmlx5 `mlx5_init_qp_indices`). The completions waiting
    /// in the CQs are dropped by [`ProviderCq::discard_qp`].
    fn state_changed(&mut self, to: QpStateKind) {
        let _ = to;
    }
}

/// A command that creates a QP: `CREATE_QP`, or the extended
/// `CREATE_QP` when creation flags are asked for (libibverbs'
/// `ibv_cmd_create_qp_ex2`, which libmlx5 uses then). The driver data is
/// the same after either.
pub trait QpCreateCmd: WriteCommand<Resp: FromZeros + Copy> {
    /// The request as the legacy command holds it.
    fn request(&self) -> CreateQp;
    /// `IB_UVERBS_QP_CREATE_*` bits (none in the legacy command).
    fn create_flags(&self) -> u32;
    /// The legacy part of the response.
    fn base(resp: &Self::Resp) -> &CreateQpResp;
    /// The legacy part of the response, for a provider that reports what
    /// it granted ([`DriverCmd::sent_mut`]).
    fn base_mut(resp: &mut Self::Resp) -> &mut CreateQpResp;
}

impl QpCreateCmd for CreateQp {
    fn request(&self) -> CreateQp {
        *self
    }
    fn create_flags(&self) -> u32 {
        0
    }
    fn base(resp: &CreateQpResp) -> &CreateQpResp {
        resp
    }
    fn base_mut(resp: &mut CreateQpResp) -> &mut CreateQpResp {
        resp
    }
}

impl QpCreateCmd for ExCreateQp {
    fn request(&self) -> CreateQp {
        self.base()
    }
    fn create_flags(&self) -> u32 {
        self.create_flags
    }
    fn base(resp: &crate::abi::uverbs::ExCreateQpResp) -> &CreateQpResp {
        &resp.base
    }
    fn base_mut(resp: &mut crate::abi::uverbs::ExCreateQpResp) -> &mut CreateQpResp {
        &mut resp.base
    }
}

/// A command that creates an SRQ (`CREATE_SRQ`, `CREATE_XSRQ`): the
/// capacities in it, which a provider may round before sending (mlx5 asks
/// for the WQEs it allocated, as libmlx5 does).
pub trait SrqCreateCmd: WriteCommand<Resp = CreateSrqResp> {
    /// `(max_wr, max_sge)` as requested.
    fn srq_caps(&self) -> (u32, u32);
    /// Replaces `max_wr` and `max_sge`.
    fn set_srq_caps(&mut self, max_wr: u32, max_sge: u32);
}

impl SrqCreateCmd for crate::abi::uverbs::CreateSrq {
    fn srq_caps(&self) -> (u32, u32) {
        (self.max_wr, self.max_sge)
    }
    fn set_srq_caps(&mut self, max_wr: u32, max_sge: u32) {
        (self.max_wr, self.max_sge) = (max_wr, max_sge);
    }
}

impl SrqCreateCmd for crate::abi::uverbs::CreateXsrq {
    fn srq_caps(&self) -> (u32, u32) {
        (self.max_wr, self.max_sge)
    }
    fn set_srq_caps(&mut self, max_wr: u32, max_sge: u32) {
        (self.max_wr, self.max_sge) = (max_wr, max_sge);
    }
}

/// A provider's shared receive queue.
pub trait ProviderSrq: Debug + Send + Sync + Sized {
    /// The provider's context state.
    type Ctx;

    /// `ibv_create_srq` / `ibv_create_srq_ex` (XRC): sends `dc` with the
    /// driver data and sets up the ring.
    fn create<C: SrqCreateCmd>(ctx: &Self::Ctx, dc: &mut DriverCmd<'_, C>) -> Result<Self>;

    /// `ibv_modify_srq` holding the SRQ exclusively; `resize`: the
    /// command changes `max_wr` (the ring may move).
    fn modify(&mut self, ctx: &Self::Ctx, dc: &mut DriverCmd<'_, ModifySrq>, resize: bool) -> core::result::Result<(), ResizeFailed>;

    /// `ibv_modify_srq` of the limit only (the ring stays).
    fn set_limit(&self, ctx: &Self::Ctx, dc: &mut DriverCmd<'_, ModifySrq>) -> Result<()>;

    /// `ibv_post_srq_recv` of a non-empty list: all or nothing.
    fn post_recv(&self, max_sge: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError>;

    /// Slots of the ring as the provider counts them.
    fn ring_slots(&self) -> u32;

    /// The SRQ number the device gave it, where user space learns it.
    fn srq_num(&self) -> Option<u32> {
        None
    }
}

/// The error of `ibv_post_recv` on a QP that has no receive queue (it
/// uses an SRQ).
#[cold]
pub fn no_recv_queue() -> PostError {
    PostError::new("ibv_post_recv", ErrorKind::InvalidArgument, 0)
}

/// What the straight path carries.
#[derive(Clone, Copy, Debug)]
pub enum Plain<'w> {
    /// No data (SEND of immediate data only, zero-length WRITE).
    Empty,
    /// One SGE.
    Sge(&'w Sge),
    /// Inline bytes.
    Inline(&'w [u8]),
}

/// One request of the straight path, read field by field where the WQE
/// is written (so that no field waits in a register or on the stack):
/// a [`SendWr`] for the core, an `ibv_send_wr` for the C library
/// (through the `internals` feature), which then builds no [`SendWr`].
/// It is only a request: the provider judges it.
pub trait StraightWr {
    /// `enum ibv_wr_opcode` (the numbering of `ib_uverbs_wr_opcode`).
    fn opcode(&self) -> u32;
    /// `enum ibv_send_flags` without `IBV_SEND_INLINE`.
    fn flags(&self) -> u32;
    /// The data, `None` if it is not of the straight path's shapes.
    fn data(&self) -> Option<Plain<'_>>;
    /// The caller's identifier, returned in the completion.
    fn wr_id(&self) -> u64;
    /// Immediate data as on the wire (big-endian) or the rkey to
    /// invalidate; for an operation with neither, whatever the request
    /// holds (read only for those that have it).
    fn ex(&self) -> u32;
    /// The remote address and key of an RDMA operation, `(0, 0)` for a
    /// send (read only for a straight operation).
    fn remote(&self) -> (u64, u32);
    /// The remote address and key of a request whose operation
    /// ([`opcode`](Self::opcode)) is RDMA WRITE (with immediate) or READ,
    /// read where the remote address segment is stored: the caller matched
    /// the operation already, so an implementor that can reads them with
    /// no second test (whatever the request holds for another operation).
    #[inline(always)]
    fn rdma_fields(&self) -> (u64, u32) {
        self.remote()
    }
}

/// A native request as the straight path reads it (a list of one that a
/// provider takes straight, as mlx5 does): the operation's fields where
/// the WQE wants them, no lowering first. A UD destination, several SGEs
/// or an operation of no straight shape make `data` `None` (the general
/// path judges those).
impl StraightWr for SendWr<'_> {
    #[inline(always)]
    fn opcode(&self) -> u32 {
        self.op.opcode()
    }
    #[inline(always)]
    fn flags(&self) -> u32 {
        self.flags.bits()
    }
    #[inline(always)]
    fn data(&self) -> Option<Plain<'_>> {
        if self.ud.is_some() {
            return None;
        }
        match self.payload {
            crate::wr::Payload::Sges([]) => Some(Plain::Empty),
            crate::wr::Payload::Sges([g]) => Some(Plain::Sge(g)),
            crate::wr::Payload::Sges(_) => None,
            crate::wr::Payload::Inline(d) => Some(Plain::Inline(d)),
        }
    }
    #[inline(always)]
    fn wr_id(&self) -> u64 {
        self.wr_id
    }
    #[inline(always)]
    fn ex(&self) -> u32 {
        match self.op {
            // Host order here, big-endian in the trait's contract.
            SendOp::SendWithImm { imm } | SendOp::RdmaWriteWithImm { imm, .. } => imm.to_be(),
            SendOp::SendWithInv { invalidate_rkey } => invalidate_rkey,
            _ => 0,
        }
    }
    #[inline(always)]
    fn remote(&self) -> (u64, u32) {
        match self.op {
            SendOp::RdmaWrite { remote_addr, rkey } | SendOp::RdmaWriteWithImm { remote_addr, rkey, .. } | SendOp::RdmaRead { remote_addr, rkey } => {
                (remote_addr, rkey)
            }
            _ => (0, 0),
        }
    }
}
