//! eXtended Reliable Connection: XRC domains (`ibv_open_xrcd`), XRC SRQs,
//! XRC QPs and opening a shared receive-side QP (`ibv_open_qp`).
//!
//! Neither software provider implements XRC: rxe and siw have no XRCD
//! support in the kernel, so `ibv_open_xrcd` fails and everything that
//! needs an [`Xrcd`] is out of reach there; creating the send side of XRC
//! ([`XrcSend`](crate::qp::XrcSend) QPs, which need only a PD) is refused
//! at `ibv_create_qp`. Both reach the caller as an `Unsupported` error
//! naming the verb. rdma-core answers the same without asking the kernel
//! (the providers leave the ops out); we ask the kernel, whose answer for
//! these devices is `EOPNOTSUPP`, so the error also carries the errno and
//! a device that does support XRC works through the same code.

use rustix::fd::{AsRawFd, BorrowedFd};
use zerocopy::FromZeros;

use crate::abi::uverbs::{CloseXrcd, DestroyQp, OpenQp, OpenXrcd};
use crate::context::Context;
use crate::error::{Error, Result};
use crate::pd::DestroyError;
use crate::qp::kind::QpType;

bitflags::bitflags! {
    /// `ibv_xrcd_init_attr.oflags`: how to open a domain shared through a file.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct XrcdFlags: u32 {
        /// `O_CREAT`: create the domain if the file has none yet.
        const CREATE = rustix::fs::OFlags::CREATE.bits();
        /// `O_EXCL`: fail if the file already has a domain.
        const EXCL = rustix::fs::OFlags::EXCL.bits();
    }
}

/// An XRC domain (`struct ibv_xrcd`).
#[doc(alias = "ibv_xrcd")]
#[derive(Debug)]
pub struct Xrcd<'ctx> {
    ctx: &'ctx Context,
    handle: u32,
    live: bool,
}

impl<'ctx> Xrcd<'ctx> {
    /// `ibv_open_xrcd`: opens (or with [`XrcdFlags::CREATE`] creates) the
    /// XRC domain associated with `file`'s inode, or a private domain if
    /// `file` is `None` (which the kernel requires to be created:
    /// `CREATE` must then be set, else `InvalidArgument` before the
    /// kernel). On rxe and siw: `Unsupported`.
    #[doc(alias = "ibv_open_xrcd")]
    pub fn open(
        ctx: &'ctx Context,
        file: Option<BorrowedFd<'_>>,
        oflags: XrcdFlags,
    ) -> Result<Self> {
        const VERB: &str = "ibv_open_xrcd";
        if oflags.bits() & !XrcdFlags::all().bits() != 0 {
            return Err(Error::invalid(VERB, "oflags has bits other than CREATE and EXCL"));
        }
        if file.is_none() && !oflags.contains(XrcdFlags::CREATE) {
            return Err(Error::invalid(VERB, "a domain without a file must be created (oflags CREATE)"));
        }
        let mut cmd = OpenXrcd::new_zeroed();
        // The kernel reads the fd as a signed int: -1 is "no file".
        cmd.fd = file.map_or(-1i32, |f| f.as_raw_fd()) as u32;
        cmd.oflags = oflags.bits();
        let resp = ctx.channel().exec(VERB, &cmd, &[], &mut [])?;
        Ok(Self {
            ctx,
            handle: resp.xrcd_handle,
            live: true,
        })
    }

    /// The kernel's handle for this domain.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The context the domain belongs to.
    pub fn context(&self) -> &'ctx Context {
        self.ctx
    }

    /// `ibv_open_qp`: opens the receive-side XRC QP `qp_num` created (by
    /// this or another process) in this domain, to receive on it.
    #[doc(alias = "ibv_open_qp")]
    pub fn open_qp(&self, qp_num: u32) -> Result<OpenedQp<'_>> {
        let mut cmd = OpenQp::new_zeroed();
        cmd.user_handle = crate::user_handle::next();
        cmd.pd_handle = self.handle;
        cmd.qpn = qp_num;
        cmd.qp_type = QpType::XrcRecv as u8;
        let resp = self.ctx.channel().exec("ibv_open_qp", &cmd, &[], &mut [])?;
        Ok(OpenedQp {
            xrcd: self,
            handle: resp.qp_handle,
            qp_num: resp.qpn,
            live: true,
        })
    }

    /// `ibv_close_xrcd`: closes the domain; on failure (`EBUSY` while
    /// objects in it exist) it comes back with the error.
    #[doc(alias = "ibv_close_xrcd")]
    pub fn destroy(mut self) -> core::result::Result<(), DestroyError<Self>> {
        match close(self.ctx, self.handle) {
            Ok(()) => {
                self.live = false;
                Ok(())
            }
            Err(error) => Err(DestroyError {
                error,
                object: self,
            }),
        }
    }
}

fn close(ctx: &Context, handle: u32) -> Result<()> {
    let cmd = CloseXrcd {
        xrcd_handle: handle,
    };
    ctx.channel().exec("ibv_close_xrcd", &cmd, &[], &mut [])
}

impl Drop for Xrcd<'_> {
    fn drop(&mut self) {
        if self.live {
            if let Err(e) = close(self.ctx, self.handle) {
                crate::error::report_drop_failure(e);
            }
        }
    }
}

/// A receive-side XRC QP opened in a domain with [`Xrcd::open_qp`]. It has
/// no queues of its own (receives go to XRC SRQs), so it is not a
/// [`QueuePair`](crate::QueuePair); dropping it releases this process's
/// reference.
#[derive(Debug)]
pub struct OpenedQp<'x> {
    xrcd: &'x Xrcd<'x>,
    handle: u32,
    qp_num: u32,
    live: bool,
}

impl OpenedQp<'_> {
    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        self.qp_num
    }

    /// The kernel's handle for this reference.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// `ibv_destroy_qp` on the opened QP (releases this reference).
    #[doc(alias = "ibv_destroy_qp")]
    pub fn destroy(mut self) -> core::result::Result<(), DestroyError<Self>> {
        match destroy_qp(self.xrcd.ctx, self.handle) {
            Ok(()) => {
                self.live = false;
                Ok(())
            }
            Err(error) => Err(DestroyError {
                error,
                object: self,
            }),
        }
    }
}

fn destroy_qp(ctx: &Context, handle: u32) -> Result<()> {
    let mut cmd = DestroyQp::new_zeroed();
    cmd.qp_handle = handle;
    ctx.channel()
        .exec("ibv_destroy_qp", &cmd, &[], &mut [])
        .map(|_| ())
}

impl Drop for OpenedQp<'_> {
    fn drop(&mut self) {
        if self.live {
            if let Err(e) = destroy_qp(self.xrcd.ctx, self.handle) {
                crate::error::report_drop_failure(e);
            }
        }
    }
}
