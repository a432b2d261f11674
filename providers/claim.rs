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

use core::sync::atomic::{AtomicU8, Ordering};

/// Gives the holder's thread a chance to run (it may have been preempted
/// while holding the claim). `std`'s `yield_now` is `sched_yield(2)`; rustix's
/// `thread` feature is not used for it because enabling that feature makes
/// rustix's auxv parsing crash under valgrind, which the instruction-count
/// benches (callgrind) run the library under. Without `std`, keep spinning.
#[inline(never)]
fn yield_now() {
    #[cfg(feature = "std")]
    std::thread::yield_now();
    #[cfg(not(feature = "std"))]
    core::hint::spin_loop();
}

/// Takes a consumer's claim on `flag` (acquire) after a CQ poll's
/// compare-exchange found it taken (out of line: the uncontended poll
/// never comes here).
///
/// A claim [`Claim::Held`] by another consumer copying completions is
/// waited for: its holder runs no caller code (`WcOut` is sealed), so it
/// lets go after a bounded number of steps; C's `ibv_poll_cq` callers
/// wait on rdma-core's CQ spinlock the same way. The wait spins, then
/// yields the CPU on each round (the holder may have been preempted). A
/// claim [`Claim::Lent`] to caller code (a `poll_with` closure, on this
/// thread or another) is `Err` at once: the closure may take any time, or
/// be the caller itself polling again, which waiting would deadlock.
#[cold]
#[inline(never)]
pub fn wait_held(flag: &AtomicU8) -> Result<(), Claim> {
    let mut spins = 0u32;
    loop {
        match flag.load(Ordering::Relaxed) {
            v if v == Claim::Lent as u8 => return Err(Claim::Lent),
            v if v == Claim::Free as u8 => {
                if flag
                    .compare_exchange_weak(Claim::Free as u8, Claim::Held as u8, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return Ok(());
                }
            }
            _ => {
                spins = spins.saturating_add(1);
                if spins < SPINS_BEFORE_YIELD {
                    core::hint::spin_loop();
                } else {
                    yield_now();
                }
            }
        }
    }
}

/// How many times a waiting consumer spins before it yields the CPU on
/// each further round.
const SPINS_BEFORE_YIELD: u32 = 128;

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn a_free_claim_is_taken_and_a_lent_one_refused() {
        let f = AtomicU8::new(Claim::Free as u8);
        assert_eq!(wait_held(&f), Ok(()));
        assert_eq!(f.load(Ordering::Relaxed), Claim::Held as u8);
        f.store(Claim::Lent as u8, Ordering::Relaxed);
        assert_eq!(wait_held(&f), Err(Claim::Lent));
    }

    #[test]
    fn a_held_claim_is_waited_for_until_freed_or_lent() {
        let f = AtomicU8::new(Claim::Held as u8);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| wait_held(&f));
            std::thread::sleep(core::time::Duration::from_millis(20));
            // Still held: the waiter cannot have taken it.
            f.store(Claim::Free as u8, Ordering::Release);
            assert_eq!(waiter.join().unwrap(), Ok(()), "the waiter took the freed claim");
        });
        assert_eq!(f.load(Ordering::Relaxed), Claim::Held as u8);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| wait_held(&f));
            std::thread::sleep(core::time::Duration::from_millis(20));
            f.store(Claim::Lent as u8, Ordering::Release);
            assert_eq!(waiter.join().unwrap(), Err(Claim::Lent), "a lent claim ends the wait");
        });
    }
}

/// A copying poll's outcome as one integer: the count in the low 32
/// bits, or above them the [`Claim`] that stopped it (1 held, 2 lent).
/// The poll's out-of-line parts return it in a register, unchanged, so
/// their calls are tail calls (a `Result` is taken apart and put
/// together again around a call, and a `Result<usize>` of the verb goes
/// through memory). A count always fits: it is at most the ring's slots
/// (a `u32`).
pub type Polled = u64;

/// The [`Polled`] of `n` completions.
#[inline(always)]
pub const fn polled(n: u32) -> Polled {
    n as Polled
}

/// The [`Polled`] of a poll stopped by `claim`.
#[inline(always)]
pub const fn stopped(claim: Claim) -> Polled {
    (claim as Polled) << 32
}

/// The count or the [`Claim`] a [`Polled`] says.
#[inline(always)]
pub fn outcome(p: Polled) -> Result<u32, Claim> {
    match p >> 32 {
        0 => Ok(p as u32),
        1 => Err(Claim::Held),
        _ => Err(Claim::Lent),
    }
}
