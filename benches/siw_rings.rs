//! Host-only benchmark (no device): the pure-CPU part of the siw data path
//! on plain memory, the twin of `benches/rings.rs` for rxe. A memfd stands
//! in for the device file, mapped with the code that maps siw's arrays;
//! the bench plays the kernel (clearing the flags of work elements it
//! "takes", setting the flags of CQEs it "writes") through a second view.
//! Prints ns/op; `scripts/host-instr.sh` runs it under callgrind for
//! instructions per call. Run with
//! `cargo bench --features internals --bench siw_rings`.

mod common;
use common::{bench, memfd, Tally};

use core::hint::black_box;
use core::mem::size_of;

use rustix::fd::OwnedFd;
use verbs::mmap::Mapping;
use verbs::providers::siw::abi::{SiwCqe, SiwRqe, SiwSqe, SIW_OP_WRITE, SIW_WQE_VALID};
use verbs::providers::siw::poll::{poll, poll_with};
use verbs::providers::siw::post::{post_recv, post_send, SendLimits};
use verbs::providers::siw::ring::{CqRing, RecvRing, Ring, SendRing};
use verbs::wr::{PostError, RecvWr, SendFlags, SendWr, Sge};
use verbs::Wc;
use zerocopy::FromZeros;

// The measured calls, each behind a wrapper the compiler may not inline
// (parameters in different orders, so that LLVM does not merge them).

#[inline(never)]
fn siw_post_send(sq: &mut SendRing, lim: &SendLimits, wrs: &[SendWr<'_>]) -> Result<bool, PostError> {
    post_send(sq, lim, wrs)
}

#[inline(never)]
fn siw_post_recv(rq: &mut RecvRing, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
    post_recv("ibv_post_recv", rq.producer_mut(), 4, wrs)
}

#[inline(never)]
fn siw_poll_cq(cq: &CqRing, out: &mut [Wc]) -> usize {
    poll(cq, out).unwrap_or(0)
}

/// What the ops bench does with each completion: sums `wr_id`, counts
/// failures.
#[inline(never)]
fn siw_poll_with(cq: &CqRing, max: usize) -> (usize, u64, usize) {
    let mut t = Tally::default();
    let got = poll_with(cq, max, |wc| t.add(wc)).unwrap_or(0);
    (got, t.ids, t.failed)
}

#[inline(never)]
fn siw_poll_cq_empty(out: &mut [Wc], cq: &CqRing) -> usize {
    poll(cq, out).unwrap_or(0)
}

/// A siw array of `n` elements in a memfd, and the "kernel's" view of it.
fn ring<const E: usize>(n: u32) -> (OwnedFd, Ring<E>, Mapping) {
    let len = n as usize * E;
    let fd = memfd(len);
    let kernel = Mapping::new("bench", &fd, 0, len).unwrap();
    let r = Ring::<E>::map("bench", &fd, 0, n, 0).unwrap();
    (fd, r, kernel)
}

/// Plays the kernel on a work queue: takes every element (clears flags).
fn kernel_takes(k: &mut Mapping, n: usize, elem: usize) {
    for i in 0..n {
        assert!(k.write::<u16>(i * elem + 8, 0));
    }
}

fn main() {
    println!("verbs host benchmarks: siw arrays on plain memory (median of 15 runs)");
    let lim = &SendLimits { max_sge: 4, max_inline: 64, sig_all: false };
    let sge = [Sge { addr: 0x1000, length: 8, lkey: 7 }];

    let (_f1, mut sq, mut ksq) = ring::<{ size_of::<SiwSqe>() }>(256);
    bench("post_send: 1 RDMA WRITE, 1 SGE", 200_000, || {
        let wr = SendWr::rdma_write(1, &sge, 0x9000, 5).flags(SendFlags::SIGNALED);
        siw_post_send(&mut sq, lim, black_box(&[wr])).unwrap();
        let i = (sq.next() + 255) % 256;
        assert!(ksq.write::<u16>(i as usize * size_of::<SiwSqe>() + 8, 0));
    });
    kernel_takes(&mut ksq, 256, size_of::<SiwSqe>());

    let (_f2, mut rq, mut krq) = ring::<{ size_of::<SiwRqe>() }>(256);
    bench("post_recv: 1 WR, 1 SGE", 200_000, || {
        siw_post_recv(&mut rq, black_box(&[RecvWr::new(3, &sge)])).unwrap();
        let i = (rq.next() + 255) % 256;
        assert!(krq.write::<u16>(i as usize * size_of::<SiwRqe>() + 8, 0));
    });

    // A CQ of 1000 elements (not a power of two, as siw may give), filled
    // 16 at a time by the "kernel".
    const N: u32 = 1000;
    let (_f3, cq, mut kcq) = ring::<{ size_of::<SiwCqe>() }>(N);
    let mut cqe = SiwCqe::new_zeroed();
    cqe.id = 9;
    cqe.bytes = 8;
    cqe.opcode = SIW_OP_WRITE;
    cqe.flags = SIW_WQE_VALID as u8;
    let mut fill = |cq: &CqRing, n: u32| {
        for k in 0..n {
            let i = (cq.next() + k) % N;
            assert!(kcq.write(i as usize * size_of::<SiwCqe>(), cqe));
        }
    };
    let mut out = [Wc::ZERO; 16];
    bench("poll_cq: batch of 16 (per batch)", 100_000, || {
        fill(&cq, 16);
        assert_eq!(siw_poll_cq(&cq, black_box(&mut out)), 16);
    });
    bench("poll_with: batch of 16, wr_id + status (per batch)", 100_000, || {
        fill(&cq, 16);
        assert_eq!(siw_poll_with(&cq, black_box(16)), (16, 16 * 9, 0));
    });
    bench("poll_cq: empty", 1_000_000, || {
        black_box(siw_poll_cq_empty(black_box(&mut out), &cq));
    });
}
