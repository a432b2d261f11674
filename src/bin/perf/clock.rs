//! The clocks of the latency loops.
//!
//! * [`Stamps`]: one timestamp per iteration from the CPU's cycle counter,
//!   as perftest's `get_cycles()` (`rdtsc` on x86-64: one instruction,
//!   where `Instant::now` is a `clock_gettime` call, a vDSO routine or a
//!   system call). Ticks become nanoseconds by the rate measured over the
//!   whole loop against `Instant` (two clock reads per run; perftest reads
//!   the rate from /proc/cpuinfo instead).
//! * [`Spin`]: the timeout of a busy wait, which reads the clock only every
//!   4096 spins and starts it at the first such read, so a wait that ends
//!   sooner reads no clock at all.
//!
//! # Safety
//!
//! One `unsafe` call, `core::arch::x86_64::_rdtsc`: the RDTSC instruction
//! is part of the x86-64 baseline (every x86-64 CPU has the time-stamp
//! counter; `_rdtsc` needs no target feature), it only loads the counter
//! into two registers and touches no memory, so it has no precondition to
//! break. Where the kernel disabled it for user mode (`PR_SET_TSC`), it
//! faults (SIGSEGV), a defined outcome, never undefined behaviour.
#![allow(unsafe_code)]

use core::time::Duration;
use std::time::Instant;

/// The cycle counter (x86-64); elsewhere nanoseconds since the first call.
#[inline(always)]
pub(crate) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC reads the time-stamp counter into registers and
        // touches no memory; x86-64 always has it (module note).
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// The timestamps of one latency loop, in ticks of [`ticks`].
pub(crate) struct Stamps {
    ticks: Vec<u64>,
    start: (Instant, u64),
}

impl Stamps {
    /// Room for `n` stamps, allocated now (the loop allocates nothing).
    pub(crate) fn with_capacity(n: usize) -> Self {
        Stamps { ticks: Vec::with_capacity(n), start: (Instant::now(), ticks()) }
    }

    /// Takes one timestamp.
    #[inline(always)]
    pub(crate) fn stamp(&mut self) {
        self.ticks.push(ticks());
    }

    /// The times between successive stamps in ticks, and the nanoseconds
    /// per tick: the rate of the counter over the loop (`Instant` against
    /// ticks from [`Stamps::with_capacity`] to now).
    pub(crate) fn deltas(&self) -> (Vec<u64>, f64) {
        let (t0, c0) = self.start;
        let (ns, cycles) = (t0.elapsed().as_nanos() as f64, ticks().wrapping_sub(c0));
        let ns_per_tick = if cycles == 0 { 1.0 } else { ns / cycles as f64 };
        (self.ticks.windows(2).map(|w| w[1].saturating_sub(w[0])).collect(), ns_per_tick)
    }
}

/// The timeout of one busy wait (see the module note).
pub(crate) struct Spin {
    spins: u32,
    since: Option<Instant>,
}

impl Spin {
    pub(crate) const fn new() -> Self {
        Spin { spins: 0, since: None }
    }

    /// Counts one spin; true once the wait has lasted more than `limit`
    /// (measured from its 4096th spin).
    #[inline(always)]
    pub(crate) fn expired(&mut self, limit: Duration) -> bool {
        self.spins = self.spins.wrapping_add(1);
        self.spins.is_multiple_of(4096) && self.check(limit)
    }

    #[cold]
    #[inline(never)]
    fn check(&mut self, limit: Duration) -> bool {
        match self.since {
            None => {
                self.since = Some(Instant::now());
                false
            }
            Some(t) => t.elapsed() > limit,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_give_one_delta_per_pair_and_never_run_backwards() {
        let mut st = Stamps::with_capacity(4);
        for _ in 0..4 {
            st.stamp();
        }
        assert!(st.ticks.windows(2).all(|w| w[1] >= w[0]), "{:?}", st.ticks);
        let (d, ns_per_tick) = st.deltas();
        assert_eq!(d.len(), 3);
        assert!(ns_per_tick > 0.0);
    }

    #[test]
    fn spin_reads_the_clock_only_every_4096_spins_and_expires() {
        let mut sp = Spin::new();
        for _ in 0..4095 {
            assert!(!sp.expired(Duration::ZERO));
        }
        assert!(sp.since.is_none(), "no clock read before the 4096th spin");
        // the 4096th spin starts the clock, the 8192nd finds it expired
        for _ in 0..4096 {
            assert!(!sp.expired(Duration::ZERO));
        }
        assert!(sp.since.is_some());
        assert_eq!(sp.spins, 8191);
        assert!(sp.expired(Duration::ZERO) || sp.since.unwrap().elapsed() == Duration::ZERO);
    }
}
