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
//!
//! One rtnetlink request never reaches the host's kernel: a link change
//! (`RTM_NEWLINK`/`RTM_SETLINK`, what `ip link set dev X down|up` sends) on
//! the simulated port's netdev (`fixture::NETDEV`, the netdev `rdma link
//! show` names for mlx5_0/1). [`divert`] sends it to the daemon instead
//! (verbs-sim's `server/link.rs`: the port goes DOWN or ACTIVE with its
//! async events) and makes the kernel answer the process's own socket with
//! the same ACK (an `NLMSG_NOOP` request of the same sequence number, which
//! the kernel acknowledges and does nothing for) or an error. In a send of
//! several messages only such changes are replaced: the others reach the
//! kernel as they came, in the same send, so their answers keep their order.

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

/// The host's ifindex of the simulated port's netdev (0: none).
fn netdev_index() -> u32 {
    static INDEX: AtomicUsize = AtomicUsize::new(usize::MAX);
    let i = INDEX.load(Relaxed);
    if i != usize::MAX {
        return i as u32;
    }
    let name = std::ffi::CString::new(verbs_sim::fixture::NETDEV).unwrap_or_default();
    // SAFETY: a NUL-terminated name.
    let i = unsafe { libc::if_nametoindex(name.as_ptr()) };
    INDEX.store(i as usize, Relaxed);
    i
}

/// The messages of a send (`m`), each as its offset and its header's
/// length, stepped by the aligned length; it stops before one whose
/// length is short or past the end (the kernel judges that and the rest).
fn messages(m: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        let h = m.get(at..at + 16)?;
        let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
        if len < 16 || len > m.len() - at {
            return None;
        }
        let this = (at, len);
        at += (len + 3) & !3;
        Some(this)
    })
}

/// Whether `fd` is a `NETLINK_ROUTE` socket.
fn is_route_socket(fd: c_int) -> bool {
    let sockopt = |name: c_int| {
        let (mut v, mut l) = (0 as c_int, std::mem::size_of::<c_int>() as libc::socklen_t);
        // SAFETY: getsockopt into a c_int of the given size.
        let r = unsafe { libc::getsockopt(fd, libc::SOL_SOCKET, name, (&mut v as *mut c_int).cast(), &mut l) };
        (r == 0).then_some(v)
    };
    sockopt(libc::SO_DOMAIN) == Some(libc::AF_NETLINK) && sockopt(libc::SO_PROTOCOL) == Some(libc::NETLINK_ROUTE)
}

/// Whether `m` (one message, as long as its header says) is a link change
/// of the simulated port's netdev (on a `NETLINK_ROUTE` socket).
fn is_port_link_change(m: &[u8]) -> bool {
    let u16_at = |o: usize| m.get(o..o + 2).map_or(0, |b| u16::from_ne_bytes([b[0], b[1]]));
    let u32_at = |o: usize| m.get(o..o + 4).map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    let len = m.len();
    if len < 32 || !matches!(u16_at(4), 16 | 19) || u16_at(6) & libc::NLM_F_REQUEST as u16 == 0 {
        return false;
    }
    let index = u32_at(20);
    if index != 0 {
        return index == netdev_index();
    }
    // no index: the netdev by name (IFLA_IFNAME)
    let mut at = 32;
    while at + 4 <= len {
        let (alen, ty) = (usize::from(u16_at(at)), u16_at(at + 2) & 0x3fff);
        if alen < 4 || at + alen > len {
            return false;
        }
        if ty == 3 {
            let name = &m[at + 4..at + alen];
            return name.split(|&c| c == 0).next() == Some(verbs_sim::fixture::NETDEV.as_bytes());
        }
        at += (alen + 3) & !3;
    }
    false
}

/// A send (`m`, on `fd`) with a link change of the port's netdev among
/// its messages: each such change answered by the daemon, the send as a
/// whole then made to the kernel with each change replaced by the
/// stand-in that has the kernel answer it (see the module), every other
/// message as it came, in order (a batch keeps its other requests and
/// the order of the answers). `Some(bytes sent)` or `Some(-1)` with
/// errno; `None` for a send with no such change (sent as it is).
fn divert(fd: c_int, m: &[u8], flags: c_int) -> Option<isize> {
    if !messages(m).any(|(at, len)| is_port_link_change(&m[at..at + len])) || !is_route_socket(fd) {
        return None;
    }
    let fail = |e: c_int| {
        // SAFETY: errno is thread-local.
        unsafe { *libc::__errno_location() = e };
        Some(-1)
    };
    let mut to_kernel = Vec::with_capacity(m.len());
    let mut done = 0;
    for (at, len) in messages(m) {
        let end = (at + ((len + 3) & !3)).min(m.len());
        let msg = &m[at..at + len];
        done = end;
        if !is_port_link_change(msg) {
            to_kernel.extend_from_slice(&m[at..end]);
            continue;
        }
        let sock = match say_hello(verbs_sim::proto::NETLINK_INDEX, libc::SOCK_CLOEXEC) {
            Ok(s) => s,
            Err(e) => return fail(e),
        };
        let mut ans = [0u8; 64];
        let got = verbs_sim::fdpass::send(std::os::fd::AsFd::as_fd(&sock), msg, &[])
            .and_then(|()| verbs_sim::fdpass::recv(std::os::fd::AsFd::as_fd(&sock), &mut ans));
        let err = match got {
            Ok((n, _)) if n >= 20 => i32::from_ne_bytes([ans[16], ans[17], ans[18], ans[19]]),
            _ => return fail(libc::ECOMM),
        };
        let ack = u16::from_ne_bytes([msg[6], msg[7]]) & libc::NLM_F_ACK as u16 != 0;
        if err != 0 || ack {
            // The kernel's answer on the process's socket: NLMSG_NOOP is
            // acknowledged with 0 and nothing done; a type above RTM_MAX
            // is refused with -EOPNOTSUPP (the one error the simulator
            // gives).
            let ty: u16 = if err == 0 { libc::NLMSG_NOOP as u16 } else { u16::MAX };
            to_kernel.extend_from_slice(&16u32.to_ne_bytes());
            to_kernel.extend_from_slice(&ty.to_ne_bytes());
            to_kernel.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16).to_ne_bytes());
            to_kernel.extend_from_slice(&msg[8..12]);
            to_kernel.extend_from_slice(&[0; 4]);
        }
    }
    // What follows the last whole message, as it came.
    to_kernel.extend_from_slice(&m[done..]);
    if !to_kernel.is_empty() {
        // SAFETY: all-zero is a valid sockaddr_nl (port 0: the kernel).
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as u16;
        // SAFETY: our buffer and a valid sockaddr_nl.
        let r = unsafe {
            real!("sendto", SendtoFn)(
                fd,
                to_kernel.as_ptr().cast(),
                to_kernel.len(),
                flags,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Some(r);
        }
    }
    Some(m.len() as isize)
}

type SendtoFn = unsafe extern "C" fn(c_int, *const c_void, usize, c_int, *const libc::sockaddr, libc::socklen_t) -> isize;

#[no_mangle]
pub unsafe extern "C" fn sendto(fd: c_int, buf: *const c_void, n: usize, flags: c_int, addr: *const libc::sockaddr, alen: libc::socklen_t) -> isize {
    let real = real!("sendto", SendtoFn);
    if is_nl(fd) {
        // SAFETY: the caller's buffer; no address on a connected socket.
        return unsafe { real(fd, buf, n, flags, std::ptr::null(), 0) };
    }
    if !buf.is_null() && n >= 32 {
        // SAFETY: sendto's contract: `buf` is readable for `n` bytes.
        let m = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) };
        if let Some(r) = divert(fd, m, flags) {
            return r;
        }
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
    // SAFETY: sendmsg's contract: `msg` is NULL or a valid msghdr.
    if let Some(m) = unsafe { link_request(msg) } {
        if let Some(r) = divert(fd, &m, flags) {
            return r;
        }
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real(fd, msg, flags) }
}

/// The bytes of `msg` when its first buffer starts like a netlink
/// request (a header of at least 16 bytes, `NLM_F_REQUEST`): only then are
/// they gathered ([`divert`] looks at every message of the send: a link
/// change may follow another request).
///
/// # Safety
/// `msg` is NULL or a valid msghdr whose buffers are readable.
unsafe fn link_request(msg: *const libc::msghdr) -> Option<Vec<u8>> {
    if msg.is_null() {
        return None;
    }
    // SAFETY: caller contract.
    let m = unsafe { &*msg };
    if m.msg_iov.is_null() || m.msg_iovlen == 0 {
        return None;
    }
    // SAFETY: msg_iovlen iovecs at msg_iov (sendmsg's contract).
    let iov = unsafe { std::slice::from_raw_parts(m.msg_iov, m.msg_iovlen) };
    let first = iov[0];
    if first.iov_base.is_null() || first.iov_len < 16 {
        return None;
    }
    // SAFETY: the first buffer has iov_len >= 16 readable bytes.
    let h = unsafe { std::slice::from_raw_parts(first.iov_base.cast::<u8>(), 16) };
    if u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) < 16 || u16::from_ne_bytes([h[6], h[7]]) & libc::NLM_F_REQUEST as u16 == 0 {
        return None;
    }
    let mut out = Vec::new();
    for v in iov.iter().filter(|v| !v.iov_base.is_null()) {
        // SAFETY: each buffer is readable for its iov_len bytes.
        out.extend_from_slice(unsafe { std::slice::from_raw_parts(v.iov_base.cast::<u8>(), v.iov_len) });
    }
    Some(out)
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
