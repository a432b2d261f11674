//! The claim flag every provider puts on a queue that is reached through a
//! shared reference (a CQ polled by several threads, an SRQ posted to by
//! several): its states, shared so that the CQ layer reports a busy CQ the
//! same way whatever the provider.

/// The states of a queue's claim flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Claim {
    /// Nobody holds it.
    Free = 0,
    /// Held by library code (a producer, or a consumer copying
    /// completions), which runs no caller code and cannot block.
    Held = 1,
    /// Held by a consumer while caller code runs (a `poll_with` closure),
    /// which may take any time, or poll the same queue.
    Lent = 2,
}
