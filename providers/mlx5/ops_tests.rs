//! The data path through the context's table, on real bytes: a QP, an
//! SRQ and a CQ in their slots, posts that ring the (memfd) UAR, CQEs
//! written as the device writes them, polls that reach the queues.

use super::*;
use crate::wc::Wc;
use crate::providers::mlx5::wqe::{Cqe64, CQE_REQ, CQE_RESP_SEND, OPCODE_RDMA_WRITE};
use crate::providers::mlx5::res::{CqMem, QpMem, SrqMem};
use crate::providers::mlx5::sizing::DeviceLimits;
use crate::qp::{QpCap, QpType};
use crate::wr::Sge;
use zerocopy::byteorder::network_endian::{U16, U32};

const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 1024, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
const SGE: Sge = Sge { addr: 0x1000, length: 8, lkey: 1 };

struct World {
    reg: RegRef,
    uar: rustix::fd::OwnedFd,
    cq: u32,
    qp: u32,
    qp_on_srq: u32,
    srq: u32,
    db: Doorbell,
}

fn world() -> World {
    let uar = rustix::fs::memfd_create("verbs-ops-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&uar, 8 * 4096).unwrap();
    let reg = RegRef::new("test", super::super::ctx::tests::sim_uars(&uar)).unwrap();
    let db = reg.uars().doorbell(1).unwrap();
    let c = CqMem::new("test", 3, 64, 64).unwrap();
    let ring = c.ring("test", 3, 0x77, 1).unwrap();
    let cq = reg.insert(Entry::Cq { ring, buf: c.buf }).unwrap();
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let qp_entry = |uses_srq: bool, srq_uidx| {
        let m = QpMem::new("test", &LIM, QpType::Rc, &cap, uses_srq, 64).unwrap();
        let (sq, rq) = m.queues("test", 0x42, QpType::Rc, false, false, db.blueflame()).unwrap();
        reg.insert(Entry::Qp { sq, rq, buf: m.buf, srq_uidx }).unwrap()
    };
    let qp = qp_entry(false, None);
    let mut s = SrqMem::new("test", &LIM, 4, 1, 64).unwrap();
    let srq_state = s.srq("test").unwrap();
    let srq = reg.insert(Entry::Srq { srq: srq_state, buf: s.buf, handle: 9 }).unwrap();
    let qp_on_srq = qp_entry(true, Some(srq));
    World { reg, uar, cq, qp, qp_on_srq, srq, db }
}

/// Writes `c` into CQ slot `i` (first pass: owner 0), as the device would.
fn complete(w: &World, i: usize, c: Cqe64) {
    let mut g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { buf, .. } = &mut *g else { panic!() };
    assert!(buf.put(i * 64, c));
}

#[test]
fn post_ring_complete_poll() {
    let w = world();
    let wr = SendWr::rdma_write(0xabc, &[SGE], 0x2000, 5).signaled();
    post_send(&w.reg, w.qp, w.db, &[wr]).unwrap();
    // The BlueFlame copy of the one WQE landed in register 1 (page 0, 0xa00).
    let mut page = [0u8; 4096];
    rustix::io::pread(&w.uar, &mut page, 0).unwrap();
    assert_eq!(&page[0xa00..0xa04], &[0, 0, 0, OPCODE_RDMA_WRITE], "ctrl: index 0, RDMA WRITE");
    assert_eq!(&page[0xa04..0xa08], &[0, 0, 0x42, 3], "qpn 0x42, ds 3");
    assert!(is_empty(&w.reg, w.cq));
    let mut out = [Wc::default(); 4];
    assert_eq!(poll(&w.reg, w.cq, &mut out), Ok(0));

    post_recv(&w.reg, w.qp, &[RecvWr::new(0xdef, &[SGE])]).unwrap();
    post_srq_recv(&w.reg, w.srq, &[RecvWr::new(0x5a5, &[SGE])]).unwrap();
    assert!(post_recv(&w.reg, w.qp_on_srq, &[RecvWr::new(1, &[SGE])]).is_err(), "no receive queue of its own");

    let req = Cqe64 { srqn_uidx: U32::new(w.qp), sop_drop_qpn: U32::new(u32::from(OPCODE_RDMA_WRITE) << 24 | 0x42), wqe_counter: U16::new(0), op_own: CQE_REQ << 4, ..Default::default() };
    let resp = Cqe64 { srqn_uidx: U32::new(w.qp), sop_drop_qpn: U32::new(0x42), byte_cnt: U32::new(8), op_own: CQE_RESP_SEND << 4, ..Default::default() };
    let srq_resp = Cqe64 { srqn_uidx: U32::new(w.qp_on_srq), sop_drop_qpn: U32::new(0x43), byte_cnt: U32::new(8), wqe_counter: U16::new(0), op_own: CQE_RESP_SEND << 4, ..Default::default() };
    complete(&w, 0, req);
    complete(&w, 1, resp);
    complete(&w, 2, srq_resp);
    assert!(!is_empty(&w.reg, w.cq));
    assert_eq!(poll(&w.reg, w.cq, &mut out), Ok(3));
    assert_eq!([out[0].wr_id(), out[1].wr_id(), out[2].wr_id()], [0xabc, 0xdef, 0x5a5]);
    assert!(out[..3].iter().all(|c| c.is_success()));
    // The consumer index went to the CQ's doorbell record.
    let g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { buf, ring } = &*g else { panic!() };
    assert_eq!(buf.get::<[u8; 4]>(256), Some([0, 0, 0, 3]));
    assert_eq!(ring.ci(), 3);
    drop(g);

    // A CQE naming a slot that holds no QP is consumed and reported.
    let stray = Cqe64 { srqn_uidx: U32::new(900), op_own: CQE_REQ << 4, ..Default::default() };
    complete(&w, 3, stray);
    assert_eq!(poll(&w.reg, w.cq, &mut out), Err(0));
    assert!(is_empty(&w.reg, w.cq));
}

#[test]
fn arm_writes_record_and_uar() {
    let w = world();
    assert!(arm(&w.reg, w.cq, true));
    let mut page = [0u8; 4096];
    rustix::io::pread(&w.uar, &mut page, 0).unwrap();
    // arm_sn 0, SOLICITED (1 << 24), ci 0; then the CQ number 0x77.
    assert_eq!(&page[0x20..0x28], &[0x01, 0, 0, 0, 0, 0, 0, 0x77]);
    cq_event(&w.reg, w.cq);
    assert!(arm(&w.reg, w.cq, false));
    rustix::io::pread(&w.uar, &mut page, 0).unwrap();
    assert_eq!(&page[0x20..0x24], &[0x10, 0, 0, 0], "arm_sn 1 after the event, NEXT");
    let g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { buf, .. } = &*g else { panic!() };
    assert_eq!(buf.get::<[u8; 4]>(256 + 4), Some([0x10, 0, 0, 0]), "the arm word in the record");
}

/// Consecutive CQEs of one QP reuse its slot (held across them), a CQE of
/// the other direction of the same QP locks it again for that queue, and
/// the poll lets go of every slot: the QP can be posted to right after.
#[test]
fn consecutive_completions_of_one_qp() {
    let w = world();
    for id in [1, 2] {
        post_send(&w.reg, w.qp, w.db, &[SendWr::rdma_write(id, &[SGE], 0x2000, 5).signaled()]).unwrap();
    }
    post_recv(&w.reg, w.qp, &[RecvWr::new(0xdef, &[SGE])]).unwrap();
    let req = |n: u16| Cqe64 { srqn_uidx: U32::new(w.qp), sop_drop_qpn: U32::new(u32::from(OPCODE_RDMA_WRITE) << 24 | 0x42), wqe_counter: U16::new(n), op_own: CQE_REQ << 4, ..Default::default() };
    let resp = Cqe64 { srqn_uidx: U32::new(w.qp), sop_drop_qpn: U32::new(0x42), byte_cnt: U32::new(8), op_own: CQE_RESP_SEND << 4, ..Default::default() };
    complete(&w, 0, req(0));
    complete(&w, 1, req(1));
    complete(&w, 2, resp);
    let mut out = [Wc::default(); 4];
    assert_eq!(poll(&w.reg, w.cq, &mut out), Ok(3));
    let got: [Wc; 3] = core::array::from_fn(|i| out[i]);
    assert_eq!(got.map(|c| c.wr_id()), [1, 2, 0xdef]);
    assert_eq!(got.map(|c| c.opcode() == crate::wc::WcOpcode::RdmaWrite), [true, true, false]);
    {
        let g = w.reg.lock(w.qp).expect("the poll released the QP's slot");
        let Entry::Qp { sq: Some(sq), rq: Some(rq), .. } = &*g else { panic!() };
        assert_eq!(sq.indices(), (2, 2, 2), "both sends retired");
        assert_eq!(rq.indices(), (1, 1), "the receive completed");
    }
    post_send(&w.reg, w.qp, w.db, &[SendWr::rdma_write(3, &[SGE], 0x2000, 5)]).unwrap();
}

/// Two threads posting straight on one QP at once (as two threads sharing
/// a C QP reach its slot), retiring by hand when the queue is full: the
/// slot lock orders them, so no post is lost (`head` and `cur_post` count
/// every one), the doorbell record holds the last counter, and each basic
/// block of the ring holds the WQE of its own index from the last round,
/// its wr_id one that thread posted.
#[test]
fn concurrent_straight_posts_keep_the_ring_whole() {
    const N: u64 = 1500;
    let w = world();
    std::thread::scope(|sc| {
        for t in 0..2u64 {
            let (reg, qp, db) = (&w.reg, w.qp, w.db);
            sc.spawn(move || {
                let made = reg.made(qp);
                let bf = reg.made_bf(&db);
                for i in 0..N {
                    let wr = SendWr::rdma_write(t << 32 | i, &[SGE], 0x2000, 5);
                    while !post_send_straight(reg, &made, &db, &bf, &wr) {
                        // Full: retire everything posted (as a completion
                        // of the last WQE would).
                        let mut g = reg.lock(qp).unwrap();
                        let Entry::Qp { sq: Some(sq), .. } = &mut *g else { panic!() };
                        let (cp, _, _) = sq.indices();
                        sq.complete(cp.wrapping_sub(1) as u16);
                    }
                }
            });
        }
    });
    let mut g = w.reg.lock(w.qp).unwrap();
    let Entry::Qp { sq: Some(sq), buf, .. } = &mut *g else { panic!() };
    let (cp, head, _) = sq.indices();
    assert_eq!((cp, head), (2 * N as u32, 2 * N as u32), "one block per WQE, none lost");
    assert_eq!(buf.get::<[u8; 4]>(sq.config().dbrec_offset + 4).unwrap(), (cp & 0xffff).to_be_bytes());
    let n = sq.config().size.wqe_cnt;
    for k in cp - n..cp {
        let b = sq.block(buf, k);
        let c = b[0].to_ne_bytes();
        assert_eq!(u32::from_be_bytes([c[0], c[1], c[2], c[3]]), (k & 0xffff) << 8 | u32::from(OPCODE_RDMA_WRITE), "block {k} names its own index");
        assert_eq!(u32::from_be_bytes([c[4], c[5], c[6], c[7]]), 0x42 << 8 | 3);
        let e = sq.complete(k as u16);
        assert!(e.wr_id >> 32 < 2 && e.wr_id & 0xffff_ffff < N && e.wqe_head == k, "block {k}: {e:?}");
    }
}

/// A CQE naming the CQ's own slot (or a slot no queue holds) is consumed
/// and skipped: the poll neither waits for the slot it holds nor reaches
/// into the CQ's entry; the next completion is polled as usual.
#[test]
fn cqe_naming_the_cq_itself_is_skipped_not_waited_for() {
    let w = world();
    let wr = SendWr::rdma_write(0x77, &[SGE], 0x2000, 5).signaled();
    post_send(&w.reg, w.qp, w.db, &[wr]).unwrap();
    let bogus = Cqe64 { srqn_uidx: U32::new(w.cq), sop_drop_qpn: U32::new(u32::from(OPCODE_RDMA_WRITE) << 24 | 0x42), op_own: CQE_REQ << 4, ..Default::default() };
    let good = Cqe64 { srqn_uidx: U32::new(w.qp), sop_drop_qpn: U32::new(u32::from(OPCODE_RDMA_WRITE) << 24 | 0x42), op_own: CQE_REQ << 4, ..Default::default() };
    complete(&w, 0, bogus);
    complete(&w, 1, good);
    let mut out = [Wc::default(); 4];
    assert_eq!(poll(&w.reg, w.cq, &mut out), Err(0), "the bogus CQE is refused");
    assert_eq!(poll(&w.reg, w.cq, &mut out), Ok(1));
    assert_eq!(out[0].wr_id(), 0x77);
    // The same through `poll_with`'s poll.
    complete(&w, 2, bogus);
    let mut one = [Wc::default()];
    assert_eq!(poll_chunk(&w.reg.made(w.cq), &mut one), 0);
    assert!(is_empty(&w.reg, w.cq));
}

/// A CQ of 128-byte entries (`mlx5dv_create_cq` `cqe_size` 128): the
/// device writes each CQE into the last 64 bytes of its slot, and the poll
/// reads it there, whatever the first 64 bytes hold.
#[test]
fn cqe_size_128_reads_the_second_half_of_each_slot() {
    let w = world();
    let c = CqMem::new("test", 3, 128, 64).unwrap();
    assert_eq!((c.ncqe, c.cqe_size, c.dbrec_offset), (4, 128, 512));
    let ring = c.ring("test", 3, 0x78, 1).unwrap();
    let cq = w.reg.insert(Entry::Cq { ring, buf: c.buf }).unwrap();
    post_recv(&w.reg, w.qp, &[RecvWr::new(0x11, &[SGE]), RecvWr::new(0x22, &[SGE])]).unwrap();
    let resp = |n: u32| Cqe64 { srqn_uidx: U32::new(w.qp), sop_drop_qpn: U32::new(0x42), byte_cnt: U32::new(n), op_own: CQE_RESP_SEND << 4, ..Default::default() };
    {
        let mut g = w.reg.lock(cq).unwrap();
        let Entry::Cq { buf, .. } = &mut *g else { panic!() };
        // Slot 0: garbage in the first half, the CQE in the second.
        assert!(buf.put(0, [0xa5u8; 64]));
        assert!(buf.put(64, resp(5)));
        assert!(buf.put(128 + 64, resp(7)));
        // A 64-byte reading would see slot 0's garbage and then slot 1 at
        // offset 64: still owned by hardware at 128 + 127.
        assert_eq!(buf.get::<u8>(255), Some(CQE_RESP_SEND << 4));
        assert_eq!(buf.get::<u8>(3 * 128 + 127), Some(0xf0), "untouched slots stay invalid");
    }
    assert!(!is_empty(&w.reg, cq));
    let mut out = [Wc::default(); 4];
    assert_eq!(poll(&w.reg, cq, &mut out), Ok(2));
    assert_eq!([out[0].wr_id(), out[1].wr_id()], [0x11, 0x22]);
    assert_eq!([out[0].byte_len(), out[1].byte_len()], [5, 7]);
    assert!(is_empty(&w.reg, cq));
    let g = w.reg.lock(cq).unwrap();
    let Entry::Cq { buf, ring } = &*g else { panic!() };
    assert_eq!(ring.ci(), 2);
    assert_eq!(buf.get::<[u8; 4]>(512), Some([0, 0, 0, 2]), "consumer index in the record after the 4 x 128 B ring");
}

/// A raw WQE (`mlx5dv_wr_raw_wqe`) rings the doorbell like any post, and
/// its completion reports `IBV_WC_DRIVER2` (136) whatever the CQE's
/// opcode, through the batch poll and the one-at-a-time poll.
#[test]
fn raw_wqe_posts_and_completes_as_driver2() {
    let w = world();
    let mut wqe = [0u8; 32];
    wqe[3] = crate::providers::mlx5::wqe::OPCODE_SEND;
    wqe[4..8].copy_from_slice(&(0x42u32 << 8 | 2).to_be_bytes());
    wqe[11] = 0x08;
    wqe[16..32].copy_from_slice(&[0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x10, 0]);
    post_raw(&w.reg, w.qp, w.db, &wqe, 0x5151).unwrap();
    let mut page = [0u8; 4096];
    rustix::io::pread(&w.uar, &mut page, 0).unwrap();
    assert_eq!(&page[0xa00..0xa08], &[0, 0, 0, 0x0a, 0, 0, 0x42, 2], "the WQE's control segment, index 0, rang");
    post_raw(&w.reg, w.qp, w.db, &wqe, 0x5252).unwrap();
    let req = |i: u16| Cqe64 { srqn_uidx: U32::new(w.qp), sop_drop_qpn: U32::new(u32::from(crate::providers::mlx5::wqe::OPCODE_SEND) << 24 | 0x42), wqe_counter: U16::new(i), op_own: CQE_REQ << 4, ..Default::default() };
    complete(&w, 0, req(0));
    let mut out = [Wc::default(); 2];
    assert_eq!(poll(&w.reg, w.cq, &mut out), Ok(1));
    assert_eq!((out[0].wr_id(), out[0].as_abi().opcode), (0x5151, 136));
    complete(&w, 1, req(1));
    let mut one = [Wc::default()];
    assert_eq!(poll_chunk(&w.reg.made(w.cq), &mut one), 1);
    assert_eq!((one[0].wr_id(), one[0].as_abi().opcode), (0x5252, 136));
}

/// A send queue mixing plain WQEs and one with driver data (a raw WQE,
/// posted after plain ones): a poll's run of the queue's completions must
/// not take the raw one's (it reports `IBV_WC_DRIVER2`, not the CQE's
/// opcode), in a batch poll, a `poll_with` chunk, and with the raw WQE's
/// completion first, middle or last of the run.
#[test]
fn mixed_send_queue_keeps_driver_data_in_runs() {
    use crate::providers::mlx5::wqe::OPCODE_SEND;
    let mut wqe = [0u8; 32];
    wqe[3] = OPCODE_SEND;
    wqe[4..8].copy_from_slice(&(0x42u32 << 8 | 2).to_be_bytes());
    wqe[16..32].copy_from_slice(&[0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x10, 0]);
    for raw_at in 0..3u16 {
        for chunk in [false, true] {
            let w = world();
            for i in 0..3u16 {
                if i == raw_at {
                    post_raw(&w.reg, w.qp, w.db, &wqe, 0x5151).unwrap();
                } else {
                    post_send(&w.reg, w.qp, w.db, &[SendWr::send(u64::from(i) + 1, &[SGE]).signaled()]).unwrap();
                }
            }
            for i in 0..3u16 {
                let c = Cqe64 { srqn_uidx: U32::new(w.qp), sop_drop_qpn: U32::new(u32::from(OPCODE_SEND) << 24 | 0x42), wqe_counter: U16::new(i), op_own: CQE_REQ << 4, ..Default::default() };
                complete(&w, usize::from(i), c);
            }
            let mut out = [Wc::default(); 4];
            let n = match chunk {
                false => poll(&w.reg, w.cq, &mut out).unwrap(),
                true => poll_chunk(&w.reg.made(w.cq), &mut out),
            };
            assert_eq!(n, 3, "raw at {raw_at}, chunk {chunk}");
            for (i, wc) in out[..3].iter().enumerate() {
                let want = if i == usize::from(raw_at) { (0x5151, 136) } else { (i as u64 + 1, 0) };
                assert_eq!((wc.wr_id(), wc.as_abi().opcode), want, "completion {i}, raw at {raw_at}, chunk {chunk}");
            }
            let g = w.reg.lock(w.qp).unwrap();
            let Entry::Qp { sq: Some(sq), .. } = &*g else { panic!() };
            assert_eq!(sq.indices().2, 3, "all three retired");
        }
    }
}
