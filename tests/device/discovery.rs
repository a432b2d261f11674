//! Discovery against the real kernel (VM): netlink must find the devices
//! with their driver ids, so siw is matched, and the device files open.

use verbs::discovery::{DiscoveryConfig, NodeType, Source};
use verbs::ProviderKind;

fn name(var: &str, default: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| default.to_owned())
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn netlink_lists_rxe_and_siw_with_driver_ids() {
    let list = DiscoveryConfig::from_env().devices().unwrap();
    assert_eq!(
        list.source(),
        Source::Netlink,
        "the VM kernel has RDMA netlink"
    );
    let rxe = list.by_name(&name("VERBS_TEST_RXE", "rxe0")).unwrap();
    assert_eq!(rxe.provider(), Some(ProviderKind::Rxe));
    assert_eq!(rxe.driver_id(), Some(verbs::RdmaDriverId::RXE));
    assert_eq!(rxe.node_type(), NodeType::Ca);
    assert!(rxe.index().is_some() && rxe.guid() != 0);
    let siw = list.by_name(&name("VERBS_TEST_SIW", "siw0")).unwrap();
    assert_eq!(
        siw.provider(),
        Some(ProviderKind::Siw),
        "siw is matched by driver id only"
    );
    assert_eq!(siw.node_type(), NodeType::Rnic);
    for dev in [rxe, siw] {
        drop(dev.open_file().unwrap());
        // Netlink and sysfs agree on what they both report.
        let guid = dev.sysfs_attr("node_guid").unwrap();
        assert_eq!(verbs::discovery::sysfs::parse_guid(&guid), Some(dev.guid()));
        let uverbs = verbs::discovery::sysfs::read_attr(&dev.sysfs_path().join("ibdev")).unwrap();
        assert_eq!(uverbs, dev.name());
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn sysfs_only_finds_rxe_but_cannot_match_siw() {
    let list = DiscoveryConfig::from_env()
        .netlink(false)
        .devices()
        .unwrap();
    assert_eq!(list.source(), Source::Sysfs);
    assert!((3..=6).contains(&list.kernel_abi_version()));
    let rxe = list.by_name(&name("VERBS_TEST_RXE", "rxe0")).unwrap();
    assert_eq!(rxe.provider(), Some(ProviderKind::Rxe));
    let siw = list.by_name(&name("VERBS_TEST_SIW", "siw0")).unwrap();
    assert_eq!(siw.provider(), None);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn copy_on_fork_is_answered_by_the_kernel() {
    // Linux >= 5.13 reports it; the VM's kernel is newer.
    assert!(verbs::discovery::copy_on_fork().unwrap());
}
