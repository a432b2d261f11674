//! libibverbs' small helpers: static-rate conversions (`ibv_rate_to_mult`,
//! `mult_to_ibv_rate`, `ibv_rate_to_mbps`, `mbps_to_ibv_rate`) and the
//! enum-to-text functions (`ibv_node_type_str`, `ibv_port_state_str`,
//! `ibv_event_type_str`, `ibv_wc_status_str`).
//!
//! Tables and strings follow rdma-core's `libibverbs/verbs.c` and
//! `libibverbs/enum_strs.c` exactly; `tests/strings_vs_libibverbs.rs`
//! compares every value with the C library.

use crate::event_type::EventType;

/// `enum ibv_rate`: a static rate (for `ah_attr.static_rate`).
#[doc(alias = "ibv_rate")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
#[allow(missing_docs)] // the names say it: IBV_RATE_<n>_GBPS
pub enum Rate {
    /// `IBV_RATE_MAX`: the port's current rate.
    Max = 0,
    Gbps2_5 = 2,
    Gbps5 = 5,
    Gbps10 = 3,
    Gbps20 = 6,
    Gbps30 = 4,
    Gbps40 = 7,
    Gbps60 = 8,
    Gbps80 = 9,
    Gbps120 = 10,
    Gbps14 = 11,
    Gbps56 = 12,
    Gbps112 = 13,
    Gbps168 = 14,
    Gbps25 = 15,
    Gbps100 = 16,
    Gbps200 = 17,
    Gbps300 = 18,
    Gbps28 = 19,
    Gbps50 = 20,
    Gbps400 = 21,
    Gbps600 = 22,
    Gbps800 = 23,
    Gbps1200 = 24,
}

/// `(rate, multiple of 2.5 Gb/s or -1, Mb/s)` for every rate but MAX, in
/// `enum ibv_rate` order.
const RATES: [(Rate, i32, i32); 23] = [
    (Rate::Gbps2_5, 1, 2500),
    (Rate::Gbps10, 4, 10000),
    (Rate::Gbps30, 12, 30000),
    (Rate::Gbps5, 2, 5000),
    (Rate::Gbps20, 8, 20000),
    (Rate::Gbps40, 16, 40000),
    (Rate::Gbps60, 24, 60000),
    (Rate::Gbps80, 32, 80000),
    (Rate::Gbps120, 48, 120000),
    (Rate::Gbps14, -1, 14062),
    (Rate::Gbps56, -1, 56250),
    (Rate::Gbps112, -1, 112500),
    (Rate::Gbps168, -1, 168750),
    (Rate::Gbps25, -1, 25781),
    (Rate::Gbps100, -1, 103125),
    (Rate::Gbps200, -1, 206250),
    (Rate::Gbps300, -1, 309375),
    (Rate::Gbps28, 11, 28125),
    (Rate::Gbps50, 20, 53125),
    (Rate::Gbps400, 160, 425000),
    (Rate::Gbps600, 240, 637500),
    (Rate::Gbps800, 320, 850000),
    (Rate::Gbps1200, 480, 1275000),
];

impl Rate {
    /// From the C value; `None` for values that name no rate.
    pub fn from_raw(raw: u32) -> Option<Self> {
        if raw == 0 {
            return Some(Rate::Max);
        }
        RATES.iter().map(|r| r.0).find(|r| *r as u32 == raw)
    }
}

/// `ibv_rate_to_mult`: the rate as a multiple of 2.5 Gb/s, or -1 for MAX
/// and for the rates that are not such a multiple (14, 56, 112, 168, 25,
/// 100, 200 and 300 Gb/s, which libibverbs does not convert).
#[doc(alias = "ibv_rate_to_mult")]
pub fn rate_to_mult(rate: Rate) -> i32 {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.1)
}

/// `mult_to_ibv_rate`: the rate that is `mult` × 2.5 Gb/s, or
/// [`Rate::Max`] if there is none.
#[doc(alias = "mult_to_ibv_rate")]
pub fn mult_to_rate(mult: i32) -> Rate {
    RATES.iter().find(|r| r.1 == mult && mult > 0).map_or(Rate::Max, |r| r.0)
}

/// `ibv_rate_to_mbps`: the rate in Mb/s (the real signalling rate, e.g.
/// 25781 for 25 Gb/s), or -1 for MAX.
#[doc(alias = "ibv_rate_to_mbps")]
pub fn rate_to_mbps(rate: Rate) -> i32 {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.2)
}

/// `mbps_to_ibv_rate`: the rate of exactly `mbps` Mb/s (as
/// [`rate_to_mbps`] gives it), or [`Rate::Max`].
#[doc(alias = "mbps_to_ibv_rate")]
pub fn mbps_to_rate(mbps: i32) -> Rate {
    RATES.iter().find(|r| r.2 == mbps).map_or(Rate::Max, |r| r.0)
}

/// `ibv_node_type_str`: `enum ibv_node_type` (CA = 1 … UNSPECIFIED = 7) as text.
#[doc(alias = "ibv_node_type_str")]
pub fn node_type_str(node_type: i32) -> &'static str {
    const S: [&str; 7] = [
        "InfiniBand channel adapter",
        "InfiniBand switch",
        "InfiniBand router",
        "iWARP NIC",
        "usNIC",
        "usNIC UDP",
        "unspecified",
    ];
    // `checked_sub`: `i32::MIN - 1` would overflow.
    node_type
        .checked_sub(1)
        .and_then(|i| usize::try_from(i).ok())
        .and_then(|i| S.get(i))
        .copied()
        .unwrap_or("unknown")
}

/// `ibv_port_state_str`: `enum ibv_port_state` (NOP = 0 … ACTIVE_DEFER = 5) as text.
#[doc(alias = "ibv_port_state_str")]
pub fn port_state_str(state: u32) -> &'static str {
    const S: [&str; 6] = ["no state change (NOP)", "down", "init", "armed", "active", "active defer"];
    S.get(state as usize).copied().unwrap_or("unknown")
}

/// `ibv_event_type_str`: an async event type as text.
#[doc(alias = "ibv_event_type_str")]
pub fn event_type_str(event: EventType) -> &'static str {
    const S: [&str; 21] = [
        "CQ error",
        "local work queue catastrophic error",
        "invalid request local work queue error",
        "local access violation work queue error",
        "communication established",
        "send queue drained",
        "path migrated",
        "path migration request error",
        "local catastrophic error",
        "port active",
        "port error",
        "LID change",
        "P_Key change",
        "SM change",
        "SRQ catastrophic error",
        "SRQ limit reached",
        "last WQE reached",
        "client reregistration",
        "GID table change",
        "WQ fatal",
        "Device link speed change",
    ];
    S.get(event.raw() as usize).copied().unwrap_or("unknown")
}

/// `ibv_wc_status_str`: `enum ibv_wc_status` (SUCCESS = 0 …) as text.
#[doc(alias = "ibv_wc_status_str")]
pub fn wc_status_str(status: u32) -> &'static str {
    const S: [&str; 24] = [
        "success",
        "local length error",
        "local QP operation error",
        "local EE context operation error",
        "local protection error",
        "Work Request Flushed Error",
        "memory management operation error",
        "bad response error",
        "local access error",
        "remote invalid request error",
        "remote access error",
        "remote operation error",
        "transport retry counter exceeded",
        "RNR retry counter exceeded",
        "local RDD violation error",
        "remote invalid RD request",
        "aborted error",
        "invalid EE context number",
        "invalid EE context state",
        "fatal error",
        "response timeout error",
        "general error",
        "TM error",
        "TM software rendezvous",
    ];
    S.get(status as usize).copied().unwrap_or("unknown")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_invert_each_other() {
        for raw in 0..=30u32 {
            let Some(rate) = Rate::from_raw(raw) else { continue };
            assert_eq!(rate as u32, raw);
            let m = rate_to_mult(rate);
            if m > 0 {
                assert_eq!(mult_to_rate(m), rate);
            }
            let mbps = rate_to_mbps(rate);
            if mbps > 0 {
                assert_eq!(mbps_to_rate(mbps), rate);
            }
        }
        assert_eq!(Rate::from_raw(1), None);
        assert_eq!(Rate::from_raw(25), None);
        assert_eq!((rate_to_mult(Rate::Max), rate_to_mbps(Rate::Max)), (-1, -1));
        assert_eq!((mult_to_rate(0), mult_to_rate(-1), mbps_to_rate(-1)), (Rate::Max, Rate::Max, Rate::Max));
    }

    #[test]
    fn node_type_str_takes_every_i32() {
        // i32::MIN - 1 overflowed (a panic in debug builds).
        for v in [i32::MIN, i32::MIN + 1, -1, 0, 8, i32::MAX] {
            assert_eq!(node_type_str(v), "unknown", "{v}");
        }
        assert_eq!(node_type_str(1), "InfiniBand channel adapter");
        assert_eq!(node_type_str(7), "unspecified");
    }
}
