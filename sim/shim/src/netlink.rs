//! `NETLINK_RDMA` sockets on the simulator: the descriptor a process gets
//! from `socket(AF_NETLINK, _, NETLINK_RDMA)` is a `SOCK_SEQPACKET`
//! connection to the daemon, which answers the RDMA netlink requests
//! (verbs-sim's `server/nldev.rs`) one message per datagram. What a
//! netlink socket does that a Unix one does not is done here: `bind`
//! (nothing to bind), `getsockname` (a `sockaddr_nl` with the process's
//! port id), `setsockopt` (accepted; on an IP socket, joining an IPv4
//! group on the simulated port's address too), and the netlink addresses of
//! `sendto`/`sendmsg` (dropped: the socket is connected) and
//! `recvfrom`/`recvmsg` (the kernel's: `sockaddr_nl` of port 0).

use std::ffi::{c_int, c_void};
use std::os::fd::IntoRawFd;
use std::sync::atomic::{AtomicUsize, Ordering::*};

use super::{say_hello, slot_of, ACTIVE, SLOTS};

/// Opens a netlink socket of type `ty` (its `SOCK_CLOEXEC`/`SOCK_NONBLOCK`).
pub(super) fn open(ty: c_int) -> Result<c_int, c_int> {
    let sock = say_hello(verbs_sim::proto::NETLINK_INDEX, ty & libc::SOCK_CLOEXEC)?;
    let fd = sock.into_raw_fd();
    if ty & libc::SOCK_NONBLOCK != 0 {
        // SAFETY: fcntl with integer arguments on our new descriptor.
        unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK | libc::O_RDWR) };
    }
    let Some(slot) = SLOTS.iter().find(|s| s.fd.compare_exchange(-1, -2, AcqRel, Relaxed).is_ok()) else {
        super::sys_close(fd);
        return Err(libc::EMFILE);
    };
    slot.sock.store(-1, Relaxed);
    slot.memfd.store(-1, Relaxed);
    slot.pages.store(0, Relaxed);
    slot.cm.store(false, Relaxed);
    slot.nl.store(true, Relaxed);
    slot.fd.store(fd, Release);
    ACTIVE.fetch_add(1, AcqRel);
    Ok(fd)
}

fn is_nl(fd: c_int) -> bool {
    slot_of(fd).is_some_and(|s| s.nl.load(Relaxed))
}

/// Writes a `sockaddr_nl` of port `pid` into `addr` (room `*len`) and sets
/// `*len` to its size, as the kernel does.
///
/// # Safety
/// `addr` is NULL or writable for `*len` bytes; `len` is NULL or valid.
unsafe fn put_addr(addr: *mut c_void, len: *mut libc::socklen_t, pid: u32) {
    if addr.is_null() || len.is_null() {
        return;
    }
    // SAFETY: all-zero is a valid sockaddr_nl.
    let mut nl: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    nl.nl_family = libc::AF_NETLINK as u16;
    nl.nl_pid = pid;
    let size = std::mem::size_of::<libc::sockaddr_nl>();
    // SAFETY: caller contract: `*len` is readable and writable.
    let room = unsafe { *len } as usize;
    // SAFETY: at most `room` bytes into the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping((&nl as *const libc::sockaddr_nl).cast::<u8>(), addr.cast::<u8>(), room.min(size));
        *len = size as libc::socklen_t;
    }
}

#[no_mangle]
pub unsafe extern "C" fn bind(fd: c_int, addr: *const libc::sockaddr, len: libc::socklen_t) -> c_int {
    if is_nl(fd) {
        return 0;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!("bind", unsafe extern "C" fn(c_int, *const libc::sockaddr, libc::socklen_t) -> c_int)(fd, addr, len) }
}

#[no_mangle]
pub unsafe extern "C" fn getsockname(fd: c_int, addr: *mut c_void, len: *mut libc::socklen_t) -> c_int {
    if is_nl(fd) {
        // SAFETY: getsockname's contract; getpid has no preconditions.
        unsafe { put_addr(addr, len, libc::getpid() as u32) };
        return 0;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!("getsockname", unsafe extern "C" fn(c_int, *mut c_void, *mut libc::socklen_t) -> c_int)(fd, addr, len) }
}

/// Whether `val` (an `ip_mreq` of `len` bytes for IP_ADD_MEMBERSHIP)
/// names the simulated port's netdev by its IPv4 address (`imr_interface`).
///
/// # Safety
/// `val` is NULL or readable for `len` bytes.
unsafe fn joins_on_the_port(level: c_int, name: c_int, val: *const c_void, len: libc::socklen_t) -> bool {
    if level != libc::IPPROTO_IP || name != libc::IP_ADD_MEMBERSHIP || val.is_null() || (len as usize) < 8 {
        return false;
    }
    let mut iface = [0u8; 4];
    // SAFETY: caller contract: `len` >= 8 readable bytes; imr_interface is bytes 4..8.
    unsafe { std::ptr::copy_nonoverlapping(val.cast::<u8>().add(4), iface.as_mut_ptr(), 4) };
    iface == verbs_sim::fixture::Identity::default().ipv4
}

#[no_mangle]
pub unsafe extern "C" fn setsockopt(fd: c_int, level: c_int, name: c_int, val: *const c_void, len: libc::socklen_t) -> c_int {
    if is_nl(fd) {
        return 0;
    }
    // An IPv4 group joined on the simulated port's netdev (by its address,
    // as a RoCE host joins the group its RoCE traffic uses): that netdev
    // exists only in the simulator, which answers as it would (0). No
    // membership is made on the host, so the socket receives nothing; the
    // RoCE datagrams themselves are the simulated NIC's (mcast delivery).
    // SAFETY: setsockopt's contract: `val` is readable for `len` bytes.
    if unsafe { joins_on_the_port(level, name, val, len) } {
        return 0;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe {
        real!("setsockopt", unsafe extern "C" fn(c_int, c_int, c_int, *const c_void, libc::socklen_t) -> c_int)(
            fd, level, name, val, len,
        )
    }
}

type SendtoFn = unsafe extern "C" fn(c_int, *const c_void, usize, c_int, *const libc::sockaddr, libc::socklen_t) -> isize;

#[no_mangle]
pub unsafe extern "C" fn sendto(fd: c_int, buf: *const c_void, n: usize, flags: c_int, addr: *const libc::sockaddr, alen: libc::socklen_t) -> isize {
    let real = real!("sendto", SendtoFn);
    if is_nl(fd) {
        // SAFETY: the caller's buffer; no address on a connected socket.
        return unsafe { real(fd, buf, n, flags, std::ptr::null(), 0) };
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real(fd, buf, n, flags, addr, alen) }
}

#[no_mangle]
pub unsafe extern "C" fn sendmsg(fd: c_int, msg: *const libc::msghdr, flags: c_int) -> isize {
    let real = real!("sendmsg", unsafe extern "C" fn(c_int, *const libc::msghdr, c_int) -> isize);
    if is_nl(fd) && !msg.is_null() {
        // SAFETY: sendmsg's contract: `msg` is a valid msghdr.
        let mut m = unsafe { *msg };
        m.msg_name = std::ptr::null_mut();
        m.msg_namelen = 0;
        // SAFETY: the caller's buffers, without the address.
        return unsafe { real(fd, &m, flags) };
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real(fd, msg, flags) }
}

#[no_mangle]
pub unsafe extern "C" fn recvmsg(fd: c_int, msg: *mut libc::msghdr, flags: c_int) -> isize {
    let real = real!("recvmsg", unsafe extern "C" fn(c_int, *mut libc::msghdr, c_int) -> isize);
    if is_nl(fd) && !msg.is_null() {
        // SAFETY: recvmsg's contract: `msg` is a valid, writable msghdr.
        let (name, room) = unsafe { ((*msg).msg_name, (*msg).msg_namelen) };
        // SAFETY: as above; the address is filled below.
        unsafe {
            (*msg).msg_name = std::ptr::null_mut();
            (*msg).msg_namelen = 0;
        }
        // SAFETY: the caller's buffers.
        let r = unsafe { real(fd, msg, flags) };
        let mut len = room;
        // SAFETY: `name` has `room` writable bytes (recvmsg's contract).
        unsafe {
            put_addr(name, &mut len, 0);
            (*msg).msg_name = name;
            (*msg).msg_namelen = if name.is_null() { 0 } else { len };
        }
        return r;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real(fd, msg, flags) }
}

type RecvfromFn = unsafe extern "C" fn(c_int, *mut c_void, usize, c_int, *mut c_void, *mut libc::socklen_t) -> isize;

#[no_mangle]
pub unsafe extern "C" fn recvfrom(fd: c_int, buf: *mut c_void, n: usize, flags: c_int, addr: *mut c_void, alen: *mut libc::socklen_t) -> isize {
    let real = real!("recvfrom", RecvfromFn);
    if is_nl(fd) {
        // SAFETY: the caller's buffer; the address is filled below.
        let r = unsafe { real(fd, buf, n, flags, std::ptr::null_mut(), std::ptr::null_mut()) };
        if r >= 0 {
            // SAFETY: recvfrom's contract for `addr`/`alen`.
            unsafe { put_addr(addr, alen, 0) };
        }
        return r;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real(fd, buf, n, flags, addr, alen) }
}
