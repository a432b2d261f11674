//! # Safety
//!
//! The small helpers: static-rate conversions, the `*_str` functions, fork
//! protection, `ibv_get_sysfs_path` and `ibv_read_sysfs_file`.
//!
//! The `*_str` functions return C strings made once from the `verbs`
//! crate's `&'static str` tables and then kept for the process's life
//! ([`c_static`]), so the pointers stay valid as C expects of string
//! literals. `ibv_read_sysfs_file` writes at most `size` bytes to `buf`.
#![allow(unsafe_code)]

use core::ffi::{c_char, c_int};
use std::ffi::CString;
use std::sync::{Mutex, OnceLock};

use verbs::async_event::EventType;
use verbs::strings::{self, Rate};

use crate::errno::{cstr, errno_of, fail_errno, fail_neg1};

/// A NUL-terminated copy of `s` that lives forever (one per distinct text).
fn c_static(s: &'static str) -> *const c_char {
    static TABLE: Mutex<Vec<(&'static str, &'static core::ffi::CStr)>> = Mutex::new(Vec::new());
    let mut t = TABLE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, c)) = t.iter().find(|(k, _)| core::ptr::eq(*k, s)) {
        return c.as_ptr();
    }
    // The tables hold no interior NUL; should one appear, print up to it.
    let c: &'static core::ffi::CStr = Box::leak(
        CString::new(s.split('\0').next().unwrap_or("")).unwrap_or_default().into_boxed_c_str(),
    );
    t.push((s, c));
    c.as_ptr()
}

/// `ibv_node_type_str`
pub(crate) extern "C" fn ibv_node_type_str(node_type: c_int) -> *const c_char {
    c_static(strings::node_type_str(node_type))
}

/// `ibv_port_state_str`
pub(crate) extern "C" fn ibv_port_state_str(state: c_int) -> *const c_char {
    c_static(strings::port_state_str(state as u32))
}

/// The last `enum ibv_event_type` of rdma-core 44 (`IBV_EVENT_WQ_FATAL`);
/// later rdma-core names 20 (`IBV_EVENT_DEVICE_SPEED_CHANGE`), 44 calls it "unknown".
const LAST_EVENT_TYPE_44: c_int = 19;

/// `ibv_event_type_str`, as rdma-core 44 answers.
pub(crate) extern "C" fn ibv_event_type_str(event: c_int) -> *const c_char {
    let event = if event > LAST_EVENT_TYPE_44 { -1 } else { event };
    c_static(strings::event_type_str(EventType::from_raw(event as u32)))
}

/// `ibv_wc_status_str`
pub(crate) extern "C" fn ibv_wc_status_str(status: c_int) -> *const c_char {
    c_static(strings::wc_status_str(status as u32))
}

/// `ibv_rate_to_mult`: -1 for MAX and for values that name no rate.
pub(crate) extern "C" fn ibv_rate_to_mult(rate: c_int) -> c_int {
    Rate::from_raw(rate as u32).map_or(-1, strings::rate_to_mult)
}

/// `mult_to_ibv_rate`
pub(crate) extern "C" fn mult_to_ibv_rate(mult: c_int) -> c_int {
    strings::mult_to_rate(mult) as c_int
}

/// `ibv_rate_to_mbps`: -1 for MAX and for values that name no rate.
pub(crate) extern "C" fn ibv_rate_to_mbps(rate: c_int) -> c_int {
    Rate::from_raw(rate as u32).map_or(-1, strings::rate_to_mbps)
}

/// `mbps_to_ibv_rate`
pub(crate) extern "C" fn mbps_to_ibv_rate(mbps: c_int) -> c_int {
    strings::mbps_to_rate(mbps) as c_int
}

/// `ibv_fork_init`: 0 or the errno value (`EINVAL` after a registration
/// without protection).
pub(crate) extern "C" fn ibv_fork_init() -> c_int {
    match verbs::fork::fork_init() {
        Ok(()) => 0,
        Err(e) => fail_errno(errno_of(&e)),
    }
}

/// `ibv_is_fork_initialized`: `enum ibv_fork_status`.
pub(crate) extern "C" fn ibv_is_fork_initialized() -> c_int {
    verbs::fork::is_fork_initialized() as c_int
}

/// `ibv_get_sysfs_path`: `$SYSFS_PATH` without trailing slashes (unless the
/// program runs set-uid), else `/sys`; computed once.
pub(crate) extern "C" fn ibv_get_sysfs_path() -> *const c_char {
    static PATH: OnceLock<CString> = OnceLock::new();
    PATH.get_or_init(|| {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        // SAFETY: geteuid has no preconditions.
        let setuid = uid != unsafe { libc::geteuid() };
        let env = if setuid { None } else { std::env::var_os("SYSFS_PATH") };
        let s = env.map(|v| v.to_string_lossy().trim_end_matches('/').to_owned());
        CString::new(s.unwrap_or_else(|| "/sys".into())).unwrap_or_default()
    })
    .as_ptr()
}

/// `ibv_read_sysfs_file`: reads `dir/file` into `buf` (at most `size`
/// bytes), dropping one trailing newline and NUL-terminating; the length,
/// or -1 with errno (also when the text would not fit with its NUL).
///
/// # Safety
///
/// `dir` and `file` are NULL or NUL-terminated strings; `buf` is NULL or
/// points to `size` writable bytes.
pub(crate) unsafe extern "C" fn ibv_read_sysfs_file(dir: *const c_char, file: *const c_char, buf: *mut c_char, size: usize) -> c_int {
    // SAFETY: forwarded caller contract (NUL-terminated or NULL).
    let (Some(dir), Some(file)) = (unsafe { cstr(dir) }, unsafe { cstr(file) }) else {
        return fail_neg1(libc::EINVAL);
    };
    if buf.is_null() {
        return fail_neg1(libc::EINVAL);
    }
    // SAFETY: the caller promises `size` writable bytes at buf.
    let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), size) };
    match read_into(&format!("{dir}/{file}"), out) {
        Ok(n) => n as c_int,
        Err(e) => fail_neg1(e),
    }
}

/// rdma-core's `ibv_read_sysfs_file_at` on a path: one `read` of up to
/// `out.len()` bytes; a trailing newline becomes the NUL.
fn read_into(path: &str, out: &mut [u8]) -> Result<usize, c_int> {
    use std::io::Read as _;
    let mut f = std::fs::File::open(path).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    let mut n = f.read(out).map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
    if n > 0 {
        if out[n - 1] == b'\n' {
            n -= 1;
            out[n] = 0;
        } else if n < out.len() {
            out[n] = 0;
        } else {
            return Err(libc::EOVERFLOW);
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(p: *const c_char) -> &'static str {
        // SAFETY: c_static returns NUL-terminated strings that live forever.
        unsafe { cstr(p) }.unwrap()
    }

    #[test]
    fn strings_are_stable_c_strings() {
        assert_eq!(text(ibv_node_type_str(1)), "InfiniBand channel adapter");
        assert_eq!(text(ibv_node_type_str(99)), "unknown");
        assert_eq!(text(ibv_port_state_str(4)), "active");
        assert_eq!(text(ibv_wc_status_str(5)), "Work Request Flushed Error");
        assert_eq!(text(ibv_event_type_str(0)), "CQ error");
        assert_eq!(text(ibv_event_type_str(19)), "WQ fatal");
        assert_eq!(text(ibv_event_type_str(20)), "unknown");
        assert_eq!(ibv_port_state_str(4), ibv_port_state_str(4));
    }

    #[test]
    fn rates_convert() {
        assert_eq!(ibv_rate_to_mult(3), 4); // 10 Gb/s
        assert_eq!(ibv_rate_to_mult(0), -1);
        assert_eq!(ibv_rate_to_mult(1000), -1);
        assert_eq!(mult_to_ibv_rate(4), 3);
        assert_eq!(ibv_rate_to_mbps(15), 25781);
        assert_eq!(mbps_to_ibv_rate(25781), 15);
        assert_eq!(mbps_to_ibv_rate(1), 0);
    }

    #[test]
    fn read_sysfs_file_strips_newline_and_refuses_truncation() {
        let dir = std::env::temp_dir().join(format!("verbs-capi-sysfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a"), "0xffff\n").unwrap();
        let d = CString::new(dir.to_str().unwrap()).unwrap();
        let f = CString::new("a").unwrap();
        let mut buf = [0x55 as c_char; 16];
        // SAFETY: valid strings and a 16-byte buffer.
        let n = unsafe { ibv_read_sysfs_file(d.as_ptr(), f.as_ptr(), buf.as_mut_ptr(), buf.len()) };
        assert_eq!(n, 6);
        assert_eq!(text(buf.as_ptr()), "0xffff");
        let mut small = [0 as c_char; 3];
        // SAFETY: as above, 3-byte buffer.
        let n = unsafe { ibv_read_sysfs_file(d.as_ptr(), f.as_ptr(), small.as_mut_ptr(), small.len()) };
        assert_eq!(n, -1);
        let missing = CString::new("missing").unwrap();
        // SAFETY: as above.
        let n = unsafe { ibv_read_sysfs_file(d.as_ptr(), missing.as_ptr(), buf.as_mut_ptr(), buf.len()) };
        assert_eq!((n, std::io::Error::last_os_error().raw_os_error()), (-1, Some(libc::ENOENT)));
        // SAFETY: NULL is refused before any read.
        assert_eq!(unsafe { ibv_read_sysfs_file(core::ptr::null(), f.as_ptr(), buf.as_mut_ptr(), 16) }, -1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
