//! Completion channels (`struct ibv_comp_channel`): a file descriptor on
//! which the kernel reports "this CQ has a new completion" events.
//!
//! A CQ created with a channel (and armed with `ibv_req_notify_cq`) queues
//! one `struct ib_uverbs_comp_event_desc` record on the channel when a
//! completion arrives. The fd works with poll/epoll (readable = an event is
//! queued); [`CompChannel::read_event`] takes one record off, which is what
//! `ibv_get_cq_event` builds on.
//!
//! # Lifetime
//!
//! libibverbs counts the CQs using a channel and makes
//! `ibv_destroy_comp_channel` fail with `EBUSY` while any exist. Here a CQ
//! created on a channel borrows it (`&'ch CompChannel`), so destroying a
//! channel under its CQs does not compile; destroying it is closing the fd,
//! which cannot fail.

use core::sync::atomic::{AtomicU64, Ordering};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use zerocopy::{FromZeros, IntoBytes};

use crate::abi::uverbs::{CompEventDesc, CreateCompChannel};
use crate::context::Context;
use crate::event_fd::{read_record, set_nonblocking};
use crate::error::Result;

/// A completion event channel (`struct ibv_comp_channel`).
#[doc(alias = "ibv_comp_channel")]
#[derive(Debug)]
pub struct CompChannel<'ctx> {
    ctx: &'ctx Context,
    fd: OwnedFd,
    /// Events read for CQs the caller of
    /// [`get_cq_event`](crate::cq::get_cq_event) did not list: kept here
    /// (as the CQ's user handle) so that no event is lost. `EMPTY`, or
    /// `RESERVED` by a call that is reading an event, or a user handle.
    pending: [AtomicU64; PENDING_SLOTS],
}

/// How many events for unlisted CQs a channel keeps.
pub const PENDING_SLOTS: usize = 4;
/// A free pending slot (user handles start at 1).
const EMPTY: u64 = 0;
/// A slot held by a call that is reading an event (user handles never
/// reach `u64::MAX`).
const RESERVED: u64 = u64::MAX;

impl<'ctx> CompChannel<'ctx> {
    /// `ibv_create_comp_channel`: creates a completion channel (a new fd,
    /// close-on-exec, blocking).
    #[doc(alias = "ibv_create_comp_channel")]
    pub fn create(ctx: &'ctx Context) -> Result<Self> {
        const VERB: &str = "ibv_create_comp_channel";
        let cmd = CreateCompChannel::new_zeroed();
        let resp = ctx.channel().exec_new_fd(VERB, &cmd, &[], &mut [])?;
        let fd = crate::cmd::channel::adopt_fd(VERB, resp.fd)?;
        Ok(Self { ctx, fd, pending: Default::default() })
    }

    /// The context the channel belongs to.
    pub fn context(&self) -> &'ctx Context {
        self.ctx
    }

    /// Reads one completion event: the `user_handle` of the CQ that had a
    /// completion (the value its creator gave the kernel). Blocks unless
    /// the channel is non-blocking, in which case an empty channel gives
    /// [`ErrorKind::WouldBlock`](crate::ErrorKind::WouldBlock).
    ///
    /// This is the read half of `ibv_get_cq_event`; the CQ layer maps the
    /// handle back to its CQ and counts events for `ibv_ack_cq_events`.
    #[doc(alias = "ibv_get_cq_event")]
    pub fn read_event(&self) -> Result<u64> {
        let mut ev = CompEventDesc::new_zeroed();
        read_record("ibv_get_cq_event", self.fd.as_fd(), ev.as_mut_bytes())?;
        Ok(ev.cq_handle)
    }

    /// The user handles ([`Cq::user_handle`](crate::Cq::user_handle)) of
    /// the CQs whose events [`get_cq_event`](crate::cq::get_cq_event) read
    /// but could not match to a CQ it was given. Each stays pending until a
    /// call lists its CQ. These events no longer make the fd readable.
    pub fn pending_cq_events(&self) -> impl Iterator<Item = u64> + '_ {
        self.pending
            .iter()
            .map(|s| s.load(Ordering::Acquire))
            .filter(|&h| h != EMPTY && h != RESERVED)
    }

    /// Takes a pending event whose handle `want` accepts.
    pub(crate) fn take_pending(&self, want: impl Fn(u64) -> bool) -> Option<u64> {
        self.pending.iter().find_map(|s| {
            let h = s.load(Ordering::Acquire);
            (h != EMPTY && h != RESERVED && want(h))
                .then(|| s.compare_exchange(h, EMPTY, Ordering::AcqRel, Ordering::Relaxed).ok())
                .flatten()
        })
    }

    /// Reserves a slot in which an event read next can be kept if no CQ
    /// claims it; `None` when every slot is taken.
    pub(crate) fn reserve_pending(&self) -> Option<PendingSlot<'_>> {
        self.pending
            .iter()
            .find(|s| s.compare_exchange(EMPTY, RESERVED, Ordering::Acquire, Ordering::Relaxed).is_ok())
            .map(|slot| PendingSlot { slot })
    }

    /// Switches the channel between blocking and non-blocking reads
    /// (`O_NONBLOCK`, as `fcntl(channel->fd, F_SETFL, O_NONBLOCK)` does in C).
    pub fn set_nonblocking(&self, nonblocking: bool) -> Result<()> {
        set_nonblocking("ibv_comp_channel", self.fd.as_fd(), nonblocking)
    }

    /// `ibv_destroy_comp_channel`: closes the channel. CQs using it borrow
    /// it, so none can still exist (libibverbs' `EBUSY` case cannot arise).
    #[doc(alias = "ibv_destroy_comp_channel")]
    pub fn destroy(self) {
        drop(self);
    }
}

impl AsFd for CompChannel<'_> {
    /// The channel's fd (`ibv_comp_channel.fd`), for poll/epoll.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A reserved pending slot: freed on drop unless [`PendingSlot::keep`]
/// stored an event in it.
pub(crate) struct PendingSlot<'c> {
    slot: &'c AtomicU64,
}

impl PendingSlot<'_> {
    /// Keeps the event of CQ user handle `handle` in the slot.
    pub(crate) fn keep(self, handle: u64) {
        self.slot.store(handle, Ordering::Release);
        core::mem::forget(self);
    }
}

impl Drop for PendingSlot<'_> {
    fn drop(&mut self) {
        self.slot.store(EMPTY, Ordering::Release);
    }
}


