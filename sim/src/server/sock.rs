//! Unix sockets std does not offer: a `SOCK_SEQPACKET` listener (the shim
//! protocol keeps message boundaries), event socketpairs, non-blocking
//! record sends.
//!
//! # Safety
//! Each block is one system call with integer arguments or with a pointer
//! to a local, fully initialised `sockaddr_un` / `[c_int; 2]` / byte slice
//! whose size is passed with it; descriptors the kernel returns are new and
//! wrapped in `OwnedFd` at once (sole owner).
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A listening `SOCK_SEQPACKET` socket bound at `path`.
pub fn seqpacket_listen(path: &Path) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with integer arguments.
    let fd = cvt(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: a new descriptor.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let p = path.as_os_str().as_bytes();
    if p.len() >= addr.sun_path.len() {
        return Err(io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    for (d, s) in addr.sun_path.iter_mut().zip(p) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
    // SAFETY: addr is a valid sockaddr_un of size len.
    cvt(unsafe { libc::bind(fd.as_raw_fd(), (&addr as *const libc::sockaddr_un).cast(), len) })?;
    // SAFETY: integer arguments.
    cvt(unsafe { libc::listen(fd.as_raw_fd(), 64) })?;
    Ok(fd)
}

/// Accepts one connection (retrying on EINTR).
pub fn seqpacket_accept(l: &OwnedFd) -> io::Result<OwnedFd> {
    loop {
        // SAFETY: accept4 without an address buffer.
        let r = unsafe { libc::accept4(l.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
        match cvt(r) {
            // SAFETY: a new descriptor.
            Ok(fd) => return Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// An event socketpair: (daemon's end, process's end), record-preserving,
/// close-on-exec.
pub fn event_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut sv = [0 as libc::c_int; 2];
    // SAFETY: sv is a local array of two ints.
    cvt(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, sv.as_mut_ptr()) })?;
    // SAFETY: two new descriptors.
    Ok(unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) })
}

/// Sends one record without blocking; false if it could not be queued.
pub fn send_nowait(fd: &OwnedFd, rec: &[u8]) -> bool {
    // SAFETY: rec is a borrowed slice of the given length.
    let n = unsafe { libc::send(fd.as_raw_fd(), rec.as_ptr().cast(), rec.len(), libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    n == rec.len() as isize
}

/// Takes one record out of `app` (a duplicate of a process's end) without
/// blocking; false if none was queued.
pub fn take_token(app: &OwnedFd) -> bool {
    let mut b = [0u8; 8];
    // SAFETY: b is a mutably borrowed local of the given length.
    let n = unsafe { libc::recv(app.as_raw_fd(), b.as_mut_ptr().cast(), b.len(), libc::MSG_DONTWAIT) };
    n > 0
}

/// Whether a record waits in `fd` (poll for POLLIN, no wait).
#[cfg(test)]
pub fn pending(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd, a local, and its count.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

/// Takes back the records still unread in an event queue whose `drop`
/// predicate holds: reads every pending record from `app` (a duplicate of
/// the process's end) and sends the others again through `mine`, in order.
/// Returns how many were taken back. (The kernel removes an object's unread
/// events when it is destroyed and does not count them as reported.)
pub fn take_back(app: &OwnedFd, mine: &OwnedFd, len: usize, drop: impl Fn(&[u8]) -> bool) -> u32 {
    let mut keep = Vec::new();
    let mut taken = 0;
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: buf is a mutably borrowed local of the given length.
        let n = unsafe { libc::recv(app.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
        if n <= 0 {
            break;
        }
        let rec = &buf[..n as usize];
        if rec.len() == len && drop(rec) {
            taken += 1;
        } else {
            keep.push(rec.to_vec());
        }
    }
    for r in keep {
        send_nowait(mine, &r);
    }
    taken
}

/// Inode of a descriptor (fstat through /proc, no unsafe needed).
pub fn ino(fd: &OwnedFd) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/self/fd/{}", fd.as_raw_fd())).map(|m| m.ino()).unwrap_or(0)
}

/// Inode of descriptor `fd` of process `pid`.
pub fn ino_of(pid: i32, fd: i32) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}/fd/{fd}")).ok().map(|m| m.ino())
}

/// Timer slack of 1 ns for the calling thread: its short sleeps end when
/// asked instead of up to 50 µs later (the default slack). And, where
/// allowed, the lowest real-time priority (SCHED_RR 1), so that when its
/// timer fires it preempts applications busy-polling their CQs instead of
/// waiting for their time slice to end (a NIC does not wait for the CPU).
/// It sleeps whenever a scan finds nothing, so it cannot starve them.
pub fn precise_sleeps() {
    // SAFETY: prctl with integer arguments; affects only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if std::env::var_os("VERBS_SIM_NO_RT").is_none() {
        let p = libc::sched_param { sched_priority: 1 };
        // SAFETY: pid 0 = the calling thread; p is a valid local.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_RR, &p) };
    }
}
