//! The RDMA netlink socket: requests built on the stack, replies received
//! into a fixed stack buffer and handed to the parsers in
//! [`super::netlink`].
//!
//! Like rdma-core (`util/rdma_nl.c` with libnl), a request carries
//! `NLM_F_REQUEST` (plus `NLM_F_DUMP` for the device list) and no
//! `NLM_F_ACK`. Without an RDMA netlink family in the kernel the socket or
//! the request fails, and discovery falls back to sysfs.

use super::netlink::{
    parse_chardev_reply, parse_dev_get_reply, parse_sys_get_reply, NlChardev, NlDevice,
};
use crate::abi::netlink::*;
use crate::error::{Errno, Error, ErrorKind, Result};
use rustix::fd::OwnedFd;
use rustix::net::netlink::{SocketAddrNetlink, RDMA};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
use zerocopy::IntoBytes;

/// Size of the receive buffer: the kernel sizes dump messages to at most
/// 32 KiB (`netlink_dump`), and one buffer holds whole messages only.
const RECV_BUF: usize = 32 * 1024;

/// Builds netlink messages into a caller-provided buffer. Every method
/// checks the remaining space and returns `None` instead of overflowing.
#[derive(Debug)]
pub struct NlWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
    msg_start: usize,
}

impl<'a> NlWriter<'a> {
    /// A writer over `buf`, starting empty.
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf,
            len: 0,
            msg_start: 0,
        }
    }

    fn put(&mut self, bytes: &[u8]) -> Option<()> {
        let end = self.len.checked_add(bytes.len())?;
        self.buf.get_mut(self.len..end)?.copy_from_slice(bytes);
        self.len = end;
        Some(())
    }

    fn pad(&mut self) -> Option<()> {
        let aligned = nl_align(self.len);
        self.buf.get_mut(self.len..aligned)?.fill(0);
        self.len = aligned;
        Some(())
    }

    /// Starts a message; finish it with [`NlWriter::end`].
    pub fn begin(&mut self, ty: u16, flags: u16, seq: u32) -> Option<&mut Self> {
        self.pad()?;
        self.msg_start = self.len;
        let hdr = NlMsgHdr {
            nlmsg_len: 0,
            nlmsg_type: ty,
            nlmsg_flags: flags,
            nlmsg_seq: seq,
            nlmsg_pid: 0,
        };
        self.put(hdr.as_bytes())?;
        Some(self)
    }

    /// Appends an attribute with a raw payload.
    pub fn attr(&mut self, ty: u16, payload: &[u8]) -> Option<&mut Self> {
        let len = u16::try_from(NLA_HDRLEN.checked_add(payload.len())?).ok()?;
        self.pad()?;
        self.put(
            NlAttr {
                nla_len: len,
                nla_type: ty,
            }
            .as_bytes(),
        )?;
        self.put(payload)?;
        Some(self)
    }

    /// Appends a NUL-terminated string attribute.
    pub fn attr_str(&mut self, ty: u16, s: &str) -> Option<&mut Self> {
        let len = u16::try_from(NLA_HDRLEN.checked_add(s.len())?.checked_add(1)?).ok()?;
        self.pad()?;
        self.put(
            NlAttr {
                nla_len: len,
                nla_type: ty,
            }
            .as_bytes(),
        )?;
        self.put(s.as_bytes())?;
        self.put(&[0])?;
        Some(self)
    }

    /// Appends a `u32` attribute.
    pub fn attr_u32(&mut self, ty: u16, v: u32) -> Option<&mut Self> {
        self.attr(ty, &v.to_ne_bytes())
    }

    /// Appends a `u64` attribute.
    pub fn attr_u64(&mut self, ty: u16, v: u64) -> Option<&mut Self> {
        self.attr(ty, &v.to_ne_bytes())
    }

    /// Ends the current message: pads it and fills in its `nlmsg_len`.
    pub fn end(&mut self) -> Option<&mut Self> {
        // Like libnl and the kernel, nlmsg_len covers the final padding.
        self.pad()?;
        let msg_len = u32::try_from(self.len.checked_sub(self.msg_start)?).ok()?;
        let start = self.msg_start;
        self.buf
            .get_mut(start..start.checked_add(4)?)?
            .copy_from_slice(&msg_len.to_ne_bytes());
        Some(self)
    }

    /// The bytes written so far.
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

/// An open `NETLINK_RDMA` socket.
#[derive(Debug)]
pub struct RdmaNetlink {
    fd: OwnedFd,
    seq: u32,
    verb: &'static str,
}

impl RdmaNetlink {
    /// Opens and binds the socket (`rdmanl_socket_alloc`); errors name
    /// `verb`. Fails when the kernel has no RDMA netlink support
    /// (`EPROTONOSUPPORT`).
    pub fn open(verb: &'static str) -> Result<Self> {
        let os = |e: Errno| Error::from_errno(verb, e);
        let fd = rustix::net::socket_with(
            AddressFamily::NETLINK,
            SocketType::RAW,
            SocketFlags::CLOEXEC,
            Some(RDMA),
        )
        .map_err(os)?;
        rustix::net::bind(&fd, &SocketAddrNetlink::new(0, 0)).map_err(os)?;
        // The kernel answers synchronously; the timeout only guards against
        // a reply that never comes.
        let timeout = core::time::Duration::from_secs(2);
        rustix::net::sockopt::set_socket_timeout(
            &fd,
            rustix::net::sockopt::Timeout::Recv,
            Some(timeout),
        )
        .map_err(os)?;
        Ok(Self { fd, seq: 1, verb })
    }

    fn send(&mut self, build: impl FnOnce(&mut NlWriter<'_>, u32) -> Option<()>) -> Result<()> {
        let mut buf = [0u8; 256];
        let mut w = NlWriter::new(&mut buf);
        self.seq = self.seq.wrapping_add(1);
        build(&mut w, self.seq).ok_or(Error::new(self.verb, ErrorKind::InvalidArgument))?;
        let kernel = SocketAddrNetlink::new(0, 0);
        rustix::net::sendto(&self.fd, w.bytes(), SendFlags::empty(), &kernel)
            .map_err(|e| Error::from_errno(self.verb, e))?;
        Ok(())
    }

    fn recv<'b>(&self, buf: &'b mut [u8; RECV_BUF]) -> Result<&'b [u8]> {
        let (_, len) = rustix::net::recv(&self.fd, &mut buf[..], RecvFlags::TRUNC)
            .map_err(|e| Error::from_errno(self.verb, e))?;
        // A truncated datagram would cut a message in half.
        if len > RECV_BUF {
            return Err(Error::new(self.verb, ErrorKind::Malformed));
        }
        Ok(buf.get(..len).unwrap_or(&[]))
    }

    /// `RDMA_NLDEV_CMD_GET` dump: every RDMA device in this network
    /// namespace (`rdmanl_get_devices`). An interrupted dump is retried once.
    pub fn devices(&mut self) -> Result<Vec<NlDevice>> {
        match self.devices_once() {
            Err(e) if e.errno() == Some(Errno::INTR) => self.devices_once(),
            r => r,
        }
    }

    fn devices_once(&mut self) -> Result<Vec<NlDevice>> {
        let ty = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
        self.send(|w, seq| {
            w.begin(ty, NLM_F_REQUEST | NLM_F_DUMP, seq)?.end()?;
            Some(())
        })?;
        let mut buf = [0u8; RECV_BUF];
        let mut devices = Vec::new();
        loop {
            let reply = parse_dev_get_reply(self.recv(&mut buf)?)?;
            devices.extend(reply.devices);
            if reply.done {
                return Ok(devices);
            }
        }
    }

    /// `RDMA_NLDEV_CMD_GET_CHARDEV` for client `client` (`"uverbs"`) of the
    /// device with kernel index `index` (`rdmanl_get_chardev`).
    pub fn chardev(&mut self, index: u32, client: &str) -> Result<NlChardev> {
        let ty = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV);
        self.send(|w, seq| {
            w.begin(ty, NLM_F_REQUEST, seq)?
                .attr_u32(RDMA_NLDEV_ATTR_DEV_INDEX, index)?
                .attr_str(RDMA_NLDEV_ATTR_CHARDEV_TYPE, client)?
                .end()?;
            Some(())
        })?;
        let mut buf = [0u8; RECV_BUF];
        parse_chardev_reply(self.recv(&mut buf)?)
    }

    /// `RDMA_NLDEV_CMD_SYS_GET`: whether the kernel copies pinned pages on
    /// fork (`RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK`).
    pub fn copy_on_fork(&mut self) -> Result<bool> {
        let ty = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET);
        self.send(|w, seq| {
            w.begin(ty, NLM_F_REQUEST, seq)?.end()?;
            Some(())
        })?;
        let mut buf = [0u8; RECV_BUF];
        parse_sys_get_reply(self.recv(&mut buf)?)
    }
}

/// Whether the kernel makes fork safe for registered memory by itself
/// (copy-on-fork of pinned pages, Linux 5.13+), as rdma-core's
/// `get_copy_on_fork` asks it; `ibv_fork_init` is then unneeded.
///
/// Errors if RDMA netlink is unavailable; rdma-core treats that as `false`.
#[doc(alias = "get_copy_on_fork")]
pub fn copy_on_fork() -> Result<bool> {
    RdmaNetlink::open("ibv_is_fork_initialized")?.copy_on_fork()
}
