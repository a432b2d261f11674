//! Engine tests against [`FakeMem`]: a rig that plays libmlx5's part
//! (writing WQEs and doorbell records in the layouts `../shared/MLX5.md`
//! records, polling CQEs by the owner bit) around a [`Device`].

mod basic;
mod errors;
mod garbage;
mod mcast;
mod mw;
mod queues;

use std::collections::HashMap;

use super::consts::{ctrl, INLINE_SEG, INVALID_LKEY};
use super::{Engine, EventSink};
use crate::mem::{FakeMem, HostMem, Pid};
use crate::model::*;

pub const A: Pid = 100;
pub const B: Pid = 200;
const BASE: u64 = 0x10_0000;
const SIZE: usize = 4 << 20;

#[derive(Default, Debug)]
pub struct Events {
    pub completions: Vec<(u32, u64)>,
    pub asyncs: Vec<(u32, u64, u32)>,
}

impl EventSink for Events {
    fn completion(&mut self, channel: u32, cq_user_handle: u64) {
        self.completions.push((channel, cq_user_handle));
    }
    fn async_event(&mut self, ctx: u32, element: u64, event_type: u32) {
        self.asyncs.push((ctx, element, event_type));
    }
}

/// A CQE as libmlx5 would read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Polled {
    pub opcode: u8,
    pub syndrome: u8,
    pub qpn: u32,
    pub wqe_opcode: u8,
    pub srqn_uidx: u32,
    pub byte_cnt: u32,
    pub imm: u32,
    pub flags_rqpn: u32,
    pub wqe_counter: u16,
}

/// The application side of one QP: its producer counters.
#[derive(Default, Clone, Copy)]
struct UserQp {
    sq_pi: u32,
    rq_pi: u32,
}

pub struct Rig {
    pub dev: Device,
    pub mem: FakeMem,
    pub ev: Events,
    brk: HashMap<Pid, u64>,
    user: HashMap<u32, UserQp>,
    cq_ci: HashMap<u32, u32>,
    next: u32,
}

/// A data segment.
pub fn dseg(len: u32, lkey: u32, addr: u64) -> Vec<u8> {
    let mut b = Vec::with_capacity(16);
    b.extend_from_slice(&len.to_be_bytes());
    b.extend_from_slice(&lkey.to_be_bytes());
    b.extend_from_slice(&addr.to_be_bytes());
    b
}

/// An inline segment with its padding.
pub fn inline(data: &[u8]) -> Vec<u8> {
    let mut b = (INLINE_SEG | data.len() as u32).to_be_bytes().to_vec();
    b.extend_from_slice(data);
    b.resize((4 + data.len()).div_ceil(16) * 16, 0);
    b
}

/// A remote-address segment.
pub fn raddr(addr: u64, rkey: u32) -> Vec<u8> {
    let mut b = addr.to_be_bytes().to_vec();
    b.extend_from_slice(&rkey.to_be_bytes());
    b.extend_from_slice(&[0; 4]);
    b
}

/// A UD datagram segment (address vector) to `qpn` with `qkey`.
pub fn datagram(qpn: u32, qkey: u32) -> Vec<u8> {
    let mut b = vec![0u8; 48];
    b[0..4].copy_from_slice(&qkey.to_be_bytes());
    b[8..12].copy_from_slice(&(qpn | 0x8000_0000).to_be_bytes());
    b[27] = 64;
    b[32..48].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1]);
    b
}

impl Rig {
    pub fn new() -> Rig {
        let mem = FakeMem::default();
        mem.add(A, BASE, SIZE);
        mem.add(B, BASE, SIZE);
        let mut dev = Device::default();
        dev.engine.fake_now_ns = Some(0);
        for (id, pid) in [(1, A), (2, B)] {
            dev.ctxs.insert(id, Ctx { id, pid, comp_channels: vec![] });
            dev.pds.insert(id, Pd { pdn: id, ctx: id });
        }
        Rig { dev, mem, ev: Events::default(), brk: HashMap::new(), user: HashMap::new(), cq_ci: HashMap::new(), next: 0x40 }
    }

    pub fn eng(&mut self) -> Engine<'_, FakeMem, Events> {
        Engine { dev: &mut self.dev, mem: &self.mem, events: &mut self.ev }
    }

    fn id(&mut self) -> u32 {
        self.next += 1;
        self.next
    }

    /// Page-aligned zeroed memory of `pid`.
    pub fn alloc(&mut self, pid: Pid, len: u64) -> u64 {
        let b = self.brk.entry(pid).or_insert(BASE);
        let at = *b;
        *b += len.div_ceil(4096) * 4096;
        assert!(*b <= BASE + SIZE as u64, "rig memory exhausted");
        at
    }

    pub fn write(&self, pid: Pid, addr: u64, b: &[u8]) {
        self.mem.write(pid, addr, b).unwrap();
    }

    pub fn read(&self, pid: Pid, addr: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0; len];
        self.mem.read(pid, addr, &mut b).unwrap();
        b
    }

    fn pd_of(pid: Pid) -> u32 {
        if pid == A { 1 } else { 2 }
    }

    /// Registers `len` bytes of fresh memory; returns (key, addr).
    pub fn mr(&mut self, pid: Pid, len: u64, acc: u32) -> (u32, u64) {
        let addr = self.alloc(pid, len);
        let key = self.id() << 8 | 0x11;
        let pd = Self::pd_of(pid);
        let mr = Mr { key, pdn: pd, ctx: pd, pid, addr, iova: addr, length: len, access: acc, valid: true };
        self.dev.mrs.insert(key, mr);
        (key, addr)
    }

    pub fn cq(&mut self, pid: Pid, ncqe: u32, cqe_size: u32) -> u32 {
        let buf = self.alloc(pid, u64::from(ncqe * cqe_size));
        for i in 0..ncqe {
            self.write(pid, buf + u64::from(i * cqe_size + cqe_size - 1), &[0xf0]);
        }
        let dbrec = self.alloc(pid, 64);
        // no arm written yet, as CREATE_CQ leaves the arm word
        self.write(pid, dbrec + 4, &crate::model::ARM_UNSET.to_be_bytes());
        let cqn = self.id();
        let ctx = Self::pd_of(pid);
        let cq = Cq {
            cqn, ctx, pid, user_handle: u64::from(cqn) + 0x1000, buf, dbrec, ncqe, cqe_size,
            pi: 0, armed: None, arm_sn: 0, arm_taken: crate::model::ARM_UNSET, channel: Some(cqn + 7), overrun: false,
        };
        self.dev.cqs.insert(cqn, cq);
        cqn
    }

    /// A QP in RTS (RC/UC connected later with [`Rig::connect`]).
    pub fn qp(&mut self, pid: Pid, ty: QpType, cqn: u32, sq_cnt: u32, srqn: Option<u32>) -> u32 {
        let (rq_cnt, rq_shift) = (16u32, 6u32);
        let buf = self.alloc(pid, u64::from(rq_cnt << rq_shift) + u64::from(sq_cnt * 64));
        let dbrec = self.alloc(pid, 64);
        let qpn = self.id();
        let ctx = Self::pd_of(pid);
        let rq = Wq { buf, wqe_cnt: rq_cnt, wqe_shift: rq_shift, ci: 0 };
        let sq = Wq { buf: buf + u64::from(rq_cnt << rq_shift), wqe_cnt: sq_cnt, wqe_shift: 6, ci: 0 };
        let attrs = QpAttrs {
            qkey: 0x1111_1111, access: access::REMOTE_WRITE | access::REMOTE_READ | access::REMOTE_ATOMIC,
            retry_cnt: 7, rnr_retry: 7, min_rnr_timer: 12, timeout: 14, ..QpAttrs::default()
        };
        let qp = Qp {
            qpn, ctx, pid, user_handle: u64::from(qpn) + 0x2000, pdn: ctx, qp_type: ty, state: QpState::Rts,
            sq, rq, dbrec, send_cqn: cqn, recv_cqn: cqn, srqn, uidx: qpn + 0x500, sq_sig_all: false,
            scatter_cqe: false, attrs, max_inline: 64, max_recv_sge: 4, mcast: vec![], block_self_mcast_lb: false,
        };
        self.dev.qps.insert(qpn, qp);
        self.user.insert(qpn, UserQp::default());
        qpn
    }

    /// The application's producer counters (send WQEBBs, receives) of
    /// `qpn`: where a QP reset to them starts with empty queues.
    pub fn user_pi(&self, qpn: u32) -> (u32, u32) {
        let u = self.user[&qpn];
        (u.sq_pi, u.rq_pi)
    }

    pub fn connect(&mut self, a: u32, b: u32) {
        self.dev.qps.get_mut(&a).unwrap().attrs.dest_qpn = b;
        self.dev.qps.get_mut(&b).unwrap().attrs.dest_qpn = a;
    }

    /// Writes a send WQE as libmlx5 does (wrapping at the ring's end) and
    /// its doorbell record; returns the WQE index. No doorbell is rung.
    pub fn post(&mut self, qpn: u32, opcode: u8, fm_ce_se: u8, imm: u32, segs: &[Vec<u8>]) -> u16 {
        let qp = self.dev.qps[&qpn].clone();
        let u = self.user[&qpn];
        let mut w = Vec::new();
        let body: Vec<u8> = segs.concat();
        let ds = 1 + body.len() / 16;
        w.extend_from_slice(&((u.sq_pi & 0xffff) << 8 | u32::from(opcode)).to_be_bytes());
        w.extend_from_slice(&(qpn << 8 | ds as u32).to_be_bytes());
        w.extend_from_slice(&[0, 0, 0, fm_ce_se]);
        w.extend_from_slice(&imm.to_be_bytes());
        w.extend_from_slice(&body);
        let ring = u64::from(qp.sq.wqe_cnt) * 64;
        for (i, chunk) in w.chunks(16).enumerate() {
            let off = (u64::from(u.sq_pi & (qp.sq.wqe_cnt - 1)) * 64 + i as u64 * 16) % ring;
            self.write(qp.pid, qp.sq.buf + off, chunk);
        }
        let nbb = (ds * 16).div_ceil(64) as u32;
        let pi = u.sq_pi + nbb;
        self.user.get_mut(&qpn).unwrap().sq_pi = pi;
        self.write(qp.pid, qp.dbrec + 4, &(pi & 0xffff).to_be_bytes());
        u.sq_pi as u16
    }

    /// Posts and rings: the usual signaled case.
    pub fn send(&mut self, qpn: u32, opcode: u8, segs: &[Vec<u8>]) -> u16 {
        let idx = self.post(qpn, opcode, ctrl::CQ_UPDATE, 0, segs);
        self.eng().sq_doorbell(qpn);
        idx
    }

    /// A receive WQE (data segments, terminator if short) on the RQ.
    pub fn recv(&mut self, qpn: u32, sges: &[(u32, u32, u64)]) {
        let qp = self.dev.qps[&qpn].clone();
        let u = self.user[&qpn];
        let at = qp.rq.buf + (u64::from(u.rq_pi & (qp.rq.wqe_cnt - 1)) << qp.rq.wqe_shift);
        let mut w: Vec<u8> = sges.iter().flat_map(|&(l, k, a)| dseg(l, k, a)).collect();
        if sges.len() < 4 {
            w.extend(dseg(0, INVALID_LKEY, 0));
        }
        self.write(qp.pid, at, &w);
        self.user.get_mut(&qpn).unwrap().rq_pi += 1;
        self.write(qp.pid, qp.dbrec, &((u.rq_pi + 1) & 0xffff).to_be_bytes());
    }

    /// Polls every new CQE (owner bit as libmlx5 checks it) and updates
    /// the consumer index in the doorbell record.
    pub fn poll(&mut self, cqn: u32) -> Vec<Polled> {
        let cq = self.dev.cqs[&cqn].clone();
        let ci = self.cq_ci.entry(cqn).or_insert(0);
        let mut out = Vec::new();
        loop {
            let slot = u64::from(*ci & (cq.ncqe - 1));
            let at = cq.buf + slot * u64::from(cq.cqe_size) + u64::from(cq.cqe_size - 64);
            let mut b = [0u8; 64];
            self.mem.read(cq.pid, at, &mut b).unwrap();
            let (op, owner) = (b[63] >> 4, b[63] & 1);
            if op == 0xf || u32::from(owner) != (*ci / cq.ncqe) & 1 {
                break;
            }
            let be32 = |o: usize| u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
            out.push(Polled {
                opcode: op,
                syndrome: b[55],
                qpn: be32(56) & 0xff_ffff,
                wqe_opcode: b[56],
                srqn_uidx: be32(32),
                byte_cnt: be32(44),
                imm: be32(36),
                flags_rqpn: be32(24),
                wqe_counter: u16::from_be_bytes([b[60], b[61]]),
            });
            *ci += 1;
        }
        let ci = *ci;
        self.write(cq.pid, cq.dbrec, &(ci & 0xff_ffff).to_be_bytes());
        out
    }
}
