//! RC with completion events instead of busy polling: the CQ reports on a
//! completion channel, whose fd waits in epoll; `get_cq_event` says which
//! CQ, `ack_events` acknowledges, `req_notify` re-arms, `poll` drains.
//!
//! Run: `cargo run --example rc_events` (device `rxe0`, or `VERBS_DEVICE`).

use rustix::event::epoll;
use rustix::fd::AsFd;
use verbs::cq::get_cq_event;
use verbs::discovery::devices;
use verbs::qp::{ConnectOpts, Endpoint, QpCap, QpInitAttr, RcQp};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{AccessFlags, CompChannel, Context, Cq, Mr, Pd, Wc};

pub(crate) fn main() -> Result<(), Box<dyn core::error::Error>> {
    let name = std::env::var("VERBS_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let list = devices()?;
    let ctx = Context::open(list.by_name(&name)?)?;
    let pd = Pd::alloc(&ctx)?;
    // ibv_create_comp_channel; the CQs that report on it borrow it.
    let channel = CompChannel::create(&ctx)?;
    channel.set_nonblocking(true)?;
    let send_cq = Cq::create(&ctx, 16, Some(&channel), 0)?;
    let recv_cq = Cq::create(&ctx, 16, Some(&channel), 0)?;
    let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 64 };
    let a = RcQp::create(&pd, QpInitAttr { send_cq: &send_cq, recv_cq: &send_cq, srq: None, cap, sq_sig_all: false })?;
    let b = RcQp::create(&pd, QpInitAttr { send_cq: &send_cq, recv_cq: &recv_cq, srq: None, cap, sq_sig_all: false })?;
    let (ea, eb) = (Endpoint::local(&a, 1, None, 0)?, Endpoint::local(&b, 1, None, 0)?);
    let opts = ConnectOpts::default();
    let mut a = a.connect(&ea, &eb, &opts)?; // a failed transition hands the QP back in e.qp; ? keeps only the error
    let mut b = b.connect(&eb, &ea, &opts)?; // a failed transition hands the QP back in e.qp; ? keeps only the error

    // The channel fd in an epoll set (any event loop works the same way).
    let ep = epoll::create(epoll::CreateFlags::CLOEXEC)?;
    epoll::add(&ep, channel.as_fd(), epoll::EventData::new_u64(1), epoll::EventFlags::IN)?;

    let buf = vec![0u8; 256];
    let mr = Mr::reg(&pd, buf, AccessFlags::LOCAL_WRITE)?;
    const MESSAGES: u64 = 3;
    let sges: Vec<[Sge; 1]> = (0..MESSAGES).map(|i| [Sge::from_mr(&mr, i as usize * 64, 64)]).collect();
    let recvs: Vec<_> = sges.iter().enumerate().map(|(i, s)| RecvWr::new(i as u64, s)).collect();
    b.post_recv(&recvs)?;
    // Arm both CQs before anything can complete.
    send_cq.req_notify(false)?;
    recv_cq.req_notify(false)?;
    for i in 0..MESSAGES {
        a.post_send(&[SendWr::send_with_imm(100 + i, &[], i as u32).inline(b"event").signaled()])?;
    }

    let (mut sent, mut received) = (0, 0);
    let mut events: Vec<epoll::Event> = Vec::with_capacity(4);
    let timeout = rustix::event::Timespec { tv_sec: 30, tv_nsec: 0 };
    let mut wc = [Wc::ZERO; 8];
    while sent < MESSAGES || received < MESSAGES {
        // Wait up to 30 s for the channel to become readable.
        events.clear();
        if epoll::wait(&ep, rustix::buffer::spare_capacity(&mut events), Some(&timeout))? == 0 {
            return Err("no completion event within 30 s".into());
        }
        // Take every queued event: each names its CQ.
        loop {
            let cq = match get_cq_event(&channel, &[&send_cq, &recv_cq]) {
                Ok(cq) => cq,
                Err(e) if e.kind() == verbs::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e.into()),
            };
            cq.ack_events(1)?;
            // Re-arm first, then drain: a completion that lands in between
            // raises a new event instead of being missed.
            cq.req_notify(false)?;
            loop {
                let n = cq.poll(&mut wc)?;
                if n == 0 {
                    break;
                }
                for w in &wc[..n] {
                    if !w.status().is_success() {
                        return Err(format!("work request {} failed: {:?}", w.wr_id(), w.status()).into());
                    }
                    if core::ptr::eq(cq, &recv_cq) {
                        println!("message {} arrived: {} bytes", w.imm_data().unwrap_or(0), w.byte_len());
                        received += 1;
                    } else {
                        sent += 1;
                    }
                }
            }
        }
    }
    println!("{sent} sends and {received} receives completed through events: ok");
    Ok(())
}
