//! Fault scenarios, retries (issue #12): a SEND that finds no receive
//! until the RNR retries run out, and a peer QP destroyed or moved to
//! ERROR in the middle of a stream of RDMA WRITEs, with small timeout and
//! retry counts. Every signaled request must get exactly one completion,
//! in posting order: a run of successes, one error naming the cause, then
//! flush errors; nothing lost, nothing doubled, no hang (every wait has a
//! deadline).

use core::time::Duration;
use std::time::Instant;

use super::rig::{assert_quiet, init_attr, open_rxe, rc_pair_with, wait, RcSettings, ALL_ACCESS, CAP};
use verbs::qp::QpStateKind;
use verbs::wr::{SendFlags, SendWr, Sge};
use verbs::{Cq, Mr, Pd, Wc, WcStatus};

const SIG: SendFlags = SendFlags::SIGNALED;

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_rnr_retry_exhausted() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    // One RNR retry; the responder asks for the shortest RNR wait (code 1: 0.01 ms).
    let sa = RcSettings { rnr_retry: 1, ..RcSettings::DEFAULT };
    let sb = RcSettings { min_rnr_timer: 1, ..RcSettings::DEFAULT };
    let (mut a, b) = rc_pair_with(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&rcq, &rcq, None, CAP), sa, sb);
    let mut abuf = vec![0x33u8; 256];
    let amr = Mr::reg(&pd, &mut abuf, ALL_ACCESS).unwrap();
    let s = [Sge::from_mr(&amr, 0, 64)];
    // No receive posted on b: the first SEND is refused with RNR NAKs.
    let wrs: Vec<_> = (1..=6).map(|id| SendWr::send(id, &s).flags(SIG)).collect();
    a.post_send(&wrs).expect("ibv_post_send");
    let c = wait(&scq, 6);
    let got: Vec<_> = c.iter().map(|w| (w.wr_id(), w.status())).collect();
    let mut want = vec![(1, WcStatus::RnrRetryExcErr)];
    want.extend((2..=6).map(|id| (id, WcStatus::WrFlushErr)));
    assert_eq!(got, want);
    assert_quiet(&scq);
    assert_quiet(&rcq);
    assert_eq!(a.query().unwrap().qp_state, Some(QpStateKind::Error), "requester");
    // RNR is no fault of the responder's.
    assert_eq!(b.query().unwrap().qp_state, Some(QpStateKind::Rts), "responder");
}

/// How the peer goes away.
#[derive(Clone, Copy, Debug)]
enum PeerLoss {
    /// `ibv_destroy_qp` of the responder.
    Destroyed,
    /// `ibv_modify_qp` of the responder to ERROR.
    MovedToError,
}

/// Requests kept in flight.
const WINDOW: u64 = 16;
/// Successful completions before the peer goes away.
const BEFORE: usize = 20;

fn peer_lost_mid_stream(loss: PeerLoss) {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    // ACK timeout 4.096 µs × 2^14 ≈ 67 ms, one retry.
    let sa = RcSettings { timeout: 14, retry_cnt: 1, rnr_retry: 1, ..RcSettings::DEFAULT };
    let (mut a, b) = rc_pair_with(
        &pd,
        init_attr(&scq, &scq, None, CAP),
        init_attr(&rcq, &rcq, None, CAP),
        sa,
        RcSettings::DEFAULT,
    );
    let mut abuf = vec![0x44u8; 4096];
    let mut bbuf = vec![0u8; 4096];
    let amr = Mr::reg(&pd, &mut abuf, ALL_ACCESS).unwrap();
    let bmr = Mr::reg(&pd, &mut bbuf, ALL_ACCESS).unwrap();
    let s = [Sge::from_mr(&amr, 0, 512)];

    let mut b = Some(b);
    let mut b_err = None;
    let mut posted = 0u64;
    let mut done: Vec<Wc> = Vec::new();
    let mut stop_posting = false;
    let mut batch = [Wc::ZERO; 16];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "{loss:?}: {} of {posted} completions after 60 s: {:?}",
            done.len(),
            done.last()
        );
        while !stop_posting && posted - (done.len() as u64) < WINDOW {
            let off = (posted % 8) * 512;
            let wr = SendWr::rdma_write(posted, &s, bmr.addr() + off, bmr.rkey()).flags(SIG);
            a.post_send(&[wr]).unwrap_or_else(|e| panic!("{loss:?}: post #{posted}: {e}"));
            posted += 1;
        }
        let k = scq.poll(&mut batch).expect("ibv_poll_cq");
        done.extend_from_slice(&batch[..k]);
        if b.is_some() && done.len() >= BEFORE {
            let qp = b.take().unwrap();
            match loss {
                PeerLoss::Destroyed => {
                    qp.destroy().map_err(|e| e.error).expect("ibv_destroy_qp of the responder");
                }
                PeerLoss::MovedToError => {
                    b_err = Some(qp.into_error().map_err(|e| e.error).expect("responder to ERROR"));
                }
            }
        }
        if done.iter().any(|w| w.status() != WcStatus::Success) {
            stop_posting = true;
        }
        if stop_posting && done.len() as u64 == posted {
            break;
        }
        if k == 0 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    assert_quiet(&scq);
    assert_quiet(&rcq);

    let ids: Vec<u64> = done.iter().map(Wc::wr_id).collect();
    assert_eq!(ids, (0..posted).collect::<Vec<_>>(), "{loss:?}: one completion per request, in order");
    let ok = done.iter().take_while(|w| w.status() == WcStatus::Success).count();
    assert!(ok >= BEFORE, "{loss:?}: only {ok} successes before the peer went away");
    assert_eq!(done[ok].status(), WcStatus::RetryExcErr, "{loss:?}: first failure: {:?}", done[ok]);
    for w in &done[ok + 1..] {
        assert_eq!(w.status(), WcStatus::WrFlushErr, "{loss:?}: after the failure: {w:?}");
    }
    assert_eq!(a.query().unwrap().qp_state, Some(QpStateKind::Error), "{loss:?}: requester");
    eprintln!("{loss:?}: {posted} requests, {ok} succeeded, then 1 retry error and {} flushed", posted as usize - ok - 1);
    drop(b_err);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_peer_destroyed_mid_stream() {
    peer_lost_mid_stream(PeerLoss::Destroyed);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_peer_moved_to_error_mid_stream() {
    peer_lost_mid_stream(PeerLoss::MovedToError);
}
