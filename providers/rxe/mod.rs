//! placeholder: filled in by the ABI transcription
//! The rxe provider.

pub mod abi;
pub mod ah;
pub mod cq;
pub mod post;
pub mod qp;
pub mod queue;
pub mod srq;

/// Fault injection for the device suite (`internals` feature only): when
/// set, the next ring remap after a CQ or SRQ resize fails as if `mmap`
/// had refused it (issue 12 item 9's dead-object path).
#[cfg(feature = "internals")]
pub static FAIL_NEXT_REMAP: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Whether to fail this remap (consumes an injected failure).
#[inline]
pub(crate) fn remap_fails() -> bool {
    #[cfg(feature = "internals")]
    {
        FAIL_NEXT_REMAP.swap(false, core::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(not(feature = "internals"))]
    {
        false
    }
}
