//! The mlx5 data path through the context's table (`providers::mlx5::ops`,
//! what the provider's posts and polls call): arbitrary request lists
//! posted to arbitrary slot numbers (a QP, a QP on an SRQ, the SRQ, the
//! CQ, a freed slot, a slot past the table), arbitrary bytes in the CQ's
//! slots naming arbitrary user indices (the CQ itself included), polls,
//! one-at-a-time polls, arming, and QPs destroyed and recreated while
//! their completions wait. Never a panic, never a hang (a poll that
//! waited for a slot only another poller could free would hang here:
//! scripts/fuzz.sh runs with a timeout), a refused post changes no byte
//! and no index, a poll returns at most what was asked, and the CQ's
//! doorbell record holds its consumer index after every poll.
#![no_main]

mod common;

use common::Bytes;
use libfuzzer_sys::fuzz_target;
use rustix::fd::OwnedFd;
use verbs::providers::mlx5::buf::WqBuf;
use verbs::providers::mlx5::ctx::{sim_response, CtxInfo, Doorbell, Uars};
use verbs::providers::mlx5::ops;
use verbs::providers::mlx5::registry::{Entry, RegRef};
use verbs::providers::mlx5::res::{CqMem, QpMem, SrqMem};
use verbs::providers::mlx5::sizing::DeviceLimits;
use verbs::qp::{QpCap, QpType};
use verbs::wc::Wc;
use verbs::wr::{RecvWr, SendFlags, SendWr, Sge};
use zerocopy::IntoBytes;

const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 1024, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
/// CQ entries (a power of two).
const NCQE: u32 = 8;

struct World {
    reg: RegRef,
    _uar: OwnedFd,
    db: Doorbell,
    cq: u32,
    qp: u32,
    qp_on_srq: u32,
    srq: u32,
}

/// The context of the simulated ConnectX (its ALLOC_UCONTEXT response).
fn ctx_info() -> CtxInfo {
    CtxInfo::from_response(sim_response().as_bytes()).unwrap()
}

fn qp_entry(reg: &RegRef, db: Doorbell, srq_uidx: Option<u32>, sq_wr: u32, sig_all: bool) -> u32 {
    let cap = QpCap { max_send_wr: sq_wr, max_recv_wr: 4, max_send_sge: 2, max_recv_sge: 2, max_inline_data: 64 };
    let m = QpMem::new("fuzz", &LIM, QpType::Rc, &cap, srq_uidx.is_some(), 64).unwrap();
    let (sq, rq) = m.queues("fuzz", 0x42, QpType::Rc, sig_all, true, db.blueflame()).unwrap();
    reg.insert(Entry::Qp { sq, rq, buf: m.buf, srq_uidx }).unwrap()
}

fn world() -> World {
    let uar = rustix::fs::memfd_create("verbs-fuzz-uar", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&uar, 8 * 4096).unwrap();
    let reg = RegRef::new("fuzz", Uars::map(rustix::fd::AsFd::as_fd(&uar), ctx_info()).unwrap()).unwrap();
    let db = reg.uars().doorbell(1).unwrap();
    let c = CqMem::new("fuzz", NCQE - 1, 64, 64).unwrap();
    let ring = c.ring("fuzz", NCQE - 1, 0x77, 1).unwrap();
    let cq = reg.insert(Entry::Cq { ring, buf: c.buf }).unwrap();
    let qp = qp_entry(&reg, db, None, 4, false);
    let mut s = SrqMem::new("fuzz", &LIM, 4, 2, 64).unwrap();
    let srq_state = s.srq("fuzz").unwrap();
    let srq = reg.insert(Entry::Srq { srq: srq_state, buf: s.buf, handle: 9 }).unwrap();
    let qp_on_srq = qp_entry(&reg, db, Some(srq), 4, true);
    World { reg, _uar: uar, db, cq, qp, qp_on_srq, srq }
}

/// The bytes of `b` (8 at a time: the buffer's reads are bounds-checked).
fn bytes(b: &WqBuf) -> Vec<u8> {
    (0..b.len() / 8).flat_map(|i| b.get::<[u8; 8]>(i * 8).unwrap()).collect()
}

/// A snapshot of slot `uidx`: its buffer's bytes and its queue indices.
fn snapshot(reg: &RegRef, uidx: u32) -> Option<(Vec<u8>, String)> {
    let g = reg.lock(uidx)?;
    Some(match &*g {
        Entry::Qp { sq, rq, buf, .. } => (bytes(buf), format!("{:?} {:?}", sq.as_ref().map(|s| s.indices()), rq.as_ref().map(|r| r.indices()))),
        Entry::Srq { srq, buf, .. } => (bytes(buf), format!("{:?}", srq.indices())),
        Entry::Cq { ring, buf } => (bytes(buf), format!("{}", ring.ci())),
        e => (Vec::new(), format!("{e:?}")),
    })
}

fn cq_state(w: &World) -> (u32, [u8; 4]) {
    let g = w.reg.lock(w.cq).unwrap();
    let Entry::Cq { ring, buf } = &*g else { panic!("the CQ's slot holds the CQ") };
    (ring.ci(), buf.get::<[u8; 4]>((NCQE * 64) as usize).unwrap())
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let mut w = world();
    let payload = [0xa5u8; 128];
    let mut out = [Wc::ZERO; 8];
    while !b.is_empty() {
        // The slot an operation names: mostly a real one, sometimes anything.
        let pick = b.u8();
        let target = match pick % 8 {
            0 | 1 => w.qp,
            2 => w.qp_on_srq,
            3 => w.srq,
            4 => w.cq,
            5 => 0,
            6 => u32::from(b.u8()),
            _ => b.u32(),
        };
        match b.u8() % 9 {
            op @ (0 | 1) => {
                let n = usize::from(b.u8() % 4);
                let sg: Vec<[Sge; 2]> = (0..n).map(|_| [Sge { addr: b.u64(), length: b.u32() % 512, lkey: b.u32() }; 2]).collect();
                let wrs: Vec<SendWr<'_>> = sg
                    .iter()
                    .map(|s| {
                        let (k, kind, flags, inl) = (usize::from(b.u8() % 3), b.u8(), b.u8(), b.u8());
                        let wr = match kind % 5 {
                            0 => SendWr::send(b.u64(), &s[..k]),
                            1 => SendWr::send_with_imm(b.u64(), &s[..k], b.u32()),
                            2 => SendWr::rdma_write(b.u64(), &s[..k], b.u64(), b.u32()),
                            3 => SendWr::rdma_read(b.u64(), &s[..k], b.u64(), b.u32()),
                            _ => SendWr::fetch_add(b.u64(), &s[..k.min(1)], b.u64(), b.u32(), b.u64()),
                        };
                        let wr = wr.flags(SendFlags::from_bits_retain(u32::from(flags & 0x1f)));
                        if inl & 0x80 != 0 { wr.inline(&payload[..usize::from(inl & 0x7f)]) } else { wr }
                    })
                    .collect();
                let before = snapshot(&w.reg, target);
                let ok = if op == 0 || wrs.len() != 1 {
                    ops::post_send(&w.reg, target, w.db, &wrs).is_ok()
                } else {
                    ops::post_send_straight(&w.reg, &w.reg.made(target), &w.db, &w.reg.made_bf(&w.db), &wrs[0])
                };
                if !ok {
                    assert!(snapshot(&w.reg, target) == before, "a refused or declined post changes nothing");
                }
            }
            2 | 3 => {
                let n = usize::from(b.u8() % 4);
                let sg: Vec<[Sge; 3]> = (0..n).map(|_| [Sge { addr: b.u64(), length: b.u32(), lkey: b.u32() }; 3]).collect();
                let wrs: Vec<RecvWr<'_>> = sg.iter().map(|s| RecvWr::new(b.u64(), &s[..usize::from(b.u8() % 4)])).collect();
                let before = snapshot(&w.reg, target);
                let ok = match b.u8() % 3 {
                    0 => ops::post_recv(&w.reg, target, &wrs).is_ok(),
                    1 => ops::post_srq_recv(&w.reg, target, &wrs).is_ok(),
                    _ => match wrs.first() {
                        Some(r) => ops::post_recv_one(&w.reg.made(target), r.wr_id, r.sg_list.first()),
                        None => false,
                    },
                };
                if !ok {
                    assert!(snapshot(&w.reg, target) == before, "a refused post changes nothing");
                }
            }
            4 => {
                // The device writes a CQE: arbitrary bytes naming `target`,
                // usually with the owner bit of the pass the consumer expects.
                let slot = u32::from(b.u8()) % NCQE;
                let mut cqe = [0u8; 64];
                for v in cqe.iter_mut() {
                    *v = b.u8();
                }
                cqe[32..36].copy_from_slice(&target.to_be_bytes());
                let mut g = w.reg.lock(w.cq).unwrap();
                let Entry::Cq { ring, buf } = &mut *g else { panic!("the CQ's slot holds the CQ") };
                if pick & 0x80 == 0 {
                    let own = u8::from(ring.ci() & NCQE != 0);
                    cqe[63] = cqe[63] & !1 | own;
                }
                assert!(buf.put_bytes((slot * 64) as usize, &cqe));
            }
            5 => {
                let n = usize::from(b.u8() % 9);
                let (ci, _) = cq_state(&w);
                match ops::poll(&w.reg, w.cq, &mut out[..n]) {
                    Ok(k) => assert!(k <= n),
                    Err(k) => assert!(k <= n),
                }
                let (ci2, rec) = cq_state(&w);
                assert!(ci2.wrapping_sub(ci) <= NCQE * 2, "the consumer index moved by at most what the ring holds");
                assert_eq!(rec, (ci2 & 0xff_ffff).to_be_bytes(), "the doorbell record holds the consumer index");
            }
            6 => {
                // `poll_with`: a chunk (its doorbell record stored), then
                // (its closure panicking after some) the rest of it put back.
                let mut chunk = [Wc::ZERO; 8];
                let n = usize::from(b.u8() % 9);
                let k = ops::poll_chunk(&w.reg.made(w.cq), &mut chunk[..n]);
                assert!(k <= n);
                let handed = usize::from(b.u8()) % (k + 1);
                assert!(ops::put_back(&w.reg, w.cq, &chunk[handed..k]), "a chunk's rest always fits the stash");
                let (ci, rec) = cq_state(&w);
                assert_eq!(rec, (ci & 0xff_ffff).to_be_bytes(), "the doorbell record holds the consumer index");
            }
            7 => {
                match b.u8() % 3 {
                    0 => ops::cq_event(&w.reg, w.cq),
                    1 => {
                        let _ = ops::arm(&w.reg, w.cq, b.u8() & 1 == 0);
                    }
                    _ => {
                        let _ = ops::is_empty(&w.reg, w.cq);
                    }
                }
            }
            _ => {
                // A QP destroyed (its completions may still wait in the CQ)
                // and another created, perhaps in the same slot.
                if pick & 1 == 0 {
                    let _ = w.reg.remove(w.qp);
                    w.qp = qp_entry(&w.reg, w.db, None, 1 + u32::from(b.u8() % 8), pick & 2 != 0);
                } else {
                    let _ = w.reg.remove(w.qp_on_srq);
                    w.qp_on_srq = qp_entry(&w.reg, w.db, Some(w.srq), 1 + u32::from(b.u8() % 8), pick & 2 != 0);
                }
            }
        }
    }
});
