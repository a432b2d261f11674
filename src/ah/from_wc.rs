//! `ibv_init_ah_from_wc`: the address that answers the sender of a
//! received UD datagram, from its work completion and the 40 bytes the
//! device put in front of the payload.
//!
//! Those 40 bytes are an InfiniBand/RoCE v1 GRH or an IPv6 header (RoCE v2
//! over IPv6), or, for RoCE v2 over IPv4, 20 undefined bytes followed by
//! the IPv4 header. As libibverbs does, the format is told apart by the IP
//! version nibbles and, when both could apply, by the IPv4 header checksum.
//! The source GID index is found by searching the port's GID table for the
//! packet's destination address with the matching GID type.
//!
//! [`init_ah_from_wc`] is pure: it takes the GID search as a closure, so the
//! parsing is testable without a device; [`Context::init_ah_from_wc`]
//! searches the real table.

use crate::ah::{AhAttr, GlobalRoute};
use crate::context::Context;
use crate::error::{Errno, Error, ErrorKind, Result};

/// Bytes of GRH (or IPv4 header space) in front of a UD receive's payload.
pub const GRH_LEN: usize = 40;

/// `IBV_WC_GRH`: the completion's buffer starts with a valid GRH.
pub const WC_GRH: u32 = 1 << 0;

const VERB: &str = "ibv_init_ah_from_wc";
/// GRH `next_hdr` of InfiniBand / RoCE v1 (a BTH follows).
const IB_NEXT_HDR: u8 = 0x1b;
/// `IPPROTO_UDP`: RoCE v2.
const IPPROTO_UDP: u8 = 17;

pub use crate::wc::WcInfo;


/// The GID type a source GID must have to answer a packet
/// (libibverbs' `enum ibv_gid_type_sysfs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GidKind {
    /// InfiniBand or RoCE v1 GID (`IBV_GID_TYPE_SYSFS_IB_ROCE_V1`).
    IbOrRoceV1,
    /// RoCE v2 GID (`IBV_GID_TYPE_SYSFS_ROCE_V2`).
    RoceV2,
}

/// Which header the 40 bytes hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V4,
    V6,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Internet checksum of a 20-byte IPv4 header with its checksum field
/// taken as zero.
fn ipv4_header_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = (0..10)
        .filter(|&i| i != 5)
        .map(|i| u32::from(u16::from_be_bytes([h[2 * i], h[2 * i + 1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// libibverbs' `get_grh_header_version`.
fn header_version(grh: &[u8; GRH_LEN]) -> Result<Version> {
    let ip4 = &grh[20..];
    if grh[0] >> 4 != 6 {
        return if ip4[0] >> 4 == 4 {
            Ok(Version::V4)
        } else {
            Err(Error::from_errno(VERB, Errno::PROTONOSUPPORT))
        };
    }
    // Version nibble 6 in the GRH: still IPv4 if bytes 20.. are a
    // 20-byte IPv4 header with a correct checksum.
    if ip4[0] & 0xf != 5 {
        return Ok(Version::V6);
    }
    if ipv4_header_checksum(ip4) == u16::from_be_bytes([ip4[10], ip4[11]]) {
        Ok(Version::V4)
    } else {
        Ok(Version::V6)
    }
}

/// `::ffff:a.b.c.d`, the GID of an IPv4 address.
fn ipv4_mapped(addr: &[u8]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&addr[..4]);
    g
}

/// `ibv_init_ah_from_wc` without a device: `find_gid(gid, kind)` returns the
/// index of the local GID equal to `gid` with type `kind` (an error if none).
///
/// `grh` is required when `wc.wc_flags` has [`WC_GRH`] (it is the first
/// 40 bytes of the receive buffer). Errors: a multicast destination
/// (`EINVAL`, the GID table holds no multicast GIDs), a header that is
/// neither IPv4 nor IPv6 or an IPv6 `next_hdr` other than UDP / IB
/// (`EPROTONOSUPPORT`, [`ErrorKind::Unsupported`]).
pub fn init_ah_from_wc(
    port_num: u8,
    wc: &WcInfo,
    grh: Option<&[u8; GRH_LEN]>,
    mut find_gid: impl FnMut(&[u8; 16], GidKind) -> Result<u8>,
) -> Result<AhAttr> {
    let mut attr = AhAttr {
        grh: None,
        dlid: wc.slid,
        sl: wc.sl,
        src_path_bits: wc.dlid_path_bits,
        static_rate: 0,
        port_num,
    };
    if wc.wc_flags & WC_GRH == 0 {
        return Ok(attr);
    }
    let grh = grh.ok_or(Error::new(VERB, ErrorKind::InvalidArgument))?;
    let version_tclass_flow = be32(&grh[0..4]);
    // libibverbs takes the flow label from the first word in both forms.
    let mut route = GlobalRoute { flow_label: version_tclass_flow & 0xf_ffff, ..Default::default() };
    match header_version(grh)? {
        Version::V4 => {
            let ip4 = &grh[20..40];
            let daddr = &ip4[16..20];
            if daddr[0] & 0xf0 == 0xe0 {
                return Err(Error::new(VERB, ErrorKind::InvalidArgument));
            }
            route.sgid_index = find_gid(&ipv4_mapped(daddr), GidKind::RoceV2)?;
            route.dgid = ipv4_mapped(&ip4[12..16]);
            route.hop_limit = ip4[8];
            route.traffic_class = ip4[1];
        }
        Version::V6 => {
            let (next_hdr, hop_limit) = (grh[6], grh[7]);
            let mut sgid = [0u8; 16];
            let mut dgid = [0u8; 16];
            sgid.copy_from_slice(&grh[8..24]);
            dgid.copy_from_slice(&grh[24..40]);
            if dgid[0] == 0xff {
                return Err(Error::new(VERB, ErrorKind::InvalidArgument));
            }
            let kind = match next_hdr {
                IPPROTO_UDP => GidKind::RoceV2,
                IB_NEXT_HDR => GidKind::IbOrRoceV1,
                _ => return Err(Error::from_errno(VERB, Errno::PROTONOSUPPORT)),
            };
            route.sgid_index = find_gid(&dgid, kind)?;
            route.dgid = sgid;
            route.hop_limit = hop_limit;
            route.traffic_class = ((version_tclass_flow >> 20) & 0xff) as u8;
        }
    }
    attr.grh = Some(route);
    Ok(attr)
}

impl Context {
    /// `ibv_init_ah_from_wc`: the address answering the sender of a
    /// received datagram on `port_num`, searching this device's GID table
    /// for the packet's destination (see [`init_ah_from_wc`]).
    #[doc(alias = "ibv_init_ah_from_wc")]
    pub fn init_ah_from_wc(&self, port_num: u8, wc: &WcInfo, grh: Option<&[u8; GRH_LEN]>) -> Result<AhAttr> {
        init_ah_from_wc(port_num, wc, grh, |gid, kind| self.find_gid_index(port_num, gid, kind))
    }

    /// libibverbs' `ibv_find_gid_index`: the index of the GID `gid` of type
    /// `kind` in the port's table.
    fn find_gid_index(&self, port_num: u8, gid: &[u8; 16], kind: GidKind) -> Result<u8> {
        let len = self.query_port(port_num).map_err(|e| rename(e, VERB))?.gid_tbl_len;
        for index in 0..len.min(256) {
            let Ok(e) = self.query_gid_ex(port_num, index) else { continue };
            let e_kind = if e.gid_type == 2 { GidKind::RoceV2 } else { GidKind::IbOrRoceV1 };
            if e.gid == *gid && e_kind == kind {
                return Ok(index as u8);
            }
        }
        Err(Error::new(VERB, ErrorKind::InvalidArgument))
    }
}

/// The same error, reported under `verb`.
fn rename(e: Error, verb: &'static str) -> Error {
    match e.errno() {
        Some(errno) => Error::with_errno(verb, e.kind(), errno),
        None => Error::new(verb, e.kind()),
    }
}

#[cfg(test)]
mod tests;
