//! Receive sides: SRQs (linked WQEs, user index, limit event), UD with
//! its GRH and Q_Key, receive-queue wrap, CQ arming and events.

use super::basic::pair;
use super::*;
use crate::engine::{cqe_op, event, op};
use crate::engine::wqe::be16;

const RW: u32 = access::LOCAL_WRITE | access::REMOTE_WRITE;

/// An SRQ of 8 WQEs of 64 bytes with its free list linked i -> i + 1.
fn srq(r: &mut Rig, pid: Pid) -> u32 {
    let buf = r.alloc(pid, 8 * 64);
    for i in 0..8u16 {
        r.write(pid, buf + u64::from(i) * 64 + 2, &((i + 1) % 8).to_be_bytes());
    }
    let dbrec = r.alloc(pid, 64);
    let srqn = 0x77;
    let ctx = if pid == A { 1 } else { 2 };
    let wq = Wq { buf, wqe_cnt: 8, wqe_shift: 6, ci: 0 };
    let s = Srq { srqn, ctx, pid, user_handle: 0x5150, pdn: ctx, wqe_shift: 6, wq, dbrec, head: 0, consumed: 0, limit: 0, uidx: 9, max_sge: 3 };
    r.dev.srqs.insert(srqn, s);
    srqn
}

/// libmlx5's post_srq_recv: write at the user's head, follow its link.
fn srq_post(r: &mut Rig, srqn: u32, user_head: &mut u16, count: &mut u16, sge: (u32, u32, u64)) -> u16 {
    let s = r.dev.srqs[&srqn].clone();
    let at = s.wq.buf + (u64::from(*user_head) << 6);
    let idx = *user_head;
    *user_head = be16(&r.read(s.pid, at, 4), 2);
    let mut w = dseg(sge.0, sge.1, sge.2);
    w.extend(dseg(0, 0x100, 0));
    r.write(s.pid, at + 16, &w);
    *count += 1;
    r.write(s.pid, s.dbrec, &u32::from(*count).to_be_bytes());
    idx
}

#[test]
fn srq_feeds_two_qps_by_its_links_and_reports_its_index() {
    let mut r = Rig::new();
    let (ca, cb) = (r.cq(A, 16, 64), r.cq(B, 16, 64));
    let s = srq(&mut r, B);
    let (a1, a2) = (r.qp(A, QpType::Rc, ca, 16, None), r.qp(A, QpType::Rc, ca, 16, None));
    let (b1, b2) = (r.qp(B, QpType::Rc, cb, 16, Some(s)), r.qp(B, QpType::Rc, cb, 16, Some(s)));
    r.connect(a1, b1);
    r.connect(a2, b2);
    let (kb, xb) = r.mr(B, 4096, RW);
    let (mut head, mut count) = (0u16, 0u16);
    // Relink so the list is 0 -> 5 -> 2, as frees in another order leave it.
    r.write(B, r.dev.srqs[&s].wq.buf + 2, &5u16.to_be_bytes());
    r.write(B, r.dev.srqs[&s].wq.buf + 5 * 64 + 2, &2u16.to_be_bytes());
    let i0 = srq_post(&mut r, s, &mut head, &mut count, (8, kb, xb));
    let i1 = srq_post(&mut r, s, &mut head, &mut count, (8, kb, xb + 8));
    assert_eq!((i0, i1), (0, 5));
    r.dev.srqs.get_mut(&s).unwrap().limit = 1;
    r.post(a2, op::SEND, ctrl::CQ_UPDATE, 0, &[inline(b"22")]);
    r.eng().sq_doorbell(a2);
    r.post(a1, op::SEND, ctrl::CQ_UPDATE, 0, &[inline(b"11")]);
    r.eng().sq_doorbell(a1);
    assert_eq!(r.read(B, xb, 2), b"22");
    assert_eq!(r.read(B, xb + 8, 2), b"11");
    let c = r.poll(cb);
    assert_eq!(c.iter().map(|c| (c.qpn, c.wqe_counter, c.srqn_uidx)).collect::<Vec<_>>(), [(b2, 0, b2 + 0x500), (b1, 5, b1 + 0x500)]);
    assert_eq!(r.dev.srqs[&s].head, 2);
    assert_eq!(r.ev.asyncs, [(2, 0x5150, event::SRQ_LIMIT_REACHED)]);
    // Empty SRQ: RNR, not a flush; ERR of a QP on an SRQ raises LAST_WQE_REACHED.
    r.send(a1, op::SEND, &[]);
    assert_eq!(r.dev.qps[&a1].sq.ci, 1);
    r.eng().qp_error(b1);
    assert_eq!(r.ev.asyncs.last(), Some(&(2, u64::from(b1) + 0x2000, event::QP_LAST_WQE_REACHED)));
}

#[test]
fn ud_receive_has_a_grh_and_source_qp() {
    let mut r = Rig::new();
    let (ca, cb) = (r.cq(A, 16, 64), r.cq(B, 16, 64));
    let (qa, qb) = (r.qp(A, QpType::Ud, ca, 16, None), r.qp(B, QpType::Ud, cb, 16, None));
    let (kb, xb) = r.mr(B, 4096, RW);
    r.recv(qb, &[(40 + 5, kb, xb)]);
    r.recv(qb, &[(40 + 5, kb, xb + 100)]);
    r.send(qa, op::SEND, &[datagram(qb, 0x1111_1111), inline(b"abcde")]);
    let got = r.read(B, xb, 45);
    assert_eq!(&got[40..], b"abcde");
    assert_eq!(got[20], 0x45, "IPv4 header in the GRH's last 20 bytes");
    assert_eq!(&got[32..40], &[10, 0, 0, 1, 10, 0, 0, 1]);
    let c = r.poll(cb)[0];
    assert_eq!((c.opcode, c.byte_cnt, c.flags_rqpn & 0xff_ffff, c.flags_rqpn >> 28), (cqe_op::RESP_SEND, 45, qa, 1));
    // Wrong Q_Key: dropped; the QP's own Q_Key (high bit) matches.
    r.send(qa, op::SEND, &[datagram(qb, 0x2222), inline(b"x")]);
    assert!(r.poll(cb).is_empty());
    r.send(qa, op::SEND, &[datagram(qb, 0x8000_0000), inline(b"y")]);
    assert_eq!(r.poll(cb).len(), 1);
    assert_eq!(r.poll(ca).len(), 3, "the UD requester always completes");
}

#[test]
fn receive_queue_wraps() {
    let (mut r, qa, qb, _ca, cb) = pair(QpType::Rc);
    let (kb, xb) = r.mr(B, 4096, RW);
    for i in 0..40u8 {
        r.recv(qb, &[(1, kb, xb + u64::from(i))]);
        r.send(qa, op::SEND, &[inline(&[i])]);
        assert_eq!(r.poll(cb)[0].wqe_counter, u16::from(i));
    }
    assert_eq!(r.read(B, xb + 39, 1), [39]);
}

#[test]
fn arming_fires_once_per_arm_and_solicited_waits_for_a_solicited_cqe() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let ev = |cq: u32| (cq + 7, u64::from(cq) + 0x1000);
    r.eng().cq_arm(ca, 0);
    r.send(qa, op::NOP, &[]);
    r.send(qa, op::NOP, &[]);
    assert_eq!(r.ev.completions, [ev(ca)]);
    // Consumer index behind the producer: fires at once.
    r.eng().cq_arm(ca, 1 << 28);
    assert_eq!(r.ev.completions.len(), 2);
    r.poll(ca);
    r.eng().cq_arm(ca, 2 << 28 | 2);
    assert_eq!(r.ev.completions.len(), 2);
    // Solicited arm on B: a plain send does not fire it, a solicited one does.
    r.eng().cq_arm(cb, 1 << 24);
    for _ in 0..2 {
        r.recv(qb, &[]);
    }
    r.send(qa, op::SEND, &[]);
    assert_eq!(r.ev.completions.len(), 3, "A's CQ was armed for any");
    r.post(qa, op::SEND, ctrl::SOLICITED, 0, &[]);
    r.eng().sq_doorbell(qa);
    assert_eq!(r.ev.completions.last(), Some(&ev(cb)));
    assert_eq!(r.ev.completions.len(), 4);
}

/// The application stores a solicited-only arm in the CQ's doorbell record,
/// then posts a plain send, and the engine runs it before the arm's UAR
/// doorbell is read: the CQE takes the arm from the doorbell record (no
/// event: not solicited), and the UAR arm that follows is the same word,
/// taken already, so it does not fire for the unsolicited CQE behind it.
#[test]
fn an_arm_stored_before_the_work_is_taken_before_its_cqe() {
    let (mut r, qa, qb, _ca, cb) = pair(QpType::Rc);
    let ev = |cq: u32| (cq + 7, u64::from(cq) + 0x1000);
    let word = 1u32 << 24; // sn 0, solicited, ci 0
    let dbrec = r.dev.cqs[&cb].dbrec;
    r.write(B, dbrec + 4, &word.to_be_bytes());
    for _ in 0..2 {
        r.recv(qb, &[]);
    }
    r.send(qa, op::SEND, &[]);
    assert_eq!(r.dev.cqs[&cb].armed, Some(true), "armed from the doorbell record");
    assert!(!r.eng().cq_arm(cb, word), "the UAR arm was taken already");
    assert!(r.ev.completions.is_empty(), "an unsolicited CQE raised an event: {:?}", r.ev.completions);
    r.post(qa, op::SEND, ctrl::SOLICITED, 0, &[]);
    r.eng().sq_doorbell(qa);
    assert_eq!(r.ev.completions, [ev(cb)]);
}
