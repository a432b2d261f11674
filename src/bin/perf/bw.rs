//! The bandwidth workloads: the client keeps up to `tx_depth` WRs per QP
//! outstanding (SEND, RDMA WRITE or RDMA READ), posted in lists of
//! `post_list`, one of every `cq_mod` signaled (`cq_mod` = the post list
//! length, else 100 as perftest); the rate is messages / (first post ..
//! last completion). For SEND the server reposts a receive per completion
//! and reports what it received; for WRITE and READ its CPU does nothing.
//! On iWARP send_bw adds perftest's receive credits (`credit`): the server
//! writes its receive count back, the client stays within `rx_depth` of it.

use std::time::Instant;

use verbs::qp::{RcQp, Rts};
use verbs::wr::{Payload, RecvWr, SendFlags, SendOp, SendWr, Sge};
use verbs::{Cq, Wc};

use super::args::{Opts, Test};
use super::credit::Credits;
use super::dest::Dest;
use super::lat::{check, TIMEOUT};
use super::run::s;

/// Returns (messages, nanoseconds from the first post to the last completion).
pub(crate) fn client(
    o: &Opts,
    qps: &mut [RcQp<'_, Rts>],
    send_cq: &Cq<'_>,
    ssges: &[[Sge; 1]],
    remote: &[Dest],
    mut credits: Option<&mut Credits<'_>>,
) -> Result<(u64, u64), String> {
    let (iters, l, depth) = (u64::from(o.iters), o.post_list as usize, u64::from(o.tx_depth));
    let cq_mod = if l > 1 { l as u64 } else { 100.min(depth) };
    let mut lists: Vec<Vec<SendWr<'_>>> = (0..qps.len())
        .map(|q| {
            let (remote_addr, rkey) = (remote[q].vaddr, remote[q].rkey);
            let op = match o.test {
                Test::WriteBw => SendOp::RdmaWrite { remote_addr, rkey },
                Test::ReadBw => SendOp::RdmaRead { remote_addr, rkey },
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
                if let Some(c) = credits.as_deref_mut() {
                    if !c.may_send(q, scnt[q], n as u64)? {
                        break;
                    }
                }
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

/// `send_bw`'s server. Returns (messages, nanoseconds from the first
/// receive completion to the last).
pub(crate) fn send_server(
    o: &Opts,
    qps: &mut [RcQp<'_, Rts>],
    recv_cq: &Cq<'_>,
    rsges: &[[Sge; 1]],
    mut credits: Option<(&mut Credits<'_>, &Cq<'_>, &[Dest])>,
) -> Result<(u64, u64), String> {
    let iters = u64::from(o.iters);
    let mut posted = vec![u64::from(o.rx_depth); qps.len()];
    let mut rcnt = vec![0u64; qps.len()];
    let total = iters * qps.len() as u64;
    let (mut got, t0) = (0u64, Instant::now());
    let mut first: Option<Instant> = None;
    let mut wc = [Wc::ZERO; 16];
    let mut spins = 0u32;
    while got < total {
        let n = recv_cq.poll(&mut wc).map_err(s("ibv_poll_cq"))?;
        if n > 0 && first.is_none() {
            first = Some(Instant::now());
        }
        for w in &wc[..n] {
            check(w)?;
            let q = w.wr_id() as usize;
            if posted[q] < iters {
                qps[q]
                    .post_recv(&[RecvWr { wr_id: q as u64, sg_list: &rsges[q] }])
                    .map_err(|e| format!("ibv_post_recv: {}", e.error))?;
                posted[q] += 1;
            }
            rcnt[q] += 1;
            if let Some((c, send_cq, peer)) = credits.as_mut() {
                c.received(q, rcnt[q], &mut qps[q], send_cq, &peer[q])?;
            }
        }
        if let Some((c, send_cq, _)) = credits.as_mut() {
            c.reap(send_cq)?;
        }
        got += n as u64;
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) && t0.elapsed() > TIMEOUT * 2 {
            return Err(format!("timed out: {got} of {total} messages received"));
        }
    }
    let ns = first.map_or(0, |f| f.elapsed().as_nanos() as u64);
    // every credit WRITE completes before the report (perftest's
    // clean_scq_credit)
    if let Some((c, send_cq, _)) = credits {
        while !c.all_done() {
            c.reap(send_cq)?;
            spins = spins.wrapping_add(1);
            if spins.is_multiple_of(4096) && t0.elapsed() > TIMEOUT * 2 {
                return Err("timed out waiting for the credit WRITEs to complete".into());
            }
        }
    }
    Ok((total, ns))
}
