//! rdma_cm multicast: JOIN_MCAST (22), JOIN_IP_MCAST (16) and LEAVE_MCAST
//! (17) as `ucma.c` answers them (`ucma_process_join`,
//! `ucma_join_ip_multicast`, `ucma_leave_multicast`) over `cma.c`'s RoCE
//! join (`rdma_join_multicast` -> `cma_iboe_join_multicast`, the event
//! from `cma_make_mc_event`). On a RoCE port the join asks no SA: the
//! group's GID is made from the IP address (`cma_iboe_set_mgid`: RoCE v2,
//! rdma_cm's default GID type on mlx5, `CMA_PREFERRED_ROCE_GID_TYPE`, gives
//! the IPv4-mapped address), and MULTICAST_JOIN follows at once with the
//! address handle to send to the group. Joining attaches no QP (a user
//! id has none in the kernel: librdmacm calls ibv_attach_mcast itself).

use super::ucma::{out, parse_sa, u16_at, u32_at, u64_at};
use super::ucma_model::{ev, event, Addr, Cm, Event, St, PS_UDP, UDP_QKEY};
use super::Daemon;
use crate::model::QpType;
use std::sync::MutexGuard;

const EINVAL: i32 = libc::EINVAL;
/// The kernel's ENOTSUPP (not a userspace errno: what an IPv6 group on a
/// RoCE v2 id gets).
const ENOTSUPP: i32 = 524;
/// `IB_RATE_40_GBPS`: `iboe_get_rate` caps the netdev's speed at 40 Gb/s.
const IB_RATE_40_GBPS: u8 = 7;

/// One membership (`struct ucma_multicast`).
#[derive(Debug)]
pub struct Mc {
    /// The id that joined.
    pub owner: u32,
    /// Events read (GET_EVENT) for this membership.
    pub reported: u32,
}

/// `rdma_addr_size` of the sockaddr at `b`: 16 (AF_INET), 28 (AF_INET6),
/// 48 (AF_IB), else 0.
fn addr_size(b: &[u8]) -> u16 {
    match i32::from(u16_at(b, 0)) {
        libc::AF_INET => 16,
        libc::AF_INET6 => 28,
        27 => 48,
        _ => 0,
    }
}

/// JOIN_MCAST (`struct rdma_ucm_join_mcast`: response 0, uid 8, id 16,
/// addr_size 20, join_flags 22, addr 24) or, when `ip`, JOIN_IP_MCAST
/// (`struct rdma_ucm_join_ip_mcast`: response 0, uid 8, addr 16 as a
/// sockaddr_in6, id 44; always a full member).
pub(super) fn join(d: &Daemon, mut cm: MutexGuard<'_, Cm>, file: u32, pid: i32, ip: bool, c: &[u8; 512], outlen: usize) -> Result<(), i32> {
    let (response, uid) = (u64_at(c, 0), u64_at(c, 8));
    let (h, size, flags, sa) = if ip {
        let size = addr_size(&c[16..44]);
        if size == 0 || size > 28 {
            return Err(EINVAL); // rdma_addr_size_in6
        }
        (u32_at(c, 44), size, 0, &c[16..44])
    } else {
        (u32_at(c, 16), u16_at(c, 20), u16_at(c, 22), &c[24..152])
    };
    if outlen < 4 {
        return Err(libc::ENOSPC);
    }
    if size == 0 || size != addr_size(sa) {
        return Err(EINVAL);
    }
    // RDMA_MC_JOIN_FLAG_FULLMEMBER or _SENDONLY_FULLMEMBER (a send-only
    // member sends no IGMP join: nothing the port's model sees).
    if flags > 1 {
        return Err(EINVAL);
    }
    match cm.ids.get(&h) {
        Some(i) if i.file == file => {}
        Some(_) => return Err(EINVAL),
        None => return Err(libc::ENOENT),
    }
    let id = &cm.ids[&h];
    // ucma_get_ctx_dev: the id must have a device (bound to its address);
    // rdma_join_multicast: only an id bound or resolved, not listening,
    // connecting or connected.
    let src = id.src.filter(|s| !s.is_any()).ok_or(EINVAL)?;
    if !matches!(id.st, St::Bound | St::AddrResolved) {
        return Err(EINVAL);
    }
    let group = parse_sa(sa).map_err(|_| EINVAL)?;
    if group.is_any() {
        return Err(EINVAL); // cma_zero_addr
    }
    if group.v6 {
        return Err(ENOTSUPP); // cma_iboe_join_multicast: IPv6 on RoCE v2
    }
    let (ps, qp_type) = (id.ps, id.qp_type);
    let mc = cm.next_mc;
    cm.next_mc = cm.next_mc.wrapping_add(1);
    cm.mcs.insert(mc, Mc { owner: h, reported: 0 });
    let mut r = event(uid, mc, ev::MULTICAST_JOIN, 0);
    if qp_type == QpType::Ud {
        put_join(&mut r, d, &src, &group, ps);
    }
    drop(cm);
    if let Err(e) = out(d, pid, response, outlen, &mc.to_le_bytes()) {
        d.cm().mcs.remove(&mc);
        return Err(e);
    }
    // The join event (cma_iboe_join_work_handler, queued after the reply).
    d.cm().push_event(Event { owner: h, new_id: None, mc: Some(mc), resp: r });
    Ok(())
}

/// The `rdma_ucm_ud_param` of MULTICAST_JOIN (record offset 20):
/// qp_num 0xffffff, the qkey (`RDMA_UDP_QKEY` for the UDP port space; the
/// join record's zero otherwise) and `ib_init_ah_from_mcmember`'s address:
/// the group's GID, the id's source GID index, hop limit 64
/// (IPV6_DEFAULT_HOPLIMIT for IPv4 on RoCE v2), the port's rate, no LID.
fn put_join(r: &mut [u8; super::ucma_model::EVENT_LEN], d: &Daemon, src: &Addr, group: &Addr, ps: u16) {
    r[20..24].copy_from_slice(&crate::engine::MULTICAST_QPN.to_le_bytes());
    let qkey = if ps == PS_UDP { UDP_QKEY } else { 0 };
    r[24..28].copy_from_slice(&qkey.to_le_bytes());
    let a = &mut r[28..60];
    a[0..16].copy_from_slice(&group.ip);
    a[20] = super::ucma_qp::sgid_index(d, src).unwrap_or(0);
    a[21] = 64;
    a[28] = IB_RATE_40_GBPS;
    a[29] = 1; // is_global
    a[30] = 1; // port_num
}

/// LEAVE_MCAST (`struct rdma_ucm_destroy_id`: response 0, id 8): the
/// membership goes with its unread events; the answer is the count of its
/// events read.
pub(super) fn leave(d: &Daemon, mut cm: MutexGuard<'_, Cm>, file: u32, pid: i32, c: &[u8; 512], outlen: usize) -> Result<(), i32> {
    if outlen < 4 {
        return Err(libc::ENOSPC);
    }
    let h = u32_at(c, 8);
    let owner = cm.mcs.get(&h).ok_or(libc::ENOENT)?.owner;
    if cm.ids.get(&owner).map(|i| i.file) != Some(file) {
        return Err(EINVAL);
    }
    let mc = cm.mcs.remove(&h).ok_or(libc::ENOENT)?;
    // ucma_cleanup_mc_events.
    if let Some(f) = cm.files.get_mut(&file) {
        let before = f.queue.len();
        f.queue.retain(|e| e.mc != Some(h));
        for _ in f.queue.len()..before {
            super::sock::take_token(&f.app);
        }
    }
    drop(cm);
    out(d, pid, u64_at(c, 0), outlen, &mc.reported.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::super::sock;
    use super::super::ucma::command;
    use super::super::ucma_model::{ev, PS_UDP, UDP_QKEY};
    use super::super::ucma_tests::create_id;
    use super::super::{Config, Daemon};
    use crate::fixture::Identity;

    fn pid() -> i32 {
        std::process::id() as i32
    }

    fn sin(ip: [u8; 4]) -> [u8; 128] {
        let mut s = [0u8; 128];
        s[0..2].copy_from_slice(&(libc::AF_INET as u16).to_le_bytes());
        s[4..8].copy_from_slice(&ip);
        s
    }

    /// JOIN_MCAST of `group` by `id`: the membership handle or the errno.
    fn join(d: &Daemon, file: u32, id: u32, group: &[u8; 128], size: u16, flags: u16) -> Result<u32, i32> {
        let out = vec![0u8; 4];
        let mut c = [0u8; 512];
        c[0..8].copy_from_slice(&(out.as_ptr() as u64).to_le_bytes());
        c[8..16].copy_from_slice(&0xabcdu64.to_le_bytes());
        c[16..20].copy_from_slice(&id.to_le_bytes());
        c[20..22].copy_from_slice(&size.to_le_bytes());
        c[22..24].copy_from_slice(&flags.to_le_bytes());
        c[24..152].copy_from_slice(group);
        command(d, file, pid(), 22, &c, 4)?;
        Ok(u32::from_le_bytes(std::hint::black_box(&out)[..4].try_into().unwrap()))
    }

    #[test]
    fn join_gives_the_group_address_and_leave_counts_its_events() {
        let d = Daemon::new(&Config { socket: "/nonexistent".into(), trace: None, identity: Identity::default(), sysfs: None }).unwrap();
        let (mine, _app) = sock::event_pair().unwrap();
        let file = d.cm().add_file(pid(), mine, _app.try_clone().unwrap());
        let cmd = |n: u32, body: &[u8], outlen: usize| {
            let mut c = [0u8; 512];
            c[..body.len()].copy_from_slice(body);
            command(&d, file, pid(), n, &c, outlen)
        };
        let id = create_id(&d, file, 0, PS_UDP);
        let out = vec![0u8; 336];
        let at = (out.as_ptr() as u64).to_le_bytes();
        let group = sin([224, 0, 1, 41]);
        assert_eq!(join(&d, file, id, &group, 16, 0), Err(libc::EINVAL), "no device before the address is bound");

        // RESOLVE_ADDR from the port's address to the group.
        let mut r = [0u8; 272];
        r[0..4].copy_from_slice(&id.to_le_bytes());
        r[8..10].copy_from_slice(&16u16.to_le_bytes());
        r[10..12].copy_from_slice(&16u16.to_le_bytes());
        r[16..144].copy_from_slice(&sin([10, 251, 0, 1]));
        r[144..272].copy_from_slice(&group);
        cmd(21, &r, 0).unwrap();
        let get = || {
            cmd(12, &at, 336)?;
            Ok::<Vec<u8>, i32>(std::hint::black_box(&out).clone())
        };
        assert_eq!(u32::from_le_bytes(get().unwrap()[12..16].try_into().unwrap()), ev::ADDR_RESOLVED);

        assert_eq!(join(&d, file, id, &group, 28, 0), Err(libc::EINVAL), "addr_size must be the family's");
        assert_eq!(join(&d, file, id, &group, 16, 2), Err(libc::EINVAL), "join flags 0 or 1");
        let mut g6 = [0u8; 128];
        g6[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_le_bytes());
        g6[8] = 0xff;
        g6[23] = 1;
        assert_eq!(join(&d, file, id, &g6, 28, 0), Err(super::ENOTSUPP), "IPv6 groups on RoCE v2");
        let mc = join(&d, file, id, &group, 16, 0).unwrap();
        let e = get().unwrap();
        let u32_at = |a: usize| u32::from_le_bytes(e[a..a + 4].try_into().unwrap());
        assert_eq!((u64::from_le_bytes(e[0..8].try_into().unwrap()), u32_at(8), u32_at(12), u32_at(16)), (0xabcd, mc, ev::MULTICAST_JOIN, 0));
        assert_eq!((u32_at(20), u32_at(24)), (0xff_ffff, UDP_QKEY));
        let ah = &e[28..60];
        assert_eq!(ah[0..16], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 224, 0, 1, 41], "the IPv4-mapped group GID");
        assert_eq!((ah[20], ah[21], ah[28], ah[29], ah[30]), (3, 64, 7, 1, 1), "sgid index, hop limit, rate, is_global, port");

        // A second membership whose event is never read: its leave counts 0
        // and takes the event away.
        let mc2 = join(&d, file, id, &sin([224, 0, 1, 42]), 16, 1).unwrap();
        let leave = |h: u32| {
            let mut c = [0u8; 16];
            c[0..8].copy_from_slice(&at);
            c[8..12].copy_from_slice(&h.to_le_bytes());
            cmd(17, &c, 4)?;
            Ok::<u32, i32>(u32::from_le_bytes(std::hint::black_box(&out)[..4].try_into().unwrap()))
        };
        assert_eq!(leave(mc2), Ok(0));
        assert_eq!(get(), Err(libc::EAGAIN), "the unread join event went with the membership");
        assert_eq!(leave(mc), Ok(1));
        assert_eq!(leave(mc), Err(libc::ENOENT));
    }

    #[test]
    fn an_ipv6_group_resolves_from_the_ports_ipv6_address_and_cannot_be_joined() {
        let d = Daemon::new(&Config { socket: "/nonexistent".into(), trace: None, identity: Identity::default(), sysfs: None }).unwrap();
        let (mine, app) = sock::event_pair().unwrap();
        let file = d.cm().add_file(pid(), mine, app);
        let id = create_id(&d, file, 0, PS_UDP);
        let out = vec![0u8; 336];
        let at = (out.as_ptr() as u64).to_le_bytes();
        // RESOLVE_ADDR with no source: the route's is the port's IPv6 address.
        let mut g6 = [0u8; 128];
        g6[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_le_bytes());
        g6[8] = 0xff;
        g6[9] = 0x0e;
        g6[23] = 7;
        let mut r = [0u8; 512];
        r[0..4].copy_from_slice(&id.to_le_bytes());
        r[10..12].copy_from_slice(&28u16.to_le_bytes());
        r[144..272].copy_from_slice(&g6);
        command(&d, file, pid(), 21, &r, 0).unwrap();
        let mut get = [0u8; 512];
        get[..8].copy_from_slice(&at);
        command(&d, file, pid(), 12, &get, 336).unwrap();
        let e = std::hint::black_box(&out).clone();
        assert_eq!(u32::from_le_bytes(e[12..16].try_into().unwrap()), ev::ADDR_RESOLVED);
        let src = d.cm().ids[&id].src.unwrap();
        assert_eq!((src.v6, src.ip), (true, Identity::default().ipv6));
        assert_eq!(join(&d, file, id, &g6, 28, 0), Err(super::ENOTSUPP));
    }
}
