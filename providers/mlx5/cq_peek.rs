//! [`Mlx5Cq`]'s test for a waiting completion that takes no lock: the
//! owner byte of the entry at the consumer index its last poller published
//! (an empty `ibv_poll_cq`, and `Cq::poll`'s test before it polls, cost
//! this and no more).
//!
//! # Safety
//!
//! * **P1 — the buffer is mapped.** [`Peek`] points into the CQ buffer
//!   held by the `Entry::Cq` in the CQ's slot when it was made (from that
//!   entry's `WqBuf`, under the slot lock). That buffer is dropped or
//!   replaced only by (a) `Mlx5Cq::resize`, which holds `&mut Mlx5Cq`
//!   (so no `&Mlx5Cq`, and no [`Mlx5Cq::peek_empty`], is alive meanwhile)
//!   and makes a new `Peek` from the buffer it installed before it
//!   returns, whatever the outcome; (b) `Mlx5Cq`'s `Drop`, which removes
//!   the entry after every borrow of the `Mlx5Cq` ended; (c) the table's
//!   teardown, which waits for every `RegRef`, the `Mlx5Cq`'s included.
//!   Nothing else writes a slot holding an `Entry::Cq`: inserts take free
//!   slots, and every remove names its caller's own slot.
//! * **P2 — in bounds.** [`Peek::new`] checks that the ring fits the
//!   buffer (`WqBuf::cqe_ring`, B5 of `buf.rs`) and each load masks the
//!   entry index by `ncqe - 1`: the byte read is byte 63 of an entry
//!   inside the ring.
//! * **P3 — no data race.** The byte is read by an atomic load. The CPU
//!   stores to the owner bytes of a ring in use are atomic as well
//!   (`CqRing::clean`, under the slot lock); `CqRing::init` and the resize
//!   copy write rings no `Peek` reaches yet; the device's writes are DMA
//!   (B3 of `buf.rs`). A stale consumer index or owner byte only makes the
//!   answer stale, as any test racing another poller is: a CQ found not
//!   empty is polled under its lock, which reads everything again.
#![allow(unsafe_code)]

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU8, Ordering};

use super::Mlx5Cq;
use crate::providers::mlx5::buf::WqBuf;
use crate::providers::mlx5::cqe::{CqRing, STASHED};
use crate::providers::mlx5::wqe::CQE_INVALID;

/// Where the owner bytes of a CQ's entries are (P1, P2).
#[derive(Debug)]
pub(super) struct Peek {
    /// Byte 63 of the last 64 bytes of entry 0.
    op_own0: NonNull<u8>,
    mask: u32,
    shift: u32,
    /// `log2(ncqe)`: the consumer index bit the owner bit follows.
    log: u32,
}

// SAFETY: a `Peek` is an address and a geometry; the bytes it reaches are
// read only by atomic loads (P3), from any thread.
unsafe impl Send for Peek {}
// SAFETY: as for `Send`: `&Peek` only loads atomically.
unsafe impl Sync for Peek {}

impl Peek {
    /// The owner bytes of `ring` in `buf` (the entry's own buffer, P1);
    /// `None` if the ring does not fit it (P2).
    pub(super) fn new(ring: &CqRing, buf: &WqBuf) -> Option<Self> {
        let (ncqe, size) = ring.geometry();
        buf.cqe_ring(ncqe, size)?;
        let op_own0 = buf.atomic_u8(size as usize - 1).map(|a| NonNull::from(a).cast::<u8>())?;
        Some(Self { op_own0, mask: ncqe - 1, shift: size.trailing_zeros(), log: ncqe.trailing_zeros() })
    }
}

impl Mlx5Cq {
    /// Whether no completion waits at the published consumer index (the
    /// owner byte only, no lock) nor in the stash (the published index's
    /// [`STASHED`] bit); a CQ whose ring could not be peeked
    /// ([`Peek::new`] refused it), or lent to a `poll_with` closure, is
    /// never empty: its poll says why (a poll from the closure is refused
    /// even when the closure's chunk emptied the ring).
    #[inline(always)]
    pub(super) fn peek_empty(&self) -> bool {
        if self.lent.load(Ordering::Relaxed) != super::Claim::Free as u8 {
            return false;
        }
        self.peek_ring_empty()
    }

    /// [`Mlx5Cq::peek_empty`] without the lent test: the ring and the
    /// stash only (the C library's empty test, `ProviderCq::is_empty_c`).
    #[inline(always)]
    pub(super) fn peek_ring_empty(&self) -> bool {
        let Some(p) = &self.peek else { return false };
        let Some(ci) = self.reg.published(self.slot) else { return false };
        // Completions a panicking `poll_with` put back wait in the stash.
        if ci & STASHED != 0 {
            return false;
        }
        let at = p.op_own0.as_ptr().wrapping_add(((ci & p.mask) as usize) << p.shift);
        // SAFETY: byte 63 of an entry inside the ring (P2) of a buffer
        // still mapped (P1); read atomically (P3).
        let op_own = unsafe { AtomicU8::from_ptr(at) }.load(Ordering::Acquire);
        op_own >> 4 == CQE_INVALID || (u32::from(op_own) ^ (ci >> p.log)) & 1 != 0
    }
}
