//! The harness `benches/rings.rs` (rxe), `benches/siw_rings.rs` (siw) and
//! `benches/cmd_frames.rs` (the timing loop only)
//! share: the timing loop, the memfd that stands in for the device file,
//! and what the in-place poll does with each completion.

use std::time::Instant;

use rustix::fd::OwnedFd;
use verbs::Wc;

/// Runs `f` `iters / 10` times to warm up, then 15 samples of `iters`
/// calls, and prints the median ns per call with the extremes. Without
/// `--bench` (`cargo test --all-targets`, `scripts/host-instr.sh`) a smoke
/// run instead: 1 + 15 x 10 calls (host-instr.sh divides by 151).
pub(crate) fn bench(name: &str, iters: u64, mut f: impl FnMut()) {
    let iters = if std::env::args().any(|a| a == "--bench") { iters } else { 10 };
    for _ in 0..iters / 10 {
        f();
    }
    let mut samples = Vec::with_capacity(15);
    for _ in 0..15 {
        let t = Instant::now();
        for _ in 0..iters {
            f();
        }
        samples.push(t.elapsed().as_nanos() as f64 / iters as f64);
    }
    samples.sort_by(f64::total_cmp);
    println!("{name:<52} median {:>8.2} ns/op  (min {:.2}, max {:.2})", samples[7], samples[0], samples[14]);
}

/// A memfd of `len` bytes: the "device file" whose pages the bench maps
/// twice, once with the library's ring code and once as the "kernel".
pub(crate) fn memfd(len: usize) -> OwnedFd {
    let fd = rustix::fs::memfd_create("verbs-bench-ring", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&fd, len as u64).unwrap();
    fd
}

/// What the ops bench does with each completion it polls in place: sums
/// the `wr_id`s (for the bench to check) and counts the failures.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) ids: u64,
    pub(crate) failed: usize,
}

impl Tally {
    #[inline(always)]
    pub(crate) fn add(&mut self, wc: &Wc) {
        self.ids = self.ids.wrapping_add(wc.wr_id());
        self.failed += usize::from(!wc.status().is_success());
    }
}
