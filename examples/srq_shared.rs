//! A shared receive queue: three RC queue pairs take their receives from
//! one SRQ, posted once for all of them. Each sender's message lands in
//! whichever buffer is next on the SRQ; the completion's `qp_num` says
//! which QP it came in on. The SRQ is then refilled and the limit event
//! armed, as a server would.
//!
//! Run: `cargo run --example srq_shared` (device `rxe0`, or `VERBS_DEVICE`).

use verbs::discovery::devices;
use verbs::qp::{ConnectOpts, Endpoint, QpCap, QpInitAttr, RcQp};
use verbs::srq::SrqInitAttr;
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{AccessFlags, Context, Cq, Mr, Pd, Srq, Wc};

const PAIRS: usize = 3;
const SLOT: usize = 64;

pub(crate) fn main() -> Result<(), Box<dyn core::error::Error>> {
    let name = std::env::var("VERBS_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let list = devices()?;
    let ctx = Context::open(list.by_name(&name)?)?;
    let pd = Pd::alloc(&ctx)?;
    let (send_cq, recv_cq) = (Cq::create(&ctx, 16, None, 0)?, Cq::create(&ctx, 16, None, 0)?);
    // ibv_create_srq: 8 receives shared by every QP created with it.
    let srq = Srq::create(&pd, SrqInitAttr { max_wr: 8, max_sge: 1, srq_limit: 0 })?;
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 0, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 64 };
    let servers_attr = QpInitAttr { send_cq: &send_cq, recv_cq: &recv_cq, srq: Some(&srq), cap, sq_sig_all: false };
    let clients_attr = QpInitAttr { send_cq: &send_cq, recv_cq: &send_cq, srq: None, cap, sq_sig_all: false };

    // Three connected pairs: client i -> server i, every server on the SRQ.
    let opts = ConnectOpts::default();
    let mut clients = Vec::new();
    let mut servers = Vec::new();
    for _ in 0..PAIRS {
        let (c, s) = (RcQp::create(&pd, clients_attr)?, RcQp::create(&pd, servers_attr)?);
        let (ec, es) = (Endpoint::local(&c, 1, None, 0)?, Endpoint::local(&s, 1, None, 0)?);
        clients.push(c.connect(&ec, &es, &opts)?);
        servers.push(s.connect(&es, &ec, &opts)?);
    }

    // ibv_post_srq_recv: one receive per message, for all the QPs. The
    // SRQ is posted to through `&Srq`, from any thread.
    let mr = Mr::reg(&pd, vec![0u8; PAIRS * SLOT], AccessFlags::LOCAL_WRITE)?;
    let sges: Vec<_> = (0..PAIRS).map(|i| [Sge::from_mr(&mr, i * SLOT, SLOT as u32)]).collect();
    let wrs: Vec<_> = sges.iter().enumerate().map(|(i, s)| RecvWr::new(i as u64, s)).collect();
    srq.post_recv(&wrs)?;

    // Each client sends its number (inline: no memory registration).
    let messages: Vec<String> = (0..PAIRS).map(|i| format!("hello from client {i}")).collect();
    for (i, c) in clients.iter_mut().enumerate() {
        c.post_send(&[SendWr::send(100 + i as u64, &[]).inline(messages[i].as_bytes()).signaled()])?;
    }

    // The receives: which SRQ buffer (wr_id) took which QP's message.
    let mut wc = [Wc::ZERO; 4];
    let mut got = Vec::new();
    let start = std::time::Instant::now();
    while got.len() < PAIRS {
        let n = recv_cq.poll(&mut wc)?;
        for w in &wc[..n] {
            if !w.status().is_success() {
                return Err(format!("receive {} failed: {:?}", w.wr_id(), w.status()).into());
            }
            let server = servers.iter().position(|s| s.qp_num() == w.qp_num()).ok_or("a receive on an unknown QP")?;
            let mut buf = vec![0u8; w.byte_len() as usize];
            mr.read_at(w.wr_id() as usize * SLOT, &mut buf)?;
            println!("SRQ buffer {} got {:?} on server QP {server}", w.wr_id(), String::from_utf8_lossy(&buf));
            if buf != messages[server].as_bytes() {
                return Err(format!("server {server} got the wrong message").into());
            }
            got.push(w.wr_id());
        }
        if start.elapsed().as_secs() > 30 {
            return Err("no receive within 30 s".into());
        }
    }
    got.sort_unstable();
    if got != [0, 1, 2] {
        return Err(format!("each SRQ buffer once: {got:?}").into());
    }
    // Drain the send completions.
    let mut sent = 0;
    while sent < PAIRS {
        sent += send_cq.poll(&mut wc)?;
        if start.elapsed().as_secs() > 30 {
            return Err("no send completion within 30 s".into());
        }
    }

    // Refill, and ask for IBV_EVENT_SRQ_LIMIT_REACHED (an async event)
    // once fewer than 2 receives are left.
    srq.post_recv(&wrs)?;
    srq.set_limit(2)?;
    println!("three QPs served by one SRQ: ok");
    Ok(())
}
