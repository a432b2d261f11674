//! The high-level connect/accept (`verbs::cm::{Connector, Listener}`) on
//! rxe0 (RoCE) and siw0 (iWARP): one code path connects on both, and
//! refusal (nobody listens, or rejected) and timeout come back as the same
//! error kind on both, with the reason in words.

use std::sync::mpsc;

use verbs::cm::{ConnParam, Connector, EventChannel, Listener};
use verbs::qp::{QpStateKind, RcQp};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{Cq, ErrorKind, Mr, Pd};

use super::cm_rig::{cm_devices, ip_of, next_port, with_port, CM_TIMEOUT_MS};
use super::rig::{init_attr, wait, ALL_ACCESS, CAP};

/// A server thread accepts with private data and receives one message;
/// the client connects with private data and sends it; both disconnect.
fn connect_accept(dev: &str) {
    let addr = with_port(&ip_of(dev), next_port());
    let (tx, rx) = mpsc::channel();
    // The client disconnects only after the server checked its QP: on
    // iWARP a disconnect moves the server's QP to ERROR.
    let (checked_tx, checked_rx) = mpsc::channel();
    let dev_s = dev.to_owned();
    let server = std::thread::spawn(move || {
        let ch = EventChannel::create().expect("channel");
        let listener = Listener::bind(&ch, &addr, 2).expect("bind + listen");
        tx.send(()).expect("test waits");
        let req = listener.next_request(CM_TIMEOUT_MS).expect("request");
        assert!(req.peer().private_data().starts_with(b"from client"), "{dev_s}: {:?}", req.peer().private_data());
        let ctx = req.open_device().expect("open_device");
        let pd = Pd::alloc(&ctx).expect("pd");
        let cq = Cq::create(&ctx, 16, None, 0).expect("cq");
        let mut qp = req.init_qp(RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).expect("qp")).expect("init_qp");
        let mr = Mr::alloc(&pd, 4096, ALL_ACCESS).expect("mr");
        let dst = [Sge::from_mr(&mr, 0, 64)];
        qp.post_recv(&[RecvWr::new(5, &dst)]).expect("post_recv");
        let conn_ch = EventChannel::create().expect("channel");
        let param = ConnParam { private_data: b"from server", ..ConnParam::default() };
        let conn = req.accept(&conn_ch, qp, &param, CM_TIMEOUT_MS).expect("accept");
        assert_eq!(conn.qp.query().expect("query").qp_state, Some(QpStateKind::Rts), "{dev_s}");
        let wc = wait(&cq, 1);
        assert!(wc[0].status().is_success() && wc[0].wr_id() == 5 && wc[0].byte_len() == 11, "{dev_s}: {wc:?}");
        let mut got = [0u8; 11];
        mr.read_at(0, &mut got).expect("read");
        assert_eq!(&got, b"hello there");
        checked_tx.send(()).expect("client waits");
        conn.wait_disconnected(CM_TIMEOUT_MS).expect("DISCONNECTED (server)");
    });
    rx.recv().expect("server listening");

    let ch = EventChannel::create().expect("channel");
    let connector = Connector::resolve(&ch, &addr, CM_TIMEOUT_MS).expect("resolve");
    let ctx = connector.open_device().expect("open_device");
    let pd = Pd::alloc(&ctx).expect("pd");
    let cq = Cq::create(&ctx, 16, None, 0).expect("cq");
    let qp = connector.init_qp(RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).expect("qp")).expect("init_qp");
    let param = ConnParam { private_data: b"from client", ..ConnParam::default() };
    let mut conn = connector.connect(qp, &param).expect("connect");
    assert!(conn.peer.private_data().starts_with(b"from server"), "{dev}: {:?}", conn.peer.private_data());
    assert_eq!(conn.qp.query().expect("query").qp_state, Some(QpStateKind::Rts), "{dev}");
    conn.qp.post_send(&[SendWr::send(6, &[]).inline(b"hello there").signaled()]).expect("post_send");
    assert!(wait(&cq, 1)[0].status().is_success(), "{dev}");
    if checked_rx.recv().is_err() {
        panic!("{dev}: server: {:?}", server.join().expect_err("the server failed"));
    }
    conn.disconnect(CM_TIMEOUT_MS).expect("DISCONNECTED (client)");
    server.join().expect("server");
}

#[test]
#[ignore = "device test: Connector/Listener connect + accept on rxe0"]
fn rxe_connector_listener_connect() {
    connect_accept(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: Connector/Listener connect + accept on siw0"]
fn siw_connector_listener_connect() {
    connect_accept(&cm_devices()[1]);
}

/// Connects to `addr` with a fresh QP on its device; the outcome.
fn try_connect(addr: &core::net::SocketAddr, timeout_ms: i32) -> verbs::Error {
    let ch = EventChannel::create().expect("channel");
    let connector = Connector::resolve(&ch, addr, CM_TIMEOUT_MS).expect("resolve");
    let ctx = connector.open_device().expect("open_device");
    let pd = Pd::alloc(&ctx).expect("pd");
    let cq = Cq::create(&ctx, 16, None, 0).expect("cq");
    let qp = connector.init_qp(RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).expect("qp")).expect("init_qp");
    connector.with_timeout(timeout_ms).connect(qp, &ConnParam::default()).expect_err("must not connect")
}

/// Nobody listens: `Refused` on both transports (RoCE: a REJECTED event
/// with reason "invalid service ID"; iWARP: ECONNREFUSED from the call).
fn nobody_listens(dev: &str) {
    let addr = with_port(&ip_of(dev), next_port());
    let e = try_connect(&addr, CM_TIMEOUT_MS);
    assert_eq!(e.kind(), ErrorKind::Refused, "{dev}: {e}");
    assert_eq!(e.verb(), "rdma_connect", "{dev}: {e}");
    assert!(e.to_string().contains("nobody listens"), "{dev}: {e}");
}

#[test]
#[ignore = "device test: Connector to a port nobody listens on, rxe0"]
fn rxe_connector_nobody_listens_is_refused() {
    nobody_listens(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: Connector to a port nobody listens on, siw0"]
fn siw_connector_nobody_listens_is_refused() {
    nobody_listens(&cm_devices()[1]);
}

/// The listener rejects: `Refused` on both, with the reason in words.
fn rejected(dev: &str) {
    let addr = with_port(&ip_of(dev), next_port());
    let (tx, rx) = mpsc::channel();
    let server = std::thread::spawn(move || {
        let ch = EventChannel::create().expect("channel");
        let listener = Listener::bind(&ch, &addr, 2).expect("bind + listen");
        tx.send(()).expect("test waits");
        listener.next_request(CM_TIMEOUT_MS).expect("request").reject(b"no thanks").expect("rdma_reject");
        // Keep the listener until the client saw the rejection.
        rx_done(&listener);
    });
    rx.recv().expect("server listening");
    let e = try_connect(&addr, CM_TIMEOUT_MS);
    assert_eq!(e.kind(), ErrorKind::Refused, "{dev}: {e}");
    assert!(e.to_string().contains("the listener rejected the request"), "{dev}: {e}");
    server.join().expect("server");
}

/// Waits briefly on the listener's channel (nothing more arrives).
fn rx_done(listener: &Listener<'_>) {
    let e = listener.next_request(500).expect_err("no second request");
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
}

#[test]
#[ignore = "device test: Connector rejected by the Listener, rxe0"]
fn rxe_connector_rejected_is_refused() {
    rejected(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: Connector rejected by the Listener, siw0"]
fn siw_connector_rejected_is_refused() {
    rejected(&cm_devices()[1]);
}

/// The listener never answers: `TimedOut` on both, after the connect's
/// timeout (no time is asserted: only the kind).
fn silent_listener(dev: &str) {
    let addr = with_port(&ip_of(dev), next_port());
    let ch = EventChannel::create().expect("channel");
    let listener = Listener::bind(&ch, &addr, 2).expect("bind + listen");
    let e = try_connect(&addr, 1000);
    assert_eq!(e.kind(), ErrorKind::TimedOut, "{dev}: {e}");
    assert_eq!(e.verb(), "rdma_connect", "{dev}: {e}");
    drop(listener);
}

#[test]
#[ignore = "device test: Connector timeout against a listener that never answers, rxe0"]
fn rxe_connector_timeout() {
    silent_listener(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: Connector timeout against a listener that never answers, siw0"]
fn siw_connector_timeout() {
    silent_listener(&cm_devices()[1]);
}
