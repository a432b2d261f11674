//! Resizing on real bytes: CQEs waiting in the old buffer around its
//! wrap, the device's `RESIZE_CQ` marker after them, the copies polled in
//! order from the new buffer, then the device's next CQE there; the
//! doorbell record stays in the first buffer through two resizes.

use crate::providers::mlx5::ctx::Doorbell;
use crate::providers::mlx5::ops;
use crate::providers::mlx5::registry::{Entry, RegRef};
use crate::providers::mlx5::res::{CqMem, QpMem};
use crate::providers::mlx5::sizing::DeviceLimits;
use crate::providers::mlx5::wqe::{Cqe64, CQE_REQ, CQE_RESIZE_CQ, OPCODE_SEND};
use crate::qp::{QpCap, QpType};
use crate::wc::Wc;
use crate::wr::{SendWr, Sge};
use zerocopy::byteorder::network_endian::{U16, U32};

const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 1024, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
const SGE: Sge = Sge { addr: 0x1000, length: 8, lkey: 1 };

struct World {
    reg: RegRef,
    _uar: rustix::fd::OwnedFd,
    db: Doorbell,
    cq: u32,
    qp: u32,
    /// Entries of the CQ's current buffer.
    ncqe: usize,
}

fn world() -> World {
    let uar = rustix::fs::memfd_create("verbs-resize-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&uar, 8 * 4096).unwrap();
    let reg = RegRef::new("test", super::super::super::ctx::tests::sim_uars(&uar)).unwrap();
    let db = reg.uars().doorbell(1).unwrap();
    let c = CqMem::new("test", 7, 64, 64).unwrap();
    let ring = c.ring("test", 7, 0x77, 1).unwrap();
    let cq = reg.insert(Entry::Cq { ring, buf: c.buf }).unwrap();
    let cap = QpCap { max_send_wr: 16, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let m = QpMem::new("test", &LIM, QpType::Rc, &cap, false, 64).unwrap();
    let (sq, rq) = m.queues("test", 0x42, QpType::Rc, false, false, db.blueflame()).unwrap();
    let qp = reg.insert(Entry::Qp { sq, rq, buf: m.buf, srq_uidx: None }).unwrap();
    World { reg, _uar: uar, db, cq, qp, ncqe: 8 }
}

/// Writes the device's CQE number `pi` into the CQ's current buffer.
fn produce(w: &World, pi: usize, opcode: u8, wqe: u16) {
    let c = Cqe64 {
        srqn_uidx: U32::new(w.qp),
        sop_drop_qpn: U32::new(u32::from(OPCODE_SEND) << 24 | 0x42),
        wqe_counter: U16::new(wqe),
        op_own: opcode << 4 | ((pi / w.ncqe) & 1) as u8,
        ..Default::default()
    };
    let mut g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { buf, .. } = &mut *g else { panic!() };
    assert!(buf.put((pi % w.ncqe) * 64, c));
}

fn send(w: &World, id: u64) {
    ops::post_send(&w.reg, w.qp, w.db, &[SendWr::send(id, &[SGE]).signaled()]).unwrap();
}

fn ids(w: &World) -> Vec<u64> {
    let mut out = [Wc::default(); 16];
    let n = ops::poll(&w.reg, w.cq, &mut out).unwrap();
    out[..n].iter().map(Wc::wr_id).collect()
}

/// Moves the CQ to a new buffer of `ncqe` entries, as after `RESIZE_CQ`.
fn resize(w: &mut World, ncqe: u32) -> Result<(), &'static str> {
    let mem = CqMem::new("test", ncqe - 1, 64, 64).unwrap();
    let mut g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { ring, buf } = &mut *g else { panic!() };
    w.ncqe = ncqe as usize;
    ring.move_to(buf, mem.buf, ncqe)
}

/// The consumer index in the doorbell record of the CQ's first buffer.
fn record(w: &World) -> u32 {
    let g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { ring, buf } = &*g else { panic!() };
    let db: [u8; 4] = ring.dbrec_buf(buf).get(8 * 64).unwrap();
    u32::from_be_bytes(db)
}

#[test]
fn waiting_completions_move_to_the_bigger_buffer_and_the_device_goes_on_there() {
    let mut w = world();
    for i in 0..5u16 {
        send(&w, u64::from(i));
        produce(&w, usize::from(i), CQE_REQ, i);
        assert_eq!(ids(&w), [u64::from(i)]);
    }
    // Three waiting (5, 6, 7: the last one past the old ring's wrap is
    // the marker at 8).
    for i in 5..8u16 {
        send(&w, 0x10 + u64::from(i));
        produce(&w, usize::from(i), CQE_REQ, i);
    }
    produce(&w, 8, CQE_RESIZE_CQ, 0);
    resize(&mut w, 16).unwrap();
    // The device's next CQE is number 9, in the new buffer.
    send(&w, 0x20);
    produce(&w, 9, CQE_REQ, 8);
    assert_eq!(ids(&w), [0x15, 0x16, 0x17, 0x20]);
    assert_eq!(record(&w), 10, "the consumer index, in the record the kernel knows");
    assert_eq!(ids(&w), [] as [u64; 0]);

    // Smaller again, with nothing waiting: the marker at 10.
    produce(&w, 10, CQE_RESIZE_CQ, 0);
    resize(&mut w, 4).unwrap();
    send(&w, 0x30);
    produce(&w, 11, CQE_REQ, 9);
    assert_eq!(ids(&w), [0x30]);
    assert_eq!(record(&w), 12);
}

#[test]
fn no_marker_is_refused_and_the_ring_moves_all_the_same() {
    let mut w = world();
    send(&w, 1);
    produce(&w, 0, CQE_REQ, 0);
    // Entry 1 is still the device's: no marker where the entries end.
    assert!(resize(&mut w, 16).is_err());
    let g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { ring, buf } = &*g else { panic!() };
    assert_eq!((ring.ci(), buf.len() >= 16 * 64), (0, true));
}
