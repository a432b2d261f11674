//! ATTACH_MCAST / DETACH_MCAST (`struct ib_uverbs_attach_mcast`: gid 0,
//! qp_handle 16, mlid 20), as uverbs, the core's `ib_attach_mcast` and
//! mlx5_ib (`mlx5_ib_mcg_attach`: the firmware's ATTACH_TO_MCG) answer
//! them: a UD QP of the caller's context joins a multicast GID
//! (`rdma_is_multicast_addr`: ff00::/8, or an IPv4-mapped 224.0.0.0/4
//! address as rdma_cm's RoCE v2 groups are; the LID is ignored on a RoCE
//! port, `is_valid_mcast_lid`); the same group twice is one membership
//! (uverbs keeps a list and answers 0); leaving a group the QP is not in
//! is EINVAL; a QP still in a group is not destroyed (EBUSY,
//! `uverbs_free_qp`). The membership lives in the QP of the model, where
//! the engine finds the members of a group it delivers a datagram to
//! (`crate::engine`'s multicast, the NIC's own loopback on its one port).

use super::cmd::{errno, u16_at, u32_at, Req, Resp};
use super::State;
use crate::engine::is_multicast_gid;
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
    if !is_multicast_gid(&gid) || qp.qp_type != QpType::Ud {
        return Err(errno::EINVAL);
    }
    Ok((handle, gid, mlid))
}

/// ATTACH_MCAST.
pub fn attach(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let (qpn, gid, mlid) = group_of(st, ctx, req)?;
    let qp = st.dev.qps.get_mut(&qpn).ok_or(errno::EINVAL)?;
    if !qp.mcast.contains(&(gid, mlid)) {
        qp.mcast.push((gid, mlid));
    }
    Ok(Resp { note: format!("qpn={qpn:#x} groups={}", qp.mcast.len()), ..Default::default() })
}

/// DETACH_MCAST.
pub fn detach(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let (qpn, gid, mlid) = group_of(st, ctx, req)?;
    let qp = st.dev.qps.get_mut(&qpn).ok_or(errno::EINVAL)?;
    let at = qp.mcast.iter().position(|m| *m == (gid, mlid)).ok_or(errno::EINVAL)?;
    qp.mcast.remove(at);
    Ok(Resp { note: format!("qpn={qpn:#x} groups={}", qp.mcast.len()), ..Default::default() })
}

/// Whether QP `qpn` is still in a group (its DESTROY_QP is EBUSY).
pub fn member(st: &State, qpn: u32) -> bool {
    st.dev.qps.get(&qpn).is_some_and(|q| !q.mcast.is_empty())
}
