//! Messages with descriptors (`SCM_RIGHTS`) on the shim's `SOCK_SEQPACKET`
//! socket, used by both the daemon and the shim.
//!
//! # Safety
//! `sendmsg`/`recvmsg` are handed a `msghdr` whose one iovec describes a
//! borrowed slice and whose control buffer is a local array sized with
//! `CMSG_SPACE` for [`MAX_FDS`] descriptors; the kernel writes at most
//! `msg_controllen` bytes there and at most the iovec's length into the
//! slice. Received descriptors are new in this process (the kernel
//! installed them for this call), so wrapping each in an `OwnedFd` makes
//! it their only owner. The functions call only `sendmsg`/`recvmsg`
//! (never intercepted by the shim), so they are safe inside it.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use crate::proto::MAX_FDS;

const CTRL_LEN: usize = 64; // >= CMSG_SPACE(4 * MAX_FDS) = 32 on x86_64

/// Sends one message with `fds` attached (at most [`MAX_FDS`]).
pub fn send(sock: BorrowedFd<'_>, data: &[u8], fds: &[RawFd]) -> io::Result<()> {
    if fds.len() > MAX_FDS {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut ctrl = [0u64; CTRL_LEN / 8];
    let mut iov = libc::iovec { iov_base: data.as_ptr() as *mut libc::c_void, iov_len: data.len() };
    // SAFETY: all-zero is a valid msghdr (null pointers, zero lengths).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        let bytes = std::mem::size_of_val(fds) as u32;
        // SAFETY: CMSG_SPACE is pure arithmetic.
        let space = unsafe { libc::CMSG_SPACE(bytes) } as usize;
        msg.msg_control = ctrl.as_mut_ptr().cast();
        msg.msg_controllen = space;
        // SAFETY: msg_control points at `ctrl` (CTRL_LEN >= space bytes, 8-aligned),
        // so CMSG_FIRSTHDR returns a header inside it; CMSG_DATA of that header
        // has room for `bytes` (space was computed for them).
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(bytes) as usize;
            std::ptr::copy_nonoverlapping(fds.as_ptr().cast::<u8>(), libc::CMSG_DATA(c), bytes as usize);
        }
    }
    // SAFETY: msg describes `data` (read only by the kernel) and `ctrl`.
    let n = unsafe { libc::sendmsg(sock.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Receives one message into `buf`; returns its length (0 = peer closed)
/// and the descriptors that came with it (close-on-exec).
pub fn recv(sock: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut ctrl = [0u64; CTRL_LEN / 8];
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    // SAFETY: all-zero is a valid msghdr.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl.as_mut_ptr().cast();
    msg.msg_controllen = CTRL_LEN;
    let n = loop {
        // SAFETY: msg describes `buf` (mutably borrowed) and `ctrl`.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n as usize;
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: msg was filled by recvmsg; the CMSG_* walk stays inside
    // msg_controllen bytes of `ctrl`; each SCM_RIGHTS payload holds
    // (cmsg_len - CMSG_LEN(0)) / 4 descriptors, read unaligned.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let len = (*c).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let p = libc::CMSG_DATA(c).cast::<RawFd>();
                for i in 0..len / 4 {
                    fds.push(OwnedFd::from_raw_fd(p.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n, fds))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixDatagram;

    #[test]
    fn descriptors_travel_with_the_message() {
        let (a, b) = UnixDatagram::pair().unwrap();
        let f = std::fs::File::open("/dev/null").unwrap();
        send(a.as_fd(), b"hello", &[f.as_raw_fd(), f.as_raw_fd()]).unwrap();
        let mut buf = [0u8; 16];
        let (n, fds) = recv(b.as_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"hello");
        assert_eq!(fds.len(), 2);
        assert_ne!(fds[0].as_raw_fd(), f.as_raw_fd());
        send(a.as_fd(), b"x", &[]).unwrap();
        let (n, fds) = recv(b.as_fd(), &mut buf).unwrap();
        assert_eq!((n, fds.len()), (1, 0));
    }
}
