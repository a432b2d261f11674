//! What `ucma` computes for an id: INIT_QP_ATTR's `ib_uverbs_qp_attr`
//! (the masks and values `rdma_init_qp_attr` / `ib_cm_init_qp_attr` give
//! for INIT, RTR and RTS), QUERY's address, GID and path answers, and the
//! UD parameters of SIDR events.

use super::device::ACTIVE_MTU;
use super::ucma::put_sa;
use super::ucma_model::{Addr, Cm, St, EVENT_LEN, UDP_QKEY};
use super::Daemon;
use crate::model::QpType;

const GID_V2: &str = "RoCE v2";

fn gid_of(a: &Addr) -> [u8; 16] {
    a.ip
}

/// GID index of `a` among the port's RoCE v2 GIDs.
pub(super) fn sgid_index(d: &Daemon, a: &Addr) -> Option<u8> {
    crate::fixture::gids(&d.id).iter().position(|(g, t)| *g == gid_of(a) && *t == GID_V2).map(|i| i as u8)
}

/// `struct ib_uverbs_ah_attr` (32 bytes) toward `dst` from `src`.
fn ah_attr(d: &Daemon, src: &Addr, dst: &Addr, tos: u8) -> [u8; 32] {
    let mut a = [0u8; 32];
    a[0..16].copy_from_slice(&gid_of(dst));
    a[20] = sgid_index(d, src).unwrap_or(0);
    a[21] = 64; // hop limit (IPv4 TTL)
    a[22] = tos;
    a[29] = 1; // is_global
    a[30] = 1; // port
    a
}

/// INIT_QP_ATTR: `struct ib_uverbs_qp_attr` (144 bytes) for `state`, as
/// `rdma_init_qp_attr` computes it on a RoCE port. A UD id, or a connected
/// one before it has a CM id (no `rdma_connect` sent, no request received),
/// gets `cma_ib_init_qp_attr`'s answer whatever the state asked: STATE |
/// PKEY_INDEX | PORT and the qkey (UD) or access flags 0 (RC); and for RTR
/// the id's own PSN in rq_psn (outside the mask). A connected id gets
/// `ib_cm_init_qp_attr`'s: INIT with REMOTE_WRITE (| REMOTE_READ |
/// REMOTE_ATOMIC with responder resources), RTR with the path and the
/// peer's QPN and PSN, RTS with the send PSN, retries and timeout; EINVAL
/// for a listener or an id whose connection ended (the CM id is idle or in
/// timewait there).
pub fn init_qp_attr(d: &Daemon, cm: &Cm, h: u32, state: u32) -> Result<[u8; 144], i32> {
    let id = &cm.ids[&h];
    let src = id.src.filter(|s| !s.is_any()).ok_or(libc::EINVAL)?;
    let mut a = [0u8; 144];
    let ud = id.qp_type == QpType::Ud;
    let put32 = |a: &mut [u8; 144], at: usize, v: u32| a[at..at + 4].copy_from_slice(&v.to_le_bytes());
    put32(&mut a, 4, state);
    let has_cm_id = matches!(id.st, St::Listen | St::ReqSent | St::ReqRcvd | St::RepSent | St::RepRcvd | St::Established | St::Disconnected);
    let mask: u32 = if ud || !has_cm_id {
        if state == 2 {
            put32(&mut a, 24, id.conn.psn);
        }
        if ud {
            put32(&mut a, 20, UDP_QKEY);
            1 | 16 | 32 | 64 // STATE | PKEY_INDEX | PORT | QKEY
        } else {
            1 | 8 | 16 | 32 // STATE | ACCESS_FLAGS (0) | PKEY_INDEX | PORT
        }
    } else {
        match state {
            1 if !matches!(id.st, St::Listen | St::Disconnected) => {
                let rr = id.conn.responder_resources > 0;
                // REMOTE_WRITE, and REMOTE_READ | REMOTE_ATOMIC with responder resources.
                put32(&mut a, 36, 2 | if rr { 4 | 8 } else { 0 });
                1 | 8 | 16 | 32
            }
            2 => {
                let peer = id.peer.and_then(|p| cm.ids.get(&p)).ok_or(libc::EINVAL)?;
                let dst = id.dst.ok_or(libc::EINVAL)?;
                put32(&mut a, 12, u32::from(ACTIVE_MTU));
                put32(&mut a, 24, peer.conn.psn);
                put32(&mut a, 32, peer.conn.qpn);
                a[40..72].copy_from_slice(&ah_attr(d, &src, &dst, id.tos));
                a[131] = id.conn.responder_resources;
                a[132] = 0; // min_rnr_timer, as ib_cm gives
                1 | 128 | 256 | 4096 | 32768 | 131072 | 1048576
            }
            3 => {
                if id.peer.is_none() && id.st != St::Established {
                    return Err(libc::EINVAL);
                }
                put32(&mut a, 28, id.conn.psn);
                a[130] = id.conn.initiator_depth;
                a[134] = id.timeout.unwrap_or(18);
                a[135] = id.conn.retry;
                a[136] = id.conn.rnr_retry;
                1 | 512 | 1024 | 2048 | 8192 | 65536
            }
            _ => return Err(libc::EINVAL),
        }
    };
    put32(&mut a, 0, mask);
    a[133] = 1; // port_num
    Ok(a)
}

/// QUERY (`RDMA_USER_CM_QUERY_ADDR` 0, `_PATH` 1, `_GID` 2).
pub fn query(d: &Daemon, cm: &Cm, h: u32, option: u32) -> Result<Vec<u8>, i32> {
    let id = &cm.ids[&h];
    let on_dev = id.src.is_some_and(|s| !s.is_any());
    match option {
        0 | 2 => {
            let mut r = vec![0u8; 280];
            if on_dev {
                r[0..8].copy_from_slice(&d.id.node_guid.to_be_bytes());
                r[8] = 1;
            }
            r[10..12].copy_from_slice(&0xffffu16.to_le_bytes());
            let mut put = |at: usize, size_at: usize, a: Option<Addr>| {
                let Some(a) = a else { return };
                let n = if option == 0 {
                    put_sa(&mut r[at..at + 128], &a)
                } else {
                    // sockaddr_ib: family, pkey, flowinfo, GID, service id.
                    r[at..at + 2].copy_from_slice(&27u16.to_le_bytes());
                    r[at + 2..at + 4].copy_from_slice(&0xffffu16.to_be_bytes());
                    r[at + 8..at + 24].copy_from_slice(&gid_of(&a));
                    let sid = (u64::from(id.ps) << 16) | u64::from(a.port);
                    r[at + 24..at + 32].copy_from_slice(&sid.to_be_bytes());
                    r[at + 32..at + 40].copy_from_slice(&u64::MAX.to_be_bytes());
                    48
                };
                r[size_at..size_at + 2].copy_from_slice(&n.to_le_bytes());
            };
            put(16, 12, id.src);
            put(144, 14, id.dst);
            Ok(r)
        }
        1 => {
            let (Some(src), Some(dst), true) = (id.src, id.dst, routed(id.st)) else { return Ok(vec![0u8; 8]) };
            let mut r = vec![0u8; 8 + 72];
            r[0..4].copy_from_slice(&1u32.to_le_bytes());
            // IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL
            r[8..12].copy_from_slice(&0x2bu32.to_le_bytes());
            let p = &mut r[16..80];
            p[8..24].copy_from_slice(&gid_of(&dst));
            p[24..40].copy_from_slice(&gid_of(&src));
            p[44..48].copy_from_slice(&64u32.to_be_bytes());
            p[48] = id.tos;
            p[49] = 0x81; // reversible, one path
            p[50..52].copy_from_slice(&0xffffu16.to_be_bytes());
            p[54] = 0x80 | ACTIVE_MTU;
            p[55] = 0x80 | 7; // 40 Gb/s
            p[56] = 0x80 | 16; // packet life (CMA_IBOE_PACKET_LIFETIME)
            Ok(r)
        }
        _ => Err(libc::EINVAL),
    }
}

/// Whether `st` has a route (RESOLVE_ROUTE done, or an id of a connection).
fn routed(st: St) -> bool {
    matches!(st, St::RouteResolved | St::ReqSent | St::ReqRcvd | St::RepSent | St::RepRcvd | St::Established)
}

/// QUERY_ROUTE (the IP-only query librdmacm uses when the kernel refuses
/// AF_IB): `struct rdma_ucm_query_route_resp` (208 bytes): node GUID, two
/// `ib_user_path_rec`, source and destination (`sockaddr_in6`-sized),
/// num_paths, port, ibdev index. On a RoCE port `ucma_copy_iboe_route`
/// gives one path once the route is resolved, else none but the GIDs of
/// the two addresses (pkey 0xffff) in the first record.
pub fn query_route(d: &Daemon, cm: &Cm, h: u32) -> [u8; 208] {
    let id = &cm.ids[&h];
    let mut r = [0u8; 208];
    let mut put = |at: usize, a: Option<Addr>| {
        let Some(a) = a else { return };
        let mut sa = [0u8; 128];
        let n = put_sa(&mut sa, &a) as usize;
        r[at..at + n].copy_from_slice(&sa[..n]);
    };
    put(136, id.src);
    put(164, id.dst);
    if id.src.is_none_or(|s| s.is_any()) {
        return r; // no device bound yet
    }
    r[0..8].copy_from_slice(&d.id.node_guid.to_be_bytes());
    r[196] = 1; // port_num
    let p = &mut r[8..72];
    if let Some(dst) = id.dst {
        p[0..16].copy_from_slice(&gid_of(&dst));
    }
    if let Some(src) = id.src {
        p[16..32].copy_from_slice(&gid_of(&src));
    }
    p[52..54].copy_from_slice(&0xffffu16.to_be_bytes());
    if routed(id.st) && id.dst.is_some() {
        r[192..196].copy_from_slice(&1u32.to_le_bytes());
        let p = &mut r[8..72];
        p[44..48].copy_from_slice(&1u32.to_le_bytes()); // reversible
        p[48..52].copy_from_slice(&u32::from(ACTIVE_MTU).to_le_bytes());
        p[54] = 64; // hop limit
        p[55] = id.tos;
        p[56] = 1; // numb_path
        p[57] = id.tos >> 5; // sl
        p[58] = 2; // mtu_selector IB_SA_EQ
        p[59] = 2; // rate_selector
        p[60] = 7; // 40 Gb/s
        p[61] = 2; // packet_life_time_selector
        p[62] = 16; // CMA_IBOE_PACKET_LIFETIME
    }
    r
}

/// `rdma_ucm_ud_param` of a SIDR event (at record offset 20).
pub fn put_ud(r: &mut [u8; EVENT_LEN], d: &Daemon, qpn: u32, qkey: u32, pd: &[u8], pd_size: usize) {
    r[20..24].copy_from_slice(&qpn.to_le_bytes());
    r[24..28].copy_from_slice(&qkey.to_le_bytes());
    let mut me = Addr { v6: false, ..Addr::default() };
    me.ip[10] = 0xff;
    me.ip[11] = 0xff;
    me.ip[12..16].copy_from_slice(&d.id.ipv4);
    r[28..60].copy_from_slice(&ah_attr(d, &me, &me, 0));
    let n = pd.len().min(pd_size);
    r[60..60 + n].copy_from_slice(&pd[..n]);
    r[316] = pd_size as u8;
}
