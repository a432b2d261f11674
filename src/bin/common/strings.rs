//! The value-to-text helpers of rdma-core's `ibv_devinfo` (v44, the
//! Debian 12 version the device test compares against): enum names, GUID
//! and GID formatting.

use core::fmt::Write as _;

/// `enum ibv_transport_type` name.
pub(crate) fn transport_str(t: i32) -> &'static str {
    match t {
        0 => "InfiniBand",
        1 => "iWARP",
        2 => "usNIC",
        3 => "usNIC UDP",
        4 => "unspecified",
        _ => "invalid transport",
    }
}

/// `enum ibv_port_state` name.
pub(crate) fn port_state_str(s: u8) -> &'static str {
    match s {
        1 => "PORT_DOWN",
        2 => "PORT_INIT",
        3 => "PORT_ARMED",
        4 => "PORT_ACTIVE",
        _ => "invalid state",
    }
}

/// Physical port state name (IB PortPhysicalState).
pub(crate) fn port_phy_state_str(s: u8) -> &'static str {
    match s {
        1 => "SLEEP",
        2 => "POLLING",
        3 => "DISABLED",
        4 => "PORT_CONFIGURATION TRAINNING",
        5 => "LINK_UP",
        6 => "LINK_ERROR_RECOVERY",
        7 => "PHY TEST",
        _ => "invalid physical state",
    }
}

/// `enum ibv_atomic_cap` name.
pub(crate) fn atomic_cap_str(c: u32) -> &'static str {
    match c {
        0 => "ATOMIC_NONE",
        1 => "ATOMIC_HCA",
        2 => "ATOMIC_GLOB",
        _ => "invalid atomic capability",
    }
}

/// `enum ibv_mtu` in bytes.
pub(crate) fn mtu_str(m: u8) -> &'static str {
    match m {
        1 => "256",
        2 => "512",
        3 => "1024",
        4 => "2048",
        5 => "4096",
        _ => "invalid MTU",
    }
}

/// Link width multiplier (IB encoding).
pub(crate) fn width_str(w: u8) -> &'static str {
    match w {
        1 => "1",
        2 => "4",
        4 => "8",
        8 => "12",
        16 => "2",
        _ => "invalid width",
    }
}

/// Per-lane link speed (IB encoding of `active_speed`).
pub(crate) fn speed_str(s: u8) -> &'static str {
    match s {
        1 => "2.5 Gbps",
        2 => "5.0 Gbps",
        4 | 8 => "10.0 Gbps",
        16 => "14.0 Gbps",
        32 => "25.0 Gbps",
        64 => "50.0 Gbps",
        128 => "100.0 Gbps",
        _ => "invalid speed",
    }
}

/// Number of virtual lanes (IB encoding).
pub(crate) fn vl_str(v: u8) -> &'static str {
    match v {
        1 => "1",
        2 => "2",
        3 => "4",
        4 => "8",
        5 => "15",
        _ => "invalid value",
    }
}

/// `IBV_LINK_LAYER_*` name.
pub(crate) fn link_layer_str(l: u8) -> &'static str {
    match l {
        0 => "Unspecified",
        1 => "InfiniBand",
        2 => "Ethernet",
        _ => "Unknown",
    }
}

/// A GUID (host order) as four 16-bit hex groups: `e88e:deff:fe78:01e9`.
pub(crate) fn guid_str(g: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        g >> 48,
        (g >> 32) & 0xffff,
        (g >> 16) & 0xffff,
        g & 0xffff
    )
}

/// An IPv6 address as glibc's `inet_ntop(AF_INET6)` writes it: the first
/// longest run of two or more zero groups becomes `::`, groups in lower-case
/// hex without leading zeros, and IPv4-mapped (`::ffff:a.b.c.d`) or
/// IPv4-compatible (`::a.b.c.d`) addresses end in dotted decimal.
///
/// Rust's `Ipv6Addr` display differs for IPv4-compatible addresses, hence
/// our own.
pub(crate) fn ntop6(a: &[u8; 16]) -> String {
    let w: [u16; 8] = core::array::from_fn(|i| u16::from_be_bytes([a[2 * i], a[2 * i + 1]]));
    // First longest run of zero words, if at least 2 long.
    // (start, length) of the best and the current run.
    let mut best: Option<(usize, usize)> = None;
    let mut cur: Option<(usize, usize)> = None;
    for (i, &x) in w.iter().enumerate() {
        if x == 0 {
            let c = cur.map_or((i, 1), |(b, l)| (b, l + 1));
            cur = Some(c);
            if best.is_none_or(|(_, bl)| c.1 > bl) {
                best = Some(c);
            }
        } else {
            cur = None;
        }
    }
    let best = best.filter(|&(_, l)| l >= 2);
    let in_best = |i: usize| best.is_some_and(|(b, l)| (b..b + l).contains(&i));
    let mut s = String::new();
    for i in 0..8 {
        if in_best(i) {
            if best.is_some_and(|(b, _)| b == i) {
                s.push(':');
            }
            continue;
        }
        if i != 0 {
            s.push(':');
        }
        if i == 6 && best.is_some_and(|(b, l)| b == 0 && (l == 6 || (l == 5 && w[5] == 0xffff))) {
            let _ = write!(s, "{}.{}.{}.{}", a[12], a[13], a[14], a[15]);
            return s;
        }
        let _ = write!(s, "{:x}", w[i]);
    }
    if best.is_some_and(|(b, l)| b + l == 8) {
        s.push(':');
    }
    s
}

/// `ibv_gid_type_sysfs` as `ibv_devinfo` sees it: 0 = IB/RoCE v1,
/// 1 = RoCE v2, 2 = unknown (the type query failed).
pub(crate) fn gid_type_str(t: u8) -> &'static str {
    match t {
        0 => "RoCE v1",
        1 => "RoCE v2",
        _ => "Invalid gid type",
    }
}

/// One `GID[  i]:` line of the port section, or nothing for a GID whose
/// type is unknown (as `ibv_devinfo` does). `link_layer` 2 (Ethernet)
/// appends the GID type.
pub(crate) fn gid_line(
    out: &mut String,
    index: u32,
    gid: &[u8; 16],
    sysfs_type: u8,
    link_layer: u8,
) {
    let suffix = if link_layer == 2 {
        format!(", {}", gid_type_str(sysfs_type))
    } else {
        String::new()
    };
    let text = match sysfs_type {
        0 => gid
            .chunks(2)
            .map(|c| format!("{:02x}{:02x}", c[0], c[1]))
            .collect::<Vec<_>>()
            .join(":"),
        1 => ntop6(gid),
        _ => return,
    };
    let _ = writeln!(out, "\t\t\tGID[{index:3}]:\t\t{text}{suffix}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::Ipv6Addr;

    fn ntop(s: &str) -> String {
        ntop6(&s.parse::<Ipv6Addr>().unwrap().octets())
    }

    #[test]
    fn ntop6_matches_glibc_forms() {
        assert_eq!(ntop("fe80::e88e:deff:fe78:1e9"), "fe80::e88e:deff:fe78:1e9");
        assert_eq!(ntop("::ffff:10.77.0.1"), "::ffff:10.77.0.1");
        assert_eq!(ntop("::1.2.3.4"), "::1.2.3.4"); // Rust would print ::102:304
        assert_eq!(ntop("::"), "::");
        assert_eq!(ntop("::1"), "::1");
        assert_eq!(ntop("1::"), "1::");
        assert_eq!(ntop("1:0:0:2:0:0:0:3"), "1:0:0:2::3");
        assert_eq!(ntop("1:0:0:2:3:0:0:4"), "1::2:3:0:0:4"); // first of equal runs
        assert_eq!(ntop("1:0:2:3:4:5:6:7"), "1:0:2:3:4:5:6:7"); // single zero kept
        assert_eq!(ntop("0:0:0:0:0:fffe:1.2.3.4"), "::fffe:102:304");
    }

    #[test]
    fn ntop6_round_trips() {
        for s in [
            "2001:db8::8:800:200c:417a",
            "ff01::101",
            "0:1:0:1:0:1:0:1",
            "abcd:ef01:2345:6789:abcd:ef01:2345:6789",
        ] {
            let a = s.parse::<Ipv6Addr>().unwrap();
            assert_eq!(ntop6(&a.octets()).parse::<Ipv6Addr>().unwrap(), a);
        }
    }

    #[test]
    fn guid_groups() {
        assert_eq!(guid_str(0xe88e_deff_fe78_01e9), "e88e:deff:fe78:01e9");
        assert_eq!(guid_str(1), "0000:0000:0000:0001");
    }

    #[test]
    fn gid_lines() {
        let gid = "fe80::1".parse::<Ipv6Addr>().unwrap().octets();
        let mut s = String::new();
        gid_line(&mut s, 0, &gid, 1, 2);
        gid_line(&mut s, 12, &gid, 0, 1);
        gid_line(&mut s, 3, &gid, 2, 2);
        assert_eq!(
            s,
            "\t\t\tGID[  0]:\t\tfe80::1, RoCE v2\n\t\t\tGID[ 12]:\t\tfe80:0000:0000:0000:0000:0000:0000:0001\n"
        );
    }
}
