//! Getting the device list the way the rdma-core tools report it.

use verbs::{Error, ErrorKind};

/// The text `perror("Failed to get IB devices list")` prints in rdma-core
/// for a failed `ibv_get_device_list`.
///
/// libibverbs fails with `ENOSYS` both when the uverbs ABI file is missing
/// (modules not loaded) and when its version is unsupported; other
/// failures keep their errno.
pub(crate) fn list_error_message(e: &Error) -> String {
    let errno = match e.kind() {
        ErrorKind::NoAbiFile | ErrorKind::AbiMismatch { .. } => libc::ENOSYS,
        _ => e.raw_os_error(),
    };
    format!("Failed to get IB devices list: {}", strerror(errno))
}

/// `strerror(errno)`: the C library's message without Rust's
/// `" (os error N)"` suffix.
pub(crate) fn strerror(errno: i32) -> String {
    let full = std::io::Error::from_raw_os_error(errno).to_string();
    let suffix = format!(" (os error {errno})");
    full.strip_suffix(&suffix).unwrap_or(&full).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_error_reads_like_perror() {
        let e = Error::new("ibv_get_device_list", ErrorKind::NoAbiFile);
        assert_eq!(
            list_error_message(&e),
            "Failed to get IB devices list: Function not implemented"
        );
        let e = Error::from_errno("ibv_get_device_list", verbs::error::Errno::ACCESS);
        assert_eq!(
            list_error_message(&e),
            "Failed to get IB devices list: Permission denied"
        );
    }
}
