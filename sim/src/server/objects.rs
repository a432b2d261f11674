//! PD, AH, MR, MW and completion channel commands. Handles are
//! the device's numbers (pdn, cqn, srqn, mkey index, AH id), checked
//! against the calling context as the kernel's per-file idr would.

use super::cmd::{errno, u32_at, u64_at, u8_at, Out, Req, Resp};
use super::{sock, Chan, Daemon, State};
use crate::mem::{HostMem, Pid};
use crate::model::{access, Ah, Mr, Mw, Pd};

pub(super) fn pd_of(st: &State, ctx: u32, handle: u32) -> Result<u32, i32> {
    match st.dev.pds.get(&handle) {
        Some(p) if p.ctx == ctx => Ok(p.pdn),
        _ => Err(errno::EINVAL),
    }
}

/// ALLOC_PD: resp pd_handle; mlx5 resp pdn.
pub fn alloc_pd(st: &mut State, ctx: u32) -> Result<Resp, i32> {
    let pdn = State::alloc(&mut st.next_pdn, 1);
    st.dev.pds.insert(pdn, Pd { pdn, ctx });
    Ok(Resp { core: Out::new(4).u32(0, pdn).done(), drv: Out::new(4).u32(0, pdn).done(), note: format!("pdn={pdn}"), ..Default::default() })
}

/// DEALLOC_PD: EBUSY while anything uses it.
pub fn dealloc_pd(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let pdn = pd_of(st, ctx, u32_at(&req.core, 0))?;
    let d = &st.dev;
    let used = d.mrs.values().any(|m| m.pdn == pdn)
        || d.mws.values().any(|m| m.pdn == pdn)
        || d.qps.values().any(|q| q.pdn == pdn)
        || d.srqs.values().any(|s| s.pdn == pdn);
    if used {
        return Err(errno::EBUSY);
    }
    st.dev.pds.remove(&pdn);
    Ok(Resp { note: format!("pdn={pdn}"), ..Default::default() })
}

/// The core's `rdma_get_gid_attr` on a source GID index (CREATE_AH and
/// MODIFY_QP take the address's GID through it, before mlx5_ib sees it):
/// past the table `EINVAL`, an empty entry `ENODATA`.
pub fn source_gid(d: &Daemon, index: u8) -> Result<(), i32> {
    if u32::from(index) >= crate::fixture::GID_TBL_LEN {
        Err(errno::EINVAL)
    } else if usize::from(index) >= crate::fixture::gids(&d.id).len() {
        Err(errno::ENODATA)
    } else {
        Ok(())
    }
}

/// CREATE_AH: RoCE needs a GRH (is_global) with a valid source GID; the
/// mlx5 response carries the destination MAC (every destination is on this
/// device, so it is the port's own).
pub fn create_ah(d: &Daemon, st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let c = &req.core; // user_handle 0, pd 8, attr 16..48
    pd_of(st, ctx, u32_at(c, 8))?;
    let mut dgid = [0u8; 16];
    dgid.copy_from_slice(&c[16..32]);
    let (sgid_index, is_global, port) = (u8_at(c, 36), u8_at(c, 45), u8_at(c, 46));
    if is_global == 0 || port != 1 {
        return Err(errno::EINVAL);
    }
    source_gid(d, sgid_index)?;
    let handle = State::alloc(&mut st.next_ah, 1);
    st.dev.ahs.insert(handle, Ah { handle, ctx, dgid });
    let mut drv = Out::new(16);
    drv.u32(0, 16).bytes(4, &dmac(d, &dgid));
    Ok(Resp { core: Out::new(4).u32(0, handle).done(), drv: drv.done(), note: format!("ah={handle} sgid_index={sgid_index}"), ..Default::default() })
}

/// The destination MAC the kernel resolves for `dgid` (`ib_resolve_eth_dmac`):
/// a multicast GID maps to its group MAC (`ip_eth_mc_map` 01:00:5e + the
/// low 23 bits of an IPv4 group, `ipv6_eth_mc_map` 33:33 + the last four
/// bytes), any other is the port itself (the one port's address).
fn dmac(d: &Daemon, dgid: &[u8; 16]) -> [u8; 6] {
    if !crate::engine::is_multicast_gid(dgid) {
        return d.id.mac;
    }
    if dgid[0] == 0xff {
        [0x33, 0x33, dgid[12], dgid[13], dgid[14], dgid[15]]
    } else {
        [0x01, 0x00, 0x5e, dgid[13] & 0x7f, dgid[14], dgid[15]]
    }
}

/// DESTROY_AH.
pub fn destroy_ah(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let h = u32_at(&req.core, 0);
    match st.dev.ahs.get(&h) {
        Some(a) if a.ctx == ctx => {
            st.dev.ahs.remove(&h);
            Ok(Resp::default())
        }
        _ => Err(errno::EINVAL),
    }
}

/// IB_ACCESS_ON_DEMAND: no ODP on this device.
const ON_DEMAND: u32 = 0x40;
/// Mandatory bits (LOCAL_WRITE .. ZERO_BASED, ON_DEMAND, HUGETLB, FLUSH_*);
/// bits 20-29 are optional (IB_UVERBS_ACCESS_OPTIONAL_RANGE, e.g.
/// RELAXED_ORDERING): a device may ignore them.
const ACCESS_KNOWN: u32 = 0x3ff | 0x3ff0_0000;

fn check_access(acc: u32) -> Result<(), i32> {
    if acc & !ACCESS_KNOWN != 0 {
        return Err(errno::EINVAL);
    }
    if acc & ON_DEMAND != 0 {
        return Err(errno::EOPNOTSUPP);
    }
    // IB spec: remote write or atomic needs local write.
    if acc & (access::REMOTE_WRITE | access::REMOTE_ATOMIC) != 0 && acc & access::LOCAL_WRITE == 0 {
        return Err(errno::EINVAL);
    }
    Ok(())
}

/// The kernel pins the pages at registration: unmapped memory is EFAULT.
fn check_mapped(d: &Daemon, pid: Pid, addr: u64, len: u64) -> Result<(), i32> {
    if len == 0 {
        return Ok(());
    }
    let mut b = [0u8; 1];
    d.mem.read(pid, addr, &mut b).map_err(|_| errno::EFAULT)?;
    d.mem.read(pid, addr + len - 1, &mut b).map_err(|_| errno::EFAULT)
}

/// The pages `ib_umem_get` pins for `len` bytes at `addr` (mlx5_ib_reg_user_mr
/// takes the region through it, as rxe does): `EINVAL` when the range
/// wraps or touches no page. A zero-length range inside a page touches
/// that page and is registered (its first byte must be mapped: `EFAULT`
/// otherwise, as get_user_pages); one at a page start touches none.
fn umem_pages(addr: u64, len: u64) -> Result<u64, i32> {
    const PAGE: u64 = 4096;
    let end = addr.checked_add(len).ok_or(errno::EINVAL)?;
    let end_page = end.checked_next_multiple_of(PAGE).ok_or(errno::EINVAL)?;
    match (end_page - (addr & !(PAGE - 1))) / PAGE {
        0 => Err(errno::EINVAL),
        n => Ok(n),
    }
}

fn new_mkey(st: &mut State) -> u32 {
    // Indices from 0x1000: no key can equal MLX5_INVALID_LKEY (0x100).
    State::alloc(&mut st.next_mkey, 0x1000) << 8
}

/// REG_MR: lkey == rkey == mkey; handle = mkey index.
pub fn reg_mr(d: &Daemon, st: &mut State, ctx: u32, pid: Pid, req: &Req) -> Result<Resp, i32> {
    let c = &req.core; // start 0, length 8, hca_va 16, pd 24, access 28
    let (start, length, iova, acc) = (u64_at(c, 0), u64_at(c, 8), u64_at(c, 16), u32_at(c, 28));
    let pdn = pd_of(st, ctx, u32_at(c, 24))?;
    check_access(acc)?;
    umem_pages(start, length)?;
    check_mapped(d, pid, start, length.max(1))?;
    let key = new_mkey(st);
    st.dev.mrs.insert(key, Mr { key, pdn, ctx, pid, addr: start, iova, length, access: acc, valid: true });
    let core = Out::new(12).u32(0, key >> 8).u32(4, key).u32(8, key).done();
    Ok(Resp { core, note: format!("key={key:#x} addr={start:#x} len={length} access={acc:#x}"), ..Default::default() })
}

fn mr_key(st: &State, ctx: u32, handle: u32) -> Result<u32, i32> {
    let key = handle << 8;
    match st.dev.mrs.get(&key) {
        Some(m) if m.ctx == ctx => Ok(key),
        _ => Err(errno::EINVAL),
    }
}

/// REREG_MR: flags 1 translation, 2 PD, 4 access; keys stay.
pub fn rereg_mr(d: &Daemon, st: &mut State, ctx: u32, pid: Pid, req: &Req) -> Result<Resp, i32> {
    let c = &req.core; // handle 0, flags 4, start 8, length 16, hca_va 24, pd 32, access 36
    let key = mr_key(st, ctx, u32_at(c, 0))?;
    let flags = u32_at(c, 4);
    if flags == 0 || flags & !7 != 0 {
        return Err(errno::EINVAL);
    }
    let pdn = if flags & 2 != 0 { Some(pd_of(st, ctx, u32_at(c, 32))?) } else { None };
    if flags & 4 != 0 {
        check_access(u32_at(c, 36))?;
    }
    if flags & 1 != 0 {
        if u64_at(c, 16) == 0 {
            return Err(errno::EINVAL);
        }
        check_mapped(d, pid, u64_at(c, 8), u64_at(c, 16))?;
    }
    let mr = st.dev.mrs.get_mut(&key).ok_or(errno::EINVAL)?;
    if flags & 1 != 0 {
        mr.addr = u64_at(c, 8);
        mr.length = u64_at(c, 16);
        mr.iova = u64_at(c, 24);
    }
    if let Some(p) = pdn {
        mr.pdn = p;
    }
    if flags & 4 != 0 {
        mr.access = u32_at(c, 36);
    }
    mr.valid = true;
    Ok(Resp { core: Out::new(8).u32(0, key).u32(4, key).done(), note: format!("key={key:#x} flags={flags}"), ..Default::default() })
}

/// DEREG_MR.
pub fn dereg_mr(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let key = mr_key(st, ctx, u32_at(&req.core, 0))?;
    st.dev.mrs.remove(&key);
    Ok(Resp { note: format!("key={key:#x}"), ..Default::default() })
}

/// ALLOC_MW: type 1 or 2; handle = mkey index.
pub fn alloc_mw(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let c = &req.core; // pd 0, mw_type 4
    let pdn = pd_of(st, ctx, u32_at(c, 0))?;
    let ty = u8_at(c, 4);
    if !(1..=2).contains(&ty) {
        return Err(errno::EINVAL);
    }
    let rkey = new_mkey(st);
    st.dev.mws.insert(rkey >> 8, Mw { rkey, pdn, ctx, mw_type: ty, bound: None });
    Ok(Resp { core: Out::new(8).u32(0, rkey >> 8).u32(4, rkey).done(), note: format!("rkey={rkey:#x} type={ty}"), ..Default::default() })
}

/// DEALLOC_MW.
pub fn dealloc_mw(st: &mut State, ctx: u32, req: &Req) -> Result<Resp, i32> {
    let h = u32_at(&req.core, 0);
    match st.dev.mws.get(&h) {
        Some(m) if m.ctx == ctx => {
            st.dev.mws.remove(&h);
            Ok(Resp::default())
        }
        _ => Err(errno::EINVAL),
    }
}

/// CREATE_COMP_CHANNEL: a socketpair; the process reads 8-byte
/// ib_uverbs_comp_event_desc records from its end.
pub fn create_comp_channel(st: &mut State, ctx: u32) -> Result<Resp, i32> {
    let (mine, theirs) = sock::event_pair().map_err(|_| errno::ENOMEM)?;
    let id = State::alloc(&mut st.next_chan, 1);
    let app_ino = sock::ino(&theirs);
    let app = theirs.try_clone().map_err(|_| errno::ENOMEM)?;
    st.sink.chans.insert(id, Chan { ctx, fd: mine, app, app_ino });
    if let Some(c) = st.dev.ctxs.get_mut(&ctx) {
        c.comp_channels.push(id);
    }
    Ok(Resp { core: vec![0; 4], fds: vec![(theirs, 0)], note: format!("channel={id}"), ..Default::default() })
}

#[cfg(test)]
mod umem_tests {
    use super::*;

    #[test]
    fn umem_pages_follow_ib_umem_get() {
        assert_eq!(umem_pages(0x1000, 0), Err(errno::EINVAL), "empty at a page start: no page");
        assert_eq!(umem_pages(0x1064, 0), Ok(1), "empty inside a page: that page");
        assert_eq!(umem_pages(0x1ffc, 8), Ok(2));
        assert_eq!(umem_pages(0x1000, 0x1000), Ok(1));
        assert_eq!(umem_pages(u64::MAX - 8, 16), Err(errno::EINVAL), "wraps");
        assert_eq!(umem_pages(u64::MAX - 8, 4), Err(errno::EINVAL), "its last page wraps");
    }
}
