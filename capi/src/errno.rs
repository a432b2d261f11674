//! # Safety
//!
//! `errno` is written through `__errno_location()`, which glibc defines to
//! return a valid pointer to the calling thread's `errno` for the life of
//! the thread. This file also has the one helper that reads C strings
//! into `&CStr` ([`cstr`]), whose caller promises a NUL-terminated string.
//!
//! The C conventions for failure: functions returning a pointer give NULL
//! with `errno` set; those returning `int` give -1 with `errno` set, or the
//! errno value itself (the `ibv_destroy_*`/`ibv_modify_*` family).
#![allow(unsafe_code)]

use core::ffi::{c_char, c_int, CStr};

/// Sets the calling thread's `errno`.
pub(crate) fn set_errno(e: c_int) {
    // SAFETY: no preconditions.
    let p = unsafe { libc::__errno_location() };
    // SAFETY: glibc's __errno_location() returns this thread's errno slot,
    // valid and exclusive to this thread while it runs.
    unsafe { *p = e };
}

/// The errno a C caller sees for a `verbs` error. The error itself, with
/// the verb and the cause rdma-core's library cannot tell its callers, goes
/// to the `VERBS_LOG_LEVEL` log (error level; an `EAGAIN` of a non-blocking
/// read at debug level): see `init.rs` for when that log is written.
pub(crate) fn errno_of(e: &verbs::Error) -> c_int {
    let level = match e.kind() {
        verbs::ErrorKind::WouldBlock => verbs::log::LogLevel::Debug,
        _ => verbs::log::LogLevel::Err,
    };
    verbs::log::logger().log(level, format_args!("{e}"));
    e.raw_os_error()
}

/// Sets errno from `e` and returns -1 (the `int` failure convention).
pub(crate) fn fail_neg1(e: c_int) -> c_int {
    set_errno(e);
    -1
}

/// Sets errno from `e` and returns `e` (the "returns errno" convention).
pub(crate) fn fail_errno(e: c_int) -> c_int {
    set_errno(e);
    e
}

/// Sets errno and returns NULL (the pointer failure convention).
pub(crate) fn fail_null<T>(e: c_int) -> *mut T {
    set_errno(e);
    core::ptr::null_mut()
}

/// Borrows a C string, `None` for NULL or non-UTF-8 text.
///
/// # Safety
///
/// `p` is NULL or points to a NUL-terminated string that stays unchanged
/// for `'a`.
pub(crate) unsafe fn cstr<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string
    // living for 'a.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// Copies `s` into a fixed C `char` array, truncating and always
/// NUL-terminating (as rdma-core's `strncpy` into `ibv_device.name` does
/// for names that fit, which sysfs names always do).
pub(crate) fn copy_cstr(dst: &mut [c_char], s: &str) {
    let n = s.len().min(dst.len().saturating_sub(1));
    for (d, b) in dst.iter_mut().zip(s.as_bytes()[..n].iter()) {
        *d = *b as c_char;
    }
    for d in dst.iter_mut().skip(n) {
        *d = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_is_set_and_read_back() {
        assert_eq!(fail_neg1(libc::EINVAL), -1);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EINVAL));
        assert_eq!(fail_errno(libc::EOPNOTSUPP), libc::EOPNOTSUPP);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EOPNOTSUPP));
        assert!(fail_null::<u8>(libc::ENOMEM).is_null());
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::ENOMEM));
    }

    #[test]
    fn copy_cstr_truncates_and_terminates() {
        let mut b = [1 as c_char; 4];
        copy_cstr(&mut b, "rxe0");
        assert_eq!(b, [b'r' as c_char, b'x' as c_char, b'e' as c_char, 0]);
        copy_cstr(&mut b, "a");
        assert_eq!(b, [b'a' as c_char, 0, 0, 0]);
        // SAFETY: b is NUL-terminated and lives across the call.
        assert_eq!(unsafe { cstr(b.as_ptr()) }, Some("a"));
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { cstr(core::ptr::null()) }, None);
    }
}
