//! Host-only benchmark (no device, no kernel RDMA): the pure-CPU part of
//! the rxe data path on plain memory. A memfd stands in for the device
//! file: it is given an `rxe_queue_buf` header and mapped with the same
//! code that maps the kernel's rings, and the bench plays the kernel's
//! role (moving the consumer index of a send ring, filling a CQ ring).
//!
//! Measures WQE construction + ring publication (`post_send` without the
//! doorbell, `post_recv`), CQE parsing (`poll` of a batch) and an empty
//! poll. Prints ns/op; a measurement, not a test. Run with
//! `cargo bench --features internals --bench rings`. `callgrind` on this binary gives
//! instruction counts per operation (see BENCHMARKS.md).

mod common;
use common::{bench, memfd, Tally};

use core::hint::black_box;
use core::sync::atomic::Ordering;

use rustix::fd::OwnedFd;
use verbs::abi::uverbs::Wc as AbiWc;
use verbs::mmap::Mapping;
use verbs::providers::rxe::post::{poll, poll_with, post_recv, post_send, SendLimits};
use verbs::providers::rxe::queue::{CompletionQueue, Mminfo, Queue, RecvQueue, SendQueue};
use verbs::qp::QpType;
use verbs::wr::{PostError, RecvWr, SendFlags, SendWr, Sge};
use verbs::Wc;
use zerocopy::FromZeros;

// The measured calls, each behind a wrapper the compiler may not inline, so
// that `scripts/host-instr.sh` (callgrind `--toggle-collect=<wrapper>`) can
// count the instructions of exactly one call. Wrappers with the same body
// take their parameters in different orders: otherwise LLVM merges them
// into one symbol and the counts mix. The transport is a constant (RC), as
// it is in a typed `QueuePair::post_send`.

#[inline(never)]
fn host_post_send(sq: &mut SendQueue, lim: &SendLimits, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
    post_send(sq, QpType::Rc, lim, wrs)
}

/// One request by reference (not a slice): different code from
/// `host_post_send`, so that the two are not merged.
#[inline(never)]
fn host_post_send_inline(wr: &SendWr<'_>, sq: &mut SendQueue, lim: &SendLimits) -> Result<(), PostError> {
    post_send(sq, QpType::Rc, lim, core::slice::from_ref(wr))
}

#[inline(never)]
fn host_post_send_list(lim: &SendLimits, wrs: &[SendWr<'_>], sq: &mut SendQueue) -> Result<(), PostError> {
    post_send(sq, QpType::Rc, lim, wrs)
}

#[inline(never)]
fn host_post_recv(rq: &mut RecvQueue, wrs: &[RecvWr<'_>]) -> Result<(), PostError> {
    post_recv("ibv_post_recv", rq.producer_mut(), 4, wrs)
}

#[inline(never)]
fn host_poll_cq(cq: &CompletionQueue, out: &mut [Wc]) -> usize {
    poll(cq, out).unwrap_or(0)
}

/// The in-place poll, doing what the ops bench does with each completion:
/// reads its `wr_id` (summed, for the caller to check) and its status
/// (failures counted).
#[inline(never)]
fn host_poll_with(cq: &CompletionQueue, max: usize) -> (usize, u64, usize) {
    let mut t = Tally::default();
    let got = poll_with(cq, max, |wc| t.add(wc)).unwrap_or(0);
    (got, t.ids, t.failed)
}

/// Parameters swapped so that function merging cannot fold it into `host_poll_cq`.
#[inline(never)]
fn host_poll_cq_empty(out: &mut [Wc], cq: &CompletionQueue) -> usize {
    poll(cq, out).unwrap_or(0)
}

/// A fake rxe ring of `slots` elements of `1 << log2` bytes in a memfd.
fn ring<const MIN: usize>(slots: u32, log2: u32) -> (OwnedFd, Queue<MIN>) {
    let size = 384 + ((slots as usize) << log2);
    let fd = memfd(size);
    let mut hdr = Mapping::new("bench", &fd, 0, size).unwrap();
    assert!(hdr.write::<u32>(0, log2) && hdr.write::<u32>(4, slots - 1));
    drop(hdr);
    let q = Queue::map("bench", &fd, Mminfo { offset: 0, size: size as u32, pad: 0 }).unwrap();
    (fd, q)
}

/// Plays the kernel: consumes everything the producer published.
fn kernel_consumes<const MIN: usize>(q: &Queue<MIN>) {
    let p = q.producer_word().load(Ordering::Acquire);
    q.consumer_word().store(p, Ordering::Release);
}

fn main() {
    println!("verbs host benchmarks: rxe rings on plain memory (median of 15 runs)");
    let lim = &SendLimits { max_sge: 4, max_inline: 128 };

    let (_f1, mut sq) = ring(256, 9);
    let sge = [Sge { addr: 0x1000, length: 64, lkey: 7 }];
    bench("post_send: 1 RDMA WRITE, 1 SGE (WQE build + publish)", 2_000_000, || {
        let wr = SendWr::rdma_write(1, &sge, 0x9000, 5).flags(SendFlags::SIGNALED);
        host_post_send(&mut sq, lim, black_box(&[wr])).unwrap();
        kernel_consumes(&sq);
    });
    let payload = [0x42u8; 64];
    bench("post_send: 1 SEND, 64 B inline", 2_000_000, || {
        host_post_send_inline(black_box(&SendWr::send(1, &[]).inline(&payload)), &mut sq, lim).unwrap();
        kernel_consumes(&sq);
    });
    let list: Vec<SendWr<'_>> = (0..8).map(|i| SendWr::rdma_write(i, &sge, 0x9000 + i * 64, 5)).collect();
    bench("post_send: list of 8 RDMA WRITEs (per list)", 500_000, || {
        host_post_send_list(lim, black_box(&list), &mut sq).unwrap();
        kernel_consumes(&sq);
    });

    let (_f2, mut rq) = ring(256, 7);
    bench("post_recv: 1 WR, 1 SGE", 2_000_000, || {
        host_post_recv(&mut rq, black_box(&[RecvWr::new(3, &sge)])).unwrap();
        kernel_consumes(&rq);
    });

    let (f3, cq) = ring(1024, 6);
    let mut wc = AbiWc::new_zeroed();
    wc.wr_id = 9;
    wc.byte_len = 64;
    // Plays the kernel: publishes n completions (the elements were
    // written once, below, through a second view of the memfd).
    let fill = |q: &CompletionQueue, n: u32| {
        let p = q.producer_word().load(Ordering::Relaxed);
        q.producer_word().store(p.wrapping_add(n) & q.index_mask(), Ordering::Release);
    };
    // A second, writable view of the CQ ring for the "kernel" side.
    let mut kernel_view = Mapping::new("bench", &f3, 0, 384 + (1024 << 6)).unwrap();
    for i in 0..1024u32 {
        assert!(kernel_view.write(cq.slot_offset(i), wc));
    }
    let mut out = [Wc::ZERO; 16];
    bench("poll_cq: batch of 16 (per batch)", 1_000_000, || {
        fill(&cq, 16);
        let n = host_poll_cq(&cq, black_box(&mut out));
        assert_eq!(n, 16);
    });
    bench("poll_with: batch of 16, wr_id + status (per batch)", 1_000_000, || {
        fill(&cq, 16);
        let (n, ids, failed) = host_poll_with(&cq, black_box(16));
        assert_eq!((n, ids, failed), (16, 16 * 9, 0));
    });
    bench("poll_cq: empty", 5_000_000, || {
        black_box(host_poll_cq_empty(black_box(&mut out), &cq));
    });
}
