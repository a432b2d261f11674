//! The `user_handle` values we give the kernel for CQs, QPs and SRQs.
//!
//! The kernel echoes an object's `user_handle` in completion events
//! (`ib_uverbs_comp_event_desc.cq_handle`) and async events
//! (`ib_uverbs_async_event_desc.element`). rdma-core uses the object's
//! address; our objects move, so each gets a process-wide unique number
//! instead, which the object remembers and events are matched against.

use core::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(1);

/// A fresh, never-reused, nonzero user handle.
pub(crate) fn next() -> u64 {
    NEXT.fetch_add(1, Ordering::Relaxed)
}
