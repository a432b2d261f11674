//! Executing one send WQE: SEND (with immediate / invalidate), RDMA WRITE
//! (with immediate), RDMA READ, the two atomics, NOP; each delivered to the
//! peer on the same port (RC/UC by the QP's destination QPN, UD by the
//! datagram segment's) and answered as IB's transport would.

use super::consts::{cqe_op, ctrl, event, op, syn, GRH_LEN};
use super::recv::{Incoming, Resp};
use super::send::Outcome;
use super::state::StallKind;
use super::wqe::{be32, be64, Gather, Segs, SendWqe};
use super::{Engine, EventSink};
use crate::mem::HostMem;
use crate::model::{access, Qp, QpType};

/// The requester's view of a responder's answer.
fn outcome(qp: &Qp, r: Resp, len: u64) -> Outcome {
    match (qp.qp_type, r) {
        (QpType::Rc, Resp::Rnr(code)) => Outcome::Stall(StallKind::Rnr, code),
        (QpType::Rc, Resp::NoResponse) => Outcome::Stall(StallKind::NoResponse, 0),
        (QpType::Rc, Resp::Nak(s)) => Outcome::Fail(s),
        _ => Outcome::Done(len as u32),
    }
}

/// A 40-byte GRH as a RoCE v2 NIC writes it in front of a UD receive: for
/// an IPv4-mapped GID the IPv4 header in the last 20 bytes, else an IPv6
/// header. Source and destination are the port's address (one port).
pub fn make_grh(av: &[u8], payload_len: usize) -> [u8; GRH_LEN] {
    let mut dgid = [0u8; 16];
    dgid.copy_from_slice(&av[32..48]);
    make_grh_from(av, &dgid, payload_len)
}

/// [`make_grh`] with the source address `src` (a multicast datagram's
/// destination is the group, its source the sender's GID).
pub fn make_grh_from(av: &[u8], src: &[u8; 16], payload_len: usize) -> [u8; GRH_LEN] {
    let mut g = [0u8; GRH_LEN];
    let gid = &av[32..48];
    let (tclass, hop) = (av[26], if av[27] == 0 { 64 } else { av[27] });
    // UDP 8 + BTH 12 + DETH 8 + payload + ICRC 4.
    let l4 = 8 + 12 + 8 + payload_len + 4;
    if gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff {
        let ip = &mut g[20..];
        ip[0] = 0x45;
        ip[1] = tclass;
        ip[2..4].copy_from_slice(&((20 + l4) as u16).to_be_bytes());
        ip[6] = 0x40;
        ip[8] = hop;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&src[12..]);
        ip[16..20].copy_from_slice(&gid[12..]);
        let mut sum: u32 = ip.chunks_exact(2).map(|c| u32::from(u16::from_be_bytes([c[0], c[1]]))).sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        ip[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    } else {
        let vtf = (6u32 << 28) | (u32::from(tclass) << 20);
        g[0..4].copy_from_slice(&vtf.to_be_bytes());
        g[4..6].copy_from_slice(&(l4 as u16).to_be_bytes());
        g[6] = 17;
        g[7] = hop;
        g[8..24].copy_from_slice(src);
        g[24..40].copy_from_slice(gid);
    }
    g
}

/// The Q_Key a UD WQE sends with: the datagram segment's, or the QP's own
/// when its high bit is set (IB spec 10.2.5).
pub(crate) fn ud_qkey(qp: &Qp, av: &[u8]) -> u32 {
    let wr_qkey = be32(av, 0);
    if wr_qkey & 0x8000_0000 != 0 {
        qp.attrs.qkey
    } else {
        wr_qkey
    }
}

impl<M: HostMem, E: EventSink> Engine<'_, M, E> {
    /// Executes `w` of requester `qp`.
    pub(crate) fn execute(&mut self, qp: &Qp, w: &SendWqe) -> Outcome {
        let rc_uc = matches!(qp.qp_type, QpType::Rc | QpType::Uc);
        match w.opcode {
            op::NOP => Outcome::Done(0),
            op::UMR if rc_uc => self.umr(qp, w),
            op::LOCAL_INVAL if rc_uc => self.local_inval(qp, w.imm),
            op::SEND | op::SEND_IMM => self.send(qp, w),
            op::SEND_INVAL if qp.qp_type == QpType::Rc => self.send(qp, w),
            op::RDMA_WRITE | op::RDMA_WRITE_IMM if rc_uc => self.write(qp, w),
            op::RDMA_READ if qp.qp_type == QpType::Rc => self.read(qp, w),
            op::ATOMIC_CS | op::ATOMIC_FA if qp.qp_type == QpType::Rc => self.atomic(qp, w),
            _ => Outcome::Fail(syn::LOC_QP_OP),
        }
    }

    fn send(&mut self, qp: &Qp, w: &SendWqe) -> Outcome {
        let mut segs = Segs::new(w);
        let av = if qp.qp_type == QpType::Ud {
            match segs.take(48) {
                Some(av) => Some(av.to_vec()),
                None => return Outcome::Fail(syn::LOC_QP_OP),
            }
        } else {
            None
        };
        let Some(g) = segs.gather() else { return Outcome::Fail(syn::LOC_QP_OP) };
        let data = match self.gather(qp.pdn, &g) {
            Ok(d) => d,
            Err(s) => return Outcome::Fail(s),
        };
        let len = data.len() as u64;
        let cqe_opcode = match w.opcode {
            op::SEND_IMM => cqe_op::RESP_SEND_IMM,
            op::SEND_INVAL => cqe_op::RESP_SEND_INV,
            _ => cqe_op::RESP_SEND,
        };
        if let Some(av) = av.as_deref().filter(|av| super::mcast::to_group(av)) {
            return self.send_to_group(qp, w, av, &data, cqe_opcode);
        }
        let dest = match &av {
            Some(av) => be32(av, 8) & 0xff_ffff,
            None => qp.attrs.dest_qpn,
        };
        let Some(dst) = self.receiver(dest, qp.qp_type) else { return outcome(qp, Resp::NoResponse, len) };
        if let Some(av) = &av {
            if ud_qkey(qp, av) != dst.attrs.qkey {
                return Outcome::Done(len as u32);
            }
        }
        let m = Incoming {
            src: qp.qpn,
            data: &data,
            cqe_opcode,
            imm: if cqe_opcode == cqe_op::RESP_SEND { 0 } else { w.imm },
            solicited: w.fm_ce_se & ctrl::SOLICITED != 0,
            grh: av.as_deref().map(|av| make_grh(av, data.len())),
        };
        let r = self.deliver_send(&dst, &m);
        outcome(qp, r, len)
    }

    /// A responder's check failed: NAK; an RC responder goes to ERR with
    /// the affiliated event of the error class (IB spec 9.9.3, class C).
    fn access_error(&mut self, dst: &Qp, syndrome: u8) -> Resp {
        if dst.qp_type == QpType::Rc {
            let ev = if syndrome == syn::REM_ACCESS { event::QP_ACCESS_ERR } else { event::QP_REQ_ERR };
            self.dev.engine.pending_errors.push((dst.qpn, ev));
            Resp::Nak(syndrome)
        } else {
            Resp::Ack
        }
    }

    fn write(&mut self, qp: &Qp, w: &SendWqe) -> Outcome {
        let mut segs = Segs::new(w);
        let Some(ra) = segs.take(16) else { return Outcome::Fail(syn::LOC_QP_OP) };
        let (raddr, rkey) = (be64(ra, 0), be32(ra, 8));
        let Some(g) = segs.gather() else { return Outcome::Fail(syn::LOC_QP_OP) };
        let data = match self.gather(qp.pdn, &g) {
            Ok(d) => d,
            Err(s) => return Outcome::Fail(s),
        };
        let len = data.len() as u64;
        let Some(dst) = self.receiver(qp.attrs.dest_qpn, qp.qp_type) else {
            return outcome(qp, Resp::NoResponse, len);
        };
        let r = self.write_at(&dst, w, qp.qpn, raddr, rkey, &data);
        outcome(qp, r, len)
    }

    fn write_at(&mut self, dst: &Qp, w: &SendWqe, src: u32, raddr: u64, rkey: u32, data: &[u8]) -> Resp {
        let recv = if w.opcode == op::RDMA_WRITE_IMM {
            match self.peek_recv(dst) {
                Some(r) => Some(r),
                None => return Self::no_recv(dst),
            }
        } else {
            None
        };
        if dst.attrs.access & access::REMOTE_WRITE == 0 {
            return self.access_error(dst, syn::REM_ACCESS);
        }
        let Some(at) = self.remote_range(dst, rkey, raddr, data.len() as u64, access::REMOTE_WRITE) else {
            return self.access_error(dst, syn::REM_ACCESS);
        };
        if !data.is_empty() && self.mem.write(at.pid, at.addr, data).is_err() {
            return self.access_error(dst, syn::REM_ACCESS);
        }
        if let Some(r) = recv {
            let cqe = super::cqe::Cqe {
                opcode: cqe_op::RESP_WR_IMM,
                byte_cnt: data.len() as u32,
                imm: w.imm,
                flags_rqpn: src & 0xff_ffff,
                solicited: w.fm_ce_se & ctrl::SOLICITED != 0,
                ..Default::default()
            };
            self.recv_done(dst, &r, cqe);
        }
        Resp::Ack
    }

    fn read(&mut self, qp: &Qp, w: &SendWqe) -> Outcome {
        let mut segs = Segs::new(w);
        let Some(ra) = segs.take(16) else { return Outcome::Fail(syn::LOC_QP_OP) };
        let (raddr, rkey) = (be64(ra, 0), be32(ra, 8));
        let Some(Gather::Sges(sges)) = segs.gather() else { return Outcome::Fail(syn::LOC_QP_OP) };
        let len: u64 = sges.iter().map(|s| u64::from(s.len)).sum();
        if let Err(s) = self.check_scatter(qp.pdn, &sges, len as usize) {
            return Outcome::Fail(s);
        }
        let Some(dst) = self.receiver(qp.attrs.dest_qpn, qp.qp_type) else {
            return outcome(qp, Resp::NoResponse, len);
        };
        if dst.attrs.access & access::REMOTE_READ == 0 {
            let r = self.access_error(&dst, syn::REM_ACCESS);
            return outcome(qp, r, len);
        }
        let mut data = vec![0u8; len as usize];
        let ok = match self.remote_range(&dst, rkey, raddr, len, access::REMOTE_READ) {
            Some(at) => data.is_empty() || self.mem.read(at.pid, at.addr, &mut data).is_ok(),
            None => false,
        };
        if !ok {
            let r = self.access_error(&dst, syn::REM_ACCESS);
            return outcome(qp, r, len);
        }
        match self.scatter(qp.pdn, &sges, &data) {
            Ok(()) => Outcome::Done(len as u32),
            Err(s) => Outcome::Fail(s),
        }
    }

    fn atomic(&mut self, qp: &Qp, w: &SendWqe) -> Outcome {
        let mut segs = Segs::new(w);
        let (Some(ra), Some(at)) = (segs.take(16), segs.take(16)) else { return Outcome::Fail(syn::LOC_QP_OP) };
        let (raddr, rkey) = (be64(ra, 0), be32(ra, 8));
        let (swap_add, compare) = (be64(at, 0), be64(at, 8));
        let Some(Gather::Sges(sges)) = segs.gather() else { return Outcome::Fail(syn::LOC_QP_OP) };
        if let Err(s) = self.check_scatter(qp.pdn, &sges, 8) {
            return Outcome::Fail(s);
        }
        let Some(dst) = self.receiver(qp.attrs.dest_qpn, qp.qp_type) else {
            return outcome(qp, Resp::NoResponse, 8);
        };
        if dst.attrs.access & access::REMOTE_ATOMIC == 0 {
            let r = self.access_error(&dst, syn::REM_ACCESS);
            return outcome(qp, r, 8);
        }
        if raddr % 8 != 0 {
            let r = self.access_error(&dst, syn::REM_INV_REQ);
            return outcome(qp, r, 8);
        }
        let Some(loc) = self.remote_range(&dst, rkey, raddr, 8, access::REMOTE_ATOMIC) else {
            let r = self.access_error(&dst, syn::REM_ACCESS);
            return outcome(qp, r, 8);
        };
        // The device answers in host byte order (mlx5_ib enables atomics only
        // with the responder's 8-byte endianness mode = host).
        let mut old = [0u8; 8];
        if self.mem.read(loc.pid, loc.addr, &mut old).is_err() {
            let r = self.access_error(&dst, syn::REM_ACCESS);
            return outcome(qp, r, 8);
        }
        let orig = u64::from_ne_bytes(old);
        let new = match w.opcode {
            op::ATOMIC_CS if orig == compare => Some(swap_add),
            op::ATOMIC_CS => None,
            _ => Some(orig.wrapping_add(swap_add)),
        };
        if let Some(v) = new {
            if self.mem.write(loc.pid, loc.addr, &v.to_ne_bytes()).is_err() {
                let r = self.access_error(&dst, syn::REM_ACCESS);
                return outcome(qp, r, 8);
            }
        }
        match self.scatter(qp.pdn, &sges, &old) {
            Ok(()) => Outcome::Done(8),
            Err(s) => Outcome::Fail(s),
        }
    }
}
