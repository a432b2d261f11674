//! RDMA netlink (`NETLINK_RDMA`, the kernel's `nldev.c`) of the simulated
//! NIC: what `rdma dev`, `rdma link`, `rdma res show mr` and
//! `rdma res show cm_id` (iproute2) and netlink device discovery ask.
//!
//! The shim turns a process's `socket(AF_NETLINK, _, NETLINK_RDMA)` into a
//! connection to the daemon (a `SOCK_SEQPACKET` socket: one datagram per
//! netlink message, as the kernel's socket keeps them). Each request is
//! answered from the daemon's state: `RDMA_NLDEV_CMD_GET` (the device),
//! `PORT_GET` (its one port), `RES_MR_GET` (every MR) and `RES_CM_ID_GET`
//! (every rdma_cm id), each as a dump (messages flagged `NLM_F_MULTI`, then
//! `NLMSG_DONE`) or, for GET / PORT_GET of one object, one message and the
//! ACK the request asked for; `GET_CHARDEV` names `uverbsN` (with the
//! mlx5 driver id) and `rdma_cm`, as libibverbs, librdmacm and our
//! discovery ask; `DELLINK` is refused (`EINVAL`: a hardware device cannot
//! be deleted as an rxe link can). The port names its netdev (`lo`, the
//! netdev of its GIDs) and its state follows that netdev (`link.rs`: `ip
//! link set dev lo down|up`, which the shim sends here). Anything else (`SYS_GET`, `RES_GET`, ...) gets
//! `NLMSG_ERROR` `-EOPNOTSUPP`, as a kernel without that command answers.

use std::os::fd::{AsFd, OwnedFd};

use super::ucma_model::{Addr, St};
use super::Daemon;
use crate::fdpass;
use crate::proto::Hello;

const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLM_F_MULTI: u16 = 0x2;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_DUMP: u16 = 0x300;
/// `NLM_F_CAPPED`: the error message carries only the request's header.
const NLM_F_CAPPED: u16 = 0x100;
const NLA_F_NESTED: u16 = 1 << 15;
/// `RDMA_NL_NLDEV`.
const CLIENT: u16 = 5;

/// Commands (`enum rdma_nldev_command`).
mod cmd {
    pub const GET: u16 = 1;
    pub const DELLINK: u16 = 4;
    pub const PORT_GET: u16 = 5;
    pub const RES_CM_ID_GET: u16 = 11;
    pub const RES_MR_GET: u16 = 13;
    pub const GET_CHARDEV: u16 = 15;
}

/// Attributes (`enum rdma_nldev_attr`).
mod attr {
    pub const DEV_INDEX: u16 = 1;
    pub const DEV_NAME: u16 = 2;
    pub const PORT_INDEX: u16 = 3;
    pub const CAP_FLAGS: u16 = 4;
    pub const FW_VERSION: u16 = 5;
    pub const NODE_GUID: u16 = 6;
    pub const SYS_IMAGE_GUID: u16 = 7;
    pub const PORT_STATE: u16 = 12;
    pub const PORT_PHYS_STATE: u16 = 13;
    pub const DEV_NODE_TYPE: u16 = 14;
    pub const RES_STATE: u16 = 27;
    pub const RES_PID: u16 = 28;
    pub const RES_CM_ID: u16 = 30;
    pub const RES_CM_ID_ENTRY: u16 = 31;
    pub const RES_PS: u16 = 32;
    pub const RES_SRC_ADDR: u16 = 33;
    pub const RES_DST_ADDR: u16 = 34;
    pub const RES_MR: u16 = 40;
    pub const RES_MR_ENTRY: u16 = 41;
    pub const RES_RKEY: u16 = 42;
    pub const RES_LKEY: u16 = 43;
    pub const RES_IOVA: u16 = 44;
    pub const RES_MRLEN: u16 = 45;
    pub const NDEV_INDEX: u16 = 50;
    pub const NDEV_NAME: u16 = 51;
    pub const RES_PDN: u16 = 60;
    pub const RES_MRN: u16 = 62;
    pub const RES_CM_IDN: u16 = 63;
    pub const DEV_PROTOCOL: u16 = 67;
    pub const CHARDEV_TYPE: u16 = 69;
    pub const CHARDEV_NAME: u16 = 70;
    pub const CHARDEV_ABI: u16 = 71;
    pub const CHARDEV: u16 = 72;
    pub const UVERBS_DRIVER_ID: u16 = 73;
}

/// `RDMA_DRIVER_MLX5` (`enum rdma_driver_id`).
const DRIVER_MLX5: u32 = 1;
/// The device's uverbs ABI (`MLX5_IB_UVERBS_ABI_VERSION`, as the
/// fixture's `uverbs0/abi_version`) and `RDMA_USER_CM_ABI_VERSION`.
const UVERBS_ABI: u64 = 1;
const UCM_ABI: u64 = 4;

/// The one device's index (`ib_device.index`) and its one port.
const DEV_INDEX: u32 = 0;
const PORT: u32 = 1;
/// Bytes of one reply message at most: iproute2's `rdma` reads into a
/// buffer of `MNL_SOCKET_BUFFER_SIZE` (a page at most).
const MSG_MAX: usize = 3072;

/// One netlink message being built.
struct Msg(Vec<u8>);

impl Msg {
    fn new(ty: u16, flags: u16, seq: u32) -> Self {
        let mut v = Vec::with_capacity(256);
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(&flags.to_ne_bytes());
        v.extend_from_slice(&seq.to_ne_bytes());
        v.extend_from_slice(&0u32.to_ne_bytes());
        Msg(v)
    }

    fn pad(&mut self) {
        while !self.0.len().is_multiple_of(4) {
            self.0.push(0);
        }
    }

    fn attr(&mut self, ty: u16, payload: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        self.0.extend_from_slice(&ty.to_ne_bytes());
        self.0.extend_from_slice(payload);
        self.pad();
        self
    }

    fn u8(&mut self, ty: u16, v: u8) -> &mut Self {
        self.attr(ty, &[v])
    }

    fn u32(&mut self, ty: u16, v: u32) -> &mut Self {
        self.attr(ty, &v.to_ne_bytes())
    }

    fn u64(&mut self, ty: u16, v: u64) -> &mut Self {
        self.attr(ty, &v.to_ne_bytes())
    }

    fn str(&mut self, ty: u16, s: &str) -> &mut Self {
        let mut b = s.as_bytes().to_vec();
        b.push(0);
        self.attr(ty, &b)
    }

    /// Opens a nested attribute; `end` closes it.
    fn nest(&mut self, ty: u16) -> usize {
        let at = self.0.len();
        self.attr(ty | NLA_F_NESTED, &[]);
        at
    }

    fn end(&mut self, at: usize) {
        let len = (self.0.len() - at) as u16;
        self.0[at..at + 2].copy_from_slice(&len.to_ne_bytes());
    }

    fn done(mut self) -> Vec<u8> {
        let len = self.0.len() as u32;
        self.0[0..4].copy_from_slice(&len.to_ne_bytes());
        self.0
    }
}

/// A request's header and the attributes the answers need.
struct Req {
    ty: u16,
    flags: u16,
    seq: u32,
    hdr: [u8; 16],
    dev: Option<u32>,
    port: Option<u32>,
    chardev: Option<String>,
}

fn parse(m: &[u8]) -> Option<Req> {
    let u16_at = |o: usize| m.get(o..o + 2).map(|b| u16::from_ne_bytes([b[0], b[1]]));
    let u32_at = |o: usize| m.get(o..o + 4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    let mut r = Req { ty: u16_at(4)?, flags: u16_at(6)?, seq: u32_at(8)?, hdr: m.get(..16)?.try_into().ok()?, dev: None, port: None, chardev: None };
    let mut at = 16;
    while at + 4 <= m.len() {
        let (len, ty) = (usize::from(u16_at(at)?), u16_at(at + 2)? & !(NLA_F_NESTED | 1 << 14));
        if len < 4 || at + len > m.len() {
            break;
        }
        match ty {
            attr::DEV_INDEX => r.dev = u32_at(at + 4),
            attr::PORT_INDEX => r.port = u32_at(at + 4),
            attr::CHARDEV_TYPE => {
                let b = m.get(at + 4..at + len)?;
                r.chardev = Some(String::from_utf8_lossy(b.split(|&c| c == 0).next().unwrap_or_default()).into_owned());
            }
            _ => {}
        }
        at += (len + 3) & !3;
    }
    Some(r)
}

/// `NLMSG_ERROR` with `-errno` (0: the ACK) for request `r`.
fn error(r: &Req, errno: i32) -> Vec<u8> {
    let mut m = Msg::new(NLMSG_ERROR, if errno == 0 { 0 } else { NLM_F_CAPPED }, r.seq);
    m.0.extend_from_slice(&(-errno).to_ne_bytes());
    m.0.extend_from_slice(&r.hdr);
    m.done()
}

/// The answers to one request, one datagram each.
fn answer(d: &Daemon, r: &Req) -> Vec<Vec<u8>> {
    let (client, op) = (r.ty >> 10, r.ty & 0x3ff);
    let dump = r.flags & NLM_F_DUMP == NLM_F_DUMP;
    if client != CLIENT {
        return vec![error(r, libc::EOPNOTSUPP)];
    }
    if r.dev.is_some_and(|i| i != DEV_INDEX) || r.port.is_some_and(|p| p != PORT) {
        return vec![error(r, if dump { libc::ENODEV } else { libc::EINVAL })];
    }
    let ty = r.ty;
    let flags = if dump { NLM_F_MULTI } else { 0 };
    let mut out = match op {
        cmd::GET if dump || r.dev.is_some() => vec![dev_msg(d, ty, flags, r.seq)],
        cmd::PORT_GET if dump || r.port.is_some() => vec![port_msg(d, ty, flags, r.seq)],
        cmd::RES_MR_GET if dump => mr_msgs(d, ty, r.seq),
        cmd::RES_CM_ID_GET if dump => cm_id_msgs(d, ty, r.seq),
        cmd::GET_CHARDEV if !dump => match chardev_msg(d, r) {
            Some(m) => vec![m],
            None => return vec![error(r, libc::ENOENT)],
        },
        cmd::GET | cmd::PORT_GET => return vec![error(r, libc::EINVAL)],
        // `rdma link delete mlx5_0`: nldev_dellink unregisters only a device
        // that allows it (IBK_ALLOW_USER_UNREG: rxe, siw); mlx5 does not
        cmd::DELLINK => return vec![error(r, libc::EINVAL)],
        _ => return vec![error(r, libc::EOPNOTSUPP)],
    };
    if dump {
        let mut m = Msg::new(NLMSG_DONE, NLM_F_MULTI, r.seq);
        m.0.extend_from_slice(&0i32.to_ne_bytes());
        out.push(m.done());
    } else if r.flags & NLM_F_ACK != 0 {
        out.push(error(r, 0));
    }
    out
}

fn head(d: &Daemon, ty: u16, flags: u16, seq: u32) -> Msg {
    let mut m = Msg::new(ty, flags, seq);
    m.u32(attr::DEV_INDEX, DEV_INDEX).str(attr::DEV_NAME, &d.id.ibdev);
    m
}

fn dev_msg(d: &Daemon, ty: u16, flags: u16, seq: u32) -> Vec<u8> {
    let (a, b, c) = crate::fixture::FW;
    let mut m = head(d, ty, flags, seq);
    m.u32(attr::PORT_INDEX, 1) // the number of ports
        .u64(attr::CAP_FLAGS, u64::from(super::device::DEVICE_CAP_FLAGS))
        .str(attr::FW_VERSION, &format!("{a}.{b}.{c:04}"))
        .u64(attr::NODE_GUID, d.id.node_guid)
        .u64(attr::SYS_IMAGE_GUID, d.id.node_guid)
        .u8(attr::DEV_NODE_TYPE, 1) // RDMA_NODE_IB_CA
        .str(attr::DEV_PROTOCOL, "roce");
    m.done()
}

/// `huge_encode_dev` of a device number.
fn huge_dev((major, minor): (u32, u32)) -> u64 {
    u64::from((minor & 0xff) | (major << 8) | ((minor & !0xff) << 12))
}

/// GET_CHARDEV: the device's `uverbsN` (the /dev/null number the shim's
/// stat of `/dev/infiniband/uverbsN` reports, as the fixture's sysfs says)
/// or the `rdma_cm` misc device.
fn chardev_msg(d: &Daemon, r: &Req) -> Option<Vec<u8>> {
    let mut m = Msg::new(r.ty, 0, r.seq);
    match r.chardev.as_deref()? {
        "uverbs" if r.dev == Some(DEV_INDEX) => {
            m.u64(attr::CHARDEV, huge_dev((1, 3)))
                .u64(attr::CHARDEV_ABI, UVERBS_ABI)
                .str(attr::CHARDEV_NAME, &format!("uverbs{}", d.id.uverbs_index))
                .u32(attr::UVERBS_DRIVER_ID, DRIVER_MLX5);
        }
        "rdma_cm" => {
            m.u64(attr::CHARDEV, huge_dev(crate::fixture::RDMA_CM_DEV)).u64(attr::CHARDEV_ABI, UCM_ABI).str(attr::CHARDEV_NAME, "rdma_cm");
        }
        _ => return None,
    }
    Some(m.done())
}

fn port_msg(d: &Daemon, ty: u16, flags: u16, seq: u32) -> Vec<u8> {
    let mut m = head(d, ty, flags, seq);
    // ACTIVE, LINK_UP, or DOWN, DISABLED while the netdev is down (a RoCE
    // port: no LID, SM or subnet prefix); its netdev, as fill_port_info
    // names it (`rdma link show`: "netdev lo")
    let up = d.port_up.load(std::sync::atomic::Ordering::Acquire);
    m.u32(attr::PORT_INDEX, PORT).u8(attr::PORT_STATE, if up { 4 } else { 1 }).u8(attr::PORT_PHYS_STATE, if up { 5 } else { 3 });
    m.u32(attr::NDEV_INDEX, super::ioctl_device::netdev_ifindex()).str(attr::NDEV_NAME, crate::fixture::NETDEV);
    m.done()
}

/// The attributes `f` writes, without a message header (one table entry).
fn entry(f: impl FnOnce(&mut Msg)) -> Vec<u8> {
    let mut m = Msg::new(0, 0, 0);
    f(&mut m);
    m.0.split_off(16)
}

/// Dump messages of `entries` (each one entry's attributes) in a `table`
/// of `entry` nests, split so each fits `MSG_MAX`.
fn table(d: &Daemon, ty: u16, seq: u32, table: u16, entry: u16, entries: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut it = entries.into_iter().peekable();
    while it.peek().is_some() {
        let mut m = head(d, ty, NLM_F_MULTI, seq);
        let t = m.nest(table);
        while m.0.len() < MSG_MAX - 512 {
            let Some(bytes) = it.next() else { break };
            let e = m.nest(entry);
            m.0.extend_from_slice(&bytes);
            m.end(e);
        }
        m.end(t);
        out.push(m.done());
    }
    out
}

fn mr_msgs(d: &Daemon, ty: u16, seq: u32) -> Vec<Vec<u8>> {
    let mrs: Vec<_> = {
        let st = d.lock();
        let mut v: Vec<_> = st.dev.mrs.values().map(|m| (m.key, m.pdn, m.iova, m.length, m.pid)).collect();
        v.sort_unstable();
        v
    };
    let entries = mrs
        .into_iter()
        .map(|(key, pdn, iova, len, pid)| {
            entry(|m| {
                m.u32(attr::RES_RKEY, key)
                    .u32(attr::RES_LKEY, key)
                    .u64(attr::RES_IOVA, iova)
                    .u64(attr::RES_MRLEN, len)
                    .u32(attr::RES_MRN, key >> 8)
                    .u32(attr::RES_PDN, pdn)
                    .u32(attr::RES_PID, pid as u32);
            })
        })
        .collect();
    table(d, ty, seq, attr::RES_MR, attr::RES_MR_ENTRY, entries)
}

/// `enum rdma_cm_state` of an id's state.
fn cm_state(s: St) -> u8 {
    match s {
        St::Idle => 0,
        St::AddrResolved => 2,
        St::RouteResolved => 4,
        St::ReqSent | St::ReqRcvd | St::RepRcvd | St::RepSent | St::Established => 5, // RDMA_CM_CONNECT
        St::Disconnected => 6,
        St::Bound => 7,
        St::Listen => 8,
    }
}

/// `struct __kernel_sockaddr_storage` (128 bytes) of an address, laid out
/// as the ucma model writes its sockaddrs.
fn sockaddr(a: &Addr) -> [u8; 128] {
    let mut s = [0u8; 128];
    super::ucma::put_sa(&mut s, a);
    s
}

fn cm_id_msgs(d: &Daemon, ty: u16, seq: u32) -> Vec<Vec<u8>> {
    let ids: Vec<_> = {
        let cm = d.cm();
        let mut v: Vec<_> = cm
            .ids
            .iter()
            .map(|(&h, id)| (h, cm.files.get(&id.file).map_or(0, |f| f.pid), id.ps, cm_state(id.st), id.src.map(|a| sockaddr(&a)), id.dst.map(|a| sockaddr(&a))))
            .collect();
        v.sort_unstable_by_key(|e| e.0);
        v
    };
    let entries = ids
        .into_iter()
        .map(|(h, pid, ps, st, src, dst)| {
            entry(|m| {
                m.u32(attr::PORT_INDEX, PORT).u32(attr::RES_PS, u32::from(ps)).u8(attr::RES_STATE, st);
                if let Some(s) = &src {
                    m.attr(attr::RES_SRC_ADDR, s);
                }
                if let Some(s) = &dst {
                    m.attr(attr::RES_DST_ADDR, s);
                }
                m.u32(attr::RES_CM_IDN, h).u32(attr::RES_PID, pid as u32);
            })
        })
        .collect();
    table(d, ty, seq, attr::RES_CM_ID, attr::RES_CM_ID_ENTRY, entries)
}

/// Serves one process's netlink socket until it closes.
pub(super) fn serve(d: &Daemon, sock: OwnedFd, hello: Hello) {
    d.trace.line(format_args!("pid={} OPEN netlink", hello.pid));
    let mut buf = vec![0u8; 65536];
    loop {
        let Ok((n, _)) = fdpass::recv(sock.as_fd(), &mut buf) else { break };
        if n == 0 {
            break;
        }
        let mut at = 0;
        while at + 16 <= n {
            let len = u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap_or_default()) as usize;
            if len < 16 || at + len > n {
                break;
            }
            if super::link::is_link_change(&buf[at..at + len]) {
                // `ip link set dev <the port's netdev> down|up`, diverted by the shim
                if fdpass::send(sock.as_fd(), &super::link::answer(d, &buf[at..at + len]), &[]).is_err() {
                    return;
                }
            } else if let Some(r) = parse(&buf[at..at + len]) {
                let out = answer(d, &r);
                d.trace.line(format_args!("pid={} NETLINK type={:#x} flags={:#x} -> {} messages", hello.pid, r.ty, r.flags, out.len()));
                for m in out {
                    if fdpass::send(sock.as_fd(), &m, &[]).is_err() {
                        return;
                    }
                }
            }
            at += (len + 3) & !3;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::Identity;
    use crate::server::Config;

    fn daemon() -> std::sync::Arc<Daemon> {
        Daemon::new(&Config { socket: "/nonexistent".into(), trace: None, identity: Identity::default(), sysfs: None }).unwrap()
    }

    /// A request as iproute2's rdma tool builds it.
    fn req(op: u16, flags: u16, attrs: impl FnOnce(&mut Msg)) -> Req {
        let mut m = Msg::new(CLIENT << 10 | op, flags, 77);
        attrs(&mut m);
        parse(&m.done()).unwrap()
    }

    /// (type, flags, seq, attributes (type, payload)) of one message.
    fn read(m: &[u8]) -> (u16, u16, u32, Vec<(u16, Vec<u8>)>) {
        assert_eq!(u32::from_ne_bytes(m[0..4].try_into().unwrap()) as usize, m.len());
        let mut out = Vec::new();
        let mut at = 16;
        // control messages (NLMSG_ERROR, NLMSG_DONE) carry no attributes
        while at < m.len() && u16::from_ne_bytes([m[4], m[5]]) > NLMSG_DONE {
            let len = usize::from(u16::from_ne_bytes([m[at], m[at + 1]]));
            out.push((u16::from_ne_bytes([m[at + 2], m[at + 3]]), m[at + 4..at + len].to_vec()));
            at += (len + 3) & !3;
        }
        let u16_at = |o: usize| u16::from_ne_bytes([m[o], m[o + 1]]);
        (u16_at(4), u16_at(6), u32::from_ne_bytes(m[8..12].try_into().unwrap()), out)
    }

    fn find(attrs: &[(u16, Vec<u8>)], ty: u16) -> &[u8] {
        &attrs.iter().find(|a| a.0 == ty).unwrap_or_else(|| panic!("no attribute {ty}")).1
    }

    #[test]
    fn device_dump_is_one_multi_message_and_done() {
        let d = daemon();
        let out = answer(&d, &req(cmd::GET, 1 | NLM_F_ACK | NLM_F_DUMP, |_| {}));
        assert_eq!(out.len(), 2);
        let (ty, flags, seq, attrs) = read(&out[0]);
        assert_eq!((ty, flags, seq), (CLIENT << 10 | cmd::GET, NLM_F_MULTI, 77));
        assert_eq!(find(&attrs, attr::DEV_NAME), b"mlx5_0\0");
        assert_eq!(find(&attrs, attr::DEV_INDEX), 0u32.to_ne_bytes());
        assert_eq!(find(&attrs, attr::PORT_INDEX), 1u32.to_ne_bytes(), "the number of ports");
        assert_eq!(find(&attrs, attr::NODE_GUID), 0x0c42_a103_00b1_5e00u64.to_ne_bytes());
        let (ty, flags, seq, _) = read(&out[1]);
        assert_eq!((ty, flags, seq), (NLMSG_DONE, NLM_F_MULTI, 77));
    }

    #[test]
    fn one_port_with_its_ack_and_refusals() {
        let d = daemon();
        let out = answer(&d, &req(cmd::PORT_GET, 1 | NLM_F_ACK, |m| {
            m.u32(attr::DEV_INDEX, 0).u32(attr::PORT_INDEX, 1);
        }));
        assert_eq!(out.len(), 2, "the port and the ACK");
        let (_, flags, _, attrs) = read(&out[0]);
        assert_eq!(flags, 0);
        assert_eq!((find(&attrs, attr::PORT_STATE), find(&attrs, attr::PORT_PHYS_STATE)), (&[4u8][..], &[5u8][..]));
        assert_eq!(find(&attrs, attr::NDEV_NAME), b"lo\0");
        assert_eq!(find(&attrs, attr::NDEV_INDEX), super::super::ioctl_device::netdev_ifindex().to_ne_bytes());
        assert_eq!(read(&out[1]).0, NLMSG_ERROR);
        assert_eq!(out[1][16..20], 0i32.to_ne_bytes(), "error 0: the ACK");
        // no port 2, no device 3, no SYS_GET
        let no_port = answer(&d, &req(cmd::PORT_GET, 1 | NLM_F_ACK, |m| {
            m.u32(attr::DEV_INDEX, 0).u32(attr::PORT_INDEX, 2);
        }));
        assert_eq!((no_port.len(), &no_port[0][16..20]), (1, &(-libc::EINVAL).to_ne_bytes()[..]));
        let no_dev = answer(&d, &req(cmd::RES_MR_GET, 1 | NLM_F_DUMP, |m| {
            m.u32(attr::DEV_INDEX, 3);
        }));
        assert_eq!(&no_dev[0][16..20], &(-libc::ENODEV).to_ne_bytes()[..]);
        let sys = answer(&d, &req(6, 1, |_| {}));
        assert_eq!(&sys[0][16..20], &(-libc::EOPNOTSUPP).to_ne_bytes()[..]);
        assert_eq!(sys[0][20..36], no_header(6), "the request's header echoed");
        let del = answer(&d, &req(cmd::DELLINK, 1 | NLM_F_ACK, |m| {
            m.u32(attr::DEV_INDEX, 0);
        }));
        assert_eq!((del.len(), &del[0][16..20]), (1, &(-libc::EINVAL).to_ne_bytes()[..]), "mlx5 is not deleted");
    }

    #[test]
    fn the_port_follows_its_netdev_down_and_up_with_port_events() {
        use std::io::Read;
        let sys = std::env::temp_dir().join(format!("vsim-link-{}", std::process::id()));
        let id = Identity::default();
        crate::fixture::write(&sys, &id).unwrap();
        let d = Daemon::new(&Config { socket: "/nonexistent".into(), trace: None, identity: id, sysfs: Some(sys.clone()) }).unwrap();
        let sysfs = || {
            let r = |f: &str| std::fs::read_to_string(sys.join("class/infiniband/mlx5_0/ports/1").join(f)).unwrap();
            (r("state"), r("phys_state"))
        };
        assert_eq!(sysfs(), ("4: ACTIVE\n".into(), "5: LinkUp\n".into()));
        let (mine, theirs) = super::super::sock::event_pair().unwrap();
        d.lock().sink.async_fds.insert(1, (mine, theirs.try_clone().unwrap()));
        let port = |d: &Daemon| {
            let out = answer(d, &req(cmd::PORT_GET, 1, |m| {
                m.u32(attr::DEV_INDEX, 0).u32(attr::PORT_INDEX, 1);
            }));
            let (_, _, _, attrs) = read(&out[0]);
            (find(&attrs, attr::PORT_STATE)[0], find(&attrs, attr::PORT_PHYS_STATE)[0])
        };
        let mut app = std::fs::File::from(theirs);
        let mut rec = [0u8; 16];
        // ip link set dev lo down: RTM_NEWLINK, ifindex 1, ifi_change IFF_UP, flags 0
        let mut m = vec![0u8; 32];
        m[..4].copy_from_slice(&32u32.to_ne_bytes());
        m[4..6].copy_from_slice(&16u16.to_ne_bytes());
        m[6..8].copy_from_slice(&5u16.to_ne_bytes());
        m[8..12].copy_from_slice(&9u32.to_ne_bytes());
        m[20..24].copy_from_slice(&1i32.to_ne_bytes());
        m[28..32].copy_from_slice(&1u32.to_ne_bytes());
        let ack = super::super::link::answer(&d, &m);
        assert_eq!((&ack[4..6], &ack[8..12], &ack[16..20]), (&2u16.to_ne_bytes()[..], &9u32.to_ne_bytes()[..], &[0u8; 4][..]));
        assert_eq!(port(&d), (1, 3), "DOWN, DISABLED");
        assert!(d.lock().dev.engine.link_down, "no traffic while down");
        assert_eq!(sysfs(), ("1: DOWN\n".into(), "3: Disabled\n".into()));
        assert_eq!(super::super::device::port_attr(false)[26], 1);
        app.read_exact(&mut rec).unwrap();
        assert_eq!((u64::from_le_bytes(rec[..8].try_into().unwrap()), u32::from_le_bytes(rec[8..12].try_into().unwrap())), (1, 10), "PORT_ERR of port 1");
        // down again: no change, no event; then up: PORT_ACTIVE
        super::super::link::answer(&d, &m);
        m[24..28].copy_from_slice(&1u32.to_ne_bytes());
        super::super::link::answer(&d, &m);
        assert_eq!(port(&d), (4, 5), "ACTIVE, LINK_UP");
        assert!(!d.lock().dev.engine.link_down, "traffic flows again");
        assert_eq!(sysfs(), ("4: ACTIVE\n".into(), "5: LinkUp\n".into()));
        app.read_exact(&mut rec).unwrap();
        assert_eq!(u32::from_le_bytes(rec[8..12].try_into().unwrap()), 9, "PORT_ACTIVE right after PORT_ERR");
        assert!(d.lock().sink.async_counts.is_empty(), "port events are no object's");
        std::fs::remove_dir_all(&sys).unwrap();
    }

    fn no_header(op: u16) -> [u8; 16] {
        let m = Msg::new(CLIENT << 10 | op, 1, 77).done();
        m[..16].try_into().unwrap()
    }

    #[test]
    fn chardevs_name_uverbs_with_the_mlx5_driver_and_rdma_cm() {
        let d = daemon();
        let out = answer(&d, &req(cmd::GET_CHARDEV, 1, |m| {
            m.u32(attr::DEV_INDEX, 0).str(attr::CHARDEV_TYPE, "uverbs");
        }));
        let (_, _, _, attrs) = read(&out[0]);
        assert_eq!(find(&attrs, attr::CHARDEV_NAME), b"uverbs0\0");
        assert_eq!(find(&attrs, attr::CHARDEV), 0x103u64.to_ne_bytes(), "1:3, huge-encoded");
        assert_eq!(find(&attrs, attr::CHARDEV_ABI), 1u64.to_ne_bytes());
        assert_eq!(find(&attrs, attr::UVERBS_DRIVER_ID), DRIVER_MLX5.to_ne_bytes());
        let out = answer(&d, &req(cmd::GET_CHARDEV, 1, |m| {
            m.str(attr::CHARDEV_TYPE, "rdma_cm");
        }));
        let (_, _, _, attrs) = read(&out[0]);
        assert_eq!(find(&attrs, attr::CHARDEV), ((10u64 << 8) | 122).to_ne_bytes());
        let out = answer(&d, &req(cmd::GET_CHARDEV, 1, |m| {
            m.str(attr::CHARDEV_TYPE, "umad");
        }));
        assert_eq!(&out[0][16..20], &(-libc::ENOENT).to_ne_bytes()[..]);
    }

    #[test]
    fn empty_resource_dumps_are_done_alone() {
        let d = daemon();
        for op in [cmd::RES_MR_GET, cmd::RES_CM_ID_GET] {
            let out = answer(&d, &req(op, 1 | NLM_F_ACK | NLM_F_DUMP, |m| {
                m.u32(attr::DEV_INDEX, 0);
            }));
            assert_eq!(out.len(), 1);
            assert_eq!(read(&out[0]).0, NLMSG_DONE);
        }
    }
}
