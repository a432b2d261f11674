//! Completions, connection-manager events and device events as futures,
//! on tokio's reactor (feature `tokio`).
//!
//! The three event sources of the library are file descriptors the kernel
//! makes readable: a [`CompChannel`](crate::CompChannel), an
//! [`EventChannel`](crate::cm::EventChannel) and a context's async event
//! file ([`Context::async_event_fd`](crate::Context::async_event_fd)).
//! Each implements [`AsFd`](std::os::fd::AsFd), so any event loop can wait
//! on them; this module registers them with tokio's
//! `tokio::io::unix::AsyncFd` (which makes them non-blocking):
//!
//! | wrapper | future |
//! |---|---|
//! | [`AsyncCq`] (a CQ with a channel) | [`next_completion`](AsyncCq::next_completion), [`next_completions`](AsyncCq::next_completions) |
//! | [`AsyncEventChannel`] | [`next_event`](AsyncEventChannel::next_event), [`resolve`](AsyncEventChannel::resolve), [`connect`](AsyncEventChannel::connect), [`next_request`](AsyncEventChannel::next_request), [`accept`](AsyncEventChannel::accept), [`disconnect`](AsyncEventChannel::disconnect) |
//! | [`AsyncDeviceEvents`] | [`next_event`](AsyncDeviceEvents::next_event) |
//!
//! # Cancel safety
//!
//! Dropping any of these futures before it finished loses nothing: a
//! completion is taken off the CQ, and an event read from its file, only
//! in the same step that returns it (`Poll::Ready`); the only point where
//! a future waits is tokio's readiness, which consumes nothing. So
//! `tokio::select!` and `tokio::time::timeout` may drop them at will. (The
//! connect and accept futures own the id and QP given to them: dropping
//! one destroys the half-made connection, as dropping a `CmId` does.)
//!
//! Each wrapper registers its fd with the reactor, and one fd can be
//! registered once: make one wrapper per channel and share it (all
//! methods take `&self`). The wrapper owns the channel's events: reading
//! them elsewhere meanwhile can leave a future waiting for an event that
//! someone else took.
//!
//! Creating a wrapper needs a tokio runtime (it fails with
//! [`ErrorKind::Unsupported`] outside one);
//! the runtime flavour is the caller's choice.
//!
//! # Safety
//!
//! Registering a descriptor with tokio (`AsyncFd::register_with_interest`)
//! is the only unsafe operation. Its contract — the descriptor stays open
//! and names the same file for the `AsyncFd`'s whole life, and `as_raw_fd`
//! always returns it — holds because each wrapper keeps a shared borrow of
//! the owner of the descriptor (`&CompChannel`, `&EventChannel`,
//! `&Context`) for as long as it holds the `AsyncFd`: the owner cannot be
//! dropped (closing the fd) or moved meanwhile, and none of them replaces
//! its descriptor. `Fd` returns the number it was made with.
#![allow(unsafe_code)]

mod cm;
mod cq;
mod device;

pub use cm::AsyncEventChannel;
pub use cq::AsyncCq;
pub use device::AsyncDeviceEvents;

use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

use crate::error::{Error, ErrorKind, Result};

/// A descriptor borrowed by the wrapper that registers it (the wrapper
/// holds the borrow of the owner for its whole life, so the fd outlives
/// the registration; deregistering does not close it).
#[derive(Debug)]
struct Fd(RawFd);

impl AsRawFd for Fd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// Registers `fd` for readability with the current tokio runtime. The
/// caller keeps the borrow `fd` came from for as long as it keeps the
/// result.
fn register(verb: &'static str, fd: BorrowedFd<'_>) -> Result<AsyncFd<Fd>> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(Error::new(verb, ErrorKind::Unsupported).with_detail("not inside a tokio runtime"));
    }
    // SAFETY: `fd` is borrowed from its owner, and the caller (a wrapper
    // of this module) keeps that borrow for as long as it keeps the
    // returned `AsyncFd` (module docs, # Safety): the descriptor stays
    // open and the same; `Fd::as_raw_fd` always returns it.
    unsafe { AsyncFd::register_with_interest(Fd(fd.as_raw_fd()), Interest::READABLE) }
        .map_err(|e| io_error(verb, &e.into_parts().1))
}

/// The library error for an error of tokio's reactor.
fn io_error(verb: &'static str, e: &std::io::Error) -> Error {
    let errno = rustix::io::Errno::from_io_error(e).unwrap_or(rustix::io::Errno::IO);
    Error::from_errno(verb, errno).with_detail("tokio reactor")
}
