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

const ENOSYS_MSG: &str = "Failed to get IB devices list: Function not implemented\n";

/// rdma-core's words: when the device list cannot be had at all (no RDMA
/// netlink and no uverbs ABI file: modules not loaded, or a container)
/// `ibv_get_device_list` fails with ENOSYS; otherwise the list is empty
/// and the tool says `empty_list_msg`.
fn assert_no_device_message(stderr: &str, empty_list_msg: &str) {
    assert!(
        stderr == ENOSYS_MSG || stderr == empty_list_msg,
        "stderr {stderr:?} is neither {ENOSYS_MSG:?} nor {empty_list_msg:?}"
    );
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
    assert_no_device_message(&String::from_utf8_lossy(&o.stderr), "No IB devices found\n");

    let o = run(DEVINFO, &["-v", "-d", "rxe0"]);
    assert_eq!(o.status.code(), Some(255));
    assert_no_device_message(
        &String::from_utf8_lossy(&o.stderr),
        "IB device 'rxe0' wasn't found\n",
    );

    let o = run(DEVICES, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    if stderr == ENOSYS_MSG {
        assert_eq!(o.status.code(), Some(1), "verbs-devices exit status");
        assert!(o.stdout.is_empty());
    } else {
        // An empty list: just the header, like ibv_devices.
        assert!(o.status.success(), "{stderr}");
        assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 2);
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
