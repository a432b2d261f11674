//! Fault scenario, concurrent polling (issue #12): four threads polling
//! one CQ (two with `poll`, two with `poll_with`) while a fifth posts see
//! every completion exactly once (each wr_id counted), each poller's ids
//! in increasing order (the ring hands out contiguous runs). A poll that meets another thread's
//! copying poll waits for it; one that meets a `poll_with` closure (which may run any caller
//! code) says `Busy`: the pollers try again. Bounded by a deadline.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use core::time::Duration;
use std::time::Instant;

use super::rig::{init_attr, open_dev, rc_pair_on, ALL_ACCESS, CAP};
use verbs::qp::QpCap;
use verbs::wr::{SendFlags, SendWr};
use verbs::{Cq, ErrorKind, Mr, Pd, Wc, WcStatus};

const SIG: SendFlags = SendFlags::SIGNALED;

/// Completions the multi-poller test expects.
const TOTAL: usize = 1000;
/// Requests kept in flight by the poster.
const IN_FLIGHT: usize = 24;

fn four_pollers_one_poster_each_completion_once(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 256, None, 0).unwrap();
    let other = Cq::create(&ctx, 64, None, 0).unwrap();
    let cap = QpCap { max_send_wr: 64, ..CAP };
    let (mut a, _b, _conn) = rc_pair_on(&pd, init_attr(&cq, &cq, None, cap), init_attr(&other, &other, None, CAP));
    let bbuf = vec![0u8; 4096];
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let (raddr, rkey) = (bmr.addr(), bmr.rkey());

    let seen = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(120);
    let per_thread: Vec<Vec<(u64, WcStatus)>> = std::thread::scope(|s| {
        let pollers: Vec<_> = (0..4)
            .map(|t| {
                let (cq, seen, stop) = (&cq, &seen, &stop);
                s.spawn(move || {
                    let mut mine = Vec::new();
                    // threads take different batch sizes so their polls interleave unevenly
                    let mut batch = [Wc::ZERO; 4];
                    let want = 1 + t % 4;
                    while seen.load(Ordering::Acquire) < TOTAL && !stop.load(Ordering::Relaxed) {
                        if Instant::now() > deadline {
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                        // odd threads read in place (poll_with), even ones copy (poll)
                        let before = mine.len();
                        let r = if t % 2 == 1 {
                            cq.poll_with(want, |w| mine.push((w.wr_id(), w.status())))
                        } else {
                            cq.poll(&mut batch[..want]).inspect(|&k| {
                                mine.extend(batch[..k].iter().map(|w| (w.wr_id(), w.status())));
                            })
                        };
                        match r {
                            Ok(0) => std::thread::yield_now(),
                            Ok(k) => {
                                assert_eq!(mine.len() - before, k, "poller {t}: count vs records");
                                seen.fetch_add(k, Ordering::AcqRel);
                            }
                            // a `poll_with` closure holds the CQ: try again
                            Err(e) if e.kind() == ErrorKind::Busy => std::thread::yield_now(),
                            Err(e) => panic!("poller {t}: {e}"),
                        }
                    }
                    mine
                })
            })
            .collect();
        // The poster: this thread, keeping up to IN_FLIGHT requests outstanding.
        let data = [0xc3u8; 8];
        let mut posted = 0usize;
        while posted < TOTAL && !stop.load(Ordering::Relaxed) {
            if Instant::now() > deadline {
                stop.store(true, Ordering::Relaxed);
                break;
            }
            let room = IN_FLIGHT - (posted - seen.load(Ordering::Acquire)).min(IN_FLIGHT);
            let n = room.min(4).min(TOTAL - posted);
            if n == 0 {
                std::thread::yield_now();
                continue;
            }
            let wrs: Vec<_> = (posted..posted + n)
                .map(|id| {
                    SendWr::rdma_write(id as u64, &[], raddr + (id % 512) as u64 * 8, rkey).inline(&data).flags(SIG)
                })
                .collect();
            if let Err(e) = a.post_send(&wrs) {
                stop.store(true, Ordering::Relaxed);
                panic!("post at {posted}: {e}");
            }
            posted += n;
        }
        pollers.into_iter().map(|p| p.join().expect("poller panicked")).collect()
    });
    assert!(!stop.load(Ordering::Relaxed), "not all {TOTAL} completions within 120 s: {}", seen.load(Ordering::Relaxed));

    let mut count = vec![0u32; TOTAL];
    for (t, mine) in per_thread.iter().enumerate() {
        // each poller takes contiguous runs off the ring, so its own ids only grow
        assert!(mine.windows(2).all(|w| w[0].0 < w[1].0), "poller {t} saw ids out of order");
        for &(id, status) in mine {
            assert_eq!(status, WcStatus::Success, "wr {id}");
            count[usize::try_from(id).unwrap()] += 1;
        }
    }
    let wrong: Vec<_> = count.iter().enumerate().filter(|(_, &c)| c != 1).collect();
    assert!(wrong.is_empty(), "wr_ids not seen exactly once (id, times): {wrong:?}");
    let sizes: Vec<_> = per_thread.iter().map(Vec::len).collect();
    eprintln!("completions per poller: {sizes:?}");
    let mut wc = [Wc::ZERO; 4];
    assert_eq!(cq.poll(&mut wc).unwrap(), 0, "nothing beyond the {TOTAL}");
}

twins!(four_pollers_one_poster_each_completion_once: rxe_four_pollers_one_poster_each_completion_once, siw_four_pollers_one_poster_each_completion_once);
