//! UD with an address handle: two unreliable-datagram queue pairs on one
//! RoCE device. The sender builds an address handle for the receiver's
//! GID (RoCE always needs the global route header), then sends two
//! datagrams, one with immediate data. Each receive buffer starts with 40
//! bytes where the device puts the GRH; the payload follows.
//!
//! Run: `cargo run --example ud_ah` (device `rxe0`, or `VERBS_DEVICE`).

use verbs::discovery::devices;
use verbs::qp::{QpCap, QpInitAttr, Reset, Rts, SqPsnAttr, UdInitAttr, UdQp, UdRtrAttr};
use verbs::wr::{RecvWr, SendWr, Sge, UdDest};
use verbs::{AccessFlags, Ah, AhAttr, Context, Cq, GlobalRoute, Mr, Pd, Wc, WcOpcode};

/// UD QPs need no peer to come up: RESET -> INIT (Q_Key) -> RTR -> RTS.
/// A failed transition converts into `verbs::Error` with `?` (the QP it
/// hands back is dropped).
fn up<'a>(qp: UdQp<'a, Reset>) -> verbs::Result<UdQp<'a, Rts>> {
    Ok(qp.into_init(UdInitAttr::default())?.into_rtr(UdRtrAttr)?.into_rts(SqPsnAttr { sq_psn: 0 })?)
}

/// Bytes the device writes in front of every UD payload (`struct ibv_grh`).
const GRH: usize = 40;

pub(crate) fn main() -> Result<(), Box<dyn core::error::Error>> {
    let name = std::env::var("VERBS_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let list = devices()?;
    let ctx = Context::open(list.by_name(&name)?)?;
    let pd = Pd::alloc(&ctx)?;
    let cq = Cq::create(&ctx, 16, None, 0)?;
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let attr = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false };

    let mut sender = up(UdQp::create(&pd, attr)?)?;
    let mut receiver = up(UdQp::create(&pd, attr)?)?;

    // The receiver's address: its port's RoCE v2 IPv4 GID (what a peer
    // would learn over a socket, with its QP number and Q_Key).
    let gid_index = ctx.roce_v2_ipv4_gid_index(1)?;
    let dgid = ctx.query_gid(1, u32::from(gid_index))?;
    let ah = Ah::create(&pd, &AhAttr { grh: Some(GlobalRoute::to(dgid, gid_index)), port_num: 1, ..AhAttr::default() })?;
    let dest = UdDest { ah: &ah, remote_qpn: receiver.qp_num(), remote_qkey: UdInitAttr::default().qkey };

    let mut mr = Mr::reg(&pd, vec![0u8; 512], AccessFlags::LOCAL_WRITE)?;
    mr.write_at(0, b"first datagram")?;
    mr.write_at(64, b"second, with immediate")?;
    // Two receives, each GRH + up to 64 bytes.
    let (r1, r2) = ([Sge::from_mr(&mr, 256, (GRH + 64) as u32)], [Sge::from_mr(&mr, 384, (GRH + 64) as u32)]);
    receiver.post_recv(&[RecvWr::new(1, &r1), RecvWr::new(2, &r2)])?;
    let (s1, s2) = ([Sge::from_mr(&mr, 0, 14)], [Sge::from_mr(&mr, 64, 22)]);
    sender.post_send(&[
        SendWr::send(10, &s1).ud(dest).signaled(),
        SendWr::send_with_imm(11, &s2, 0x1234).ud(dest).signaled(),
    ])?;

    // Two send and two receive completions.
    let mut wc = [Wc::ZERO; 4];
    let mut received = Vec::new();
    let (mut done, start) = (0, std::time::Instant::now());
    while done < 4 {
        let n = cq.poll(&mut wc)?;
        for w in &wc[..n] {
            if !w.status().is_success() {
                return Err(format!("work request {} failed: {:?}", w.wr_id(), w.status()).into());
            }
            if w.opcode() == WcOpcode::Recv {
                // The source QP and the byte count (GRH included) come
                // with each datagram.
                if w.src_qp() != sender.qp_num() {
                    return Err(format!("datagram from QP {:#x}, sent by {:#x}", w.src_qp(), sender.qp_num()).into());
                }
                received.push((w.wr_id(), w.byte_len() as usize - GRH, w.imm_data()));
            }
        }
        done += n;
        if start.elapsed().as_secs() > 30 {
            return Err("no completion within 30 s".into());
        }
    }
    received.sort_unstable();
    if received != [(1, 14, None), (2, 22, Some(0x1234))] {
        return Err(format!("unexpected receives: {received:?}").into());
    }
    let (mut a, mut b) = ([0u8; 14], [0u8; 22]);
    mr.read_at(256 + GRH, &mut a)?;
    mr.read_at(384 + GRH, &mut b)?;
    if &a != b"first datagram" || &b != b"second, with immediate" {
        return Err("the payloads did not arrive".into());
    }
    println!("two datagrams through an address handle: ok");
    Ok(())
}
