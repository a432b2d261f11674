//! ops_bench, ours: the twin of benches/c/ops_bench.c (rdma-core) doing the
//! same operations through this crate, for instruction counts per verb:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*::bench_post_send' target/release/deps/ops_bench-* -d rxe0 -x 1
//! ```
//!
//! Two RC QPs on one device connected to each other (A -> B); each measured
//! call goes through an `#[inline(never)]` wrapper (the symbols demangle to
//! `ops_bench::bench_post_send` etc.):
//! * `bench_post_send`: post_send of one 8-byte RDMA WRITE (list of 1) on A;
//!   every 16th signaled and waited for (outside the wrapper);
//! * `bench_post_send_inline` (with `-i N`, N >= 8: the QPs' `max_inline_data`):
//!   the same with the 8 bytes inline (`IBV_SEND_INLINE`);
//! * `bench_post_recv`: post_recv of one WR on B, consumed by SENDs from A;
//! * `bench_poll_cq`: poll for a batch of N completions already in the CQ;
//! * `bench_poll_with`: the same with `Cq::poll_with` (in place: reads each
//!   completion's wr_id and status where it lies; no C twin, BENCHMARKS.md
//!   compares it with `ibv_poll_cq`);
//! * `bench_poll_cq_empty`: poll an empty CQ.
//!
//! Output lines: `ops_bench impl=ours op=<name> calls=<n> items=<n> ns_per_call=<wall>`.
//! Needs an RDMA device: scripts/bench.sh runs it in the VM. Run without
//! arguments (as `cargo test --all-targets` does) it only says so.
//! usage: ops_bench [-d dev] [-x gid_index] [-c ip] [-i max_inline] [-n post_iters] [-b batch] [-r poll_rounds]
//! (`-c ip`: A and B connected by the connection manager on that address,
//! as siw0 needs; the device is the address's)

use std::process::ExitCode;
use std::time::Instant;

use verbs::discovery::devices;
use core::net::SocketAddr;

use verbs::cm::{CmId, ConnParam, EventChannel, EventKind, PortSpace};
use verbs::qp::{AhAttr, ConnInitAttr, GlobalRoute, Mtu, QpCap, QpInitAttr, RcQp, RcRtrAttr, RcRtsAttr, Reset, Rts};
use verbs::wr::{Payload, PostError, RecvWr, SendFlags, SendOp, SendWr, Sge};
use verbs::{AccessFlags, Context, Cq, Mr, Pd, Wc};

const SQ_DEPTH: u32 = 64;
const RQ_DEPTH: u32 = 256;
const SIGNAL_EVERY: u64 = 16;
const MAX_BATCH: usize = 64;
const MSG: u32 = 8;

// ---- the measured calls -------------------------------------------------------------

#[inline(never)]
fn bench_post_send(qp: &mut RcQp<'_, Rts>, wr: &[SendWr<'_>]) -> Result<(), PostError> {
    qp.post_send(wr)
}

/// The same call as `bench_post_send` with an inline payload; its
/// parameters are in the other order only so that LLVM's function merging
/// cannot fold the two wrappers into one symbol.
#[inline(never)]
fn bench_post_send_inline(wr: &[SendWr<'_>], qp: &mut RcQp<'_, Rts>) -> Result<(), PostError> {
    qp.post_send(wr)
}

#[inline(never)]
fn bench_post_recv(qp: &mut RcQp<'_, Rts>, wr: &[RecvWr<'_>]) -> Result<(), PostError> {
    qp.post_recv(wr)
}

#[inline(never)]
fn bench_poll_cq(cq: &Cq<'_>, wc: &mut [Wc]) -> verbs::Result<usize> {
    cq.poll(wc)
}

/// The in-place poll (`Cq::poll_with`), doing with each completion what
/// a caller of `ibv_poll_cq` does with the records it gets: reads its
/// `wr_id` (summed, for the bench to check) and its status (failures
/// counted).
#[inline(never)]
fn bench_poll_with(cq: &Cq<'_>, max: usize) -> verbs::Result<(usize, u64, usize)> {
    let (mut ids, mut failed) = (0u64, 0);
    let got = cq.poll_with(max, |wc| {
        ids = ids.wrapping_add(wc.wr_id());
        failed += usize::from(!wc.status().is_success());
    })?;
    Ok((got, ids, failed))
}

/// The same call as `bench_poll_cq`; its parameters are in the other order
/// only so that LLVM's function merging cannot fold the two wrappers into
/// one symbol (which would mix their instruction counts).
#[inline(never)]
fn bench_poll_cq_empty(wc: &mut [Wc], cq: &Cq<'_>) -> verbs::Result<usize> {
    cq.poll(wc)
}

// ---- setup --------------------------------------------------------------------------

/// Milliseconds one connection-manager step may take under TCG.
const CM_MS: i32 = 20_000;

struct Opts {
    dev: String,
    /// `-c IP`: connect A and B through the connection manager on this
    /// address (iWARP/siw0 needs it); the device is the address's.
    cm_ip: Option<String>,
    gid_index: u32,
    /// `-i N`: the QPs' `max_inline_data`; N >= 8 also measures inline posts.
    inline: u32,
    iters: u64,
    batch: usize,
    rounds: u64,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        dev: std::env::var("VERBS_TEST_RXE").unwrap_or_else(|_| "rxe0".into()),
        cm_ip: None,
        gid_index: std::env::var("VM_RXE_GID_INDEX").ok().and_then(|v| v.parse().ok()).unwrap_or(1),
        inline: 0,
        iters: 2000,
        batch: 16,
        rounds: 50,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--bench" {
            continue; // cargo bench passes it
        }
        let v = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        let bad = |_| format!("bad value for {a}: {v}");
        match a.as_str() {
            "-d" => o.dev = v.clone(),
            "-x" => o.gid_index = v.parse().map_err(bad)?,
            "-c" => o.cm_ip = Some(v.clone()),
            "-i" => o.inline = v.parse().map_err(bad)?,
            "-n" => o.iters = v.parse().map_err(bad)?,
            "-b" => o.batch = v.parse().map_err(bad)?,
            "-r" => o.rounds = v.parse().map_err(bad)?,
            _ => return Err(format!("unknown option {a}")),
        }
    }
    if !(1..=MAX_BATCH).contains(&o.batch) {
        return Err(format!("batch must be 1..{MAX_BATCH}"));
    }
    Ok(o)
}

fn report(op: &str, calls: u64, items: u64, ns: u128) {
    let per = if calls > 0 { ns as f64 / calls as f64 } else { 0.0 };
    println!("ops_bench impl=ours op={op} calls={calls} items={items} ns_per_call={per:.0}");
}

fn e<E: core::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |err| format!("{what}: {err}")
}

fn pe(what: &'static str) -> impl Fn(PostError) -> String {
    move |err| format!("{what}: {} (WR #{})", err.error, err.index)
}

/// Polls (unmeasured) until `want` successful completions came from `cq`.
fn drain(cq: &Cq<'_>, mut want: usize) -> Result<(), String> {
    let mut wc = [Wc::ZERO; 16];
    let t0 = Instant::now();
    while want > 0 {
        let n = cq.poll(&mut wc[..want.min(16)]).map_err(e("ibv_poll_cq"))?;
        if let Some(w) = wc[..n].iter().find(|w| !w.status().is_success()) {
            return Err(format!("completion error {:?} (wr_id {})", w.status(), w.wr_id()));
        }
        want -= n;
        if t0.elapsed().as_secs() > 30 {
            return Err("timed out waiting for completions".into());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        println!("ops_bench: needs an RDMA device; scripts/bench.sh runs it in the VM (or pass -d DEV)");
        return ExitCode::SUCCESS;
    }
    match parse(&args).and_then(|o| run(&o)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("ops_bench: {err}");
            ExitCode::FAILURE
        }
    }
}

/// `-c`: a listener and a client resolved on `ip` (the client's device
/// is the address's).
fn cm_start<'ch>(ch: &'ch [EventChannel; 2], ip: &str) -> Result<[CmId<'ch>; 2], String> {
    let addr: SocketAddr = format!("{ip}:7471").parse().map_err(e("address"))?;
    let listener = CmId::create(&ch[1], PortSpace::Tcp).map_err(e("rdma_create_id"))?;
    listener.bind_addr(&addr).map_err(e("rdma_bind_addr"))?;
    listener.listen(1).map_err(e("rdma_listen"))?;
    let client = CmId::create(&ch[0], PortSpace::Tcp).map_err(e("rdma_create_id"))?;
    client.resolve_addr(None, &addr, 2000).map_err(e("rdma_resolve_addr"))?;
    client.wait(EventKind::AddrResolved, CM_MS).map_err(|w| format!("ADDR_RESOLVED: {}", w.error))?;
    client.resolve_route(2000).map_err(e("rdma_resolve_route"))?;
    client.wait(EventKind::RouteResolved, CM_MS).map_err(|w| format!("ROUTE_RESOLVED: {}", w.error))?;
    Ok([listener, client])
}

/// `-c`: connects `a` (the client's QP) and the QP `make_b` makes for the
/// request; returns both in RTS and the accepted id.
fn cm_connect<'ch, 'a>(
    ch: &'ch [EventChannel; 2],
    client: &CmId<'ch>,
    a: RcQp<'a, Reset>,
    make_b: impl FnOnce() -> Result<RcQp<'a, Reset>, String>,
) -> Result<(RcQp<'a, Rts>, RcQp<'a, Rts>, CmId<'ch>), String> {
    let param = ConnParam { retry_count: 7, rnr_retry_count: 7, ..ConnParam::default() };
    let a = client.init_qp(a).map_err(|t| format!("rdma_init_qp_attr: {}", t.error))?;
    client.connect(&a, &param).map_err(e("rdma_connect"))?;
    let mut req = ch[1].get_event_timeout(CM_MS).map_err(e("rdma_get_cm_event"))?.ok_or("no connect request")?;
    let server = req.take_request().ok_or("no connect request")?;
    drop(req);
    let b = server.init_qp(make_b()?).map_err(|t| format!("rdma_init_qp_attr: {}", t.error))?;
    let b = server.accept(b, &param).map_err(|t| format!("rdma_accept: {}", t.error))?;
    let ev = ch[0].get_event_timeout(CM_MS).map_err(e("rdma_get_cm_event"))?.ok_or("no answer to rdma_connect")?;
    let a = client.establish(a, &ev).map_err(|t| format!("rdma_connect: {}", t.error))?;
    server.wait(EventKind::Established, CM_MS).map_err(|w| format!("ESTABLISHED: {}", w.error))?;
    Ok((a, b, server))
}

/// Without `-c`: A and B connected to each other by the transitions (rxe).
fn connect_by_hand<'a>(o: &Opts, ctx: &Context, a: RcQp<'a, Reset>, b: RcQp<'a, Reset>) -> Result<(RcQp<'a, Rts>, RcQp<'a, Rts>), String> {
    let gid = ctx.query_gid(1, o.gid_index).map_err(e("ibv_query_gid"))?;
    let init = ConnInitAttr { pkey_index: 0, port_num: 1, access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ };
    let a = a.into_init(init).map_err(|t| format!("INIT: {}", t.error))?;
    let b = b.into_init(init).map_err(|t| format!("INIT: {}", t.error))?;
    let rtr = |dest: u32| {
        let grh = GlobalRoute { dgid: gid, flow_label: 0, sgid_index: o.gid_index as u8, hop_limit: 1, traffic_class: 0 };
        RcRtrAttr {
            path_mtu: Mtu::Mtu1024,
            dest_qp_num: dest,
            rq_psn: 0x1234,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ah_attr: AhAttr { grh: Some(grh), port_num: 1, ..Default::default() },
        }
    };
    let rts = RcRtsAttr { sq_psn: 0x1234, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
    let (an, bn) = (a.qp_num(), b.qp_num());
    let a = a.into_rtr(rtr(bn)).map_err(|t| format!("RTR: {}", t.error))?;
    let a = a.into_rts(rts).map_err(|t| format!("RTS: {}", t.error))?;
    let b = b.into_rtr(rtr(an)).map_err(|t| format!("RTR: {}", t.error))?;
    let b = b.into_rts(rts).map_err(|t| format!("RTS: {}", t.error))?;
    Ok((a, b))
}

fn run(o: &Opts) -> Result<(), String> {
    // (the event channels only with -c: a device without rdma_cm, like the
    // simulated ConnectX, has none)
    let ch = match &o.cm_ip {
        Some(_) => Some([EventChannel::create().map_err(e("rdma_create_event_channel"))?, EventChannel::create().map_err(e("rdma_create_event_channel"))?]),
        None => None,
    };
    let cm = match (&o.cm_ip, &ch) {
        (Some(ip), Some(ch)) => Some(cm_start(ch, ip)?),
        _ => None,
    };
    let ctx = match &cm {
        Some([_, client]) => client.open_device().map_err(e("rdma_cm_id.verbs"))?,
        None => {
            let list = devices().map_err(e("ibv_get_device_list"))?;
            Context::open(list.by_name(&o.dev).map_err(e("device"))?).map_err(e("ibv_open_device"))?
        }
    };
    let pd = Pd::alloc(&ctx).map_err(e("ibv_alloc_pd"))?;
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
    let mut mr = Mr::alloc(&pd, 1 << 16, access).map_err(e("ibv_reg_mr"))?;
    mr.fill(0, 1 << 16, 0x5a).map_err(e("fill"))?;
    let scq = Cq::create(&ctx, 512, None, 0).map_err(e("ibv_create_cq"))?; // A's send CQ
    let rcq = Cq::create(&ctx, 512, None, 0).map_err(e("ibv_create_cq"))?; // B's recv CQ
    let ocq = Cq::create(&ctx, 512, None, 0).map_err(e("ibv_create_cq"))?; // the other two
    let cap = QpCap { max_send_wr: SQ_DEPTH, max_recv_wr: RQ_DEPTH, max_send_sge: 1, max_recv_sge: 1, max_inline_data: o.inline };
    let create = |send_cq, recv_cq| {
        RcQp::create(&pd, QpInitAttr { send_cq, recv_cq, srq: None, cap, sq_sig_all: false }).map_err(e("ibv_create_qp"))
    };
    // (-c: the accepted id keeps B's connection for the run)
    let (mut a, mut b, _accepted) = match &cm {
        Some([_, client]) => {
            let ch = ch.as_ref().ok_or("no event channels")?;
            let (a, b, id) = cm_connect(ch, client, create(&scq, &ocq)?, || create(&ocq, &rcq))?;
            (a, b, Some(id))
        }
        None => {
            let (a, b) = connect_by_hand(o, &ctx, create(&scq, &ocq)?, create(&ocq, &rcq)?)?;
            (a, b, None)
        }
    };


    let (lkey, rkey, base) = (mr.lkey(), mr.rkey(), mr.addr());
    let sge = [Sge { addr: base, length: MSG, lkey }];
    let write = SendOp::RdmaWrite { remote_addr: base + 4096, rkey };
    let mut wr = [SendWr { wr_id: 0, payload: Payload::Sges(&sge), op: write, flags: SendFlags::empty(), ud: None }];

    // post_send: 8-byte RDMA WRITEs, every SIGNAL_EVERY-th signaled and waited for.
    let mut ns = 0u128;
    for i in 0..o.iters {
        wr[0].wr_id = i;
        let signaled = i % SIGNAL_EVERY == SIGNAL_EVERY - 1;
        wr[0].flags = if signaled { SendFlags::SIGNALED } else { SendFlags::empty() };
        let t = Instant::now();
        bench_post_send(&mut a, &wr).map_err(pe("ibv_post_send"))?;
        ns += t.elapsed().as_nanos();
        if signaled {
            drain(&scq, 1)?;
        }
    }
    wr[0].flags = SendFlags::SIGNALED; // the tail, so that the SQ is empty again
    a.post_send(&wr).map_err(pe("ibv_post_send"))?;
    drain(&scq, 1)?;
    report("post_send", o.iters, o.iters, ns);

    // post_send_inline: the same WRITEs with the 8 bytes copied into the WQE.
    if o.inline >= MSG {
        let data = [0x5au8; MSG as usize];
        let mut iwr = [SendWr { wr_id: 0, payload: Payload::Inline(&data), op: write, flags: SendFlags::empty(), ud: None }];
        let mut ns = 0u128;
        for i in 0..o.iters {
            iwr[0].wr_id = i;
            let signaled = i % SIGNAL_EVERY == SIGNAL_EVERY - 1;
            iwr[0].flags = if signaled { SendFlags::SIGNALED } else { SendFlags::empty() };
            let t = Instant::now();
            bench_post_send_inline(&iwr, &mut a).map_err(pe("ibv_post_send inline"))?;
            ns += t.elapsed().as_nanos();
            if signaled {
                drain(&scq, 1)?;
            }
        }
        iwr[0].flags = SendFlags::SIGNALED;
        a.post_send(&iwr).map_err(pe("ibv_post_send inline"))?;
        drain(&scq, 1)?;
        report("post_send_inline", o.iters, o.iters, ns);
    }

    // post_recv: fill B's RQ one WR at a time, then consume with SENDs from A.
    let rsge = [Sge { addr: base + 8192, length: MSG, lkey }];
    let mut rwr = [RecvWr { wr_id: 0, sg_list: &rsge }];
    let mut swr = [SendWr { wr_id: 0, payload: Payload::Sges(&sge), op: SendOp::Send, flags: SendFlags::empty(), ud: None }];
    let (mut done, mut ns) = (0u64, 0u128);
    while done < o.iters {
        let chunk = (o.iters - done).min(u64::from(RQ_DEPTH / 2));
        for i in 0..chunk {
            rwr[0].wr_id = done + i;
            let t = Instant::now();
            bench_post_recv(&mut b, &rwr).map_err(pe("ibv_post_recv"))?;
            ns += t.elapsed().as_nanos();
        }
        for i in 0..chunk {
            swr[0].wr_id = i;
            let signaled = i % SIGNAL_EVERY == SIGNAL_EVERY - 1 || i == chunk - 1;
            swr[0].flags = if signaled { SendFlags::SIGNALED } else { SendFlags::empty() };
            a.post_send(&swr).map_err(pe("ibv_post_send SEND"))?;
            if signaled {
                drain(&scq, 1)?;
            }
        }
        drain(&rcq, chunk as usize)?;
        done += chunk;
    }
    report("post_recv", o.iters, o.iters, ns);

    // poll_cq: `batch` signaled WRITEs complete, then one poll takes them all.
    let mut wc = [Wc::ZERO; MAX_BATCH];
    let (mut short, mut wait_us) = (0u64, 2000u64);
    wr[0].flags = SendFlags::SIGNALED;
    for in_place in [false, true] {
        let (mut got, mut ns) = (0u64, 0u128);
        for _ in 0..o.rounds {
            for i in 0..o.batch {
                wr[0].wr_id = i as u64;
                a.post_send(&wr).map_err(pe("ibv_post_send"))?;
            }
            std::thread::sleep(core::time::Duration::from_micros(wait_us)); // let the device finish
            let t = Instant::now();
            let k = if in_place {
                let (k, sum, failed) = bench_poll_with(&scq, o.batch).map_err(e("ibv_poll_cq"))?;
                ns += t.elapsed().as_nanos();
                if failed > 0 {
                    return Err(format!("{failed} failed completions"));
                }
                // Completions come in posting order: wr_ids 0..k.
                let want = (k as u64) * (k as u64).saturating_sub(1) / 2;
                if sum != want {
                    return Err(format!("poll_with: wr_ids of {k} completions sum to {sum}, not {want}"));
                }
                k
            } else {
                let k = bench_poll_cq(&scq, &mut wc[..o.batch]).map_err(e("ibv_poll_cq"))?;
                ns += t.elapsed().as_nanos();
                if let Some(w) = wc[..k].iter().find(|w| !w.status().is_success()) {
                    return Err(format!("bad completion: {:?} wr_id {}", w.status(), w.wr_id()));
                }
                // Completions come in posting order: wr_ids 0..k.
                if let Some((i, w)) = wc[..k].iter().enumerate().find(|(i, w)| w.wr_id() != *i as u64) {
                    return Err(format!("completion {i} has wr_id {}", w.wr_id()));
                }
                k
            };
            got += k as u64;
            if k < o.batch {
                short += 1;
                wait_us *= 2;
                drain(&scq, o.batch - k)?;
            }
        }
        report(if in_place { "poll_with" } else { "poll_cq" }, o.rounds, got, ns);
    }
    println!("ops_bench impl=ours op=poll_cq_batch batch={} short_batches={short}", o.batch);

    // poll_cq on an empty CQ
    let (mut nonzero, mut ns) = (0u64, 0u128);
    for _ in 0..o.iters {
        let t = Instant::now();
        let k = bench_poll_cq_empty(&mut wc[..o.batch], &rcq).map_err(e("ibv_poll_cq"))?;
        ns += t.elapsed().as_nanos();
        nonzero += u64::from(k != 0);
    }
    report("poll_cq_empty", o.iters, 0, ns);
    if short > 0 {
        eprintln!("ops_bench: warning: {short} short poll batches (the device was slower than the wait)");
    }
    if nonzero > 0 {
        return Err(format!("{nonzero} polls of the empty CQ returned completions"));
    }
    Ok(())
}
