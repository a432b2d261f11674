//! The event channel (`rdma_create_event_channel`): an open
//! `/dev/infiniband/rdma_cm`. Ids are created on it and every event of
//! theirs is read from it. Its file descriptor works with `poll`/`epoll`
//! (readable when an event is queued) and in non-blocking mode, so any
//! event loop can wait on it.

use rustix::event::{PollFd, PollFlags};
use rustix::fd::{AsFd, BorrowedFd};
use zerocopy::FromZeros;

use crate::abi::ucma::{EventResp, GetEvent, RDMA_USER_CM_CMD_GET_EVENT};
use crate::cmd::ucma::UcmaFile;
use crate::error::{Error, ErrorKind, Result};

use super::event::{Event, EventKind};
use super::id::CmId;

const GET_EVENT: &str = "rdma_get_cm_event";

/// `struct rdma_event_channel`.
#[doc(alias = "rdma_event_channel")]
#[derive(Debug)]
pub struct EventChannel {
    pub(crate) file: UcmaFile,
}

impl EventChannel {
    /// `rdma_create_event_channel`: opens the connection manager. Fails
    /// with [`ErrorKind::NoDevice`] (and the fix in the detail) if the
    /// `rdma_ucm` module is not loaded.
    #[doc(alias = "rdma_create_event_channel")]
    pub fn create() -> Result<Self> {
        Ok(Self { file: UcmaFile::open("rdma_create_event_channel")? })
    }

    /// Sets or clears `O_NONBLOCK` on the channel's fd: when set,
    /// [`get_event`](Self::get_event) returns [`ErrorKind::WouldBlock`]
    /// instead of waiting.
    pub fn set_nonblocking(&self, on: bool) -> Result<()> {
        self.file.set_nonblocking("rdma_create_event_channel", on)
    }

    /// `rdma_get_cm_event`: the next event of any id on this channel;
    /// waits for one unless the channel is non-blocking. A connection
    /// request carries its new id ([`Event::take_request`]).
    #[doc(alias = "rdma_get_cm_event")]
    #[doc(alias = "rdma_ack_cm_event")]
    pub fn get_event(&self) -> Result<Event<'_>> {
        let cmd = GetEvent::new_zeroed();
        let resp: EventResp = match self.file.call(GET_EVENT, RDMA_USER_CM_CMD_GET_EVENT, &cmd, 0) {
            Ok(r) => r,
            Err(e) if e.errno() == Some(rustix::io::Errno::AGAIN) => {
                return Err(Error::with_errno(GET_EVENT, ErrorKind::WouldBlock, rustix::io::Errno::AGAIN)
                    .with_detail("no event queued on the non-blocking channel"))
            }
            Err(e) => return Err(e),
        };
        let request = (EventKind::from_raw(resp.event) == EventKind::ConnectRequest)
            .then(|| CmId::adopt(self, resp.id, resp.uid));
        Ok(Event::new(self, resp, request))
    }

    /// Waits up to `timeout_ms` milliseconds (negative: forever) for an
    /// event, then reads it; `Ok(None)` if none arrived in time.
    pub fn get_event_timeout(&self, timeout_ms: i32) -> Result<Option<Event<'_>>> {
        let mut fds = [PollFd::new(&self.file, PollFlags::IN)];
        let ts = rustix::event::Timespec {
            tv_sec: i64::from(timeout_ms.max(0) / 1000),
            tv_nsec: i64::from(timeout_ms.max(0) % 1000) * 1_000_000,
        };
        let timeout = (timeout_ms >= 0).then_some(&ts);
        loop {
            match rustix::event::poll(&mut fds, timeout) {
                Ok(0) => return Ok(None),
                Ok(_) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(Error::from_errno(GET_EVENT, e)),
            }
        }
        match self.get_event() {
            Ok(ev) => Ok(Some(ev)),
            // Another reader took it between poll and read.
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

impl AsFd for EventChannel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}
