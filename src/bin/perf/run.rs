//! The four workloads, doing per iteration what perftest does:
//!
//! * `send_lat`: the client posts a SEND and waits for its completion and
//!   for the server's SEND (a receive completion, then one receive is
//!   reposted); the server mirrors it. Round trip = time between
//!   successive posts (on either side; the harness reads the client's).
//! * `write_lat`: each side RDMA-WRITEs `size` bytes whose last byte is the
//!   iteration number into the other's buffer, and polls the last byte of
//!   its own buffer for the peer's write.
//! * `send_bw` / `write_bw`: the client keeps up to `tx_depth` WRs per QP
//!   outstanding, posted in lists of `post_list`, one of every `cq_mod`
//!   signaled (`cq_mod` = the post list length, else 100 as perftest);
//!   the rate is messages / (first post .. last completion). For SEND the
//!   server reposts a receive per completion.
//!
//! One MR covers every QP's buffer: `[send area | receive area]` per QP.

use core::time::Duration;
use std::time::Instant;

use verbs::discovery::devices;
use verbs::qp::{AhAttr, ConnInitAttr, GlobalRoute, Mtu, QpCap, QpInitAttr, RcQp, RcRtrAttr, RcRtsAttr, Rts};
use verbs::wr::{Payload, RecvWr, SendFlags, SendOp, SendWr, Sge};
use verbs::{AccessFlags, Context, Cq, Mr, Pd, Wc};

use super::args::{Opts, Test};
use super::exchange::{Oob, QpInfo};
use super::report;

const TIMEOUT: Duration = Duration::from_secs(60);

fn s<E: core::fmt::Display>(what: &'static str) -> impl Fn(E) -> String {
    move |e| format!("{what}: {e}")
}

/// Polls `cq` until `want` completions came, checking each; returns the
/// last one's wr_id.
fn wait_cq(cq: &Cq<'_>, want: usize, wc: &mut [Wc]) -> Result<u64, String> {
    let (mut got, mut last, t0) = (0, 0, Instant::now());
    let mut spins = 0u32;
    while got < want {
        let room = (want - got).min(wc.len());
        let n = cq.poll(&mut wc[..room]).map_err(s("ibv_poll_cq"))?;
        for w in &wc[..n] {
            check(w)?;
            last = w.wr_id();
        }
        got += n;
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) && t0.elapsed() > TIMEOUT {
            return Err(format!("timed out waiting for {want} completions (got {got})"));
        }
    }
    Ok(last)
}

fn check(w: &Wc) -> Result<(), String> {
    if w.status().is_success() {
        Ok(())
    } else {
        Err(format!("completion error: {:?} (status {}, wr_id {})", w.status(), w.status_raw(), w.wr_id()))
    }
}

pub(crate) fn run(o: &Opts) -> Result<(), String> {
    let list = devices().map_err(s("ibv_get_device_list"))?;
    let dev = match &o.dev {
        Some(n) => list.by_name(n).map_err(s("device"))?,
        None => list.iter().next().ok_or("no RDMA devices found")?,
    };
    let ctx = Context::open(dev).map_err(s("ibv_open_device"))?;
    let gid = ctx.query_gid(o.ib_port, o.gid_index).map_err(s("ibv_query_gid"))?;
    let pd = Pd::alloc(&ctx).map_err(s("ibv_alloc_pd"))?;
    let nq = o.qps as usize;
    let slot = (o.size as usize).max(64).next_multiple_of(64);
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
    let mut mr = Mr::alloc(&pd, nq * 2 * slot, access).map_err(s("ibv_reg_mr"))?;
    let send_cq = Cq::create(&ctx, o.tx_depth * o.qps + 16, None, 0).map_err(s("ibv_create_cq"))?;
    let recv_cq = Cq::create(&ctx, o.rx_depth * o.qps + 16, None, 0).map_err(s("ibv_create_cq"))?;
    let cap = QpCap {
        max_send_wr: o.tx_depth,
        max_recv_wr: if o.test.is_send() { o.rx_depth } else { 1 },
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let init = ConnInitAttr { pkey_index: 0, port_num: o.ib_port, access };
    let (lkey, base) = (mr.lkey(), mr.addr());
    let send_area = |q: usize| base + (q * 2 * slot) as u64;
    let recv_area = |q: usize| base + (q * 2 * slot + slot) as u64;
    let rsges: Vec<[Sge; 1]> = (0..nq).map(|q| [Sge { addr: recv_area(q), length: o.size, lkey }]).collect();
    let ssges: Vec<[Sge; 1]> = (0..nq).map(|q| [Sge { addr: send_area(q), length: o.size, lkey }]).collect();

    let client = o.server.is_some();
    // receives are needed by both sides of send_lat and by the server of send_bw
    let prepost = match o.test {
        Test::SendLat => o.rx_depth.min(o.iters),
        Test::SendBw if !client => o.rx_depth,
        _ => 0,
    };
    let mut qps = Vec::with_capacity(nq);
    let mut local = Vec::with_capacity(nq);
    for (q, rsge) in rsges.iter().enumerate() {
        let qp = RcQp::create(&pd, QpInitAttr { send_cq: &send_cq, recv_cq: &recv_cq, srq: None, cap, sq_sig_all: false })
            .map_err(s("ibv_create_qp"))?;
        let mut qp = qp.into_init(init).map_err(|e| format!("modify QP to INIT: {}", e.error))?;
        for _ in 0..prepost {
            qp.post_recv(&[RecvWr { wr_id: q as u64, sg_list: rsge }]).map_err(|e| format!("ibv_post_recv: {}", e.error))?;
        }
        let psn = (std::process::id().wrapping_mul(2_654_435_761).wrapping_add(q as u32 * 7919)) & 0xff_ffff;
        local.push(QpInfo { qpn: qp.qp_num(), psn, rkey: mr.rkey(), vaddr: recv_area(q), gid });
        qps.push(qp);
    }

    let mut oob = Oob::connect(o)?;
    let remote = oob.exchange(o, &local)?;
    let mut out = report::banner(o, dev.name());
    for (l, r) in local.iter().zip(&remote) {
        out.push_str(&l.describe("local"));
        out.push_str(&r.describe("remote"));
    }
    out.push_str(report::RULE);
    out.push('\n');
    print!("{out}");
    let mut rts: Vec<RcQp<'_, Rts>> = Vec::with_capacity(nq);
    for ((qp, l), r) in qps.into_iter().zip(&local).zip(&remote) {
        let grh = GlobalRoute { dgid: r.gid, flow_label: 0, sgid_index: o.gid_index as u8, hop_limit: 1, traffic_class: 0 };
        let rtr = RcRtrAttr {
            path_mtu: Mtu::Mtu1024,
            dest_qp_num: r.qpn,
            rq_psn: r.psn,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ah_attr: AhAttr { grh: Some(grh), port_num: o.ib_port, ..Default::default() },
        };
        let qp = qp.into_rtr(rtr).map_err(|e| format!("modify QP to RTR: {}", e.error))?;
        let attr = RcRtsAttr { sq_psn: l.psn, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
        rts.push(qp.into_rts(attr).map_err(|e| format!("modify QP to RTS: {}", e.error))?);
    }
    oob.sync()?;

    let size = o.size as usize;
    let result = match o.test {
        Test::SendLat => send_lat(o, &mut rts[0], &send_cq, &recv_cq, &ssges[0], &rsges[0]).map(Some),
        Test::WriteLat => {
            let r = (remote[0].vaddr, remote[0].rkey);
            let (sa, ra) = ((send_area(0) - base) as usize + size - 1, (recv_area(0) - base) as usize + size - 1);
            write_lat(o, &mut rts[0], &send_cq, &mut mr, &ssges[0], r, (sa, ra)).map(Some)
        }
        Test::SendBw | Test::WriteBw if client => {
            bw_client(o, &mut rts, &send_cq, &ssges, &remote).map(|(msgs, ns)| Some(report::bw_table(o, msgs, ns)))
        }
        Test::SendBw => send_bw_server(o, &mut rts, &recv_cq, &rsges).map(|()| None),
        Test::WriteBw => Ok(None),
    }?;
    oob.sync()?;
    match result {
        Some(table) => print!("{table}"),
        None => println!(" verbs-perf: server side done\n{}", report::RULE),
    }
    Ok(())
}

fn lat_result(o: &Opts, ts: &[Instant]) -> Result<String, String> {
    let mut rtt: Vec<u64> = ts.windows(2).map(|w| (w[1] - w[0]).as_nanos() as u64).collect();
    let stats = report::lat_stats(&mut rtt).ok_or("no samples")?;
    Ok(report::lat_table(o, &stats))
}

fn send_lat(
    o: &Opts,
    qp: &mut RcQp<'_, Rts>,
    send_cq: &Cq<'_>,
    recv_cq: &Cq<'_>,
    ssge: &[Sge; 1],
    rsge: &[Sge; 1],
) -> Result<String, String> {
    let client = o.server.is_some();
    let mut wc = [Wc::ZERO; 4];
    let wr = [SendWr { wr_id: 0, payload: Payload::Sges(ssge), op: SendOp::Send, flags: SendFlags::SIGNALED, ud: None }];
    let rwr = [RecvWr { wr_id: 0, sg_list: rsge }];
    let mut ts = Vec::with_capacity(o.iters as usize + 1);
    let mut posted = o.rx_depth.min(o.iters);
    for _ in 0..o.iters {
        if client {
            ts.push(Instant::now());
            qp.post_send(&wr).map_err(|e| format!("ibv_post_send: {}", e.error))?;
            wait_cq(send_cq, 1, &mut wc)?;
        }
        wait_cq(recv_cq, 1, &mut wc)?;
        if posted < o.iters {
            qp.post_recv(&rwr).map_err(|e| format!("ibv_post_recv: {}", e.error))?;
            posted += 1;
        }
        if !client {
            ts.push(Instant::now());
            qp.post_send(&wr).map_err(|e| format!("ibv_post_send: {}", e.error))?;
            wait_cq(send_cq, 1, &mut wc)?;
        }
    }
    ts.push(Instant::now());
    lat_result(o, &ts)
}

fn write_lat(
    o: &Opts,
    qp: &mut RcQp<'_, Rts>,
    send_cq: &Cq<'_>,
    mr: &mut Mr<'_>,
    ssge: &[Sge; 1],
    (raddr, rkey): (u64, u32),
    (send_last, recv_last): (usize, usize),
) -> Result<String, String> {
    let client = o.server.is_some();
    let mut wc = [Wc::ZERO; 4];
    let op = SendOp::RdmaWrite { remote_addr: raddr, rkey };
    let wr = [SendWr { wr_id: 0, payload: Payload::Sges(ssge), op, flags: SendFlags::SIGNALED, ud: None }];
    let mut ts = Vec::with_capacity(o.iters as usize + 1);
    let mut byte = [0u8; 1];
    for i in 0..o.iters {
        let tag = (i % 255 + 1) as u8;
        let wait_peer = |mr: &Mr<'_>, byte: &mut [u8; 1]| -> Result<(), String> {
            let t0 = Instant::now();
            let mut spins = 0u32;
            loop {
                mr.read_at(recv_last, byte).map_err(s("read"))?;
                if byte[0] == tag {
                    return Ok(());
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(4096) && t0.elapsed() > TIMEOUT {
                    return Err(format!("timed out waiting for the peer's write #{i}"));
                }
            }
        };
        if client {
            ts.push(Instant::now());
        } else {
            wait_peer(mr, &mut byte)?;
            ts.push(Instant::now());
        }
        mr.write_at(send_last, &[tag]).map_err(s("write"))?;
        qp.post_send(&wr).map_err(|e| format!("ibv_post_send: {}", e.error))?;
        wait_cq(send_cq, 1, &mut wc)?;
        if client {
            wait_peer(mr, &mut byte)?;
        }
    }
    ts.push(Instant::now());
    lat_result(o, &ts)
}

/// Returns (messages, nanoseconds from the first post to the last completion).
fn bw_client(
    o: &Opts,
    qps: &mut [RcQp<'_, Rts>],
    send_cq: &Cq<'_>,
    ssges: &[[Sge; 1]],
    remote: &[QpInfo],
) -> Result<(u64, u64), String> {
    let (iters, l, depth) = (u64::from(o.iters), o.post_list as usize, u64::from(o.tx_depth));
    let cq_mod = if l > 1 { l as u64 } else { 100.min(depth) };
    let mut lists: Vec<Vec<SendWr<'_>>> = (0..qps.len())
        .map(|q| {
            let op = match o.test {
                Test::WriteBw => SendOp::RdmaWrite { remote_addr: remote[q].vaddr, rkey: remote[q].rkey },
                _ => SendOp::Send,
            };
            vec![SendWr { wr_id: 0, payload: Payload::Sges(&ssges[q]), op, flags: SendFlags::empty(), ud: None }; l]
        })
        .collect();
    let (mut scnt, mut ccnt) = (vec![0u64; qps.len()], vec![0u64; qps.len()]);
    let mut wc = [Wc::ZERO; 16];
    let total = iters * qps.len() as u64;
    let t0 = Instant::now();
    let mut spins = 0u32;
    loop {
        for (q, qp) in qps.iter_mut().enumerate() {
            while scnt[q] < iters && scnt[q] + l as u64 - ccnt[q] <= depth {
                let n = (l as u64).min(iters - scnt[q]) as usize;
                for (j, wr) in lists[q][..n].iter_mut().enumerate() {
                    let c = scnt[q] + j as u64 + 1;
                    wr.wr_id = ((q as u64) << 32) | c;
                    wr.flags = if c.is_multiple_of(cq_mod) || c == iters { SendFlags::SIGNALED } else { SendFlags::empty() };
                }
                qp.post_send(&lists[q][..n]).map_err(|e| format!("ibv_post_send: {}", e.error))?;
                scnt[q] += n as u64;
            }
        }
        let n = send_cq.poll(&mut wc).map_err(s("ibv_poll_cq"))?;
        for w in &wc[..n] {
            check(w)?;
            ccnt[(w.wr_id() >> 32) as usize] = w.wr_id() & 0xffff_ffff;
        }
        if ccnt.iter().sum::<u64>() == total {
            break;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) && t0.elapsed() > TIMEOUT * 2 {
            return Err(format!("timed out: {} of {total} completions", ccnt.iter().sum::<u64>()));
        }
    }
    Ok((total, t0.elapsed().as_nanos() as u64))
}

fn send_bw_server(o: &Opts, qps: &mut [RcQp<'_, Rts>], recv_cq: &Cq<'_>, rsges: &[[Sge; 1]]) -> Result<(), String> {
    let iters = u64::from(o.iters);
    let mut posted = vec![u64::from(o.rx_depth); qps.len()];
    let mut rcnt = vec![0u64; qps.len()];
    let total = iters * qps.len() as u64;
    let (mut got, t0) = (0u64, Instant::now());
    let mut wc = [Wc::ZERO; 16];
    let mut spins = 0u32;
    while got < total {
        let n = recv_cq.poll(&mut wc).map_err(s("ibv_poll_cq"))?;
        for w in &wc[..n] {
            check(w)?;
            let q = w.wr_id() as usize;
            rcnt[q] += 1;
            if posted[q] < iters {
                qps[q]
                    .post_recv(&[RecvWr { wr_id: q as u64, sg_list: &rsges[q] }])
                    .map_err(|e| format!("ibv_post_recv: {}", e.error))?;
                posted[q] += 1;
            }
        }
        got += n as u64;
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) && t0.elapsed() > TIMEOUT * 2 {
            return Err(format!("timed out: {got} of {total} messages received"));
        }
    }
    Ok(())
}
