//! Waiting for a completion with a deadline: [`Cq::wait`] busy-polls the
//! CQ for a while, then sleeps on its completion channel until a
//! completion arrives or the timeout passes.
//!
//! # Latency against CPU
//!
//! The two ways to learn about a completion cost very different things:
//!
//! * **Busy polling** reads the CQ ring in user memory, no system call:
//!   a completion is seen within one poll of its arrival (well under a
//!   microsecond on real hardware), but the waiting thread keeps a core
//!   at 100 % for as long as it polls.
//! * **Completion events** arm the CQ (`ibv_req_notify_cq`: a system call
//!   on rxe, a store on siw), sleep in `poll(2)` on the channel and read
//!   the event: the thread uses no CPU while it sleeps, but the wake-up
//!   (interrupt or softirq, scheduler, `poll` return, `read`, a re-poll)
//!   adds several microseconds to tens of microseconds on real hardware,
//!   and far more in a VM.
//!
//! [`Cq::wait`] spins for `spin` first, so a completion that comes soon
//! (a reply expected within the round trip) costs no wake-up, then falls
//! back to events so that a long wait costs no CPU. `spin` sets the
//! trade-off: `Duration::ZERO` sleeps at once (cheapest in CPU, the
//! wake-up latency on every wait); a spin longer than the usual gap
//! between completions makes the wait a busy poll. [`DEFAULT_SPIN`]
//! (50 µs) covers a round trip on one switch. Without a channel, the whole
//! timeout is spent polling.
//!
//! Time comes from `clock_gettime(CLOCK_MONOTONIC)` (the vDSO, no system
//! call), so this works without `std`.

use core::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};

use crate::cq::{get_cq_event, Cq};
use crate::error::{Error, ErrorKind, Result};
use crate::wc::Wc;

const VERB: &str = "Cq::wait";

/// The busy-poll time of [`Cq::wait`] before it sleeps.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(50);

/// Polls between two clock reads while spinning.
const POLLS_PER_CLOCK: u32 = 16;

/// The monotonic clock.
fn now() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn timespec(d: Duration) -> Timespec {
    Timespec { tv_sec: d.as_secs().min(i64::MAX as u64) as i64, tv_nsec: i64::from(d.subsec_nanos()) }
}

fn timed_out() -> Error {
    Error::new(VERB, ErrorKind::TimedOut).with_detail("no completion arrived before the timeout")
}

impl Cq<'_> {
    /// No C equivalent (what users of `ibv_poll_cq` write by hand): waits
    /// until the CQ has a completion, moves up to `wc.len()` into `wc` and
    /// returns how many (at least one), or fails with
    /// [`ErrorKind::TimedOut`] once `timeout` passed (`None`: no limit).
    ///
    /// Busy-polls for [`DEFAULT_SPIN`], then sleeps on the CQ's completion
    /// channel (see [`Cq::wait_spin`] and the [module docs](crate::cq_wait)
    /// for the latency trade-off).
    #[doc(alias = "ibv_poll_cq")]
    #[doc(alias = "ibv_get_cq_event")]
    pub fn wait(&self, wc: &mut [Wc], timeout: Option<Duration>) -> Result<usize> {
        self.wait_spin(wc, DEFAULT_SPIN, timeout)
    }

    /// [`Cq::wait`] with a chosen busy-poll time: polls for `spin`, then,
    /// if the CQ has a [channel](Cq::channel), arms it
    /// ([`Cq::req_notify`]), polls once more (a completion may have come
    /// before the arm) and sleeps in `poll(2)` on the channel until an
    /// event or the timeout; each event is read and acknowledged here and
    /// the CQ polled again. A CQ without a channel is polled until the
    /// timeout.
    ///
    /// Completions are taken off the CQ only into `wc`; nothing is lost
    /// on a timeout. An event of another CQ on the same channel is kept
    /// for that CQ ([`get_cq_event`]'s rules), but a channel that serves
    /// only this CQ is what this is made for. If other threads read the
    /// same channel, make it non-blocking
    /// ([`CompChannel::set_nonblocking`](crate::CompChannel::set_nonblocking)):
    /// one of them may take the event between `poll(2)` and the read.
    ///
    /// An empty `wc` is an [`ErrorKind::InvalidArgument`] error; errors of
    /// [`Cq::poll`], [`Cq::req_notify`] and reading the channel are
    /// passed on.
    pub fn wait_spin(&self, wc: &mut [Wc], spin: Duration, timeout: Option<Duration>) -> Result<usize> {
        if wc.is_empty() {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument).with_detail("no room for a completion"));
        }
        let start = now();
        let deadline = timeout.and_then(|t| start.checked_add(t));
        let left = |t: Duration| deadline.map(|d| d.saturating_sub(t));

        // Busy-poll: for `spin`, or for the whole timeout without a channel.
        let channel = self.channel();
        let spin_end = if channel.is_some() { start.checked_add(spin) } else { deadline };
        let mut polls = 0u32;
        loop {
            let n = self.poll(wc)?;
            if n > 0 {
                return Ok(n);
            }
            polls = polls.wrapping_add(1);
            if polls.is_multiple_of(POLLS_PER_CLOCK) {
                let t = now();
                if spin_end.is_some_and(|e| t >= e) {
                    break;
                }
            }
            core::hint::spin_loop();
        }
        let Some(channel) = channel else { return Err(timed_out()) };

        // Sleep on the channel. After an event the CQ is polled before it
        // is armed again: arming a CQ that holds a completion past the
        // consumer index makes a ConnectX send another event at once (the
        // arm doorbell carries the index), one per wait that nobody reads.
        loop {
            self.req_notify(false)?;
            let n = self.poll(wc)?;
            if n > 0 {
                return Ok(n);
            }
            if channel.pending_cq_events().any(|h| h == self.user_handle()) {
                // Another caller of get_cq_event kept this CQ's event.
                get_cq_event(channel, &[self])?;
                self.ack_events(1)?;
                let n = self.poll(wc)?;
                if n > 0 {
                    return Ok(n);
                }
                continue;
            }
            let rest = left(now());
            if rest == Some(Duration::ZERO) {
                return Err(timed_out());
            }
            let ts = rest.map(timespec);
            let mut fds = [PollFd::new(channel, PollFlags::IN)];
            match rustix::event::poll(&mut fds, ts.as_ref()) {
                Ok(0) => {
                    // Timed out: one last look.
                    let n = self.poll(wc)?;
                    return if n > 0 { Ok(n) } else { Err(timed_out()) };
                }
                Ok(_) => match get_cq_event(channel, &[self]) {
                    Ok(_) => {
                        self.ack_events(1)?;
                        let n = self.poll(wc)?;
                        if n > 0 {
                            return Ok(n);
                        }
                    }
                    // Another reader took it, or it was another CQ's
                    // (kept for that CQ): poll and sleep again.
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::CqNotListed) => {}
                    Err(e) => return Err(e),
                },
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(Error::from_errno(VERB, e)),
            }
        }
    }
}
