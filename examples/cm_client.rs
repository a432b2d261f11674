//! An rdma_cm client (the active side of `cm_server`): connect to an IP
//! address and port, send numbered messages and wait for each
//! acknowledgement, RDMA READ the region the server offered in its accept,
//! time a few round trips, and disconnect. The same code runs on
//! InfiniBand/RoCE and iWARP; "nobody listens" is an error of kind
//! `Refused` on both.
//!
//! Run: `cargo run --example cm_client -- 10.77.0.1:7471` (start
//! `cm_server` first).

use core::net::SocketAddr;
use std::time::Instant;

use verbs::cm::{ConnParam, Connector, EventChannel};
use verbs::qp::{QpCap, QpInitAttr, RcQp};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{AccessFlags, Cq, Mr, Pd, Wc};

type BoxError = Box<dyn core::error::Error + Send + Sync>;

const TIMEOUT_MS: i32 = 20_000;
const MESSAGES: u64 = 100;
const MSG: usize = 64;

#[allow(dead_code)]
pub(crate) fn main() -> Result<(), BoxError> {
    let addr: SocketAddr = std::env::args().nth(1).unwrap_or_else(|| "10.77.0.1:7471".to_owned()).parse()?;
    let region = run(addr)?;
    println!("read {} bytes of the server's region", region.len());
    Ok(())
}

/// Waits for the next successful completion on `cq`.
fn next(cq: &Cq<'_>) -> Result<Wc, BoxError> {
    let mut wc = [Wc::ZERO; 1];
    loop {
        if cq.poll(&mut wc)? == 1 {
            if !wc[0].status().is_success() {
                return Err(format!("work request {} failed: {:?}", wc[0].wr_id(), wc[0].status()).into());
            }
            return Ok(wc[0]);
        }
        std::thread::yield_now();
    }
}

/// Talks to the server at `addr`; returns the region it read.
pub(crate) fn run(addr: SocketAddr) -> Result<Vec<u8>, BoxError> {
    let ch = EventChannel::create()?;
    let connector = Connector::resolve(&ch, &addr, TIMEOUT_MS)?; // rdma_resolve_addr + rdma_resolve_route
    let ctx = connector.open_device()?; // the device that reaches the server
    let pd = Pd::alloc(&ctx)?;
    let (send_cq, recv_cq) = (Cq::create(&ctx, 32, None, 0)?, Cq::create(&ctx, 32, None, 0)?);
    let cap = QpCap { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 16 };
    let init = QpInitAttr { send_cq: &send_cq, recv_cq: &recv_cq, srq: None, cap, sq_sig_all: false };
    let mut qp = connector.init_qp(RcQp::create(&pd, init)?)?;

    let mr = Mr::alloc(&pd, 4096 + MSG, AccessFlags::LOCAL_WRITE)?;
    let ack_slot = [Sge::from_mr(&mr, 4096, MSG as u32)];
    qp.post_recv(&[RecvWr::new(0, &ack_slot)])?; // before connecting: the first ack may come at once
    let hello = b"cm_client";
    let mut conn = connector.connect(qp, &ConnParam { private_data: hello, ..ConnParam::default() })?; // RTS
    let qp = &mut conn.qp;

    // The server's offer: where its region is.
    let offer = conn.peer.private_data();
    let raddr = u64::from_le_bytes(offer[..8].try_into()?);
    let rkey = u32::from_le_bytes(offer[8..12].try_into()?);
    let len = u32::from_le_bytes(offer[12..16].try_into()?);

    // Numbered messages, each acknowledged before the next (a latency loop).
    let start = Instant::now();
    for seq in 0..MESSAGES {
        let msg = seq.to_le_bytes();
        qp.post_send(&[SendWr::send(seq, &[]).inline(&msg).signaled()])?;
        next(&send_cq)?;
        next(&recv_cq)?;
        let mut ack = [0u8; 8];
        mr.read_at(4096, &mut ack)?;
        if u64::from_le_bytes(ack) != seq {
            return Err(format!("acknowledgement {} for message {seq}", u64::from_le_bytes(ack)).into());
        }
        qp.post_recv(&[RecvWr::new(0, &ack_slot)])?;
    }
    println!("{MESSAGES} round trips, {:?} each on average", start.elapsed() / MESSAGES as u32);

    // One RDMA READ of the server's region.
    let len = len.min(4096);
    let dst = [Sge::from_mr(&mr, 0, len)];
    qp.post_send(&[SendWr::rdma_read(MESSAGES, &dst, raddr, rkey).signaled()])?;
    next(&send_cq)?;
    let mut region = vec![0u8; len as usize];
    mr.read_at(0, &mut region)?;

    conn.disconnect(TIMEOUT_MS)?; // rdma_disconnect; the server answers
    Ok(region)
}
