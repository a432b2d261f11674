//! CREATE_QP (plain and extended), MODIFY_QP with the IB spec's state
//! machine and attribute masks (`ib_modify_qp_is_ok`), QUERY_QP, DESTROY_QP.

use super::cmd::{errno, u16_at, u32_at, u64_at, u8_at, Out, Req, Resp};
use super::device::{ACTIVE_MTU, LOG_MAX_QP_SZ, MAX_MTU, MAX_RD_ATOMIC, MAX_SGE};
use super::{Daemon, State};
use crate::mem::Pid;
use super::qp_state::*;
use crate::model::{Qp, QpAttrs, QpState, QpType, Wq};

/// What QUERY_QP returns that the model does not keep.
#[derive(Debug, Clone, Default)]
pub struct QpExtra {
    /// struct ib_uverbs_qp_dest as last set (AV).
    pub dest: [u8; 32],
    /// Alternate path (kept, never used).
    pub alt_dest: [u8; 32],
    /// Path migration state.
    pub mig_state: u8,
    /// Alternate pkey index / port / timeout.
    pub alt: (u16, u8, u8),
    /// SQ draining notification asked for.
    pub sqd_notify: bool,
    /// The BlueFlame register held, compact numbering (freed on destroy).
    pub bfreg: u32,
}

/// CREATE_QP. Core (after the response pointer): user_handle 0, pd 8,
/// send_cq 12, recv_cq 16, srq 20, max_send_wr 24, max_recv_wr 28,
/// max_send_sge 32, max_recv_sge 36, max_inline 40, sq_sig_all 44,
/// qp_type 45, is_srq 46 [ex: comp_mask 48, create_flags 52]. mlx5 udata:
/// buf_addr 0, db_addr 8, sq_wqe_count 16, rq_wqe_count 20, rq_wqe_shift
/// 24, flags 28, uidx 32, bfreg_index 36.
pub fn create_qp(st: &mut State, ctx: u32, pid: Pid, req: &Req) -> Result<Resp, i32> {
    let c = &req.core;
    let user_handle = u64_at(c, 0);
    let qp_type = QpType::from_ib(u8_at(c, 45)).ok_or(errno::EOPNOTSUPP)?;
    // extended: comp_mask (RSS indirection table) none; create_flags only
    // BLOCK_SELF_MCAST_LB (kept: the engine skips the sender's own datagrams).
    if req.ex && (u32_at(c, 48) != 0 || u32_at(c, 52) & !IBV_QP_CREATE_BLOCK_SELF_MCAST_LB != 0) {
        return Err(errno::EOPNOTSUPP);
    }
    let caps = [u32_at(c, 24), u32_at(c, 28), u32_at(c, 32), u32_at(c, 36), u32_at(c, 40)];
    let (pd_h, scq, rcq, srq_h) = (u32_at(c, 8), u32_at(c, 12), u32_at(c, 16), u32_at(c, 20));
    let pdn = match st.dev.pds.get(&pd_h) {
        Some(p) if p.ctx == ctx => p.pdn,
        _ => return Err(errno::EINVAL),
    };
    let mine_cq = |n: u32| st.dev.cqs.get(&n).is_some_and(|c| c.ctx == ctx);
    if !mine_cq(scq) || !mine_cq(rcq) {
        return Err(errno::EINVAL);
    }
    let srqn = if u8_at(c, 46) != 0 {
        match st.dev.srqs.get(&srq_h) {
            Some(s) if s.ctx == ctx => Some(srq_h),
            _ => return Err(errno::EINVAL),
        }
    } else {
        None
    };
    let u = &req.udata;
    if u.len() < 40 {
        return Err(errno::EINVAL);
    }
    let (buf, db, sq_cnt, rq_cnt, rq_shift, flags, uidx) =
        (u64_at(u, 0), u64_at(u, 8), u32_at(u, 16), u32_at(u, 20), u32_at(u, 24), u32_at(u, 28), u32_at(u, 32));
    let max = 1u32 << LOG_MAX_QP_SZ;
    let pow2_or_0 = |n: u32| n == 0 || n.is_power_of_two();
    if sq_cnt > max || rq_cnt > max || !pow2_or_0(sq_cnt) || !pow2_or_0(rq_cnt) || (rq_cnt > 0 && !(4..=10).contains(&rq_shift)) {
        return Err(errno::EINVAL);
    }
    if caps[2] > MAX_SGE || caps[3] > MAX_SGE || (srqn.is_some() && rq_cnt != 0) {
        return Err(errno::EINVAL);
    }
    // signature, scatter-to-CQE, bfreg index, allow-scatter-CQE: the rest
    // (tunnel offloads, DCT/DCI, UAR page index) is not modelled.
    if flags & !(1 | 2 | 8 | 0x100) != 0 {
        return Err(errno::EOPNOTSUPP);
    }
    if buf % 64 != 0 || db % 8 != 0 {
        return Err(errno::EINVAL);
    }
    let x = st.ctxx.get_mut(&ctx).ok_or(errno::EINVAL)?;
    let cqe_v1 = x.cqe_version == 1;
    // The kernel's register classes (`alloc_bfreg`): a low-latency register
    // of its own if one is free, else the least shared medium one.
    let compact = x.bfregs.alloc();
    let bfreg = super::bfreg::Bfregs::index(compact);
    let qpn = State::alloc(&mut st.next_qpn, 0x100);
    let rq = Wq { buf, wqe_cnt: rq_cnt, wqe_shift: if rq_cnt > 0 { rq_shift } else { 0 }, ci: 0 };
    let sq = Wq { buf: buf + (u64::from(rq_cnt) << rq.wqe_shift), wqe_cnt: sq_cnt, wqe_shift: 6, ci: 0 };
    st.dev.qps.insert(
        qpn,
        Qp {
            qpn,
            ctx,
            pid,
            user_handle,
            pdn,
            qp_type,
            state: QpState::Reset,
            sq,
            rq,
            dbrec: db,
            send_cqn: scq,
            recv_cqn: rcq,
            srqn,
            uidx: if cqe_v1 { uidx & 0xff_ffff } else { 0xff_ffff },
            sq_sig_all: u8_at(c, 44) != 0,
            scatter_cqe: flags & 2 != 0,
            attrs: QpAttrs::default(),
            max_inline: caps[4],
            max_recv_sge: if rq_cnt > 0 { (1 << rq_shift) / 16 } else { 0 },
            mcast: Vec::new(),
            block_self_mcast_lb: req.ex && u32_at(c, 52) & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB != 0,
        },
    );
    st.qpx.insert(qpn, QpExtra { bfreg: compact, ..Default::default() });
    let mut core = Out::new(if req.ex { 40 } else { 32 });
    core.u32(0, qpn).u32(4, qpn).u32(8, caps[0]).u32(12, caps[1]).u32(16, caps[2]).u32(20, caps[3]).u32(24, caps[4]);
    if req.ex {
        core.u32(36, 40);
    }
    let drv = Out::new(40).u32(0, bfreg).done();
    Ok(Resp {
        core: core.done(),
        drv,
        note: format!(
            "qpn={qpn:#x} type={qp_type:?} sq={sq_cnt} rq={rq_cnt}<<{rq_shift} flags={flags:#x} uidx={uidx} bfreg={bfreg} srq={srqn:?} buf={buf:#x} db={db:#x}"
        ),
        ..Default::default()
    })
}

fn qp_of(st: &State, ctx: u32, handle: u32) -> Result<u32, i32> {
    match st.dev.qps.get(&handle) {
        Some(q) if q.ctx == ctx => Ok(handle),
        _ => Err(errno::EINVAL),
    }
}

/// A scalar attribute of MODIFY_QP: its mask bit, where it is in the core
/// command (offset, width in bytes), the values the kernel and firmware
/// accept (anything else is `EINVAL`), the bits kept, and where it goes.
/// AV and ALT_PATH (several fields each) are handled apart.
struct Field {
    bit: u32,
    at: usize,
    width: u8,
    min: u32,
    max: u32,
    keep: u32,
    set: fn(&mut QpAttrs, &mut QpExtra, u32),
}

impl Field {
    /// The value as the command carries it.
    fn raw(&self, c: &[u8]) -> u32 {
        match self.width {
            1 => u32::from(u8_at(c, self.at)),
            2 => u32::from(u16_at(c, self.at)),
            _ => u32_at(c, self.at),
        }
    }
}

const fn field(bit: u32, at: usize, width: u8, set: fn(&mut QpAttrs, &mut QpExtra, u32)) -> Field {
    let max = if width == 4 { u32::MAX } else { (1 << (8 * width)) - 1 };
    Field { bit, at, width, min: 0, max, keep: u32::MAX, set }
}

const fn only(f: Field, min: u32, max: u32) -> Field {
    Field { min, max, ..f }
}

const fn psn(f: Field) -> Field {
    Field { keep: 0xff_ffff, ..f }
}

/// The scalar attributes (struct ib_uverbs_modify_qp offsets; the `as`
/// casts narrow to the width read).
const FIELDS: &[Field] = &[
    field(QKEY, 72, 4, |a, _, v| a.qkey = v),
    psn(field(RQ_PSN, 76, 4, |a, _, v| a.rq_psn = v)),
    psn(field(SQ_PSN, 80, 4, |a, _, v| a.sq_psn = v)),
    psn(field(DEST_QPN, 84, 4, |a, _, v| a.dest_qpn = v)),
    field(ACCESS_FLAGS, 88, 4, |a, _, v| a.access = v),
    only(field(PKEY_INDEX, 92, 2, |a, _, v| a.pkey_index = v as u16), 0, 0), // one P_Key (RoCE)
    only(field(PATH_MTU, 98, 1, |a, _, v| a.path_mtu = v as u8), 1, MAX_MTU as u32),
    field(PATH_MIG_STATE, 99, 1, |_, x, v| x.mig_state = v as u8),
    field(EN_SQD_ASYNC_NOTIFY, 100, 1, |_, x, v| x.sqd_notify = v != 0),
    only(field(MAX_QP_RD_ATOMIC, 101, 1, |a, _, v| a.max_rd_atomic = v as u8), 0, MAX_RD_ATOMIC),
    only(field(MAX_DEST_RD_ATOMIC, 102, 1, |a, _, v| a.max_dest_rd_atomic = v as u8), 0, MAX_RD_ATOMIC),
    field(MIN_RNR_TIMER, 103, 1, |a, _, v| a.min_rnr_timer = v as u8),
    only(field(PORT, 104, 1, |a, _, v| a.port = v as u8), 1, 1), // one port
    field(TIMEOUT, 105, 1, |a, _, v| a.timeout = v as u8),
    field(RETRY_CNT, 106, 1, |a, _, v| a.retry_cnt = v as u8),
    field(RNR_RETRY, 107, 1, |a, _, v| a.rnr_retry = v as u8),
];

/// MODIFY_QP (plain: no udata; extended: + rate_limit, mlx5 udata ignored).
/// Core layout: dest 0..32, alt_dest 32..64, qp_handle 64, attr_mask 68,
/// qkey 72, rq_psn 76, sq_psn 80, dest_qp_num 84, access 88, pkey_index 92,
/// alt_pkey_index 94, qp_state 96, cur_qp_state 97, path_mtu 98,
/// path_mig_state 99, en_sqd_async_notify 100, max_rd_atomic 101,
/// max_dest_rd_atomic 102, min_rnr_timer 103, port 104, timeout 105,
/// retry_cnt 106, rnr_retry 107, alt_port 108, alt_timeout 109.
pub fn modify_qp(d: &Daemon, st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let c = &req.core;
    let qpn = qp_of(st, ctx, u32_at(c, 64))?;
    let mask = u32_at(c, 68);
    let qp = &st.dev.qps[&qpn];
    let cur = if mask & CUR_STATE != 0 { state_from(u8_at(c, 97)).ok_or(errno::EINVAL)? } else { qp.state };
    let next = if mask & STATE != 0 { state_from(u8_at(c, 96)).ok_or(errno::EINVAL)? } else { cur };
    let (req_mask, opt_mask) = transition(qp.qp_type, cur, next).ok_or(errno::EINVAL)?;
    let given = mask & !(STATE | CAP);
    if cur != qp.state {
        return Err(errno::EINVAL);
    }
    if given & req_mask != req_mask || given & !(req_mask | opt_mask | CUR_STATE) != 0 {
        return Err(errno::EINVAL);
    }
    if mask & CAP != 0 {
        return Err(errno::EINVAL); // mlx5 cannot resize a QP
    }
    // Values the kernel / firmware reject.
    if FIELDS.iter().any(|f| mask & f.bit != 0 && !(f.min..=f.max).contains(&f.raw(c))) {
        return Err(errno::EINVAL);
    }
    if mask & AV != 0 {
        // RoCE: the address must carry a GRH with a valid source GID.
        let dest = &c[0..32];
        if u8_at(dest, 30) == 0 {
            return Err(errno::EINVAL);
        }
        super::objects::source_gid(d, u8_at(dest, 24))?;
        if u8_at(dest, 31) > 1 {
            return Err(errno::EINVAL);
        }
    }
    let x = st.qpx.entry(qpn).or_default();
    let qp = st.dev.qps.get_mut(&qpn).ok_or(errno::EINVAL)?;
    for f in FIELDS.iter().filter(|f| mask & f.bit != 0) {
        (f.set)(&mut qp.attrs, x, f.raw(c) & f.keep);
    }
    let a = &mut qp.attrs;
    if mask & AV != 0 {
        x.dest.copy_from_slice(&c[0..32]);
        a.dgid.copy_from_slice(&c[0..16]);
        a.sl = u8_at(c, 27);
        if u8_at(c, 31) != 0 {
            a.port = u8_at(c, 31);
        }
    }
    if mask & ALT_PATH != 0 {
        x.alt_dest.copy_from_slice(&c[32..64]);
        x.alt = (u16_at(c, 94), u8_at(c, 108), u8_at(c, 109));
    }
    let was = qp.state;
    qp.state = next;
    if next == QpState::Reset {
        qp.sq.ci = 0;
        qp.rq.ci = 0;
    }
    if next == QpState::Err && was != QpState::Err {
        d.with_engine(st, |e| e.qp_error(qpn));
    }
    Ok(Resp { note: format!("qpn={qpn:#x} {was:?}->{next:?} mask={mask:#x}"), ..Default::default() })
}

/// QUERY_QP: struct ib_uverbs_query_qp_resp.
pub fn query_qp(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let qpn = qp_of(st, ctx, u32_at(&req.core, 0))?;
    let qp = &st.dev.qps[&qpn];
    let x = st.qpx.get(&qpn).cloned().unwrap_or_default();
    let a = &qp.attrs;
    let mut o = Out::new(128);
    o.bytes(0, &x.dest)
        .bytes(32, &x.alt_dest)
        // mlx5_ib_query_qp of a user QP: the receive queue as made
        // (rq.wqe_cnt, rq.max_gs); 0 for max_send_wr, max_send_sge and
        // max_inline_data (the send queue is the library's to report)
        .u32(64, 0)
        .u32(68, qp.rq.wqe_cnt)
        .u32(72, 0)
        .u32(76, qp.max_recv_sge)
        .u32(80, 0)
        .u32(84, a.qkey)
        .u32(88, a.rq_psn)
        .u32(92, a.sq_psn)
        .u32(96, a.dest_qpn)
        .u32(100, a.access)
        .u16(104, a.pkey_index)
        .u16(106, x.alt.0)
        .u8(108, state_num(qp.state))
        .u8(109, state_num(qp.state))
        .u8(110, if a.path_mtu == 0 { ACTIVE_MTU } else { a.path_mtu })
        .u8(111, x.mig_state)
        .u8(112, 0) // sq_draining
        .u8(113, a.max_rd_atomic)
        .u8(114, a.max_dest_rd_atomic)
        .u8(115, a.min_rnr_timer)
        .u8(116, a.port)
        .u8(117, a.timeout)
        .u8(118, a.retry_cnt)
        .u8(119, a.rnr_retry)
        .u8(120, x.alt.1)
        .u8(121, x.alt.2)
        .u8(122, u8::from(qp.sq_sig_all));
    Ok(Resp { core: o.done(), note: format!("qpn={qpn:#x} state={:?}", qp.state), ..Default::default() })
}

/// DESTROY_QP: reports the async events delivered for it.
pub fn destroy_qp(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let qpn = qp_of(st, ctx, u32_at(&req.core, 0))?;
    if super::mcast::member(st, qpn) {
        return Err(errno::EBUSY);
    }
    let qp = st.dev.qps.remove(&qpn).ok_or(errno::EINVAL)?;
    if let (Some(x), Some(c)) = (st.qpx.remove(&qpn), st.ctxx.get_mut(&ctx)) {
        c.bfregs.free(x.bfreg);
    }
    let n = st.sink.async_reported(ctx, qp.user_handle);
    Ok(Resp { core: Out::new(4).u32(0, n).done(), note: format!("qpn={qpn:#x}"), ..Default::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scalar attribute lands in its place from its offset; PSNs and
    /// the destination QPN keep 24 bits; out-of-range values are named.
    #[test]
    fn modify_qp_fields_decode_from_their_offsets() {
        let mut c = Out::new(112);
        c.u32(72, 0x1111_1111).u32(76, 0xab12_3456).u32(80, 0xcd65_4321).u32(84, 0xff00_0042).u32(88, 7);
        c.u16(92, 0).u8(98, 3).u8(99, 2).u8(100, 1).u8(101, 4).u8(102, 8).u8(103, 12);
        c.u8(104, 1).u8(105, 14).u8(106, 6).u8(107, 7);
        let (mut a, mut x) = (QpAttrs::default(), QpExtra::default());
        for f in FIELDS {
            assert!((f.min..=f.max).contains(&f.raw(&c.0)), "{:#x} in range", f.bit);
            (f.set)(&mut a, &mut x, f.raw(&c.0) & f.keep);
        }
        assert_eq!((a.qkey, a.rq_psn, a.sq_psn, a.dest_qpn, a.access), (0x1111_1111, 0x12_3456, 0x65_4321, 0x42, 7));
        assert_eq!((a.pkey_index, a.path_mtu, x.mig_state, x.sqd_notify), (0, 3, 2, true));
        assert_eq!((a.max_rd_atomic, a.max_dest_rd_atomic, a.min_rnr_timer), (4, 8, 12));
        assert_eq!((a.port, a.timeout, a.retry_cnt, a.rnr_retry), (1, 14, 6, 7));
        let bad = |bit: u32, at: usize, v: u8| {
            let mut b = Out::new(112);
            b.u8(at, v);
            let f = FIELDS.iter().find(|f| f.bit == bit).unwrap();
            !(f.min..=f.max).contains(&f.raw(&b.0))
        };
        assert!(bad(PORT, 104, 2) && bad(PORT, 104, 0) && bad(PKEY_INDEX, 92, 1) && bad(PATH_MTU, 98, 6) && bad(PATH_MTU, 98, 0));
        assert!(bad(MAX_QP_RD_ATOMIC, 101, 17) && !bad(MAX_QP_RD_ATOMIC, 101, 16) && !bad(TIMEOUT, 105, 31));
        // every mask bit has at most one entry
        let mut seen = 0;
        for f in FIELDS {
            assert_eq!(seen & f.bit, 0);
            seen |= f.bit;
        }
    }
}
