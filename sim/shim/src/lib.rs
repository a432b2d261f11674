//! LD_PRELOAD shim for the simulated ConnectX (see `verbs-sim`).
//!
//! With `VERBS_SIM_SOCKET` set, `/dev/infiniband/uverbsN` becomes a real
//! `/dev/null` descriptor (a character device 1:3, which the fixture sysfs
//! names as the uverbs device, so libibverbs' `fstat` check passes) that is
//! connected to `verbs-simd`: `write` and `ioctl` on it are forwarded (the
//! daemon reads the command and writes the response in this process's
//! memory), `mmap` maps the context's UAR memfd, `close` hangs up. A
//! `NETLINK_RDMA` socket is a connection to the daemon, which answers RDMA
//! netlink (`netlink.rs`).
//! With `VERBS_SIM_CM_AWAIT_LISTENER`, an rdma_cm address resolution
//! waits for the daemon to list a listener on its port (`await_listener.rs`).
//! Everything else goes to the next definition (`dlsym(RTLD_NEXT)`).
//! Without the variable every function only passes through.
//!
//! # Safety
//! The exported functions have the C signatures of the libc functions they
//! replace (x86_64 System V: the variadic `open`/`openat`/`ioctl` read their
//! optional third/fourth argument from the register it was passed in, which
//! is what a fixed-argument definition does; they are compiled only on
//! x86_64 Linux). Pointers from the caller are used only as the C contract
//! of each function allows (paths: NUL-terminated strings; buffers: passed
//! on untouched). The real functions are found with `dlsym(RTLD_NEXT)` and
//! called with the same arguments and types. The daemon's answer writes fd
//! numbers at addresses inside the caller's command response, which the
//! caller handed to `write` for the kernel to fill: the same contract the
//! kernel has.
#![allow(clippy::missing_safety_doc)] // the exported functions' contracts are libc's
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering::*};
use std::sync::{Mutex, OnceLock};

use verbs_sim::fdpass;
use verbs_sim::proto::{Call, Hello, Reply, Welcome, REPLY_LEN};

const DEV_NULL: &CStr = c"/dev/null";
const PREFIX: &[u8] = b"/dev/infiniband/uverbs";
const RDMA_CM: &[u8] = b"/dev/infiniband/rdma_cm";
const NETLINK_RDMA: c_int = 20;
const SLOTS_N: usize = 32;
const PAGE: i64 = 4096;

/// One open uverbs descriptor and its daemon connection.
struct Slot {
    fd: AtomicI32,
    sock: AtomicI32,
    memfd: AtomicI32,
    pages: AtomicU32,
    /// An rdma_cm file (its fd is the daemon's event socket).
    cm: std::sync::atomic::AtomicBool,
    /// A NETLINK_RDMA socket (its fd is the daemon connection itself).
    nl: std::sync::atomic::AtomicBool,
    lock: Mutex<()>,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    fd: AtomicI32::new(-1),
    sock: AtomicI32::new(-1),
    memfd: AtomicI32::new(-1),
    pages: AtomicU32::new(0),
    cm: std::sync::atomic::AtomicBool::new(false),
    nl: std::sync::atomic::AtomicBool::new(false),
    lock: Mutex::new(()),
};
static SLOTS: [Slot; SLOTS_N] = [FREE; SLOTS_N];
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
static SOCKET: OnceLock<Option<std::ffi::CString>> = OnceLock::new();

fn socket_path() -> Option<&'static CStr> {
    SOCKET
        .get_or_init(|| {
            let v = std::env::var_os("VERBS_SIM_SOCKET")?;
            std::ffi::CString::new(std::os::unix::ffi::OsStringExt::into_vec(v)).ok()
        })
        .as_deref()
}

fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() = e };
}

fn slot_of(fd: c_int) -> Option<&'static Slot> {
    if fd < 0 || ACTIVE.load(Acquire) == 0 {
        return None;
    }
    SLOTS.iter().find(|s| s.fd.load(Acquire) == fd)
}

/// `Some(N)` if `path` is /dev/infiniband/uverbsN and the simulator is on.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
unsafe fn uverbs_index(path: *const c_char) -> Option<u32> {
    if path.is_null() {
        return None;
    }
    // SAFETY: caller contract.
    let b = unsafe { CStr::from_ptr(path) }.to_bytes();
    let rest = b.strip_prefix(PREFIX)?;
    if rest.is_empty() || !rest.iter().all(u8::is_ascii_digit) {
        return None;
    }
    socket_path()?;
    std::str::from_utf8(rest).ok()?.parse().ok()
}

macro_rules! real {
    ($name:literal, $ty:ty) => {{
        static CACHE: AtomicUsize = AtomicUsize::new(0);
        let mut p = CACHE.load(Relaxed);
        if p == 0 {
            // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name.
            #[allow(unused_unsafe)]
            let q = unsafe { libc::dlsym(libc::RTLD_NEXT, concat!($name, "\0").as_ptr().cast()) };
            p = q as usize;
            if p == 0 {
                std::process::abort();
            }
            CACHE.store(p, Relaxed);
        }
        // SAFETY: the symbol named $name in the next object is the libc
        // function of that name, whose C type is $ty.
        #[allow(unused_unsafe)]
        let f = unsafe { std::mem::transmute::<usize, $ty>(p) };
        f
    }};
}

fn sys_close(fd: c_int) {
    // SAFETY: closes a descriptor this shim owns.
    unsafe { libc::syscall(libc::SYS_close, fd) };
}

/// Opens a connection to the daemon and says hello; returns the socket,
/// its welcome and the descriptor that came with it.
fn connect_daemon(index: u32) -> Result<(OwnedFd, Welcome, OwnedFd), c_int> {
    let sock = say_hello(index, libc::SOCK_CLOEXEC)?;
    let mut buf = [0u8; 64];
    let (n, mut fds) = fdpass::recv(sock_fd(&sock), &mut buf).map_err(|_| libc::ENODEV)?;
    let w = Welcome::decode(&buf[..n]).ok_or(libc::ENODEV)?;
    let fd = fds.pop().ok_or(libc::ENODEV)?;
    // Let the daemon reach this process's memory (process_vm_*) even where
    // Yama restricts ptrace to descendants; harmless elsewhere.
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_PTRACER, w.daemon_pid as c_ulong, 0, 0, 0) };
    Ok((sock, w, fd))
}

/// A connection to the daemon (a `SOCK_SEQPACKET` socket with `flags`,
/// `SOCK_CLOEXEC`/`SOCK_NONBLOCK`) that has said hello for `index`.
fn say_hello(index: u32, flags: c_int) -> Result<OwnedFd, c_int> {
    let path = socket_path().ok_or(libc::ENODEV)?;
    // SAFETY: plain socket(2) through syscall(2) (not our `socket`).
    let s = unsafe { libc::syscall(libc::SYS_socket, libc::AF_UNIX, libc::SOCK_SEQPACKET | flags, 0) };
    if s < 0 {
        return Err(libc::ENODEV);
    }
    // SAFETY: `s` is a new descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(s as c_int) };
    // SAFETY: all-zero is a valid sockaddr_un.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as u16;
    let p = path.to_bytes();
    if p.len() >= addr.sun_path.len() {
        return Err(libc::ENAMETOOLONG);
    }
    for (d, s) in addr.sun_path.iter_mut().zip(p) {
        *d = *s as c_char;
    }
    // SAFETY: `addr` is a valid sockaddr_un of the given size.
    let r = unsafe {
        libc::syscall(
            libc::SYS_connect,
            sock.as_raw_fd(),
            &addr as *const libc::sockaddr_un,
            std::mem::size_of::<libc::sockaddr_un>(),
        )
    };
    if r < 0 {
        return Err(libc::ENODEV);
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    loop {
        match fdpass::send(sock_fd(&sock), &Hello { pid, index }.encode(), &[]) {
            Ok(()) => return Ok(sock),
            // a non-blocking netlink socket: the daemon has room soon
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(_) => return Err(libc::ENODEV),
        }
    }
}

fn register(fd: c_int, sock: OwnedFd, memfd: c_int, pages: u32, cm: bool) -> Result<(), c_int> {
    let slot = SLOTS.iter().find(|s| s.fd.compare_exchange(-1, -2, AcqRel, Relaxed).is_ok()).ok_or(libc::EMFILE)?;
    slot.sock.store(sock.into_raw_fd(), Relaxed);
    slot.memfd.store(memfd, Relaxed);
    slot.pages.store(pages, Relaxed);
    slot.cm.store(cm, Relaxed);
    slot.nl.store(false, Relaxed);
    slot.fd.store(fd, Release);
    ACTIVE.fetch_add(1, AcqRel);
    Ok(())
}

/// Connects uverbs descriptor `fd` (our /dev/null) to the daemon.
fn attach(fd: c_int, index: u32) -> Result<(), c_int> {
    let (sock, w, memfd) = connect_daemon(index)?;
    let memfd = memfd.into_raw_fd();
    register(fd, sock, memfd, w.uar_pages, false).inspect_err(|_| sys_close(memfd))
}

/// Opens an rdma_cm file: the descriptor the application gets is the
/// daemon's event socket (readable while an event waits), with the
/// open's O_NONBLOCK / O_CLOEXEC.
fn attach_cm(flags: c_int) -> Result<c_int, c_int> {
    let (sock, _w, ev) = connect_daemon(verbs_sim::proto::UCMA_INDEX)?;
    let fd = ev.into_raw_fd();
    // SAFETY: fcntl with integer arguments on our new descriptor.
    unsafe {
        if flags & libc::O_NONBLOCK != 0 {
            libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK | libc::O_RDWR);
        }
        if flags & libc::O_CLOEXEC == 0 {
            libc::fcntl(fd, libc::F_SETFD, 0);
        }
    }
    register(fd, sock, -1, 0, true).inspect_err(|_| sys_close(fd))?;
    Ok(fd)
}

/// True if `path` is /dev/infiniband/rdma_cm and the simulator is on.
///
/// # Safety
/// `path` is NULL or a NUL-terminated string.
unsafe fn is_rdma_cm(path: *const c_char) -> bool {
    if path.is_null() || socket_path().is_none() {
        return false;
    }
    // SAFETY: caller contract.
    unsafe { CStr::from_ptr(path) }.to_bytes() == RDMA_CM
}

fn open_cm(flags: c_int) -> c_int {
    attach_cm(flags).unwrap_or_else(|e| {
        set_errno(e);
        -1
    })
}

fn sock_fd(s: &OwnedFd) -> BorrowedFd<'_> {
    use std::os::fd::AsFd;
    s.as_fd()
}

/// Forwards one system call to the daemon; returns its result (or -1 with
/// errno set).
fn forward(slot: &Slot, call: Call) -> i64 {
    let _g = slot.lock.lock().unwrap_or_else(|e| e.into_inner());
    let raw = slot.sock.load(Relaxed);
    if raw < 0 {
        // closed by another thread between the lookup and the lock
        set_errno(libc::EBADF);
        return -1;
    }
    // SAFETY: the slot's socket stays open while its fd is registered and
    // we hold its lock (close takes the lock before closing it).
    let sock = unsafe { BorrowedFd::borrow_raw(raw) };
    if fdpass::send(sock, &call.encode(), &[]).is_err() {
        set_errno(libc::EIO);
        return -1;
    }
    let mut buf = [0u8; REPLY_LEN + 8];
    let Ok((n, fds)) = fdpass::recv(sock, &mut buf) else {
        set_errno(libc::EIO);
        return -1;
    };
    let Some(reply) = Reply::decode(&buf[..n]) else {
        set_errno(libc::EIO);
        return -1;
    };
    for (i, fd) in fds.into_iter().enumerate() {
        let at = reply.patch.get(i).copied().unwrap_or(0);
        if at == 0 {
            continue; // dropped: closed
        }
        // SAFETY: the daemon names an address inside the response buffer
        // the caller passed with this command (see the crate's Safety).
        unsafe { (at as usize as *mut i32).write_unaligned(fd.into_raw_fd()) };
    }
    if reply.ret < 0 {
        set_errno((-reply.ret) as c_int);
        return -1;
    }
    reply.ret
}

mod await_listener;
mod netlink;

fn detach(slot: &Slot) {
    let _g = slot.lock.lock().unwrap_or_else(|e| e.into_inner());
    sys_close(slot.sock.swap(-1, Relaxed));
    let m = slot.memfd.swap(-1, Relaxed);
    if m >= 0 {
        sys_close(m);
    }
    slot.fd.store(-1, Release);
    ACTIVE.fetch_sub(1, AcqRel);
}

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, ...) -> c_int;
type OpenatFn = unsafe extern "C" fn(c_int, *const c_char, c_int, ...) -> c_int;

/// # Safety
/// open(2)'s contract.
unsafe fn do_open(real: OpenFn, path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: open's contract: path is a C string.
    if unsafe { is_rdma_cm(path) } {
        return open_cm(flags);
    }
    // SAFETY: open's contract: path is a C string.
    if let Some(index) = unsafe { uverbs_index(path) } {
        // SAFETY: open of a literal path with the caller's flags and mode.
        let fd = unsafe { real(DEV_NULL.as_ptr(), flags, mode) };
        if fd < 0 {
            return fd;
        }
        if let Err(e) = attach(fd, index) {
            sys_close(fd);
            set_errno(e);
            return -1;
        }
        return fd;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real(path, flags, mode) }
}

/// # Safety
/// openat(2)'s contract.
unsafe fn do_openat(real: OpenatFn, dirfd: c_int, path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: path is a C string.
    if unsafe { is_rdma_cm(path) } {
        return open_cm(flags);
    }
    // SAFETY: path is a C string.
    if let Some(index) = unsafe { uverbs_index(path) } {
        // SAFETY: an absolute literal path; dirfd is ignored for it.
        let fd = unsafe { real(dirfd, DEV_NULL.as_ptr(), flags, mode) };
        if fd < 0 {
            return fd;
        }
        if let Err(e) = attach(fd, index) {
            sys_close(fd);
            set_errno(e);
            return -1;
        }
        return fd;
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real(dirfd, path, flags, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn open(path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: open's contract is the caller's.
    unsafe { do_open(real!("open", OpenFn), path, flags, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn open64(path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: as open.
    unsafe { do_open(real!("open64", OpenFn), path, flags, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn openat(dirfd: c_int, path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: as open.
    unsafe { do_openat(real!("openat", OpenatFn), dirfd, path, flags, mode) }
}

#[no_mangle]
pub unsafe extern "C" fn openat64(dirfd: c_int, path: *const c_char, flags: c_int, mode: libc::mode_t) -> c_int {
    // SAFETY: as open.
    unsafe { do_openat(real!("openat64", OpenatFn), dirfd, path, flags, mode) }
}

/// The path to use instead of `path` for stat-like calls.
///
/// # Safety
/// `path` is NULL or a C string.
unsafe fn stat_path(path: *const c_char) -> *const c_char {
    // SAFETY: caller contract.
    if unsafe { uverbs_index(path) }.is_some() {
        DEV_NULL.as_ptr()
    } else {
        path
    }
}

macro_rules! stat_like {
    ($name:ident, $sym:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, buf: *mut c_void) -> c_int {
            // SAFETY: stat's contract; the path is swapped for a literal.
            unsafe { real!($sym, unsafe extern "C" fn(*const c_char, *mut c_void) -> c_int)(stat_path(path), buf) }
        }
    };
}
stat_like!(stat, "stat");
stat_like!(stat64, "stat64");
stat_like!(lstat, "lstat");
stat_like!(lstat64, "lstat64");

macro_rules! xstat_like {
    ($name:ident, $sym:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(ver: c_int, path: *const c_char, buf: *mut c_void) -> c_int {
            // SAFETY: __xstat's contract; the path is swapped for a literal.
            unsafe {
                real!($sym, unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> c_int)(ver, stat_path(path), buf)
            }
        }
    };
}
xstat_like!(__xstat, "__xstat");
xstat_like!(__xstat64, "__xstat64");
xstat_like!(__lxstat, "__lxstat");
xstat_like!(__lxstat64, "__lxstat64");

macro_rules! fstatat_like {
    ($name:ident, $sym:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(dirfd: c_int, path: *const c_char, buf: *mut c_void, flags: c_int) -> c_int {
            // SAFETY: fstatat's contract; the path is swapped for a literal.
            unsafe {
                real!($sym, unsafe extern "C" fn(c_int, *const c_char, *mut c_void, c_int) -> c_int)(
                    dirfd,
                    stat_path(path),
                    buf,
                    flags,
                )
            }
        }
    };
}
fstatat_like!(fstatat, "fstatat");
fstatat_like!(fstatat64, "fstatat64");

#[no_mangle]
pub unsafe extern "C" fn statx(dirfd: c_int, path: *const c_char, flags: c_int, mask: u32, buf: *mut c_void) -> c_int {
    // SAFETY: statx's contract; the path is swapped for a literal.
    unsafe {
        real!("statx", unsafe extern "C" fn(c_int, *const c_char, c_int, u32, *mut c_void) -> c_int)(
            dirfd,
            stat_path(path),
            flags,
            mask,
            buf,
        )
    }
}

/// fstat on an rdma_cm descriptor (the daemon's event socket) reports the
/// character device the fixture names in `class/misc/rdma_cm/dev`, as the
/// kernel's file would: librdmacm opens `/dev/infiniband/rdma_cm` only if
/// fstat says it is a character device (and, when netlink named one, that
/// device's number). Everything else comes from the socket's own fstat.
///
/// # Safety
/// fstat(2)'s contract: `buf` points to a writable `struct stat`.
unsafe fn do_fstat(real: unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int, fd: c_int, buf: *mut libc::stat) -> c_int {
    // SAFETY: the caller's arguments, unchanged.
    let r = unsafe { real(fd, buf) };
    if r == 0 && slot_of(fd).is_some_and(|s| s.cm.load(Relaxed)) {
        let (major, minor) = verbs_sim::fixture::RDMA_CM_DEV;
        // SAFETY: fstat filled `*buf` (the caller's writable struct stat).
        unsafe {
            (*buf).st_mode = libc::S_IFCHR | 0o666;
            (*buf).st_rdev = libc::makedev(major, minor);
        }
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn fstat(fd: c_int, buf: *mut libc::stat) -> c_int {
    // SAFETY: fstat's contract is the caller's.
    unsafe { do_fstat(real!("fstat", unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int), fd, buf) }
}

#[no_mangle]
pub unsafe extern "C" fn fstat64(fd: c_int, buf: *mut libc::stat) -> c_int {
    // SAFETY: as fstat (struct stat64 is struct stat on x86_64).
    unsafe { do_fstat(real!("fstat64", unsafe extern "C" fn(c_int, *mut libc::stat) -> c_int), fd, buf) }
}

#[no_mangle]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: access's contract; the path is swapped for a literal.
    unsafe { real!("access", unsafe extern "C" fn(*const c_char, c_int) -> c_int)(stat_path(path), mode) }
}

#[no_mangle]
pub unsafe extern "C" fn socket(domain: c_int, ty: c_int, protocol: c_int) -> c_int {
    if domain == libc::AF_NETLINK && protocol == NETLINK_RDMA && socket_path().is_some() {
        return match netlink::open(ty) {
            Ok(fd) => fd,
            Err(e) => {
                set_errno(e);
                -1
            }
        };
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!("socket", unsafe extern "C" fn(c_int, c_int, c_int) -> c_int)(domain, ty, protocol) }
}

/// rdma_cm's GET_EVENT command number (`rdma_ucm_cmd_hdr.cmd`).
const UCMA_GET_EVENT: u32 = 12;

/// A GET_EVENT whose file another thread closed while it waited. The
/// kernel's GET_EVENT holds its file and sleeps until an event comes, which
/// none will now (the ids go with the file): the thread sleeps until the
/// process ends, as there.
fn park_closed_get_event() -> ! {
    loop {
        // SAFETY: pause has no preconditions.
        unsafe { libc::pause() };
    }
}

#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: usize) -> isize {
    if let Some(slot) = slot_of(fd) {
        if slot.cm.load(Relaxed) {
            // SAFETY: write's contract: `buf` holds `n` readable bytes.
            unsafe { await_listener::before_write(buf.cast(), n) };
        }
        loop {
            let r = forward(slot, Call::Write { buf: buf as u64, len: n as u64 });
            // rdma_cm's GET_EVENT with nothing queued: a blocking file waits
            // until its descriptor is readable (an event came), then asks again.
            // SAFETY: errno location and fcntl/poll on the caller's descriptor.
            let errno = unsafe { *libc::__errno_location() };
            if r < 0 && errno == libc::EBADF && slot.fd.load(Acquire) != fd && slot.cm.load(Relaxed) && n >= 4 {
                // closed by another thread after this call found the file; the
                // kernel would still run the command on the file it holds
                // SAFETY: write's contract: `buf` holds `n` >= 4 readable bytes.
                if unsafe { (buf as *const u32).read_unaligned() } == UCMA_GET_EVENT {
                    park_closed_get_event();
                }
            }
            let again = r < 0 && slot.cm.load(Relaxed) && errno == libc::EAGAIN;
            // SAFETY: fcntl with integer arguments.
            if !again || unsafe { libc::fcntl(fd, libc::F_GETFL) } & libc::O_NONBLOCK != 0 {
                return r as isize;
            }
            let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            // SAFETY: one pollfd on the stack.
            if unsafe { libc::poll(&mut p, 1, -1) } < 0 && unsafe { *libc::__errno_location() } != libc::EINTR {
                return -1;
            }
            if slot.fd.load(Acquire) != fd {
                park_closed_get_event();
            }
        }
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real!("write", unsafe extern "C" fn(c_int, *const c_void, usize) -> isize)(fd, buf, n) }
}

#[no_mangle]
pub unsafe extern "C" fn ioctl(fd: c_int, request: c_ulong, arg: *mut c_void) -> c_int {
    if let Some(slot) = slot_of(fd) {
        return forward(slot, Call::Ioctl { request, arg: arg as u64 }) as c_int;
    }
    // SAFETY: the caller's arguments, unchanged (ioctl is variadic; one
    // pointer-sized argument is what every caller passes).
    unsafe { real!("ioctl", unsafe extern "C" fn(c_int, c_ulong, ...) -> c_int)(fd, request, arg) }
}

type MmapFn = unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, c_int, i64) -> *mut c_void;

/// mmap on a uverbs descriptor: the UAR page the offset names (mlx5_ib's
/// offsets: page index = (cmd << 8 | idx); legacy cmds 0 REGULAR, 2 WC,
/// 3 NC) from the context's memfd. Anything else: EINVAL.
///
/// # Safety
/// mmap(2)'s contract.
unsafe fn uar_mmap(real: MmapFn, slot: &Slot, addr: *mut c_void, len: usize, prot: c_int, flags: c_int, off: i64) -> *mut c_void {
    let pgoff = off / PAGE;
    let (cmd, idx) = ((pgoff >> 8) & 0xff, (pgoff & 0xff) | ((pgoff >> 16) << 8));
    let pages = len.div_ceil(PAGE as usize) as i64;
    let ok = off % PAGE == 0 && matches!(cmd, 0 | 2 | 3) && idx + pages <= slot.pages.load(Relaxed) as i64;
    if !ok {
        set_errno(libc::EINVAL);
        return libc::MAP_FAILED;
    }
    // SAFETY: the caller's mapping request, redirected to the memfd (which
    // is open while the slot is registered).
    unsafe { real(addr, len, prot, flags, slot.memfd.load(Relaxed), idx * PAGE) }
}

#[no_mangle]
pub unsafe extern "C" fn mmap(addr: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int, off: i64) -> *mut c_void {
    let real = real!("mmap", MmapFn);
    if let Some(slot) = slot_of(fd) {
        // SAFETY: mmap's contract is the caller's.
        return unsafe { uar_mmap(real, slot, addr, len, prot, flags, off) };
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real(addr, len, prot, flags, fd, off) }
}

#[no_mangle]
pub unsafe extern "C" fn mmap64(addr: *mut c_void, len: usize, prot: c_int, flags: c_int, fd: c_int, off: i64) -> *mut c_void {
    let real = real!("mmap64", MmapFn);
    if let Some(slot) = slot_of(fd) {
        // SAFETY: mmap's contract is the caller's.
        return unsafe { uar_mmap(real, slot, addr, len, prot, flags, off) };
    }
    // SAFETY: the caller's arguments, unchanged.
    unsafe { real(addr, len, prot, flags, fd, off) }
}

#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if let Some(slot) = slot_of(fd) {
        detach(slot);
    }
    // SAFETY: the caller's argument, unchanged.
    unsafe { real!("close", unsafe extern "C" fn(c_int) -> c_int)(fd) }
}
