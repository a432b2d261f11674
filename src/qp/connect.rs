//! Connecting queue pairs: an [`Endpoint`] describes one side (QPN, PSN,
//! LID, GID, MTU) in a fixed 32-byte form that can be sent to the peer
//! over any socket, and [`QueuePair::connect`] takes an RC QP from RESET or
//! INIT to RTS from the two endpoints, with the attribute values rdma-core's
//! `ibv_rc_pingpong` uses ([`ConnectOpts::default`]).
//!
//! ```no_run
//! # fn demo<'a>(qp: verbs::qp::RcQp<'a>, peer: &mut std::net::TcpStream) -> Result<(), Box<dyn std::error::Error>> {
//! use std::io::{Read, Write};
//! use verbs::qp::{ConnectOpts, Endpoint};
//!
//! // Port 1, the RoCE v2 IPv4 GID on RoCE (LID only on InfiniBand), PSN 0.
//! let local = Endpoint::local(&qp, 1, None, 0)?;
//! peer.write_all(&local.to_bytes())?;
//! let mut buf = [0u8; Endpoint::LEN];
//! peer.read_exact(&mut buf)?;
//! let remote = Endpoint::from_bytes(&buf)?;
//! let qp = qp.connect(&local, &remote, &ConnectOpts::default())?;
//! # let _ = qp; Ok(()) }
//! ```

// Failed transitions hand the QP back by value.
#![allow(clippy::result_large_err)]

use super::attr::{ConnInitAttr, Mtu, QpAccess, RcRtrAttr, RcRtsAttr};
use super::state::{Init, QpState, Rc, Reset, Rts, Transport};
use super::{AnyQp, QueuePair, TransitionError};
use crate::ah::{AhAttr, GlobalRoute};
use crate::error::{Error, ErrorKind, Result};

/// One side of a connection: what the peer needs to address this QP.
///
/// # Byte layout ([`Endpoint::to_bytes`], 32 bytes, integers big-endian)
///
/// | offset | size | field |
/// |---|---|---|
/// | 0 | 2 | magic `b"VE"` |
/// | 2 | 1 | layout version, 1 |
/// | 3 | 1 | `mtu` as `enum ibv_mtu` (1 = 256 … 5 = 4096) |
/// | 4 | 4 | `qp_num` (24 bits; top byte 0) |
/// | 8 | 4 | `psn` (24 bits; top byte 0) |
/// | 12 | 2 | `lid` |
/// | 14 | 1 | `port_num` (informational: the sender's port) |
/// | 15 | 1 | `gid_index` (informational: the sender's source GID index) |
/// | 16 | 16 | `gid`, as on the wire (all zero: no GID, LID routing) |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// The QP number.
    pub qp_num: u32,
    /// The first packet sequence number this side sends (24 bits).
    pub psn: u32,
    /// The port's LID (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// The GID this side sends from (zero: none, InfiniBand LID routing).
    pub gid: [u8; 16],
    /// The port's active MTU.
    pub mtu: Mtu,
    /// The local port (from 1).
    pub port_num: u8,
    /// The index of `gid` in the port's GID table.
    pub gid_index: u8,
}

const MAGIC: [u8; 2] = *b"VE";
const VERSION: u8 = 1;
const PSN_MAX: u32 = 0xff_ffff;

impl Endpoint {
    /// Bytes in [`Endpoint::to_bytes`]'s form.
    pub const LEN: usize = 32;

    /// The endpoint of `qp` on port `port_num`: the port's LID and active
    /// MTU (`ibv_query_port`), and the GID at `gid_index`, or when `None`
    /// on a RoCE port the RoCE v2 IPv4 GID
    /// ([`Context::roce_v2_ipv4_gid_index`](crate::Context::roce_v2_ipv4_gid_index)),
    /// on other ports none. `psn` is the first PSN this side will send
    /// (24 bits; `ibv_rc_pingpong` picks a random one).
    pub fn local<T: Transport, S: QpState>(
        qp: &QueuePair<'_, T, S>,
        port_num: u8,
        gid_index: Option<u8>,
        psn: u32,
    ) -> Result<Self> {
        if psn > PSN_MAX {
            return Err(Error::new("Endpoint::local", ErrorKind::InvalidArgument));
        }
        let ctx = qp.ctx();
        let port = ctx.query_port(port_num)?;
        let gid_index = match gid_index {
            Some(i) => Some(i),
            None if ctx.provider_caps().roce => Some(ctx.roce_v2_ipv4_gid_index(port_num)?),
            None => None,
        };
        let gid = match gid_index {
            Some(i) => ctx.query_gid(port_num, u32::from(i))?,
            None => [0; 16],
        };
        Ok(Self {
            qp_num: qp.qp_num(),
            psn,
            lid: port.lid,
            gid,
            mtu: port.active_mtu,
            port_num,
            gid_index: gid_index.unwrap_or(0),
        })
    }

    /// The 32-byte form described in the type's docs.
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..2].copy_from_slice(&MAGIC);
        b[2] = VERSION;
        b[3] = self.mtu as u8;
        b[4..8].copy_from_slice(&self.qp_num.to_be_bytes());
        b[8..12].copy_from_slice(&self.psn.to_be_bytes());
        b[12..14].copy_from_slice(&self.lid.to_be_bytes());
        b[14] = self.port_num;
        b[15] = self.gid_index;
        b[16..32].copy_from_slice(&self.gid);
        b
    }

    /// Reads [`Endpoint::to_bytes`]'s form. A wrong magic or version, an
    /// MTU code outside 1..=5, or a QPN or PSN above 24 bits is
    /// [`ErrorKind::Malformed`].
    pub fn from_bytes(b: &[u8; Self::LEN]) -> Result<Self> {
        let bad = Error::new("Endpoint::from_bytes", ErrorKind::Malformed);
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let (qp_num, psn) = (u32_at(4), u32_at(8));
        if b[0..2] != MAGIC || b[2] != VERSION || qp_num > PSN_MAX || psn > PSN_MAX {
            return Err(bad);
        }
        let mtu = Mtu::from_raw(b[3]).ok_or(bad)?;
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[16..32]);
        Ok(Self {
            qp_num,
            psn,
            lid: u16::from_be_bytes([b[12], b[13]]),
            gid,
            mtu,
            port_num: b[14],
            gid_index: b[15],
        })
    }

    /// Whether the endpoint has a GID (then addresses to it carry a GRH).
    pub fn has_gid(&self) -> bool {
        self.gid != [0; 16]
    }

    /// The address of this (remote) endpoint as seen from `local`: its LID,
    /// and a GRH to its GID from `local`'s GID index when it has a GID.
    /// Usable for an RC/UC path or a UD address handle.
    pub fn ah_attr(&self, local: &Endpoint, opts: &ConnectOpts) -> AhAttr {
        let grh = self.has_gid().then_some(GlobalRoute {
            dgid: self.gid,
            flow_label: opts.flow_label,
            sgid_index: local.gid_index,
            hop_limit: opts.hop_limit,
            traffic_class: opts.traffic_class,
        });
        AhAttr {
            grh,
            dlid: self.lid,
            sl: opts.sl,
            src_path_bits: 0,
            static_rate: opts.static_rate,
            port_num: local.port_num,
        }
    }
}

/// The attributes [`QueuePair::connect`] does not take from the endpoints.
/// `Default` gives `ibv_rc_pingpong`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectOpts {
    /// RESET → INIT only: P_Key index (0).
    pub pkey_index: u16,
    /// RESET → INIT only: what the peer may do to this side's memory
    /// (none, as `ibv_rc_pingpong`; RDMA WRITE/READ/atomics targeting
    /// this QP need `REMOTE_WRITE`/`REMOTE_READ`/`REMOTE_ATOMIC`).
    pub access: QpAccess,
    /// Path MTU; `None` (default): the smaller of the two endpoints' MTUs.
    pub mtu: Option<Mtu>,
    /// Service level (0).
    pub sl: u8,
    /// GRH hop limit (1).
    pub hop_limit: u8,
    /// GRH traffic class (0).
    pub traffic_class: u8,
    /// GRH flow label (0).
    pub flow_label: u32,
    /// `enum ibv_rate` (0: the port's rate).
    pub static_rate: u8,
    /// Incoming RDMA reads/atomics outstanding (1).
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer code (12: 0.64 ms).
    pub min_rnr_timer: u8,
    /// Local ACK timeout code (14: about 67 ms).
    pub timeout: u8,
    /// Retries on timeout (7).
    pub retry_cnt: u8,
    /// Retries on RNR NAK (7: infinite).
    pub rnr_retry: u8,
    /// Outgoing RDMA reads/atomics outstanding (1).
    pub max_rd_atomic: u8,
}

impl Default for ConnectOpts {
    fn default() -> Self {
        let rtr = RcRtrAttr::default();
        let rts = RcRtsAttr::default();
        Self {
            pkey_index: 0,
            access: QpAccess::empty(),
            mtu: None,
            sl: 0,
            hop_limit: 1,
            traffic_class: 0,
            flow_label: 0,
            static_rate: 0,
            max_dest_rd_atomic: rtr.max_dest_rd_atomic,
            min_rnr_timer: rtr.min_rnr_timer,
            timeout: rts.timeout,
            retry_cnt: rts.retry_cnt,
            rnr_retry: rts.rnr_retry,
            max_rd_atomic: rts.max_rd_atomic,
        }
    }
}

impl ConnectOpts {
    /// The INIT → RTR attributes for connecting `local` to `remote`.
    pub fn rtr_attr(&self, local: &Endpoint, remote: &Endpoint) -> RcRtrAttr {
        RcRtrAttr {
            path_mtu: self.mtu.unwrap_or(local.mtu.min(remote.mtu)),
            dest_qp_num: remote.qp_num,
            rq_psn: remote.psn,
            max_dest_rd_atomic: self.max_dest_rd_atomic,
            min_rnr_timer: self.min_rnr_timer,
            ah_attr: remote.ah_attr(local, self),
        }
    }

    /// The RTR → RTS attributes for `local`.
    pub fn rts_attr(&self, local: &Endpoint) -> RcRtsAttr {
        RcRtsAttr {
            sq_psn: local.psn,
            timeout: self.timeout,
            retry_cnt: self.retry_cnt,
            rnr_retry: self.rnr_retry,
            max_rd_atomic: self.max_rd_atomic,
        }
    }
}

/// What [`QueuePair::connect`] gives back when a transition fails: the
/// error, and the QP in the state it reached (RESET, INIT or RTR).
pub type ConnectError<'a> = TransitionError<AnyQp<'a, Rc>>;

fn lift<'a, S: QpState>(e: TransitionError<QueuePair<'a, Rc, S>>) -> ConnectError<'a>
where
    AnyQp<'a, Rc>: From<QueuePair<'a, Rc, S>>,
{
    TransitionError { error: e.error, qp: e.qp.into() }
}

impl<'a> QueuePair<'a, Rc, Init> {
    /// `ibv_modify_qp` INIT → RTR → RTS: connects this QP (`local`) to the
    /// remote QP described by `remote`, with the path and timers of `opts`
    /// ([`ConnectOpts::rtr_attr`], [`ConnectOpts::rts_attr`]).
    ///
    /// On a RoCE device the remote endpoint must have a GID (the path
    /// needs a GRH): without one the error is
    /// `InvalidArgument` whose [detail](crate::Error::detail) says the
    /// global route is missing, before any system call. If a transition
    /// fails, the QP comes back in the state it reached.
    #[doc(alias = "ibv_modify_qp")]
    pub fn connect(
        self,
        local: &Endpoint,
        remote: &Endpoint,
        opts: &ConnectOpts,
    ) -> core::result::Result<QueuePair<'a, Rc, Rts>, ConnectError<'a>> {
        let rtr = self.into_rtr(opts.rtr_attr(local, remote)).map_err(lift)?;
        rtr.into_rts(opts.rts_attr(local)).map_err(lift)
    }
}

impl<'a> QueuePair<'a, Rc, Reset> {
    /// `ibv_modify_qp` RESET → INIT (port `local.port_num`, `opts`'s P_Key
    /// index and access flags), then [`connect`](QueuePair::connect) from
    /// INIT.
    #[doc(alias = "ibv_modify_qp")]
    pub fn connect(
        self,
        local: &Endpoint,
        remote: &Endpoint,
        opts: &ConnectOpts,
    ) -> core::result::Result<QueuePair<'a, Rc, Rts>, ConnectError<'a>> {
        let init = ConnInitAttr { pkey_index: opts.pkey_index, port_num: local.port_num, access: opts.access };
        self.into_init(init).map_err(lift)?.connect(local, remote, opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Endpoint {
        Endpoint {
            qp_num: 0x12_3456,
            psn: 0xab_cdef,
            lid: 0x0102,
            gid: core::array::from_fn(|i| i as u8 + 1),
            mtu: Mtu::Mtu4096,
            port_num: 1,
            gid_index: 3,
        }
    }

    #[test]
    fn bytes_round_trip_with_the_documented_layout() {
        let e = sample();
        let b = e.to_bytes();
        assert_eq!(&b[..4], b"VE\x01\x05");
        assert_eq!(&b[4..8], &[0, 0x12, 0x34, 0x56]);
        assert_eq!(&b[8..12], &[0, 0xab, 0xcd, 0xef]);
        assert_eq!(&b[12..16], &[1, 2, 1, 3]);
        assert_eq!(b[16], 1);
        assert_eq!(b[31], 16);
        assert_eq!(Endpoint::from_bytes(&b), Ok(e));
    }

    #[test]
    fn from_bytes_refuses_what_no_endpoint_sends() {
        let good = sample().to_bytes();
        for (i, v) in [(0, b'X'), (2, 2), (3, 0), (3, 6), (4, 1), (8, 1)] {
            let mut b = good;
            b[i] = v;
            let e = Endpoint::from_bytes(&b).unwrap_err();
            assert_eq!((e.kind(), e.verb()), (ErrorKind::Malformed, "Endpoint::from_bytes"), "byte {i} = {v}");
        }
    }

    #[test]
    fn connect_attributes_follow_rc_pingpong() {
        let local = Endpoint { mtu: Mtu::Mtu1024, gid_index: 1, psn: 7, ..sample() };
        let remote = sample();
        let o = ConnectOpts::default();
        let rtr = o.rtr_attr(&local, &remote);
        assert_eq!(rtr.path_mtu, Mtu::Mtu1024);
        assert_eq!((rtr.dest_qp_num, rtr.rq_psn), (remote.qp_num, remote.psn));
        assert_eq!((rtr.max_dest_rd_atomic, rtr.min_rnr_timer), (1, 12));
        let g = rtr.ah_attr.grh.unwrap();
        assert_eq!((g.dgid, g.sgid_index, g.hop_limit), (remote.gid, 1, 1));
        assert_eq!((rtr.ah_attr.dlid, rtr.ah_attr.port_num, rtr.ah_attr.sl), (remote.lid, 1, 0));
        let rts = o.rts_attr(&local);
        assert_eq!((rts.sq_psn, rts.timeout, rts.retry_cnt, rts.rnr_retry, rts.max_rd_atomic), (7, 14, 7, 7, 1));
        // No GID: LID routing, no GRH.
        let ib = Endpoint { gid: [0; 16], ..remote };
        assert_eq!(o.rtr_attr(&local, &ib).ah_attr.grh, None);
        assert_eq!(ConnectOpts { mtu: Some(Mtu::Mtu256), ..o }.rtr_attr(&local, &remote).path_mtu, Mtu::Mtu256);
    }
}
