//! ibv_create_comp_channel / ibv_destroy_comp_channel and the event fd.
#![allow(unsafe_code)]

use std::os::fd::{AsFd, AsRawFd};

use super::common::{rxe_name, siw_name};
use verbs::{discovery::devices, CompChannel, Context, ErrorKind};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).unwrap()
}

/// poll(2) for readability with a timeout in ms; returns the revents.
pub(super) fn poll_in(fd: std::os::fd::BorrowedFd<'_>, timeout_ms: i32) -> i16 {
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd on the stack, count 1.
    let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    assert!(n >= 0, "poll: {}", std::io::Error::last_os_error());
    p.revents
}

fn fcntl(fd: i32, cmd: i32) -> i32 {
    // SAFETY: F_GETFD/F_GETFL only read the descriptor's flags.
    unsafe { libc::fcntl(fd, cmd) }
}

fn channel_fd(name: &str) {
    let ctx = open(name);
    let chans: Vec<CompChannel<'_>> =
        (0..3).map(|_| CompChannel::create(&ctx).expect("ibv_create_comp_channel")).collect();
    let mut fds: Vec<i32> = chans.iter().map(|c| c.as_fd().as_raw_fd()).collect();
    fds.sort_unstable();
    fds.dedup();
    assert_eq!(fds.len(), 3, "each channel has its own fd");
    let ch = &chans[0];
    let raw = ch.as_fd().as_raw_fd();
    assert_ne!(fcntl(raw, libc::F_GETFD) & libc::FD_CLOEXEC, 0, "channel fd is close-on-exec");
    assert_eq!(fcntl(raw, libc::F_GETFL) & libc::O_NONBLOCK, 0, "channel starts blocking");

    // No CQ reports on it: poll sees nothing, a non-blocking read says so.
    assert_eq!(poll_in(ch.as_fd(), 0), 0);
    ch.set_nonblocking(true).unwrap();
    assert_ne!(fcntl(raw, libc::F_GETFL) & libc::O_NONBLOCK, 0);
    let e = ch.read_event().unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_get_cq_event", ErrorKind::WouldBlock));
    assert_eq!(e.raw_os_error(), libc::EAGAIN);
    ch.set_nonblocking(false).unwrap();
    assert_eq!(fcntl(raw, libc::F_GETFL) & libc::O_NONBLOCK, 0);

    // Destroying closes the fd.
    let mut it = chans.into_iter();
    it.next().unwrap().destroy();
    assert_eq!(fcntl(raw, libc::F_GETFD), -1, "fd {raw} still open after destroy");
    drop(it);
    for fd in &fds {
        assert_eq!(fcntl(*fd, libc::F_GETFD), -1, "fd {fd} still open after drop");
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_comp_channel() {
    channel_fd(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_comp_channel() {
    channel_fd(&siw_name());
}
