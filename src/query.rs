//! Device, port, GID and P_Key attributes as libibverbs presents them
//! (`struct ibv_device_attr_ex`, `ibv_port_attr`, `ibv_gid_entry`).

use core::fmt::Write as _;

use zerocopy::FromZeros;

use crate::abi::ioctl_verbs::{GidEntry as AbiGidEntry, QueryPortRespEx};
use crate::abi::uverbs::{ExQueryDeviceResp, QueryDeviceResp};
use crate::cmd::Channel;
use crate::error::{Error, ErrorKind, Result};

/// `struct ibv_device_attr_ex`: the kernel's reply to the extended device
/// query, plus the firmware version string the provider formats from it.
#[doc(alias = "ibv_device_attr")]
#[doc(alias = "ibv_device_attr_ex")]
#[derive(Clone, Debug)]
pub struct DeviceAttr {
    /// Firmware version as libibverbs' rxe/siw providers format it
    /// (`major.minor.sub_minor` from the raw 64-bit value).
    pub fw_ver: heapless::String<64>,
    /// The whole extended reply; `ex.base` is `ibv_device_attr`.
    pub ex: ExQueryDeviceResp,
}

impl DeviceAttr {
    /// Converts the kernel's reply (public for fuzzing).
    pub fn from_kernel(ex: ExQueryDeviceResp) -> Self {
        let raw = ex.base.fw_ver;
        let mut fw_ver = heapless::String::new();
        // 3 × u16 in decimal plus dots is at most 17 bytes: cannot overflow 64.
        let _ = write!(fw_ver, "{}.{}.{}", (raw >> 32) & 0xffff, (raw >> 16) & 0xffff, raw & 0xffff);
        Self { fw_ver, ex }
    }

    /// The base attributes (`ibv_device_attr`).
    pub fn base(&self) -> &QueryDeviceResp {
        &self.ex.base
    }

    /// Node GUID in host order (the kernel sends it big-endian): printing it
    /// as four 16-bit groups from the top gives the usual `xxxx:xxxx:…`.
    pub fn node_guid(&self) -> u64 {
        u64::from_be(self.ex.base.node_guid)
    }

    /// System image GUID in host order.
    pub fn sys_image_guid(&self) -> u64 {
        u64::from_be(self.ex.base.sys_image_guid)
    }
}

/// `struct ibv_port_attr`.
#[doc(alias = "ibv_port_attr")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortAttr {
    /// `enum ibv_port_state` (4 = ACTIVE).
    pub state: u8,
    /// The largest MTU the port supports.
    pub max_mtu: Mtu,
    /// The MTU the port runs at (on RoCE: derived from the netdev's MTU).
    pub active_mtu: Mtu,
    /// Length of the GID table.
    pub gid_tbl_len: u32,
    /// `IBV_PORT_*` capability bits.
    pub port_cap_flags: u32,
    /// Largest message size.
    pub max_msg_sz: u32,
    /// Bad P_Key counter.
    pub bad_pkey_cntr: u32,
    /// Q_Key violation counter.
    pub qkey_viol_cntr: u32,
    /// Length of the P_Key table.
    pub pkey_tbl_len: u16,
    /// Base LID.
    pub lid: u16,
    /// Subnet manager LID.
    pub sm_lid: u16,
    /// LID mask control.
    pub lmc: u8,
    /// Maximum number of virtual lanes.
    pub max_vl_num: u8,
    /// Subnet manager service level.
    pub sm_sl: u8,
    /// Subnet propagation delay.
    pub subnet_timeout: u8,
    /// Init type reply.
    pub init_type_reply: u8,
    /// Active link width.
    pub active_width: u8,
    /// Active link speed.
    pub active_speed: u8,
    /// Physical port state.
    pub phys_state: u8,
    /// `IBV_LINK_LAYER_*` (1 = InfiniBand, 2 = Ethernet).
    pub link_layer: u8,
    /// `ib_uverbs_query_port_flags`.
    pub flags: u8,
    /// `IBV_PORT_*2` capability bits.
    pub port_cap_flags2: u16,
}

impl PortAttr {
    /// Converts the kernel's reply (public for fuzzing).
    pub fn from_kernel(r: QueryPortRespEx) -> Self {
        let l = r.legacy_resp;
        Self {
            state: l.state,
            max_mtu: mtu_or_min(l.max_mtu),
            active_mtu: mtu_or_min(l.active_mtu),
            gid_tbl_len: l.gid_tbl_len,
            port_cap_flags: l.port_cap_flags,
            max_msg_sz: l.max_msg_sz,
            bad_pkey_cntr: l.bad_pkey_cntr,
            qkey_viol_cntr: l.qkey_viol_cntr,
            pkey_tbl_len: l.pkey_tbl_len,
            lid: l.lid,
            sm_lid: l.sm_lid,
            lmc: l.lmc,
            max_vl_num: l.max_vl_num,
            sm_sl: l.sm_sl,
            subnet_timeout: l.subnet_timeout,
            init_type_reply: l.init_type_reply,
            active_width: l.active_width,
            active_speed: l.active_speed,
            phys_state: l.phys_state,
            link_layer: l.link_layer,
            flags: l.flags,
            port_cap_flags2: r.port_cap_flags2,
        }
    }
}

/// The kernel's `enum ib_mtu` value as an [`Mtu`]; a value outside 1..=5,
/// which no kernel sends, reads as the smallest MTU.
fn mtu_or_min(raw: u8) -> Mtu {
    Mtu::from_raw(raw).unwrap_or(Mtu::Mtu256)
}

/// `struct ibv_gid_entry`: a GID with its index, port, type and netdev.
#[doc(alias = "ibv_gid_entry")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GidEntry {
    /// The GID, in network byte order as on the wire.
    pub gid: [u8; 16],
    /// Index in the port's GID table.
    pub gid_index: u32,
    /// Port number.
    pub port_num: u32,
    /// `enum ibv_gid_type` (0 = IB, 1 = RoCE v1, 2 = RoCE v2).
    pub gid_type: u32,
    /// Interface index of the associated netdev (0 if none).
    pub ndev_ifindex: u32,
}

impl GidEntry {
    /// Converts the kernel's reply (public for fuzzing).
    pub fn from_kernel(e: AbiGidEntry) -> Self {
        let mut gid = [0u8; 16];
        gid[..8].copy_from_slice(&e.gid[0].to_ne_bytes());
        gid[8..].copy_from_slice(&e.gid[1].to_ne_bytes());
        Self {
            gid,
            gid_index: e.gid_index,
            port_num: e.port_num,
            gid_type: e.gid_type,
            ndev_ifindex: e.netdev_ifindex,
        }
    }
}

/// `IBV_GID_TYPE_ROCE_V2` in [`GidEntry::gid_type`].
pub const GID_TYPE_ROCE_V2: u32 = 2;

/// Whether `gid` is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), the
/// form a RoCE GID of an IPv4 address takes.
pub fn is_ipv4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10].iter().all(|&b| b == 0) && gid[10..12] == [0xff, 0xff]
}

/// Largest GID table read in one call by `query_gid_table`.
pub const GID_TABLE_CHUNK: usize = 64;

/// `ibv_query_gid_table` without allocation: reads through a fixed stack
/// buffer when `out` is shorter than the kernel's table would need.
pub(crate) fn query_gid_table(ch: &Channel, out: &mut [GidEntry]) -> Result<usize> {
    let mut raw = [AbiGidEntry::new_zeroed(); GID_TABLE_CHUNK];
    let want = out.len().min(GID_TABLE_CHUNK);
    let n = crate::cmd::device::query_gid_table(ch, &mut raw[..want])?;
    for (dst, src) in out.iter_mut().zip(&raw[..n]) {
        *dst = GidEntry::from_kernel(*src);
    }
    Ok(n)
}

/// Reads `<sysfs>/class/infiniband/<dev>/ports/<port>/pkeys/<index>` (a
/// hex number such as `0xffff`), as libibverbs' `ibv_query_pkey` does,
/// `<sysfs>` being `/sys` or, with `std`, what `SYSFS_PATH` says (as for
/// discovery: rdma-core reads below the device's sysfs directory, which it
/// found under `SYSFS_PATH`).
pub(crate) fn query_pkey(dev: &str, port: u8, index: u16) -> Result<u16> {
    const VERB: &str = "ibv_query_pkey";
    #[cfg(feature = "std")]
    let root = crate::discovery::sysfs::sysfs_root_from_env();
    #[cfg(feature = "std")]
    let root = root.to_str().ok_or(
        Error::new(VERB, ErrorKind::InvalidArgument).with_detail("SYSFS_PATH is not UTF-8"),
    )?;
    #[cfg(not(feature = "std"))]
    let root = "/sys";
    let root = root.trim_end_matches('/');
    let mut path: heapless::String<512> = heapless::String::new();
    write!(path, "{root}/class/infiniband/{dev}/ports/{port}/pkeys/{index}")
        .map_err(|_| Error::new(VERB, ErrorKind::InvalidArgument).with_detail("the sysfs path is too long"))?;
    let fd = rustix::fs::open(path.as_str(), rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty())
        .map_err(|e| Error::from_errno(VERB, e))?;
    let mut buf = [0u8; 32];
    let n = rustix::io::read(&fd, &mut buf).map_err(|e| Error::from_errno(VERB, e))?;
    parse_pkey(&buf[..n]).ok_or(Error::new(VERB, ErrorKind::Malformed))
}

/// Parses a sysfs P_Key file (`0xffff\n`). Public for fuzzing.
pub fn parse_pkey(bytes: &[u8]) -> Option<u16> {
    let s = core::str::from_utf8(bytes).ok()?.trim();
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"))?;
    u16::from_str_radix(hex, 16).ok()
}


/// `enum ibv_mtu`: a path MTU.
#[doc(alias = "ibv_mtu")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mtu {
    /// `IBV_MTU_256`.
    Mtu256 = 1,
    /// `IBV_MTU_512`.
    Mtu512 = 2,
    /// `IBV_MTU_1024`.
    Mtu1024 = 3,
    /// `IBV_MTU_2048`.
    Mtu2048 = 4,
    /// `IBV_MTU_4096`.
    Mtu4096 = 5,
}

impl Mtu {
    /// Converts the kernel's value (`None` for anything else, e.g. 0).
    pub fn from_raw(v: u8) -> Option<Self> {
        Some(match v {
            1 => Self::Mtu256,
            2 => Self::Mtu512,
            3 => Self::Mtu1024,
            4 => Self::Mtu2048,
            5 => Self::Mtu4096,
            _ => return None,
        })
    }

    /// The MTU in bytes (256 … 4096).
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }

    /// The largest MTU of at most `bytes` bytes (`None` below 256).
    pub const fn from_bytes(bytes: u32) -> Option<Self> {
        Some(match bytes {
            4096.. => Self::Mtu4096,
            2048.. => Self::Mtu2048,
            1024.. => Self::Mtu1024,
            512.. => Self::Mtu512,
            256.. => Self::Mtu256,
            _ => return None,
        })
    }
}

impl Default for Mtu {
    /// 1024, the path MTU rdma-core's `ibv_rc_pingpong` uses by default.
    fn default() -> Self {
        Self::Mtu1024
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkey_parsing() {
        assert_eq!(parse_pkey(b"0xffff\n"), Some(0xffff));
        assert_eq!(parse_pkey(b"0x7fff"), Some(0x7fff));
        assert_eq!(parse_pkey(b"ffff"), None);
        assert_eq!(parse_pkey(b"0x10000"), None);
        assert_eq!(parse_pkey(b"\xff"), None);
    }
}
