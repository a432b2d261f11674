//! Loopback RC: two reliable-connected queue pairs on one RoCE device
//! (rxe loops packets for its own address back), an RDMA WRITE of a
//! 64-byte record and a SEND with immediate data, busy-polled.
//!
//! Run: `cargo run --example loopback_rc` (device `rxe0`, or the one named
//! in `VERBS_DEVICE`).

use verbs::discovery::devices;
use verbs::qp::{ConnectOpts, Endpoint, QpCap, QpInitAttr, RcQp};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{AccessFlags, Context, Cq, Mr, Pd, Wc, WcOpcode};

pub(crate) fn main() -> Result<(), Box<dyn core::error::Error>> {
    let name = std::env::var("VERBS_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    // ibv_get_device_list + ibv_open_device.
    let list = devices()?;
    let ctx = Context::open(list.by_name(&name)?)?;
    let pd = Pd::alloc(&ctx)?;
    // One CQ for everything: 3 completions at most are outstanding.
    let cq = Cq::create(&ctx, 16, None, 0)?;
    let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let attr = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false };
    let a = RcQp::create(&pd, attr)?;
    let b = RcQp::create(&pd, attr)?;

    // What each side would send the other over a socket (32 bytes each:
    // `to_bytes()` / `from_bytes()`): QPN, PSN, LID, the port's RoCE v2
    // IPv4 GID, MTU.
    let ea = Endpoint::local(&a, 1, None, 0x1234)?;
    let eb = Endpoint::local(&b, 1, None, 0x5678)?;
    let eb = Endpoint::from_bytes(&eb.to_bytes())?;
    // RESET -> INIT -> RTR -> RTS with ibv_rc_pingpong's timers; the peer
    // may RDMA WRITE into memory registered with REMOTE_WRITE.
    let opts = ConnectOpts { access: AccessFlags::REMOTE_WRITE, ..ConnectOpts::default() };
    let mut a = a.connect(&ea, &eb, &opts)?; // a failed transition hands the QP back in e.qp; ? keeps only the error
    let mut b = b.connect(&eb, &ea, &opts)?; // a failed transition hands the QP back in e.qp; ? keeps only the error

    // Memory: a's source record, b's target (written by a, and the
    // receive buffer for the SEND).
    let src = vec![0u8; 128];
    let dst = vec![0u8; 128];
    let mut src_mr = Mr::reg(&pd, src, AccessFlags::LOCAL_WRITE)?;
    let dst_mr = Mr::reg(&pd, dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)?;
    let record: Vec<u8> = (0..64).collect();
    src_mr.write_at(0, &record)?;
    src_mr.write_at(64, b"ping")?;

    // A receive for the SEND, then both requests with one doorbell.
    let recv = [Sge::from_mr(&dst_mr, 64, 64)];
    b.post_recv(&[RecvWr::new(1, &recv)])?;
    let write = [Sge::from_mr(&src_mr, 0, 64)];
    let send = [Sge::from_mr(&src_mr, 64, 4)];
    a.post_send(&[
        SendWr::rdma_write(10, &write, dst_mr.addr(), dst_mr.rkey()).signaled(),
        SendWr::send_with_imm(11, &send, 0xcafe).signaled(),
    ])?;

    // Busy-poll until the two sends and the receive completed.
    let mut wc = [Wc::ZERO; 4];
    let mut done = 0;
    let start = std::time::Instant::now();
    while done < 3 {
        let n = cq.poll(&mut wc)?;
        for w in &wc[..n] {
            if !w.status().is_success() {
                return Err(format!("work request {} failed: {:?}", w.wr_id(), w.status()).into());
            }
            if w.opcode() == WcOpcode::Recv {
                println!("received {} bytes with immediate {:#x?}", w.byte_len(), w.imm_data());
            }
        }
        done += n;
        if start.elapsed().as_secs() > 30 {
            return Err("no completion within 30 s".into());
        }
    }

    let mut got = [0u8; 68];
    dst_mr.read_at(0, &mut got)?;
    if got[..64] != record[..] || &got[64..] != b"ping" {
        return Err("the bytes did not arrive".into());
    }
    println!("RDMA WRITE of 64 bytes and SEND with immediate: ok");
    Ok(())
}
