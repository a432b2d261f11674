//! Error completions and what follows them: local protection and length
//! errors, remote access errors, RNR and transport retries, flushes, CQ
//! overrun, malformed WQEs.

use super::basic::pair;
use super::*;
use crate::engine::{cqe_op, event, op, syn};

const RW: u32 = access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ;

#[test]
fn bad_lkey_fails_the_wqe_and_flushes_everything_behind_it() {
    let (mut r, qa, _qb, ca, _cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    r.recv(qa, &[(8, ka, xa)]);
    let first = r.post(qa, op::SEND, ctrl::CQ_UPDATE, 0, &[dseg(8, ka ^ 0x100, xa)]);
    r.post(qa, op::SEND, 0, 0, &[dseg(8, ka, xa)]);
    r.post(qa, op::NOP, ctrl::CQ_UPDATE, 0, &[]);
    r.eng().sq_doorbell(qa);
    let c = r.poll(ca);
    let got: Vec<_> = c.iter().map(|c| (c.opcode, c.syndrome, c.wqe_counter)).collect();
    assert_eq!(got, [
        (cqe_op::REQ_ERR, syn::LOC_PROT, first),
        (cqe_op::REQ_ERR, syn::WR_FLUSH, first + 1),
        (cqe_op::REQ_ERR, syn::WR_FLUSH, first + 2),
        (cqe_op::RESP_ERR, syn::WR_FLUSH, 0),
    ]);
    assert_eq!(c[3].srqn_uidx, qa + 0x500);
    assert_eq!(r.dev.qps[&qa].state, QpState::Err);
    // Work posted later is flushed as well, receives by progress().
    r.post(qa, op::NOP, 0, 0, &[]);
    r.eng().sq_doorbell(qa);
    r.recv(qa, &[(8, ka, xa)]);
    assert!(r.eng().progress());
    let c = r.poll(ca);
    assert_eq!(c.iter().map(|c| (c.opcode, c.syndrome)).collect::<Vec<_>>(), [(cqe_op::REQ_ERR, syn::WR_FLUSH), (cqe_op::RESP_ERR, syn::WR_FLUSH)]);
    assert!(!r.eng().progress());
}

#[test]
fn lkey_of_another_pd_or_out_of_bounds_is_a_protection_error() {
    for (pid, off, len) in [(B, 0, 8), (A, 4090, 8)] {
        let (mut r, qa, _qb, ca, _cb) = pair(QpType::Rc);
        let (k, x) = r.mr(pid, 4096, RW);
        r.send(qa, op::SEND, &[dseg(len, k, x + off)]);
        assert_eq!(r.poll(ca)[0].syndrome, syn::LOC_PROT);
    }
}

#[test]
fn receive_too_small_is_loc_len_there_and_rem_inv_req_here() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.recv(qb, &[(10, kb, xb)]);
    r.recv(qb, &[(10, kb, xb)]);
    r.send(qa, op::SEND, &[dseg(11, ka, xa)]);
    let c = r.poll(cb);
    assert_eq!(c.iter().map(|c| (c.opcode, c.syndrome)).collect::<Vec<_>>(), [(cqe_op::RESP_ERR, syn::LOC_LEN), (cqe_op::RESP_ERR, syn::WR_FLUSH)]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::REM_INV_REQ);
    assert_eq!((r.dev.qps[&qa].state, r.dev.qps[&qb].state), (QpState::Err, QpState::Err));
    assert_eq!(r.ev.asyncs, [(2, u64::from(qb) + 0x2000, event::QP_REQ_ERR)], "the responder's, once");
}

#[test]
fn bad_rkey_and_missing_access_are_remote_access_errors() {
    let (mut r, qa, qb, ca, _cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, access::LOCAL_WRITE | access::REMOTE_READ);
    r.send(qa, op::RDMA_WRITE, &[raddr(xb, kb), dseg(8, ka, xa)]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::REM_ACCESS);
    assert_eq!(r.dev.qps[&qb].state, QpState::Err, "an RC responder goes to ERR");
    assert_eq!(r.ev.asyncs, [(2, u64::from(qb) + 0x2000, event::QP_ACCESS_ERR)]);

    let (mut r, qa, qb, ca, _cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.dev.qps.get_mut(&qb).unwrap().attrs.access = 0;
    r.send(qa, op::RDMA_READ, &[raddr(xb, kb), dseg(8, ka, xa)]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::REM_ACCESS);
}

#[test]
fn rnr_waits_for_the_timer_blocks_later_wqes_and_then_delivers() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.write(A, xa, b"first");
    r.send(qa, op::SEND, &[dseg(5, ka, xa)]);
    r.send(qa, op::NOP, &[]);
    assert!(r.poll(ca).is_empty(), "RNR: the send and the NOP behind it wait");
    r.recv(qb, &[(64, kb, xb)]);
    r.dev.engine.fake_now_ns = Some(600_000); // min_rnr_timer 12 = 0.64 ms
    r.eng().progress();
    assert!(r.poll(ca).is_empty(), "the timer has not run out");
    r.dev.engine.fake_now_ns = Some(700_000);
    assert!(r.eng().progress());
    assert_eq!(r.read(B, xb, 5), b"first");
    assert_eq!(r.poll(ca).len(), 2);
    assert_eq!(r.poll(cb)[0].opcode, cqe_op::RESP_SEND);
}

#[test]
fn rnr_retries_run_out() {
    let (mut r, qa, _qb, ca, _cb) = pair(QpType::Rc);
    r.dev.qps.get_mut(&qa).unwrap().attrs.rnr_retry = 2;
    r.send(qa, op::SEND, &[]);
    r.dev.engine.fake_now_ns = Some(1_000_000);
    r.eng().progress();
    assert!(r.poll(ca).is_empty(), "first retry");
    r.dev.engine.fake_now_ns = Some(2_000_000);
    r.eng().progress();
    assert_eq!(r.poll(ca)[0].syndrome, syn::RNR_RETRY_EXC);
    assert_eq!(r.dev.qps[&qa].state, QpState::Err);
}

#[test]
fn no_responder_retries_then_transport_retry_exceeded() {
    let (mut r, qa, qb, ca, _cb) = pair(QpType::Rc);
    r.dev.qps.get_mut(&qb).unwrap().state = QpState::Init;
    r.dev.qps.get_mut(&qa).unwrap().attrs.retry_cnt = 1;
    r.send(qa, op::SEND, &[]);
    let timeout = 4096u64 << 14;
    r.dev.engine.fake_now_ns = Some(timeout);
    r.eng().progress();
    assert!(r.poll(ca).is_empty());
    r.dev.engine.fake_now_ns = Some(2 * timeout - 1);
    r.eng().progress();
    assert!(r.poll(ca).is_empty(), "the retry's timer still runs");
    r.dev.engine.fake_now_ns = Some(2 * timeout);
    r.eng().progress();
    assert_eq!(r.poll(ca)[0].syndrome, syn::RETRY_EXC);
}

#[test]
fn a_peer_that_becomes_ready_is_reached_by_the_retry() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.dev.qps.get_mut(&qb).unwrap().state = QpState::Init;
    r.send(qa, op::SEND_IMM, &[]);
    r.dev.qps.get_mut(&qb).unwrap().state = QpState::Rtr;
    r.recv(qb, &[(8, kb, xb)]);
    r.dev.engine.fake_now_ns = Some(4096u64 << 14);
    r.eng().progress();
    assert_eq!(r.poll(ca)[0].opcode, cqe_op::REQ);
    assert_eq!(r.poll(cb)[0].opcode, cqe_op::RESP_SEND_IMM);
}

#[test]
fn uc_drops_silently_when_the_responder_cannot_take_it() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Uc);
    r.send(qa, op::SEND, &[]);
    assert_eq!(r.poll(ca)[0].opcode, cqe_op::REQ);
    assert!(r.poll(cb).is_empty());
    assert_eq!(r.dev.qps[&qb].state, QpState::Rts);
    r.send(qa, op::RDMA_READ, &[raddr(0, 0)]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::LOC_QP_OP, "no READ on UC");
    // A UC send-queue error stops the send queue only (SQE): receives go on.
    assert_eq!(r.dev.qps[&qa].state, QpState::Sqe);
    r.send(qa, op::NOP, &[]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::WR_FLUSH);
    r.recv(qa, &[]);
    r.send(qb, op::SEND, &[]);
    assert_eq!(r.poll(ca)[0].opcode, cqe_op::RESP_SEND);
}

#[test]
fn modify_to_err_flushes_both_queues() {
    let (mut r, qa, _qb, ca, _cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    r.recv(qa, &[(8, ka, xa)]);
    r.recv(qa, &[(8, ka, xa)]);
    r.dev.qps.get_mut(&qa).unwrap().state = QpState::Rtr;
    r.post(qa, op::NOP, 0, 0, &[]);
    r.eng().qp_error(qa);
    let c = r.poll(ca);
    assert_eq!(c.iter().map(|c| (c.opcode, c.wqe_counter)).collect::<Vec<_>>(), [(cqe_op::REQ_ERR, 0), (cqe_op::RESP_ERR, 0), (cqe_op::RESP_ERR, 1)]);
    assert!(c.iter().all(|c| c.syndrome == syn::WR_FLUSH));
}

#[test]
fn cq_overrun_raises_cq_err_once_and_drops() {
    let mut r = Rig::new();
    let ca = r.cq(A, 2, 64);
    let qa = r.qp(A, QpType::Rc, ca, 16, None);
    r.connect(qa, qa);
    for _ in 0..4 {
        r.send(qa, op::NOP, &[]);
    }
    assert_eq!(r.ev.asyncs, [(1, u64::from(ca) + 0x1000, event::CQ_ERR)]);
    assert_eq!(r.poll(ca).len(), 2);
}

#[test]
fn unknown_opcode_and_bad_ds_are_local_qp_operation_errors() {
    let (mut r, qa, _qb, ca, _cb) = pair(QpType::Rc);
    r.send(qa, 0x3f, &[]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::LOC_QP_OP);
}

#[test]
fn misaligned_atomic_is_an_invalid_request() {
    let (mut r, qa, _qb, ca, _cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW | access::REMOTE_ATOMIC);
    r.send(qa, op::ATOMIC_FA, &[raddr(xb + 4, kb), vec![0; 16], dseg(8, ka, xa)]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::REM_INV_REQ);
}

#[test]
fn read_into_memory_without_local_write_is_a_local_protection_error() {
    let (mut r, qa, qb, ca, _cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, access::REMOTE_READ);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.send(qa, op::RDMA_READ, &[raddr(xb, kb), dseg(8, ka, xa)]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::LOC_PROT);
    assert_eq!(r.dev.qps[&qb].state, QpState::Rts, "the responder saw nothing wrong");
}

#[test]
fn ud_receive_too_small_fails_that_receive_only() {
    let mut r = Rig::new();
    let (ca, cb) = (r.cq(A, 16, 64), r.cq(B, 16, 64));
    let (qa, qb) = (r.qp(A, QpType::Ud, ca, 16, None), r.qp(B, QpType::Ud, cb, 16, None));
    let (kb, xb) = r.mr(B, 4096, RW);
    r.recv(qb, &[(40, kb, xb)]);
    r.send(qa, op::SEND, &[datagram(qb, 0x1111_1111), inline(b"z")]);
    assert_eq!(r.poll(ca)[0].opcode, cqe_op::REQ);
    let c = r.poll(cb)[0];
    assert_eq!((c.opcode, c.syndrome), (cqe_op::RESP_ERR, syn::LOC_LEN));
    assert_eq!(r.dev.qps[&qb].state, QpState::Rts);
}

#[test]
fn write_with_immediate_waits_for_a_receive_and_writes_nothing_before() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, RW);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.write(A, xa, b"imm!");
    r.post(qa, op::RDMA_WRITE_IMM, ctrl::CQ_UPDATE, 7, &[raddr(xb, kb), dseg(4, ka, xa)]);
    r.eng().sq_doorbell(qa);
    assert_eq!(r.read(B, xb, 4), [0; 4]);
    r.recv(qb, &[]);
    r.dev.engine.fake_now_ns = Some(1_000_000);
    r.eng().progress();
    assert_eq!(r.read(B, xb, 4), b"imm!");
    assert_eq!((r.poll(ca).len(), r.poll(cb)[0].imm), (1, 7));
}

#[test]
fn rc_with_the_link_down_retries_then_transport_retry_exceeded() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.recv(qb, &[(8, kb, xb)]);
    r.dev.qps.get_mut(&qa).unwrap().attrs.retry_cnt = 2;
    r.dev.engine.link_down = true;
    r.send(qa, op::SEND, &[inline(b"lost")]);
    let timeout = 4096u64 << 14;
    for n in 1..=2 {
        r.dev.engine.fake_now_ns = Some(n * timeout);
        r.eng().progress();
        assert!(r.poll(ca).is_empty(), "retry {n} of 2 is still under way");
    }
    r.dev.engine.fake_now_ns = Some(3 * timeout);
    r.eng().progress();
    let c = r.poll(ca);
    assert_eq!((c.len(), c[0].opcode, c[0].syndrome), (1, cqe_op::REQ_ERR, syn::RETRY_EXC));
    assert_eq!(r.dev.qps[&qa].state, QpState::Err);
    assert!(r.poll(cb).is_empty(), "nothing arrived");
    assert_ne!(r.read(B, xb, 4), b"lost");
    assert_eq!(r.dev.qps[&qb].state, QpState::Rts, "the responder saw nothing");
}

#[test]
fn a_retry_after_the_link_comes_back_up_reaches_the_peer() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.recv(qb, &[(8, kb, xb)]);
    r.dev.engine.link_down = true;
    r.send(qa, op::SEND, &[inline(b"late")]);
    r.dev.engine.fake_now_ns = Some(4096u64 << 14);
    r.eng().progress();
    assert!(r.poll(ca).is_empty() && r.poll(cb).is_empty(), "down: the first retry is lost too");
    r.dev.engine.link_down = false;
    r.dev.engine.fake_now_ns = Some(2 * (4096u64 << 14));
    r.eng().progress();
    assert_eq!(r.poll(ca)[0].opcode, cqe_op::REQ);
    assert_eq!(r.poll(cb)[0].opcode, cqe_op::RESP_SEND);
    assert_eq!(r.read(B, xb, 4), b"late");
}

#[test]
fn ud_and_uc_sends_with_the_link_down_complete_and_are_lost() {
    let mut r = Rig::new();
    let (ca, cb) = (r.cq(A, 16, 64), r.cq(B, 16, 64));
    let (qa, qb) = (r.qp(A, QpType::Ud, ca, 16, None), r.qp(B, QpType::Ud, cb, 16, None));
    let (kb, xb) = r.mr(B, 4096, RW);
    r.recv(qb, &[(64, kb, xb)]);
    r.dev.engine.link_down = true;
    r.send(qa, op::SEND, &[datagram(qb, 0x1111_1111), inline(b"gone")]);
    let c = r.poll(ca);
    assert_eq!((c.len(), c[0].opcode), (1, cqe_op::REQ), "the sender completes as if it went out");
    assert!(r.poll(cb).is_empty(), "nothing received");
    assert_eq!(r.dev.qps[&qa].state, QpState::Rts);
    // up again: the next datagram takes the receive that is still posted
    r.dev.engine.link_down = false;
    r.send(qa, op::SEND, &[datagram(qb, 0x1111_1111), inline(b"here")]);
    assert_eq!(r.poll(ca)[0].opcode, cqe_op::REQ);
    assert_eq!(r.poll(cb)[0].opcode, cqe_op::RESP_SEND);
    assert_eq!(r.read(B, xb + 40, 4), b"here", "after the 40-byte GRH");

    let (mut r, qa, qb, ca, cb) = pair(QpType::Uc);
    let (kb, xb) = r.mr(B, 4096, RW);
    r.recv(qb, &[(8, kb, xb)]);
    r.dev.engine.link_down = true;
    r.send(qa, op::SEND, &[inline(b"gone")]);
    assert_eq!(r.poll(ca)[0].opcode, cqe_op::REQ);
    assert!(r.poll(cb).is_empty());
    r.dev.engine.link_down = false;
    r.send(qa, op::SEND, &[inline(b"here")]);
    assert_eq!(r.poll(cb)[0].opcode, cqe_op::RESP_SEND);
    assert_eq!(r.read(B, xb, 4), b"here");
}
