//! The public sysfs parsers: real formats, edge cases, and garbage.

use std::ffi::OsString;
use std::path::PathBuf;
use verbs::discovery::sysfs::*;
use verbs::discovery::NodeType;

#[test]
fn guid_parses_as_sysfs_prints_it() {
    assert_eq!(
        parse_guid("0002:c903:0003:1234"),
        Some(0x0002_c903_0003_1234)
    );
    assert_eq!(
        parse_guid("5054:00ff:fe12:3456\n"),
        Some(0x5054_00ff_fe12_3456)
    );
    assert_eq!(
        parse_guid("2:C903:3:1234"),
        Some(0x0002_c903_0003_1234),
        "%hx accepts short, upper-case groups"
    );
    assert_eq!(parse_guid("ffff:ffff:ffff:ffff"), Some(u64::MAX));
    for bad in [
        "",
        "0002:c903:0003",
        "0002:c903:0003:1234:5",
        "00002:c903:0003:1234",
        "0002:c9g3:0003:1234",
        "::::",
        "0002:c903::1234",
    ] {
        assert_eq!(parse_guid(bad), None, "{bad:?}");
    }
    assert_eq!(format_guid(0x0002_c903_0003_1234), "0002:c903:0003:1234");
    assert_eq!(
        parse_guid(&format_guid(0xdead_beef_0001_0203)),
        Some(0xdead_beef_0001_0203)
    );
}

#[test]
fn abi_version_dev_t_and_node_type() {
    assert_eq!(parse_abi_version("6\n"), Some(6));
    assert_eq!(parse_abi_version(" 2 "), Some(2));
    for bad in ["", "x", "-1", "6a", "99999999999"] {
        assert_eq!(parse_abi_version(bad), None, "{bad:?}");
    }
    assert_eq!(parse_dev_t("231:192\n"), Some((231, 192)));
    for bad in ["231", "231:", ":192", "a:1", "1:2:3", "-1:2"] {
        assert_eq!(parse_dev_t(bad), None, "{bad:?}");
    }
    assert_eq!(parse_node_type("1: CA"), Some(1));
    assert_eq!(parse_node_type("4: RNIC\n"), Some(4));
    assert_eq!(parse_node_type("CA"), None);
    assert_eq!(NodeType::from_kernel(4), NodeType::Rnic);
    assert_eq!(NodeType::from_kernel(7).as_raw(), 7);
    assert_eq!(NodeType::from_kernel(0), NodeType::Unknown);
    assert_eq!(NodeType::from_kernel(8).as_str(), "unknown");
    assert_eq!(NodeType::Rnic.transport().as_raw(), 1);
}

#[test]
fn sysfs_path_env_value_is_trimmed_like_rdma_core() {
    assert_eq!(sysfs_root_from(None), PathBuf::from("/sys"));
    assert_eq!(
        sysfs_root_from(Some(OsString::from("/tmp/fake//"))),
        PathBuf::from("/tmp/fake")
    );
    assert_eq!(
        sysfs_root_from(Some(OsString::from("/"))),
        PathBuf::from("/")
    );
    assert_eq!(uverbs_index("uverbs12"), Some(12));
    assert_eq!(uverbs_index("umad0"), None);
}

/// A small deterministic generator for garbage inputs.
pub(crate) fn xorshift(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn parsers_never_panic_on_garbage() {
    let alphabet = b"0123456789abcdefABCDEF:: \n\t-xg\xff";
    let mut seed = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..20_000 {
        let len = (xorshift(&mut seed) % 24) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| alphabet[(xorshift(&mut seed) % alphabet.len() as u64) as usize])
            .collect();
        let s = String::from_utf8_lossy(&bytes);
        if let Some(g) = parse_guid(&s) {
            assert_eq!(s.trim().split(':').count(), 4, "{s:?} -> {g:x}");
        }
        let _ = parse_abi_version(&s);
        let _ = parse_dev_t(&s);
        let _ = parse_node_type(&s);
    }
}

#[test]
fn pci_modalias_gives_vendor_and_device() {
    // A ConnectX-6 Dx as the kernel writes it (and the simulator's fixture).
    let s = "pci:v000015B3d0000101Dsv000015B3sd00000016bc02sc00i00\n";
    assert_eq!(parse_pci_modalias(s), Some((0x15b3, 0x101d)));
    assert_eq!(parse_pci_modalias("pci:v000015b3d0000a2d6sv*"), Some((0x15b3, 0xa2d6)));
    assert_eq!(parse_pci_modalias("virtio:d00000001v00001AF4"), None, "not PCI");
    assert_eq!(parse_pci_modalias("pci:v000015B3"), None, "cut short");
    assert_eq!(parse_pci_modalias("pci:v000115B3d0000101D"), None, "vendor wider than 16 bits");
    assert_eq!(parse_pci_modalias("pci:vXXXXXXXXd0000101D"), None);
}
