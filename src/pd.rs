//! Protection domains (`struct ibv_pd`).
//!
//! # Ownership pattern (shared by every verbs object)
//!
//! An object borrows its parent (`Pd<'ctx>` holds `&'ctx Context`), so the
//! borrow checker forbids destroying a parent while a child is alive — no
//! reference counts, no allocation. Dropping an object destroys it in the
//! kernel; because `Drop` cannot report errors, every object also has an
//! explicit `destroy(self)` that returns the kernel's error (e.g. `EBUSY`)
//! *together with the object*, so nothing is leaked or silently lost.

use zerocopy::FromZeros;

use crate::abi::uverbs::{AllocPd, DeallocPd};
use crate::context::Context;
use crate::error::{Error, Result};

/// A destroy that the kernel refused: the error and the object, still alive.
#[derive(Debug)]
pub struct DestroyError<T> {
    /// Why the kernel refused (`EBUSY` when something still uses it).
    pub error: Error,
    /// The object, unchanged; drop it or try again later.
    pub object: T,
}

impl<T> core::fmt::Display for DestroyError<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} (the object is still alive)", self.error)
    }
}

impl<T> From<DestroyError<T>> for Error {
    /// The error alone; the object is dropped.
    fn from(e: DestroyError<T>) -> Self {
        e.error
    }
}

crate::error::box_error_from!([T] DestroyError<T>, |e| e.error);

/// A protection domain (`struct ibv_pd`).
#[doc(alias = "ibv_pd")]
#[derive(Debug)]
pub struct Pd<'ctx> {
    ctx: &'ctx Context,
    handle: u32,
}

impl<'ctx> Pd<'ctx> {
    /// `ibv_alloc_pd`: allocates a protection domain.
    #[doc(alias = "ibv_alloc_pd")]
    pub fn alloc(ctx: &'ctx Context) -> Result<Self> {
        let cmd = AllocPd::new_zeroed();
        let mut dc = crate::providers::seam::DriverCmd::new(ctx.channel(), "ibv_alloc_pd", cmd);
        let resp = ctx.provider_state().alloc_pd(&mut dc)?;
        Ok(Self { ctx, handle: resp.pd_handle })
    }

    /// The kernel's handle for this PD.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The context this PD belongs to.
    pub fn context(&self) -> &'ctx Context {
        self.ctx
    }

    /// `ibv_dealloc_pd`: frees the PD, returning it with the error if the
    /// kernel refuses (`EBUSY` while objects created in it still exist).
    #[doc(alias = "ibv_dealloc_pd")]
    pub fn destroy(self) -> core::result::Result<(), DestroyError<Self>> {
        match self.dealloc() {
            Ok(()) => {
                core::mem::forget(self);
                Ok(())
            }
            Err(error) => Err(DestroyError { error, object: self }),
        }
    }

    fn dealloc(&self) -> Result<()> {
        let mut cmd = DeallocPd::new_zeroed();
        cmd.pd_handle = self.handle;
        self.ctx.channel().exec("ibv_dealloc_pd", &cmd, &[], &mut [])
    }
}

impl Drop for Pd<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.dealloc() {
            crate::error::report_drop_failure(e);
        }
    }
}
