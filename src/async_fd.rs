//! [`AsyncEventFd`]: the context's async event file as an [`AsFd`] value,
//! for event loops (epoll, mio, tokio's `AsyncFd`, ...).

use rustix::fd::{AsFd, BorrowedFd};

use crate::context::Context;

/// The async event file of a context (`ibv_context.async_fd`), borrowed:
/// readable when [`Context::get_async_event`] has an event to return.
/// Make it non-blocking ([`Context::set_async_nonblocking`]) before
/// handing it to an event loop.
#[derive(Clone, Copy, Debug)]
pub struct AsyncEventFd<'ctx> {
    ctx: &'ctx Context,
}

impl<'ctx> AsyncEventFd<'ctx> {
    /// The context whose events the file carries.
    pub fn context(&self) -> &'ctx Context {
        self.ctx
    }
}

impl AsFd for AsyncEventFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.ctx.async_fd()
    }
}

impl Context {
    /// The async event file as an [`AsFd`] value (see [`AsyncEventFd`];
    /// [`Context::async_fd`] is the same descriptor borrowed directly).
    pub fn async_event_fd(&self) -> AsyncEventFd<'_> {
        AsyncEventFd { ctx: self }
    }
}
