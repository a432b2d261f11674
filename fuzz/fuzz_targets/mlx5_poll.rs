//! Arbitrary bytes in mlx5 CQE slots, polled: never a panic, never a read
//! outside the CQ buffer (every access is bounds-checked: the buffer is
//! exactly the ring plus the doorbell record), at most the array's length
//! of completions, the consumer index moves by at least what was returned
//! (and by one for a refused CQE), the doorbell record holds it, and every
//! completion's QP number fits in 24 bits.
#![no_main]

mod common;

use common::Bytes;
use libfuzzer_sys::fuzz_target;
use verbs::providers::mlx5::buf::WqBuf;
use verbs::providers::mlx5::cqe::{CqRing, Queues, Source, Target};
use verbs::providers::mlx5::rq::{RecvQueue, Srq};
use verbs::providers::mlx5::sizing::{rq_size, sq_size, srq_size, DeviceLimits};
use verbs::providers::mlx5::sq::{BlueFlame, SendQueue, SqConfig};
use verbs::qp::QpType;
use verbs::wc::Wc;
use verbs::wr::{RecvWr, SendWr, Sge};

const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 512, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 64 };

struct Qs {
    sq: SendQueue,
    rq: RecvQueue,
    srq: Srq,
    sbuf: WqBuf,
    /// Which resource numbers exist (user index or QP/SRQ number).
    known: u8,
}

impl Queues for Qs {
    fn find(&mut self, s: Source) -> Option<Target<'_>> {
        match s {
            Source::Send { rsn, .. } if rsn & 0xff == u32::from(self.known) => Some(Target::Send(&mut self.sq)),
            Source::Recv { rsn, srqn, .. } if srqn != 0 || rsn & 1 == 1 => Some(Target::Srq(&mut self.srq, &mut self.sbuf)),
            Source::Recv { rsn, .. } if rsn & 0xff == u32::from(self.known) => Some(Target::Recv(&mut self.rq)),
            _ => None,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let cfg = b.u8();
    let ncqe = 1u32 << (cfg & 7);
    let cqe_size = if cfg & 8 != 0 { 128 } else { 64 };
    let ring = (ncqe * cqe_size) as usize;
    let mut cq = CqRing::new("fuzz", ncqe, cqe_size, ring, 0x99, cfg >> 4 & 1).unwrap();
    let mut cbuf = WqBuf::new("fuzz", ring + 8).unwrap();
    cq.init(&mut cbuf).unwrap();
    let size = sq_size(&LIM, QpType::Rc, 8, 1, 0).unwrap().unwrap();
    let bf = BlueFlame { enabled: false, prefer: false, buf_size: 0 };
    let sqc = SqConfig { qpn: 0x42, qp_type: QpType::Rc, size, sq_offset: 0, dbrec_offset: 4096, sig_all: false, atomics: true, bf };
    let mut qbuf = WqBuf::new("fuzz", 8192).unwrap();
    let mut sbuf = WqBuf::new("fuzz", 4096).unwrap();
    let srq = Srq::new("fuzz", srq_size(&LIM, 8, 1).unwrap(), &mut sbuf, 2048).unwrap();
    let rq = RecvQueue::new("fuzz", rq_size(&LIM, 8, 1, false).unwrap().unwrap(), 2048, 4096).unwrap();
    let mut q = Qs { sq: SendQueue::new("fuzz", sqc).unwrap(), rq, srq, sbuf, known: b.u8() };
    let one = [Sge { addr: 0x1000, length: 8, lkey: 1 }];
    let _ = q.sq.post(&mut qbuf, &[SendWr::send(1, &one), SendWr::send(2, &one)], |_| None);
    let _ = q.rq.post(&mut qbuf, &[RecvWr::new(3, &one)]);
    let _ = q.srq.post(&mut q.sbuf, &[RecvWr::new(4, &one)]);
    let mut out = [Wc::ZERO; 8];
    while !b.is_empty() {
        match b.u8() % 4 {
            0 | 1 => {
                // The device writes a slot: arbitrary bytes, often with the right owner bit.
                let slot = u32::from(b.u8()) % ncqe;
                let at = (slot * cqe_size) as usize;
                for k in 0..cqe_size as usize {
                    let v = b.u8();
                    assert!(cbuf.put(at + k, v));
                }
                if b.u8() & 1 == 0 {
                    let last = at + cqe_size as usize - 1;
                    let own = u8::from(cq.ci() & ncqe != 0);
                    let v = cbuf.get::<u8>(last).unwrap();
                    assert!(cbuf.put(last, v & !1 | own));
                }
            }
            2 => {
                let n = usize::from(b.u8() % 9);
                let ci = cq.ci();
                match cq.poll(&cbuf, &mut out[..n], &mut q) {
                    Ok(k) => {
                        assert!(k <= n);
                        assert!(cq.ci().wrapping_sub(ci) >= k as u32);
                        assert!(out[..k].iter().all(|w| w.qp_num() <= 0xff_ffff));
                    }
                    Err(_) => assert!(cq.ci().wrapping_sub(ci) >= 1, "a refused CQE is consumed"),
                }
                assert_eq!(cbuf.get::<[u8; 4]>(ring).unwrap(), (cq.ci() & 0xff_ffff).to_be_bytes());
            }
            _ => {
                if b.u8() & 1 == 0 {
                    cq.event();
                }
                let bytes = cq.arm(&cbuf, b.u8() & 1 == 0);
                assert_eq!(&bytes[4..], &[0, 0, 0, 0x99]);
                assert_eq!(bytes[1..4], (cq.ci() & 0xff_ffff).to_be_bytes()[1..]);
            }
        }
    }
});
