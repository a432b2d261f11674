//! The connection manager's state (the kernel's `cma.c` + `cm.c` as seen
//! through `ucma`): ids by handle, the event queue of each open
//! `/dev/infiniband/rdma_cm` file, and the IB CM exchange between two ids
//! on the one simulated port (REQ, REP, RTU, REJ, DREQ/DREP, SIDR), done
//! at once instead of on the wire.
//!
//! Each file's queue has a token socket (a record per queued event in the
//! process's end), so `poll` on the process's descriptor says readable
//! exactly while an event waits, as on the kernel's file.

use std::collections::{HashMap, VecDeque};
use std::os::fd::OwnedFd;

use super::sock;
use crate::model::QpType;

/// `struct rdma_ucm_event_resp` size.
pub const EVENT_LEN: usize = 336;
/// Port spaces.
pub const PS_TCP: u16 = 0x0106;
/// UDP port space (UD ids, SIDR).
pub const PS_UDP: u16 = 0x0111;
/// `RDMA_UDP_QKEY`.
pub const UDP_QKEY: u32 = 0x0123_4567;
/// `RDMA_PS_IB` (RC and UD ids).
pub const PS_IB: u16 = 0x013F;

/// Event numbers (`enum rdma_cm_event_type`).
pub mod ev {
    pub const ADDR_RESOLVED: u32 = 0;
    pub const ADDR_ERROR: u32 = 1;
    pub const ROUTE_RESOLVED: u32 = 2;
    pub const CONNECT_REQUEST: u32 = 4;
    pub const CONNECT_RESPONSE: u32 = 5;
    pub const UNREACHABLE: u32 = 7;
    pub const REJECTED: u32 = 8;
    pub const ESTABLISHED: u32 = 9;
    pub const DISCONNECTED: u32 = 10;
    pub const MULTICAST_JOIN: u32 = 12;
}

/// IB CM private data sizes (REQ minus the 36-byte rdma_cm header, REP,
/// REJ, SIDR_REQ minus the header, SIDR_REP): the kernel hands the whole
/// MAD field up, zero padded.
pub const PD_REQ: usize = 92 - 36;
/// REP private data.
pub const PD_REP: usize = 196;
/// REJ private data.
pub const PD_REJ: usize = 148;
/// SIDR_REQ private data after the header.
pub const PD_SIDR_REQ: usize = 216 - 36;
/// SIDR_REP private data.
pub const PD_SIDR_REP: usize = 136;

/// An IP endpoint (IPv4 kept as v4-mapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Addr {
    /// Family is AF_INET6.
    pub v6: bool,
    /// Address (v4-mapped for IPv4).
    pub ip: [u8; 16],
    /// Port (host order).
    pub port: u16,
}

impl Addr {
    /// The wildcard address.
    pub fn is_any(&self) -> bool {
        if self.v6 {
            self.ip == [0; 16]
        } else {
            self.ip[12..] == [0; 4]
        }
    }
}

/// Where an id is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum St {
    Idle,
    Bound,
    AddrResolved,
    RouteResolved,
    Listen,
    /// Client: REQ sent, waiting for REP/REJ.
    ReqSent,
    /// Server: REQ received, not accepted.
    ReqRcvd,
    /// Client: REP received (CONNECT_RESPONSE), RTU not sent.
    RepRcvd,
    /// Server: REP sent, waiting for RTU.
    RepSent,
    Established,
    Disconnected,
}

/// Connection parameters an id holds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Conn {
    pub qpn: u32,
    pub psn: u32,
    pub responder_resources: u8,
    pub initiator_depth: u8,
    pub retry: u8,
    pub rnr_retry: u8,
    pub srq: u8,
}

/// One rdma_cm id.
#[derive(Debug)]
pub struct Id {
    pub file: u32,
    pub uid: u64,
    pub ps: u16,
    pub qp_type: QpType,
    pub st: St,
    pub src: Option<Addr>,
    pub dst: Option<Addr>,
    pub backlog: u32,
    pub peer: Option<u32>,
    pub listener: Option<u32>,
    pub conn: Conn,
    pub reported: u32,
    pub reuseaddr: bool,
    pub tos: u8,
    pub timeout: Option<u8>,
}

/// One queued event.
pub struct Event {
    /// The id whose events_reported count it adds to.
    pub owner: u32,
    /// For CONNECT_REQUEST: the new id (destroyed with the event if unread).
    pub new_id: Option<u32>,
    /// For MULTICAST_JOIN: the membership (its events_reported count).
    pub mc: Option<u32>,
    pub resp: [u8; EVENT_LEN],
}

/// One open rdma_cm file.
pub struct File {
    pub pid: i32,
    pub queue: VecDeque<Event>,
    /// Daemon's end of the token socket.
    pub mine: OwnedFd,
    /// A duplicate of the process's end (tokens are taken back from it).
    pub app: OwnedFd,
    /// Inode of the process's end (MIGRATE_ID names files by fd).
    pub app_ino: u64,
}

/// Every file and id.
#[derive(Default)]
pub struct Cm {
    pub files: HashMap<u32, File>,
    pub ids: HashMap<u32, Id>,
    /// Multicast memberships by handle (`super::ucma_mcast`).
    pub mcs: HashMap<u32, super::ucma_mcast::Mc>,
    /// The next membership handle (the kernel's `multicast_table`, from 0).
    pub next_mc: u32,
    next_file: u32,
    next_id: u32,
    next_port: u16,
    next_psn: u32,
}

/// Fills the common head of an event record.
pub fn event(uid: u64, id: u32, event: u32, status: i32) -> [u8; EVENT_LEN] {
    let mut r = [0u8; EVENT_LEN];
    r[0..8].copy_from_slice(&uid.to_le_bytes());
    r[8..12].copy_from_slice(&id.to_le_bytes());
    r[12..16].copy_from_slice(&event.to_le_bytes());
    r[16..20].copy_from_slice(&status.to_le_bytes());
    r
}

/// Writes `rdma_ucm_conn_param` (at record offset 20) with private data
/// padded to `pd_size`.
pub fn put_conn(r: &mut [u8; EVENT_LEN], c: &Conn, pd: &[u8], pd_size: usize) {
    r[20..24].copy_from_slice(&c.qpn.to_le_bytes());
    let n = pd.len().min(pd_size).min(256);
    r[28..28 + n].copy_from_slice(&pd[..n]);
    r[284] = if pd_size > 0 { pd_size as u8 } else { 0 };
    r[285] = c.srq;
    r[286] = c.responder_resources;
    r[287] = c.initiator_depth;
    r[288] = 1; // flow_control
    r[289] = c.retry;
    r[290] = c.rnr_retry;
}

impl Cm {
    /// A new file; returns its number.
    pub fn add_file(&mut self, pid: i32, mine: OwnedFd, app: OwnedFd) -> u32 {
        self.next_file += 1;
        let app_ino = sock::ino(&app);
        self.files.insert(self.next_file, File { pid, queue: VecDeque::new(), mine, app, app_ino });
        self.next_file
    }

    /// A new id in `file`.
    pub fn add_id(&mut self, file: u32, uid: u64, ps: u16, qp_type: QpType) -> u32 {
        self.next_id += 1;
        self.next_psn = self.next_psn.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let psn = (self.next_psn >> 8) & 0xff_ffff;
        let id = Id {
            file,
            uid,
            ps,
            qp_type,
            st: St::Idle,
            src: None,
            dst: None,
            backlog: 0,
            peer: None,
            listener: None,
            conn: Conn { psn, ..Conn::default() },
            reported: 0,
            reuseaddr: false,
            tos: 0,
            timeout: None,
        };
        self.ids.insert(self.next_id, id);
        self.next_id
    }

    /// Queues an event for `owner`'s file.
    pub fn push(&mut self, owner: u32, new_id: Option<u32>, resp: [u8; EVENT_LEN]) {
        self.push_event(Event { owner, new_id, mc: None, resp });
    }

    /// Queues `e` for its owner's file.
    pub fn push_event(&mut self, e: Event) {
        let Some(file) = self.ids.get(&e.owner).map(|i| i.file) else { return };
        if let Some(f) = self.files.get_mut(&file) {
            f.queue.push_back(e);
            sock::send_nowait(&f.mine, &[1]);
        }
    }

    /// Queues an event for `owner` with its current uid and handle.
    pub fn push_simple(&mut self, owner: u32, event_no: u32, status: i32) {
        let Some(uid) = self.ids.get(&owner).map(|i| i.uid) else { return };
        self.push(owner, None, event(uid, owner, event_no, status));
    }

    /// Takes the oldest event of `file`.
    pub fn pop(&mut self, file: u32) -> Option<Event> {
        let f = self.files.get_mut(&file)?;
        let e = f.queue.pop_front()?;
        sock::take_token(&f.app);
        if let Some(id) = self.ids.get_mut(&e.owner) {
            id.reported += 1;
        }
        if let Some(mc) = e.mc.and_then(|m| self.mcs.get_mut(&m)) {
            mc.reported += 1;
        }
        Some(e)
    }

    /// A free ephemeral port.
    pub fn ephemeral(&mut self, ps: u16) -> u16 {
        loop {
            self.next_port = if self.next_port < 32768 { 32768 + (std::process::id() % 1000) as u16 } else { self.next_port + 1 };
            if self.next_port == u16::MAX {
                self.next_port = 32768;
            }
            let p = self.next_port;
            if !self.ids.values().any(|i| i.ps == ps && i.src.is_some_and(|a| a.port == p)) {
                return p;
            }
        }
    }

    /// Whether binding `id` at `a` conflicts with another id (the
    /// kernel's cma_check_port: same port space and port, overlapping
    /// address, unless both ask REUSEADDR and the other does not listen).
    pub fn port_taken(&self, id: u32, a: &Addr) -> bool {
        let me = &self.ids[&id];
        self.ids.iter().any(|(h, o)| {
            *h != id
                && o.ps == me.ps
                && o.listener.is_none()
                && o.src.is_some_and(|s| s.port == a.port && (s.is_any() || a.is_any() || s.ip == a.ip))
                && !(me.reuseaddr && o.reuseaddr && o.st != St::Listen)
        })
    }

    /// The listener a request to `dst` in `ps` reaches.
    pub fn listener_for(&self, ps: u16, dst: &Addr) -> Option<u32> {
        let mut best = None;
        for (h, i) in &self.ids {
            if i.st == St::Listen && i.ps == ps {
                if let Some(s) = i.src {
                    if s.port == dst.port && s.ip == dst.ip {
                        return Some(*h);
                    }
                    if s.port == dst.port && s.is_any() {
                        best = Some(*h);
                    }
                }
            }
        }
        best
    }

    /// Removes an id: its unread events go (a pending request's new id is
    /// destroyed with it), and its peer hears what the kernel's CM would
    /// send (REJ for an unanswered request, DREQ for a connection).
    /// Returns the events reported for it.
    pub fn destroy(&mut self, h: u32) -> Option<u32> {
        let id = self.ids.get(&h)?;
        let file = id.file;
        let mut doomed = Vec::new();
        if let Some(f) = self.files.get_mut(&file) {
            let before = f.queue.len();
            f.queue.retain(|e| {
                let mine = e.owner == h;
                if mine {
                    doomed.extend(e.new_id);
                }
                !mine
            });
            for _ in f.queue.len()..before {
                sock::take_token(&f.app);
            }
        }
        let id = self.ids.remove(&h)?;
        // Its memberships go with it (ucma_cleanup_multicast).
        self.mcs.retain(|_, m| m.owner != h);
        self.hang_up(&id);
        // Request ids that were never reported: as the kernel, destroy them
        // (their clients hear a REJ).
        for n in doomed {
            self.destroy(n);
        }
        Some(id.reported)
    }

    /// What the peer of a going id hears.
    fn hang_up(&mut self, id: &Id) {
        let Some(p) = id.peer else { return };
        let Some(peer) = self.ids.get_mut(&p) else { return };
        peer.peer = None;
        match (id.st, peer.st) {
            (St::ReqRcvd, St::ReqSent) | (St::ReqSent, St::ReqRcvd) | (St::RepSent, St::RepRcvd) | (St::RepRcvd, St::RepSent) => {
                peer.st = St::Idle;
                // IB_CM_REJ_TIMEOUT, as cm_destroy_id sends.
                self.push_simple(p, ev::REJECTED, 1);
            }
            (_, St::Established) => {
                peer.st = St::Disconnected;
                self.push_simple(p, ev::DISCONNECTED, 0);
            }
            _ => {}
        }
    }

    /// Drops every id of `file` (its process closed it or exited).
    pub fn close_file(&mut self, file: u32) {
        let ids: Vec<u32> = self.ids.iter().filter(|(_, i)| i.file == file).map(|(h, _)| *h).collect();
        for h in ids {
            self.destroy(h);
        }
        self.files.remove(&file);
    }
}
