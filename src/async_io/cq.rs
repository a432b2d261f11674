//! [`AsyncCq`]: a CQ whose completions are awaited on tokio.

use rustix::fd::AsFd;
use tokio::io::unix::{AsyncFd, AsyncFdReadyGuard};

use crate::comp_channel::CompChannel;
use crate::cq::{get_cq_event, Cq};
use crate::error::{Error, ErrorKind, Result};
use crate::wc::Wc;

use super::{io_error, register, Fd};

const VERB: &str = "AsyncCq";

/// A CQ created with a [`CompChannel`], its channel registered with the
/// tokio reactor: `acq.next_completion().await`.
///
/// A waiting future polls the CQ, arms it ([`Cq::req_notify`]) once, polls
/// again (a completion may have come before the arm) and then waits for
/// the channel to become readable; it reads and acknowledges the channel's
/// events itself. Completions come out in the CQ's order. The channel
/// must serve this CQ alone (an event of another CQ is an
/// [`ErrorKind::CqNotListed`] error, the event kept for that CQ: see
/// [`get_cq_event`]).
///
/// Cancel-safe: a completion leaves the CQ only in the step that returns
/// it, so a dropped `next_completion` future takes none with it. One
/// consumer at a time (the futures borrow the `AsyncCq` mutably): the arm
/// it keeps track of must be its own.
///
/// ```no_run
/// # async fn f(ctx: &verbs::Context) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// use verbs::async_io::AsyncCq;
/// use verbs::{CompChannel, Cq};
///
/// let ch = CompChannel::create(ctx)?;
/// let cq = Cq::create(ctx, 64, Some(&ch), 0)?;
/// let mut acq = AsyncCq::new(&cq)?;
/// // ... create QPs on `cq`, post ...
/// let wc = acq.next_completion().await?;
/// assert!(wc.status().is_success());
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct AsyncCq<'c, 'ctx> {
    cq: &'c Cq<'ctx>,
    channel: &'ctx CompChannel<'ctx>,
    fd: AsyncFd<Fd>,
    /// The CQ is armed and its event not yet read.
    armed: bool,
}

impl<'c, 'ctx> AsyncCq<'c, 'ctx> {
    /// Registers `cq`'s completion channel with the current tokio runtime
    /// and makes it non-blocking. A CQ without a channel is an
    /// [`ErrorKind::InvalidArgument`] error; outside a runtime,
    /// [`ErrorKind::Unsupported`].
    pub fn new(cq: &'c Cq<'ctx>) -> Result<Self> {
        let Some(channel) = cq.channel() else {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument)
                .with_detail("the CQ has no completion channel (Cq::create with Some(&channel))"));
        };
        channel.set_nonblocking(true)?;
        let fd = register(VERB, channel.as_fd())?;
        Ok(Self { cq, channel, fd, armed: false })
    }

    /// The CQ.
    pub fn cq(&self) -> &'c Cq<'ctx> {
        self.cq
    }

    /// The next completion: polls the CQ and, while it is empty, waits
    /// for a completion event. Cancel-safe.
    pub async fn next_completion(&mut self) -> Result<Wc> {
        let mut wc = [Wc::ZERO];
        self.next_completions(&mut wc).await?;
        Ok(wc[0])
    }

    /// Up to `wc.len()` completions (at least one) into `wc`, as
    /// [`Cq::poll`] does once the CQ is not empty; returns how many.
    /// Cancel-safe. An empty `wc` is an [`ErrorKind::InvalidArgument`]
    /// error.
    pub async fn next_completions(&mut self, wc: &mut [Wc]) -> Result<usize> {
        if wc.is_empty() {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument).with_detail("no room for a completion"));
        }
        loop {
            let n = self.poll_armed(wc)?;
            if n > 0 {
                return Ok(n);
            }
            // The only await: readiness, which takes nothing.
            let guard = self.fd.readable().await.map_err(|e| io_error(VERB, &e))?;
            Self::drain(self.channel, self.cq, &mut self.armed, guard)?;
        }
    }

    /// Polls; if empty, arms the CQ (once per event) and polls again.
    fn poll_armed(&mut self, wc: &mut [Wc]) -> Result<usize> {
        let n = self.cq.poll(wc)?;
        if n > 0 || self.armed {
            return Ok(n);
        }
        self.cq.req_notify(false)?;
        self.armed = true;
        self.cq.poll(wc)
    }

    /// Reads and acknowledges every queued event of the channel; the
    /// readiness is cleared once the channel is empty.
    fn drain(channel: &CompChannel<'_>, cq: &Cq<'_>, armed: &mut bool, mut guard: AsyncFdReadyGuard<'_, Fd>) -> Result<()> {
        loop {
            match get_cq_event(channel, &[cq]) {
                Ok(_) => {
                    *armed = false;
                    cq.ack_events(1)?;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    guard.clear_ready();
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl<'ctx> core::ops::Deref for AsyncCq<'_, 'ctx> {
    type Target = Cq<'ctx>;
    fn deref(&self) -> &Cq<'ctx> {
        self.cq
    }
}
