//! `verbs-rping`: rdma-core's `rping` (librdmacm/examples) on `verbs::cm`,
//! with the same options, output and wire protocol, so either side
//! interoperates with the C original.
//!
//! Protocol (per ping): the client SENDs a 16-byte `rping_rdma_info`
//! (big-endian buffer address, rkey, size) naming its start buffer; the
//! server RDMA READs it, SENDs an acknowledgement, receives a second
//! `rping_rdma_info` naming the client's sink buffer, RDMA WRITEs the data
//! back (up to and including its NUL) and SENDs a second
//! acknowledgement. The client then validates (`-V`) and prints (`-v`).

use core::net::SocketAddr;
use std::process::ExitCode;

use verbs::cm::{getaddrinfo, AddrHints, CmId, ConnParam, EventChannel, EventKind, PortSpace};
use verbs::qp::{QpCap, QpInitAttr, RcQp, Rts};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{AccessFlags, Cq, Mr, Pd, Wc, WcOpcode, WcStatus};

const SQ_DEPTH: u32 = 16;
const MIN_SIZE: usize = 23; // sizeof("INT_MAX") + sizeof("rdma-ping-%d: ")
const MAX_SIZE: usize = 64 * 1024;
const INFO_LEN: usize = 16;

struct Opts {
    server: Option<bool>,
    addr: Option<String>,
    src: Option<String>,
    port: u16,
    count: u64,
    size: usize,
    verbose: bool,
    validate: bool,
    debug: bool,
}

fn usage() {
    println!("rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port]");
    println!("rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]");
    println!("\t-c\t\tclient side");
    println!("\t-I\t\tSource address to bind to for client.");
    println!("\t-s\t\tserver side.  To bind to any address with IPv6 use -a ::0");
    println!("\t-v\t\tdisplay ping data to stdout");
    println!("\t-V\t\tvalidate ping data");
    println!("\t-d\t\tdebug printfs");
    println!("\t-S size \tping data size");
    println!("\t-C count\tping count times");
    println!("\t-a addr\t\taddress");
    println!("\t-p port\t\tport");
}

fn parse(args: &[String]) -> Result<Opts, ()> {
    let mut o = Opts { server: None, addr: None, src: None, port: 7174, count: 0, size: 64, verbose: false, validate: false, debug: false };
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let mut value = || {
            i += 1;
            args.get(i).cloned().ok_or(())
        };
        match a {
            "-s" => o.server = Some(true),
            "-c" => o.server = Some(false),
            "-v" => o.verbose = true,
            "-V" => o.validate = true,
            "-d" => o.debug = true,
            "-a" => o.addr = Some(value()?),
            "-I" => o.src = Some(value()?),
            "-p" => o.port = value()?.parse().map_err(|_| ())?,
            "-C" => o.count = value()?.parse().map_err(|_| eprintln!("Invalid count"))?,
            "-S" => {
                let s: usize = value()?.parse().map_err(|_| ())?;
                if !(MIN_SIZE..MAX_SIZE).contains(&s) {
                    eprintln!("Invalid size {s} (valid range is {MIN_SIZE} to {MAX_SIZE})");
                    return Err(());
                }
                o.size = s;
            }
            _ => return Err(()),
        }
        i += 1;
    }
    Ok(o)
}

fn addr_of(host: Option<&str>, port: u16, passive: bool) -> Result<SocketAddr, String> {
    let hints = AddrHints { passive, ..AddrHints::default() };
    getaddrinfo(host, &port.to_string(), hints)
        .map(|v| v[0])
        .map_err(|e| format!("getaddrinfo failed ({e}) - invalid hostname or IP address"))
}

fn info_bytes(addr: u64, rkey: u32, size: u32) -> [u8; INFO_LEN] {
    let mut b = [0u8; INFO_LEN];
    b[..8].copy_from_slice(&addr.to_be_bytes());
    b[8..12].copy_from_slice(&rkey.to_be_bytes());
    b[12..].copy_from_slice(&size.to_be_bytes());
    b
}

/// The buffers of one side: receive and send slots for the 16-byte info
/// (one MR, offsets 0 and 16), the rdma buffer, and the client's start
/// buffer.
struct Bufs<'a> {
    ctl: Mr<'a>,
    rdma: Mr<'a>,
    start: Option<Mr<'a>>,
}

/// Polls until a completion of `want` arrives; receives are reposted.
/// Other successful completions are skipped; a failed one is an error.
fn wait_for(cq: &Cq<'_>, qp: &mut RcQp<'_, Rts>, ctl: &Mr<'_>, want: WcOpcode, ch: &EventChannel, id: &CmId<'_>, server: bool) -> Result<Option<Wc>, String> {
    let mut wc = [Wc::ZERO; 1];
    loop {
        if cq.poll(&mut wc).map_err(|e| format!("poll error {e}"))? == 1 {
            let w = wc[0];
            if w.status() == WcStatus::WrFlushErr {
                continue;
            }
            if !w.status().is_success() {
                return Err(format!("cq completion failed status {}", w.status_raw()));
            }
            if w.opcode() == WcOpcode::Recv {
                if w.byte_len() as usize != INFO_LEN {
                    return Err(format!("Received bogus data, size {}", w.byte_len()));
                }
                qp.post_recv(&[RecvWr::new(0, &[Sge::from_mr(ctl, 0, INFO_LEN as u32)])])
                    .map_err(|e| format!("post recv error: {e}"))?;
            }
            if w.opcode() == want {
                return Ok(Some(w));
            }
            continue;
        }
        match ch.get_event() {
            Ok(ev) if ev.kind() == EventKind::Disconnected && ev.is_for(id) => {
                eprintln!("{} DISCONNECT EVENT...", if server { "server" } else { "client" });
                return Ok(None);
            }
            Ok(ev) => eprintln!("unhandled event: {}, ignoring", ev.kind().as_str()),
            Err(e) if e.kind() == verbs::ErrorKind::WouldBlock => std::thread::sleep(core::time::Duration::from_micros(200)),
            Err(e) => return Err(format!("rdma_get_cm_event: {e}")),
        }
    }
}

fn cstr(b: &[u8]) -> &str {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    core::str::from_utf8(&b[..end]).unwrap_or("")
}

fn run(o: &Opts) -> Result<(), String> {
    let server = o.server.unwrap_or(false);
    let ch = EventChannel::create().map_err(|e| e.to_string())?;
    let listener = CmId::create(&ch, PortSpace::Tcp).map_err(|e| format!("rdma_create_id: {e}"))?;
    let id = if server {
        let addr = addr_of(o.addr.as_deref(), o.port, true)?;
        listener.bind_addr(&addr).map_err(|e| format!("rdma_bind_addr: {e}"))?;
        listener.listen(3).map_err(|e| format!("rdma_listen: {e}"))?;
        let mut ev = listener.wait(EventKind::ConnectRequest, -1).map_err(|e| format!("wait for CONNECT_REQUEST: {e}"))?;
        ev.take_request().ok_or("no request id")?
    } else {
        let dst = addr_of(o.addr.as_deref(), o.port, false)?;
        let src = o.src.as_deref().map(|s| addr_of(Some(s), 0, false)).transpose()?;
        listener.resolve_addr(src.as_ref(), &dst, 2000).map_err(|e| format!("rdma_resolve_addr: {e}"))?;
        listener.wait(EventKind::AddrResolved, -1).map_err(|e| format!("cma event: {e}"))?;
        listener.resolve_route(2000).map_err(|e| format!("rdma_resolve_route: {e}"))?;
        listener.wait(EventKind::RouteResolved, -1).map_err(|e| format!("cma event: {e}"))?;
        listener
    };
    if o.debug {
        println!("cm_id handle {} ({})", id.handle(), if server { "child" } else { "parent" });
    }
    ch.set_nonblocking(true).map_err(|e| e.to_string())?;
    let ctx = id.open_device().map_err(|e| e.to_string())?;
    let pd = Pd::alloc(&ctx).map_err(|e| format!("ibv_alloc_pd failed: {e}"))?;
    let cq = Cq::create(&ctx, SQ_DEPTH * 2, None, 0).map_err(|e| format!("ibv_create_cq failed: {e}"))?;
    let cap = QpCap { max_send_wr: SQ_DEPTH, max_recv_wr: 2, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let qp = RcQp::create(&pd, QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false })
        .map_err(|e| format!("rdma_create_qp: {e}"))?;
    let qp = id.init_qp(qp).map_err(|e| format!("rdma_create_qp: {}", e.error))?;
    let remote = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE;
    let mut b = Bufs {
        ctl: Mr::alloc(&pd, 2 * INFO_LEN, AccessFlags::LOCAL_WRITE).map_err(|e| format!("recv_buf reg_mr failed: {e}"))?,
        rdma: Mr::alloc(&pd, o.size, remote).map_err(|e| format!("rdma_buf reg_mr failed: {e}"))?,
        start: if server { None } else { Some(Mr::alloc(&pd, o.size, remote).map_err(|e| format!("start_buf reg_mr failed: {e}"))?) },
    };
    let mut qp_init = qp;
    let recv = [Sge::from_mr(&b.ctl, 0, INFO_LEN as u32)];
    qp_init.post_recv(&[RecvWr::new(0, &recv)]).map_err(|e| format!("ibv_post_recv failed: {e}"))?;
    let param = ConnParam { flow_control: 0, ..ConnParam::default() };
    let mut qp = if server {
        let qp = id.accept(qp_init, &param).map_err(|e| format!("rdma_accept: {}", e.error))?;
        id.wait(EventKind::Established, -1).map_err(|e| format!("wait for CONNECTED: {e}"))?;
        qp
    } else {
        id.connect(&qp_init, &param).map_err(|e| format!("rdma_connect: {e}"))?;
        let ev = loop {
            match ch.get_event() {
                Ok(ev) => break ev,
                Err(e) if e.kind() == verbs::ErrorKind::WouldBlock => std::thread::sleep(core::time::Duration::from_millis(1)),
                Err(e) => return Err(e.to_string()),
            }
        };
        if !matches!(ev.kind(), EventKind::ConnectResponse | EventKind::Established) {
            return Err(format!("cma event {}, error {}", ev.kind().as_str(), ev.status()));
        }
        id.establish(qp_init, &ev).map_err(|e| format!("connect error {}", e.error))?
    };
    let r = if server { serve(o, &ch, &id, &cq, &mut qp, &mut b) } else { client(o, &ch, &id, &cq, &mut qp, &mut b) };
    let _ = id.disconnect();
    r
}

fn serve(o: &Opts, ch: &EventChannel, id: &CmId<'_>, cq: &Cq<'_>, qp: &mut RcQp<'_, Rts>, b: &mut Bufs<'_>) -> Result<(), String> {
    let ack = [Sge::from_mr(&b.ctl, INFO_LEN, INFO_LEN as u32)];
    loop {
        // The client's start buffer.
        if wait_for(cq, qp, &b.ctl, WcOpcode::Recv, ch, id, true)?.is_none() {
            return Ok(());
        }
        let mut info = [0u8; INFO_LEN];
        b.ctl.read_at(0, &mut info).map_err(|e| e.to_string())?;
        let addr = u64::from_be_bytes(info[..8].try_into().unwrap_or_default());
        let rkey = u32::from_be_bytes(info[8..12].try_into().unwrap_or_default());
        let len = u32::from_be_bytes(info[12..].try_into().unwrap_or_default()).min(b.rdma.len() as u32);
        qp.post_send(&[SendWr::rdma_read(1, &[Sge::from_mr(&b.rdma, 0, len)], addr, rkey).signaled()])
            .map_err(|e| format!("post send error {e}"))?;
        if wait_for(cq, qp, &b.ctl, WcOpcode::RdmaRead, ch, id, true)?.is_none() {
            return Ok(());
        }
        let mut data = vec![0u8; b.rdma.len()];
        b.rdma.read_at(0, &mut data).map_err(|e| e.to_string())?;
        if o.verbose {
            println!("server ping data: {}", cstr(&data));
        }
        qp.post_send(&[SendWr::send(2, &ack).signaled()]).map_err(|e| format!("post send error {e}"))?;
        // The client's sink buffer.
        if wait_for(cq, qp, &b.ctl, WcOpcode::Recv, ch, id, true)?.is_none() {
            return Ok(());
        }
        b.ctl.read_at(0, &mut info).map_err(|e| e.to_string())?;
        let addr = u64::from_be_bytes(info[..8].try_into().unwrap_or_default());
        let rkey = u32::from_be_bytes(info[8..12].try_into().unwrap_or_default());
        let n = (cstr(&data).len() + 1).min(data.len()) as u32;
        qp.post_send(&[SendWr::rdma_write(3, &[Sge::from_mr(&b.rdma, 0, n)], addr, rkey).signaled()])
            .map_err(|e| format!("post send error {e}"))?;
        if wait_for(cq, qp, &b.ctl, WcOpcode::RdmaWrite, ch, id, true)?.is_none() {
            return Ok(());
        }
        qp.post_send(&[SendWr::send(4, &ack).signaled()]).map_err(|e| format!("post send error {e}"))?;
    }
}

fn client(o: &Opts, ch: &EventChannel, id: &CmId<'_>, cq: &Cq<'_>, qp: &mut RcQp<'_, Rts>, b: &mut Bufs<'_>) -> Result<(), String> {
    let size = o.size;
    let Some(start_mr) = b.start.as_mut() else { return Err("no start buffer".into()) };
    let mut start_c: u8 = 65;
    let mut ping: u64 = 0;
    let mut buf = vec![0u8; size];
    while o.count == 0 || ping < o.count {
        let head = format!("rdma-ping-{ping}: ");
        let cc = head.len().min(size - 1);
        buf[..cc].copy_from_slice(&head.as_bytes()[..cc]);
        let mut c = start_c;
        for x in buf.iter_mut().take(size).skip(cc) {
            *x = c;
            c += 1;
            if c > 122 {
                c = 65;
            }
        }
        start_c += 1;
        if start_c > 122 {
            start_c = 65;
        }
        buf[size - 1] = 0;
        start_mr.write_at(0, &buf).map_err(|e| e.to_string())?;
        b.ctl.write_at(INFO_LEN, &info_bytes(start_mr.addr(), start_mr.rkey(), size as u32)).map_err(|e| e.to_string())?;
        let info = [Sge::from_mr(&b.ctl, INFO_LEN, INFO_LEN as u32)];
        qp.post_send(&[SendWr::send(1, &info).signaled()]).map_err(|e| format!("post send error {e}"))?;
        if wait_for(cq, qp, &b.ctl, WcOpcode::Recv, ch, id, false)?.is_none() {
            return Ok(());
        }
        // The SEND completed before the server's answer: the info slot is free again.
        b.ctl.write_at(INFO_LEN, &info_bytes(b.rdma.addr(), b.rdma.rkey(), size as u32)).map_err(|e| e.to_string())?;
        qp.post_send(&[SendWr::send(2, &info).signaled()]).map_err(|e| format!("post send error {e}"))?;
        if wait_for(cq, qp, &b.ctl, WcOpcode::Recv, ch, id, false)?.is_none() {
            return Ok(());
        }
        let mut back = vec![0u8; size];
        b.rdma.read_at(0, &mut back).map_err(|e| e.to_string())?;
        if o.validate && back != buf {
            return Err("data mismatch!".into());
        }
        if o.verbose {
            println!("ping data: {}", cstr(&back));
        }
        ping += 1;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Ok(o) = parse(&args) else {
        usage();
        return ExitCode::from(22);
    };
    if o.server.is_none() {
        usage();
        return ExitCode::from(22);
    }
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
