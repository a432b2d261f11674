//! perftest's `-R` (`--rdma_cm`, perftest 4.5's `work_rdma_cm`, which
//! also turns on `use_rdma_cm`): the out-of-band exchange runs over an RC
//! QP connected by rdma_cm instead of TCP, and the test's QPs are
//! connected by rdma_cm too (iWARP QPs reach RTS no other way).
//!
//! Facts from perftest's `perftest_communication.c` (`rdma_client_connect`,
//! `rdma_server_connect`, `rdma_write_data`/`rdma_read_data`,
//! `rdma_write_keys`/`rdma_read_keys`, `create_rdma_cm_connection`) this
//! follows:
//! * the exchange QP: `RDMA_PS_TCP` on the test's port, the server bound
//!   to `0.0.0.0` and listening, the client resolving (2 s timeouts);
//!   each side posts one receive of `sizeof(struct pingpong_dest)` = 56
//!   bytes before connecting/accepting and re-posts it after each message
//!   read; a message is one signaled SEND of exactly its size; the server
//!   destroys its listener once it accepted (the port is free again);
//! * every message is the one the TCP exchange sends, in the same order
//!   (client writes first), except a QP address: `struct pingpong_dest`
//!   in binary, big-endian fields ([`crate::dest::Dest::encode_bin`]); the close is a
//!   last handshake without `done`;
//! * the test's QPs: a handshake, a second listener on the same port (the
//!   client retries while it is not there yet: 10 times, 100 ms apart),
//!   one connection per QP with `responder_resources` = `initiator_depth`
//!   = the outstanding reads for READ/atomic tests, retry and RNR counts 7,
//!   no private data; a handshake. At the end the client disconnects them.

use core::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use core::time::Duration;
use std::net::ToSocketAddrs;
use std::time::Instant;

use verbs::cm::{CmId, ConnParam, EventChannel, EventKind, PortSpace};
use verbs::qp::{Init, QpCap, QpInitAttr, RcQp, Rts};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{AccessFlags, CompChannel, Context, Cq, Mr, Pd, Wc, WcStatus};

/// perftest's receive size for the exchange (`sizeof(struct pingpong_dest)`).
pub(crate) const MSG: u32 = 56;
/// Where the exchange's receive lands in its MR (the send is at 0).
const RECV_AT: usize = 64;
/// How long one connection-manager step or one message may take under TCG.
const STEP_MS: i32 = 30_000;

fn leak<T>(v: T) -> &'static T {
    // The exchange's and the test's rdma_cm objects live for the whole
    // run of this program (one test per process): leaking them gives the
    // ids, QPs and regions that borrow them a 'static lifetime.
    Box::leak(Box::new(v))
}

fn s<E: core::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: {e}")
}

/// The IPv4 address of `host` with `port` (perftest resolves AF_INET).
pub(crate) fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("resolving {host}: {e}"))?
        .find(SocketAddr::is_ipv4)
        .ok_or_else(|| format!("{host} has no IPv4 address"))
}

/// The exchange's connected QP and what it needs.
pub(crate) struct CmLink {
    /// The device the connection manager chose; the test uses it too.
    pub(crate) ctx: &'static Context,
    qp: RcQp<'static, Rts>,
    send_cq: &'static Cq<'static>,
    recv_cq: &'static Cq<'static>,
    mr: Mr<'static>,
    /// Keeps the connection up.
    id: CmId<'static>,
    /// Where the connection's events arrive.
    ch: &'static EventChannel,
}

/// The exchange QP in INIT (its one receive posted), on the device the
/// connection manager chose, with its CQs (send, receive) and region.
type ExchangeQp = (&'static Context, RcQp<'static, Init>, [&'static Cq<'static>; 2], Mr<'static>);

/// Makes an [`ExchangeQp`] for `id`.
fn exchange_qp(id: &CmId<'static>) -> Result<ExchangeQp, String> {
    let ctx = leak(id.open_device().map_err(s("rdma_cm_id.verbs"))?);
    let pd = leak(Pd::alloc(ctx).map_err(s("ibv_alloc_pd"))?);
    // Each CQ has a completion channel of its own, on which `one` sleeps.
    let chan = || CompChannel::create(ctx).map(leak).map_err(s("ibv_create_comp_channel"));
    let send_cq = leak(Cq::create(ctx, 4, Some(chan()?), 0).map_err(s("ibv_create_cq"))?);
    let recv_cq = leak(Cq::create(ctx, 4, Some(chan()?), 0).map_err(s("ibv_create_cq"))?);
    let mr = Mr::alloc(pd, 4096, AccessFlags::LOCAL_WRITE).map_err(s("ibv_reg_mr"))?;
    let cap = QpCap { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let attr = QpInitAttr { send_cq, recv_cq, srq: None, cap, sq_sig_all: false };
    let qp = RcQp::create(pd, attr).map_err(s("ibv_create_qp"))?;
    let mut qp = id.init_qp(qp).map_err(|e| format!("rdma_init_qp_attr: {}", e.error))?;
    qp.post_recv(&[RecvWr::new(0, &[Sge::from_mr(&mr, RECV_AT, MSG)])]).map_err(|e| format!("ibv_post_recv: {}", e.error))?;
    Ok((ctx, qp, [send_cq, recv_cq], mr))
}

/// Resolves `dst` on a new id of `ch` (address, then route).
fn resolved(ch: &'static EventChannel, dst: &SocketAddr) -> Result<CmId<'static>, String> {
    let id = CmId::create(ch, PortSpace::Tcp).map_err(s("rdma_create_id"))?;
    id.resolve_addr(None, dst, 2000).map_err(s("rdma_resolve_addr"))?;
    id.wait(EventKind::AddrResolved, STEP_MS).map_err(|e| format!("rdma_resolve_addr: {}", e.error))?;
    id.resolve_route(2000).map_err(s("rdma_resolve_route"))?;
    id.wait(EventKind::RouteResolved, STEP_MS).map_err(|e| format!("rdma_resolve_route: {}", e.error))?;
    Ok(id)
}

/// Retries `attempt` while the server is not listening yet (perftest's
/// client tries 10 times, 100 ms apart; under emulation we allow 20 s).
fn retrying<T>(what: &str, mut attempt: impl FnMut() -> Result<T, String>) -> Result<T, String> {
    let t0 = Instant::now();
    loop {
        match attempt() {
            Ok(v) => return Ok(v),
            Err(e) if t0.elapsed() > Duration::from_secs(20) => return Err(format!("{what}: {e}")),
            Err(_) => std::thread::sleep(Duration::from_millis(100)),
        }
    }
}

impl CmLink {
    /// Client: connects the exchange QP to `host`:`port`.
    pub(crate) fn connect(host: &str, port: u16) -> Result<Self, String> {
        let dst = resolve(host, port)?;
        let ch = leak(EventChannel::create().map_err(s("rdma_create_event_channel"))?);
        retrying("connecting the rdma_cm exchange", || {
            let id = resolved(ch, &dst)?;
            let (ctx, qp, [send_cq, recv_cq], mr) = exchange_qp(&id)?;
            let param = ConnParam { retry_count: 7, rnr_retry_count: 7, ..ConnParam::default() };
            id.connect(&qp, &param).map_err(s("rdma_connect"))?;
            let ev = ch.get_event_timeout(STEP_MS).map_err(s("rdma_get_cm_event"))?.ok_or("no answer to rdma_connect")?;
            let qp = id.establish(qp, &ev).map_err(|e| format!("rdma_connect: {}", e.error))?;
            Ok(CmLink { ctx, qp, send_cq, recv_cq, mr, id, ch })
        })
    }

    /// Server: waits for the client's exchange connection on `port`.
    pub(crate) fn accept(port: u16) -> Result<Self, String> {
        let ch = leak(EventChannel::create().map_err(s("rdma_create_event_channel"))?);
        let listener = CmId::create(ch, PortSpace::Tcp).map_err(s("rdma_create_id"))?;
        let any = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
        listener.bind_addr(&any).map_err(s("rdma_bind_addr"))?;
        listener.listen(1).map_err(s("rdma_listen"))?;
        let mut ev = ch.get_event().map_err(s("rdma_get_cm_event"))?;
        if ev.kind() != EventKind::ConnectRequest {
            return Err(format!("bad event waiting for connect request: {:?}", ev.kind()));
        }
        let id = ev.take_request().ok_or("a connect request without its id")?;
        drop(ev);
        let (ctx, qp, [send_cq, recv_cq], mr) = exchange_qp(&id)?;
        let param = ConnParam { retry_count: 7, rnr_retry_count: 7, ..ConnParam::default() };
        let qp = id.accept(qp, &param).map_err(|e| format!("rdma_accept: {}", e.error))?;
        // perftest destroys its listener here: the test's listener takes
        // the same port.
        drop(listener);
        Ok(CmLink { ctx, qp, send_cq, recv_cq, mr, id, ch })
    }

    /// Waits for one completion on `cq`; it must be successful, or have
    /// the status `also` if given. Sleeps on the CQ's completion channel
    /// (`Cq::wait_spin` without a spin: arm, poll once, `poll(2)`) rather
    /// than polling: the exchange at start and end then costs about the
    /// same instructions in every run, however long the peer takes, and
    /// moves no per-iteration count of the loop measured between two runs
    /// (BENCHMARKS.md, the latency loop under callgrind).
    fn one(cq: &Cq<'_>, what: &str, also: Option<WcStatus>) -> Result<Wc, String> {
        let mut wc = [Wc::ZERO; 1];
        let limit = Duration::from_millis(STEP_MS as u64 * 4);
        match cq.wait_spin(&mut wc, Duration::ZERO, Some(limit)) {
            Ok(_) => match wc[0].status() {
                WcStatus::Success => Ok(wc[0]),
                st if Some(st) == also => Ok(wc[0]),
                st => Err(format!("{what}: completion with status {st:?}")),
            },
            Err(e) if e.kind() == verbs::ErrorKind::TimedOut => {
                Err(format!("{what}: the peer sent nothing for {} s", STEP_MS * 4 / 1000))
            }
            Err(e) => Err(format!("{what}: waiting for a completion: {e}")),
        }
    }

    /// Sends one message (a signaled SEND of exactly its size).
    pub(crate) fn send(&mut self, msg: &[u8], what: &str) -> Result<(), String> {
        self.send_as(msg, what, None)
    }

    /// A message of the close handshake. siw checks the connection after
    /// each segment it sent and completes the SEND with `LocQpOpErr` when
    /// the peer has closed meanwhile (`siw_qp_sq_proc_tx`: "Verbs 6.4"),
    /// which a peer that read the message, answered and exited at once has
    /// done under TCG. Whether the message arrived is said elsewhere: the
    /// client's send by the server's answer, which comes only after it; the
    /// server's (the last message) by the client, which fails without it.
    /// Here that status is no error.
    pub(crate) fn send_last(&mut self, msg: &[u8], what: &str) -> Result<(), String> {
        self.send_as(msg, what, Some(WcStatus::LocQpOpErr))
    }

    fn send_as(&mut self, msg: &[u8], what: &str, also: Option<WcStatus>) -> Result<(), String> {
        let len = u32::try_from(msg.len()).ok().filter(|&n| n <= MSG).ok_or("message longer than perftest receives")?;
        self.mr.write_at(0, msg).map_err(s("copying the message"))?;
        self.qp
            .post_send(&[SendWr::send(1, &[Sge::from_mr(&self.mr, 0, len)]).signaled()])
            .map_err(|e| format!("sending the {what}: {}", e.error))?;
        Self::one(self.send_cq, what, also).map(|_| ())
    }

    /// The server after its last message: waits (at most `ms`) for the
    /// client to close the exchange connection, so that the client's own
    /// last SEND, still being checked by siw, does not see the connection go
    /// down under it (see [`Self::send_last`]).
    pub(crate) fn await_peer_close(&self, ms: i32) {
        let t0 = Instant::now();
        while let Some(left) = (ms as u128).checked_sub(t0.elapsed().as_millis()) {
            match self.ch.get_event_timeout(left as i32) {
                Ok(Some(ev)) if ev.kind() == EventKind::Disconnected && ev.is_for(&self.id) => return,
                Ok(Some(_)) => {}
                _ => return,
            }
        }
    }

    /// Receives one message of `len` bytes and re-posts the receive.
    pub(crate) fn recv(&mut self, len: usize, what: &str) -> Result<Vec<u8>, String> {
        Self::one(self.recv_cq, what, None)?;
        let mut got = vec![0u8; len];
        self.mr.read_at(RECV_AT, &mut got).map_err(s("reading the message"))?;
        self.qp
            .post_recv(&[RecvWr::new(0, &[Sge::from_mr(&self.mr, RECV_AT, MSG)])])
            .map_err(|e| format!("ibv_post_recv: {}", e.error))?;
        Ok(got)
    }
}

/// The test's connection-manager ids (and their channel): the client
/// disconnects them at the end, as perftest's.
pub(crate) struct TestIds {
    ch: &'static EventChannel,
    ids: Vec<CmId<'static>>,
    client: bool,
}

impl TestIds {
    /// Server: listens on `port` for the test's connections (before the
    /// handshake that lets the client connect).
    pub(crate) fn listen(port: u16, backlog: u32) -> Result<Self, String> {
        let ch = leak(EventChannel::create().map_err(s("rdma_create_event_channel"))?);
        let listener = CmId::create(ch, PortSpace::Tcp).map_err(s("rdma_create_id"))?;
        let any = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, port));
        listener.bind_addr(&any).map_err(s("rdma_bind_addr"))?;
        listener.listen(backlog).map_err(s("rdma_listen"))?;
        Ok(TestIds { ch, ids: vec![listener], client: false })
    }

    /// Client: nothing to prepare.
    pub(crate) fn client() -> Result<Self, String> {
        let ch = leak(EventChannel::create().map_err(s("rdma_create_event_channel"))?);
        Ok(TestIds { ch, ids: Vec::new(), client: true })
    }

    /// Connects `n` QPs: each made by `make` (in INIT, receives posted)
    /// and brought to RTS by the connection manager. Client: to
    /// `host`:`port`, retrying while the server is not listening yet.
    pub(crate) fn connect_qps<'a>(
        &mut self,
        n: usize,
        server: Option<(&str, u16)>,
        param: &ConnParam<'_>,
        mut make: impl FnMut(usize, &CmId<'static>) -> Result<RcQp<'a, Init>, String>,
    ) -> Result<Vec<RcQp<'a, Rts>>, String> {
        let mut out = Vec::with_capacity(n);
        let ch = self.ch;
        if let Some((host, port)) = server {
            let dst = resolve(host, port)?;
            for q in 0..n {
                let (id, qp) = retrying("connecting the test QP through rdma_cm", || {
                    let id = resolved(ch, &dst)?;
                    let qp = make(q, &id)?;
                    id.connect(&qp, param).map_err(s("rdma_connect"))?;
                    let ev = ch.get_event_timeout(STEP_MS).map_err(s("rdma_get_cm_event"))?.ok_or("no answer to rdma_connect")?;
                    let qp = id.establish(qp, &ev).map_err(|e| format!("rdma_connect: {}", e.error))?;
                    Ok((id, qp))
                })?;
                self.ids.push(id);
                out.push(qp);
            }
            return Ok(out);
        }
        // Server: requests and establishments arrive in any order.
        let mut established = 0;
        while out.len() < n || established < n {
            let mut ev = ch.get_event_timeout(STEP_MS * 2).map_err(s("rdma_get_cm_event"))?.ok_or("the client's QPs did not connect")?;
            match ev.kind() {
                EventKind::ConnectRequest if out.len() < n => {
                    let id = ev.take_request().ok_or("a connect request without its id")?;
                    drop(ev);
                    let qp = make(out.len(), &id)?;
                    out.push(id.accept(qp, param).map_err(|e| format!("rdma_accept: {}", e.error))?);
                    self.ids.push(id);
                }
                EventKind::Established => established += 1,
                k => return Err(format!("unexpected rdma_cm event {k:?} while connecting the test QPs")),
            }
        }
        Ok(out)
    }

    /// The client's end: disconnects every connection and waits (10 s at
    /// most) for their DISCONNECTED events.
    pub(crate) fn disconnect(self) {
        if !self.client {
            return;
        }
        let mut left = self.ids.iter().filter(|id| id.disconnect().is_ok()).count();
        while left > 0 {
            match self.ch.get_event_timeout(10_000) {
                Ok(Some(ev)) if ev.kind() == EventKind::Disconnected => left -= 1,
                Ok(Some(_)) => {}
                _ => break,
            }
        }
    }
}
