//! Issue 24 item 6 on rxe0 and siw0: two threads copying completions from
//! one CQ (`Cq::poll`, as C callers of `ibv_poll_cq` share a CQ) never see
//! an error. A poll that meets the other thread's copying poll waits for
//! it (that poll holds the CQ for a bounded time) instead of answering
//! `Busy`, which used to make code sharing a CQ across threads retry.
//! Every completion arrives exactly once. Bounded by a deadline.

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use core::time::Duration;
use std::time::Instant;

use super::rig::{init_attr, open_dev, rc_pair_on, ALL_ACCESS, CAP};
use verbs::qp::QpCap;
use verbs::wr::{SendFlags, SendWr};
use verbs::{Cq, Mr, Pd, Wc, WcStatus};

/// Completions the test expects.
const TOTAL: usize = 3000;
/// Requests kept in flight by the poster.
const IN_FLIGHT: usize = 32;

fn two_copying_pollers_never_fail(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 256, None, 0).unwrap();
    let other = Cq::create(&ctx, 64, None, 0).unwrap();
    let cap = QpCap { max_send_wr: 64, ..CAP };
    let (mut a, _b, _conn) = rc_pair_on(&pd, init_attr(&cq, &cq, None, cap), init_attr(&other, &other, None, CAP));
    let bmr = Mr::reg(&pd, vec![0u8; 4096], ALL_ACCESS).unwrap();
    let (raddr, rkey) = (bmr.addr(), bmr.rkey());

    let seen = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let deadline = Instant::now() + Duration::from_secs(120);
    let per_thread: Vec<(Vec<u64>, usize)> = std::thread::scope(|s| {
        let pollers: Vec<_> = (0..2)
            .map(|t| {
                let (cq, seen, stop) = (&cq, &seen, &stop);
                s.spawn(move || {
                    let (mut mine, mut polls) = (Vec::new(), 0usize);
                    let mut batch = [Wc::ZERO; 2];
                    while seen.load(Ordering::Acquire) < TOTAL && !stop.load(Ordering::Relaxed) {
                        if Instant::now() > deadline {
                            stop.store(true, Ordering::Relaxed);
                            break;
                        }
                        polls += 1;
                        match cq.poll(&mut batch[..1 + t]) {
                            Ok(k) => {
                                for w in &batch[..k] {
                                    assert_eq!(w.status(), WcStatus::Success, "wr {}", w.wr_id());
                                    mine.push(w.wr_id());
                                }
                                seen.fetch_add(k, Ordering::AcqRel);
                            }
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                panic!("poller {t}, poll {polls}, after {} completions: {e}", mine.len());
                            }
                        }
                    }
                    (mine, polls)
                })
            })
            .collect();
        let data = [0x5au8; 8];
        let mut posted = 0usize;
        while posted < TOTAL && !stop.load(Ordering::Relaxed) {
            if Instant::now() > deadline {
                stop.store(true, Ordering::Relaxed);
                break;
            }
            let room = IN_FLIGHT - (posted - seen.load(Ordering::Acquire)).min(IN_FLIGHT);
            let n = room.min(8).min(TOTAL - posted);
            if n == 0 {
                std::thread::yield_now();
                continue;
            }
            let wrs: Vec<_> = (posted..posted + n)
                .map(|id| {
                    let at = raddr + (id % 512) as u64 * 8;
                    SendWr::rdma_write(id as u64, &[], at, rkey).inline(&data).flags(SendFlags::SIGNALED)
                })
                .collect();
            if let Err(e) = a.post_send(&wrs) {
                stop.store(true, Ordering::Relaxed);
                panic!("post at {posted}: {e}");
            }
            posted += n;
        }
        // A poller's panic (an error from a poll) is re-raised here.
        pollers.into_iter().map(|p| p.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    assert!(!stop.load(Ordering::Relaxed), "not all {TOTAL} completions within 120 s: {}", seen.load(Ordering::Relaxed));
    let mut count = vec![0u32; TOTAL];
    for (t, (mine, _)) in per_thread.iter().enumerate() {
        assert!(mine.windows(2).all(|w| w[0] < w[1]), "poller {t} saw ids out of order");
        for &id in mine {
            count[usize::try_from(id).unwrap()] += 1;
        }
    }
    let wrong: Vec<_> = count.iter().enumerate().filter(|(_, &c)| c != 1).collect();
    assert!(wrong.is_empty(), "wr_ids not seen exactly once (id, times): {wrong:?}");
    let stats: Vec<_> = per_thread.iter().map(|(m, p)| (m.len(), *p)).collect();
    eprintln!("(completions, polls) per poller: {stats:?}");
    assert_eq!(cq.poll(&mut [Wc::ZERO; 4]).unwrap(), 0, "nothing beyond the {TOTAL}");
}

twins!(two_copying_pollers_never_fail: rxe_two_copying_pollers_never_fail, siw_two_copying_pollers_never_fail);
