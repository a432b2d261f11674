//! The port's netdev taken down and up: `ip link set dev <netdev>
//! down|up` (iproute2's `RTM_NEWLINK` with `IFF_UP` in `ifi_change`) on
//! the netdev `rdma link show` names for the simulated port. The shim
//! sends such a request (and no other rtnetlink message) here over its
//! netlink connection instead of to the host's kernel; the answer is the
//! `NLMSG_ERROR` the kernel would send (0: the ACK, which the shim turns
//! into the kernel's ACK on the process's real netlink socket).
//!
//! What `mlx5_ib` does when its RoCE netdev goes down or up
//! (`mlx5_netdev_event`, NETDEV_DOWN/NETDEV_UP): `mlx5_query_port_roce`
//! then reports the port DOWN / DISABLED (ACTIVE / LINK_UP once it is up
//! again), and when that state changed, `ib_dispatch_event` delivers
//! `IB_EVENT_PORT_ERR` / `IB_EVENT_PORT_ACTIVE` of port 1 to the async event
//! file of every open context. QPs keep their state (the driver moves none
//! to error), but while the link is down no packet leaves or arrives
//! (`EngineState::link_down`): an RC requester retries until its
//! `retry_cnt` runs out and completes in RETRY_EXC, as it does for a lost
//! packet; UC and UD sends complete at the sender and are lost; nothing is
//! received. Traffic flows again once the netdev is up. The fixture sysfs
//! tree's `ports/1/state` and `phys_state` follow, as the kernel's do.

use std::sync::atomic::Ordering::*;

use super::{sock, Daemon};

/// `RTM_NEWLINK`, `RTM_SETLINK`.
pub const RTM_NEWLINK: u16 = 16;
pub const RTM_SETLINK: u16 = 19;
/// `IFF_UP`.
const IFF_UP: u32 = 1;
/// `IFLA_IFNAME`, `IFLA_EXT_MASK`: the attributes a request may carry.
const IFLA_IFNAME: u16 = 3;
const IFLA_EXT_MASK: u16 = 29;
/// `IB_EVENT_PORT_ACTIVE`, `IB_EVENT_PORT_ERR`.
pub const PORT_ACTIVE: u32 = 9;
pub const PORT_ERR: u32 = 10;
/// `NLMSG_ERROR`.
const NLMSG_ERROR: u16 = 2;

/// Whether message `m` is a link change (the shim diverts only those).
pub fn is_link_change(m: &[u8]) -> bool {
    m.get(4..6).is_some_and(|t| matches!(u16::from_ne_bytes([t[0], t[1]]), RTM_NEWLINK | RTM_SETLINK))
}

/// The `IFF_UP` the request asks for, or the errno the simulator answers
/// (`EOPNOTSUPP` for any change but `IFF_UP`: MTU, address, other flags).
fn wanted(m: &[u8]) -> Result<Option<bool>, i32> {
    let u32_at = |o: usize| m.get(o..o + 4).map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    let (flags, change) = (u32_at(24).ok_or(libc::EINVAL)?, u32_at(28).ok_or(libc::EINVAL)?);
    let mut at = 32;
    while at + 4 <= m.len() {
        let len = usize::from(u16::from_ne_bytes([m[at], m[at + 1]]));
        let ty = u16::from_ne_bytes([m[at + 2], m[at + 3]]) & 0x3fff;
        if len < 4 || at + len > m.len() {
            return Err(libc::EINVAL);
        }
        if ty != IFLA_IFNAME && ty != IFLA_EXT_MASK {
            return Err(libc::EOPNOTSUPP);
        }
        at += (len + 3) & !3;
    }
    // rtnl_dev_combine_flags: ifi_change 0 with flags set replaces them all
    let change = if change == 0 && flags != 0 { u32::MAX } else { change };
    if change & !IFF_UP != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    Ok((change & IFF_UP != 0).then_some(flags & IFF_UP != 0))
}

/// Applies link change `m` (a whole `RTM_NEWLINK`/`RTM_SETLINK`
/// message) to the port; the `NLMSG_ERROR` answer (error 0 or `-errno`,
/// with the request's header).
pub fn answer(d: &Daemon, m: &[u8]) -> Vec<u8> {
    let err = match wanted(m) {
        Ok(Some(up)) => {
            set_port(d, up);
            0
        }
        Ok(None) => 0,
        Err(e) => e,
    };
    let mut out = Vec::with_capacity(36);
    out.extend_from_slice(&36u32.to_ne_bytes());
    out.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
    out.extend_from_slice(&0u16.to_ne_bytes());
    out.extend_from_slice(m.get(8..12).unwrap_or(&[0; 4]));
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.extend_from_slice(&(-err).to_ne_bytes());
    let mut hdr = [0u8; 16];
    hdr.copy_from_slice(m.get(..16).unwrap_or(&[0; 16]));
    out.extend_from_slice(&hdr);
    out
}

/// The netdev goes `up` or down: the port state follows, and a change is
/// announced on every context's async event file.
pub fn set_port(d: &Daemon, up: bool) {
    // The engine's view changes under the state lock, so no engine step
    // sees the port up after the answer said down (or the reverse).
    let mut st = d.lock();
    st.dev.engine.link_down = !up;
    let was = d.port_up.swap(up, AcqRel);
    d.trace.line(format_args!("LINK netdev {} (was {})", if up { "up" } else { "down" }, if was { "up" } else { "down" }));
    if was == up {
        return;
    }
    if let Some(root) = &d.sysfs {
        if let Err(e) = crate::fixture::write_port_state(root, &d.id, up) {
            d.trace.line(format_args!("LINK sysfs port state in {}: {e}", root.display()));
        }
    }
    let mut rec = [0u8; 16];
    rec[..8].copy_from_slice(&1u64.to_le_bytes()); // element: port 1
    rec[8..12].copy_from_slice(&(if up { PORT_ACTIVE } else { PORT_ERR }).to_le_bytes());
    // Not counted per element: a port event is no object's (DESTROY_*
    // reports only the events of the object destroyed).
    for (fd, _) in st.sink.async_fds.values() {
        sock::send_nowait(fd, &rec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(flags: u32, change: u32, attrs: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&((32 + attrs.len()) as u32).to_ne_bytes());
        m.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
        m.extend_from_slice(&5u16.to_ne_bytes()); // REQUEST | ACK
        m.extend_from_slice(&77u32.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&[0, 0, 0, 0]);
        m.extend_from_slice(&1i32.to_ne_bytes());
        m.extend_from_slice(&flags.to_ne_bytes());
        m.extend_from_slice(&change.to_ne_bytes());
        m.extend_from_slice(attrs);
        m
    }

    #[test]
    fn only_iff_up_changes_and_bare_attributes_are_honoured() {
        assert_eq!(wanted(&req(0, IFF_UP, &[])), Ok(Some(false)));
        assert_eq!(wanted(&req(IFF_UP, IFF_UP, &[])), Ok(Some(true)));
        assert_eq!(wanted(&req(0, 0, &[])), Ok(None));
        assert_eq!(wanted(&req(0x100, 0x100, &[])), Err(libc::EOPNOTSUPP)); // IFF_PROMISC
        assert_eq!(wanted(&req(IFF_UP, 0, &[])), Err(libc::EOPNOTSUPP));
        // IFLA_MTU
        assert_eq!(wanted(&req(0, IFF_UP, &[8, 0, 4, 0, 0, 4, 0, 0])), Err(libc::EOPNOTSUPP));
        // IFLA_IFNAME "lo"
        assert_eq!(wanted(&req(0, IFF_UP, &[7, 0, 3, 0, b'l', b'o', 0, 0])), Ok(Some(false)));
        assert_eq!(wanted(&req(0, IFF_UP, &[9, 0, 3, 0])), Err(libc::EINVAL));
        assert!(is_link_change(&req(0, IFF_UP, &[])));
        assert!(!is_link_change(&[0u8; 16]));
    }
}
