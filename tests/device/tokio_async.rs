//! `verbs::async_io` (feature `tokio`) under a real tokio runtime, on rxe0
//! and siw0: completions awaited while futures are cancelled over and
//! over (every completion still arrives, once, in order), connect and
//! accept as futures, and device events.

use core::time::Duration;
use std::os::fd::{AsFd, AsRawFd};

use tokio::time::timeout;
use verbs::async_io::{AsyncCq, AsyncDeviceEvents, AsyncEventChannel};
use verbs::cm::{ConnParam, EventChannel, Listener};
use verbs::qp::{QpStateKind, RcQp};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{CompChannel, Cq, ErrorKind, EventType, Mr, Pd, Wc};

use super::cm_rig::{ip_of, next_port, with_port};
use super::rig::{init_attr, open_dev, rc_pair_on, ALL_ACCESS, CAP};

/// Limit for anything the VM does (TCG is slow).
const LONG: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime")
}

/// N receives completed one by one: before each, a wait on the empty CQ is
/// cancelled, and after it each wait races a 1 ms timer (the losers are
/// dropped mid-wait); the completions must all arrive, in order, once.
fn completions(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).expect("pd");
    let ch = CompChannel::create(&ctx).expect("channel");
    let rcq = Cq::create(&ctx, 64, Some(&ch), 0).expect("cq with channel");
    let scq = Cq::create(&ctx, 64, None, 0).expect("cq");
    let (mut a, mut b, conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let mr = Mr::alloc(&pd, 4096, ALL_ACCESS).expect("mr");
    const N: u64 = 16;
    for i in 0..=N {
        b.post_recv(&[RecvWr::new(i, &[Sge::from_mr(&mr, 0, 64)])]).expect("post_recv");
    }

    // Outside a runtime: an error, not a panic. Without a channel: an error.
    assert_eq!(AsyncCq::new(&rcq).unwrap_err().kind(), ErrorKind::Unsupported, "{dev}");
    let rt = runtime();
    rt.block_on(async {
        assert_eq!(AsyncCq::new(&scq).unwrap_err().kind(), ErrorKind::InvalidArgument, "{dev}");
        let mut acq = AsyncCq::new(&rcq).expect("AsyncCq");
        // Cancelled while asleep on an empty CQ (armed).
        assert!(timeout(Duration::from_millis(50), acq.next_completion()).await.is_err(), "{dev}: empty CQ");

        let (mut got, mut cancelled) = (Vec::new(), 0u32);
        for i in 0..N {
            // A wait on the empty CQ, dropped after it armed the CQ and
            // slept: every round, whatever the device's speed.
            assert!(timeout(Duration::from_millis(1), acq.next_completion()).await.is_err(), "{dev}: CQ not empty");
            cancelled += 1;
            a.post_send(&[SendWr::send(i, &[]).inline(b"msg").signaled()]).expect("post_send");
            // Then waits raced against a 1 ms timer until one wins.
            loop {
                match timeout(Duration::from_millis(1), acq.next_completion()).await {
                    Ok(wc) => break got.push(wc.expect("next_completion")),
                    Err(_) => {
                        cancelled += 1;
                        assert!(cancelled < 100_000, "{dev}: only {} of {N} completions: {got:?}", got.len());
                    }
                }
            }
        }
        let ids: Vec<u64> = got.iter().map(Wc::wr_id).collect();
        assert_eq!(ids, (0..N).collect::<Vec<_>>(), "{dev}: every completion once, in order");
        assert!(got.iter().all(|w| w.status().is_success()), "{dev}: {got:?}");
        eprintln!("{dev}: {N} completions, {cancelled} futures cancelled on the way");

        // Nothing left; a cancelled wait, then one more completion seen by
        // a new future (and by a new AsyncCq on the same channel).
        assert!(timeout(Duration::from_millis(50), acq.next_completion()).await.is_err(), "{dev}: nothing left");
        drop(acq);
        let mut acq = AsyncCq::new(&rcq).expect("AsyncCq again");
        a.post_send(&[SendWr::send(N, &[]).inline(b"last").signaled()]).expect("post_send");
        let wc = timeout(LONG, acq.next_completion()).await.expect("in time").expect("next_completion");
        assert_eq!((wc.wr_id(), wc.byte_len()), (N, 4), "{dev}");
        assert_eq!(rcq.unacked_events(), 0, "{dev}: AsyncCq acknowledges what it reads");
    });
    let mut wc = [Wc::ZERO; 32];
    let mut sends = 0;
    while sends < N + 1 {
        sends += scq.wait(&mut wc, Some(LONG)).expect("send completions") as u64;
    }
    drop((a, b, conn));
}

twins!(completions: rxe_tokio_completions_survive_cancellation, siw_tokio_completions_survive_cancellation);

/// A server and a client task on one runtime: a cancelled `next_request`,
/// then accept and connect as futures, a SEND received through an
/// `AsyncCq`, and a disconnect.
fn connect_accept(dev: &str) {
    let addr = with_port(&ip_of(dev), next_port());
    let rt = runtime();
    rt.block_on(async {
        let lch = EventChannel::create().expect("channel");
        let alch = AsyncEventChannel::new(&lch).expect("AsyncEventChannel");
        let listener = Listener::bind(&lch, &addr, 2).expect("bind + listen");
        assert!(timeout(Duration::from_millis(50), alch.next_request(&listener)).await.is_err(), "{dev}: nobody asked");
        let checked = tokio::sync::Notify::new();

        let server = async {
            let req = alch.next_request(&listener).await.expect("request");
            assert!(req.peer().private_data().starts_with(b"async client"), "{dev}");
            let ctx = req.open_device().expect("open_device");
            let pd = Pd::alloc(&ctx).expect("pd");
            let cch = CompChannel::create(&ctx).expect("comp channel");
            let cq = Cq::create(&ctx, 16, Some(&cch), 0).expect("cq");
            let mut qp = req.init_qp(RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).expect("qp")).expect("init_qp");
            let mr = Mr::alloc(&pd, 4096, ALL_ACCESS).expect("mr");
            qp.post_recv(&[RecvWr::new(9, &[Sge::from_mr(&mr, 0, 64)])]).expect("post_recv");
            let sch = EventChannel::create().expect("channel");
            let asch = AsyncEventChannel::new(&sch).expect("AsyncEventChannel");
            let conn = asch.accept(req, qp, &ConnParam::default()).await.expect("accept");
            assert_eq!(conn.qp.query().expect("query").qp_state, Some(QpStateKind::Rts), "{dev}");
            let mut acq = AsyncCq::new(&cq).expect("AsyncCq");
            let wc = acq.next_completion().await.expect("receive");
            assert!(wc.status().is_success() && wc.wr_id() == 9 && wc.byte_len() == 5, "{dev}: {wc:?}");
            let mut text = [0u8; 5];
            mr.read_at(0, &mut text).expect("read");
            assert_eq!(&text, b"hello");
            checked.notify_one();
            asch.wait_disconnected(&conn).await.expect("DISCONNECTED (server)");
        };
        let client = async {
            let ch = EventChannel::create().expect("channel");
            let ach = AsyncEventChannel::new(&ch).expect("AsyncEventChannel");
            let connector = ach.resolve(&addr).await.expect("resolve");
            let ctx = connector.open_device().expect("open_device");
            let pd = Pd::alloc(&ctx).expect("pd");
            let cch = CompChannel::create(&ctx).expect("comp channel");
            let cq = Cq::create(&ctx, 16, Some(&cch), 0).expect("cq");
            let qp = connector.init_qp(RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).expect("qp")).expect("init_qp");
            let param = ConnParam { private_data: b"async client", ..ConnParam::default() };
            let mut conn = ach.connect(connector, qp, &param).await.expect("connect");
            conn.qp.post_send(&[SendWr::send(1, &[]).inline(b"hello").signaled()]).expect("post_send");
            let mut acq = AsyncCq::new(&cq).expect("AsyncCq");
            assert!(acq.next_completion().await.expect("send").status().is_success(), "{dev}");
            // On iWARP a disconnect moves the server's QP to ERROR: only
            // after the server saw its receive.
            checked.notified().await;
            ach.disconnect(&conn).await.expect("DISCONNECTED (client)");
        };
        timeout(LONG, async { tokio::join!(server, client) }).await.expect("connect, send, disconnect in time");
    });
}

twins!(connect_accept: rxe_tokio_connect_accept, siw_tokio_connect_accept);

/// The port going down and up, awaited as device events (siw0: its
/// netdev is not the one the RoCE GIDs of the other tests live on).
#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_tokio_device_events() {
    let dev = super::common::siw_name();
    let ctx = open_dev(&dev);
    let netdev = super::async_event::netdev_of(&dev);
    runtime().block_on(async {
        // The AsFd view is the async event file itself.
        assert_eq!(ctx.async_event_fd().as_fd().as_raw_fd(), ctx.async_fd().as_raw_fd());
        let events = AsyncDeviceEvents::new(&ctx).expect("AsyncDeviceEvents");
        let events = &events;
        assert!(timeout(Duration::from_millis(50), events.next_event()).await.is_err(), "no event yet");
        super::async_event::ip_link(&netdev, "down");
        let want = |t| async move {
            loop {
                let ev = timeout(LONG, events.next_event()).await.expect("event in time").expect("next_event");
                if ev.event_type == t {
                    return ev;
                }
            }
        };
        want(EventType::PortErr).await;
        super::async_event::ip_link(&netdev, "up");
        want(EventType::PortActive).await;
    });
    let start = std::time::Instant::now();
    while ctx.query_port(1).expect("query_port").state != 4 {
        assert!(start.elapsed() < LONG, "{dev} port 1 did not come back ACTIVE");
        std::thread::sleep(Duration::from_millis(50));
    }
}
