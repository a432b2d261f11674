//! The wire protocol between `verbs-sim-shim` (inside each application)
//! and `verbs-simd`, on a `SOCK_SEQPACKET` unix socket: one connection per
//! opened uverbs descriptor (one device context).
//!
//! The messages carry only a system call's arguments: the daemon reads the
//! command bytes and writes the response straight into the caller's memory
//! (`process_vm_readv`/`process_vm_writev`, given the pid sent at connect),
//! as the kernel does with `copy_from_user`/`copy_to_user`. Descriptors the
//! process must receive (the async event fd, completion channels, the UAR
//! memfd) travel as `SCM_RIGHTS`; the shim writes each received fd number
//! at the address the daemon names.
//!
//! All integers are little-endian (both ends run on one host).

/// First word of [`Hello`]: "VSIM".
pub const MAGIC: u32 = 0x5653_494d;
/// Most descriptors one reply passes (GET_CONTEXT: one; none needs more).
pub const MAX_FDS: usize = 4;
/// Pages of the UAR memfd handed out at connect (the mmap offsets libmlx5
/// uses in legacy mode are 0 .. tot_bfregs/2 pages).
pub const UAR_PAGES: u32 = 64;

/// [`Hello::index`] of a connection that stands for `/dev/infiniband/rdma_cm`
/// (its Welcome carries the event descriptor instead of the UAR memfd).
pub const UCMA_INDEX: u32 = u32::MAX;

/// [`Hello::index`] of a connection that stands for a `NETLINK_RDMA`
/// socket: no Welcome; netlink requests and answers, one per datagram.
pub const NETLINK_INDEX: u32 = u32::MAX - 1;

/// shim -> daemon, first message of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// The application's pid (for DMA and the trace).
    pub pid: i32,
    /// N of /dev/infiniband/uverbsN.
    pub index: u32,
}

/// daemon -> shim, answer to [`Hello`]; carries the UAR memfd as SCM_RIGHTS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Welcome {
    /// Context id (daemon-local; for the trace).
    pub ctx: u32,
    /// The daemon's pid: the shim allows it to ptrace-read/write this
    /// process (`PR_SET_PTRACER`) where Yama would refuse.
    pub daemon_pid: i32,
    /// Pages in the memfd.
    pub uar_pages: u32,
}

/// The system call a request stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// write(fd, buf, len)
    Write {
        /// Caller's buffer.
        buf: u64,
        /// Its length.
        len: u64,
    },
    /// ioctl(fd, request, arg)
    Ioctl {
        /// The ioctl request number.
        request: u64,
        /// The argument pointer.
        arg: u64,
    },
}

/// daemon -> shim: the system call's result. Descriptors ride along as
/// SCM_RIGHTS, the i-th to be stored (as a 4-byte int) at `patch[i]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// Return value (>= 0) or -errno.
    pub ret: i64,
    /// Number of descriptors passed.
    pub nfds: u32,
    /// Where each descriptor's number goes in the caller's memory.
    pub patch: [u64; MAX_FDS],
}

fn put(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(b);
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

impl Hello {
    /// Bytes on the wire (12).
    pub fn encode(&self) -> [u8; 12] {
        let mut v = Vec::with_capacity(12);
        put(&mut v, &MAGIC.to_le_bytes());
        put(&mut v, &self.pid.to_le_bytes());
        put(&mut v, &self.index.to_le_bytes());
        v.try_into().unwrap_or([0; 12])
    }
    /// Parses; `None` on a short message or a wrong magic.
    pub fn decode(b: &[u8]) -> Option<Self> {
        (u32_at(b, 0)? == MAGIC).then_some(())?;
        Some(Hello { pid: u32_at(b, 4)? as i32, index: u32_at(b, 8)? })
    }
}

impl Welcome {
    /// Bytes on the wire (12).
    pub fn encode(&self) -> [u8; 12] {
        let mut v = [0u8; 12];
        v[0..4].copy_from_slice(&self.ctx.to_le_bytes());
        v[4..8].copy_from_slice(&self.daemon_pid.to_le_bytes());
        v[8..12].copy_from_slice(&self.uar_pages.to_le_bytes());
        v
    }
    /// Parses; `None` on a short message.
    pub fn decode(b: &[u8]) -> Option<Self> {
        Some(Welcome { ctx: u32_at(b, 0)?, daemon_pid: u32_at(b, 4)? as i32, uar_pages: u32_at(b, 8)? })
    }
}

impl Call {
    /// Bytes on the wire (20).
    pub fn encode(&self) -> [u8; 20] {
        let (kind, a, b) = match *self {
            Call::Write { buf, len } => (1u32, buf, len),
            Call::Ioctl { request, arg } => (2u32, request, arg),
        };
        let mut v = [0u8; 20];
        v[0..4].copy_from_slice(&kind.to_le_bytes());
        v[4..12].copy_from_slice(&a.to_le_bytes());
        v[12..20].copy_from_slice(&b.to_le_bytes());
        v
    }
    /// Parses; `None` on a short message or an unknown kind.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let (a, c) = (u64_at(b, 4)?, u64_at(b, 12)?);
        match u32_at(b, 0)? {
            1 => Some(Call::Write { buf: a, len: c }),
            2 => Some(Call::Ioctl { request: a, arg: c }),
            _ => None,
        }
    }
}

/// Size of an encoded [`Reply`].
pub const REPLY_LEN: usize = 12 + 8 * MAX_FDS;

impl Reply {
    /// A plain result with no descriptors.
    pub fn ret(ret: i64) -> Self {
        Reply { ret, ..Default::default() }
    }
    /// Bytes on the wire ([`REPLY_LEN`]).
    pub fn encode(&self) -> [u8; REPLY_LEN] {
        let mut v = [0u8; REPLY_LEN];
        v[0..8].copy_from_slice(&self.ret.to_le_bytes());
        v[8..12].copy_from_slice(&self.nfds.to_le_bytes());
        for (i, p) in self.patch.iter().enumerate() {
            v[12 + 8 * i..20 + 8 * i].copy_from_slice(&p.to_le_bytes());
        }
        v
    }
    /// Parses; `None` on a short message.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let mut r = Reply { ret: u64_at(b, 0)? as i64, nfds: u32_at(b, 8)?, patch: [0; MAX_FDS] };
        for i in 0..MAX_FDS {
            r.patch[i] = u64_at(b, 12 + 8 * i)?;
        }
        (r.nfds as usize <= MAX_FDS).then_some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let h = Hello { pid: 1234, index: 0 };
        assert_eq!(Hello::decode(&h.encode()), Some(h));
        assert_eq!(Hello::decode(&[0; 12]), None, "wrong magic");
        let w = Welcome { ctx: 7, daemon_pid: 99, uar_pages: UAR_PAGES };
        assert_eq!(Welcome::decode(&w.encode()), Some(w));
        for c in [Call::Write { buf: 0x7fff_0000_1000, len: 48 }, Call::Ioctl { request: 0xc018_1b01, arg: 0x1000 }] {
            assert_eq!(Call::decode(&c.encode()), Some(c));
        }
        assert_eq!(Call::decode(&[9; 20]), None);
        let r = Reply { ret: -22, nfds: 1, patch: [0x1000, 0, 0, 0] };
        assert_eq!(Reply::decode(&r.encode()), Some(r));
        assert_eq!(Reply::decode(&r.encode()[..10]), None);
    }
}
