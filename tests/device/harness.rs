//! Harness-level device tests: the devices the other device tests rely on are there and usable.
//! They read sysfs (`$SYSFS_PATH`, else /sys, as the library does) and /dev directly (not this crate's discovery code), so a
//! failure here points at the test environment, not at the library.

use super::common::{
    gid_index, read_attr, rxe_name, siw_name, sys_infiniband_verbs, sysfs_dev, uverbs_of,
};
use std::os::unix::fs::{FileTypeExt, MetadataExt};

/// `node_type` and port 1 `state` of a device, as sysfs prints them.
fn check_registered_and_active(dev: &str, node_type: &str) {
    let sys = sysfs_dev(dev);
    assert_eq!(read_attr(sys.join("node_type")), node_type, "{dev} node_type");
    assert_eq!(read_attr(sys.join("ports/1/state")), "4: ACTIVE", "{dev} port 1 state");
    assert_eq!(read_attr(sys.join("ports/1/phys_state")), "5: LinkUp", "{dev} port 1 phys_state");
}

/// The device's uverbs char device exists in /dev/infiniband with the dev_t sysfs names,
/// and opens read-write.
fn check_uverbs_node(dev: &str) {
    let uverbs = uverbs_of(dev);
    let want = read_attr(sys_infiniband_verbs().join(&uverbs).join("dev")); // "231:192"
    let node = format!("/dev/infiniband/{uverbs}");
    let meta = std::fs::metadata(&node).unwrap_or_else(|e| panic!("{node}: {e}"));
    assert!(meta.file_type().is_char_device(), "{node} is not a character device");
    // glibc's dev_t encoding (gnu_dev_major/gnu_dev_minor)
    let rdev = meta.rdev();
    let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
    let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
    assert_eq!(format!("{major}:{minor}"), want, "{node} device number");
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&node)
        .unwrap_or_else(|e| panic!("open {node} read-write: {e}"));
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_registered_and_port_active() {
    // rxe is an InfiniBand-transport CA (RoCE)
    check_registered_and_active(&rxe_name(), "1: CA");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_registered_and_port_active() {
    // siw is an iWARP RNIC
    check_registered_and_active(&siw_name(), "4: RNIC");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_uverbs_char_device() {
    check_uverbs_node(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_uverbs_char_device() {
    check_uverbs_node(&siw_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn uverbs_abi_version_is_6() {
    // IB_USER_VERBS_ABI_VERSION, the write() ABI every uverbs device speaks
    assert_eq!(read_attr(sys_infiniband_verbs().join("abi_version")), "6");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_gid_index_is_roce_v2_ipv4() {
    let dev = rxe_name();
    let idx = gid_index();
    let port = sysfs_dev(&dev).join("ports/1");
    let gid = read_attr(port.join(format!("gids/{idx}")));
    let ty = read_attr(port.join(format!("gid_attrs/types/{idx}")));
    assert_eq!(ty, "RoCE v2", "{dev} GID type at index {idx}");
    // IPv4-mapped IPv6 address: ::ffff:a.b.c.d
    let v4 = gid
        .strip_prefix("0000:0000:0000:0000:0000:ffff:")
        .unwrap_or_else(|| panic!("{dev} GID {idx} = {gid} is not IPv4-mapped"));
    // when the harness told us the address (VM: rxe0's netdev), the GID must carry it
    if let Ok(ip) = std::env::var("VM_RXE_IP") {
        let octets: Vec<u8> = ip.split('.').map(|o| o.parse().expect("VM_RXE_IP")).collect();
        let want = format!(
            "{:02x}{:02x}:{:02x}{:02x}",
            octets[0], octets[1], octets[2], octets[3]
        );
        assert_eq!(v4, want, "{dev} GID {idx} vs VM_RXE_IP={ip}");
    }
}
