//! Context open and the device queries (ibv_query_device/_port/_gid/_pkey),
//! checked against what the kernel independently reports in sysfs.

use super::common::{rxe_name, siw_name, sysfs_dev};
use verbs::discovery::devices;
use verbs::{Context, ErrorKind};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    let dev = list.by_name(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    Context::open(dev).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn sysfs(dev: &str, rel: &str) -> String {
    let p = sysfs_dev(dev).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())).trim().to_owned()
}

fn guid_str(g: u64) -> String {
    format!("{:04x}:{:04x}:{:04x}:{:04x}", g >> 48, (g >> 32) & 0xffff, (g >> 16) & 0xffff, g & 0xffff)
}

fn gid_str(g: &[u8; 16]) -> String {
    g.chunks(2).map(|c| format!("{:02x}{:02x}", c[0], c[1])).collect::<Vec<_>>().join(":")
}

fn check_device(name: &str) {
    let ctx = open(name);
    assert_eq!(ctx.name(), name);
    assert!(ctx.num_comp_vectors() >= 1);
    let attr = ctx.query_device().expect("ibv_query_device_ex");
    assert_eq!(guid_str(attr.node_guid()), sysfs(name, "node_guid"));
    assert_eq!(guid_str(attr.sys_image_guid()), sysfs(name, "sys_image_guid"));
    // Soft devices leave sysfs fw_ver empty (raw version 0), which the
    // providers format as 0.0.0, as ibv_devinfo shows.
    let sys_fw = sysfs(name, "fw_ver");
    let expect_fw = if sys_fw.is_empty() { "0.0.0" } else { sys_fw.as_str() };
    assert_eq!(attr.fw_ver.as_str(), expect_fw);
    assert!(attr.base().max_qp > 0 && attr.base().max_cqe > 0 && attr.base().max_mr_size > 0);
    let nports = attr.base().phys_port_cnt;
    assert_eq!(nports, 1, "soft devices have one port");

    let port = ctx.query_port(1).expect("ibv_query_port");
    // sysfs: "4: ACTIVE", "5: LinkUp"
    let state: u8 = sysfs(name, "ports/1/state").split(':').next().unwrap().parse().unwrap();
    assert_eq!(port.state, state);
    let phys: u8 = sysfs(name, "ports/1/phys_state").split(':').next().unwrap().parse().unwrap();
    assert_eq!(port.phys_state, phys);
    assert_eq!(port.link_layer, 2, "Ethernet link layer");
    let cap_mask = u32::from_str_radix(sysfs(name, "ports/1/cap_mask").trim_start_matches("0x"), 16).unwrap();
    assert_eq!(port.port_cap_flags, cap_mask);

    // Every GID the kernel lists in sysfs comes back from the ioctl, with its type.
    let mut table = [verbs::GidEntry::default(); 16];
    let n = ctx.query_gid_table(&mut table).expect("ibv_query_gid_table");
    assert!(n >= 1);
    for e in &table[..n] {
        assert_eq!(e.port_num, 1);
        let s = sysfs(name, &format!("ports/1/gids/{}", e.gid_index));
        assert_eq!(gid_str(&e.gid), s, "GID {}", e.gid_index);
        let one = ctx.query_gid_ex(1, e.gid_index).expect("ibv_query_gid_ex");
        assert_eq!(one, *e);
        assert_eq!(ctx.query_gid(1, e.gid_index).unwrap(), e.gid);
        let ty = sysfs(name, &format!("ports/1/gid_attrs/types/{}", e.gid_index));
        let expect = match ty.as_str() {
            "RoCE v2" => 2,
            "IB/RoCE v1" => if port.link_layer == 2 { 1 } else { 0 },
            other => panic!("unknown gid type {other}"),
        };
        // iWARP GIDs are reported as IB type by the kernel.
        if !name.starts_with("siw") {
            assert_eq!(e.gid_type, expect, "type of GID {}", e.gid_index);
        }
    }

    // Bad arguments: port 0 and a port past the end are refused by the kernel
    // and the error names the verb.
    for bad in [0u8, 2, 255] {
        let e = ctx.query_port(bad).expect_err("port out of range");
        assert_eq!(e.verb(), "ibv_query_port");
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    }
    let e = ctx.query_gid_ex(1, port.gid_tbl_len + 5).expect_err("GID index out of range");
    assert_eq!(e.verb(), "ibv_query_gid_ex");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_queries_match_sysfs() {
    let name = rxe_name();
    check_device(&name);
    let ctx = open(&name);
    // rxe has a P_Key table of one entry, the default 0xffff.
    assert_eq!(ctx.query_pkey(1, 0).unwrap(), u16::from_str_radix(sysfs(&name, "ports/1/pkeys/0").trim_start_matches("0x"), 16).unwrap());
    let e = ctx.query_pkey(1, 1000).expect_err("P_Key index past the table");
    assert_eq!(e.verb(), "ibv_query_pkey");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_queries_match_sysfs() {
    let name = siw_name();
    check_device(&name);
    let ctx = open(&name);
    // siw is iWARP: no P_Key table at all.
    assert_eq!(ctx.query_port(1).unwrap().pkey_tbl_len, 0);
    assert!(ctx.query_pkey(1, 0).is_err());
    // siw's context reply carries a device id.
    let _ = ctx.provider_dev_id();
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn contexts_are_independent_and_close_cleanly() {
    let name = rxe_name();
    let a = open(&name);
    let b = open(&name);
    assert_eq!(a.query_device().unwrap().node_guid(), b.query_device().unwrap().node_guid());
    drop(a);
    // The second context is unaffected by closing the first.
    assert_eq!(b.query_port(1).unwrap().state, 4);
}
