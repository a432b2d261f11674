//! Errors: small, `Copy`, and always naming the verb that failed.
//!
//! Every fallible function in this crate returns [`Error`], which records
//! *which* verb failed (by its libibverbs name, e.g. `"ibv_reg_mr"`), *what
//! kind* of failure it was ([`ErrorKind`]) and, when the kernel said no, the
//! errno it answered with, and, when the library can say more than the
//! kind, a static *detail* naming the cause (`"rq_psn is wider than 24
//! bits"`). Errors never allocate, so they can be returned from the data
//! path.
//!
//! `Display` renders `verb: kind[: detail] (os error N)`: each part once
//! (the kind is not followed by the errno's own text, which would say the
//! same: "invalid argument: Invalid argument"); for an errno that has no
//! kind of its own ([`ErrorKind::Os`]) the errno's text stands in for the
//! kind.

use core::fmt;

pub use rustix::io::Errno;

/// What went wrong, independent of which verb it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `/sys/class/infiniband_verbs/abi_version` is missing or unreadable:
    /// the RDMA kernel modules (`ib_uverbs`) are not loaded.
    NoAbiFile,
    /// The kernel's uverbs ABI version is outside what this library speaks.
    AbiMismatch {
        /// The version the kernel reported.
        kernel: u32,
        /// The lowest version we support.
        min: u32,
        /// The highest version we support.
        max: u32,
    },
    /// No device with that name, index or GUID exists.
    NoDevice,
    /// The device exists but no provider compiled into this build drives it.
    NoProvider,
    /// The file opened as the device is not its uverbs character device
    /// (`fstat`: not a character device, or not the `major:minor` sysfs
    /// gives for `/dev/infiniband/uverbsN`).
    NotUverbsDevice,
    /// The device file (`/dev/infiniband/uverbsN`) could not be opened
    /// because of its permissions.
    PermissionDenied,
    /// `RLIMIT_MEMLOCK` is too low to register memory or create queues.
    MemlockTooLow,
    /// The provider or kernel does not implement this verb or this variant
    /// of it (for example XRC on rxe, UD on siw).
    Unsupported,
    /// An argument was rejected before reaching the kernel, or the kernel
    /// answered `EINVAL`.
    InvalidArgument,
    /// The memory given to the kernel is not mapped in this process (the
    /// kernel answered `EFAULT` while pinning it, e.g. in `ibv_reg_mr`).
    BadAddress,
    /// Nothing to read yet on a non-blocking event file (async events,
    /// completion channel): the kernel answered `EAGAIN`. Wait with
    /// poll/epoll and try again.
    WouldBlock,
    /// The object is still in use: the kernel answered `EBUSY` (a
    /// dependent object is alive), or a CQ is being polled by another
    /// caller (another thread, or a `poll_with` closure still running).
    Busy,
    /// The operation is not valid in the object's current state.
    WrongState,
    /// A work queue has no free slot; nothing was written.
    QueueFull,
    /// A work request has more scatter/gather entries than the queue allows.
    TooManySge,
    /// Inline data is longer than the queue's `max_inline_data`.
    InlineTooLarge,
    /// The opcode is not valid for this queue pair type or provider.
    UnsupportedOpcode,
    /// The kernel ran out of memory or a resource limit was hit.
    OutOfResources,
    /// A reply from the kernel (command response, sysfs or netlink) did not
    /// have the expected shape.
    Malformed,
    /// A completion event is for a CQ that was not among those given to
    /// `get_cq_event`; the event is kept on the channel, not lost.
    CqNotListed,
    /// Nothing matched what was looked for (e.g. no RoCE v2 IPv4 GID on
    /// the port).
    NotFound,
    /// The object's ring could not be mapped again after a resize: the
    /// kernel no longer uses the old one, so the object is dead and every
    /// later call on it fails with this error. Destroy it.
    Dead,
    /// The peer refused the connection: nobody listens on that address
    /// and port, or the listener rejected it (the connection manager's
    /// reject reason is in the detail).
    Refused,
    /// Nothing answered before the deadline (a connection manager step, a
    /// completion wait).
    TimedOut,
    /// The peer's address or route could not be resolved, or the peer did
    /// not answer the connection request.
    Unreachable,
    /// Any other errno from the kernel.
    Os,
}

/// The error type of every verb.
///
/// `Display` renders it the way a libibverbs user expects to read it:
/// `ibv_modify_qp: invalid argument: rq_psn is wider than 24 bits`, or
/// `ibv_reg_mr: Bad address (os error 14)`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Error {
    verb: &'static str,
    kind: ErrorKind,
    errno: Option<Errno>,
    detail: Option<&'static str>,
}

impl Error {
    /// An error of `kind` raised by `verb` without a kernel errno.
    #[inline]
    pub const fn new(verb: &'static str, kind: ErrorKind) -> Self {
        Self { verb, kind, errno: None, detail: None }
    }

    /// An [`ErrorKind::InvalidArgument`] raised by `verb` before the kernel
    /// was asked, with `detail` naming the argument and what is wrong with
    /// it (e.g. `"retry_cnt is wider than 3 bits"`).
    #[inline]
    pub const fn invalid(verb: &'static str, detail: &'static str) -> Self {
        Self::new(verb, ErrorKind::InvalidArgument).with_detail(detail)
    }

    /// An error from the kernel: the kind is derived from the errno.
    #[inline]
    pub fn from_errno(verb: &'static str, errno: Errno) -> Self {
        Self { verb, kind: kind_of(errno), errno: Some(errno), detail: None }
    }

    /// An error of an explicit kind that also carries the kernel's errno.
    #[inline]
    pub const fn with_errno(verb: &'static str, kind: ErrorKind, errno: Errno) -> Self {
        Self { verb, kind, errno: Some(errno), detail: None }
    }

    /// The same error with `detail` (replacing any earlier one): what the
    /// library knows about the cause beyond the kind.
    #[inline]
    #[must_use]
    pub const fn with_detail(mut self, detail: &'static str) -> Self {
        self.detail = Some(detail);
        self
    }

    /// What the library knows about the cause beyond the kind, if
    /// anything (e.g. which attribute field was out of range).
    #[inline]
    pub const fn detail(&self) -> Option<&'static str> {
        self.detail
    }

    /// The libibverbs name of the verb that failed (e.g. `"ibv_create_qp"`).
    #[inline]
    pub const fn verb(&self) -> &'static str {
        self.verb
    }

    /// What kind of failure this was.
    #[inline]
    pub const fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The errno the kernel answered with, if the kernel was asked.
    #[inline]
    pub const fn errno(&self) -> Option<Errno> {
        self.errno
    }

    /// The errno a C caller would see: the kernel's, or the conventional one
    /// for errors raised in user space.
    pub fn raw_os_error(&self) -> i32 {
        if let Some(e) = self.errno {
            return e.raw_os_error();
        }
        let e = match self.kind {
            ErrorKind::NoAbiFile | ErrorKind::NoDevice | ErrorKind::NotUverbsDevice => Errno::NODEV,
            ErrorKind::AbiMismatch { .. } => Errno::PROTO,
            ErrorKind::NoProvider | ErrorKind::Unsupported | ErrorKind::UnsupportedOpcode => {
                Errno::OPNOTSUPP
            }
            ErrorKind::PermissionDenied => Errno::ACCESS,
            ErrorKind::MemlockTooLow | ErrorKind::QueueFull | ErrorKind::OutOfResources => {
                Errno::NOMEM
            }
            ErrorKind::Busy => Errno::BUSY,
            ErrorKind::BadAddress => Errno::FAULT,
            ErrorKind::WouldBlock => Errno::AGAIN,
            ErrorKind::Malformed => Errno::PROTO,
            ErrorKind::InvalidArgument
            | ErrorKind::WrongState
            | ErrorKind::TooManySge
            | ErrorKind::InlineTooLarge
            | ErrorKind::Os => Errno::INVAL,
            ErrorKind::NotFound => Errno::NOENT,
            ErrorKind::Dead => Errno::IO,
            ErrorKind::CqNotListed => Errno::INVAL,
            ErrorKind::Refused => Errno::CONNREFUSED,
            ErrorKind::TimedOut => Errno::TIMEDOUT,
            ErrorKind::Unreachable => Errno::HOSTUNREACH,
        };
        e.raw_os_error()
    }
}

/// Maps a kernel errno to the kind of failure it means for a verb.
fn kind_of(errno: Errno) -> ErrorKind {
    match errno {
        Errno::NODEV | Errno::NXIO | Errno::NOENT => ErrorKind::NoDevice,
        Errno::ACCESS | Errno::PERM => ErrorKind::PermissionDenied,
        Errno::OPNOTSUPP | Errno::NOSYS | Errno::NOTTY | Errno::PROTONOSUPPORT => {
            ErrorKind::Unsupported
        }
        Errno::INVAL => ErrorKind::InvalidArgument,
        Errno::BUSY => ErrorKind::Busy,
        Errno::NOMEM | Errno::NOSPC | Errno::MFILE | Errno::NFILE | Errno::AGAIN => {
            ErrorKind::OutOfResources
        }
        _ => ErrorKind::Os,
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ErrorKind::NoAbiFile => f.write_str(
                "couldn't read uverbs ABI version (are the RDMA kernel modules loaded? try `modprobe ib_uverbs`)",
            ),
            ErrorKind::AbiMismatch { kernel, min, max } => write!(
                f,
                "kernel ABI version {kernel} doesn't match library version (supported: {min}..={max}; fix: use a kernel whose uverbs ABI is in that range, or a matching library)"
            ),
            ErrorKind::NoDevice => f.write_str("no such RDMA device"),
            ErrorKind::NoProvider => {
                f.write_str("no userspace device-specific driver (provider) in this build for the device")
            }
            ErrorKind::NotUverbsDevice => f.write_str(
                "the device file is not the device's uverbs character device (fix: check /dev/infiniband/uverbsN against /sys/class/infiniband_verbs/uverbsN/dev)",
            ),
            ErrorKind::PermissionDenied => f.write_str(
                "permission denied on the device file /dev/infiniband/uverbsN (fix: run as a user with read/write access, e.g. a udev rule MODE=\"0666\" or GROUP)",
            ),
            ErrorKind::MemlockTooLow => f.write_str(
                "RLIMIT_MEMLOCK too low to lock memory (fix: raise it with `ulimit -l unlimited` or in /etc/security/limits.conf)",
            ),
            ErrorKind::Unsupported => f.write_str("operation not supported by this device or provider"),
            ErrorKind::InvalidArgument => f.write_str("invalid argument"),
            ErrorKind::BadAddress => f.write_str(
                "bad address: the memory range is not (fully) mapped in this process, so the kernel cannot pin it",
            ),
            ErrorKind::WouldBlock => {
                f.write_str("no event pending on the non-blocking event file (wait with poll/epoll)")
            }
            ErrorKind::Busy => f.write_str("resource busy (still used by a dependent object or another caller)"),
            ErrorKind::WrongState => f.write_str("not valid in the object's current state"),
            ErrorKind::QueueFull => f.write_str("work queue full"),
            ErrorKind::TooManySge => f.write_str("too many scatter/gather entries"),
            ErrorKind::InlineTooLarge => f.write_str("inline data larger than max_inline_data"),
            ErrorKind::UnsupportedOpcode => f.write_str("opcode not supported for this queue pair"),
            ErrorKind::OutOfResources => f.write_str("out of resources"),
            ErrorKind::Malformed => f.write_str("malformed reply from the kernel"),
            ErrorKind::NotFound => f.write_str("no matching entry found"),
            ErrorKind::Dead => f.write_str(
                "the object is dead: its ring could not be mapped again after a resize (destroy it)",
            ),
            ErrorKind::CqNotListed => f.write_str(
                "the completion event is for a CQ that was not in the list given; it is kept on the channel and returned by the next call that lists that CQ (fix: pass every CQ created on this channel; CompChannel::pending_cq_events gives the user handles waiting)",
            ),
            ErrorKind::Refused => f.write_str("connection refused"),
            ErrorKind::TimedOut => f.write_str("timed out"),
            ErrorKind::Unreachable => f.write_str("peer unreachable"),
            ErrorKind::Os => f.write_str("kernel error"),
        }
    }
}

impl fmt::Display for Error {
    /// `verb: kind[: detail] (os error N)`. Only a kernel error without a
    /// kind of its own ([`ErrorKind::Os`]) prints the errno's text, in
    /// place of the kind: otherwise the kind already says what the text
    /// would ("invalid argument: Invalid argument").
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.verb)?;
        f.write_str(": ")?;
        match self.errno {
            // std's rendering is "<strerror> (os error N)".
            #[cfg(feature = "std")]
            Some(e) if self.kind == ErrorKind::Os => {
                write!(f, "{}", std::io::Error::from_raw_os_error(e.raw_os_error()))?;
                if let Some(d) = self.detail {
                    write!(f, ": {d}")?;
                }
                return Ok(());
            }
            _ => write!(f, "{}", self.kind)?,
        }
        if let Some(d) = self.detail {
            write!(f, ": {d}")?;
        }
        if let Some(e) = self.errno {
            write!(f, " (os error {})", e.raw_os_error())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("verb", &self.verb).field("kind", &self.kind).field("errno", &self.errno);
        if let Some(detail) = self.detail {
            d.field("detail", &detail);
        }
        d.finish()
    }
}

impl core::error::Error for Error {}

#[cfg(feature = "std")]
impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        std::io::Error::new(std::io::Error::from_raw_os_error(e.raw_os_error()).kind(), e)
    }
}

/// An [`Errno`] from a raw positive errno value received from outside
/// (netlink, a kernel reply), or `None` if it is not a valid errno
/// (`Errno::from_raw_os_error` would panic on it).
pub fn errno_from_raw(raw: i32) -> Option<Errno> {
    (1..=4095).contains(&raw).then(|| Errno::from_raw_os_error(raw))
}

/// Shorthand for `Result<T, Error>`.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Called when destroying an object from `Drop` fails: the error cannot be
/// returned, so it is written to the debug log (std) instead of vanishing.
/// Use the object's `destroy()` to receive such errors.
pub(crate) fn report_drop_failure(e: Error) {
    #[cfg(feature = "std")]
    crate::log::err(format_args!("{e} (while dropping; call destroy() to handle this error)"));
    #[cfg(not(feature = "std"))]
    let _ = e;
}

/// `?` from an error that hands an object back (`TransitionError`,
/// `WaitError`, `MigrateError`, `DestroyError`) into
/// `Box<dyn Error + Send + Sync>` or `Box<dyn Error>`: those errors borrow
/// (the QP, the channel), so the box gets the [`Error`] alone and the
/// object is dropped. They implement `Display` and `Debug` but not
/// `core::error::Error`, which would make this conversion overlap std's.
/// Match on the error first to keep the object.
macro_rules! box_error_from {
    ([$($g:tt)*] $ty:ty, |$e:ident| $body:expr) => {
        #[cfg(feature = "std")]
        impl<$($g)*> From<$ty> for std::boxed::Box<dyn core::error::Error + Send + Sync> {
            fn from($e: $ty) -> Self {
                std::boxed::Box::new($body)
            }
        }
        #[cfg(feature = "std")]
        impl<$($g)*> From<$ty> for std::boxed::Box<dyn core::error::Error> {
            fn from($e: $ty) -> Self {
                std::boxed::Box::new($body)
            }
        }
    };
}
pub(crate) use box_error_from;

#[cfg(test)]
mod tests {
    use super::*;

    fn text(e: &Error) -> heapless::String<256> {
        let mut buf = heapless::String::new();
        core::fmt::write(&mut buf, format_args!("{e}")).unwrap();
        buf
    }

    #[test]
    fn display_names_the_verb_and_the_errno() {
        let e = Error::from_errno("ibv_reg_mr", Errno::FAULT);
        assert_eq!(e.kind(), ErrorKind::Os);
        let buf = text(&e);
        #[cfg(feature = "std")]
        assert_eq!(buf, "ibv_reg_mr: Bad address (os error 14)");
        #[cfg(not(feature = "std"))]
        assert_eq!(buf, "ibv_reg_mr: kernel error (os error 14)");
    }

    #[test]
    fn display_says_each_thing_once() {
        // The kind is not followed by the errno's text saying the same.
        let e = Error::from_errno("ibv_modify_qp", Errno::INVAL);
        assert_eq!(text(&e), "ibv_modify_qp: invalid argument (os error 22)");
        let e = Error::from_errno("ibv_destroy_cq", Errno::BUSY);
        assert_eq!(text(&e), "ibv_destroy_cq: resource busy (still used by a dependent object or another caller) (os error 16)");
        let e = Error::new("ibv_post_send", ErrorKind::QueueFull);
        assert_eq!(text(&e), "ibv_post_send: work queue full");
    }

    #[test]
    fn detail_is_printed_after_the_kind() {
        let e = Error::invalid("ibv_modify_qp", "rq_psn is wider than 24 bits");
        assert_eq!((e.kind(), e.detail(), e.errno()), (ErrorKind::InvalidArgument, Some("rq_psn is wider than 24 bits"), None));
        assert_eq!(text(&e), "ibv_modify_qp: invalid argument: rq_psn is wider than 24 bits");
        let e = Error::from_errno("ibv_modify_qp", Errno::INVAL).with_detail("x");
        assert_eq!(text(&e), "ibv_modify_qp: invalid argument: x (os error 22)");
        assert_eq!(e.raw_os_error(), libc::EINVAL);
        assert_ne!(e, Error::from_errno("ibv_modify_qp", Errno::INVAL), "the detail is part of the value");
    }

    #[test]
    fn errno_maps_to_kind() {
        assert_eq!(Error::from_errno("x", Errno::ACCESS).kind(), ErrorKind::PermissionDenied);
        assert_eq!(Error::from_errno("x", Errno::BUSY).kind(), ErrorKind::Busy);
        assert_eq!(Error::from_errno("x", Errno::OPNOTSUPP).kind(), ErrorKind::Unsupported);
        assert_eq!(Error::new("x", ErrorKind::QueueFull).raw_os_error(), libc::ENOMEM);
    }
}
