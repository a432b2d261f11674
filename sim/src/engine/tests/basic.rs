//! Successful operations: every opcode, unsignaled WQEs, a WQE straddling
//! the ring's end, 128-byte CQEs and the owner bit across CQ wraps.

use super::*;
use crate::engine::{cqe_op, op};

/// Two connected RC QPs (A in process A, B in process B), one CQ each.
pub fn pair(ty: QpType) -> (Rig, u32, u32, u32, u32) {
    let mut r = Rig::new();
    let (ca, cb) = (r.cq(A, 16, 64), r.cq(B, 16, 64));
    let (qa, qb) = (r.qp(A, ty, ca, 16, None), r.qp(B, ty, cb, 16, None));
    r.connect(qa, qb);
    (r, qa, qb, ca, cb)
}

const RW: u32 = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC;

#[test]
fn rc_send_lands_and_both_sides_complete() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW);
    let msg: Vec<u8> = (0..100u8).collect();
    r.write(A, xa, &msg);
    r.recv(qb, &[(60, kb, xb), (60, kb, xb + 1000)]);
    let idx = r.send(qa, op::SEND, &[dseg(100, ka, xa)]);
    assert_eq!(r.read(B, xb, 60), msg[..60]);
    assert_eq!(r.read(B, xb + 1000, 40), msg[60..]);
    let req = r.poll(ca);
    assert_eq!(req.len(), 1);
    let c = req[0];
    assert_eq!((c.opcode, c.qpn, c.wqe_opcode, c.wqe_counter, c.srqn_uidx), (cqe_op::REQ, qa, op::SEND, idx, qa + 0x500));
    let resp = r.poll(cb);
    assert_eq!(resp.len(), 1);
    let c = resp[0];
    assert_eq!((c.opcode, c.qpn, c.byte_cnt, c.srqn_uidx, c.flags_rqpn, c.wqe_counter), (cqe_op::RESP_SEND, qb, 100, qb + 0x500, qa, 0));
    assert_eq!(r.dev.qps[&qa].sq.ci, 1);
    assert_eq!(r.dev.qps[&qb].rq.ci, 1);
}

#[test]
fn inline_send_with_immediate_keeps_the_immediate_bytes() {
    let (mut r, qa, qb, _ca, cb) = pair(QpType::Rc);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.recv(qb, &[(64, kb, xb)]);
    r.post(qa, op::SEND_IMM, 0, 0xdead_beef, &[inline(b"hello, world!")]);
    r.eng().sq_doorbell(qa);
    assert_eq!(r.read(B, xb, 13), b"hello, world!");
    let c = r.poll(cb)[0];
    assert_eq!((c.opcode, c.imm, c.byte_cnt), (cqe_op::RESP_SEND_IMM, 0xdead_beef, 13));
}

#[test]
fn rdma_write_and_write_with_immediate() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 8192, RW);
    r.write(A, xa, &[7u8; 300]);
    r.send(qa, op::RDMA_WRITE, &[raddr(xb + 5000, kb), dseg(300, ka, xa)]);
    assert_eq!(r.read(B, xb + 5000, 300), vec![7u8; 300]);
    assert!(r.poll(cb).is_empty(), "a plain write consumes no receive");
    r.recv(qb, &[]);
    r.post(qa, op::RDMA_WRITE_IMM, ctrl::CQ_UPDATE, 42, &[raddr(xb, kb), dseg(10, ka, xa)]);
    r.eng().sq_doorbell(qa);
    let c = r.poll(cb)[0];
    assert_eq!((c.opcode, c.imm, c.byte_cnt, c.qpn), (cqe_op::RESP_WR_IMM, 42, 10, qb));
    assert_eq!(r.poll(ca).len(), 2);
}

#[test]
fn rdma_read_fills_the_local_list_and_reports_its_length() {
    let (mut r, qa, _qb, ca, _cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW);
    let src: Vec<u8> = (0..200).map(|i| (i * 3) as u8).collect();
    r.write(B, xb + 100, &src);
    r.send(qa, op::RDMA_READ, &[raddr(xb + 100, kb), dseg(50, ka, xa), dseg(150, ka, xa + 2000)]);
    assert_eq!(r.read(A, xa, 50), src[..50]);
    assert_eq!(r.read(A, xa + 2000, 150), src[50..]);
    let c = r.poll(ca)[0];
    assert_eq!((c.opcode, c.wqe_opcode, c.byte_cnt), (cqe_op::REQ, op::RDMA_READ, 200));
}

fn atomic_seg(swap_add: u64, compare: u64) -> Vec<u8> {
    [swap_add.to_be_bytes(), compare.to_be_bytes()].concat()
}

#[test]
fn atomics_work_on_host_order_values_and_return_the_old_one() {
    let (mut r, qa, _qb, ca, _cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.write(B, xb + 8, &5u64.to_ne_bytes());
    r.send(qa, op::ATOMIC_FA, &[raddr(xb + 8, kb), atomic_seg(10, 0), dseg(8, ka, xa)]);
    assert_eq!(r.read(B, xb + 8, 8), 15u64.to_ne_bytes());
    assert_eq!(r.read(A, xa, 8), 5u64.to_ne_bytes());
    r.send(qa, op::ATOMIC_CS, &[raddr(xb + 8, kb), atomic_seg(99, 14), dseg(8, ka, xa + 8)]);
    assert_eq!(r.read(B, xb + 8, 8), 15u64.to_ne_bytes(), "compare failed: unchanged");
    assert_eq!(r.read(A, xa + 8, 8), 15u64.to_ne_bytes());
    r.send(qa, op::ATOMIC_CS, &[raddr(xb + 8, kb), atomic_seg(99, 15), dseg(8, ka, xa + 16)]);
    assert_eq!(r.read(B, xb + 8, 8), 99u64.to_ne_bytes());
    let cqes = r.poll(ca);
    assert_eq!(cqes.iter().map(|c| (c.wqe_opcode, c.byte_cnt)).collect::<Vec<_>>(), [(op::ATOMIC_FA, 8), (op::ATOMIC_CS, 8), (op::ATOMIC_CS, 8)]);
}

#[test]
fn unsignaled_wqes_complete_silently_and_nop_completes() {
    let (mut r, qa, _qb, ca, _cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.post(qa, op::RDMA_WRITE, 0, 0, &[raddr(xb, kb), dseg(8, ka, xa)]);
    r.post(qa, op::RDMA_WRITE, 0, 0, &[raddr(xb, kb), dseg(8, ka, xa)]);
    let last = r.post(qa, op::NOP, ctrl::CQ_UPDATE, 0, &[]);
    r.eng().sq_doorbell(qa);
    let c = r.poll(ca);
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].wqe_counter, c[0].wqe_opcode), (last, op::NOP));
}

#[test]
fn a_wqe_straddling_the_ring_end_is_read_whole() {
    let mut r = Rig::new();
    let (ca, cb) = (r.cq(A, 64, 64), r.cq(B, 64, 64));
    let (qa, qb) = (r.qp(A, QpType::Rc, ca, 8, None), r.qp(B, QpType::Rc, cb, 8, None));
    r.connect(qa, qb);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW);
    for i in 0..8u8 {
        r.write(A, xa + u64::from(i) * 100, &[i + 1; 100]);
    }
    for _ in 0..7 {
        r.send(qa, op::NOP, &[]);
    }
    // Four data segments: ds 5, two WQEBBs at indices 7 and 0.
    r.recv(qb, &[(400, kb, xb)]);
    let segs: Vec<Vec<u8>> = (0..4).map(|i| dseg(100, ka, xa + i * 100)).collect();
    let idx = r.send(qa, op::SEND, &segs);
    assert_eq!(idx, 7);
    let got = r.read(B, xb, 400);
    assert!(got.chunks(100).enumerate().all(|(i, c)| c.iter().all(|&b| b == i as u8 + 1)));
    assert_eq!(r.dev.qps[&qa].sq.ci, 9);
    assert_eq!(r.poll(ca).last().unwrap().wqe_counter, 7);
}

#[test]
fn cqes_of_128_bytes_and_the_owner_bit_across_cq_wraps() {
    let mut r = Rig::new();
    let (ca, cb) = (r.cq(A, 4, 128), r.cq(B, 4, 64));
    let (qa, qb) = (r.qp(A, QpType::Rc, ca, 16, None), r.qp(B, QpType::Rc, cb, 16, None));
    r.connect(qa, qb);
    for i in 0..11u16 {
        r.send(qa, op::NOP, &[]);
        let c = r.poll(ca);
        assert_eq!(c.len(), 1, "CQE {i}");
        assert_eq!(c[0].wqe_counter, i);
    }
    assert_eq!(r.dev.cqs[&ca].pi, 11);
    let raw = r.read(A, r.dev.cqs[&ca].buf + 2 * 128 + 127, 1)[0];
    assert_eq!(raw & 1, 0, "entry 2 was written on the third pass (owner 0)");
}
