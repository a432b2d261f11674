//! An rdma_cm server (the passive side of `cm_client`): listen on an IP
//! address and port, accept one connection, answer each message with an
//! acknowledgement, offer a region for the client to RDMA READ, and wait
//! for the client to disconnect. The same code runs on InfiniBand/RoCE and
//! iWARP: `Listener`/`Request::accept` hide the transports' differences.
//!
//! Run: `cargo run --example cm_server -- 10.77.0.1:7471`, then
//! `cargo run --example cm_client -- 10.77.0.1:7471` (the address of an
//! RDMA device's netdev; the listener binds to the device that owns it).

use core::net::SocketAddr;

use verbs::cm::{ConnParam, EventChannel, Listener};
use verbs::qp::{QpCap, QpInitAttr, RcQp};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{AccessFlags, Cq, Mr, Pd, Wc};

type BoxError = Box<dyn core::error::Error + Send + Sync>;

/// Milliseconds each connection-manager step may take.
pub(crate) const TIMEOUT_MS: i32 = 20_000;
/// Messages the client sends (and acknowledgements the server returns).
pub(crate) const MESSAGES: u64 = 100;
/// Bytes of the region the client reads, and its pattern.
pub(crate) const REGION: usize = 4096;
pub(crate) fn pattern(i: usize) -> u8 {
    (i * 7 + 3) as u8
}
const MSG: usize = 64;

#[allow(dead_code)]
pub(crate) fn main() -> Result<(), BoxError> {
    let addr: SocketAddr = std::env::args().nth(1).unwrap_or_else(|| "10.77.0.1:7471".to_owned()).parse()?;
    serve(addr, || println!("listening on {addr}"))
}

/// Serves one client on `addr`; calls `listening` once requests can come.
pub(crate) fn serve(addr: SocketAddr, listening: impl FnOnce()) -> Result<(), BoxError> {
    let ch = EventChannel::create()?; // rdma_create_event_channel
    let listener = Listener::bind(&ch, &addr, 4)?; // rdma_create_id + rdma_bind_addr + rdma_listen
    listening();
    let req = listener.next_request(TIMEOUT_MS)?; // RDMA_CM_EVENT_CONNECT_REQUEST
    println!("request from {:?}: {:?}", req.id().peer_addr()?, String::from_utf8_lossy(req.peer().private_data()));

    // The device the request came in on; everything is created there.
    let ctx = req.open_device()?;
    let pd = Pd::alloc(&ctx)?;
    let cq = Cq::create(&ctx, 64, None, 0)?;
    let cap = QpCap { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 16 };
    let qp = RcQp::create(&pd, QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false })?;
    let mut qp = req.init_qp(qp)?; // RESET -> INIT (rdma_create_qp)

    // Receive slots first, then the region the client may read.
    let mut mr = Mr::alloc(&pd, 16 * MSG + REGION, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ)?;
    let region: Vec<u8> = (0..REGION).map(pattern).collect();
    mr.write_at(16 * MSG, &region)?;
    let slots: Vec<[Sge; 1]> = (0..16).map(|i| [Sge::from_mr(&mr, i * MSG, MSG as u32)]).collect();
    let recvs: Vec<RecvWr<'_>> = slots.iter().enumerate().map(|(i, s)| RecvWr::new(i as u64, s)).collect();
    qp.post_recv(&recvs)?;

    // The client learns where the region is from the accept's private data.
    let mut offer = [0u8; 16];
    offer[..8].copy_from_slice(&(mr.iova() + (16 * MSG) as u64).to_le_bytes());
    offer[8..12].copy_from_slice(&mr.rkey().to_le_bytes());
    offer[12..].copy_from_slice(&(REGION as u32).to_le_bytes());
    let conn_ch = EventChannel::create()?; // the connection's own events
    let param = ConnParam { private_data: &offer, ..ConnParam::default() };
    let mut conn = req.accept(&conn_ch, qp, &param, TIMEOUT_MS)?; // rdma_accept; RTS on every transport

    // One acknowledgement (the sequence number, inline) per message, in order.
    let mut wc = [Wc::ZERO; 16];
    let mut acked = 0u64;
    while acked < MESSAGES {
        let n = cq.poll(&mut wc)?;
        for w in &wc[..n] {
            if !w.status().is_success() {
                return Err(format!("work request {} failed: {:?}", w.wr_id(), w.status()).into());
            }
            if w.wr_id() >= 1000 {
                continue; // an acknowledgement's send completion
            }
            let slot = w.wr_id() as usize;
            let mut msg = [0u8; 8];
            mr.read_at(slot * MSG, &mut msg)?;
            let seq = u64::from_le_bytes(msg);
            if seq != acked {
                return Err(format!("message {seq} arrived where {acked} was due").into());
            }
            conn.qp.post_recv(&[RecvWr::new(slot as u64, &slots[slot])])?;
            let ack = seq.to_le_bytes();
            conn.qp.post_send(&[SendWr::send(1000 + seq, &[]).inline(&ack).signaled()])?;
            acked += 1;
        }
        if n == 0 {
            std::thread::yield_now();
        }
    }
    println!("{acked} messages acknowledged");
    conn.wait_disconnected(TIMEOUT_MS)?; // the client reads the region, then disconnects
    println!("client disconnected");
    Ok(())
}
