//! The open device file and the two ways commands reach the kernel through
//! it: `ioctl(RDMA_VERBS_IOCTL)` and the legacy `write()` ABI.
//!
//! # Safety
//!
//! Both paths hand the kernel *addresses* as integers: attribute `data`
//! fields of an ioctl frame and the `response` pointer of a write command.
//! The kernel writes through them. Soundness rests on one invariant, kept
//! by construction in this module and in [`super::ioctl_buf`]:
//!
//! * every address given to the kernel is derived from a Rust borrow that
//!   is live for the whole syscall: `&'a mut T` for memory the kernel
//!   writes, `&'a T` for memory it only reads, with `'a` outliving the
//!   frame or call that carries the address, and the length given next to
//!   it never exceeds the borrowed object's size. The one exception is the
//!   doorbell's response word, a `'static` [`AtomicU32`] that nothing
//!   reads (see [`Doorbell`]): `'static` outlives every call, and interior
//!   mutability is what lets the kernel write it through a shared address.
//!
//! And one about what the compiler may assume: a `write()` command makes
//! the kernel *write* memory whose address travels inside the command
//! bytes (the response buffer; for rxe's `MODIFY_SRQ`, a stack `mminfo`).
//! So every command `write()` goes through [`sys_write`], the C library's
//! `write` (an opaque foreign call, which the compiler must assume reads
//! and writes all memory whose address escaped, as these addresses did by
//! their pointer-to-integer casts), never through rustix's `write`, which
//! is declared to the compiler as a `readonly` system call. The send
//! doorbell is one inline `syscall` instruction (`doorbell_write`),
//! declared neither `readonly` nor `nomem`: by the rules for inline
//! assembly the compiler must assume it reads and writes any memory whose
//! address escaped, as for the foreign call (the kernel reads the mapped
//! send queue and writes the doorbell's `'static` response word).
//!
//! The unsafe operations here: the `ioctl` call, the `write` call and the
//! doorbell's system call, and adopting an fd number the kernel returned.
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::sync::atomic::AtomicU32;

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::ioctl::{Ioctl, IoctlOutput, Opcode};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes};

use crate::abi::ioctl::{IoctlAttr, IoctlHdr, RDMA_VERBS_IOCTL};
use crate::abi::uverbs::{CmdHdr, ExCmdHdr, WriteCommand, IB_USER_VERBS_CMD_FLAG_EXTENDED as CMD_FLAG_EXTENDED};
use crate::abi::uverbs::{PostSend, PostSendResp, SendWr as AbiSendWr};

use crate::abi::RdmaDriverId;
use crate::error::{Error, ErrorKind, Result};

use super::ioctl_buf::IoctlBuf;

/// Largest write-format command (headers + core + driver data) we build.
pub const MAX_WRITE_CMD: usize = 512;

/// An open `/dev/infiniband/uverbsN` and the driver id the kernel expects
/// in every ioctl header.
#[derive(Debug)]
pub struct Channel {
    fd: OwnedFd,
    driver_id: RdmaDriverId,
}

/// The `RDMA_VERBS_IOCTL` request for one frame of `N` attributes.
struct VerbsIoctl(*mut c_void);

// SAFETY: the opcode is RDMA_VERBS_IOCTL (_IOWR(0x1b, 1, struct
// ib_uverbs_ioctl_hdr)); the pointer given is the start of an `IoctlBuf`
// frame whose header `length` covers exactly the header and the attributes
// that follow it in the same allocation (see `IoctlBuf::finish`). The kernel
// writes back into that frame (attribute flags/data), so it is mutating.
// The output is the plain return value, which carries no data.
unsafe impl Ioctl for VerbsIoctl {
    type Output = ();
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        RDMA_VERBS_IOCTL as Opcode
    }

    fn as_ptr(&mut self) -> *mut c_void {
        self.0
    }

    unsafe fn output_from_ptr(_out: IoctlOutput, _ptr: *mut c_void) -> rustix::io::Result<()> {
        Ok(())
    }
}

impl Channel {
    /// Wraps an already opened uverbs device file.
    pub fn new(fd: OwnedFd, driver_id: RdmaDriverId) -> Self {
        Self { fd, driver_id }
    }

    /// The kernel driver id used in ioctl headers.
    pub fn driver_id(&self) -> RdmaDriverId {
        self.driver_id
    }

    /// Sends one `RDMA_VERBS_IOCTL` frame. On success the frame holds what
    /// the kernel wrote back (new object handles, fds, output flags).
    pub fn ioctl<const N: usize>(&self, verb: &'static str, buf: &mut IoctlBuf<'_, N>) -> Result<()> {
        if buf.overflowed() {
            return Err(Error::new(verb, ErrorKind::InvalidArgument));
        }
        let ptr = buf.finish(self.driver_id);
        // SAFETY: `ptr` points at the frame inside `buf`, which is borrowed
        // mutably for this call and whose header length matches its filled
        // attributes (`IoctlBuf::finish`). Every address inside the frame
        // comes from a borrow with the buffer's lifetime `'_` (module
        // invariant), so all of it is live until this call returns.
        unsafe { rustix::ioctl::ioctl(self.fd.as_fd(), VerbsIoctl(ptr)) }
            .map_err(|e| Error::from_errno(verb, e))
    }

    /// Sends a legacy write-format command (`struct ib_uverbs_cmd_hdr` +
    /// core command + driver data) and collects the core response and the
    /// driver response into `out`.
    ///
    /// `core_in` must start with the command's `__u64 response` field (it
    /// is overwritten with the address of `out`); all lengths must be
    /// multiples of 4 bytes as the kernel counts in 32-bit words.
    pub fn write_legacy(
        &self,
        verb: &'static str,
        command: u32,
        core_in: &[u8],
        drv_in: &[u8],
        out: &mut [u8],
    ) -> Result<()> {
        let hdr_len = size_of::<CmdHdr>();
        let total = hdr_len + core_in.len() + drv_in.len();
        let has_resp = !out.is_empty();
        if total > MAX_WRITE_CMD
            || !total.is_multiple_of(4)
            || !out.len().is_multiple_of(4)
            || (has_resp && core_in.len() < 8)
            || out.len() / 4 > u16::MAX as usize
        {
            return Err(Error::new(verb, ErrorKind::InvalidArgument));
        }
        let mut frame = [0u64; MAX_WRITE_CMD / 8];
        let bytes = frame.as_mut_bytes();
        let hdr = CmdHdr { command, in_words: (total / 4) as u16, out_words: (out.len() / 4) as u16 };
        bytes[..hdr_len].copy_from_slice(hdr.as_bytes());
        bytes[hdr_len..hdr_len + core_in.len()].copy_from_slice(core_in);
        bytes[hdr_len + core_in.len()..total].copy_from_slice(drv_in);
        if has_resp {
            // The response address: `out` stays mutably borrowed until we return.
            let addr = out.as_mut_ptr() as u64;
            bytes[hdr_len..hdr_len + 8].copy_from_slice(&addr.to_ne_bytes());
        }
        let sent = self.write_frame(verb, &bytes[..total]);
        kernel_wrote(out);
        sent
    }

    /// Sends an extended write-format command (`ib_uverbs_cmd_hdr` with
    /// `IB_USER_VERBS_CMD_FLAG_EXTENDED` + `ib_uverbs_ex_cmd_hdr`). The core
    /// response is the first `core_out_len` bytes of `out`, the driver
    /// response the rest. All lengths must be multiples of 8 bytes.
    pub fn write_extended(
        &self,
        verb: &'static str,
        command: u32,
        core_in: &[u8],
        drv_in: &[u8],
        core_out_len: usize,
        out: &mut [u8],
    ) -> Result<()> {
        let h1 = size_of::<CmdHdr>();
        let h2 = size_of::<ExCmdHdr>();
        let total = h1 + h2 + core_in.len() + drv_in.len();
        if total > MAX_WRITE_CMD
            || !core_in.len().is_multiple_of(8)
            || !drv_in.len().is_multiple_of(8)
            || !core_out_len.is_multiple_of(8)
            || !out.len().is_multiple_of(8)
            || core_out_len > out.len()
        {
            return Err(Error::new(verb, ErrorKind::InvalidArgument));
        }
        let mut frame = [0u64; MAX_WRITE_CMD / 8];
        let bytes = frame.as_mut_bytes();
        let hdr = CmdHdr {
            command: command | CMD_FLAG_EXTENDED,
            in_words: (core_in.len() / 8) as u16,
            out_words: (core_out_len / 8) as u16,
        };
        let ex = ExCmdHdr {
            response: if out.is_empty() { 0 } else { out.as_mut_ptr() as u64 },
            provider_in_words: (drv_in.len() / 8) as u16,
            provider_out_words: ((out.len() - core_out_len) / 8) as u16,
            cmd_hdr_reserved: 0,
        };
        bytes[..h1].copy_from_slice(hdr.as_bytes());
        bytes[h1..h1 + h2].copy_from_slice(ex.as_bytes());
        let mut at = h1 + h2;
        bytes[at..at + core_in.len()].copy_from_slice(core_in);
        at += core_in.len();
        bytes[at..at + drv_in.len()].copy_from_slice(drv_in);
        let sent = self.write_frame(verb, &bytes[..total]);
        kernel_wrote(out);
        sent
    }

    /// Typed legacy command: `C` is the core command (starting with its
    /// `response` field), `R` the core response; `drv_out` receives the
    /// driver's response that follows it.
    pub fn command<C, R>(
        &self,
        verb: &'static str,
        command: u32,
        cmd: &C,
        drv_in: &[u8],
        drv_out: &mut [u8],
    ) -> Result<R>
    where
        C: IntoBytes + Immutable,
        R: FromBytes + IntoBytes,
    {
        self.command_filled(verb, command, cmd, drv_in, drv_out, 0)
    }

    /// [`Self::command`] with the core response buffer filled with `fill`
    /// bytes before the call: a field still holding them afterwards was not
    /// written by whatever answered the command (see [`UNWRITTEN_FD`]).
    fn command_filled<C, R>(
        &self,
        verb: &'static str,
        command: u32,
        cmd: &C,
        drv_in: &[u8],
        drv_out: &mut [u8],
        fill: u8,
    ) -> Result<R>
    where
        C: IntoBytes + Immutable,
        R: FromBytes + IntoBytes,
    {
        let rlen = size_of::<R>();
        let mut out = [0u64; MAX_WRITE_CMD / 8];
        let total = rlen + drv_out.len();
        if total > MAX_WRITE_CMD {
            return Err(Error::new(verb, ErrorKind::InvalidArgument));
        }
        let out = &mut out.as_mut_bytes()[..total];
        out[..rlen].fill(fill);
        self.write_legacy(verb, command, cmd.as_bytes(), drv_in, out)?;
        drv_out.copy_from_slice(&out[rlen..]);
        R::read_from_bytes(&out[..rlen]).map_err(|_| Error::new(verb, ErrorKind::Malformed))
    }

    /// Typed legacy command without a response (destroy-style commands).
    pub fn command_no_resp<C: IntoBytes + Immutable>(
        &self,
        verb: &'static str,
        command: u32,
        cmd: &C,
    ) -> Result<()> {
        self.write_legacy(verb, command, cmd.as_bytes(), &[], &mut [])
    }

    /// Typed extended command, see [`Self::write_extended`].
    pub fn command_ex<C, R>(
        &self,
        verb: &'static str,
        command: u32,
        cmd: &C,
        drv_in: &[u8],
        drv_out: &mut [u8],
    ) -> Result<R>
    where
        C: IntoBytes + Immutable,
        R: FromBytes + IntoBytes + FromZeros,
    {
        let rlen = size_of::<R>();
        let mut out = [0u64; MAX_WRITE_CMD / 8];
        let total = rlen + drv_out.len();
        if total > MAX_WRITE_CMD {
            return Err(Error::new(verb, ErrorKind::InvalidArgument));
        }
        let out = &mut out.as_mut_bytes()[..total];
        self.write_extended(verb, command, cmd.as_bytes(), drv_in, rlen, out)?;
        drv_out.copy_from_slice(&out[rlen..]);
        R::read_from_bytes(&out[..rlen]).map_err(|_| Error::new(verb, ErrorKind::Malformed))
    }

    /// Executes a write-format command described by its [`WriteCommand`]
    /// impl (number, legacy or extended, response type), with optional
    /// driver data in and out. This is how every write-only verb is sent.
    pub fn exec<C: WriteCommand>(
        &self,
        verb: &'static str,
        cmd: &C,
        drv_in: &[u8],
        drv_out: &mut [u8],
    ) -> Result<C::Resp>
    where
        C::Resp: FromZeros,
    {
        if C::EXTENDED {
            self.command_ex(verb, C::COMMAND, cmd, drv_in, drv_out)
        } else {
            self.command(verb, C::COMMAND, cmd, drv_in, drv_out)
        }
    }

    /// [`Self::exec`] for a legacy command whose response names a file
    /// descriptor the call creates (`GET_CONTEXT`'s async fd,
    /// `CREATE_COMP_CHANNEL`'s fd): the core response starts as all `0xff`
    /// bytes, so an fd field that the answer did not write reads as
    /// [`UNWRITTEN_FD`], which [`adopt_fd`] refuses. A file that accepts the
    /// `write()` without answering it (`/dev/null`, a pipe, a regular file)
    /// leaves it so; before this, its all-zero "response" named fd 0.
    pub fn exec_new_fd<C: WriteCommand>(
        &self,
        verb: &'static str,
        cmd: &C,
        drv_in: &[u8],
        drv_out: &mut [u8],
    ) -> Result<C::Resp>
    where
        C::Resp: FromZeros,
    {
        if C::EXTENDED {
            return Err(Error::new(verb, ErrorKind::InvalidArgument));
        }
        self.command_filled(verb, C::COMMAND, cmd, drv_in, drv_out, 0xff)
    }

    fn write_frame(&self, verb: &'static str, frame: &[u8]) -> Result<()> {
        written(verb, sys_write(self.fd.as_fd(), frame), frame.len())
    }
}

/// The send doorbell of the software providers (rxe, siw): a legacy
/// `POST_SEND` command of zero work requests for one QP. It never changes,
/// so a QP builds it once and rings it with [`Doorbell::ring`].
#[derive(Clone, Copy, Debug, IntoBytes, Immutable)]
#[repr(C)]
pub struct Doorbell {
    hdr: CmdHdr,
    cmd: PostSend,
}
static_assertions::const_assert_eq!(size_of::<Doorbell>(), 32);

/// Where the kernel writes every doorbell's response (`bad_wr`, which is
/// 0 for zero work requests). Nothing reads it. A `'static` atomic word:
/// the address stays valid for as long as any prebuilt frame can be rung,
/// and a word written behind the compiler's back by the kernel (from any
/// number of threads at once) is what atomics are for.
static DOORBELL_RESP: AtomicU32 = AtomicU32::new(0);
static_assertions::const_assert_eq!(size_of::<PostSendResp>(), size_of::<AtomicU32>());

impl Doorbell {
    /// Rings the doorbell: one `write()` of its 32 bytes to `dev`, the
    /// device file (a [`Channel`]'s, which the QP borrows), which makes
    /// the kernel look at the QP's mapped send queue (rdma-core's
    /// `post_send_db`).
    #[inline(always)]
    pub fn ring(&self, dev: BorrowedFd<'_>, verb: &'static str) -> Result<()> {
        match self.ring_small(dev) {
            Ok(()) => Ok(()),
            Err(failed) => Err(failed.error(verb)),
        }
    }

    /// [`Doorbell::ring`] with its failure kept to one word (returned in
    /// a register; the error is made by [`RingFailed::error`], out of
    /// line, when someone asks).
    #[inline(always)]
    pub fn ring_small(&self, dev: BorrowedFd<'_>) -> core::result::Result<(), RingFailed> {
        let frame: &[u8; size_of::<Doorbell>()] = zerocopy::transmute_ref!(self);
        match doorbell_write(dev, frame) {
            n if n == size_of::<Doorbell>() as isize => Ok(()),
            n if n >= 0 => Err(RingFailed(0)),
            n => Err(RingFailed(n.wrapping_neg() as i32)),
        }
    }

    /// The doorbell of the QP with handle `qp_handle`.
    pub fn new(qp_handle: u32) -> Self {
        Self {
            hdr: CmdHdr {
                command: crate::abi::uverbs::CMD_POST_SEND,
                in_words: (size_of::<Doorbell>() / 4) as u16,
                out_words: (size_of::<PostSendResp>() / 4) as u16,
            },
            cmd: PostSend {
                response: DOORBELL_RESP.as_ptr() as u64,
                qp_handle,
                wr_count: 0,
                sge_count: 0,
                // The kernel wants at least one `ib_uverbs_send_wr` per WR.
                wqe_size: size_of::<AbiSendWr>() as u32,
            },
        }
    }
}

/// A doorbell `write()` that failed: its errno, or 0 if it came back
/// short.
/// (`repr(transparent)`: an `extern "C"` function may take it.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct RingFailed(i32);

impl RingFailed {
    /// The error of `verb` this failure is (as [`Doorbell::ring`] makes it).
    #[cold]
    #[inline(never)]
    pub fn error(self, verb: &'static str) -> Error {
        match self.0 {
            0 => short_write(verb),
            e => write_errno(verb, rustix::io::Errno::from_raw_os_error(e)),
        }
    }
}

/// One `write(2)` of `frame` to `fd`, through the C library: the call is
/// opaque to the compiler, so it must assume the kernel read *and wrote*
/// any memory whose address escaped into `frame` (a response buffer, rxe's
/// `mminfo`), and reload it afterwards. (rustix's `write` is an inline
/// `syscall` declared `readonly`: behind it the compiler may keep a
/// response's old bytes in registers.) Returns the byte count or the
/// errno.
#[inline(always)]
pub(crate) fn sys_write(fd: BorrowedFd<'_>, frame: &[u8]) -> rustix::io::Result<usize> {
    use rustix::fd::AsRawFd;
    // SAFETY: `frame` is a live borrow of `frame.len()` bytes, which is
    // all `write` reads of it; `fd` is an open file borrowed for the call.
    // Every address inside the frame comes from a borrow that outlives
    // this call (module invariant).
    let n = unsafe { libc::write(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
    match usize::try_from(n) {
        Ok(n) => Ok(n),
        Err(_) => Err(last_errno()),
    }
}

/// The doorbell's `write(2)` of `frame` to `fd`: the byte count, or the
/// negated errno. On x86-64 and AArch64 Linux one inline system call,
/// which clobbers only the registers the kernel's entry does (`rcx`,
/// `r11` and the result; on AArch64 the result), so a post keeps its
/// registers across the doorbell and needs no call of the C library and
/// no `errno`. Declared neither `readonly` nor `nomem`: the compiler must
/// assume it reads and writes any memory whose address escaped (the
/// mapped send queue the kernel then reads, which the post filled with
/// ordinary stores and handed over with release stores before this;
/// the doorbell's `'static` response word, which the kernel writes).
/// Elsewhere, and in builds with rustix's libc backend (`--cfg
/// rustix_use_libc`: the simulator's, whose `LD_PRELOAD` shim must see
/// every system call), the C library's `write`.
#[inline(always)]
fn doorbell_write(fd: BorrowedFd<'_>, frame: &[u8; 32]) -> isize {
    use rustix::fd::AsRawFd;
    let (fd, buf, len) = (fd.as_raw_fd() as usize, frame.as_ptr(), frame.len());
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(rustix_use_libc)))]
    {
        let ret: isize;
        // SAFETY: `write(2)` (`SYS_write`) with the x86-64 system call
        // convention: number in `rax`, arguments in `rdi`, `rsi`, `rdx`;
        // the kernel returns in `rax` and clobbers `rcx` and `r11` (both
        // declared), touches no stack of ours (`nostack`) and no other
        // register. `buf` is a live borrow of `len` bytes, all the kernel
        // reads of it; the addresses inside the frame satisfy the module
        // invariant (the response is the `'static` `DOORBELL_RESP`); `fd`
        // is an open file borrowed for the call. Not `readonly`/`nomem`:
        // see the function's docs.
        unsafe {
            core::arch::asm!(
                "syscall",
                inlateout("rax") libc::SYS_write as isize => ret,
                in("rdi") fd,
                in("rsi") buf,
                in("rdx") len,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64", not(rustix_use_libc)))]
    {
        let ret: isize;
        // SAFETY: `write(2)` with the AArch64 system call convention:
        // number in `x8`, arguments in `x0`..`x2`, the result in `x0`; the
        // kernel preserves every other register and touches no stack of
        // ours (`nostack`). The rest as for x86-64 above.
        unsafe {
            core::arch::asm!(
                "svc 0",
                in("x8") libc::SYS_write as usize,
                inlateout("x0") fd => ret,
                in("x1") buf,
                in("x2") len,
                options(nostack),
            );
        }
        ret
    }
    #[cfg(any(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))), rustix_use_libc))]
    {
        // SAFETY: as `sys_write`: `buf` is a live borrow of `len` bytes;
        // the frame's addresses satisfy the module invariant.
        let n = unsafe { libc::write(fd as libc::c_int, buf.cast(), len) };
        if n < 0 {
            -(last_errno().raw_os_error() as isize)
        } else {
            n
        }
    }
}

/// The `errno` a failed C library call left (out of line: only errors
/// read it).
#[cold]
#[inline(never)]
fn last_errno() -> rustix::io::Errno {
    // SAFETY: `__errno_location` has no preconditions; it returns this
    // thread's errno slot.
    let slot = unsafe { libc::__errno_location() };
    // SAFETY: that slot is a valid, aligned `int` for the thread's life;
    // it is read right after the failed call, on the same thread.
    let e = unsafe { slot.read() };
    rustix::io::Errno::from_raw_os_error(e)
}

/// The result of a command `write()` of `len` bytes. Three arms, each
/// error its own cold call, so that the result never has to be built in
/// memory for one.
#[inline(always)]
fn written(verb: &'static str, r: rustix::io::Result<usize>, len: usize) -> Result<()> {
    match r {
        Ok(n) if n == len => Ok(()),
        Ok(_) => Err(short_write(verb)),
        Err(e) => Err(write_errno(verb, e)),
    }
}

/// A command `write()` that came back short (out of line, like
/// [`write_errno`]: the doorbell's fast path keeps its registers).
#[cold]
#[inline(never)]
fn short_write(verb: &'static str) -> Error {
    Error::new(verb, ErrorKind::Malformed)
}

/// A command `write()` that failed.
#[cold]
#[inline(never)]
fn write_errno(verb: &'static str, e: rustix::io::Errno) -> Error {
    Error::from_errno(verb, e)
}

impl AsFd for Channel {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

// The ioctl header and attributes are laid out back to back in a frame.
static_assertions::const_assert_eq!(size_of::<IoctlHdr>(), 24);
static_assertions::const_assert_eq!(size_of::<IoctlAttr>(), 16);

/// An fd field of a response sent by [`Channel::exec_new_fd`] that the
/// answer did not write: the `0xff` fill (as an `int`, -1: no fd).
pub(crate) const UNWRITTEN_FD: u32 = u32::MAX;

/// Takes ownership of a file descriptor number that the answer to a command
/// sent with [`Channel::exec_new_fd`] named (async event fd, completion
/// channel fd).
///
/// Adopted only if the answer wrote it ([`UNWRITTEN_FD`] is
/// [`ErrorKind::NotUverbsDevice`]: the file took the command without
/// answering it) and it names an open file. Writing a response through the
/// address carried inside a `write()` command is what the uverbs driver
/// does (or an in-process model of it answering the same system calls),
/// and it answers with a file it installed during the call, which nobody
/// else holds.
pub(crate) fn adopt_fd(verb: &'static str, raw: u32) -> Result<OwnedFd> {
    if raw == UNWRITTEN_FD {
        return Err(Error::new(verb, ErrorKind::NotUverbsDevice)
            .with_detail("the device file accepted the command but wrote no response: not a uverbs device"));
    }
    let raw = i32::try_from(raw).map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
    // Cheap plausibility check before claiming ownership: the number must
    // name an open file of this process.
    let probe = {
        // SAFETY: borrowing the raw fd only for the duration of the fcntl
        // call; it is not closed or stored.
        let b = unsafe { BorrowedFd::borrow_raw(raw) };
        rustix::io::fcntl_getfd(b)
    };
    probe.map_err(|_| Error::new(verb, ErrorKind::Malformed))?;
    // SAFETY: the response field held `UNWRITTEN_FD` before the call and
    // holds `raw` now, so the answer to our command wrote it: a uverbs
    // device (the only file whose `write()` writes a response through the
    // address inside the command; `Context::open` also checked the
    // device number) installed `raw` into this process's fd table while
    // executing the command and handed its number to us alone. No other
    // owner exists, so wrapping it in an `OwnedFd` (which closes it on
    // drop) creates the unique owner.
    Ok(unsafe { <OwnedFd as rustix::fd::FromRawFd>::from_raw_fd(raw) })
}

/// Tells the compiler, a second time, that the kernel may have written
/// `out` during the `write()` that just returned. [`sys_write`] already
/// guarantees this for every escaped address; this one does not depend on
/// how the C library declares `write` (with rustix's `readonly` syscall,
/// release builds once read every response back as the zeros it was
/// initialized with). An empty `asm!` block that receives the buffer's
/// address and is not declared `nomem`/`readonly` must, by the language's
/// rules for inline assembly, be assumed to read and write that memory.
/// It compiles to nothing.
#[inline(always)]
pub(crate) fn kernel_wrote(out: &mut [u8]) {
    // SAFETY: the template is a comment: no instruction executes, no
    // register but the input is named, the stack is untouched (`nostack`)
    // and flags are preserved. Its only effect is on the compiler, which
    // must now assume `out`'s bytes may have changed, as the kernel's
    // write into them during the syscall did.
    unsafe {
        core::arch::asm!("/* kernel wrote {0} */", in(reg) out.as_mut_ptr(), options(nostack, preserves_flags));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::uverbs::{CreateCompChannel, GetContext};

    /// `/dev/null` takes every `write()` and answers none: the commands
    /// that hand out fds are refused instead of naming the fill (or, as
    /// before the fill, fd 0).
    #[test]
    fn commands_creating_fds_on_dev_null_adopt_nothing() {
        let fd = rustix::fs::open("/dev/null", rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty())
            .unwrap();
        let ch = Channel::new(fd, RdmaDriverId::UNKNOWN);
        let r = ch.exec_new_fd("ibv_create_comp_channel", &CreateCompChannel::new_zeroed(), &[], &mut []).unwrap();
        assert_eq!(r.fd, UNWRITTEN_FD);
        let e = adopt_fd("ibv_create_comp_channel", r.fd).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotUverbsDevice);
        let r = ch.exec_new_fd("ibv_open_device", &GetContext::new_zeroed(), &[], &mut []).unwrap();
        assert_eq!(r.async_fd, UNWRITTEN_FD);
        // The plain `command` leaves zeros, the old fd 0.
        let r: crate::abi::uverbs::CreateCompChannelResp = ch
            .command("x", crate::abi::uverbs::CMD_CREATE_COMP_CHANNEL, &CreateCompChannel::new_zeroed(), &[], &mut [])
            .unwrap();
        assert_eq!(r.fd, 0);
    }

    /// The doorbell's own system call: its 32 bytes reach the file as they
    /// are (read back from a memory file), and a failed call comes back as
    /// its errno (a read-only descriptor: `EBADF`), not as a success.
    #[test]
    fn doorbell_writes_its_frame_and_reports_failures() {
        let db = Doorbell::new(0x1234_5678);
        let w = rustix::fs::memfd_create("doorbell", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        assert_eq!(db.ring_small(w.as_fd()), Ok(()));
        let mut got = [0u8; 64];
        let n = rustix::io::pread(&w, &mut got, 0).unwrap();
        assert_eq!(&got[..n], db.as_bytes());
        let r = rustix::fs::open("/dev/null", rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty())
            .unwrap();
        assert_eq!(db.ring(r.as_fd(), "ibv_post_send").unwrap_err().raw_os_error(), libc::EBADF);
        let failed = db.ring_small(r.as_fd()).unwrap_err();
        assert_eq!(failed, RingFailed(libc::EBADF));
        assert_eq!(failed.error("ibv_post_send").raw_os_error(), libc::EBADF);
    }
}
