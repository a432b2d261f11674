//! `Cq::wait` / `Cq::wait_spin` (src/cq_wait.rs) on rxe0 and siw0: the
//! timeout, the spin path, and the event path — a waiter proven asleep in
//! `poll(2)` (its thread state in /proc) before the completion is made,
//! woken by the completion event, each event counted by the kernel.

use std::sync::mpsc;
use core::time::Duration;
use std::time::Instant;

use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{CompChannel, Cq, ErrorKind, Mr, Pd, Wc};

use super::rig::{init_attr, open_dev, rc_pair_on, ALL_ACCESS, CAP};

/// Generous limit for anything the VM must do (TCG is slow).
const LONG: Duration = Duration::from_secs(30);

/// This thread's id (`/proc/thread-self` is `PID/task/TID`).
fn own_tid() -> i32 {
    let link = std::fs::read_link("/proc/thread-self").expect("/proc/thread-self");
    link.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse().ok()).expect("tid")
}

/// The scheduler state letter of thread `tid` of this process.
fn thread_state(tid: i32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("task stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    after.chars().next().expect("state")
}

/// Waits until thread `tid` sleeps (state `S`): for the waiter, asleep in
/// `poll(2)` on the completion channel, the only place it can block.
fn until_asleep(tid: i32) {
    let start = Instant::now();
    while thread_state(tid) != 'S' {
        assert!(start.elapsed() < LONG, "waiter thread never went to sleep");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn wait_body(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).expect("pd");
    let ch = CompChannel::create(&ctx).expect("channel");
    let rcq = Cq::create(&ctx, 16, Some(&ch), 0).expect("cq with channel");
    let scq = Cq::create(&ctx, 16, None, 0).expect("cq");
    let (mut a, mut b, conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let mr = Mr::alloc(&pd, 4096, ALL_ACCESS).expect("mr");
    let mut wc = [Wc::ZERO; 4];

    // Nothing comes: TimedOut, after at least the timeout, nothing taken.
    let t = Instant::now();
    let e = rcq.wait(&mut wc, Some(Duration::from_millis(100))).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("Cq::wait", ErrorKind::TimedOut), "{dev}: {e}");
    assert!(t.elapsed() >= Duration::from_millis(100), "{dev}: returned early");
    let e = rcq.wait(&mut [], None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{dev}");

    // The event path: the waiter spins not at all and sleeps; the
    // completion is made only once it sleeps.
    const ROUNDS: u64 = 3;
    for round in 0..ROUNDS {
        let dst = [Sge::from_mr(&mr, 0, 64)];
        b.post_recv(&[RecvWr::new(100 + round, &dst)]).expect("post_recv");
        let (tx, rx) = mpsc::channel();
        let got = std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                tx.send(own_tid()).expect("main waits");
                let mut wc = [Wc::ZERO; 4];
                let n = rcq.wait_spin(&mut wc, Duration::ZERO, Some(LONG)).expect("wait");
                wc[..n].to_vec()
            });
            until_asleep(rx.recv().expect("tid"));
            a.post_send(&[SendWr::send(round, &[]).inline(b"wake").signaled()]).expect("post_send");
            waiter.join().expect("waiter")
        });
        assert_eq!(got.len(), 1, "{dev}: {got:?}");
        assert!(got[0].status().is_success() && got[0].wr_id() == 100 + round, "{dev}: {got:?}");
        assert_eq!(rcq.unacked_events(), 0, "{dev}: wait acknowledges the events it reads");
        let n = scq.wait(&mut wc, Some(LONG)).expect("send completion (no channel: busy poll)");
        assert!(n == 1 && wc[0].wr_id() == round && wc[0].status().is_success(), "{dev}: {:?}", &wc[..n]);
    }

    // A completion already there: returned from the spin, nothing armed.
    let dst = [Sge::from_mr(&mr, 0, 64)];
    b.post_recv(&[RecvWr::new(7, &dst)]).expect("post_recv");
    a.post_send(&[SendWr::send(8, &[]).inline(b"here").signaled()]).expect("post_send");
    let n = scq.wait(&mut wc, Some(LONG)).expect("send completion");
    assert_eq!((n, wc[0].wr_id()), (1, 8), "{dev}");
    // Spins up to the whole limit: the receive may complete after the send.
    let n = rcq.wait_spin(&mut wc, LONG, Some(LONG)).expect("receive completion");
    assert_eq!((n, wc[0].wr_id()), (1, 7), "{dev}");

    // No channel, nothing comes: the busy poll ends at the timeout too.
    let e = scq.wait(&mut wc, Some(Duration::from_millis(20))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{dev}");

    drop((a, b, conn));
    let d = rcq.destroy().map_err(|e| e.error).expect("destroy");
    assert_eq!(u64::from(d.comp_events_reported), ROUNDS, "{dev}: one event per sleeping wait");
}

twins!(wait_body: rxe_cq_wait, siw_cq_wait);
