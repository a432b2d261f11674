//! One test from start to end, in perftest's order (so a perftest peer
//! finds every message where it expects it):
//!
//! 1. TCP connection; version, page and cache line sizes, MTU (`exchange`);
//! 2. resources: one MR over `[send area | remote area]` per QP, each area
//!    `max(size, page)` bytes (a perftest bandwidth client walks the peer's
//!    area a page wide), two CQs, the QPs in INIT, receives for SEND tests;
//! 3. handshakes (H = each side sends its QP 0 address, Hn = one per QP):
//!    `write_lat`, `read_lat`, `atomic_lat` start with an H; then Hn, the
//!    QPs to RTR and RTS, an H for SEND tests; our addresses printed, Hn
//!    with the peer's printed, an H as the start barrier (send_bw on
//!    iWARP: every Hn carries the receive-credit word's RKey and VAddr,
//!    see `credit`);
//! 4. the workload (`lat`, `bw`) and the end, which differs per test:
//!    * `send_lat`, `send_bw`: both sides work and report; close;
//!    * `write_lat`: both sides work and report; no close;
//!    * `read_lat`, `atomic_lat`: the server closes at once (waiting for the
//!      client's close); the client works, reports, closes;
//!    * `write_bw`, `read_bw`: the client works and reports, then H and
//!      sends its result; the server does H, receives and prints it; close.

use verbs::discovery::{devices, TransportType};
use verbs::cm::ConnParam;
use verbs::qp::{AhAttr, ConnInitAttr, GlobalRoute, Init, Mtu, QpCap, QpInitAttr, RcQp, RcRtrAttr, RcRtsAttr, Rts};
use verbs::wr::Sge;
use verbs::{AccessFlags, Context, Cq, Mr, Pd};

use super::args::{Opts, Test};
use super::cm_link::TestIds;
use super::credit::Credits;
use super::dest::Dest;
use super::exchange::{self, Oob};
use super::{bw, lat, report};

pub(crate) fn s<E: core::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: {e}")
}

/// The page size perftest announces (its `cycle_buffer`); the peer may
/// raise it.
const PAGE: u32 = 4096;
const CACHE_LINE: u32 = 64;

/// Ethernet link layer (`IBV_LINK_LAYER_ETHERNET`).
const ETHERNET: u8 = 2;

/// perftest's choice of GID when `-x` is not given: IPv4-mapped first,
/// then RoCE v2 over v1, then the lowest index.
fn best_gid(ctx: &Context, port: u8) -> Result<u32, String> {
    let mut table = [verbs::GidEntry::default(); 64];
    let n = ctx.query_gid_table(&mut table).map_err(s("ibv_query_gid_table"))?;
    let score = |e: &verbs::GidEntry| {
        let v4 = e.gid[..10].iter().all(|&b| b == 0) && e.gid[10] == 0xff && e.gid[11] == 0xff;
        u32::from(v4) * 2 + u32::from(e.gid_type == 2)
    };
    let mut best: Option<&verbs::GidEntry> = None;
    for e in table[..n].iter().filter(|e| e.port_num == u32::from(port)) {
        if best.is_none_or(|b| score(e) > score(b)) {
            best = Some(e);
        }
    }
    Ok(best.map_or(0, |e| e.gid_index))
}

/// A 24-bit PSN, random per run as perftest's `lrand48() & 0xffffff`.
fn random_psn(q: usize) -> u32 {
    use core::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(q);
    (h.finish() & 0xff_ffff) as u32
}

pub(crate) fn run(o: &Opts) -> Result<(), String> {
    let client = o.server.is_some();
    let mut oob = match &o.server {
        _ if o.rdma_cm => {
            if !client {
                println!(" Waiting for client rdma_cm QP to connect... (port {})", o.port);
            }
            Oob::rdma_cm(o.server.as_deref(), o.port)?
        }
        Some(host) => Oob::connect(host, o.port)?,
        None => {
            let l = exchange::listen(o.port)?;
            println!(" Waiting for client to connect... (port {})", o.port);
            Oob::accept(&l)?
        }
    };
    oob.versions()?;
    let (page, _) = oob.sys_data(PAGE, CACHE_LINE)?;

    // -R: the device the connection manager chose for the address.
    let opened;
    let ctx: &Context = match oob.cm_context() {
        Some(c) => c,
        None => {
            let list = devices().map_err(s("ibv_get_device_list"))?;
            let dev = match &o.dev {
                Some(n) => list.by_name(n).map_err(s("device"))?,
                None => list.iter().next().ok_or("no RDMA devices found")?,
            };
            opened = Context::open(dev).map_err(s("ibv_open_device"))?;
            &opened
        }
    };
    if let (Some(want), true) = (&o.dev, o.rdma_cm) {
        if want != ctx.name() {
            return Err(format!("-d {want}: the address is on {} (rdma_cm picks the device by address)", ctx.name()));
        }
    }
    let port = ctx.query_port(o.ib_port).map_err(s("ibv_query_port"))?;
    let gid_index = match o.gid_index {
        Some(g) => Some(g),
        None if port.link_layer == ETHERNET => Some(best_gid(ctx, o.ib_port)?),
        None => None,
    };
    oob.with_gid = gid_index.is_some();
    oob.gid_index = gid_index.unwrap_or(0);
    let gid = match gid_index {
        Some(g) => ctx.query_gid(o.ib_port, g).map_err(s("ibv_query_gid"))?,
        None => [0; 16],
    };
    let mtu_raw = oob.mtu(port.active_mtu as u8)?;
    let mtu = Mtu::from_raw(mtu_raw).ok_or_else(|| format!("port {} has no valid active MTU ({mtu_raw})", o.ib_port))?;
    let out_reads = match o.test.is_read_or_atomic() {
        false => 1,
        true => {
            let max = ctx.query_device().map_err(s("ibv_query_device"))?.base().max_qp_rd_atom;
            if o.outs == 0 || o.outs > max { max } else { o.outs }
        }
    };

    let attr = ctx.query_device().map_err(s("ibv_query_device"))?;
    let known = perftest_knows(attr.base().vendor_id, attr.base().vendor_part_id);
    if o.inline.is_some_and(|v| v > 0) && !known {
        println!("{}", report::RULE);
        eprintln!("Device not recognized to implement inline feature. Disabling it");
    }
    let inline = o.inline_size(known);
    // From here on `o.inline` is the size settled on (the latency loops read it).
    let resolved = Opts { inline: Some(inline), ..o.clone() };
    let o = &resolved;

    let pd = Pd::alloc(ctx).map_err(s("ibv_alloc_pd"))?;
    let nq = o.qps as usize;
    // perftest's send_bw on iWARP: receive credits (`credit`)
    let iwarp = devices().map_err(s("ibv_get_device_list"))?.by_name(ctx.name()).map_err(s("device"))?.transport() == TransportType::Iwarp;
    let mut credits = match o.test == Test::SendBw && iwarp {
        true => Some(Credits::new(&pd, nq, o.tx_depth, o.rx_depth)?),
        false => None,
    };
    let slot = (o.size.max(page) as usize).next_multiple_of(64);
    let mut access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
    if o.test == Test::AtomicLat {
        access |= AccessFlags::REMOTE_ATOMIC;
    }
    let mut mr = Mr::alloc(&pd, nq * 2 * slot, access).map_err(s("ibv_reg_mr"))?;
    let send_cq = Cq::create(ctx, o.tx_depth * o.qps + 16, None, 0).map_err(s("ibv_create_cq"))?;
    let recv_cq = Cq::create(ctx, o.rx_depth * o.qps + 16, None, 0).map_err(s("ibv_create_cq"))?;
    let cap = QpCap {
        max_send_wr: o.tx_depth,
        max_recv_wr: if o.test.is_send() { o.rx_depth } else { 1 },
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: inline,
    };
    let init = ConnInitAttr { pkey_index: 0, port_num: o.ib_port, access };
    let (lkey, base) = (mr.lkey(), mr.addr());
    let send_area = |q: usize| base + (q * 2 * slot) as u64;
    let remote_area = |q: usize| base + (q * 2 * slot + slot) as u64;
    let rsges: Vec<[Sge; 1]> = (0..nq).map(|q| [Sge { addr: remote_area(q), length: o.size, lkey }]).collect();
    let ssges: Vec<[Sge; 1]> = (0..nq).map(|q| [Sge { addr: send_area(q), length: o.size, lkey }]).collect();

    // receives: both sides of send_lat, the server of send_bw
    let prepost = match o.test {
        Test::SendLat => o.rx_depth.min(o.iters),
        Test::SendBw if !client => o.rx_depth,
        _ => 0,
    };
    let qp_attr = QpInitAttr { send_cq: &send_cq, recv_cq: &recv_cq, srq: None, cap, sq_sig_all: false };
    let prepost_on = |q: usize, qp: &mut RcQp<'_, Init>| -> Result<(), String> {
        for _ in 0..prepost {
            qp.post_recv(&[verbs::RecvWr { wr_id: q as u64, sg_list: &rsges[q] }])
                .map_err(|e| format!("ibv_post_recv: {}", e.error))?;
        }
        Ok(())
    };
    let mut qps = Vec::with_capacity(nq);
    let mut rts: Vec<RcQp<'_, Rts>> = Vec::with_capacity(nq);
    let mut cm_ids = None;
    if o.rdma_cm {
        // perftest's create_rdma_cm_connection: a handshake, the QPs
        // connected by the connection manager, a handshake.
        let mut ids = match client {
            true => TestIds::client()?,
            false => TestIds::listen(o.port, o.qps)?,
        };
        oob.hand_shake(&Dest::default())?;
        let reads = if o.test.is_read_or_atomic() { out_reads.min(255) as u8 } else { 0 };
        let param = ConnParam { responder_resources: reads, initiator_depth: reads, retry_count: 7, rnr_retry_count: 7, ..ConnParam::default() };
        let target = o.server.as_deref().map(|h| (h, o.port));
        rts = ids.connect_qps(nq, target, &param, |q, id| {
            let qp = RcQp::create(&pd, qp_attr).map_err(s("ibv_create_qp"))?;
            let mut qp = id.init_qp(qp).map_err(|e| format!("rdma_init_qp_attr: {}", e.error))?;
            prepost_on(q, &mut qp)?;
            Ok(qp)
        })?;
        oob.hand_shake(&Dest::default())?;
        cm_ids = Some(ids);
    } else {
        for q in 0..nq {
            let qp = RcQp::create(&pd, qp_attr).map_err(s("ibv_create_qp"))?;
            let mut qp = qp.into_init(init).map_err(|e| format!("modify QP to INIT: {}", e.error))?;
            prepost_on(q, &mut qp)?;
            qps.push(qp);
        }
    }
    let qpns: Vec<u32> = if o.rdma_cm { rts.iter().map(|q| q.qp_num()).collect() } else { qps.iter().map(|q| q.qp_num()).collect() };
    let mut local: Vec<Dest> = qpns
        .iter()
        .enumerate()
        .map(|(q, &qpn)| Dest { lid: port.lid, out_reads, qpn, psn: random_psn(q), rkey: mr.rkey(), vaddr: remote_area(q), gid, srqn: 0 })
        .collect();
    if let Some(c) = &credits {
        for (q, l) in local.iter_mut().enumerate() {
            c.announce(q, l);
        }
    }
    print!("{}", report::banner(o, ctx.name(), gid_index, 128 << mtu_raw, out_reads));

    let one_sided_lat = matches!(o.test, Test::WriteLat | Test::ReadLat | Test::AtomicLat);
    if one_sided_lat {
        oob.hand_shake(&local[0])?;
    }
    let mut remote = local.iter().map(|l| oob.hand_shake(l)).collect::<Result<Vec<_>, _>>()?;
    for ((qp, l), r) in qps.into_iter().zip(&local).zip(&remote) {
        let grh = gid_index.map(|g| GlobalRoute {
            dgid: r.gid,
            flow_label: 0,
            sgid_index: g as u8,
            hop_limit: 0xff,
            traffic_class: 0,
        });
        let rtr = RcRtrAttr {
            path_mtu: mtu,
            dest_qp_num: r.qpn,
            rq_psn: r.psn,
            max_dest_rd_atomic: l.out_reads.min(255) as u8,
            min_rnr_timer: 12,
            ah_attr: AhAttr { grh, dlid: r.lid, port_num: o.ib_port, ..Default::default() },
        };
        let qp = qp.into_rtr(rtr).map_err(|e| format!("modify QP to RTR: {}", e.error))?;
        let attr = RcRtsAttr { sq_psn: l.psn, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: r.out_reads.min(255) as u8 };
        rts.push(qp.into_rts(attr).map_err(|e| format!("modify QP to RTS: {}", e.error))?);
    }
    if o.test.is_send() {
        oob.hand_shake(&local[0])?;
    }
    // -R: perftest prints addresses as its exchange QP's (a SEND test's:
    // no OUT, RKey, VAddr).
    let shown = if o.rdma_cm { Test::SendLat } else { o.test };
    let mut out = String::new();
    for l in &local {
        out.push_str(&l.describe("local", shown, oob.with_gid));
    }
    for (l, r) in local.iter().zip(remote.iter_mut()) {
        *r = oob.hand_shake(l)?;
        out.push_str(&r.describe("remote", shown, oob.with_gid));
    }
    out.push_str(report::RULE);
    println!("{out}");
    oob.hand_shake(&local[0])?;

    let size = o.size as usize;
    let result = match o.test {
        Test::SendLat => {
            print!("{}", lat::send_lat(o, &mut rts[0], &send_cq, &recv_cq, &ssges[0], &rsges[0])?);
            oob.close(&local[0])
        }
        Test::WriteLat => {
            let r = (remote[0].vaddr, remote[0].rkey);
            let last = |a: u64| (a - base) as usize + size - 1;
            print!("{}", lat::write_lat(o, &mut rts[0], &send_cq, &mut mr, &ssges[0], r, (last(send_area(0)), last(remote_area(0))))?);
            Ok(())
        }
        Test::ReadLat | Test::AtomicLat if !client => {
            oob.close(&local[0])?;
            println!(" verbs-perf: server side done (the client reports)\n{}", report::RULE);
            Ok(())
        }
        Test::ReadLat | Test::AtomicLat => {
            print!("{}", lat::one_sided_lat(o, &mut rts[0], &send_cq, &ssges[0], &remote[0])?);
            oob.close(&local[0])
        }
        Test::SendBw | Test::WriteBw | Test::ReadBw if client => {
            let (msgs, ns) = bw::client(o, &mut rts, &send_cq, &ssges, &remote, credits.as_mut())?;
            let mine = report::bw_report(o, msgs, ns);
            print!("{}", report::bw_table(o, &mine, ns));
            if o.test != Test::SendBw {
                oob.hand_shake(&local[0])?;
                oob.bw_reports(&mine)?;
            }
            oob.close(&local[0])
        }
        Test::SendBw => {
            let (msgs, ns) = bw::send_server(o, &mut rts, &recv_cq, &rsges, credits.as_mut().map(|c| (c, &send_cq, &remote[..])))?;
            print!("{}", report::bw_table(o, &report::bw_report(o, msgs, ns), ns));
            oob.close(&local[0])
        }
        Test::WriteBw | Test::ReadBw => {
            oob.hand_shake(&local[0])?;
            let zero = exchange::BwReport { size: 0, iters: 0, bw_peak: 0.0, bw_avg: 0.0, msg_rate: 0.0 };
            let theirs = oob.bw_reports(&zero)?;
            print!("{}", report::bw_table(o, &theirs, 0));
            oob.close(&local[0])
        }
    };
    // -R: the client disconnects the test's connections (perftest's
    // rdma_cm_disconnect_nodes); the server's go with the process.
    if let Some(ids) = cm_ids {
        ids.disconnect();
    }
    result
}

/// Whether perftest's `ib_dev_name` knows the device (then its latency
/// tests send inline by default): Chelsio T4-T6, Intel, and the vendor
/// part ids of its table (Mellanox ConnectX-3 to -8, Connect-IB and
/// BlueField here). rxe (vendor 0xffffff) and siw are not in it: perftest
/// sends nothing inline on them (`Max inline data : 0[B]`).
fn perftest_knows(vendor_id: u32, part: u32) -> bool {
    match vendor_id {
        5157 => matches!(part >> 12, 4 | 5 | 6 | 10 | 11),
        0x8086 => true,
        _ => matches!(part, 4099 | 4100 | 4103 | 4104 | 4113 | 4115..=4131 | 41682 | 41686 | 41692 | 41695),
    }
}
