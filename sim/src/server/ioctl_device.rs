//! The device methods answered by ioctl (`uverbs_std_types_device.c`):
//! `QUERY_PORT`, `QUERY_GID_TABLE`, `QUERY_GID_ENTRY` — the attributes,
//! the order of the checks and the errnos of the kernel's handlers, on the
//! one RoCE port and the GID table of the fixture.

use super::cmd::{errno, Out};
use super::device::{port_attr, ACTIVE_SPEED};
use super::ioctl::{Bundle, Kind, Method, Spec};
use crate::fixture::{gids, Identity, GID_TBL_LEN, NETDEV};

/// `UVERBS_OBJECT_DEVICE`.
const OBJECT_DEVICE: u16 = 0;
/// `sizeof(struct ib_uverbs_query_port_resp_ex)`.
const PORT_RESP_EX_LEN: usize = 48;
/// `sizeof(struct ib_uverbs_gid_entry)`.
pub const GID_ENTRY_LEN: usize = 32;

/// What the handlers need of the caller.
pub struct DevCtx {
    /// The context exists (GET_CONTEXT done): `ib_uverbs_get_ucontext`
    /// succeeds; without it every method here is `EINVAL`.
    pub open: bool,
    /// The NIC (its GIDs).
    pub id: Identity,
    /// The port's netdev is up (QUERY_PORT's state).
    pub port_up: bool,
}

const fn spec(id: u16, kind: Kind, mandatory: bool) -> Spec {
    Spec { id, kind, mandatory }
}

/// The methods, with the kernel's attribute specifications.
pub const METHODS: &[Method<DevCtx>] = &[
    Method {
        object: OBJECT_DEVICE,
        method: 2,
        name: "QUERY_PORT",
        attrs: &[
            spec(0, Kind::Const, true),                                // PORT_NUM (u8)
            spec(1, Kind::OutStruct(PORT_RESP_EX_LEN as u16), true), // RESP
        ],
        run: query_port,
    },
    Method {
        object: OBJECT_DEVICE,
        method: 5,
        name: "QUERY_GID_TABLE",
        attrs: &[
            spec(0, Kind::Const, true),        // ENTRY_SIZE (u64)
            spec(1, Kind::Flags, false),       // FLAGS
            spec(2, Kind::OutMin(0), true),    // RESP_ENTRIES
            spec(3, Kind::OutExact(8), true),  // RESP_NUM_ENTRIES (u64)
        ],
        run: query_gid_table,
    },
    Method {
        object: OBJECT_DEVICE,
        method: 6,
        name: "QUERY_GID_ENTRY",
        attrs: &[
            spec(0, Kind::Const, true),                            // PORT (u32)
            spec(1, Kind::Const, true),                            // GID_INDEX (u32)
            spec(2, Kind::Flags, true),                            // FLAGS
            spec(3, Kind::OutStruct(GID_ENTRY_LEN as u16), true), // RESP_ENTRY
        ],
        run: query_gid_entry,
    },
];

/// `ib_uverbs_get_ucontext`: no context is `EINVAL`.
fn ucontext(c: &DevCtx) -> Result<(), i32> {
    if c.open {
        Ok(())
    } else {
        Err(errno::EINVAL)
    }
}

fn query_port(b: &Bundle<'_>, c: &DevCtx) -> Result<(), i32> {
    ucontext(c)?;
    let port = b.const_in(0, u64::from(u8::MAX))?;
    if port != 1 {
        return Err(errno::EINVAL); // ib_query_port: rdma_is_port_valid
    }
    let mut o = Out::new(PORT_RESP_EX_LEN);
    // port_cap_flags2 0 (mlx5 sets none on RoCE); active_speed_ex as newer
    // kernels fill it (older ones leave these bytes reserved, zero)
    o.bytes(0, &port_attr(c.port_up)).u16(40, 0).u32(44, u32::from(ACTIVE_SPEED));
    b.copy_to_struct_or_zero(1, &o.done())
}

/// `IB_UVERBS_GID_TYPE_ROCE_V1` / `_V2` from the sysfs type string.
fn gid_type(sysfs: &str) -> u32 {
    if sysfs == "RoCE v2" {
        2
    } else {
        1
    }
}

/// The netdev's ifindex (0 when the host has no such device, as the
/// kernel reports a GID without a netdev).
pub(super) fn netdev_ifindex() -> u32 {
    std::fs::read_to_string(format!("/sys/class/net/{NETDEV}/ifindex"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// struct ib_uverbs_gid_entry of entry `index` of port 1, or None if empty.
fn gid_entry(id: &Identity, index: usize, ifindex: u32) -> Option<Vec<u8>> {
    let (gid, ty) = *gids(id).get(index)?;
    let mut o = Out::new(GID_ENTRY_LEN);
    o.bytes(0, &gid).u32(16, index as u32).u32(20, 1).u32(24, gid_type(ty)).u32(28, ifindex);
    Some(o.done())
}

fn query_gid_table(b: &Bundle<'_>, c: &DevCtx) -> Result<(), i32> {
    b.flags32(1, 0)?;
    let entry_size = b.const_in(0, u64::MAX)? as usize;
    if entry_size == 0 {
        return Err(errno::EINVAL);
    }
    let len = b.len(2)?;
    if len % entry_size != 0 || len / entry_size == 0 {
        return Err(errno::EINVAL);
    }
    let max_entries = len / entry_size;
    ucontext(c)?;
    let ifindex = netdev_ifindex();
    let valid: Vec<Vec<u8>> = (0..GID_TBL_LEN as usize).filter_map(|i| gid_entry(&c.id, i, ifindex)).collect();
    if valid.len() > max_entries {
        return Err(errno::EINVAL); // rdma_query_gid_table: more valid entries than room
    }
    if entry_size == GID_ENTRY_LEN {
        b.copy_to(2, &valid.concat())?;
    } else {
        // each entry cut to, or zero-padded to, the caller's entry size
        for (i, e) in valid.iter().enumerate() {
            let mut slot = vec![0u8; entry_size];
            let n = entry_size.min(GID_ENTRY_LEN);
            slot[..n].copy_from_slice(&e[..n]);
            b.write_at(2, i * entry_size, &slot)?;
        }
        b.written(2)?;
    }
    b.copy_to(3, &(valid.len() as u64).to_le_bytes())
}

fn query_gid_entry(b: &Bundle<'_>, c: &DevCtx) -> Result<(), i32> {
    b.flags32(2, 0)?;
    let port = b.const_in(0, u64::from(u32::MAX))?;
    let index = b.const_in(1, u64::from(u32::MAX))?;
    ucontext(c)?;
    if port != 1 {
        return Err(errno::EINVAL); // rdma_is_port_valid
    }
    // rdma_get_gid_attr: past the table EINVAL, an empty slot ENODATA
    if index >= u64::from(GID_TBL_LEN) {
        return Err(errno::EINVAL);
    }
    let entry = gid_entry(&c.id, index as usize, netdev_ifindex()).ok_or(errno::ENODATA)?;
    b.copy_to_struct_or_zero(3, &entry)
}
