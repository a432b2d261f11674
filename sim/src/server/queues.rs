//! CQ and SRQ commands: the rings live in the process's memory (mlx5
//! udata: buffer, doorbell record); the engine fills and drains them.

use super::cmd::{errno, u16_at, u32_at, u64_at, u8_at, Out, Req, Resp};
use super::device::{MAX_CQE, MAX_SGE, MAX_SRQ_WR, NUM_COMP_VECTORS};
use super::objects::pd_of;
use super::{sock, Daemon, State};
use crate::mem::{HostMem, Pid};
use crate::model::{Cq, Srq, Wq};

/// CREATE_CQ (plain and extended; core offsets after the response pointer:
/// user_handle 0, cqe 8, comp_vector 12, comp_channel 16 [ex: comp_mask 20,
/// flags 24]); mlx5 udata buf_addr, db_addr, cqe_size, flags, uar_page_index.
pub fn create_cq(d: &Daemon, st: &mut State, ctx: u32, pid: Pid, req: &Req) -> Result<Resp, i32> {
    let c = &req.core;
    let (user_handle, cqe, vector, chan_fd) = (u64_at(c, 0), u32_at(c, 8), u32_at(c, 12), u32_at(c, 16) as i32);
    if req.ex && (u32_at(c, 20) != 0 || u32_at(c, 24) & !3 != 0) {
        return Err(errno::EOPNOTSUPP);
    }
    let u = &req.udata;
    if u.len() < 24 {
        return Err(errno::EINVAL);
    }
    let (buf, db, cqe_size, flags) = (u64_at(u, 0), u64_at(u, 8), u32_at(u, 16), u16_at(u, 22));
    if cqe == 0 || cqe > MAX_CQE || vector >= NUM_COMP_VECTORS || !(cqe_size == 64 || cqe_size == 128) {
        return Err(errno::EINVAL);
    }
    if u8_at(u, 20) != 0 || flags & !0x3 != 0 {
        return Err(errno::EOPNOTSUPP); // CQE compression, real-time timestamps: not modelled
    }
    if buf % 4096 != 0 || db % 8 != 0 {
        return Err(errno::EINVAL);
    }
    let channel = if chan_fd >= 0 {
        let ino = sock::ino_of(pid, chan_fd).ok_or(errno::EINVAL)?;
        let id = st.sink.chans.iter().find(|(_, ch)| ch.ctx == ctx && ch.app_ino == ino).map(|(k, _)| *k);
        Some(id.ok_or(errno::EINVAL)?)
    } else {
        None
    };
    let ncqe = (cqe + 1).next_power_of_two();
    // The doorbell record's arm word gets a value no arm can write, so
    // the scanner can tell every later arm from it (see scanner.rs).
    d.mem.write(pid, db + 4, &super::ARM_UNSET.to_be_bytes()).map_err(|_| errno::EFAULT)?;
    let cqn = State::alloc(&mut st.next_cqn, 1);
    st.dev.cqs.insert(
        cqn,
        Cq { cqn, ctx, pid, user_handle, buf, dbrec: db, ncqe, cqe_size, pi: 0, armed: None, arm_sn: 0, arm_taken: super::ARM_UNSET, channel, overrun: false },
    );
    let mut core = Out::new(if req.ex { 16 } else { 8 });
    core.u32(0, cqn).u32(4, ncqe - 1);
    if req.ex {
        core.u32(12, 16);
    }
    Ok(Resp {
        core: core.done(),
        drv: Out::new(8).u32(0, cqn).done(),
        note: format!("cqn={cqn} ncqe={ncqe} cqe_size={cqe_size} buf={buf:#x} db={db:#x} channel={channel:?}"),
        ..Default::default()
    })
}

fn cq_of(st: &State, ctx: u32, handle: u32) -> Result<u32, i32> {
    match st.dev.cqs.get(&handle) {
        Some(c) if c.ctx == ctx => Ok(handle),
        _ => Err(errno::EINVAL),
    }
}

/// RESIZE_CQ: mlx5 udata {buf_addr, cqe_size}. As the HCA does, a RESIZE
/// CQE (opcode 5) is written into the old buffer at the producer index;
/// libmlx5 copies the older CQEs over up to it, and later CQEs go to the
/// new buffer from the next index.
pub fn resize_cq(d: &Daemon, st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let c = &req.core; // handle 0, cqe 4
    let cqn = cq_of(st, ctx, u32_at(c, 0))?;
    let cqe = u32_at(c, 4);
    let (buf, cqe_size) = (u64_at(&req.udata, 0), u32::from(u16_at(&req.udata, 8)));
    if cqe == 0 || cqe > MAX_CQE || !(cqe_size == 64 || cqe_size == 128) || buf % 4096 != 0 {
        return Err(errno::EINVAL);
    }
    let cq = st.dev.cqs.get_mut(&cqn).ok_or(errno::EINVAL)?;
    let ncqe = (cqe + 1).next_power_of_two();
    // The new ring must hold the CQEs not yet polled (the consumer index
    // is the doorbell record's first word).
    let ci = d.mem.read_be32(cq.pid, cq.dbrec).map_err(|_| errno::EFAULT)? & 0xff_ffff;
    let unpolled = cq.pi.wrapping_sub(ci) & 0xff_ffff;
    if unpolled > ncqe - 1 {
        return Err(errno::EINVAL);
    }
    let slot = u64::from(cq.pi % cq.ncqe) * u64::from(cq.cqe_size);
    let owner = ((cq.pi / cq.ncqe) & 1) as u8;
    let mut cqe64 = [0u8; 64];
    cqe64[63] = 5 << 4 | owner;
    let at = cq.buf + slot + u64::from(cq.cqe_size - 64);
    d.mem.write(cq.pid, at, &cqe64).map_err(|_| errno::EFAULT)?;
    cq.pi += 1;
    cq.buf = buf;
    cq.ncqe = ncqe;
    cq.cqe_size = cqe_size;
    Ok(Resp { core: Out::new(8).u32(0, ncqe - 1).done(), note: format!("cqn={cqn} ncqe={ncqe}"), ..Default::default() })
}

/// DESTROY_CQ: EBUSY while a QP uses it; reports the events delivered.
pub fn destroy_cq(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let cqn = cq_of(st, ctx, u32_at(&req.core, 0))?;
    if st.dev.qps.values().any(|q| q.send_cqn == cqn || q.recv_cqn == cqn) {
        return Err(errno::EBUSY);
    }
    let cq = st.dev.cqs.remove(&cqn).ok_or(errno::EINVAL)?;
    let comp = st.sink.comp_reported(cq.channel, cq.user_handle);
    let asy = st.sink.async_reported(ctx, cq.user_handle);
    Ok(Resp { core: Out::new(8).u32(0, comp).u32(4, asy).done(), note: format!("cqn={cqn} events={comp}/{asy}"), ..Default::default() })
}

/// CREATE_SRQ: core user_handle 0, pd 8, max_wr 12, max_sge 16, limit 20;
/// mlx5 udata buf_addr, db_addr, flags, uidx. WQE stride
/// roundup_pow2(16 + 16 * max_sge), roundup_pow2(max_wr + 1) WQEs.
pub fn create_srq(st: &mut State, ctx: u32, pid: Pid, req: &Req) -> Result<Resp, i32> {
    let c = &req.core;
    let (user_handle, max_wr, max_sge, limit) = (u64_at(c, 0), u32_at(c, 12), u32_at(c, 16), u32_at(c, 20));
    let pdn = pd_of(st, ctx, u32_at(c, 8))?;
    let u = &req.udata;
    if u.len() < 24 {
        return Err(errno::EINVAL);
    }
    let (buf, db, flags, uidx) = (u64_at(u, 0), u64_at(u, 8), u32_at(u, 16), u32_at(u, 24));
    if max_wr > MAX_SRQ_WR || max_sge > MAX_SGE + 1 || limit > max_wr || flags & !1 != 0 {
        return Err(errno::EINVAL);
    }
    let stride = (16 + 16 * max_sge.max(1)).next_power_of_two();
    let n = (max_wr + 1).next_power_of_two();
    let cqe_v1 = st.ctxx.get(&ctx).is_some_and(|x| x.cqe_version == 1);
    let srqn = State::alloc(&mut st.next_srqn, 1);
    let wqe_shift = stride.trailing_zeros();
    st.dev.srqs.insert(
        srqn,
        Srq {
            srqn,
            ctx,
            pid,
            user_handle,
            pdn,
            wqe_shift,
            wq: Wq { buf, wqe_cnt: n, wqe_shift, ci: 0 },
            dbrec: db,
            head: 0,
            consumed: 0,
            limit,
            uidx: if cqe_v1 { uidx & 0xff_ffff } else { 0xff_ffff },
            max_sge: stride / 16 - 1,
        },
    );
    let core = Out::new(16).u32(0, srqn).u32(4, n - 1).u32(8, stride / 16 - 1).u32(12, srqn).done();
    Ok(Resp { core, drv: Out::new(8).u32(0, srqn).done(), note: format!("srqn={srqn} wqes={n} stride={stride} uidx={uidx}"), ..Default::default() })
}

fn srq_of(st: &State, ctx: u32, handle: u32) -> Result<u32, i32> {
    match st.dev.srqs.get(&handle) {
        Some(s) if s.ctx == ctx => Ok(handle),
        _ => Err(errno::EINVAL),
    }
}

/// MODIFY_SRQ: only the limit (mlx5 cannot resize an SRQ: EINVAL).
pub fn modify_srq(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let c = &req.core; // handle 0, attr_mask 4, max_wr 8, limit 12
    let srqn = srq_of(st, ctx, u32_at(c, 0))?;
    let mask = u32_at(c, 4);
    if mask & 1 != 0 || mask & !3 != 0 {
        return Err(errno::EINVAL);
    }
    let srq = st.dev.srqs.get_mut(&srqn).ok_or(errno::EINVAL)?;
    if mask & 2 != 0 {
        let limit = u32_at(c, 12);
        if limit >= srq.wq.wqe_cnt {
            return Err(errno::EINVAL);
        }
        srq.limit = limit;
    }
    Ok(Resp { note: format!("srqn={srqn} limit={}", srq.limit), ..Default::default() })
}

/// QUERY_SRQ.
pub fn query_srq(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let srqn = srq_of(st, ctx, u32_at(&req.core, 0))?;
    let s = &st.dev.srqs[&srqn];
    Ok(Resp { core: Out::new(16).u32(0, s.wq.wqe_cnt - 1).u32(4, s.max_sge).u32(8, s.limit).done(), ..Default::default() })
}

/// DESTROY_SRQ: EBUSY while a QP uses it.
pub fn destroy_srq(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let srqn = srq_of(st, ctx, u32_at(&req.core, 0))?;
    if st.dev.qps.values().any(|q| q.srqn == Some(srqn)) {
        return Err(errno::EBUSY);
    }
    let s = st.dev.srqs.remove(&srqn).ok_or(errno::EINVAL)?;
    let n = st.sink.async_reported(ctx, s.user_handle);
    Ok(Resp { core: Out::new(4).u32(0, n).done(), note: format!("srqn={srqn}"), ..Default::default() })
}
