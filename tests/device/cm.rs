//! The connection manager (`verbs::cm`) against the kernel's rdma_cm on
//! rxe0 (RoCE: the library drives RTR/RTS from `INIT_QP_ATTR`) and siw0
//! (iWARP: the kernel's iw_cm moves the QP).

use core::net::SocketAddr;

use verbs::cm::{CmId, ConnParam, EventChannel, EventKind, PortSpace};
use verbs::qp::{QpStateKind, RcQp};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{Cq, Mr, Pd};

use super::cm_rig::{channels, cm_devices, cm_rc_pair, ip_of, next_port, open, CM_TIMEOUT_MS};
use super::rig::{init_attr, wait, ALL_ACCESS, CAP};

/// Connects a pair on `dev`, checks both QPs are in RTS, sends 64 bytes
/// each way, disconnects, and sees DISCONNECTED on both sides.
fn connect_send_disconnect(dev: &str) {
    connect_send_disconnect_at(dev, &ip_of(dev));
}

fn connect_send_disconnect_at(dev: &str, ip: &str) {
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).expect("pd");
    let (cq_c, cq_s) = (Cq::create(&ctx, 64, None, 0).expect("cq"), Cq::create(&ctx, 64, None, 0).expect("cq"));
    let ch = channels();
    let mut p = cm_rc_pair(&ch, ip, &pd, init_attr(&cq_c, &cq_c, None, CAP), init_attr(&cq_s, &cq_s, None, CAP));
    // Both ends are bound to the address asked for (IPv4 or IPv6).
    let local = p.client_id.local_addr().expect("rdma_get_local_addr").expect("bound");
    let peer = p.client_id.peer_addr().expect("rdma_get_peer_addr").expect("resolved");
    assert_eq!((local.ip().to_string(), peer.ip().to_string()), (ip.to_string(), ip.to_string()), "{dev}");
    assert_eq!(p.client.query().expect("query").qp_state, Some(QpStateKind::Rts));
    assert_eq!(p.server.query().expect("query").qp_state, Some(QpStateKind::Rts));
    if dev == cm_devices()[0] {
        // RoCE: the library set the destination from the kernel's RTR attributes.
        assert_eq!(p.server.query().expect("query").dest_qp_num, p.client.qp_num(), "{dev}");
    }

    let mut mr = Mr::alloc(&pd, 4096, ALL_ACCESS).expect("mr");
    mr.write_at(0, &[0xa5; 64]).expect("write");
    let (src, dst) = ([Sge::from_mr(&mr, 0, 64)], [Sge::from_mr(&mr, 1024, 64)]);
    p.server.post_recv(&[RecvWr::new(7, &dst)]).expect("post_recv");
    p.client.post_send(&[SendWr::send(8, &src).signaled()]).expect("post_send");
    let wc = wait(&cq_s, 1);
    assert!(wc[0].status().is_success() && wc[0].wr_id() == 7 && wc[0].byte_len() == 64, "{dev}: {wc:?}");
    assert!(wait(&cq_c, 1)[0].status().is_success());
    let mut got = [0u8; 64];
    mr.read_at(1024, &mut got).expect("read");
    assert_eq!(got, [0xa5; 64]);

    // The client closes; the server sees it and answers with its own
    // disconnect (on IB/RoCE that is the DREP the client waits for).
    p.client_id.disconnect().expect("rdma_disconnect");
    p.server_id.wait(EventKind::Disconnected, CM_TIMEOUT_MS).expect("DISCONNECTED (server)");
    p.server_id.disconnect().ok();
    p.client_id.wait(EventKind::Disconnected, CM_TIMEOUT_MS).expect("DISCONNECTED (client)");
}

#[test]
#[ignore = "device test: rdma_cm RC connect + send + disconnect on rxe0"]
fn rxe_cm_rc_connect_send_disconnect() {
    connect_send_disconnect(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: rdma_cm RC connect + send + disconnect on siw0 (iWARP)"]
fn siw_cm_rc_connect_send_disconnect() {
    connect_send_disconnect(&cm_devices()[1]);
}

/// A listener rejects with private data; the client sees REJECTED with it.
fn reject(dev: &str) {
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).expect("pd");
    let cq = Cq::create(&ctx, 16, None, 0).expect("cq");
    let ch = channels();
    let addr: SocketAddr = format!("{}:{}", ip_of(dev), next_port()).parse().unwrap();
    let listener = CmId::create(&ch[1], PortSpace::Tcp).expect("create");
    listener.bind_addr(&addr).expect("bind");
    listener.listen(1).expect("listen");
    let id = CmId::create(&ch[0], PortSpace::Tcp).expect("create");
    id.resolve_addr(None, &addr, 5000).expect("resolve");
    id.wait(EventKind::AddrResolved, CM_TIMEOUT_MS).expect("addr");
    id.resolve_route(5000).expect("route");
    id.wait(EventKind::RouteResolved, CM_TIMEOUT_MS).expect("route");
    let qp = id.init_qp(RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).expect("qp")).expect("init");
    let hello = *b"hello from the client";
    id.connect(&qp, &ConnParam { private_data: &hello, ..ConnParam::default() }).expect("connect");
    let mut req = listener.wait(EventKind::ConnectRequest, CM_TIMEOUT_MS).expect("request");
    assert!(req.param().private_data().starts_with(&hello), "{dev}: {:?}", req.param().private_data());
    let rid = req.take_request().expect("id");
    rid.reject(b"go away").expect("rdma_reject");
    let err = id.wait(EventKind::Established, CM_TIMEOUT_MS).expect_err("must be rejected");
    let ev = err.event.expect("an event came");
    assert_eq!(ev.kind(), EventKind::Rejected, "{dev}");
    assert!(ev.param().private_data().starts_with(b"go away"), "{dev}: {:?}", ev.param().private_data());
}

#[test]
#[ignore = "device test: rdma_reject with private data on rxe0"]
fn rxe_cm_reject_with_private_data() {
    reject(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: rdma_reject with private data on siw0"]
fn siw_cm_reject_with_private_data() {
    reject(&cm_devices()[1]);
}

/// Nobody listens on the port: REJECTED (RoCE) or an error event, in time.
fn nobody_listens(dev: &str) {
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).expect("pd");
    let cq = Cq::create(&ctx, 16, None, 0).expect("cq");
    let ch = EventChannel::create().expect("channel");
    let addr: SocketAddr = format!("{}:{}", ip_of(dev), next_port()).parse().unwrap();
    let id = CmId::create(&ch, PortSpace::Tcp).expect("create");
    id.resolve_addr(None, &addr, 5000).expect("resolve");
    id.wait(EventKind::AddrResolved, CM_TIMEOUT_MS).expect("addr");
    id.resolve_route(5000).expect("route");
    id.wait(EventKind::RouteResolved, CM_TIMEOUT_MS).expect("route");
    let qp = id.init_qp(RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).expect("qp")).expect("init");
    // iWARP connects a TCP socket inside the call: refused at once.
    if let Err(e) = id.connect(&qp, &ConnParam::default()) {
        assert_eq!(e.errno(), Some(rustix::io::Errno::CONNREFUSED), "{dev}: {e}");
        assert_eq!(e.verb(), "rdma_connect");
        return;
    }
    let ev = ch.get_event_timeout(60_000).expect("get_event").expect("an answer within 60 s");
    assert!(
        matches!(ev.kind(), EventKind::Rejected | EventKind::Unreachable | EventKind::ConnectError),
        "{dev}: {:?} status {}",
        ev.kind(),
        ev.status()
    );
}

#[test]
#[ignore = "device test: rdma_connect to a port nobody listens on, rxe0"]
fn rxe_cm_connect_to_closed_port_is_rejected() {
    nobody_listens(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: rdma_connect to a port nobody listens on, siw0"]
fn siw_cm_connect_to_closed_port_is_rejected() {
    nobody_listens(&cm_devices()[1]);
}

/// An IPv6 address no route leads to (the VM's RDMA netdevs carry IPv4
/// only): refused at once, or ADDR_ERROR in time.
#[test]
#[ignore = "device test: rdma_resolve_addr of an unreachable address"]
fn cm_unreachable_address_gives_addr_error() {
    let ch = EventChannel::create().expect("channel");
    let id = CmId::create(&ch, PortSpace::Tcp).expect("create");
    let dst: SocketAddr = "[2001:db8::1]:7471".parse().unwrap();
    match id.resolve_addr(None, &dst, 1000) {
        // Refused at once (no route), or resolution fails within its timeout.
        Err(e) => assert!(e.errno().is_some(), "{e}"),
        Ok(()) => {
            let ev = ch.get_event_timeout(30_000).expect("get_event").expect("an answer within 30 s");
            assert_eq!(ev.kind(), EventKind::AddrError, "status {}", ev.status());
            assert!(ev.status() < 0, "a negative errno: {}", ev.status());
        }
    }
}

/// A non-blocking channel with nothing queued says WouldBlock; the fd
/// polls readable once an event is queued.
#[test]
#[ignore = "device test: non-blocking rdma_cm event channel"]
fn cm_channel_nonblocking_and_pollable() {
    use std::os::fd::AsFd;
    let ch = EventChannel::create().expect("channel");
    ch.set_nonblocking(true).expect("O_NONBLOCK");
    let e = ch.get_event().expect_err("nothing queued");
    assert_eq!(e.kind(), verbs::ErrorKind::WouldBlock, "{e}");
    assert_eq!(
        CmId::create_with_context(&ch, PortSpace::Tcp, 0).expect_err("context 0").kind(),
        verbs::ErrorKind::InvalidArgument
    );
    let id = CmId::create(&ch, PortSpace::Tcp).expect("create");
    let addr: SocketAddr = format!("{}:{}", ip_of(&cm_devices()[0]), next_port()).parse().unwrap();
    id.resolve_addr(None, &addr, 5000).expect("resolve");
    let fd = ch.as_fd();
    let mut fds = [rustix::event::PollFd::new(&fd, rustix::event::PollFlags::IN)];
    let ts = rustix::event::Timespec { tv_sec: 20, tv_nsec: 0 };
    assert_eq!(rustix::event::poll(&mut fds, Some(&ts)).expect("poll"), 1, "readable");
    let ev = ch.get_event().expect("event");
    assert_eq!(ev.kind(), EventKind::AddrResolved);
    assert!(ev.is_for(&id));
}


/// UD through rdma_cm on rxe0 (RDMA_PS_UDP): the client learns the
/// server's QP number, Q_Key and address from ESTABLISHED, the server the
/// client's from the request; a datagram goes each way.
#[test]
#[ignore = "device test: UD QPs connected by rdma_cm (SIDR) on rxe0"]
fn rxe_cm_ud_exchange() {
    use verbs::qp::UdQp;
    use verbs::wr::UdDest;
    use verbs::Ah;
    let dev = &cm_devices()[0];
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).expect("pd");
    let (cq_c, cq_s) = (Cq::create(&ctx, 16, None, 0).expect("cq"), Cq::create(&ctx, 16, None, 0).expect("cq"));
    let ch = channels();
    let addr: SocketAddr = format!("{}:{}", ip_of(dev), next_port()).parse().unwrap();
    let listener = CmId::create(&ch[1], PortSpace::Udp).expect("create");
    listener.bind_addr(&addr).expect("bind");
    listener.listen(1).expect("listen");
    let id = CmId::create(&ch[0], PortSpace::Udp).expect("create");
    id.resolve_addr(None, &addr, 5000).expect("resolve");
    id.wait(EventKind::AddrResolved, CM_TIMEOUT_MS).expect("addr");
    id.resolve_route(5000).expect("route");
    id.wait(EventKind::RouteResolved, CM_TIMEOUT_MS).expect("route");
    let mut cqp = id.init_ud_qp(UdQp::create(&pd, init_attr(&cq_c, &cq_c, None, CAP)).expect("qp")).map_err(|e| e.error).expect("UD up");
    id.connect_ud(&cqp, b"ud hello").expect("rdma_connect (UD)");

    let mut req = listener.wait(EventKind::ConnectRequest, CM_TIMEOUT_MS).expect("request");
    assert!(req.ud().private_data().starts_with(b"ud hello"), "{:?}", req.ud().private_data());
    let rid = req.take_request().expect("id");
    let mut sqp = rid.init_ud_qp(UdQp::create(&pd, init_attr(&cq_s, &cq_s, None, CAP)).expect("qp")).map_err(|e| e.error).expect("UD up");
    rid.accept_ud(&sqp, b"").expect("rdma_accept (UD)");
    let est = id.wait(EventKind::Established, CM_TIMEOUT_MS).expect("ESTABLISHED (UD)");
    let server = est.ud();
    assert_eq!(server.qp_num, sqp.qp_num(), "ESTABLISHED names the server's QP");
    assert_eq!(server.qkey, verbs::cm::RDMA_UDP_QKEY);

    let mut mr = Mr::alloc(&pd, 4096, super::rig::ALL_ACCESS).expect("mr");
    mr.write_at(0, b"datagram through rdma_cm").unwrap();
    // Receives leave 40 bytes for the GRH in front of the payload.
    sqp.post_recv(&[RecvWr::new(1, &[Sge::from_mr(&mr, 1024, 40 + 64)])]).expect("recv");
    cqp.post_recv(&[RecvWr::new(2, &[Sge::from_mr(&mr, 2048, 40 + 64)])]).expect("recv");
    let to_server = Ah::create(&pd, &server.ah_attr).expect("ibv_create_ah (from ESTABLISHED)");
    let dest = UdDest { ah: &to_server, remote_qpn: server.qp_num, remote_qkey: server.qkey };
    cqp.post_send(&[SendWr::send(3, &[Sge::from_mr(&mr, 0, 24)]).ud(dest).signaled()]).expect("UD send");
    let r = wait(&cq_s, 1);
    assert!(r[0].status().is_success() && r[0].byte_len() == 40 + 24, "{r:?}");
    let mut got = [0u8; 24];
    mr.read_at(1024 + 40, &mut got).unwrap();
    assert_eq!(&got, b"datagram through rdma_cm");
    wait(&cq_c, 1);
    // And back, to the sender of the datagram (ibv_create_ah_from_wc).
    let mut grh = [0u8; 40];
    mr.read_at(1024, &mut grh).unwrap();
    let to_client = Ah::create_from_wc(&pd, &r[0].addressing(), Some(&grh), 1).expect("ibv_create_ah_from_wc");
    assert_eq!(r[0].src_qp(), cqp.qp_num(), "the datagram names the client's QP");
    let dest = UdDest { ah: &to_client, remote_qpn: r[0].src_qp(), remote_qkey: verbs::cm::RDMA_UDP_QKEY };
    sqp.post_send(&[SendWr::send(4, &[Sge::from_mr(&mr, 0, 8)]).ud(dest).signaled()]).expect("UD reply");
    let r = wait(&cq_c, 1);
    assert!(r[0].status().is_success() && r[0].wr_id() == 2 && r[0].byte_len() == 48, "{r:?}");
    wait(&cq_s, 1);
}

/// A listener destroyed with a request pending: the client gets an error
/// event (or, on iWARP, an error from the call) in bounded time.
fn listener_destroyed(dev: &str) {
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).expect("pd");
    let cq = Cq::create(&ctx, 16, None, 0).expect("cq");
    let ch = channels();
    let addr: SocketAddr = format!("{}:{}", ip_of(dev), next_port()).parse().unwrap();
    let listener = CmId::create(&ch[1], PortSpace::Tcp).expect("create");
    listener.bind_addr(&addr).expect("bind");
    listener.listen(4).expect("listen");
    let id = CmId::create(&ch[0], PortSpace::Tcp).expect("create");
    id.resolve_addr(None, &addr, 5000).expect("resolve");
    id.wait(EventKind::AddrResolved, CM_TIMEOUT_MS).expect("addr");
    id.resolve_route(5000).expect("route");
    id.wait(EventKind::RouteResolved, CM_TIMEOUT_MS).expect("route");
    let qp = id.init_qp(RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).expect("qp")).expect("init");
    id.connect(&qp, &ConnParam::default()).expect("connect");
    // Wait until the request is queued on the listener's channel, then
    // destroy the listener without reading it.
    let mut fds = [rustix::event::PollFd::new(&ch[1], rustix::event::PollFlags::IN)];
    let ts = rustix::event::Timespec { tv_sec: 20, tv_nsec: 0 };
    assert_eq!(rustix::event::poll(&mut fds, Some(&ts)).expect("poll"), 1, "{dev}: request queued");
    let reported = listener.destroy().expect("rdma_destroy_id");
    assert_eq!(reported, 0, "{dev}: the pending request was never read");
    let ev = ch[0].get_event_timeout(60_000).expect("get_event").expect("an answer within 60 s");
    assert!(
        matches!(ev.kind(), EventKind::Rejected | EventKind::Unreachable | EventKind::ConnectError | EventKind::Disconnected),
        "{dev}: {:?} status {}",
        ev.kind(),
        ev.status()
    );
}

#[test]
#[ignore = "device test: listener destroyed with a request pending, rxe0"]
fn rxe_cm_listener_destroyed_with_pending_request() {
    listener_destroyed(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: listener destroyed with a request pending, siw0"]
fn siw_cm_listener_destroyed_with_pending_request() {
    listener_destroyed(&cm_devices()[1]);
}

/// rdma_set_option: TOS, ACK timeout, REUSEADDR and AFONLY before binding;
/// AFONLY after binding is refused; a bound port refuses a second bind.
#[test]
#[ignore = "device test: rdma_set_option on rxe0"]
fn rxe_cm_set_options() {
    let ch = EventChannel::create().expect("channel");
    let id = CmId::create(&ch, PortSpace::Tcp).expect("create");
    id.set_tos(32).expect("RDMA_OPTION_ID_TOS");
    id.set_ack_timeout(14).expect("RDMA_OPTION_ID_ACK_TIMEOUT");
    id.set_reuseaddr(true).expect("RDMA_OPTION_ID_REUSEADDR");
    id.set_afonly(true).expect("RDMA_OPTION_ID_AFONLY");
    let addr: SocketAddr = format!("{}:{}", ip_of(&cm_devices()[0]), next_port()).parse().unwrap();
    id.bind_addr(&addr).expect("bind");
    id.listen(1).expect("listen");
    assert_eq!(id.local_addr().expect("rdma_get_local_addr"), Some(addr));
    // After binding AFONLY is refused by the kernel (EINVAL), named.
    let e = id.set_afonly(false).expect_err("AFONLY after bind");
    assert_eq!(e.verb(), "rdma_set_option");
    // The port is taken: a second listener cannot bind it.
    let other = CmId::create(&ch, PortSpace::Tcp).expect("create");
    let e = other.bind_addr(&addr).expect_err("port in use");
    assert_eq!(e.errno(), Some(rustix::io::Errno::ADDRINUSE), "{e}");
}

/// IPv6: the same connection, transfer and disconnection over the
/// netdev's global IPv6 address (the VM gives each netdev one).
#[test]
#[ignore = "device test: rdma_cm over IPv6 on rxe0"]
fn rxe_cm_ipv6_connect_send_disconnect() {
    let dev = &cm_devices()[0];
    connect_send_disconnect_at(dev, &super::cm_rig::ip6_of(dev));
}

#[test]
#[ignore = "device test: rdma_cm over IPv6 on siw0"]
fn siw_cm_ipv6_connect_send_disconnect() {
    let dev = &cm_devices()[1];
    connect_send_disconnect_at(dev, &super::cm_rig::ip6_of(dev));
}
