//! Completion queues (`struct ibv_cq`): create, resize, arm for an event,
//! count and acknowledge events, destroy.
//!
//! A CQ's ring lives in kernel memory mapped into the process (rxe: a
//! `rxe_queue_buf` of `ib_uverbs_wc`; siw: an array of `siw_cqe` plus a
//! control word). The mapping is owned by the [`Cq`] and released only
//! after the kernel destroyed the CQ.
//!
//! # Events and destroy
//!
//! rdma-core's `ibv_destroy_cq` blocks until the application acknowledged
//! (`ibv_ack_cq_events`) as many events as the kernel reports having
//! delivered, so that no thread still handling an event can touch a freed
//! `ibv_cq`. Here that situation cannot arise: an event is handed out as a
//! borrow of the `Cq`, and `destroy(self)`/drop need the `Cq` by value, so
//! the borrow checker has already ended every such use. We therefore never
//! wait; the kernel's count is returned by [`Cq::destroy`] for callers that
//! want to check it against their acknowledgements.

use core::sync::atomic::{AtomicU32, Ordering};

use rustix::fd::{AsFd, AsRawFd};
use zerocopy::FromZeros;

use crate::abi::uverbs::{CreateCq, DestroyCq, ResizeCq};
use crate::comp_channel::CompChannel;
use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::pd::DestroyError;
use crate::providers::seam::{DriverCmd, ResizeFailed};
use crate::providers::AnyCq;
use crate::swap_cell::SwapCell;

/// Largest `cqe` the C API can express (`int cqe`).
const MAX_CQE_ARG: u32 = i32::MAX as u32;

/// The provider's user-space side of a CQ (its ring), or `Dead`.
type Ring = AnyCq;

/// What the kernel reported when it destroyed a CQ
/// (`struct ib_uverbs_destroy_cq_resp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqDestroyed {
    /// Completion events the kernel delivered for this CQ.
    pub comp_events_reported: u32,
    /// Async events the kernel delivered for this CQ.
    pub async_events_reported: u32,
}

/// Choices for a new CQ beyond [`Cq::create`]'s, which only some
/// providers offer ([`ProviderCaps`](crate::ProviderCaps)); the default
/// is [`Cq::create`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqOptions {
    /// Bytes per completion entry (`mlx5dv_create_cq`'s `cqe_size`: 64 or
    /// 128 on mlx5, where `None` is the `MLX5_CQE_SIZE` environment
    /// variable or 64, as libmlx5). A provider without
    /// [`cqe_size_choice`](crate::ProviderCaps::cqe_size_choice) refuses
    /// `Some` (`Unsupported`).
    pub cqe_size: Option<u32>,
}

/// A completion queue (`struct ibv_cq`).
#[doc(alias = "ibv_cq")]
#[derive(Debug)]
pub struct Cq<'ctx> {
    ctx: &'ctx Context,
    channel: Option<&'ctx CompChannel<'ctx>>,
    handle: u32,
    /// Entries granted; changed by a resize.
    cqe: AtomicU32,
    user_handle: u64,
    /// The mapped ring: shared by pollers, replaced by [`Cq::resize`]
    /// (see `src/swap_cell.rs`).
    ring: SwapCell<Ring>,
    events: AtomicU32,
    acked: AtomicU32,
    /// `false` once the kernel object is gone (then `Drop` does nothing
    /// but release the mapping).
    live: bool,
}

impl<'ctx> Cq<'ctx> {
    /// `ibv_create_cq`: a CQ with at least `cqe` entries. If `channel` is
    /// given, armed completions ([`Cq::req_notify`]) raise events on it,
    /// delivered through vector `comp_vector`; the CQ borrows the channel,
    /// so the channel outlives it.
    ///
    /// `cqe` must be in `1..=max_cqe` of the device and `comp_vector` below
    /// [`Context::num_comp_vectors`]; both are errors of kind
    /// `InvalidArgument` naming `ibv_create_cq` (a zero `cqe` and a bad
    /// vector are caught before the kernel, `cqe > max_cqe` by the kernel).
    #[doc(alias = "ibv_create_cq")]
    pub fn create(
        ctx: &'ctx Context,
        cqe: u32,
        channel: Option<&'ctx CompChannel<'ctx>>,
        comp_vector: u32,
    ) -> Result<Self> {
        Self::create_with(ctx, cqe, channel, comp_vector, CqOptions::default())
    }

    /// [`Cq::create`] with the provider-specific choices of `opts` (libmlx5's
    /// `mlx5dv_create_cq`); a choice the provider does not offer is
    /// `Unsupported`, one it refuses `InvalidArgument` (an mlx5 CQE size
    /// other than 64 or 128), both naming `ibv_create_cq` and before the
    /// kernel.
    #[doc(alias = "mlx5dv_create_cq")]
    pub fn create_with(
        ctx: &'ctx Context,
        cqe: u32,
        channel: Option<&'ctx CompChannel<'ctx>>,
        comp_vector: u32,
        opts: CqOptions,
    ) -> Result<Self> {
        const VERB: &str = "ibv_create_cq";
        if cqe == 0 || cqe > MAX_CQE_ARG || comp_vector >= ctx.num_comp_vectors() {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument));
        }
        if opts.cqe_size.is_some() && !ctx.provider_caps().cqe_size_choice {
            return Err(Error::new(VERB, ErrorKind::Unsupported).with_detail("the provider has one CQE size"));
        }
        let user_handle = crate::user_handle::next();
        let mut cmd = CreateCq::new_zeroed();
        cmd.user_handle = user_handle;
        cmd.cqe = cqe;
        cmd.comp_vector = comp_vector;
        cmd.comp_channel = channel.map_or(-1, |c| c.as_fd().as_raw_fd());
        let mut dc = DriverCmd::new(ctx.channel(), VERB, cmd).with_cqe_size(opts.cqe_size);
        let made = AnyCq::create(ctx.provider_state(), &mut dc);
        let (ring, resp) = dc.finish(made, |r| destroy_cmd(ctx, r.cq_handle))?;
        Ok(Self {
            ctx,
            channel,
            handle: resp.cq_handle,
            cqe: AtomicU32::new(resp.cqe),
            user_handle,
            ring: SwapCell::new(ring),
            events: AtomicU32::new(0),
            acked: AtomicU32::new(0),
            live: true,
        })
    }

    /// The kernel's handle for this CQ.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The number of entries the CQ actually has (`ibv_cq.cqe`), at least
    /// what was asked for.
    pub fn cqe(&self) -> u32 {
        self.cqe.load(Ordering::Relaxed)
    }

    /// The value the kernel reports in this CQ's completion and async
    /// events (`ibv_cq.cq_context`'s role; unique per CQ in the process).
    pub fn user_handle(&self) -> u64 {
        self.user_handle
    }

    /// The context this CQ belongs to.
    pub fn context(&self) -> &'ctx Context {
        self.ctx
    }

    /// The completion channel the CQ reports events on, if any.
    pub fn channel(&self) -> Option<&'ctx CompChannel<'ctx>> {
        self.channel
    }

    /// `ibv_resize_cq`: changes the CQ to hold at least `cqe` entries.
    ///
    /// Takes `&self`, as in C: QPs that use the CQ, and threads polling
    /// it, keep their references. rxe: the kernel moves the ring and
    /// returns the new mapping, which replaces the old one; completions
    /// already queued move with it. While the ring is replaced (one
    /// system call and one `mmap`), a poll on another thread is a `Busy`
    /// error and does not touch the ring. The resize waits a bounded time
    /// for polls already in progress to finish; if one does not (a
    /// [`Cq::poll_with`] closure still running, perhaps the caller's own),
    /// it is a `Busy` error naming `ibv_resize_cq` and nothing changed.
    ///
    /// siw has no resize (rdma-core's siw provider leaves the op out): an
    /// `Unsupported` error, nothing sent. `cqe` of 0 or above `max_cqe`
    /// (or below the number of completions currently queued, for rxe) is
    /// `InvalidArgument`.
    #[doc(alias = "ibv_resize_cq")]
    pub fn resize(&self, cqe: u32) -> Result<()> {
        const VERB: &str = "ibv_resize_cq";
        if cqe == 0 || cqe > MAX_CQE_ARG {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument));
        }
        let Some(mut ring) = self.ring.exclusive() else {
            return Err(Error::new(VERB, ErrorKind::Busy)
                .with_detail("the CQ is being polled (a poll_with closure is still running) or resized meanwhile"));
        };
        if !self.ctx.provider_caps().cq_resize {
            return Err(Error::new(VERB, ErrorKind::Unsupported));
        }
        let mut cmd = ResizeCq::new_zeroed();
        cmd.cq_handle = self.handle;
        cmd.cqe = cqe;
        let mut dc = DriverCmd::new(self.ctx.channel(), VERB, cmd);
        match ring.resize(self.ctx.provider_state(), &mut dc) {
            Ok(()) => {
                if let Some(resp) = dc.sent() {
                    self.cqe.store(resp.cqe, Ordering::Relaxed);
                }
                Ok(())
            }
            Err(ResizeFailed::Unchanged(e)) => Err(e),
            Err(ResizeFailed::Dead(e)) => {
                *ring = AnyCq::Dead;
                Err(e.with_detail("the new ring could not be mapped: the CQ is now dead (every later call fails)"))
            }
        }
    }

    /// `ibv_req_notify_cq`: arms the CQ so that the next completion (or, if
    /// `solicited_only`, the next solicited one) raises an event on its
    /// completion channel.
    ///
    /// rxe: one `REQ_NOTIFY_CQ` command. siw: a store into the mapped
    /// control word, no system call.
    #[doc(alias = "ibv_req_notify_cq")]
    pub fn req_notify(&self, solicited_only: bool) -> Result<()> {
        let Some(ring) = self.ring.enter() else { return Err(resizing("ibv_req_notify_cq")) };
        ring.req_notify(self.ctx.provider_state(), self.ctx.channel(), self.handle, solicited_only)
    }

    /// `ibv_poll_cq`: moves up to `wc.len()` completions from the CQ into
    /// `wc` and returns how many (0: the CQ is empty). No system call.
    ///
    /// Takes `&self` because QPs share their CQs: pollers on several
    /// threads are serialised by an atomic claim flag (uncontended: one
    /// compare-exchange). A poll that meets another thread's copying poll
    /// (`poll`, `poll_uninit`) waits for it, as `ibv_poll_cq` callers
    /// wait on rdma-core's CQ lock: that poll holds the CQ only while it
    /// copies, running no caller code. A poll that meets a
    /// [`Cq::poll_with`] closure that is still running (on this thread or
    /// another) does not wait, since the closure may run for any time or
    /// be the caller itself: it takes nothing and is an error of kind
    /// [`ErrorKind::Busy`] (try again), never a deadlock. An empty CQ is
    /// answered without taking the flag.
    #[doc(alias = "ibv_poll_cq")]
    #[inline(always)]
    pub fn poll(&self, wc: &mut [crate::wc::Wc]) -> Result<usize> {
        self.poll_out(wc)
    }

    /// [`Cq::poll`] into memory that need not be initialised (a C
    /// caller's `struct ibv_wc` array: [`Wc`](crate::Wc) has its layout):
    /// returns `n`, and the first `n` elements of `wc` are then written.
    /// Nothing in `wc` is read.
    #[doc(alias = "ibv_poll_cq")]
    #[inline(always)]
    pub fn poll_uninit(&self, wc: &mut [core::mem::MaybeUninit<crate::wc::Wc>]) -> Result<usize> {
        self.poll_out(wc)
    }

    /// The C library's `ibv_poll_cq` (feature `internals`): if the CQ is
    /// empty, `empty()`; else `out()` (the caller's array, or, when there
    /// is none, the maker of the answer, called once the CQ is left) and
    /// the copy of up to its length completions
    /// into it, whose count is the answer (the first that many elements
    /// are then written). The copy is one jump to the provider's
    /// out-of-line part, which answers the count in a register and waits
    /// while another poll holds the CQ (a [`Cq::poll_with`] closure too,
    /// as C's callers wait on rdma-core's CQ lock). `fail` gets the
    /// maker of the error (built out of line) of a CQ that is being
    /// resized (try again) or dead.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    #[doc(alias = "ibv_poll_cq")]
    #[inline(always)]
    pub fn poll_c<'o>(
        &self,
        empty: impl FnOnce() -> i32,
        out: impl FnOnce() -> core::result::Result<&'o mut [core::mem::MaybeUninit<crate::wc::Wc>], extern "C" fn() -> i32>,
        fail: impl FnOnce(fn() -> Error) -> i32,
    ) -> i32 {
        let Some(ring) = self.ring.enter() else { return fail(resizing_poll) };
        Ring::poll_entered_wait(ring, empty, out, fail)
    }

    /// The empty case runs no out-of-line code and makes no call (so the
    /// caller needs no stack frame for it); the rest is one jump to the
    /// provider's copy (`ProviderCq::poll_leave`), which takes the guard
    /// of the ring along and writes the `Result`.
    #[inline(always)]
    fn poll_out<S: crate::wc::WcOut>(&self, wc: &mut [S]) -> Result<usize> {
        let Some(ring) = self.ring.enter() else { return Err(resizing("ibv_poll_cq")) };
        // The empty test, then one jump (see `Ring::poll_entered`):
        // nothing is kept across a call here, so the empty poll saves no
        // register.
        Ring::poll_entered(ring, wc)
    }

    /// `ibv_start_poll` / `ibv_next_poll` / `ibv_end_poll` in one call:
    /// hands up to `max` completions to `f`, oldest first, without copying
    /// them into an array, and returns how many (0: the CQ is empty).
    ///
    /// `f` sees each completion only for the duration of the call; its
    /// slot is freed for the device once `poll_with` returns. When `f` is
    /// inlined (a closure usually is), only the fields it reads are loaded
    /// from the ring, which makes this the cheapest way to drain a CQ:
    /// see BENCHMARKS.md. Same locking as [`Cq::poll`]; while `f` runs
    /// the CQ is lent to `f`, so polling it from inside `f` (or from
    /// another thread meanwhile) is a `Busy` error, not a deadlock.
    /// `poll_with` itself never waits: if any other poll holds the CQ
    /// (another thread's copying poll included) it takes nothing and is a
    /// `Busy` error (try again). If `f`
    /// panics, the completions it was handed are consumed and the CQ is
    /// released: later polls work and see the rest.
    ///
    /// ```no_run
    /// # fn f(cq: &verbs::Cq<'_>) -> verbs::Result<()> {
    /// let mut failed = 0;
    /// let n = cq.poll_with(16, |wc| failed += usize::from(!wc.status().is_success()))?;
    /// # let _ = n; Ok(()) }
    /// ```
    #[doc(alias = "ibv_start_poll", alias = "ibv_next_poll", alias = "ibv_end_poll")]
    // Always inlined (a poll loop's only call otherwise: its frame, and
    // the `Result` returned through memory, cost as much as a poll of
    // one completion), so that a constant `max` of 1 leaves rxe's poll
    // only its one-slot path.
    #[inline(always)]
    pub fn poll_with(&self, max: usize, f: impl FnMut(&crate::wc::Wc)) -> Result<usize> {
        let Some(ring) = self.ring.enter() else { return Err(resizing("ibv_poll_cq")) };
        let r = ring.poll_with(max, f);
        drop(ring);
        r.map_err(crate::providers::poll_with_error)
    }

    /// Drops the completions of QP `qp_num` waiting in the CQ (the QP was
    /// just moved to RESET, see [`QueuePair::into_reset`](crate::qp::QueuePair::into_reset)).
    /// rxe only; nothing is dropped while the CQ is being resized or lent
    /// to a `poll_with` closure (the completions then stay, as they would
    /// with rdma-core's librxe).
    pub(crate) fn discard_qp(&self, qp_num: u32) {
        if let Some(ring) = self.ring.enter() {
            ring.discard_qp(qp_num);
        }
    }

    /// The arming state the provider keeps in mapped memory (siw:
    /// `siw_cq_ctrl.flags`, `SIW_NOTIFY_*`); `None` where arming is a
    /// kernel command (rxe), or while the CQ is resized.
    pub fn notify_flags(&self) -> Option<u32> {
        self.ring.enter()?.notify_flags()
    }

    /// The number of slots of the mapped ring as its provider counts them
    /// (rxe: `index_mask + 1`, one more than the entries it can hold;
    /// siw: the elements of the CQE array); `None` on a dead CQ or while
    /// it is resized.
    pub fn ring_slots(&self) -> Option<u32> {
        self.ring.enter()?.ring_slots()
    }

    /// Records one completion event read from this CQ's channel (what
    /// `ibv_get_cq_event` does after reading the event).
    fn note_event(&self) {
        if let Some(ring) = self.ring.enter() {
            ring.event();
        }
        self.events.fetch_add(1, Ordering::Relaxed);
    }

    /// Tells the provider that a completion event was read for this CQ
    /// outside [`get_cq_event`] (the C library reads the channel itself and
    /// keeps its own counts): mlx5 advances the arm sequence number the
    /// next `ibv_req_notify_cq` writes, as libmlx5's `mlx5_cq_event` does.
    /// Not counted for [`Cq::ack_events`].
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn provider_event(&self) {
        if let Some(ring) = self.ring.enter() {
            ring.event();
        }
    }

    /// Events received and not yet acknowledged.
    pub fn unacked_events(&self) -> u32 {
        self.events
            .load(Ordering::Relaxed)
            .wrapping_sub(self.acked.load(Ordering::Relaxed))
    }

    /// `ibv_ack_cq_events`: acknowledges `n` completion events received
    /// for this CQ. Acknowledging more than were received is an
    /// `InvalidArgument` error (nothing is counted).
    #[doc(alias = "ibv_ack_cq_events")]
    pub fn ack_events(&self, n: u32) -> Result<()> {
        let r = self
            .acked
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |acked| {
                let received = self.events.load(Ordering::Relaxed);
                let pending = received.wrapping_sub(acked);
                (n <= pending).then(|| acked.wrapping_add(n))
            });
        r.map(|_| ())
            .map_err(|_| Error::new("ibv_ack_cq_events", ErrorKind::InvalidArgument))
    }

    /// `ibv_destroy_cq`: destroys the CQ and then unmaps its ring. On
    /// failure (`EBUSY` while a QP or SRQ still uses it) the CQ comes back
    /// with the error. On success returns the kernel's event counts (see
    /// the module docs: we never wait for acknowledgements).
    #[doc(alias = "ibv_destroy_cq")]
    #[allow(clippy::result_large_err)] // the CQ comes back by value; no heap
    pub fn destroy(mut self) -> core::result::Result<CqDestroyed, DestroyError<Self>> {
        match destroy_cmd(self.ctx, self.handle) {
            Ok(d) => {
                self.live = false;
                Ok(d)
            }
            Err(error) => Err(DestroyError {
                error,
                object: self,
            }),
        }
    }
}

/// `ibv_get_cq_event`: waits for (or, on a non-blocking channel, takes)
/// the next completion event on `channel` and returns which of `cqs` it is
/// for, counting it for [`Cq::ack_events`].
///
/// Events name a CQ by its [user handle](Cq::user_handle), and a `Cq`
/// cannot be found from a number without a registry (which would need
/// allocation or a global table), so the CQs that may report on the
/// channel are passed in. No event is lost:
///
/// * an event read for a CQ not in `cqs` (or not created on `channel`)
///   is kept on the channel ([`CompChannel::pending_cq_events`]) and the
///   call fails with [`ErrorKind::CqNotListed`]; the next call that lists
///   that CQ returns it first, before reading the fd;
/// * if [`PENDING_SLOTS`](crate::comp_channel::PENDING_SLOTS) events are
///   already kept, the call fails with the same kind without reading;
/// * an empty non-blocking channel gives `WouldBlock`.
#[doc(alias = "ibv_get_cq_event")]
pub fn get_cq_event<'c, 'ctx>(
    channel: &CompChannel<'ctx>,
    cqs: &[&'c Cq<'ctx>],
) -> Result<&'c Cq<'ctx>> {
    const VERB: &str = "ibv_get_cq_event";
    let find = |handle: u64| {
        cqs.iter().copied().find(|cq| {
            cq.user_handle == handle && cq.channel.is_some_and(|c| core::ptr::eq(c, channel))
        })
    };
    let cq = match channel.take_pending(|h| find(h).is_some()).and_then(find) {
        Some(cq) => cq,
        None => {
            let slot = channel
                .reserve_pending()
                .ok_or(Error::new(VERB, ErrorKind::CqNotListed))?;
            let handle = channel.read_event()?;
            match find(handle) {
                Some(cq) => cq,
                None => {
                    slot.keep(handle);
                    return Err(Error::new(VERB, ErrorKind::CqNotListed));
                }
            }
        }
    };
    cq.note_event();
    Ok(cq)
}

/// The error of a call that found the CQ's ring being replaced by
/// [`Cq::resize`] on another thread.
#[cold]
#[inline(never)]
fn resizing(verb: &'static str) -> Error {
    Error::new(verb, ErrorKind::Busy).with_detail("the CQ is being resized by another thread")
}

/// [`resizing`] of `ibv_poll_cq` (the C library's, [`Cq::poll_c`]).
#[cfg(feature = "internals")]
#[cold]
#[inline(never)]
fn resizing_poll() -> Error {
    resizing("ibv_poll_cq")
}

fn destroy_cmd(ctx: &Context, handle: u32) -> Result<CqDestroyed> {
    let mut cmd = DestroyCq::new_zeroed();
    cmd.cq_handle = handle;
    let r = ctx.channel().exec("ibv_destroy_cq", &cmd, &[], &mut [])?;
    Ok(CqDestroyed {
        comp_events_reported: r.comp_events_reported,
        async_events_reported: r.async_events_reported,
    })
}

impl Drop for Cq<'_> {
    fn drop(&mut self) {
        // The ring mapping is a field, so it is unmapped after this body
        // ran the destroy command.
        if self.live {
            if let Err(e) = destroy_cmd(self.ctx, self.handle) {
                crate::error::report_drop_failure(e);
            }
        }
    }
}
