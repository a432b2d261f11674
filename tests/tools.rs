//! Host tests of the command-line tools: on a machine without RDMA devices
//! they say so as rdma-core's tools do and fail.

use std::path::Path;
use std::process::{Command, Output};

const DEVINFO: &str = env!("CARGO_BIN_EXE_verbs-devinfo");
const DEVICES: &str = env!("CARGO_BIN_EXE_verbs-devices");

/// True if uverbs devices exist (then "no devices" cannot be tested here).
fn has_devices() -> bool {
    std::fs::read_dir(Path::new("/sys/class/infiniband_verbs"))
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("uverbs"))
        })
        .unwrap_or(false)
}

fn run(prog: &str, args: &[&str]) -> Output {
    Command::new(prog)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {prog}: {e}"))
}

/// rdma-core's words: no uverbs at all (modules not loaded) makes
/// `ibv_get_device_list` fail with ENOSYS; loaded modules without devices
/// give an empty list.
fn assert_no_device_message(stderr: &str, empty_list_msg: Option<&str>) {
    let no_modules = !Path::new("/sys/class/infiniband_verbs/abi_version").exists();
    let want = if no_modules {
        "Failed to get IB devices list: Function not implemented\n"
    } else {
        match empty_list_msg {
            Some(m) => m,
            None => return,
        }
    };
    assert_eq!(stderr, want);
}

#[test]
fn tools_without_devices_say_so_and_fail() {
    if has_devices() {
        eprintln!("skipped: this machine has RDMA devices (covered by the device tests)");
        return;
    }
    let o = run(DEVINFO, &[]);
    assert_eq!(o.status.code(), Some(255), "verbs-devinfo exit status");
    assert!(
        o.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_no_device_message(
        &String::from_utf8_lossy(&o.stderr),
        Some("No IB devices found\n"),
    );

    let o = run(DEVINFO, &["-v", "-d", "rxe0"]);
    assert_eq!(o.status.code(), Some(255));
    assert_no_device_message(
        &String::from_utf8_lossy(&o.stderr),
        Some("IB device 'rxe0' wasn't found\n"),
    );

    let o = run(DEVICES, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    if Path::new("/sys/class/infiniband_verbs/abi_version").exists() {
        // Empty list: just the header, like ibv_devices.
        assert!(o.status.success(), "{stderr}");
        assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 2);
    } else {
        assert_eq!(o.status.code(), Some(1), "verbs-devices exit status");
        assert_no_device_message(&stderr, None);
    }
}

/// Where rdma-core's tools are installed, ours must fail the same way.
#[test]
fn tools_without_devices_match_rdma_core() {
    if has_devices() {
        eprintln!("skipped: this machine has RDMA devices (covered by the device tests)");
        return;
    }
    for (theirs, ours, args) in [
        ("ibv_devinfo", DEVINFO, &[][..]),
        ("ibv_devinfo", DEVINFO, &["-l"]),
        ("ibv_devinfo", DEVINFO, &["-d", "rxe0"]),
        ("ibv_devices", DEVICES, &[]),
    ] {
        let Ok(t) = Command::new(theirs).args(args).output() else {
            eprintln!("skipped: {theirs} not installed");
            return;
        };
        let o = run(ours, args);
        assert_eq!(
            o.status.code(),
            t.status.code(),
            "{theirs} {args:?} exit status"
        );
        assert_eq!(o.stdout, t.stdout, "{theirs} {args:?} stdout");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&t.stderr),
            "{theirs} {args:?} stderr"
        );
    }
}
