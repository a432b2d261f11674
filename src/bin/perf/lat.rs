//! The latency workloads, doing per iteration what perftest does (so
//! each pairs with perftest's twin):
//!
//! * `send_lat`: the client posts a SEND and waits for its completion and
//!   for the server's SEND (a receive completion, then one receive is
//!   reposted); the server mirrors it. Round trip = time between
//!   successive posts; reported halved.
//! * `write_lat`: each side RDMA-WRITEs `size` bytes whose last byte is
//!   the iteration number (1, 2, … modulo 256, as perftest's `char`
//!   counter) into the other's area, and polls the last byte of its own
//!   area for the peer's; the server writes first, the client waits
//!   first (as in perftest, unlike `send_lat`). Reported halved.
//! * `read_lat`, `atomic_lat`: the client alone posts one RDMA READ of
//!   `size` bytes (or one 8-byte atomic) at a time and waits for it; the
//!   server's CPU does nothing. Reported whole.

use core::time::Duration;

use verbs::qp::{RcQp, Rts};
use verbs::wr::{Payload, RecvWr, SendFlags, SendOp, SendWr, Sge};
use verbs::{Cq, Mr, Wc, WcStatus};

use super::args::{Atomic, Opts, Test};
use super::clock::{Spin, Stamps};
use super::dest::Dest;
use super::report;
use super::run::s;

pub(crate) const TIMEOUT: Duration = Duration::from_secs(60);

/// Polls `cq` until one completion came, and checks it. In place
/// (`poll_with`: only the status is read, nothing is copied out), inlined
/// into the loop; the clock is read only if the wait lasts (`Spin`).
#[inline(always)]
pub(crate) fn wait_one(cq: &Cq<'_>) -> Result<(), String> {
    let (mut spin, mut status) = (Spin::new(), 0);
    loop {
        match cq.poll_with(1, |w| status = w.status_raw()) {
            Ok(0) => {}
            // IBV_WC_SUCCESS
            Ok(_) if status == 0 => return Ok(()),
            Ok(_) => return Err(format!("completion error: {:?} (status {status})", WcStatus::from_raw(status))),
            Err(e) => return Err(format!("ibv_poll_cq: {e}")),
        }
        if spin.expired(TIMEOUT) {
            return Err("timed out waiting for a completion".into());
        }
    }
}

pub(crate) fn check(w: &Wc) -> Result<(), String> {
    if w.status().is_success() {
        Ok(())
    } else {
        Err(format!("completion error: {:?} (status {}, wr_id {})", w.status(), w.status_raw(), w.wr_id()))
    }
}

/// Posts `wr`, inlined into the loop (as perftest's `ibv_post_send`, an
/// inline function of verbs.h that calls the provider): no call of our
/// own around the library's, and the error is formatted out of line.
#[inline(always)]
fn post(qp: &mut RcQp<'_, Rts>, wr: &[SendWr<'_>]) -> Result<(), String> {
    qp.post_send(wr).map_err(|e| post_failed(&e.error))
}

#[cold]
#[inline(never)]
fn post_failed(e: &verbs::Error) -> String {
    format!("ibv_post_send: {e}")
}

fn result(o: &Opts, ts: &Stamps) -> Result<String, String> {
    let (mut rtt, ns_per_tick) = ts.deltas();
    let factor = if o.test.is_read_or_atomic() { 1.0 } else { 2.0 };
    let stats = report::lat_stats(&mut rtt, factor / ns_per_tick).ok_or("no samples")?;
    Ok(report::lat_table(o, &stats))
}

pub(crate) fn send_lat(
    o: &Opts,
    qp: &mut RcQp<'_, Rts>,
    send_cq: &Cq<'_>,
    recv_cq: &Cq<'_>,
    ssge: &[Sge; 1],
    rsge: &[Sge; 1],
) -> Result<String, String> {
    let client = o.server.is_some();
    let inline = o.inline.unwrap_or(0);
    // perftest sends a message of at most the inline size inline (its
    // buffer's bytes, here zeros as perftest's).
    let zeros = vec![0u8; if o.size <= inline { o.size as usize } else { 0 }];
    let payload = if o.size <= inline { Payload::Inline(&zeros) } else { Payload::Sges(ssge) };
    let wr = [SendWr { wr_id: 0, payload, op: SendOp::Send, flags: SendFlags::SIGNALED, ud: None }];
    let rwr = [RecvWr { wr_id: 0, sg_list: rsge }];
    let mut ts = Stamps::with_capacity(o.iters as usize + 1);
    let mut posted = o.rx_depth.min(o.iters);
    for _ in 0..o.iters {
        if client {
            ts.stamp();
            post(qp, &wr)?;
            wait_one(send_cq)?;
        }
        wait_one(recv_cq)?;
        if posted < o.iters {
            qp.post_recv(&rwr).map_err(|e| format!("ibv_post_recv: {}", e.error))?;
            posted += 1;
        }
        if !client {
            ts.stamp();
            post(qp, &wr)?;
            wait_one(send_cq)?;
        }
    }
    ts.stamp();
    result(o, &ts)
}

pub(crate) fn write_lat(
    o: &Opts,
    qp: &mut RcQp<'_, Rts>,
    send_cq: &Cq<'_>,
    mr: &mut Mr<'_>,
    ssge: &[Sge; 1],
    (raddr, rkey): (u64, u32),
    (send_last, recv_last): (usize, usize),
) -> Result<String, String> {
    let client = o.server.is_some();
    let op = SendOp::RdmaWrite { remote_addr: raddr, rkey };
    let inline = o.inline.unwrap_or(0);
    // Inline (a message of at most the inline size): the bytes go in the
    // request, a copy of the send area whose last byte is the tag.
    let mut bytes = vec![0u8; if o.size <= inline { o.size as usize } else { 0 }];
    // the request of a message sent from the MR, the same every iteration
    let sge_wr = [SendWr { wr_id: 0, payload: Payload::Sges(ssge), op, flags: SendFlags::SIGNALED, ud: None }];
    let mut ts = Stamps::with_capacity(o.iters as usize + 1);
    let wait_peer = |mr: &Mr<'_>, tag: u8, i: u32| -> Result<(), String> {
        let (mut spin, mut byte) = (Spin::new(), [0u8; 1]);
        loop {
            mr.read_at(recv_last, &mut byte).map_err(s("read"))?;
            if byte[0] == tag {
                return Ok(());
            }
            if spin.expired(TIMEOUT) {
                return Err(format!("timed out waiting for the peer's write #{}", i + 1));
            }
        }
    };
    for i in 0..o.iters {
        let tag = (i.wrapping_add(1) & 0xff) as u8;
        if client {
            wait_peer(mr, tag, i)?;
        }
        ts.stamp();
        if let Some(last) = bytes.last_mut() {
            *last = tag;
            let payload = Payload::Inline(&bytes);
            post(qp, &[SendWr { wr_id: 0, payload, op, flags: SendFlags::SIGNALED, ud: None }])?;
        } else {
            mr.write_at(send_last, &[tag]).map_err(s("write"))?;
            post(qp, &sge_wr)?;
        }
        wait_one(send_cq)?;
        if !client {
            wait_peer(mr, tag, i)?;
        }
    }
    ts.stamp();
    result(o, &ts)
}

/// `read_lat` and `atomic_lat`, the client's side.
pub(crate) fn one_sided_lat(
    o: &Opts,
    qp: &mut RcQp<'_, Rts>,
    send_cq: &Cq<'_>,
    ssge: &[Sge; 1],
    peer: &Dest,
) -> Result<String, String> {
    let (remote_addr, rkey) = (peer.vaddr, peer.rkey);
    let op = match (o.test, o.atomic) {
        (Test::AtomicLat, Atomic::FetchAndAdd) => SendOp::AtomicFetchAdd { remote_addr, rkey, add: 1 },
        (Test::AtomicLat, Atomic::CmpAndSwap) => SendOp::AtomicCmpSwp { remote_addr, rkey, compare: 0, swap: 0 },
        _ => SendOp::RdmaRead { remote_addr, rkey },
    };
    let wr = [SendWr { wr_id: 0, payload: Payload::Sges(ssge), op, flags: SendFlags::SIGNALED, ud: None }];
    let mut ts = Stamps::with_capacity(o.iters as usize + 1);
    for _ in 0..o.iters {
        ts.stamp();
        post(qp, &wr)?;
        wait_one(send_cq)?;
    }
    ts.stamp();
    result(o, &ts)
}
