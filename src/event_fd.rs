//! Reading fixed-size event records from an event file (completion
//! channel, async event file) and switching it to non-blocking: plain fd
//! helpers below the handles.

use rustix::fd::BorrowedFd;

use crate::error::{Error, ErrorKind, Result};

/// Reads exactly one fixed-size event record from an event file. `EAGAIN`
/// (non-blocking, nothing queued) becomes [`ErrorKind::WouldBlock`]; a
/// short read is [`ErrorKind::Malformed`]; `EINTR` is retried.
pub(crate) fn read_record(verb: &'static str, fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<()> {
    loop {
        match rustix::io::read(fd, &mut *buf) {
            Ok(n) if n == buf.len() => return Ok(()),
            Ok(_) => return Err(Error::new(verb, ErrorKind::Malformed)),
            Err(e) if e == rustix::io::Errno::INTR => continue,
            Err(e) if e == rustix::io::Errno::AGAIN => {
                return Err(Error::with_errno(verb, ErrorKind::WouldBlock, e))
            }
            Err(e) => return Err(Error::from_errno(verb, e)),
        }
    }
}

/// Sets or clears `O_NONBLOCK` on an event file.
pub(crate) fn set_nonblocking(verb: &'static str, fd: BorrowedFd<'_>, on: bool) -> Result<()> {
    rustix::io::ioctl_fionbio(fd, on).map_err(|e| Error::from_errno(verb, e))
}
