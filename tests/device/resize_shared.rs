//! Issue 15 item 4 on rxe0: `ibv_resize_cq` and `ibv_modify_srq(max_wr)`
//! through `&self`, while QPs use the queue and another thread polls it
//! (CQ) or posts to it (SRQ), as C programs do. Nothing queued is lost or
//! handed out twice across the ring moves.

use core::sync::atomic::{AtomicUsize, Ordering};
use core::time::Duration;
use std::time::Instant;

use super::rig::{init_attr, open_rxe, rc_pair, wait, CAP};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::srq::{SrqInitAttr, SrqModify};
use verbs::{AccessFlags, Cq, ErrorKind, Mr, Pd, Srq, Wc};

/// Retries `f` while it answers `Busy` (another thread inside the queue
/// for longer than the resize waits), for up to 30 s.
fn until_not_busy(mut f: impl FnMut() -> verbs::Result<()>) -> usize {
    let start = Instant::now();
    let mut busy = 0;
    loop {
        match f() {
            Ok(()) => return busy,
            Err(e) if e.kind() == ErrorKind::Busy => {
                busy += 1;
                assert!(start.elapsed() < Duration::from_secs(30), "still busy after 30 s: {e}");
                std::thread::yield_now();
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cq_resized_while_qps_use_it_and_another_thread_polls() {
    const ROUNDS: u64 = 12;
    const PER_ROUND: u64 = 8;
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let (mut a, _b) = rc_pair(&pd, init_attr(&cq, &cq, None, CAP), init_attr(&cq, &cq, None, CAP));
    let seen = AtomicUsize::new(0);
    let mut slots = Vec::new();
    std::thread::scope(|s| {
        let poller = s.spawn(|| {
            // Alternates poll and poll_with; Busy (a resize under way) is
            // expected now and then and takes nothing.
            let (mut got, mut busy, mut wc) = (Vec::new(), 0u32, [Wc::ZERO; 4]);
            let start = Instant::now();
            while got.len() < (ROUNDS * PER_ROUND) as usize {
                assert!(start.elapsed() < Duration::from_secs(60), "only {} completions: {got:?}", got.len());
                let r = if got.len() % 2 == 0 {
                    cq.poll(&mut wc).map(|n| got.extend(wc[..n].iter().map(|w| (w.wr_id(), w.status().is_success()))))
                } else {
                    cq.poll_with(3, |w| got.push((w.wr_id(), w.status().is_success()))).map(drop)
                };
                match r {
                    Ok(()) => seen.store(got.len(), Ordering::Release),
                    Err(e) if e.kind() == ErrorKind::Busy => busy += 1,
                    Err(e) => panic!("{e}"),
                }
            }
            (got, busy)
        });
        for round in 0..ROUNDS {
            let wrs: Vec<_> =
                (0..PER_ROUND).map(|i| SendWr::rdma_write(round * PER_ROUND + i, &[], 0, 0).signaled()).collect();
            a.post_send(&wrs).expect("ibv_post_send");
            // Resize at once, with completions queued or arriving.
            let cqe = if round % 2 == 0 { 64 } else { 16 };
            until_not_busy(|| cq.resize(cqe));
            assert!(cq.cqe() >= cqe);
            slots.push(cq.ring_slots().unwrap());
            let start = Instant::now();
            while seen.load(Ordering::Acquire) < ((round + 1) * PER_ROUND) as usize {
                assert!(start.elapsed() < Duration::from_secs(30), "round {round}: completions stopped");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let (got, busy) = poller.join().unwrap();
        let want: Vec<_> = (0..ROUNDS * PER_ROUND).map(|i| (i, true)).collect();
        assert_eq!(got, want, "every completion once, in order, successful");
        eprintln!("{ROUNDS} resizes; the poller saw Busy {busy} times");
    });
    // The ring really moved between sizes.
    assert!(slots.windows(2).all(|w| w[0] != w[1]), "ring slots per resize: {slots:?}");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_srq_resized_while_qps_use_it_and_another_thread_posts() {
    const N: usize = 64;
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 128, None, 0).unwrap(), Cq::create(&ctx, 128, None, 0).unwrap());
    let srq = Srq::create(&pd, SrqInitAttr { max_wr: 16, max_sge: 1, srq_limit: 0 }).unwrap();
    let cap = verbs::qp::QpCap { max_send_wr: N as u32, ..CAP };
    let (mut a, _b) = rc_pair(&pd, init_attr(&scq, &scq, None, cap), init_attr(&scq, &rcq, Some(&srq), cap));
    let recv = Mr::reg(&pd, vec![0u8; 4 * N], AccessFlags::LOCAL_WRITE).unwrap();
    let mut send = Mr::reg(&pd, vec![0u8; 4 * N], AccessFlags::LOCAL_WRITE).unwrap();
    for i in 0..N {
        send.write_at(4 * i, &(i as u32 ^ 0xa5a5_0000).to_ne_bytes()).unwrap();
    }
    let mut sizes = Vec::new();
    std::thread::scope(|s| {
        let poster = s.spawn(|| {
            // One receive at a time, each into its own 4 bytes; a full
            // ring (before the resizes make room) is waited out.
            let start = Instant::now();
            let mut i = 0;
            while i < N {
                let sge = [Sge::from_mr(&recv, 4 * i, 4)];
                match srq.post_recv(&[RecvWr::new(i as u64, &sge)]) {
                    Ok(()) => i += 1,
                    Err(e) if e.kind() == ErrorKind::QueueFull => std::thread::sleep(Duration::from_millis(1)),
                    Err(e) => panic!("{e}"),
                }
                assert!(start.elapsed() < Duration::from_secs(60), "posted only {i}");
            }
        });
        // Grow step by step while the poster runs.
        for max_wr in (24..=(N as u32 + 16)).step_by(8) {
            until_not_busy(|| srq.modify(SrqModify { max_wr: Some(max_wr), srq_limit: None }));
            assert!(srq.max_wr() >= max_wr);
            sizes.push(srq.ring_slots().unwrap());
        }
        poster.join().unwrap();
    });
    // Every receive posted across the moves is still there, in order.
    let sges: Vec<_> = (0..N).map(|i| [Sge::from_mr(&send, 4 * i, 4)]).collect();
    let wrs: Vec<_> = sges.iter().enumerate().map(|(i, sge)| SendWr::send(i as u64, sge)).collect();
    a.post_send(&wrs).expect("ibv_post_send");
    let got: Vec<_> = wait(&rcq, N).iter().map(|w| (w.wr_id(), w.status().is_success(), w.byte_len())).collect();
    let want: Vec<_> = (0..N as u64).map(|i| (i, true, 4)).collect();
    assert_eq!(got, want);
    let mut buf = vec![0u8; 4 * N];
    recv.read_at(0, &mut buf).unwrap();
    for i in 0..N {
        assert_eq!(buf[4 * i..4 * i + 4], (i as u32 ^ 0xa5a5_0000).to_ne_bytes(), "message {i}");
    }
    assert!(sizes.windows(2).any(|w| w[0] != w[1]), "the ring moved: {sizes:?}");
}
