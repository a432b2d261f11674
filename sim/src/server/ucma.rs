//! `/dev/infiniband/rdma_cm` (the kernel's `ucma`): one connection per
//! open file; each `write()` is a `rdma_ucm_cmd_hdr` and a command struct
//! (include/uapi/rdma/rdma_user_cm.h), answered as `ucma.c` answers it.
//! The process's descriptor is the process's end of a token socket
//! (readable while an event waits); the shim turns a blocking GET_EVENT
//! that finds none into a `poll` and a retry.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use super::sock;
use super::ucma_model::{ev, event, put_conn, Addr, Cm, Conn, St, PD_REJ, PD_REP, PD_REQ, PD_SIDR_REP, PD_SIDR_REQ, PS_IB, PS_TCP, PS_UDP, UDP_QKEY};
use super::Daemon;
use crate::fdpass;
use crate::model::QpType;
use crate::mem::HostMem;
use crate::proto::{Call, Hello, Reply, Welcome};

const EINVAL: i32 = libc::EINVAL;

/// Serves one rdma_cm file.
pub fn serve(d: &Daemon, sock: OwnedFd, hello: Hello) {
    let Ok((mine, app)) = sock::event_pair() else { return };
    let Ok(dup) = app.try_clone() else { return };
    let file = d.cm().add_file(hello.pid, mine, dup);
    d.trace.line(format_args!("cm file={file} pid={} OPEN rdma_cm", hello.pid));
    let w = Welcome { ctx: file, daemon_pid: std::process::id() as i32, uar_pages: 0 };
    if fdpass::send(sock.as_fd(), &w.encode(), &[app.as_raw_fd()]).is_ok() {
        drop(app);
        let mut buf = [0u8; 64];
        loop {
            let Ok((n, _)) = fdpass::recv(sock.as_fd(), &mut buf) else { break };
            if n == 0 {
                break;
            }
            let Some(call) = Call::decode(&buf[..n]) else { break };
            let ret = match call {
                Call::Write { buf, len } => match write(d, file, hello.pid, buf, len) {
                    Ok(()) => len as i64,
                    Err(e) => -i64::from(e),
                },
                Call::Ioctl { .. } => -i64::from(libc::ENOTTY),
            };
            if fdpass::send(sock.as_fd(), &Reply::ret(ret).encode(), &[]).is_err() {
                break;
            }
        }
    }
    let mut cm = d.cm();
    cm.close_file(file);
    publish_listeners(d, &cm);
    drop(cm);
    d.trace.line(format_args!("cm file={file} pid={} CLOSE", hello.pid));
}

pub(super) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap_or_default())
}
pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or_default())
}

/// A `sockaddr_in` / `sockaddr_in6` at `b`.
pub fn parse_sa(b: &[u8]) -> Result<Addr, i32> {
    let port = u16::from_be_bytes([b[2], b[3]]);
    match u16_at(b, 0) as i32 {
        libc::AF_INET => {
            let mut ip = [0u8; 16];
            ip[10] = 0xff;
            ip[11] = 0xff;
            ip[12..16].copy_from_slice(&b[4..8]);
            Ok(Addr { v6: false, ip, port })
        }
        libc::AF_INET6 => Ok(Addr { v6: true, ip: b[8..24].try_into().unwrap_or_default(), port }),
        _ => Err(libc::EAFNOSUPPORT),
    }
}

/// Writes `a` as a sockaddr at `out` (28 bytes room at least); returns its size.
pub fn put_sa(out: &mut [u8], a: &Addr) -> u16 {
    out[2..4].copy_from_slice(&a.port.to_be_bytes());
    if a.v6 {
        out[0..2].copy_from_slice(&(libc::AF_INET6 as u16).to_le_bytes());
        out[8..24].copy_from_slice(&a.ip);
        28
    } else {
        out[0..2].copy_from_slice(&(libc::AF_INET as u16).to_le_bytes());
        out[4..8].copy_from_slice(&a.ip[12..16]);
        16
    }
}

impl Daemon {
    fn local(&self, a: &Addr) -> bool {
        if a.v6 {
            a.ip == self.id.ipv6
        } else {
            a.ip[12..16] == self.id.ipv4
        }
    }

    /// A multicast group (224.0.0.0/4, ff00::/8): `rdma_resolve_ip`
    /// reaches it through the port's netdev (its MAC is the group's
    /// mapping, no neighbour lookup), from the port's own address.
    fn group(a: &Addr) -> bool {
        if a.v6 {
            a.ip[0] == 0xff
        } else {
            a.ip[12] & 0xf0 == 0xe0
        }
    }

    /// The source address of a route to `dst`: the port's for a group,
    /// else `dst` itself (the one address of the one port).
    fn route_src(&self, dst: &Addr) -> [u8; 16] {
        let mut ip = dst.ip;
        if Self::group(dst) {
            if dst.v6 {
                ip = self.id.ipv6;
            } else {
                ip[12..16].copy_from_slice(&self.id.ipv4);
            }
        }
        ip
    }
}

pub(super) fn write(d: &Daemon, file: u32, pid: i32, buf: u64, len: u64) -> Result<(), i32> {
    if len < 8 {
        return Err(EINVAL);
    }
    let mut hdr = [0u8; 8];
    d.mem.read(pid, buf, &mut hdr).map_err(|_| libc::EFAULT)?;
    let (cmd, inlen, outlen) = (u32_at(&hdr, 0), u16_at(&hdr, 4) as usize, u16_at(&hdr, 6) as usize);
    if inlen as u64 + 8 > len {
        return Err(EINVAL);
    }
    let mut c = [0u8; 512];
    let n = inlen.min(c.len());
    d.mem.read(pid, buf + 8, &mut c[..n]).map_err(|_| libc::EFAULT)?;
    let r = command(d, file, pid, cmd, &c, outlen);
    if matches!(cmd, 1 | 7 | 18) {
        publish_listeners(d, &d.cm()); // DESTROY_ID, LISTEN, MIGRATE_ID
    }
    d.trace.line(format_args!("cm file={file} pid={pid} CMD {cmd} in={inlen} out={outlen} -> {r:?}"));
    r
}

/// Rewrites the listener file (see `super::cm_listen_path`); a failure
/// only leaves the previous contents (waiters then keep waiting).
fn publish_listeners(d: &Daemon, cm: &Cm) {
    let mut text = String::new();
    let mut ls: Vec<_> = cm.ids.iter().filter(|(_, i)| i.st == St::Listen).collect();
    ls.sort_by_key(|(h, _)| **h);
    for (h, i) in ls {
        let Some(a) = i.src else { continue };
        let ps = match i.ps {
            PS_TCP => "TCP",
            PS_UDP => "UDP",
            _ => "IB",
        };
        let ip = if a.v6 {
            std::net::IpAddr::from(a.ip).to_string()
        } else {
            std::net::Ipv4Addr::new(a.ip[12], a.ip[13], a.ip[14], a.ip[15]).to_string()
        };
        text.push_str(&format!("cm-idn {h} state LISTEN ps {ps} src-addr {ip}:{} \n", a.port));
    }
    let tmp = d.cm_listen.with_extension("tmp");
    if std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, &d.cm_listen);
    }
}

pub(super) fn out(d: &Daemon, pid: i32, at: u64, outlen: usize, resp: &[u8]) -> Result<(), i32> {
    if outlen < resp.len() {
        return Err(libc::ENOSPC);
    }
    d.mem.write(pid, at, resp).map_err(|_| libc::EFAULT)
}

/// The id `h` of `file`.
fn own(cm: &Cm, file: u32, h: u32) -> Result<(), i32> {
    match cm.ids.get(&h) {
        Some(i) if i.file == file => Ok(()),
        Some(_) => Err(EINVAL),
        None => Err(libc::ENOENT),
    }
}

pub(super) fn command(d: &Daemon, file: u32, pid: i32, cmd: u32, c: &[u8; 512], outlen: usize) -> Result<(), i32> {
    if cmd == 12 {
        // GET_EVENT
        let e = d.cm().pop(file).ok_or(libc::EAGAIN)?;
        return out(d, pid, u64_at(c, 0), outlen, &e.resp);
    }
    let mut cm = d.cm();
    match cmd {
        0 => {
            let (uid, resp, ps) = (u64_at(c, 0), u64_at(c, 8), u16_at(c, 16));
            let qpt = QpType::from_ib(c[18]).filter(|&t| match ps {
                PS_TCP => t == QpType::Rc,
                PS_UDP => t == QpType::Ud,
                PS_IB => t != QpType::Uc,
                _ => false,
            });
            let Some(qpt) = qpt else {
                return Err(EINVAL);
            };
            let h = cm.add_id(file, uid, ps, qpt);
            drop(cm);
            let r = out(d, pid, resp, outlen, &h.to_le_bytes());
            if r.is_err() {
                d.cm().destroy(h);
            }
            r
        }
        1 => {
            let h = u32_at(c, 8);
            own(&cm, file, h)?;
            let n = cm.destroy(h).unwrap_or(0);
            drop(cm);
            out(d, pid, u64_at(c, 0), outlen, &n.to_le_bytes())
        }
        2 => bind(d, &mut cm, file, u32_at(c, 36), parse_sa(&c[8..36])?),
        20 => bind(d, &mut cm, file, u32_at(c, 0), parse_sa(&c[8..136])?),
        3 => {
            let src = parse_sa(&c[0..28]).ok();
            resolve_addr(d, &mut cm, file, u32_at(c, 56), src, parse_sa(&c[28..56])?)
        }
        21 => {
            let src = if u16_at(c, 8) > 0 { parse_sa(&c[16..144]).ok() } else { None };
            resolve_addr(d, &mut cm, file, u32_at(c, 0), src, parse_sa(&c[144..272])?)
        }
        4 => {
            let h = u32_at(c, 0);
            own(&cm, file, h)?;
            let id = cm.ids.get_mut(&h).ok_or(EINVAL)?;
            if id.st != St::AddrResolved {
                return Err(EINVAL);
            }
            id.st = St::RouteResolved;
            cm.push_simple(h, ev::ROUTE_RESOLVED, 0);
            Ok(())
        }
        5 => {
            let h = u32_at(c, 8);
            own(&cm, file, h)?;
            let r = super::ucma_qp::query_route(d, &cm, h);
            drop(cm);
            out(d, pid, u64_at(c, 0), outlen, &r)
        }
        6 => connect(d, &mut cm, file, u32_at(c, 272), &c[0..272]),
        7 => {
            let h = u32_at(c, 0);
            own(&cm, file, h)?;
            let ps = cm.ids[&h].ps;
            if cm.ids[&h].src.is_none() {
                let p = cm.ephemeral(ps);
                let id = cm.ids.get_mut(&h).ok_or(EINVAL)?;
                id.src = Some(Addr { v6: false, ip: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 0, 0], port: p });
                id.st = St::Bound;
            }
            let mine = cm.ids[&h].src.ok_or(EINVAL)?;
            let clash = cm.ids.iter().any(|(o, i)| *o != h && i.st == St::Listen && i.ps == ps && i.src.is_some_and(|s| s.port == mine.port && (s.ip == mine.ip || s.is_any() || mine.is_any())));
            let id = cm.ids.get_mut(&h).ok_or(EINVAL)?;
            if !matches!(id.st, St::Bound | St::Idle | St::Listen) {
                return Err(EINVAL);
            }
            if clash && id.st != St::Listen {
                return Err(libc::EADDRINUSE);
            }
            id.st = St::Listen;
            id.backlog = u32_at(c, 4);
            Ok(())
        }
        8 => accept(d, &mut cm, file, u32_at(c, 280), u64_at(c, 0), &c[8..280]),
        9 => {
            let h = u32_at(c, 0);
            own(&cm, file, h)?;
            let (len, pd) = (c[4] as usize, &c[8..264]);
            let id = cm.ids.get_mut(&h).ok_or(EINVAL)?;
            if id.st != St::ReqRcvd {
                return Err(EINVAL);
            }
            let ud = id.qp_type == QpType::Ud;
            id.st = St::Idle;
            let Some(p) = id.peer.take() else { return Ok(()) };
            let Some(peer) = cm.ids.get_mut(&p) else { return Ok(()) };
            peer.peer = None;
            peer.st = St::RouteResolved;
            let mut r = event(peer.uid, p, if ud { ev::UNREACHABLE } else { ev::REJECTED }, if ud { -libc::ECONNREFUSED } else { 28 });
            put_conn(&mut r, &Conn::default(), &pd[..len.min(PD_REJ)], if ud { PD_SIDR_REP } else { PD_REJ });
            cm.push(p, None, r);
            Ok(())
        }
        10 => {
            let h = u32_at(c, 0);
            own(&cm, file, h)?;
            let id = cm.ids.get_mut(&h).ok_or(EINVAL)?;
            match id.st {
                St::Disconnected => Ok(()),
                St::Established | St::RepSent | St::RepRcvd => {
                    id.st = St::Disconnected;
                    let p = id.peer;
                    cm.push_simple(h, ev::DISCONNECTED, 0);
                    if let Some(p) = p {
                        if let Some(peer) = cm.ids.get_mut(&p) {
                            if peer.st != St::Disconnected {
                                peer.st = St::Disconnected;
                                cm.push_simple(p, ev::DISCONNECTED, 0);
                            }
                        }
                    }
                    Ok(())
                }
                _ => Err(EINVAL),
            }
        }
        11 => {
            let h = u32_at(c, 8);
            own(&cm, file, h)?;
            let a = super::ucma_qp::init_qp_attr(d, &cm, h, u32_at(c, 12))?;
            drop(cm);
            out(d, pid, u64_at(c, 0), outlen, &a)
        }
        14 => {
            let h = u32_at(c, 8);
            own(&cm, file, h)?;
            let (level, name, len) = (u32_at(c, 12), u32_at(c, 16), u32_at(c, 20) as usize);
            let mut v = [0u8; 4];
            if len > 0 {
                d.mem.read(pid, u64_at(c, 0), &mut v[..len.min(4)]).map_err(|_| libc::EFAULT)?;
            }
            let id = cm.ids.get_mut(&h).ok_or(EINVAL)?;
            match (level, name) {
                (0, 0) if len == 1 => id.tos = v[0],
                // rdma_set_reuseaddr: set while not listening, cleared only when idle.
                (0, 1) if len == 4 => {
                    let on = u32::from_le_bytes(v) != 0;
                    if !((on && id.st != St::Listen) || id.st == St::Idle) {
                        return Err(EINVAL);
                    }
                    id.reuseaddr = on
                }
                // rdma_set_afonly: only while idle or bound.
                (0, 2) if len == 4 => {
                    if !matches!(id.st, St::Idle | St::Bound) {
                        return Err(EINVAL);
                    }
                }
                (0, 3) if len == 1 => id.timeout = Some(v[0]),
                (0, _) => return Err(EINVAL),
                (1, 1) => return Err(libc::ENOSYS),
                _ => return Err(libc::ENOSYS),
            }
            Ok(())
        }
        19 => {
            let h = u32_at(c, 8);
            own(&cm, file, h)?;
            let r = super::ucma_qp::query(d, &cm, h, u32_at(c, 12))?;
            drop(cm);
            let n = r.len().min(outlen);
            if u32_at(c, 12) == 0 && outlen < r.len() {
                return Err(libc::ENOSPC);
            }
            d.mem.write(pid, u64_at(c, 0), &r[..n]).map_err(|_| libc::EFAULT)
        }
        18 => {
            // MIGRATE_ID, written to the new file: id, and the fd (in this
            // process) of the file that holds the id now.
            let (h, fd) = (u32_at(c, 8), u32_at(c, 12) as i32);
            let ino = sock::ino_of(pid, fd).ok_or(libc::EBADF)?;
            let from = cm.files.iter().find(|(_, f)| f.app_ino == ino && f.pid == pid).map(|(k, _)| *k).ok_or(libc::EINVAL)?;
            own(&cm, from, h)?;
            let to = file;
            let reported = migrate(&mut cm, h, from, to);
            drop(cm);
            out(d, pid, u64_at(c, 0), outlen, &reported.to_le_bytes())
        }
        16 | 22 => super::ucma_mcast::join(d, cm, file, pid, cmd == 16, c, outlen),
        17 => super::ucma_mcast::leave(d, cm, file, pid, c, outlen),
        _ => Err(libc::ENOSYS),
    }
}

fn migrate(cm: &mut Cm, h: u32, from: u32, to: u32) -> u32 {
    if from != to {
        let mut moved = Vec::new();
        if let Some(f) = cm.files.get_mut(&from) {
            let q = std::mem::take(&mut f.queue);
            for e in q {
                if e.owner == h {
                    sock::take_token(&f.app);
                    moved.push(e);
                } else {
                    f.queue.push_back(e);
                }
            }
        }
        if let Some(id) = cm.ids.get_mut(&h) {
            id.file = to;
        }
        if let Some(f) = cm.files.get_mut(&to) {
            for e in moved {
                f.queue.push_back(e);
                sock::send_nowait(&f.mine, &[1]);
            }
        }
    }
    cm.ids.get(&h).map_or(0, |i| i.reported)
}

fn bind(d: &Daemon, cm: &mut Cm, file: u32, h: u32, mut a: Addr) -> Result<(), i32> {
    own(cm, file, h)?;
    if cm.ids[&h].st != St::Idle {
        return Err(EINVAL);
    }
    if !a.is_any() && !d.local(&a) {
        return Err(libc::EADDRNOTAVAIL);
    }
    if a.port == 0 {
        a.port = cm.ephemeral(cm.ids[&h].ps);
    } else if cm.port_taken(h, &a) {
        return Err(libc::EADDRINUSE);
    }
    let id = cm.ids.get_mut(&h).ok_or(EINVAL)?;
    id.src = Some(a);
    id.st = St::Bound;
    Ok(())
}

fn resolve_addr(d: &Daemon, cm: &mut Cm, file: u32, h: u32, src: Option<Addr>, dst: Addr) -> Result<(), i32> {
    own(cm, file, h)?;
    let st = cm.ids[&h].st;
    if st == St::Idle {
        let mut s = src.filter(|s| !s.is_any() || s.port != 0).unwrap_or(Addr { v6: dst.v6, ..Addr::default() });
        if s.is_any() {
            s.ip = d.route_src(&dst);
            s.v6 = dst.v6;
        }
        bind(d, cm, file, h, s).or_else(|e| if e == libc::EADDRNOTAVAIL { Ok(()) } else { Err(e) })?;
    } else if !matches!(st, St::Bound | St::AddrResolved) {
        return Err(EINVAL);
    }
    let id = cm.ids.get_mut(&h).ok_or(EINVAL)?;
    if let Some(s) = id.src.as_mut() {
        if s.is_any() {
            s.ip = d.route_src(&dst);
        }
    }
    id.dst = Some(dst);
    if d.local(&dst) || (Daemon::group(&dst) && id.src.is_some_and(|s| d.local(&s))) {
        id.st = St::AddrResolved;
        cm.push_simple(h, ev::ADDR_RESOLVED, 0);
    } else {
        id.st = St::Bound;
        cm.push_simple(h, ev::ADDR_ERROR, -libc::EHOSTUNREACH);
    }
    Ok(())
}

fn read_conn(p: &[u8]) -> (Conn, Vec<u8>) {
    let c = Conn {
        qpn: u32_at(p, 0) & 0xff_ffff,
        psn: 0,
        srq: p[265],
        responder_resources: p[266],
        initiator_depth: p[267],
        retry: p[269].min(7),
        rnr_retry: p[270].min(7),
    };
    (c, p[8..8 + (p[264] as usize).min(256)].to_vec())
}

fn connect(_d: &Daemon, cm: &mut Cm, file: u32, h: u32, p: &[u8]) -> Result<(), i32> {
    own(cm, file, h)?;
    let (mut conn, pd) = read_conn(p);
    let id = &cm.ids[&h];
    if id.st != St::RouteResolved {
        return Err(EINVAL);
    }
    let ud = id.qp_type == QpType::Ud;
    if pd.len() > if ud { PD_SIDR_REQ } else { PD_REQ } {
        return Err(EINVAL);
    }
    let (ps, uid, src, dst) = (id.ps, id.uid, id.src, id.dst.ok_or(EINVAL)?);
    conn.psn = id.conn.psn;
    let Some(l) = cm.listener_for(ps, &dst) else {
        cm.ids.get_mut(&h).ok_or(EINVAL)?.st = St::RouteResolved;
        // IB_CM_REJ_INVALID_SERVICE_ID (8); SIDR: IB_SIDR_UNSUPPORTED.
        let r = event(uid, h, if ud { ev::UNREACHABLE } else { ev::REJECTED }, if ud { -libc::EINVAL } else { 8 });
        cm.push(h, None, r);
        return Ok(());
    };
    let (lfile, luid, lqpt) = (cm.ids[&l].file, cm.ids[&l].uid, cm.ids[&l].qp_type);
    let n = cm.add_id(lfile, luid, ps, lqpt);
    {
        let new = cm.ids.get_mut(&n).ok_or(EINVAL)?;
        new.st = St::ReqRcvd;
        new.src = Some(dst);
        new.dst = src;
        new.peer = Some(h);
        new.listener = Some(l);
        // The request's view: our initiator depth is their responder resources.
        new.conn.responder_resources = conn.initiator_depth;
        new.conn.initiator_depth = conn.responder_resources;
    }
    let me = cm.ids.get_mut(&h).ok_or(EINVAL)?;
    me.st = St::ReqSent;
    me.peer = Some(n);
    me.conn = conn;
    let mut r = event(luid, n, ev::CONNECT_REQUEST, 0);
    if ud {
        super::ucma_qp::put_ud(&mut r, _d, conn.qpn, UDP_QKEY, &pd, PD_SIDR_REQ);
    } else {
        let view = Conn { responder_resources: conn.initiator_depth, initiator_depth: conn.responder_resources, ..conn };
        put_conn(&mut r, &view, &pd, PD_REQ);
    }
    cm.push(l, Some(n), r);
    Ok(())
}

fn accept(d: &Daemon, cm: &mut Cm, file: u32, h: u32, uid: u64, p: &[u8]) -> Result<(), i32> {
    own(cm, file, h)?;
    let (conn, pd) = read_conn(p);
    let id = cm.ids.get_mut(&h).ok_or(EINVAL)?;
    let ud = id.qp_type == QpType::Ud;
    match id.st {
        St::ReqRcvd => {
            if pd.len() > if ud { PD_SIDR_REP } else { PD_REP } {
                return Err(EINVAL);
            }
            id.uid = uid;
            id.conn.qpn = conn.qpn;
            id.conn.responder_resources = conn.responder_resources;
            id.conn.initiator_depth = conn.initiator_depth;
            id.conn.retry = conn.retry;
            id.conn.rnr_retry = conn.rnr_retry;
            id.conn.srq = conn.srq;
            let mine = id.conn;
            id.st = if ud { St::Idle } else { St::RepSent };
            let Some(peer) = id.peer else { return Ok(()) };
            if ud {
                id.peer = None;
            }
            let Some(c) = cm.ids.get_mut(&peer) else { return Ok(()) };
            let cuid = c.uid;
            let mut r = event(cuid, peer, if ud { ev::ESTABLISHED } else { ev::CONNECT_RESPONSE }, 0);
            if ud {
                c.st = St::RouteResolved;
                c.peer = None;
                super::ucma_qp::put_ud(&mut r, d, mine.qpn, UDP_QKEY, &pd, PD_SIDR_REP);
                cm.push(peer, None, r);
                return Ok(());
            }
            c.st = St::RepRcvd;
            c.conn.responder_resources = mine.initiator_depth.min(c.conn.responder_resources.max(mine.initiator_depth));
            c.conn.initiator_depth = mine.responder_resources;
            let view = Conn { qpn: mine.qpn, responder_resources: mine.initiator_depth, initiator_depth: mine.responder_resources, ..mine };
            put_conn(&mut r, &view, &pd, PD_REP);
            cm.push(peer, None, r);
            Ok(())
        }
        St::RepRcvd => {
            // The client's RTU.
            id.st = St::Established;
            let Some(peer) = id.peer else { return Ok(()) };
            if let Some(s) = cm.ids.get_mut(&peer) {
                if s.st == St::RepSent {
                    s.st = St::Established;
                    cm.push_simple(peer, ev::ESTABLISHED, 0);
                }
            }
            Ok(())
        }
        _ => Err(EINVAL),
    }
}
