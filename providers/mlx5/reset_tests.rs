//! RESET on real bytes: two QPs (one on an SRQ) completing into one CQ,
//! the CQEs written as the device writes them (owner bit per pass), one
//! QP's dropped; then the reset QP's indices and doorbell record.

use super::*;
use crate::providers::mlx5::ops;
use crate::providers::mlx5::res::{CqMem, QpMem, SrqMem};
use crate::providers::mlx5::sizing::DeviceLimits;
use crate::providers::mlx5::wqe::{Cqe64, CQE_REQ, CQE_RESP_ERR, CQE_RESP_SEND, OPCODE_SEND};
use crate::qp::{QpCap, QpType};
use crate::wc::Wc;
use crate::wr::{RecvWr, SendWr, Sge};
use zerocopy::byteorder::network_endian::{U16, U32};

const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 1024, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
const SGE: Sge = Sge { addr: 0x1000, length: 8, lkey: 1 };
const NCQE: usize = 8;

struct World {
    reg: RegRef,
    _uar: rustix::fd::OwnedFd,
    db: super::super::ctx::Doorbell,
    cq: u32,
    /// QP 0x42 with its own receive queue.
    a: u32,
    /// QP 0x43 on the SRQ.
    b: u32,
    srq: u32,
}

fn world() -> World {
    let uar = rustix::fs::memfd_create("verbs-reset-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&uar, 8 * 4096).unwrap();
    let reg = RegRef::new("test", super::super::ctx::tests::sim_uars(&uar)).unwrap();
    let db = reg.uars().doorbell(1).unwrap();
    let c = CqMem::new("test", NCQE as u32 - 1, 64, 64).unwrap();
    let ring = c.ring("test", NCQE as u32 - 1, 0x77, 1).unwrap();
    let cq = reg.insert(Entry::Cq { ring, buf: c.buf }).unwrap();
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let qp = |qpn: u32, srq_uidx: Option<u32>| {
        let m = QpMem::new("test", &LIM, QpType::Rc, &cap, srq_uidx.is_some(), 64).unwrap();
        let (sq, rq) = m.queues("test", qpn, QpType::Rc, false, false, db.blueflame()).unwrap();
        reg.insert(Entry::Qp { sq, rq, buf: m.buf, srq_uidx }).unwrap()
    };
    let a = qp(0x42, None);
    let mut s = SrqMem::new("test", &LIM, 4, 1, 64).unwrap();
    let srq_state = s.srq("test").unwrap();
    let srq = reg.insert(Entry::Srq { srq: srq_state, buf: s.buf, handle: 9 }).unwrap();
    let b = qp(0x43, Some(srq));
    World { reg, _uar: uar, db, cq, a, b, srq }
}

/// Writes `c` as the device's CQE number `pi` (slot and owner bit).
fn produce(w: &World, pi: usize, mut c: Cqe64) {
    c.op_own |= ((pi / NCQE) & 1) as u8;
    let mut g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { buf, .. } = &mut *g else { panic!() };
    assert!(buf.put((pi % NCQE) * 64, c));
}

fn send_cqe(uidx: u32, qpn: u32, wqe: u16) -> Cqe64 {
    Cqe64 { srqn_uidx: U32::new(uidx), sop_drop_qpn: U32::new(u32::from(OPCODE_SEND) << 24 | qpn), wqe_counter: U16::new(wqe), op_own: CQE_REQ << 4, ..Default::default() }
}

fn recv_cqe(uidx: u32, qpn: u32, wqe: u16, opcode: u8) -> Cqe64 {
    Cqe64 { srqn_uidx: U32::new(uidx), sop_drop_qpn: U32::new(qpn), byte_cnt: U32::new(8), wqe_counter: U16::new(wqe), op_own: opcode << 4, ..Default::default() }
}

fn ids(w: &World) -> Vec<u64> {
    let mut out = [Wc::default(); NCQE];
    let n = ops::poll(&w.reg, w.cq, &mut out).unwrap();
    out[..n].iter().map(Wc::wr_id).collect()
}

fn srq_tail(w: &World) -> u32 {
    let g = w.reg.lock(w.srq).unwrap();
    let Entry::Srq { srq, .. } = &*g else { panic!() };
    srq.indices().1
}

#[test]
fn clean_drops_one_qps_completions_across_the_wrap_and_frees_its_srq_wqes() {
    let w = world();
    // Move the consumer index to 5, so that the next CQEs wrap the ring.
    for i in 0..5u64 {
        ops::post_send(&w.reg, w.a, w.db, &[SendWr::send(i, &[SGE]).signaled()]).unwrap();
        produce(&w, i as usize, send_cqe(w.a, 0x42, i as u16));
        assert_eq!(ids(&w), [i]);
    }
    ops::post_send(&w.reg, w.a, w.db, &[SendWr::send(0xa5, &[SGE]).signaled()]).unwrap();
    ops::post_recv(&w.reg, w.a, &[RecvWr::new(0xa1, &[SGE])]).unwrap();
    ops::post_srq_recv(&w.reg, w.srq, &[RecvWr::new(0xb0, &[SGE]), RecvWr::new(0xb1, &[SGE])]).unwrap();
    let tail = srq_tail(&w);
    // CQEs 5..10: a, b, a, b (flushed), and one slot still the device's.
    produce(&w, 5, send_cqe(w.a, 0x42, 5));
    produce(&w, 6, recv_cqe(w.b, 0x43, 0, CQE_RESP_SEND));
    produce(&w, 7, recv_cqe(w.a, 0x42, 0, CQE_RESP_SEND));
    produce(&w, 8, recv_cqe(w.b, 0x43, 1, CQE_RESP_ERR));

    assert_eq!(clean_cq(&w.reg, w.cq, 0x43), 2);
    assert_ne!(srq_tail(&w), tail, "b's SRQ WQEs went back on the free list");
    assert_eq!(clean_cq(&w.reg, w.cq, 0x43), 0, "nothing of b's is left");
    assert_eq!(clean_cq(&w.reg, w.cq, 0x99), 0, "no such QP");
    // a's completions stay, in order, and the ring goes on after them.
    assert_eq!(ids(&w), [0xa5, 0xa1]);
    ops::post_send(&w.reg, w.a, w.db, &[SendWr::send(0xa6, &[SGE]).signaled()]).unwrap();
    produce(&w, 9, send_cqe(w.a, 0x42, 6));
    assert_eq!(ids(&w), [0xa6]);
    let g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { ring, buf } = &*g else { panic!() };
    assert_eq!(ring.ci(), 10);
    assert_eq!(buf.get::<[u8; 4]>(NCQE * 64), Some([0, 0, 0, 10]), "the consumer index record");
}

#[test]
fn reset_starts_the_queues_over_and_zeroes_the_doorbell_record() {
    let w = world();
    ops::post_send(&w.reg, w.a, w.db, &[SendWr::send(1, &[SGE]), SendWr::send(2, &[SGE])]).unwrap();
    ops::post_recv(&w.reg, w.a, &[RecvWr::new(3, &[SGE])]).unwrap();
    reset_qp(&w.reg, w.a);
    let g = w.reg.lock(w.a).unwrap();
    let Entry::Qp { sq: Some(sq), rq: Some(rq), buf, .. } = &*g else { panic!() };
    assert_eq!((sq.indices(), rq.indices()), ((0, 0, 0), (0, 0)));
    let off = sq.config().dbrec_offset;
    assert_eq!(buf.get::<[u8; 8]>(off), Some([0; 8]), "receive and send counters");
    drop(g);
    // The next post is WQE 0 again.
    ops::post_send(&w.reg, w.a, w.db, &[SendWr::send(4, &[SGE]).signaled()]).unwrap();
    produce(&w, 0, send_cqe(w.a, 0x42, 0));
    assert_eq!(ids(&w), [4]);
}

#[test]
fn a_destroyed_qps_completions_leave_with_it() {
    let w = world();
    ops::post_send(&w.reg, w.a, w.db, &[SendWr::send(0xa0, &[SGE]).signaled()]).unwrap();
    ops::post_srq_recv(&w.reg, w.srq, &[RecvWr::new(0xb0, &[SGE])]).unwrap();
    let tail = srq_tail(&w);
    produce(&w, 0, recv_cqe(w.b, 0x43, 0, CQE_RESP_SEND));
    produce(&w, 1, send_cqe(w.a, 0x42, 0));
    forget_qp(&w.reg, w.b);
    assert!(matches!(*w.reg.lock(w.b).unwrap(), Entry::Free), "the slot is free for the next QP");
    assert_ne!(srq_tail(&w), tail, "b's SRQ WQE went back on the free list");
    assert_eq!(ids(&w), [0xa0], "a's completion stays; b's is gone, not reported as malformed");
}
