//! Arbitrary bytes in mlx5 CQE slots, polled: never a panic, never a read
//! outside the CQ buffer (every access is bounds-checked: the buffer is
//! exactly the ring plus the doorbell record), at most the array's length
//! of completions, the consumer index moves by at least what was returned
//! (and by one for a refused CQE), the doorbell record holds it, and every
//! completion's QP number fits in 24 bits. And differentially: the same
//! writes polled in batches (the run of requester CQEs, `req_run`) and one
//! completion per call (never a run) give the same completions, errors,
//! consumer index and retired WQEs.
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

/// One CQ with its queues, as the target builds it from `cfg` and `known`.
struct World {
    cq: CqRing,
    cbuf: WqBuf,
    q: Qs,
    ncqe: u32,
    cqe_size: u32,
    ring: usize,
}

impl World {
    fn new(cfg: u8, known: u8) -> Self {
        let ncqe = 1u32 << (cfg & 7);
        let cqe_size = if cfg & 8 != 0 { 128 } else { 64 };
        let ring = (ncqe * cqe_size) as usize;
        let cq = CqRing::new("fuzz", ncqe, cqe_size, ring, 0x99, cfg >> 4 & 1).unwrap();
        let mut cbuf = WqBuf::new("fuzz", ring + 8).unwrap();
        cq.init(&mut cbuf).unwrap();
        let size = sq_size(&LIM, QpType::Rc, 8, 1, 0).unwrap().unwrap();
        let bf = BlueFlame { enabled: false, prefer: false, buf_size: 0 };
        let sqc = SqConfig { qpn: 0x42, qp_type: QpType::Rc, size, sq_offset: 0, dbrec_offset: 4096, sig_all: false, atomics: true, bf };
        let mut qbuf = WqBuf::new("fuzz", 8192).unwrap();
        let mut sbuf = WqBuf::new("fuzz", 4096).unwrap();
        let srq = Srq::new("fuzz", srq_size(&LIM, 8, 1).unwrap(), &mut sbuf, 2048).unwrap();
        let rq = RecvQueue::new("fuzz", rq_size(&LIM, 8, 1, false).unwrap().unwrap(), 2048, 4096).unwrap();
        let mut q = Qs { sq: SendQueue::new("fuzz", sqc).unwrap(), rq, srq, sbuf, known };
        let one = [Sge { addr: 0x1000, length: 8, lkey: 1 }];
        let _ = q.sq.post(&mut qbuf, &[SendWr::send(1, &one), SendWr::send(2, &one)], |_| None);
        let _ = q.rq.post(&mut qbuf, &[RecvWr::new(3, &one)]);
        let _ = q.srq.post(&mut q.sbuf, &[RecvWr::new(4, &one)]);
        Self { cq, cbuf, q, ncqe, cqe_size, ring }
    }

    /// `poll` into `out`, checked as every poll is.
    fn poll(&mut self, out: &mut [Wc]) -> Result<usize, ()> {
        let (n, ci) = (out.len(), self.cq.ci());
        let r = match self.cq.poll(&self.cbuf, out, &mut self.q) {
            Ok(k) => {
                assert!(k <= n);
                assert!(self.cq.ci().wrapping_sub(ci) >= k as u32);
                assert!(out[..k].iter().all(|w| w.qp_num() <= 0xff_ffff));
                Ok(k)
            }
            Err(_) => {
                assert!(self.cq.ci().wrapping_sub(ci) >= 1, "a refused CQE is consumed");
                Err(())
            }
        };
        assert_eq!(self.cbuf.get::<[u8; 4]>(self.ring).unwrap(), (self.cq.ci() & 0xff_ffff).to_be_bytes());
        r
    }
}

// Two worlds, the same device writes: `a` polls batches as asked (the
// poll's run of requester CQEs, `req_run`, for two slots or more), `b`
// the same CQEs one completion per call (never a run). They must agree
// on every completion, on where each batch stops, on the consumer index
// and on what the send queue retired: a run that skipped an owner test,
// handed a CQE twice, read one it should have left to the general path
// or retired other WQEs would differ.
fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let cfg = b.u8();
    let known = b.u8();
    let (mut wa, mut wb) = (World::new(cfg, known), World::new(cfg, known));
    let (ncqe, cqe_size) = (wa.ncqe, wa.cqe_size);
    let mut out = [Wc::ZERO; 8];
    while !b.is_empty() {
        match b.u8() % 4 {
            0 | 1 => {
                // The device writes a slot: arbitrary bytes, often with the right owner bit.
                let slot = u32::from(b.u8()) % ncqe;
                let at = (slot * cqe_size) as usize;
                for k in 0..cqe_size as usize {
                    let v = b.u8();
                    assert!(wa.cbuf.put(at + k, v) && wb.cbuf.put(at + k, v));
                }
                let f = b.u8();
                if f & 2 != 0 {
                    // Often the same QP (user index and QP number) as the
                    // slot before: runs of one send queue's CQEs.
                    let (cqe, prev) = (at + cqe_size as usize - 64, ((slot + ncqe - 1) % ncqe * cqe_size + cqe_size - 64) as usize);
                    for k in (32..36).chain(57..60) {
                        let v = wa.cbuf.get::<u8>(prev + k).unwrap();
                        assert!(wa.cbuf.put(cqe + k, v) && wb.cbuf.put(cqe + k, v));
                    }
                }
                if f & 1 == 0 {
                    let last = at + cqe_size as usize - 1;
                    let own = u8::from(wa.cq.ci() & ncqe != 0);
                    let v = wa.cbuf.get::<u8>(last).unwrap();
                    assert!(wa.cbuf.put(last, v & !1 | own) && wb.cbuf.put(last, v & !1 | own));
                }
            }
            2 => {
                let n = usize::from(b.u8() % 9);
                let got = wa.poll(&mut out[..n]);
                // The same, one per call: a refused CQE ends a batch
                // before it (or is the batch's error when it is first).
                let mut one = Vec::new();
                let mut end = Ok(());
                while one.len() < n {
                    let mut w = [Wc::ZERO; 1];
                    match wb.poll(&mut w) {
                        Ok(0) => break,
                        Ok(_) => one.push(w[0]),
                        Err(()) => {
                            end = Err(());
                            break;
                        }
                    }
                }
                match got {
                    Ok(k) => {
                        assert_eq!(&out[..k], &one[..], "the same completions");
                        if end.is_err() && !one.is_empty() {
                            // `a` stopped before the refused CQE; its next
                            // poll reports it, as `b`'s did.
                            assert!(wa.poll(&mut out[..n]).is_err(), "the refused CQE is the next poll's error");
                        } else {
                            assert!(end.is_ok(), "a batch refused nothing but a first CQE");
                        }
                    }
                    Err(()) => assert!(one.is_empty() && end.is_err(), "the same first CQE refused"),
                }
                assert_eq!(wa.cq.ci(), wb.cq.ci(), "the same CQEs consumed");
                assert_eq!(wa.q.sq.indices(), wb.q.sq.indices(), "the same WQEs retired");
            }
            _ => {
                let (ev, sol) = (b.u8() & 1 == 0, b.u8() & 1 == 0);
                for w in [&mut wa, &mut wb] {
                    if ev {
                        w.cq.event();
                    }
                    let bytes = w.cq.arm(&w.cbuf, sol);
                    assert_eq!(&bytes[4..], &[0, 0, 0, 0x99]);
                    assert_eq!(bytes[1..4], (w.cq.ci() & 0xff_ffff).to_be_bytes()[1..]);
                }
            }
        }
    }
});
