//! The rxe provider (Soft-RoCE): its ABI, rings and data path, plugged
//! into the object layer by [`Rxe`] (`provider.rs`).

pub mod abi;
pub mod ah;
pub mod cq;
pub mod post;
mod provider;
pub mod qp;
pub mod queue;
pub mod srq;

pub use provider::{Rxe, RxeContext};

/// Fault injection for the device suite (`internals` feature only): when
/// set, the next ring remap after a CQ or SRQ resize fails as if `mmap`
/// had refused it (issue 12 item 9's dead-object path).
#[cfg(feature = "internals")]
pub static FAIL_NEXT_REMAP: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// `Err` if a remap failure was injected (consumes it), else `Ok`: the
/// one place the CQ and SRQ resize paths ask.
#[inline]
pub(crate) fn injected_remap_failure(verb: &'static str) -> crate::error::Result<()> {
    #[cfg(feature = "internals")]
    if FAIL_NEXT_REMAP.swap(false, core::sync::atomic::Ordering::Relaxed) {
        return Err(crate::error::Error::new(verb, crate::error::ErrorKind::OutOfResources)
            .with_detail("injected remap failure"));
    }
    #[cfg(not(feature = "internals"))]
    let _ = verb;
    Ok(())
}
