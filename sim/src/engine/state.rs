//! What the engine remembers between calls beyond the object model: RC
//! requesters waiting on a retry timer (RNR NAK or no response), and the
//! clock (a fake one in unit tests, so no test depends on real time).

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

/// Why an RC requester waits before sending its head WQE again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallKind {
    /// The responder had no receive WQE (RNR NAK).
    Rnr,
    /// The responder did not answer (no such QP, or not ready).
    NoResponse,
}

/// An RC requester whose head WQE waits for a retry.
#[derive(Debug, Clone, Copy)]
pub struct Stall {
    /// The send queue consumer counter of the waiting WQE (a stall for
    /// another counter is stale: the QP was reset or moved on).
    pub ci: u32,
    /// When to try again (engine clock, ns).
    pub until_ns: u64,
    /// RNR retries left (7 = forever).
    pub rnr_left: u8,
    /// Transport retries left.
    pub retry_left: u8,
    /// What the last attempt met.
    pub kind: StallKind,
}

/// Engine state kept in [`crate::model::Device`].
#[derive(Debug, Default)]
pub struct EngineState {
    /// Waiting RC requesters by QPN.
    pub stalls: HashMap<u32, Stall>,
    /// When set, the engine's clock (ns) instead of the monotonic clock
    /// (unit tests move time by hand).
    pub fake_now_ns: Option<u64>,
    /// QPs a responder error puts into ERR, with the affiliated async event
    /// (enum ib_event_type) to raise; moved and flushed after the
    /// requester's completion is written (so CQEs stay in order).
    pub pending_errors: Vec<(u32, u32)>,
    /// The port's link is down (its netdev was taken down): no packet
    /// leaves or arrives, so every peer is unreachable -- an RC requester
    /// retries and ends in RETRY_EXC after its `retry_cnt`, UC and UD sends
    /// complete at the sender and are lost, nothing is received. Set by the
    /// daemon (`server::link`); false (up) in a new device.
    pub link_down: bool,
    /// Count of work items done (WQEs executed or flushed, CQEs written):
    /// lets [`crate::engine::Engine::progress`] say whether anything happened.
    pub work: u64,
}

impl EngineState {
    /// The engine clock in nanoseconds.
    pub fn now_ns(&self) -> u64 {
        if let Some(t) = self.fake_now_ns {
            return t;
        }
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        let epoch = *EPOCH.get_or_init(Instant::now);
        u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The RNR NAK timer (IB spec table 45, `min_rnr_timer` encoding) in ns.
pub fn rnr_timer_ns(code: u8) -> u64 {
    // Hundredths of a millisecond for codes 1..=31; code 0 is 655.36 ms.
    const CENTI_MS: [u64; 32] = [
        65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024,
        1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
    ];
    CENTI_MS[usize::from(code & 31)] * 10_000
}

/// The local ACK timeout (4.096 µs * 2^timeout) in ns; `None` for 0
/// (infinite: the requester never gives up).
pub fn ack_timeout_ns(code: u8) -> Option<u64> {
    if code == 0 {
        None
    } else {
        Some(4096u64 << code.min(31))
    }
}

/// How often a requester with an infinite ACK timeout tries again.
pub const INFINITE_RETRY_NS: u64 = 100_000_000;
