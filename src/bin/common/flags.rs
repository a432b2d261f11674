//! Capability bit names as `ibv_devinfo` (rdma-core v44) lists them, one
//! per line under the field that holds them.

use core::fmt::Write as _;

/// A named bit (or bits) of a capability mask.
pub(crate) type Flag = (u64, &'static str);

/// `enum ibv_device_cap_flags` (`ibv_device_attr.device_cap_flags`).
pub(crate) const DEVICE_CAP: &[Flag] = &[
    (1 << 0, "RESIZE_MAX_WR"),
    (1 << 1, "BAD_PKEY_CNTR"),
    (1 << 2, "BAD_QKEY_CNTR"),
    (1 << 3, "RAW_MULTI"),
    (1 << 4, "AUTO_PATH_MIG"),
    (1 << 5, "CHANGE_PHY_PORT"),
    (1 << 6, "UD_AV_PORT_ENFORCE"),
    (1 << 7, "CURR_QP_STATE_MOD"),
    (1 << 8, "SHUTDOWN_PORT"),
    (1 << 9, "INIT_TYPE"),
    (1 << 10, "PORT_ACTIVE_EVENT"),
    (1 << 11, "SYS_IMAGE_GUID"),
    (1 << 12, "RC_RNR_NAK_GEN"),
    (1 << 13, "SRQ_RESIZE"),
    (1 << 14, "N_NOTIFY_CQ"),
    (1 << 17, "MEM_WINDOW"),
    (1 << 18, "UD_IP_CSUM"),
    (1 << 20, "XRC"),
    (1 << 21, "MEM_MGT_EXTENSIONS"),
    (1 << 23, "MEM_WINDOW_TYPE_2A"),
    (1 << 24, "MEM_WINDOW_TYPE_2B"),
    (1 << 25, "RC_IP_CSUM"),
    (1 << 26, "RAW_IP_CSUM"),
    (1 << 29, "MANAGED_FLOW_STEERING"),
];

/// The upper 32 bits of `device_cap_flags_ex` that have names.
pub(crate) const DEVICE_CAP_EX: &[Flag] = &[
    (1 << 34, "RAW_SCATTER_FCS"),
    (1 << 36, "PCI_WRITE_END_PADDING"),
];

/// `IBV_ODP_SUPPORT*` (general ODP capabilities).
pub(crate) const ODP_GENERAL: &[Flag] =
    &[(1 << 0, "ODP_SUPPORT"), (1 << 1, "ODP_SUPPORT_IMPLICIT")];

/// `enum ibv_odp_transport_cap_bits`, as far as v44 names them.
pub(crate) const ODP_TRANSPORT: &[Flag] = &[
    (1 << 0, "SUPPORT_SEND"),
    (1 << 1, "SUPPORT_RECV"),
    (1 << 2, "SUPPORT_WRITE"),
    (1 << 3, "SUPPORT_READ"),
    (1 << 4, "SUPPORT_ATOMIC"),
    (1 << 5, "SUPPORT_SRQ"),
];

/// `1 << IBV_QPT_RAW_PACKET` and `1 << IBV_QPT_UD` (TSO and RSS QP types).
pub(crate) const QPT_RAW_UD: &[Flag] = &[(1 << 8, "SUPPORT_RAW_PACKET"), (1 << 4, "SUPPORT_UD")];

/// `enum ibv_raw_packet_caps`.
pub(crate) const RAW_PACKET: &[Flag] = &[
    (1 << 0, "C-VLAN stripping offload"),
    (1 << 1, "Scatter FCS offload"),
    (1 << 2, "IP csum offload"),
    (1 << 3, "Delay drop"),
];

/// `IBV_TM_CAP_RC`.
pub(crate) const TM: &[Flag] = &[(1 << 0, "IBV_TM_CAP_RC")];

/// Writes one line per set flag of `table`, then, if `unknown` is set and
/// bits outside the table are set, `Unknown flags: 0x<HEX>`.
pub(crate) fn flag_lines(out: &mut String, value: u64, table: &[Flag], unknown: bool) {
    let mut known = 0;
    for &(bit, name) in table {
        known |= bit;
        if value & bit != 0 {
            let _ = writeln!(out, "\t\t\t\t\t{name}");
        }
    }
    if unknown && value & !known != 0 {
        let _ = writeln!(out, "\t\t\t\t\tUnknown flags: 0x{:X}", value & !known);
    }
}

/// Per-transport ODP capabilities: `NO SUPPORT` when empty.
pub(crate) fn odp_transport_lines(out: &mut String, value: u32) {
    if value == 0 {
        out.push_str("\t\t\t\t\tNO SUPPORT\n");
    } else {
        flag_lines(out, value.into(), ODP_TRANSPORT, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rxe_device_cap_flags() {
        // The bits rxe reports; rdma-core lists them in table order.
        let mut s = String::new();
        flag_lines(&mut s, 0x0122_3c76, DEVICE_CAP, true);
        let names: Vec<&str> = s.lines().map(str::trim).collect();
        assert_eq!(
            names,
            [
                "BAD_PKEY_CNTR",
                "BAD_QKEY_CNTR",
                "AUTO_PATH_MIG",
                "CHANGE_PHY_PORT",
                "UD_AV_PORT_ENFORCE",
                "PORT_ACTIVE_EVENT",
                "SYS_IMAGE_GUID",
                "RC_RNR_NAK_GEN",
                "SRQ_RESIZE",
                "MEM_WINDOW",
                "MEM_MGT_EXTENSIONS",
                "MEM_WINDOW_TYPE_2B"
            ]
        );
    }

    #[test]
    fn unknown_bits_in_upper_case_hex() {
        let mut s = String::new();
        flag_lines(&mut s, 0x1C0_0000_0000 | (1 << 34), DEVICE_CAP_EX, true);
        assert_eq!(
            s,
            "\t\t\t\t\tRAW_SCATTER_FCS\n\t\t\t\t\tUnknown flags: 0x1C000000000\n"
        );
        let mut s = String::new();
        flag_lines(&mut s, 1 << 9, RAW_PACKET, false);
        assert_eq!(s, "");
    }

    #[test]
    fn odp_none() {
        let mut s = String::new();
        odp_transport_lines(&mut s, 0);
        odp_transport_lines(&mut s, 0x41);
        assert_eq!(
            s,
            "\t\t\t\t\tNO SUPPORT\n\t\t\t\t\tSUPPORT_SEND\n\t\t\t\t\tUnknown flags: 0x40\n"
        );
    }
}
