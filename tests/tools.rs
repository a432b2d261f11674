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

const RC_PP: &str = env!("CARGO_BIN_EXE_verbs-rc-pingpong");
const UD_PP: &str = env!("CARGO_BIN_EXE_verbs-ud-pingpong");
const SRQ_PP: &str = env!("CARGO_BIN_EXE_verbs-srq-pingpong");

/// The two lines of `-U` that rdma-core added after version 44 (which
/// Debian 12 installs); ours has them.
const RC_U_LINES: &str = "  -U, --allow-cc-unprotected  allow allocation of unprotected/shared\n                            memory on CoCo guests\n";

/// Where `$PATH` has `prog` (we must not run it to find out: without
/// arguments a pingpong program waits for a client).
fn in_path(prog: &str) -> Option<String> {
    let path = std::env::var("PATH").ok()?;
    path.split(':')
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// Runs `prog` with `argv[0]` = `pp`, so that usage texts compare.
fn run_as_pp(prog: &str, args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt as _;
    Command::new(prog)
        .arg0("pp")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {prog}: {e}"))
}

/// Command lines the pingpong programs reject before touching a device:
/// ours print the same usage/messages with exit status 1 — compared with
/// rdma-core's programs byte for byte where they are installed.
#[test]
fn pingpong_command_line_errors_match_rdma_core() {
    let cases: &[(&str, &str, &[&str])] = &[
        (RC_PP, "ibv_rc_pingpong", &["-x"]),
        (RC_PP, "ibv_rc_pingpong", &["-p", "65536"]),
        (RC_PP, "ibv_rc_pingpong", &["-m", "1000"]),
        (RC_PP, "ibv_rc_pingpong", &["--iters"]),
        (RC_PP, "ibv_rc_pingpong", &["--i", "3"]),
        (RC_PP, "ibv_rc_pingpong", &["-i", "0"]),
        (RC_PP, "ibv_rc_pingpong", &["host1", "host2"]),
        (RC_PP, "ibv_rc_pingpong", &["-P"]),
        (RC_PP, "ibv_rc_pingpong", &["-o", "-j"]),
        (UD_PP, "ibv_ud_pingpong", &["-m", "1024"]),
        (UD_PP, "ibv_ud_pingpong", &["--chk=1"]),
        (UD_PP, "ibv_ud_pingpong", &["-p", "-1"]),
        (SRQ_PP, "ibv_srq_pingpong", &["-s", "0"]),
        (SRQ_PP, "ibv_srq_pingpong", &["-q", "8", "-r", "4"]),
        (SRQ_PP, "ibv_srq_pingpong", &["-q", "300", "-r", "1000"]),
        (SRQ_PP, "ibv_srq_pingpong", &["--num-qp"]),
    ];
    for &(ours, theirs, args) in cases {
        let o = run_as_pp(ours, args);
        assert_eq!(o.status.code(), Some(1), "{ours} {args:?}");
        assert!(
            !o.stdout.is_empty() || !o.stderr.is_empty(),
            "{ours} {args:?} said nothing"
        );
        let Some(path) = in_path(theirs) else {
            eprintln!("{theirs} not installed: only our side checked");
            continue;
        };
        let t = run_as_pp(&path, args);
        let (ours_out, theirs_out) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&t.stdout),
        );
        let ours_out = if theirs_out.contains("--allow-cc") {
            ours_out.to_string()
        } else {
            ours_out.replace(RC_U_LINES, "")
        };
        assert_eq!(t.status.code(), Some(1), "{theirs} {args:?}");
        assert_eq!(ours_out, theirs_out, "{theirs} {args:?} stdout");
        assert_eq!(
            String::from_utf8_lossy(&o.stderr),
            String::from_utf8_lossy(&t.stderr),
            "{theirs} {args:?} stderr"
        );
    }
}
