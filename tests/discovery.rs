//! Device discovery on fixture sysfs trees (tests/fixtures/<case>/{sys,dev}),
//! without any RDMA device: every message libibverbs users know is
//! asserted by error kind, warning value and text (key phrase + fix).
#![allow(unsafe_code)] // only in `children`: `pre_exec` closures, see there.

#[path = "discovery/children.rs"]
mod children;
// builds netlink messages with the raw ABI constants (`verbs::abi::netlink`)
#[cfg(feature = "internals")]
#[path = "discovery/netlink_parse.rs"]
mod netlink_parse;
#[path = "discovery/null_device.rs"]
mod null_device;
#[path = "discovery/sysfs_parse.rs"]
mod sysfs_parse;

use std::path::{Path, PathBuf};
use verbs::discovery::{DeviceList, DiscoveryConfig, NodeType, Source, TransportType, Warning};
use verbs::log::{LogLevel, Logger};
use verbs::ProviderKind;
use verbs::{Error, ErrorKind};

pub(crate) fn fixture_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(case)
}

/// A configuration reading only the fixture: no netlink (the host's real
/// devices would answer), no memlock check (depends on the runner).
pub(crate) fn fixture(case: &str) -> DiscoveryConfig {
    let dir = fixture_dir(case);
    DiscoveryConfig::from_env()
        .sysfs_root(dir.join("sys"))
        .dev_dir(dir.join("dev/infiniband"))
        .netlink(false)
        .memlock_check(false)
}

fn list(case: &str, log: &Logger) -> DeviceList {
    fixture(case)
        .devices_with_logger(log)
        .expect("listing the fixture")
}

fn list_err(case: &str, log: &Logger) -> Error {
    fixture(case)
        .devices_with_logger(log)
        .expect_err("the fixture must fail")
}

#[test]
fn rxe_fixture_lists_rxe0_matched_by_name() {
    let log = Logger::memory(LogLevel::Debug, false);
    let l = list("rxe", &log);
    assert_eq!(l.source(), Source::Sysfs);
    assert_eq!(l.kernel_abi_version(), 6);
    assert_eq!(l.len(), 1);
    assert!(l.warnings().is_empty(), "{:?}", l.warnings());
    let d = l.by_name("rxe0").unwrap();
    assert_eq!(d.name(), "rxe0");
    assert_eq!(d.dev_name(), "uverbs0");
    assert_eq!(d.abi_version(), 2);
    assert_eq!(d.dev_t(), (231, 192));
    assert_eq!(d.provider(), Some(ProviderKind::Rxe));
    assert_eq!(d.driver_id(), None, "sysfs cannot know the driver id");
    assert_eq!(d.index(), None);
    assert_eq!(d.guid(), 0x5054_00ff_fe12_3456);
    assert_eq!(
        d.guid_be().to_ne_bytes(),
        [0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56]
    );
    assert_eq!(d.sys_image_guid(), Some(0x5054_00ff_fe12_3456));
    assert_eq!(d.node_type(), NodeType::Ca);
    assert_eq!(d.node_type().as_str(), "InfiniBand channel adapter");
    assert_eq!(d.transport(), TransportType::Ib);
    assert_eq!(d.num_ports(), Some(1));
    assert_eq!(d.fw_version(), None);
    assert_eq!(
        d.sysfs_attr("ports/1/link_layer").as_deref(),
        Some("Ethernet")
    );
    assert_eq!(d.sysfs_attr("ports/1/state").as_deref(), Some("4: ACTIVE"));
    assert_eq!(
        d.uverbs_path(),
        fixture_dir("rxe").join("dev/infiniband/uverbs0")
    );
    assert_eq!(
        d.ibdev_path(),
        fixture_dir("rxe").join("sys/class/infiniband/rxe0")
    );
    assert_eq!(
        d.sysfs_path(),
        fixture_dir("rxe").join("sys/class/infiniband_verbs/uverbs0")
    );
    assert!(
        log.captured()
            .contains("libibverbs: found rxe0 (uverbs0, abi 2"),
        "{}",
        log.captured()
    );
    // The fixture's device file is a plain file: opening it exercises the
    // success path of the open (O_RDWR | O_CLOEXEC).
    let fd = d.open_file().expect("open the fixture device file");
    let fl = rustix::io::fcntl_getfd(&fd).unwrap();
    assert!(fl.contains(rustix::io::FdFlags::CLOEXEC));
    // ... but it is no uverbs character device, so no context is made on
    // it (its zero "responses" would name fd 0 as the async event file).
    let e = verbs::Context::open(d).unwrap_err();
    assert_eq!((e.kind(), e.verb()), (ErrorKind::NotUverbsDevice, "ibv_open_device"), "{e}");
    let e = l.by_name("mlx4_0").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoDevice);
}

#[test]
fn siw_without_netlink_has_no_provider_and_says_so() {
    let log = Logger::memory(LogLevel::Debug, false);
    let l = list("siw", &log);
    let d = l.by_name("siw0").unwrap();
    assert_eq!(d.provider(), None, "siw is matched only by driver id");
    assert_eq!(d.node_type(), NodeType::Rnic);
    assert_eq!(d.transport(), TransportType::Iwarp);
    assert_eq!(
        l.warnings(),
        [Warning::NoProvider {
            device: "siw0".into(),
            driver_id: None
        }]
    );
    let text = l.warnings()[0].to_string();
    assert!(
        text.starts_with("Warning: no userspace device-specific driver found for siw0"),
        "{text}"
    );
    assert!(text.contains("Fix:"), "{text}");
    assert!(log
        .captured()
        .contains("libibverbs: Warning: no userspace device-specific driver found for siw0"));

    let e = d.open_file().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoProvider);
    assert_eq!(e.verb(), "ibv_open_device");
    let shown = e.to_string();
    assert!(
        shown.starts_with("ibv_open_device: no userspace device-specific driver"),
        "{shown}"
    );
}

#[test]
fn no_provider_warning_reaches_stderr_only_with_ibv_show_warnings() {
    let quiet = Logger::memory(LogLevel::None, false);
    assert_eq!(list("unknown", &quiet).warnings().len(), 1);
    assert_eq!(quiet.captured(), "");
    let shown = Logger::memory(LogLevel::None, true);
    list("unknown", &shown);
    assert!(shown
        .captured()
        .starts_with("libibverbs: Warning: no userspace device-specific driver found for mlx5_0"));
}

#[test]
fn unknown_device_is_listed_without_provider() {
    let l = list("unknown", &Logger::memory(LogLevel::None, false));
    let d = l.by_name("mlx5_0").unwrap();
    assert_eq!(d.provider(), None);
    assert_eq!(d.abi_version(), 1);
    assert_eq!(d.guid(), 0x0002_c903_0003_1234);
    assert_eq!(d.fw_version(), Some("16.35.2000 (MT_0000000008)"));
    assert_eq!(
        l.warnings(),
        [Warning::NoProvider {
            device: "mlx5_0".into(),
            driver_id: None
        }]
    );
    assert_eq!(d.open_file().unwrap_err().kind(), ErrorKind::NoProvider);
}

#[test]
fn multi_fixture_sorts_by_uverbs_number_and_skips_broken_entries() {
    let log = Logger::memory(LogLevel::Debug, false);
    let l = list("multi", &log);
    let names: Vec<_> = l
        .iter()
        .map(|d| (d.dev_name(), d.name(), d.provider()))
        .collect();
    assert_eq!(
        names,
        [
            ("uverbs0", "siw0", None),
            ("uverbs1", "rxe0", Some(ProviderKind::Rxe)),
            ("uverbs10", "mlx5_0", None),
        ]
    );
    // uverbs2 (rxe1) has no /dev file; uverbs3 has no ibdev attribute.
    let missing = fixture_dir("multi").join("dev/infiniband/uverbs2");
    assert!(l.warnings().contains(&Warning::NoDeviceFile {
        device: "rxe1".into(),
        path: missing
    }));
    assert!(
        log.captured().contains("skipping uverbs3: NoIbdev"),
        "{}",
        log.captured()
    );
    let owned: Vec<String> = l.into_iter().map(|d| d.name().to_owned()).collect();
    assert_eq!(owned, ["siw0", "rxe0", "mlx5_0"]);
}

#[test]
fn provider_abi_out_of_range_is_a_warning_always_shown() {
    let log = Logger::memory(LogLevel::None, false);
    let l = list("rxe_new_abi", &log);
    assert_eq!(l.by_name("rxe0").unwrap().provider(), None);
    let ibdev_path = fixture_dir("rxe_new_abi").join("sys/class/infiniband/rxe0");
    assert_eq!(
        l.warnings(),
        [Warning::ProviderAbi {
            provider: ProviderKind::Rxe,
            abi: 7,
            min: 1,
            max: 2,
            ibdev_path
        }]
    );
    let text = l.warnings()[0].to_string();
    assert!(
        text.contains("Driver rxe does not support the kernel ABI of 7 (supports 1 to 2)"),
        "{text}"
    );
    assert!(log
        .captured()
        .contains("libibverbs: Warning: Driver rxe does not support"));
}

fn assert_no_abi_file(e: Error) {
    assert_eq!(e.kind(), ErrorKind::NoAbiFile);
    assert_eq!(e.verb(), "ibv_get_device_list");
    assert_eq!(e.raw_os_error(), libc::ENODEV);
    let text = e.to_string();
    assert!(text.contains("couldn't read uverbs ABI version"), "{text}");
    assert!(
        text.contains("RDMA kernel modules") && text.contains("modprobe ib_uverbs"),
        "{text}"
    );
}

#[test]
fn missing_abi_version_file_is_fatal_with_the_fix() {
    let log = Logger::memory(LogLevel::Err, false);
    assert_no_abi_file(list_err("no_abi_file", &log));
    assert!(
        log.captured()
            .contains("Fatal: couldn't read uverbs ABI version"),
        "{}",
        log.captured()
    );
}

#[test]
fn missing_class_directory_means_modules_not_loaded() {
    assert_no_abi_file(list_err(
        "no_modules",
        &Logger::memory(LogLevel::None, false),
    ));
    // A sysfs root that does not exist at all behaves the same.
    let e = fixture("no_modules")
        .sysfs_root(fixture_dir("no_such_case"))
        .devices_with_logger(&Logger::memory(LogLevel::None, false))
        .unwrap_err();
    assert_no_abi_file(e);
}

#[test]
fn kernel_abi_outside_3_to_6_is_fatal() {
    for (case, kernel) in [("abi_old", 2), ("abi_new", 99)] {
        let log = Logger::memory(LogLevel::None, false);
        let e = list_err(case, &log);
        assert_eq!(
            e.kind(),
            ErrorKind::AbiMismatch {
                kernel,
                min: 3,
                max: 6
            }
        );
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "kernel ABI version {kernel} doesn't match library version"
            )),
            "{text}"
        );
        assert!(text.contains("3..=6"), "{text}");
        let printed = format!(
            "libibverbs: Fatal: kernel ABI version {kernel} doesn't match library version 6.\n"
        );
        assert_eq!(log.captured(), printed);
    }
}

#[test]
fn empty_class_directory_is_an_empty_list() {
    let l = list("empty", &Logger::memory(LogLevel::None, false));
    assert!(l.is_empty());
    assert!(l.warnings().is_empty());
}

/// A fresh directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("verbs-discovery-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Self(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn missing_device_file_leaves_the_device_out_with_the_fix() {
    let dev = TempDir::new("nodev");
    let l = fixture("rxe")
        .dev_dir(&dev.0)
        .devices_with_logger(&Logger::memory(LogLevel::None, false))
        .unwrap();
    assert!(l.is_empty());
    let path = dev.0.join("uverbs0");
    assert_eq!(
        l.warnings(),
        [Warning::NoDeviceFile {
            device: "rxe0".into(),
            path: path.clone()
        }]
    );
    let text = l.warnings()[0].to_string();
    assert!(
        text.contains(&format!(
            "device rxe0 has no device file {}",
            path.display()
        )),
        "{text}"
    );
    assert!(text.contains("/dev/infiniband through"), "{text}");
}

#[test]
fn device_file_removed_after_listing_is_no_device() {
    let dev = TempDir::new("gone");
    std::fs::write(dev.0.join("uverbs0"), b"").unwrap();
    let l = fixture("rxe")
        .dev_dir(&dev.0)
        .devices_with_logger(&Logger::memory(LogLevel::None, false))
        .unwrap();
    std::fs::remove_file(dev.0.join("uverbs0")).unwrap();
    let e = l.by_name("rxe0").unwrap().open_file().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoDevice);
    assert_eq!(e.errno(), Some(rustix::io::Errno::NOENT));
}

/// The simulated ConnectX's sysfs tree (written by `verbs-simd --sysfs-only`;
/// `sim/src/fixture.rs` checks that this copy is what it writes): listed
/// with Mellanox's vendor and the ConnectX-6 Dx device id, its RoCE port and
/// GIDs, and `/dev/null`'s number as the uverbs device.
#[test]
fn simulated_connectx_fixture_is_listed_as_mlx5() {
    let log = Logger::memory(LogLevel::Debug, false);
    let l = list("mlx5", &log);
    assert_eq!(l.source(), Source::Sysfs);
    assert_eq!(l.len(), 1);
    let d = l.by_name("mlx5_0").unwrap();
    assert_eq!(d.dev_name(), "uverbs0");
    assert_eq!(d.abi_version(), 1, "mlx5's uverbs ABI");
    assert_eq!(d.dev_t(), (1, 3), "the shim opens /dev/null in its place");
    assert_eq!(d.guid(), 0x0c42_a103_00b1_5e00);
    assert_eq!(d.node_type(), NodeType::Ca);
    assert_eq!(d.transport(), TransportType::Ib);
    assert_eq!(d.num_ports(), Some(1));
    assert_eq!(d.fw_version(), Some("22.36.1010"));
    assert_eq!(d.sysfs_attr("device/vendor").as_deref(), Some("0x15b3"));
    assert_eq!(d.sysfs_attr("device/device").as_deref(), Some("0x101d"));
    assert!(d.sysfs_attr("device/modalias").unwrap().starts_with("pci:v000015B3d0000101Dsv"));
    assert_eq!(d.sysfs_attr("ports/1/link_layer").as_deref(), Some("Ethernet"));
    assert_eq!(d.sysfs_attr("ports/1/state").as_deref(), Some("4: ACTIVE"));
    assert_eq!(d.sysfs_attr("ports/1/gids/3").as_deref(), Some("0000:0000:0000:0000:0000:ffff:0afb:0001"));
    assert_eq!(d.sysfs_attr("ports/1/gid_attrs/types/3").as_deref(), Some("RoCE v2"));
    // Until a compiled-in provider matches mlx5, the device is listed with
    // no provider and a warning that names it.
    if d.provider().is_none() {
        assert!(
            l.warnings().iter().any(|w| format!("{w:?}").contains("mlx5_0")),
            "{:?}",
            l.warnings()
        );
    }
}
