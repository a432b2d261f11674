//! ATTACH_MCAST / DETACH_MCAST (`struct ib_uverbs_attach_mcast`: gid 0,
//! qp_handle 16, mlid 20), as uverbs, the core's `ib_attach_mcast` and
//! mlx5_ib (`mlx5_ib_mcg_attach`: the firmware's ATTACH_TO_MCG) answer
//! them: a UD QP of the caller's context joins a multicast GID (the LID
//! is ignored on a RoCE port, `is_valid_mcast_lid`); the same group twice
//! is one membership (uverbs keeps a list and answers 0); leaving a group
//! the QP is not in is EINVAL; a QP still in a group is not destroyed
//! (EBUSY, `uverbs_free_qp`). Datagrams to a group are not delivered:
//! the simulator has no netdev to carry them.

use super::cmd::{errno, u16_at, u32_at, Req, Resp};
use super::State;
use crate::model::QpType;

/// The group and QP of a command, checked as `ib_attach_mcast` does.
fn group_of(st: &State, ctx: u32, req: &Req) -> Result<(u32, [u8; 16], u16), i32> {
    let c = &req.core;
    if c.len() < 24 {
        return Err(errno::EINVAL);
    }
    let mut gid = [0u8; 16];
    gid.copy_from_slice(&c[..16]);
    let (handle, mlid) = (u32_at(c, 16), u16_at(c, 20));
    let qp = match st.dev.qps.get(&handle) {
        Some(q) if q.ctx == ctx => q,
        _ => return Err(errno::EINVAL),
    };
    if gid[0] != 0xff || qp.qp_type != QpType::Ud {
        return Err(errno::EINVAL);
    }
    Ok((handle, gid, mlid))
}

/// ATTACH_MCAST.
pub fn attach(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let (qpn, gid, mlid) = group_of(st, ctx, req)?;
    let x = st.qpx.get_mut(&qpn).ok_or(errno::EINVAL)?;
    if !x.mcast.contains(&(gid, mlid)) {
        x.mcast.push((gid, mlid));
    }
    Ok(Resp { note: format!("qpn={qpn:#x} groups={}", x.mcast.len()), ..Default::default() })
}

/// DETACH_MCAST.
pub fn detach(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let (qpn, gid, mlid) = group_of(st, ctx, req)?;
    let x = st.qpx.get_mut(&qpn).ok_or(errno::EINVAL)?;
    let at = x.mcast.iter().position(|m| *m == (gid, mlid)).ok_or(errno::EINVAL)?;
    x.mcast.remove(at);
    Ok(Resp { note: format!("qpn={qpn:#x} groups={}", x.mcast.len()), ..Default::default() })
}

/// Whether QP `qpn` is still in a group (its DESTROY_QP is EBUSY).
pub fn member(st: &State, qpn: u32) -> bool {
    st.qpx.get(&qpn).is_some_and(|x| !x.mcast.is_empty())
}
