//! Memory windows: a server registers a large region once, then grants a
//! peer remote access to a small part of it by binding a type 2 window
//! (`IBV_WR_BIND_MW`, posted on its own QP), and revokes it again
//! (`IBV_WR_LOCAL_INV`) without touching the registration. The peer's
//! RDMA WRITE through the window lands; after the revocation the same
//! write fails with a remote access error.
//!
//! Run: `cargo run --example memory_windows` (device `rxe0`, or `VERBS_DEVICE`).

use verbs::discovery::devices;
use verbs::qp::{ConnectOpts, Endpoint, QpCap, QpInitAttr, RcQp};
use verbs::wr::{MwBind, SendOp, SendWr};
use verbs::{AccessFlags, Context, Cq, Mr, Mw, MwType, Pd, Wc, WcStatus};

/// Polls `cq` for one completion (30 s at most).
fn one(cq: &Cq<'_>) -> Result<Wc, Box<dyn core::error::Error>> {
    let mut wc = [Wc::ZERO; 1];
    let start = std::time::Instant::now();
    while cq.poll(&mut wc)? == 0 {
        if start.elapsed().as_secs() > 30 {
            return Err("no completion within 30 s".into());
        }
    }
    Ok(wc[0])
}

pub(crate) fn main() -> Result<(), Box<dyn core::error::Error>> {
    let name = std::env::var("VERBS_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let list = devices()?;
    let ctx = Context::open(list.by_name(&name)?)?;
    let pd = Pd::alloc(&ctx)?;
    let (client_cq, server_cq) = (Cq::create(&ctx, 8, None, 0)?, Cq::create(&ctx, 8, None, 0)?);
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 64 };
    let client = RcQp::create(&pd, QpInitAttr { send_cq: &client_cq, recv_cq: &client_cq, srq: None, cap, sq_sig_all: false })?;
    let server = RcQp::create(&pd, QpInitAttr { send_cq: &server_cq, recv_cq: &server_cq, srq: None, cap, sq_sig_all: false })?;
    let (ec, es) = (Endpoint::local(&client, 1, None, 0)?, Endpoint::local(&server, 1, None, 0)?);
    // The server's QP must allow remote writes (through windows too). A
    // refused access is answered with a NAK, which is not retried.
    let opts = ConnectOpts { access: AccessFlags::REMOTE_WRITE, ..ConnectOpts::default() };
    let mut client = client.connect(&ec, &es, &opts)?;
    let mut server = server.connect(&es, &ec, &opts)?;

    // The region allows binding windows but grants no remote access by
    // itself: its rkey is useless to the peer.
    let region = Mr::reg(&pd, vec![0u8; 4096], AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::MW_BIND)?;
    let mw = Mw::alloc(&pd, MwType::Type2)?; // ibv_alloc_mw

    // Bind the window over bytes 1024..1088 for remote writes. The bind
    // borrows the region: it cannot be deregistered while the window lives.
    let bind = MwBind::new(&mw, &region, region.addr() + 1024, 64, AccessFlags::REMOTE_WRITE);
    server.post_send(&[SendWr::new(1, SendOp::BindMw(bind), &[]).signaled()])?;
    let c = one(&server_cq)?;
    if !c.status().is_success() {
        return Err(format!("bind failed: {:?}", c.status()).into());
    }
    // The window's rkey is what the server hands the peer.
    let (addr, rkey) = (region.addr() + 1024, mw.rkey());

    client.post_send(&[SendWr::rdma_write(2, &[], addr, rkey).inline(b"through the window").signaled()])?;
    let c = one(&client_cq)?;
    if !c.status().is_success() {
        return Err(format!("write through the window failed: {:?}", c.status()).into());
    }
    let mut got = [0u8; 18];
    region.read_at(1024, &mut got)?;
    if &got != b"through the window" {
        return Err("the write did not land".into());
    }
    println!("RDMA WRITE through a bound window: ok");

    // Revoke: invalidate the window's rkey on the server's QP.
    server.post_send(&[SendWr::new(3, SendOp::LocalInv { rkey }, &[]).signaled()])?;
    let c = one(&server_cq)?;
    if !c.status().is_success() {
        return Err(format!("invalidate failed: {:?}", c.status()).into());
    }
    // The same write now fails at the server; the client sees a remote
    // access error (and its QP goes to the error state).
    client.post_send(&[SendWr::rdma_write(4, &[], addr, rkey).inline(b"too late").signaled()])?;
    let c = one(&client_cq)?;
    if c.status() != WcStatus::RemAccessErr {
        return Err(format!("write after invalidation: {:?}, expected a remote access error", c.status()).into());
    }
    region.read_at(1024, &mut got)?;
    if &got != b"through the window" {
        return Err("the refused write changed memory".into());
    }
    println!("the same write after IBV_WR_LOCAL_INV: remote access error, memory untouched: ok");
    Ok(())
}
