//! RC pairs connected through the connection manager (`verbs::cm`) on one
//! device, by IP address: a listener and a client on the device's own
//! address (`VM_RXE_IP` / `VM_SIW_IP`). This is the only way iWARP (siw0)
//! QPs reach RTS, so the siw data-path tests use [`cm_rc_pair`].

use core::net::SocketAddr;
use core::sync::atomic::{AtomicU16, Ordering};

use verbs::cm::{CmId, ConnParam, EventChannel, EventKind, PortSpace};
use verbs::qp::{QpInitAttr, RcQp, Rts};
use verbs::{discovery::devices, Context, Pd};

use super::common::{cm_listening, rxe_name, siw_name, tcp_listening};

/// Milliseconds any one connection-manager step may take under TCG.
pub(crate) const CM_TIMEOUT_MS: i32 = 20_000;

/// The IPv4 address of the netdev under `dev` (`VM_RXE_IP` / `VM_SIW_IP`,
/// or `VERBS_TEST_RXE_IP` / `VERBS_TEST_SIW_IP` natively).
pub(crate) fn ip_of(dev: &str) -> String {
    let (a, b) = if dev == siw_name() { ("VERBS_TEST_SIW_IP", "VM_SIW_IP") } else { ("VERBS_TEST_RXE_IP", "VM_RXE_IP") };
    std::env::var(a)
        .or_else(|_| std::env::var(b))
        .unwrap_or_else(|_| panic!("{a} / {b} not set: the device test needs {dev}'s IPv4 address"))
}

/// The global IPv6 address of the netdev under `dev` (`VM_RXE_IP6` /
/// `VM_SIW_IP6`, or `VERBS_TEST_RXE_IP6` / `VERBS_TEST_SIW_IP6` natively).
pub(crate) fn ip6_of(dev: &str) -> String {
    let (a, b) = if dev == siw_name() { ("VERBS_TEST_SIW_IP6", "VM_SIW_IP6") } else { ("VERBS_TEST_RXE_IP6", "VM_RXE_IP6") };
    std::env::var(a)
        .or_else(|_| std::env::var(b))
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| panic!("{a} / {b} not set: the device test needs {dev}'s IPv6 address"))
}

/// `ip` (IPv4 or IPv6) with `port`.
pub(crate) fn with_port(ip: &str, port: u16) -> SocketAddr {
    let s = if ip.contains(':') { format!("[{ip}]:{port}") } else { format!("{ip}:{port}") };
    s.parse().expect("address")
}

/// A fresh port for each listener of this process.
pub(crate) fn next_port() -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    20_000 + (std::process::id() % 1000) as u16 * 20 + NEXT.fetch_add(1, Ordering::Relaxed) % 20
}

/// True once a program's connection-manager listener on `dev` accepts connections on
/// `port`: the cm id listens and, on iWARP, so does the kernel TCP socket under it (siw
/// creates it in `rdma_listen` after the id is marked listening).
pub(crate) fn cm_ready(dev: &str, port: u16) -> bool {
    cm_listening(port) && (dev != siw_name() || tcp_listening(port))
}

/// Opens the device named `dev`.
pub(crate) fn open(dev: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(dev).expect("device")).expect("ibv_open_device")
}

/// The devices the connection-manager tests run on.
pub(crate) fn cm_devices() -> [String; 2] {
    [rxe_name(), siw_name()]
}

/// Two channels (client, server) for one pair.
pub(crate) fn channels() -> [EventChannel; 2] {
    [EventChannel::create().expect("rdma_create_event_channel"), EventChannel::create().expect("rdma_create_event_channel")]
}

/// A connected RC pair and the ids that own the connection.
pub(crate) struct CmPair<'ch, 'a> {
    pub client: RcQp<'a, Rts>,
    pub server: RcQp<'a, Rts>,
    pub client_id: CmId<'ch>,
    pub server_id: CmId<'ch>,
    /// Kept alive for the pair's life (dropping it stops listening).
    #[allow(dead_code)]
    pub listener: CmId<'ch>,
}

/// Connects an RC pair on `ctx`'s device through the connection manager:
/// a listener on `ip`:port (server channel `ch[1]`), a client resolving it
/// (client channel `ch[0]`); the client's QP uses `client`, the server's
/// `server`.
pub(crate) fn cm_rc_pair<'ch, 'a>(
    ch: &'ch [EventChannel; 2],
    ip: &str,
    pd: &'a Pd<'a>,
    client: QpInitAttr<'a>,
    server: QpInitAttr<'a>,
) -> CmPair<'ch, 'a> {
    let addr = with_port(ip, next_port());
    let listener = CmId::create_with_context(&ch[1], PortSpace::Tcp, 0x5e).expect("rdma_create_id");
    listener.bind_addr(&addr).expect("rdma_bind_addr");
    listener.listen(4).expect("rdma_listen");

    let client_id = CmId::create_with_context(&ch[0], PortSpace::Tcp, 0xc1).expect("rdma_create_id");
    client_id.resolve_addr(None, &addr, 5000).expect("rdma_resolve_addr");
    client_id.wait(EventKind::AddrResolved, CM_TIMEOUT_MS).expect("ADDR_RESOLVED");
    client_id.resolve_route(5000).expect("rdma_resolve_route");
    client_id.wait(EventKind::RouteResolved, CM_TIMEOUT_MS).expect("ROUTE_RESOLVED");
    let guid = client_id.query_addr().expect("rdma_query_addr").node_guid_be;
    assert_ne!(guid, 0, "resolved id has no device");

    let cqp = client_id.init_qp(RcQp::create(pd, client).expect("ibv_create_qp")).expect("rdma_init_qp_attr INIT");
    client_id.connect(&cqp, &ConnParam::default()).expect("rdma_connect");

    let mut req = listener.wait(EventKind::ConnectRequest, CM_TIMEOUT_MS).expect("CONNECT_REQUEST");
    let server_id = req.take_request().expect("request id");
    assert_eq!(server_id.query_addr().expect("rdma_query_addr").node_guid_be, guid, "same device");
    let sqp = server_id.init_qp(RcQp::create(pd, server).expect("ibv_create_qp")).expect("INIT");
    let sqp = server_id.accept(sqp, &ConnParam::default()).map_err(|e| e.error).expect("rdma_accept");

    let ev = ch[0].get_event_timeout(CM_TIMEOUT_MS).expect("rdma_get_cm_event").expect("connect answer in time");
    let cqp = client_id.establish(cqp, &ev).map_err(|e| e.error).expect("establish");
    server_id.wait(EventKind::Established, CM_TIMEOUT_MS).expect("ESTABLISHED (server)");
    CmPair { client: cqp, server: sqp, client_id, server_id, listener }
}
