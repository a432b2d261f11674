//! `verbs-udaddy`: rdma-core's `udaddy` (librdmacm/examples/udaddy.c) on
//! `verbs::cm`: UD "connections" (SIDR) over RDMA_PS_UDP; the client sends
//! `message_count` SENDs with immediate data (its QP number) to the
//! server, which answers each connection through an address handle made
//! from the first completion (`ibv_create_ah_from_wc`). Same options and
//! output as the C tool; port 7174 (`-p` is the port space, as in C).

use core::net::SocketAddr;
use std::process::ExitCode;

use verbs::cm::{getaddrinfo, AddrHints, CmId, EventChannel, EventKind, PortSpace, RDMA_UDP_QKEY};
use verbs::qp::{QpCap, QpInitAttr, Rts, Ud, UdQp};
use verbs::wr::{RecvWr, SendWr, Sge, UdDest};
use verbs::{AccessFlags, Ah, Context, Cq, Mr, Pd, QueuePair, Wc};

const PORT: &str = "7174";
const GRH: usize = 40;
const TIMEOUT_MS: i32 = 60_000;

struct Opts {
    dst: Option<String>,
    src: Option<String>,
    connections: usize,
    count: usize,
    size: usize,
    tos: Option<u8>,
}

fn parse(args: &[String]) -> Option<Opts> {
    let mut o = Opts { dst: None, src: None, connections: 1, count: 10, size: 100, tos: None };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "-s" => o.dst = Some(it.next()?.clone()),
            "-b" => o.src = Some(it.next()?.clone()),
            "-c" => o.connections = it.next()?.parse().ok()?,
            "-C" => o.count = it.next()?.parse().ok()?,
            "-S" => o.size = it.next()?.parse().ok()?,
            "-t" => o.tos = Some(it.next()?.parse().ok()?),
            "-p" | "-P" | "-f" => {
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

fn usage() {
    println!("usage: udaddy");
    for l in ["[-s server_address]", "[-b bind_address]", "[-f address_format]", "    name, ip, ipv6, or gid",
        "[-P port_space]", "    udp or ipoib", "[-c connections]", "[-C message_count]", "[-S message_size]",
        "[-t type_of_service]", "[-p port_space - %#x for UDP (default), %#x for IPOIB]"] {
        println!("\t{l}");
    }
}

fn addr(host: Option<&str>, port: &str, passive: bool) -> Result<SocketAddr, String> {
    getaddrinfo(host, port, AddrHints { passive, ..AddrHints::default() })
        .map(|v| v[0])
        .map_err(|e| format!("getaddrinfo error: {e}"))
}

struct Res<'c> {
    pd: Pd<'c>,
    cqs: Vec<Cq<'c>>,
}

fn resources<'c>(ctx: &'c Context, o: &Opts) -> Result<Res<'c>, String> {
    let pd = Pd::alloc(ctx).map_err(|e| format!("udaddy: unable to allocate PD: {e}"))?;
    let cqe = (o.count * 2).max(2) as u32;
    let cqs = (0..o.connections)
        .map(|_| Cq::create(ctx, cqe, None, 0))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("udaddy: unable to create CQ: {e}"))?;
    Ok(Res { pd, cqs })
}

fn check_mtu(ctx: &Context, port: u8, o: &Opts) -> Result<(), String> {
    let attr = ctx.query_port(port).map_err(|e| e.to_string())?;
    let mtu = attr.active_mtu.bytes() as usize;
    if o.count > 0 && o.size > mtu {
        return Err(format!("udaddy: message_size {} is larger than active mtu {mtu}", o.size));
    }
    Ok(())
}

fn node_qp<'a>(id: &CmId<'_>, res: &'a Res<'a>, i: usize, o: &Opts) -> Result<QueuePair<'a, Ud, Rts>, String> {
    let n = o.count.max(1) as u32;
    let cap = QpCap { max_send_wr: n, max_recv_wr: n, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let attr = QpInitAttr { send_cq: &res.cqs[i], recv_cq: &res.cqs[i], srq: None, cap, sq_sig_all: false };
    let qp = UdQp::create(&res.pd, attr).map_err(|e| format!("udaddy: unable to create QP: {e}"))?;
    id.init_ud_qp(qp).map_err(|e| format!("udaddy: unable to create QP: {}", e.error))
}

fn post_recvs(qp: &mut QueuePair<'_, Ud, Rts>, mr: &Mr<'_>, o: &Opts) -> Result<(), String> {
    let sge = [Sge::from_mr(mr, 0, (o.size + GRH) as u32)];
    for _ in 0..o.count {
        qp.post_recv(&[RecvWr::new(0, &sge)]).map_err(|e| format!("failed to post receives: {e}"))?;
    }
    Ok(())
}

fn post_sends(qp: &mut QueuePair<'_, Ud, Rts>, mr: &Mr<'_>, dest: UdDest<'_>, signaled: bool, o: &Opts) -> Result<(), String> {
    let sge = [Sge::from_mr(mr, 0, o.size as u32)];
    for _ in 0..o.count {
        let wr = SendWr::send_with_imm(0, &sge, qp.qp_num()).ud(dest);
        qp.post_send(&[if signaled { wr.signaled() } else { wr }]).map_err(|e| format!("failed to post sends: {e}"))?;
    }
    Ok(())
}

/// Polls `n` completions; returns the first one.
fn poll_n(cq: &Cq<'_>, n: usize) -> Result<Option<Wc>, String> {
    let mut wc = [Wc::ZERO; 8];
    let (mut done, mut first) = (0, None);
    while done < n {
        let k = cq.poll(&mut wc[..(n - done).min(8)]).map_err(|e| format!("udaddy: failed polling CQ: {e}"))?;
        if k > 0 && first.is_none() {
            first = Some(wc[0]);
        }
        done += k;
    }
    Ok(first)
}

fn event<'c>(ch: &'c EventChannel) -> Result<verbs::cm::Event<'c>, String> {
    ch.get_event_timeout(TIMEOUT_MS).map_err(|e| e.to_string())?.ok_or_else(|| "no event in time".to_string())
}

fn fail_event(ev: &verbs::cm::Event<'_>) -> String {
    format!("udaddy: event: {}, error: {}", ev.kind().as_str(), ev.status())
}

fn run_server(o: &Opts, ch: &EventChannel) -> Result<(), String> {
    println!("udaddy: starting server");
    let listen = CmId::create(ch, PortSpace::Udp).map_err(|e| format!("udaddy: listen request failed: {e}"))?;
    listen.bind_addr(&addr(o.src.as_deref(), PORT, true)?).map_err(|e| format!("udaddy: bind address failed: {e}"))?;
    listen.listen(0).map_err(|e| format!("udaddy: failure trying to listen: {e}"))?;
    let mut ev = event(ch)?;
    let id0 = ev.take_request().ok_or_else(|| fail_event(&ev))?;
    let ctx = id0.open_device().map_err(|e| e.to_string())?;
    let port = id0.query_addr().map_err(|e| e.to_string())?.port_num;
    check_mtu(&ctx, port, o)?;
    let res = resources(&ctx, o)?;
    let mrs: Vec<Mr<'_>> = (0..o.connections)
        .map(|_| Mr::alloc(&res.pd, o.size + GRH, AccessFlags::LOCAL_WRITE))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("failed to reg MR: {e}"))?;
    let (mut ids, mut qps, mut pending) = (Vec::new(), Vec::new(), Some(id0));
    while qps.len() < o.connections {
        let id = match pending.take() {
            Some(id) => id,
            None => {
                let mut ev = event(ch)?;
                ev.take_request().ok_or_else(|| fail_event(&ev))?
            }
        };
        let i = qps.len();
        let mut qp = node_qp(&id, &res, i, o)?;
        post_recvs(&mut qp, &mrs[i], o)?;
        id.accept_ud(&qp, &[]).map_err(|e| format!("udaddy: failure accepting: {e}"))?;
        qps.push(qp);
        ids.push(id);
    }
    if o.count > 0 {
        println!("receiving data transfers");
        let mut replies = Vec::new();
        for (i, cq) in res.cqs.iter().enumerate() {
            let wc = poll_n(cq, o.count)?.ok_or("no completion")?;
            let mut grh = [0u8; GRH];
            mrs[i].read_at(0, &mut grh).map_err(|e| e.to_string())?;
            let ah = Ah::create_from_wc(&res.pd, &wc.addressing(), Some(&grh), port)
                .map_err(|e| format!("udaddy: failed to create reply AH: {e}"))?;
            replies.push((ah, wc.imm_data().unwrap_or(0)));
        }
        println!("sending replies");
        for (i, qp) in qps.iter_mut().enumerate() {
            let dest = UdDest { ah: &replies[i].0, remote_qpn: replies[i].1, remote_qkey: RDMA_UDP_QKEY };
            post_sends(qp, &mrs[i], dest, true, o)?;
        }
        for cq in &res.cqs {
            poll_n(cq, o.count)?;
        }
        println!("data transfers complete");
    }
    Ok(())
}

fn run_client(o: &Opts, ch: &EventChannel) -> Result<(), String> {
    println!("udaddy: starting client");
    let dst = addr(o.dst.as_deref(), PORT, false)?;
    let src = o.src.as_deref().map(|s| addr(Some(s), "0", false)).transpose()?;
    println!("udaddy: connecting");
    let mut ids = Vec::new();
    for _ in 0..o.connections {
        let id = CmId::create(ch, PortSpace::Udp).map_err(|e| e.to_string())?;
        id.resolve_addr(src.as_ref(), &dst, 2000).map_err(|e| format!("udaddy: failure getting addr: {e}"))?;
        id.wait(EventKind::AddrResolved, TIMEOUT_MS).map_err(|e| e.to_string())?;
        if let Some(t) = o.tos {
            id.set_tos(t).map_err(|e| format!("udaddy: set TOS option failed: {e}"))?;
        }
        id.resolve_route(2000).map_err(|e| format!("udaddy: resolve route failed: {e}"))?;
        id.wait(EventKind::RouteResolved, TIMEOUT_MS).map_err(|e| e.to_string())?;
        ids.push(id);
    }
    let ctx = ids[0].open_device().map_err(|e| e.to_string())?;
    check_mtu(&ctx, ids[0].query_addr().map_err(|e| e.to_string())?.port_num, o)?;
    let res = resources(&ctx, o)?;
    let mrs: Vec<Mr<'_>> = (0..o.connections)
        .map(|_| Mr::alloc(&res.pd, o.size + GRH, AccessFlags::LOCAL_WRITE))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("failed to reg MR: {e}"))?;
    let (mut qps, mut peers) = (Vec::new(), Vec::new());
    for (i, id) in ids.iter().enumerate() {
        let mut qp = node_qp(id, &res, i, o)?;
        post_recvs(&mut qp, &mrs[i], o)?;
        id.connect_ud(&qp, &[]).map_err(|e| format!("udaddy: failure connecting: {e}"))?;
        let ev = event(ch)?;
        if ev.kind() != EventKind::Established {
            return Err(fail_event(&ev));
        }
        let peer = ev.ud();
        let ah = Ah::create(&res.pd, &peer.ah_attr).map_err(|e| format!("udaddy: failure creating address handle: {e}"))?;
        peers.push((ah, peer.qp_num, peer.qkey));
        qps.push(qp);
    }
    if o.count > 0 {
        println!("initiating data transfers");
        for (i, qp) in qps.iter_mut().enumerate() {
            let dest = UdDest { ah: &peers[i].0, remote_qpn: peers[i].1, remote_qkey: peers[i].2 };
            post_sends(qp, &mrs[i], dest, false, o)?;
        }
        println!("receiving data transfers");
        for cq in &res.cqs {
            poll_n(cq, o.count)?;
        }
        println!("data transfers complete");
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(o) = parse(&args) else {
        usage();
        return ExitCode::from(1);
    };
    let ch = match EventChannel::create() {
        Ok(ch) => ch,
        Err(e) => {
            println!("{e}");
            return ExitCode::from(1);
        }
    };
    let r = if o.dst.is_some() { run_client(&o, &ch) } else { run_server(&o, &ch) };
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
