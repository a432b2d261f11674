//! `verbs-ucmatose`: rdma-core's `ucmatose` (librdmacm/examples/cmatose.c)
//! on `verbs::cm`, with the same options and output: `connections` RC
//! connections; the server sends `message_count` messages of
//! `message_size` bytes on each, the client receives them and replies,
//! then the server disconnects.

use core::net::SocketAddr;
use std::process::ExitCode;

use verbs::cm::{getaddrinfo, AddrHints, CmId, ConnParam, EventChannel, EventKind, PortSpace};
use verbs::qp::{QpCap, QpInitAttr, RcQp, Rts};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{AccessFlags, Context, Cq, Mr, Pd, Wc};

const TIMEOUT_MS: i32 = 60_000;

struct Opts {
    dst: Option<String>,
    src: Option<String>,
    connections: usize,
    count: usize,
    size: usize,
    port: String,
    tos: Option<u8>,
    ack_timeout: Option<u8>,
    migrate: bool,
}

fn usage() {
    println!("usage: ucmatose");
    for l in [
        "[-s server_address]", "[-b bind_address]", "[-f address_format]", "    name, ip, ipv6, or gid",
        "[-P port_space]", "    tcp or ib", "[-c connections]", "[-C message_count]", "[-S message_size]",
        "[-t type_of_service]", "[-p port_number]", "[-m(igrate)]", "[-a ack_timeout]",
    ] {
        println!("\t{l}");
    }
}

fn num(s: &str) -> Option<u64> {
    s.strip_prefix("0x").map_or_else(|| s.parse().ok(), |h| u64::from_str_radix(h, 16).ok())
}

fn parse(args: &[String]) -> Option<Opts> {
    let mut o = Opts { dst: None, src: None, connections: 1, count: 10, size: 100, port: "7471".into(), tos: None, ack_timeout: None, migrate: false };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-m" => o.migrate = true,
            "-s" => o.dst = Some(it.next()?.clone()),
            "-b" => o.src = Some(it.next()?.clone()),
            "-c" => o.connections = it.next()?.parse().ok()?,
            "-C" => o.count = it.next()?.parse().ok()?,
            "-S" => o.size = it.next()?.parse().ok()?,
            "-p" => o.port = it.next()?.clone(),
            "-t" => o.tos = Some(num(it.next()?)? as u8),
            "-a" => o.ack_timeout = Some(num(it.next()?)? as u8),
            "-f" | "-P" => {
                it.next()?;
            }
            _ => return None,
        }
    }
    if o.size == 0 {
        o.count = 0;
    }
    Some(o)
}

fn addr(host: Option<&str>, port: &str, passive: bool) -> Result<SocketAddr, String> {
    getaddrinfo(host, port, AddrHints { passive, ..AddrHints::default() })
        .map(|v| v[0])
        .map_err(|e| format!("getaddrinfo error: {e}"))
}

/// Per-connection resources, created once the device is known.
struct Res<'c> {
    pd: Pd<'c>,
    cqs: Vec<(Cq<'c>, Cq<'c>)>,
}

fn resources<'c>(ctx: &'c Context, o: &Opts) -> Result<Res<'c>, String> {
    let pd = Pd::alloc(ctx).map_err(|e| format!("cmatose: unable to allocate PD: {e}"))?;
    let cqe = o.count.max(1) as u32;
    let mut cqs = Vec::new();
    for _ in 0..o.connections {
        let s = Cq::create(ctx, cqe, None, 0).map_err(|e| format!("cmatose: unable to create CQ: {e}"))?;
        let r = Cq::create(ctx, cqe, None, 0).map_err(|e| format!("cmatose: unable to create CQ: {e}"))?;
        cqs.push((s, r));
    }
    Ok(Res { pd, cqs })
}

fn new_qp<'a>(id: &CmId<'_>, res: &'a Res<'a>, i: usize, o: &Opts) -> Result<verbs::QueuePair<'a, verbs::qp::Rc, verbs::qp::Init>, String> {
    let cqe = o.count.max(1) as u32;
    let cap = QpCap { max_send_wr: cqe, max_recv_wr: cqe, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let attr = QpInitAttr { send_cq: &res.cqs[i].0, recv_cq: &res.cqs[i].1, srq: None, cap, sq_sig_all: true };
    let qp = RcQp::create(&res.pd, attr).map_err(|e| format!("cmatose: unable to create QP: {e}"))?;
    id.init_qp(qp).map_err(|e| format!("cmatose: unable to create QP: {}", e.error))
}

fn post_recvs(qp: &mut verbs::QueuePair<'_, verbs::qp::Rc, impl verbs::qp::CanPostRecv>, mr: &Mr<'_>, o: &Opts) -> Result<(), String> {
    let sge = [Sge::from_mr(mr, 0, o.size as u32)];
    for _ in 0..o.count {
        qp.post_recv(&[RecvWr::new(0, &sge)]).map_err(|e| format!("failed to post receives: {e}"))?;
    }
    Ok(())
}

fn post_sends(qp: &mut RcQp<'_, Rts>, mr: &Mr<'_>, o: &Opts) -> Result<(), String> {
    let sge = [Sge::from_mr(mr, 0, o.size as u32)];
    for _ in 0..o.count {
        qp.post_send(&[SendWr::send(0, &sge)]).map_err(|e| format!("failed to post sends: {e}"))?;
    }
    Ok(())
}

fn poll_all(cq: &Cq<'_>, n: usize) -> Result<(), String> {
    let mut wc = [Wc::ZERO; 8];
    let mut done = 0;
    while done < n {
        done += cq.poll(&mut wc[..(n - done).min(8)]).map_err(|e| format!("cmatose: failed polling CQ: {e}"))?;
    }
    Ok(())
}

fn event<'c>(ch: &'c EventChannel) -> Result<verbs::cm::Event<'c>, String> {
    ch.get_event_timeout(TIMEOUT_MS).map_err(|e| e.to_string())?.ok_or_else(|| "no event in time".to_string())
}

fn fail_event(ev: &verbs::cm::Event<'_>) -> String {
    format!("cmatose: event: {}, error: {}", ev.kind().as_str(), ev.status())
}

fn run_server(o: &Opts, ch: &EventChannel, ch2: &EventChannel) -> Result<(), String> {
    println!("cmatose: starting server");
    let listen = CmId::create(ch, PortSpace::Tcp).map_err(|e| format!("cmatose: listen request failed: {e}"))?;
    let a = addr(o.src.as_deref(), &o.port, true)?;
    listen.bind_addr(&a).map_err(|e| format!("cmatose: bind address failed: {e}"))?;
    listen.listen(0).map_err(|e| format!("cmatose: failure trying to listen: {e}"))?;
    let mut ids = Vec::new();
    let mut first = event(ch)?;
    let id0 = first.take_request().ok_or_else(|| fail_event(&first))?;
    let ctx = id0.open_device().map_err(|e| e.to_string())?;
    let res = resources(&ctx, o)?;
    let mrs: Vec<Mr<'_>> = (0..o.connections)
        .map(|_| Mr::alloc(&res.pd, o.size.max(1), AccessFlags::LOCAL_WRITE))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("failed to reg MR: {e}"))?;
    let mut qps = Vec::new();
    let mut pending = Some(id0);
    let mut established = 0;
    while qps.len() < o.connections {
        let id = match pending.take() {
            Some(id) => id,
            None => {
                let mut ev = event(ch)?;
                if ev.kind() == EventKind::Established {
                    established += 1;
                    continue;
                }
                ev.take_request().ok_or_else(|| fail_event(&ev))?
            }
        };
        let i = qps.len();
        let mut qp = new_qp(&id, &res, i, o)?;
        if let Some(t) = o.ack_timeout {
            id.set_ack_timeout(t).map_err(|e| format!("cmatose: set ack timeout option failed: {e}"))?;
        }
        post_recvs(&mut qp, &mrs[i], o)?;
        let qp = id.accept(qp, &ConnParam::default()).map_err(|e| format!("cmatose: failure accepting: {}", e.error))?;
        qps.push(qp);
        ids.push(id);
    }
    while established < ids.len() {
        let ev = event(ch)?;
        match ev.kind() {
            EventKind::Established => established += 1,
            EventKind::Disconnected | EventKind::ConnectError | EventKind::Unreachable | EventKind::Rejected => {
                return Err(fail_event(&ev))
            }
            _ => {}
        }
    }
    if o.count > 0 {
        println!("initiating data transfers");
        for (qp, mr) in qps.iter_mut().zip(&mrs) {
            post_sends(qp, mr, o)?;
        }
        println!("completing sends");
        for c in &res.cqs {
            poll_all(&c.0, o.count)?;
        }
        println!("receiving data transfers");
        for c in &res.cqs {
            poll_all(&c.1, o.count)?;
        }
        println!("data transfers complete");
    }
    if o.migrate {
        let (listen, ids) = migrate_channel(Some(listen), ids, ch2)?;
        drop(listen);
        return server_disconnect(&ids, ch2);
    }
    server_disconnect(&ids, ch)
}

/// `-m`: moves the ids (and the listener) to a new channel, on which the
/// disconnection events then arrive (cmatose's `migrate_channel`).
#[allow(clippy::type_complexity)]
fn migrate_channel<'n>(
    listen: Option<CmId<'_>>,
    ids: Vec<CmId<'_>>,
    to: &'n EventChannel,
) -> Result<(Option<CmId<'n>>, Vec<CmId<'n>>), String> {
    println!("migrating to new event channel");
    let fail = |e: verbs::cm::MigrateError<'_>| format!("cmatose: failure migrating to channel: {}", e.error);
    let listen = listen.map(|l| l.migrate(to)).transpose().map_err(fail)?;
    let ids = ids.into_iter().map(|id| id.migrate(to)).collect::<Result<Vec<_>, _>>().map_err(fail)?;
    Ok((listen, ids))
}

fn server_disconnect(ids: &[CmId<'_>], ch: &EventChannel) -> Result<(), String> {
    println!("cmatose: disconnecting");
    for id in ids {
        id.disconnect().map_err(|e| e.to_string())?;
    }
    let mut left = ids.len();
    while left > 0 {
        if event(ch)?.kind() == EventKind::Disconnected {
            left -= 1;
        }
    }
    println!("disconnected");
    Ok(())
}

fn run_client(o: &Opts, ch: &EventChannel, ch2: &EventChannel) -> Result<(), String> {
    println!("cmatose: starting client");
    let dst = addr(o.dst.as_deref(), &o.port, false)?;
    let src = o.src.as_deref().map(|s| addr(Some(s), "0", false)).transpose()?;
    println!("cmatose: connecting");
    let mut ids = Vec::new();
    for _ in 0..o.connections {
        let id = CmId::create(ch, PortSpace::Tcp).map_err(|e| e.to_string())?;
        id.resolve_addr(src.as_ref(), &dst, 2000).map_err(|e| format!("cmatose: failure getting addr: {e}"))?;
        id.wait(EventKind::AddrResolved, TIMEOUT_MS).map_err(|e| e.to_string())?;
        if let Some(t) = o.tos {
            id.set_tos(t).map_err(|e| format!("cmatose: set TOS option failed: {e}"))?;
        }
        if let Some(t) = o.ack_timeout {
            id.set_ack_timeout(t).map_err(|e| format!("cmatose: set ack timeout option failed: {e}"))?;
        }
        id.resolve_route(2000).map_err(|e| format!("cmatose: resolve route failed: {e}"))?;
        id.wait(EventKind::RouteResolved, TIMEOUT_MS).map_err(|e| e.to_string())?;
        ids.push(id);
    }
    let ctx = ids[0].open_device().map_err(|e| e.to_string())?;
    let res = resources(&ctx, o)?;
    let mrs: Vec<Mr<'_>> = (0..o.connections)
        .map(|_| Mr::alloc(&res.pd, o.size.max(1), AccessFlags::LOCAL_WRITE))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("failed to reg MR: {e}"))?;
    let mut qps = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let mut qp = new_qp(id, &res, i, o)?;
        post_recvs(&mut qp, &mrs[i], o)?;
        let param = ConnParam { retry_count: 5, ..ConnParam::default() };
        id.connect(&qp, &param).map_err(|e| format!("cmatose: failure connecting: {e}"))?;
        let ev = event(ch)?;
        if !matches!(ev.kind(), EventKind::ConnectResponse | EventKind::Established) {
            return Err(fail_event(&ev));
        }
        qps.push(id.establish(qp, &ev).map_err(|e| format!("cmatose: failure connecting: {}", e.error))?);
    }
    if o.count > 0 {
        println!("receiving data transfers");
        for c in &res.cqs {
            poll_all(&c.1, o.count)?;
        }
        println!("sending replies");
        for (qp, mr) in qps.iter_mut().zip(&mrs) {
            post_sends(qp, mr, o)?;
        }
        println!("data transfers complete");
    }
    if o.migrate {
        let (_, ids) = migrate_channel(None, ids, ch2)?;
        return client_disconnect(&ids, ch2);
    }
    client_disconnect(&ids, ch)
}

fn client_disconnect(ids: &[CmId<'_>], ch: &EventChannel) -> Result<(), String> {
    let mut left = ids.len();
    while left > 0 {
        let ev = event(ch)?;
        if ev.kind() == EventKind::Disconnected {
            if let Some(id) = ids.iter().find(|id| ev.is_for(id)) {
                let _ = id.disconnect();
            }
            left -= 1;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(o) = parse(&args) else {
        usage();
        return ExitCode::from(1);
    };
    // The second channel is where `-m` moves the ids.
    let (ch, ch2) = match (EventChannel::create(), EventChannel::create()) {
        (Ok(ch), Ok(ch2)) => (ch, ch2),
        (Err(e), _) | (_, Err(e)) => {
            println!("{e}");
            return ExitCode::from(1);
        }
    };
    let r = if o.dst.is_some() { run_client(&o, &ch, &ch2) } else { run_server(&o, &ch, &ch2) };
    println!("test complete");
    let status = match r {
        Ok(()) => 0,
        Err(e) => {
            println!("{e}");
            1
        }
    };
    println!("return status {status}");
    ExitCode::from(status)
}
