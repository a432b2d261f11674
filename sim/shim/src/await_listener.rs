//! With `VERBS_SIM_CM_AWAIT_LISTENER=MS` (see `verbs_sim::cm_listen`): an
//! rdma_cm address resolution to a port that no listener is on waits, up
//! to MS milliseconds, until the daemon's listener file lists one there;
//! then the command goes to the daemon unchanged. A test harness sets it
//! for a client whose server creates its listener at a moment the harness
//! cannot see (perftest `-R`'s second connection).
//!
//! The file is read with raw system calls, not through this shim's own
//! `open`/`read`.

use std::ffi::{c_int, CString};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use verbs_sim::cm_listen;

/// The longest wait and the listener file, if the variable is set.
fn config() -> Option<&'static (Duration, CString)> {
    static CFG: OnceLock<Option<(Duration, CString)>> = OnceLock::new();
    CFG.get_or_init(|| {
        let ms: u64 = std::env::var(cm_listen::AWAIT_ENV).ok()?.trim().parse().ok()?;
        let sock = std::env::var_os("VERBS_SIM_SOCKET")?;
        let path = cm_listen::path(std::path::Path::new(&sock));
        let path = CString::new(std::os::unix::ffi::OsStringExt::into_vec(path.into_os_string())).ok()?;
        Some((Duration::from_millis(ms), path))
    })
    .as_ref()
}

/// The listener file's text ("" if it cannot be read).
fn read_listeners(path: &CString) -> String {
    // SAFETY: openat(2) of a NUL-terminated path, through syscall(2).
    let fd = unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return String::new();
    }
    let fd = fd as c_int;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        // SAFETY: read(2) into a local buffer of the given size.
        let n = unsafe { libc::syscall(libc::SYS_read, fd, buf.as_mut_ptr(), buf.len()) };
        if n <= 0 {
            break;
        }
        out.extend_from_slice(&buf[..n as usize]);
    }
    super::sys_close(fd);
    String::from_utf8_lossy(&out).into_owned()
}

/// Before an rdma_cm write of `n` bytes at `buf`: if it resolves an address
/// and the variable is set, waits for a listener on its destination port.
///
/// # Safety
/// `buf` holds `n` readable bytes (write(2)'s contract).
pub unsafe fn before_write(buf: *const u8, n: usize) {
    let Some((limit, path)) = config() else { return };
    // the hdr and the larger of the two resolve commands
    let mut w = [0u8; 8 + 272];
    let len = n.min(w.len());
    // SAFETY: caller contract: `len` <= `n` readable bytes at `buf`.
    unsafe { std::ptr::copy_nonoverlapping(buf, w.as_mut_ptr(), len) };
    let Some(port) = cm_listen::resolve_dst_port(&w[..len]) else { return };
    let start = Instant::now();
    while !cm_listen::lists_port(&read_listeners(path), port) && start.elapsed() < *limit {
        std::thread::sleep(Duration::from_millis(1));
    }
}
