//! One device's section of `ibv_devinfo` output (`print_hca_cap` in
//! rdma-core v44's `devinfo.c`), field for field.
//!
//! Values that C prints with `%d` from `int` fields are cast to `i32` so
//! that out-of-range values print the same.

use core::fmt::Write as _;

use verbs::{Context, DeviceAttr};

use super::flags::{self, flag_lines};
use super::strings::*;

/// What identifies the device in the section (from discovery, not from
/// the open context).
pub(crate) struct HcaId<'a> {
    /// `ibv_get_device_name`.
    pub(crate) name: &'a str,
    /// `ibv_device.transport_type`.
    pub(crate) transport: i32,
    /// The sysfs `board_id`, if the device has one.
    pub(crate) board_id: Option<String>,
}

/// Why a section could not be completed: the message for stderr and the
/// code `ibv_devinfo` ORs into its exit status.
#[derive(Debug)]
pub(crate) struct Failure {
    pub(crate) msg: String,
    pub(crate) rc: i32,
}

/// Writes the device's section to `out` (stdout text). On failure `out`
/// holds what `ibv_devinfo` would have printed before stopping.
pub(crate) fn print_hca_cap(
    out: &mut String,
    id: &HcaId<'_>,
    ctx: &Context,
    ib_port: u8,
    verbose: bool,
) -> Result<(), Failure> {
    let attr = ctx.query_device().map_err(|_| Failure {
        msg: "Failed to query device props".into(),
        rc: 2,
    })?;
    let b = attr.base();
    if ib_port != 0 && ib_port > b.phys_port_cnt {
        return Err(Failure {
            msg: "Invalid port requested for device".into(),
            rc: 4,
        });
    }
    let _ = writeln!(out, "hca_id:\t{}", id.name);
    let _ = writeln!(
        out,
        "\ttransport:\t\t\t{} ({})",
        transport_str(id.transport),
        id.transport
    );
    if !attr.fw_ver.is_empty() {
        let _ = writeln!(out, "\tfw_ver:\t\t\t\t{}", attr.fw_ver);
    }
    let _ = writeln!(out, "\tnode_guid:\t\t\t{}", guid_str(attr.node_guid()));
    let _ = writeln!(
        out,
        "\tsys_image_guid:\t\t\t{}",
        guid_str(attr.sys_image_guid())
    );
    let _ = writeln!(out, "\tvendor_id:\t\t\t0x{:04x}", b.vendor_id);
    let _ = writeln!(out, "\tvendor_part_id:\t\t\t{}", b.vendor_part_id as i32);
    let _ = writeln!(out, "\thw_ver:\t\t\t\t0x{:X}", b.hw_ver);
    if let Some(board) = id.board_id.as_deref().filter(|s| !s.is_empty()) {
        let _ = writeln!(out, "\tboard_id:\t\t\t{board}");
    }
    let _ = writeln!(out, "\tphys_port_cnt:\t\t\t{}", b.phys_port_cnt);
    if verbose {
        device_details(out, &attr, ctx.num_comp_vectors());
    }
    for port in 1..=b.phys_port_cnt {
        if ib_port != 0 && port != ib_port {
            continue;
        }
        port_section(out, id, ctx, port, verbose)?;
    }
    Ok(())
}

/// The `-v` device attributes.
fn device_details(out: &mut String, attr: &DeviceAttr, num_comp_vectors: u32) {
    let b = attr.base();
    let x = &attr.ex;
    let d = |v: u32| v as i32;
    let mut line = |name: &str, tabs: usize, value: core::fmt::Arguments<'_>| {
        let _ = writeln!(out, "\t{name}:{}{value}", "\t".repeat(tabs));
    };
    line("max_mr_size", 3, format_args!("0x{:x}", b.max_mr_size));
    line("page_size_cap", 3, format_args!("0x{:x}", b.page_size_cap));
    line("max_qp", 4, format_args!("{}", d(b.max_qp)));
    line("max_qp_wr", 3, format_args!("{}", d(b.max_qp_wr)));
    line(
        "device_cap_flags",
        2,
        format_args!("0x{:08x}", b.device_cap_flags),
    );
    flag_lines(out, b.device_cap_flags.into(), flags::DEVICE_CAP, true);
    let mut line = |name: &str, tabs: usize, value: i32| {
        let _ = writeln!(out, "\t{name}:{}{value}", "\t".repeat(tabs));
    };
    line("max_sge", 3, d(b.max_sge));
    line("max_sge_rd", 3, d(b.max_sge_rd));
    line("max_cq", 4, d(b.max_cq));
    line("max_cqe", 3, d(b.max_cqe));
    line("max_mr", 4, d(b.max_mr));
    line("max_pd", 4, d(b.max_pd));
    line("max_qp_rd_atom", 3, d(b.max_qp_rd_atom));
    line("max_ee_rd_atom", 3, d(b.max_ee_rd_atom));
    line("max_res_rd_atom", 2, d(b.max_res_rd_atom));
    line("max_qp_init_rd_atom", 2, d(b.max_qp_init_rd_atom));
    line("max_ee_init_rd_atom", 2, d(b.max_ee_init_rd_atom));
    let _ = writeln!(
        out,
        "\tatomic_cap:\t\t\t{} ({})",
        atomic_cap_str(b.atomic_cap),
        d(b.atomic_cap)
    );
    let mut line = |name: &str, tabs: usize, value: i32| {
        let _ = writeln!(out, "\t{name}:{}{value}", "\t".repeat(tabs));
    };
    line("max_ee", 4, d(b.max_ee));
    line("max_rdd", 3, d(b.max_rdd));
    line("max_mw", 4, d(b.max_mw));
    line("max_raw_ipv6_qp", 2, d(b.max_raw_ipv6_qp));
    line("max_raw_ethy_qp", 2, d(b.max_raw_ethy_qp));
    line("max_mcast_grp", 3, d(b.max_mcast_grp));
    line("max_mcast_qp_attach", 2, d(b.max_mcast_qp_attach));
    line(
        "max_total_mcast_qp_attach",
        1,
        d(b.max_total_mcast_qp_attach),
    );
    line("max_ah", 4, d(b.max_ah));
    line("max_fmr", 3, d(b.max_fmr));
    if b.max_fmr != 0 {
        line("max_map_per_fmr", 2, d(b.max_map_per_fmr));
    }
    line("max_srq", 3, d(b.max_srq));
    if b.max_srq != 0 {
        line("max_srq_wr", 3, d(b.max_srq_wr));
        line("max_srq_sge", 3, d(b.max_srq_sge));
    }
    line("max_pkeys", 3, b.max_pkeys.into());
    line("local_ca_ack_delay", 2, b.local_ca_ack_delay.into());

    out.push_str("\tgeneral_odp_caps:\n");
    flag_lines(out, x.odp_caps.general_caps, flags::ODP_GENERAL, true);
    let t = &x.odp_caps.per_transport_caps;
    for (name, v) in [
        ("rc", t.rc_odp_caps),
        ("uc", t.uc_odp_caps),
        ("ud", t.ud_odp_caps),
        ("xrc", x.xrc_odp_caps),
    ] {
        let _ = writeln!(out, "\t{name}_odp_caps:");
        flags::odp_transport_lines(out, v);
    }
    if x.timestamp_mask != 0 {
        let _ = writeln!(
            out,
            "\tcompletion timestamp_mask:\t\t\t0x{:016x}",
            x.timestamp_mask
        );
    } else {
        out.push_str("\tcompletion_timestamp_mask not supported\n");
    }
    if x.hca_core_clock != 0 {
        let _ = writeln!(out, "\thca_core_clock:\t\t\t{}kHZ", x.hca_core_clock);
    } else {
        out.push_str("\tcore clock not supported\n");
    }
    if x.raw_packet_caps != 0 {
        out.push_str("\traw packet caps:\n");
        flag_lines(out, x.raw_packet_caps.into(), flags::RAW_PACKET, false);
    }
    let _ = writeln!(
        out,
        "\tdevice_cap_flags_ex:\t\t0x{:X}",
        x.device_cap_flags_ex
    );
    flag_lines(
        out,
        x.device_cap_flags_ex & 0xffff_ffff_0000_0000,
        flags::DEVICE_CAP_EX,
        true,
    );
    // TSO, packet pacing and the RSS hash function/fields are not in the
    // kernel's core reply: only mlx5 returns them, in its driver data. For
    // the providers compiled in here (rxe, siw) they are zero, exactly what
    // libibverbs prints for these devices.
    out.push_str("\ttso_caps:\n\t\tmax_tso:\t\t\t0\n");
    let r = &x.rss_caps;
    out.push_str("\trss_caps:\n");
    let _ = writeln!(
        out,
        "\t\tmax_rwq_indirection_tables:\t\t\t{}",
        r.max_rwq_indirection_tables
    );
    let _ = writeln!(
        out,
        "\t\tmax_rwq_indirection_table_size:\t\t\t{}",
        r.max_rwq_indirection_table_size
    );
    out.push_str("\t\trx_hash_function:\t\t\t\t0x0\n\t\trx_hash_fields_mask:\t\t\t\t0x0\n");
    if r.supported_qpts != 0 {
        out.push_str("\t\tsupported_qp:\n");
        flag_lines(out, r.supported_qpts.into(), flags::QPT_RAW_UD, true);
    }
    let _ = writeln!(out, "\tmax_wq_type_rq:\t\t\t{}", x.max_wq_type_rq);
    out.push_str(
        "\tpacket_pacing_caps:\n\t\tqp_rate_limit_min:\t0kbps\n\t\tqp_rate_limit_max:\t0kbps\n",
    );
    let tm = &x.tm_caps;
    if tm.max_num_tags != 0 {
        let _ = writeln!(out, "\tmax_rndv_hdr_size:\t\t{}", tm.max_rndv_hdr_size);
        let _ = writeln!(out, "\tmax_num_tags:\t\t\t{}", tm.max_num_tags);
        let _ = writeln!(out, "\tmax_ops:\t\t\t{}", tm.max_ops);
        let _ = writeln!(out, "\tmax_sge:\t\t\t{}", tm.max_sge);
        out.push_str("\tflags:\n");
        flag_lines(out, tm.flags.into(), flags::TM, false);
    } else {
        out.push_str("\ttag matching not supported\n");
    }
    let cq = &x.cq_moderation_caps;
    if cq.max_cq_moderation_count != 0 && cq.max_cq_moderation_period != 0 {
        out.push_str("\n\tcq moderation caps:\n");
        let _ = writeln!(out, "\t\tmax_cq_count:\t{}", cq.max_cq_moderation_count);
        let _ = writeln!(
            out,
            "\t\tmax_cq_period:\t{} us\n",
            cq.max_cq_moderation_period
        );
    }
    if x.max_dm_size != 0 {
        let _ = writeln!(
            out,
            "\tmaximum available device memory:\t{}Bytes\n",
            x.max_dm_size
        );
    }
    let _ = writeln!(out, "\tnum_comp_vectors:\t\t{}", num_comp_vectors as i32);
}

/// One port's section.
fn port_section(
    out: &mut String,
    id: &HcaId<'_>,
    ctx: &Context,
    port: u8,
    verbose: bool,
) -> Result<(), Failure> {
    let p = ctx.query_port(port).map_err(|e| Failure {
        msg: format!("Failed to query port {port} props"),
        rc: e.raw_os_error(),
    })?;
    let _ = writeln!(out, "\t\tport:\t{port}");
    let _ = writeln!(
        out,
        "\t\t\tstate:\t\t\t{} ({})",
        port_state_str(p.state),
        p.state
    );
    let _ = writeln!(
        out,
        "\t\t\tmax_mtu:\t\t{} ({})",
        mtu_str(p.max_mtu as u8),
        p.max_mtu as u8
    );
    let _ = writeln!(
        out,
        "\t\t\tactive_mtu:\t\t{} ({})",
        mtu_str(p.active_mtu as u8),
        p.active_mtu as u8
    );
    let _ = writeln!(out, "\t\t\tsm_lid:\t\t\t{}", p.sm_lid);
    let _ = writeln!(out, "\t\t\tport_lid:\t\t{}", p.lid);
    let _ = writeln!(out, "\t\t\tport_lmc:\t\t0x{:02x}", p.lmc);
    let _ = writeln!(out, "\t\t\tlink_layer:\t\t{}", link_layer_str(p.link_layer));
    if verbose {
        let _ = writeln!(out, "\t\t\tmax_msg_sz:\t\t0x{:x}", p.max_msg_sz);
        let _ = writeln!(out, "\t\t\tport_cap_flags:\t\t0x{:08x}", p.port_cap_flags);
        let _ = writeln!(out, "\t\t\tport_cap_flags2:\t0x{:04x}", p.port_cap_flags2);
        let _ = writeln!(
            out,
            "\t\t\tmax_vl_num:\t\t{} ({})",
            vl_str(p.max_vl_num),
            p.max_vl_num
        );
        let _ = writeln!(out, "\t\t\tbad_pkey_cntr:\t\t0x{:x}", p.bad_pkey_cntr);
        let _ = writeln!(out, "\t\t\tqkey_viol_cntr:\t\t0x{:x}", p.qkey_viol_cntr);
        let _ = writeln!(out, "\t\t\tsm_sl:\t\t\t{}", p.sm_sl);
        let _ = writeln!(out, "\t\t\tpkey_tbl_len:\t\t{}", p.pkey_tbl_len);
        let _ = writeln!(out, "\t\t\tgid_tbl_len:\t\t{}", p.gid_tbl_len as i32);
        let _ = writeln!(out, "\t\t\tsubnet_timeout:\t\t{}", p.subnet_timeout);
        let _ = writeln!(out, "\t\t\tinit_type_reply:\t{}", p.init_type_reply);
        let _ = writeln!(
            out,
            "\t\t\tactive_width:\t\t{}X ({})",
            width_str(p.active_width),
            p.active_width
        );
        let _ = writeln!(
            out,
            "\t\t\tactive_speed:\t\t{} ({})",
            speed_str(p.active_speed),
            p.active_speed
        );
        if id.transport == 0 {
            let _ = writeln!(
                out,
                "\t\t\tphys_state:\t\t{} ({})",
                port_phy_state_str(p.phys_state),
                p.phys_state
            );
        }
        for i in 0..p.gid_tbl_len {
            let gid = ctx.query_gid(port, i).map_err(|_| Failure {
                msg: format!("Failed to query gid to port {port}, index {i}"),
                rc: -1,
            })?;
            // ibv_devinfo skips GIDs whose interface id (last 8 bytes) is 0.
            if gid[8..].iter().all(|&x| x == 0) {
                continue;
            }
            gid_line(out, i, &gid, sysfs_gid_type(ctx, port, i), p.link_layer);
        }
    }
    out.push('\n');
    Ok(())
}

/// `ibv_query_gid_type` as `ibv_devinfo` uses it: IB and RoCE v1 GIDs are
/// type 0, RoCE v2 type 1, an empty slot type 0, and a failed query 2.
fn sysfs_gid_type(ctx: &Context, port: u8, index: u32) -> u8 {
    match ctx.query_gid_ex(port, index) {
        Ok(e) if e.gid_type <= 1 => 0,
        Ok(_) => 1,
        Err(e) if e.errno() == Some(verbs::error::Errno::NODATA) => 0,
        Err(_) => 2,
    }
}
