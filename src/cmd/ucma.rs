//! The connection manager's command file, `/dev/infiniband/rdma_cm` (the
//! kernel's `ucma`): one `write()` per command, a [`UcmaHdr`] followed by
//! the command struct.
//!
//! Soundness follows [`super::channel`]'s invariant: the only addresses
//! handed to the kernel are a response buffer, mutably borrowed for the
//! whole call (its address is written into the command's `response`
//! field just before the `write()`), and, for `SET_OPTION`, an option
//! value borrowed for the call, which the kernel only reads. Every write
//! goes through [`sys_write`] (the C library's opaque `write`) and is
//! followed by [`kernel_wrote`] on the response. This file itself needs no
//! `unsafe`.

use core::mem::size_of;

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes};

use crate::abi::ucma::UcmaHdr;
use crate::error::{Error, ErrorKind, Result};

use super::channel::{kernel_wrote, sys_write};

/// Largest command we send (header + `struct rdma_ucm_accept`, rounded up).
const MAX_UCMA_CMD: usize = 512;

/// The path of the connection manager's device file.
pub const RDMA_CM_PATH: &str = "/dev/infiniband/rdma_cm";

/// An open `/dev/infiniband/rdma_cm`.
#[derive(Debug)]
pub struct UcmaFile {
    fd: OwnedFd,
}

impl UcmaFile {
    /// Opens the connection manager's file (`O_RDWR | O_CLOEXEC`).
    pub fn open(verb: &'static str) -> Result<Self> {
        use rustix::fs::{Mode, OFlags};
        match rustix::fs::open(RDMA_CM_PATH, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()) {
            Ok(fd) => Ok(Self { fd }),
            Err(e) if e == rustix::io::Errno::NOENT || e == rustix::io::Errno::NODEV => {
                Err(Error::with_errno(verb, ErrorKind::NoDevice, e)
                    .with_detail("no /dev/infiniband/rdma_cm: load the rdma_ucm module (modprobe rdma_ucm)"))
            }
            Err(e) if e == rustix::io::Errno::ACCESS || e == rustix::io::Errno::PERM => {
                Err(Error::with_errno(verb, ErrorKind::PermissionDenied, e)
                    .with_detail("no permission on /dev/infiniband/rdma_cm (udev rule or group rdma)"))
            }
            Err(e) => Err(Error::from_errno(verb, e)),
        }
    }

    /// Sets or clears `O_NONBLOCK`: with it, `GET_EVENT` fails with
    /// `EAGAIN` ([`ErrorKind::WouldBlock`]) instead of waiting.
    pub fn set_nonblocking(&self, verb: &'static str, on: bool) -> Result<()> {
        use rustix::fs::OFlags;
        let flags = rustix::fs::fcntl_getfl(&self.fd).map_err(|e| Error::from_errno(verb, e))?;
        let flags = if on { flags | OFlags::NONBLOCK } else { flags - OFlags::NONBLOCK };
        rustix::fs::fcntl_setfl(&self.fd, flags).map_err(|e| Error::from_errno(verb, e))
    }

    /// Whether `O_NONBLOCK` is set.
    pub fn is_nonblocking(&self) -> bool {
        rustix::fs::fcntl_getfl(&self.fd).is_ok_and(|f| f.contains(rustix::fs::OFlags::NONBLOCK))
    }

    /// Sends command `cmd` whose struct `body` carries no response address.
    pub fn send<C: IntoBytes + Immutable>(&self, verb: &'static str, cmd: u32, body: &C) -> Result<()> {
        let mut frame = [0u64; MAX_UCMA_CMD / 8];
        let len = Self::frame(verb, &mut frame, cmd, body.as_bytes(), 0)?;
        self.write(verb, &frame.as_bytes()[..len])
    }

    /// Sends command `cmd` whose struct `body` has its `__u64 response`
    /// field at byte offset `resp_at`; returns the `R` the kernel wrote.
    pub fn call<C, R>(&self, verb: &'static str, cmd: u32, body: &C, resp_at: usize) -> Result<R>
    where
        C: IntoBytes + Immutable,
        R: FromBytes + IntoBytes + FromZeros,
    {
        let mut out = R::new_zeroed();
        let mut frame = [0u64; MAX_UCMA_CMD / 8];
        let body = body.as_bytes();
        if resp_at + 8 > body.len() {
            return Err(Error::new(verb, ErrorKind::InvalidArgument).with_detail("response field outside the command"));
        }
        let len = Self::frame(verb, &mut frame, cmd, body, size_of::<R>())?;
        let hdr = size_of::<UcmaHdr>();
        // The response address: `out` stays mutably borrowed until we return.
        let addr = out.as_mut_bytes().as_mut_ptr() as u64;
        frame.as_mut_bytes()[hdr + resp_at..hdr + resp_at + 8].copy_from_slice(&addr.to_ne_bytes());
        let sent = self.write(verb, &frame.as_bytes()[..len]);
        kernel_wrote(out.as_mut_bytes());
        sent.map(|()| out)
    }

    /// Sends `SET_OPTION`-style command `cmd` whose `__u64` field at
    /// `ptr_at` is the address of `value`, which the kernel reads.
    pub fn send_with_value<C: IntoBytes + Immutable>(
        &self,
        verb: &'static str,
        cmd: u32,
        body: &C,
        ptr_at: usize,
        value: &[u8],
    ) -> Result<()> {
        let mut frame = [0u64; MAX_UCMA_CMD / 8];
        let body = body.as_bytes();
        if ptr_at + 8 > body.len() {
            return Err(Error::new(verb, ErrorKind::InvalidArgument).with_detail("value field outside the command"));
        }
        let len = Self::frame(verb, &mut frame, cmd, body, 0)?;
        let hdr = size_of::<UcmaHdr>();
        // `value` stays borrowed until we return; the kernel only reads it.
        let addr = value.as_ptr() as u64;
        frame.as_mut_bytes()[hdr + ptr_at..hdr + ptr_at + 8].copy_from_slice(&addr.to_ne_bytes());
        self.write(verb, &frame.as_bytes()[..len])
    }

    /// Lays out header + body in `frame`; returns the length.
    fn frame(verb: &'static str, frame: &mut [u64], cmd: u32, body: &[u8], out: usize) -> Result<usize> {
        let hdr = size_of::<UcmaHdr>();
        let total = hdr + body.len();
        let (Ok(inlen), Ok(outlen)) = (u16::try_from(body.len()), u16::try_from(out)) else {
            return Err(Error::new(verb, ErrorKind::InvalidArgument));
        };
        let bytes = frame.as_mut_bytes();
        if total > bytes.len() {
            return Err(Error::new(verb, ErrorKind::InvalidArgument));
        }
        bytes[..hdr].copy_from_slice(UcmaHdr { cmd, r#in: inlen, out: outlen }.as_bytes());
        bytes[hdr..total].copy_from_slice(body);
        Ok(total)
    }

    fn write(&self, verb: &'static str, frame: &[u8]) -> Result<()> {
        match sys_write(self.fd.as_fd(), frame) {
            Ok(n) if n == frame.len() => Ok(()),
            Ok(_) => Err(Error::new(verb, ErrorKind::Malformed).with_detail("short write to rdma_cm")),
            Err(e) => Err(Error::from_errno(verb, e)),
        }
    }
}

impl AsFd for UcmaFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
