//! [`AsyncDeviceEvents`]: a context's asynchronous events as a future.

use tokio::io::unix::AsyncFd;

use crate::async_event::AsyncEvent;
use crate::context::Context;
use crate::error::{ErrorKind, Result};

use super::{io_error, register, Fd};

const VERB: &str = "ibv_get_async_event";

/// A context's async event file ([`Context::async_event_fd`]) registered
/// with the tokio reactor: `events.next_event().await` is
/// `ibv_get_async_event` (port up/down, QP and CQ errors, SRQ limit).
#[derive(Debug)]
pub struct AsyncDeviceEvents<'ctx> {
    ctx: &'ctx Context,
    fd: AsyncFd<Fd>,
}

impl<'ctx> AsyncDeviceEvents<'ctx> {
    /// Registers the context's async event file with the current tokio
    /// runtime and makes it non-blocking; outside a runtime,
    /// [`ErrorKind::Unsupported`].
    pub fn new(ctx: &'ctx Context) -> Result<Self> {
        ctx.set_async_nonblocking(true)?;
        let fd = register(VERB, ctx.async_fd())?;
        Ok(Self { ctx, fd })
    }

    /// `ibv_get_async_event` as a future: the next event. Cancel-safe: an
    /// event is read only in the step that returns it. (Nothing to
    /// acknowledge: see [`Context::ack_async_event`].)
    #[doc(alias = "ibv_get_async_event")]
    pub async fn next_event(&self) -> Result<AsyncEvent> {
        loop {
            let mut guard = self.fd.readable().await.map_err(|e| io_error(VERB, &e))?;
            match self.ctx.get_async_event() {
                Ok(ev) => return Ok(ev),
                Err(e) if e.kind() == ErrorKind::WouldBlock => guard.clear_ready(),
                Err(e) => return Err(e),
            }
        }
    }
}
