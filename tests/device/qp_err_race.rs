//! Issue 29 item 2, the native API under the race of `capi_err.c`: one
//! thread posts RDMA WRITEs while another moves the QP to ERROR. Posting
//! in ERROR is legal on rxe (the requests complete with `WR_FLUSH_ERR`),
//! so every post is accepted (a full send queue is waited out, as C
//! callers do on `ENOMEM`), every request completes, those posted after
//! the move with a flush, and nothing hangs. The QP is shared the way the
//! typestate API allows: an [`AnyQp`] behind a mutex, the poster matching
//! on its state, the other thread retyping it with `into_error`.

use std::collections::HashMap;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use super::rig::{init_attr, open_rxe, rc_pair, wait, ALL_ACCESS, CAP};
use verbs::qp::{QpCap, Rc};
use verbs::wr::{SendFlags, SendWr, Sge};
use verbs::{AnyQp, Cq, ErrorKind, Mr, Pd, Wc, WcStatus};

/// Posts made before the other thread may move the QP to ERROR.
const BEFORE: usize = 50;
/// Posts at least, in all.
const ROUNDS: usize = 200;
/// Posts at least made on the QP in ERROR.
const IN_ERROR: usize = 20;

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_posts_racing_the_move_to_error_are_accepted_and_complete() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 256, None, 0).unwrap();
    // A small send queue, so that the poster also meets a full queue
    // while the kernel flushes it.
    let cap = QpCap { max_send_wr: 16, ..CAP };
    let (a, b) = rc_pair(&pd, init_attr(&cq, &cq, None, cap), init_attr(&cq, &cq, None, cap));
    let mr = Mr::reg(&pd, vec![0u8; 8192], ALL_ACCESS).unwrap();
    let (addr, rkey) = (mr.addr() + 4096, mr.rkey());
    let qp: Mutex<Option<AnyQp<'_, Rc>>> = Mutex::new(Some(a.into()));
    let posted = AtomicUsize::new(0);
    // Per post: whether the poster found the QP in ERROR.
    let mut in_error = Vec::new();
    let mut completions: HashMap<u64, WcStatus> = HashMap::new();
    let modify = std::thread::scope(|s| {
        let mover = s.spawn(|| {
            while posted.load(Ordering::Acquire) < BEFORE {
                std::thread::yield_now();
            }
            let mut g = qp.lock().unwrap();
            let any = g.take().expect("the QP");
            let (any, r) = match any.into_error() {
                Ok(q) => (q, Ok(())),
                Err(e) => (e.qp, Err(e.error)),
            };
            *g = Some(any);
            r
        });
        let sge = [Sge::from_mr(&mr, 0, 8)];
        let mut batch = [Wc::ZERO; 16];
        let mut poll = |completions: &mut HashMap<u64, WcStatus>| {
            let n = cq.poll(&mut batch).expect("ibv_poll_cq");
            for wc in &batch[..n] {
                assert!(completions.insert(wc.wr_id(), wc.status()).is_none(), "two completions for {}", wc.wr_id());
            }
            n
        };
        let mut i = 0u64;
        while (i as usize) < ROUNDS || in_error.iter().filter(|&&e| e).count() < IN_ERROR {
            let wr = [SendWr::rdma_write(i, &sge, addr, rkey).flags(SendFlags::SIGNALED)];
            let since = Instant::now();
            let error_state = loop {
                let mut g = qp.lock().unwrap();
                let (r, error_state) = match g.as_mut().expect("the QP") {
                    AnyQp::Rts(q) => (q.post_send(&wr), false),
                    AnyQp::Error(q) => (q.post_send(&wr), true),
                    other => panic!("post {i}: the QP in {:?}", other.state()),
                };
                drop(g);
                match r {
                    Ok(()) => break error_state,
                    // The send queue is full: make room, as C callers do
                    // on ENOMEM. A queue that never drains is a hang.
                    Err(e) if e.kind() == ErrorKind::QueueFull => {
                        if poll(&mut completions) == 0 {
                            assert!(since.elapsed().as_secs() < 30, "post {i}: the send queue stayed full for 30 s");
                            std::thread::yield_now();
                        }
                    }
                    Err(e) => panic!("post {i} (QP in ERROR: {error_state}) refused: {e}"),
                }
            };
            in_error.push(error_state);
            i += 1;
            posted.store(i as usize, Ordering::Release);
            poll(&mut completions);
        }
        mover.join().unwrap()
    });
    modify.expect("ibv_modify_qp to ERROR under the race");
    let total = in_error.len();
    let rest = total - completions.len();
    for wc in wait(&cq, rest) {
        assert!(completions.insert(wc.wr_id(), wc.status()).is_none(), "two completions for {}", wc.wr_id());
    }
    for (id, &err) in in_error.iter().enumerate() {
        let status = completions[&(id as u64)];
        if err {
            assert_eq!(status, WcStatus::WrFlushErr, "post {id}, made on the QP in ERROR");
        } else {
            assert!(matches!(status, WcStatus::Success | WcStatus::WrFlushErr), "post {id}: {status:?}");
        }
    }
    assert!(in_error[..BEFORE].iter().all(|&e| !e), "the QP moved before {BEFORE} posts");
    drop((qp, b));
}
