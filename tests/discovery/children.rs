//! Tests that need a process of their own: a lowered `RLIMIT_MEMLOCK`, no
//! permission to open the device file, and the logging environment
//! variables. Each test re-runs this test binary on itself
//! (`--exact <name>`) with `VERBS_TEST_CHILD=<name>`; in that child the same
//! function does the checks, and the parent asserts on its exit status and
//! output.
//!
//! Tests usually run as root (CI, the VM), and root ignores both the file
//! mode and `RLIMIT_MEMLOCK`: what exempts it are the capabilities
//! `CAP_DAC_OVERRIDE` / `CAP_DAC_READ_SEARCH` and `CAP_IPC_LOCK`. The child
//! therefore drops them from its capability bounding set before `exec`
//! (`prctl(PR_CAPBSET_DROP)`); after `exec`, root's permitted and effective
//! sets are limited by the bounding set, so the child really is denied. As
//! a non-root user the drop fails harmlessly and the user is denied anyway.
//! The child verifies that it lacks the capability before testing, so the
//! test cannot pass vacuously.

use super::{fixture, fixture_dir, TempDir};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};
use verbs::discovery::Warning;
use verbs::ErrorKind;

const CHILD: &str = "VERBS_TEST_CHILD";
const CAP_DAC_OVERRIDE: u32 = 1;
const CAP_DAC_READ_SEARCH: u32 = 2;
const CAP_IPC_LOCK: u32 = 14;

fn is_child(name: &str) -> bool {
    std::env::var(CHILD).as_deref() == Ok(name)
}

/// Runs test `name` in a child process without the capabilities `drop_caps`
/// and with `RLIMIT_MEMLOCK` set to `memlock` (if given).
fn run_child(
    name: &str,
    drop_caps: &'static [u32],
    memlock: Option<u64>,
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, name);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: `pre_exec` requires the closure to be safe to run in the
    // forked child before exec; `restrict_child` only makes the
    // async-signal-safe system calls prctl and setrlimit on values it owns
    // (no allocation, no locks, no shared state).
    unsafe {
        cmd.pre_exec(move || restrict_child(drop_caps, memlock));
    }
    let out = cmd.output().expect("spawn the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child {name} failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("1 passed"),
        "child {name} did not run the test:\n{stdout}"
    );
    out
}

/// Drops `drop_caps` from the bounding set and sets `RLIMIT_MEMLOCK`; runs
/// between fork and exec.
fn restrict_child(drop_caps: &[u32], memlock: Option<u64>) -> std::io::Result<()> {
    for &cap in drop_caps {
        // SAFETY: PR_CAPBSET_DROP takes a capability number and no
        // pointers. It fails with EPERM for non-root users, who lack the
        // capability anyway; the child checks the outcome.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0, 0, 0) };
    }
    if let Some(limit) = memlock {
        let rl = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        // SAFETY: `rl` is a valid, initialised rlimit that outlives the call.
        if unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &rl) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

fn has_effective_cap(cap: u32) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .unwrap();
    u64::from_str_radix(line.trim(), 16).unwrap() & (1 << cap) != 0
}

const MEMLOCK_TEST: &str = "children::memlock_at_16k_warns_with_the_fix";

#[test]
fn memlock_at_16k_warns_with_the_fix() {
    if is_child(MEMLOCK_TEST) {
        assert!(
            !has_effective_cap(CAP_IPC_LOCK),
            "could not drop CAP_IPC_LOCK"
        );
        assert!(!verbs::discovery::can_exceed_memlock());
        let expected = Warning::MemlockTooLow { limit: 16384 };
        assert_eq!(verbs::discovery::check_memlock(), Some(expected.clone()));
        // Through device listing, with the process logger (stderr).
        let list = fixture("rxe").memlock_check(true).devices().unwrap();
        assert_eq!(list.warnings(), [expected]);
        assert_eq!(list.len(), 1, "the warning does not stop the listing");
        return;
    }
    let out = run_child(MEMLOCK_TEST, &[CAP_IPC_LOCK], Some(16384), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "libibverbs: Warning: RLIMIT_MEMLOCK is 16384 bytes.\n    This will severely limit memory registrations."
        ),
        "{stderr}"
    );
    assert!(stderr.contains("ulimit -l unlimited"), "{stderr}");
}

const PERM_TEST: &str =
    "children::device_file_without_permission_is_permission_denied_with_the_fix";

#[test]
fn device_file_without_permission_is_permission_denied_with_the_fix() {
    if is_child(PERM_TEST) {
        assert!(
            !has_effective_cap(CAP_DAC_OVERRIDE),
            "could not drop CAP_DAC_OVERRIDE"
        );
        let dev_dir = std::env::var("VERBS_TEST_DEV_DIR").unwrap();
        let list = fixture("rxe").dev_dir(&dev_dir).devices().unwrap();
        let dev = list.by_name("rxe0").unwrap();
        let e = dev.open_file().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
        assert_eq!(e.verb(), "ibv_open_device");
        assert_eq!(e.errno(), Some(rustix::io::Errno::ACCESS));
        let text = e.to_string();
        assert!(text.starts_with(
            "ibv_open_device: permission denied on the device file /dev/infiniband/uverbsN"
        ));
        assert!(
            text.contains("fix:") && text.contains("MODE=\"0666\""),
            "{text}"
        );
        return;
    }
    let dev = TempDir::new("perm");
    let file = dev.0.join("uverbs0");
    std::fs::write(&file, b"").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    let dir = dev.0.to_str().unwrap();
    let out = run_child(
        PERM_TEST,
        &[CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH],
        None,
        &[("VERBS_TEST_DEV_DIR", dir), ("VERBS_LOG_LEVEL", "1")],
    );
    // The error-level log names the actual file and the fix.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expect = format!(
        "libibverbs: permission denied opening {} for rxe0",
        file.display()
    );
    assert!(stderr.contains(&expect), "{stderr}");
    assert!(stderr.contains("udev rule"), "{stderr}");
}

const LOG_TEST: &str =
    "children::verbs_log_level_and_file_and_sysfs_path_come_from_the_environment";

#[test]
fn verbs_log_level_and_file_and_sysfs_path_come_from_the_environment() {
    if is_child(LOG_TEST) {
        // Sysfs root from SYSFS_PATH; netlink off so the host's devices
        // (if any) do not answer instead of the fixture.
        let cfg = verbs::discovery::DiscoveryConfig::from_env()
            .netlink(false)
            .memlock_check(false)
            .dev_dir(fixture_dir("multi").join("dev/infiniband"));
        let list = cfg.devices().unwrap();
        assert_eq!(
            list.len(),
            3,
            "SYSFS_PATH must point discovery at the multi fixture"
        );
        return;
    }
    let tmp = TempDir::new("log");
    // Trailing slashes are stripped, as rdma-core's ibv_get_sysfs_path does.
    let sysfs = format!("{}//", fixture_dir("multi").join("sys").display());
    let run = |level: &str| {
        let file = tmp.0.join(format!("verbs-{level}.log"));
        let f = file.to_str().unwrap();
        let env = [
            ("SYSFS_PATH", sysfs.as_str()),
            ("VERBS_LOG_LEVEL", level),
            ("VERBS_LOG_FILE", f),
        ];
        let out = run_child(LOG_TEST, &[], None, &env);
        (
            std::fs::read_to_string(&file).unwrap_or_default(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (debug, stderr) = run("4");
    assert!(
        debug.contains("libibverbs: found rxe0 (uverbs1, abi 2"),
        "{debug}"
    );
    assert!(
        debug.contains("libibverbs: skipping uverbs3: NoIbdev"),
        "{debug}"
    );
    assert!(
        debug.contains("libibverbs: Warning: no userspace device-specific driver found for siw0"),
        "{debug}"
    );
    assert!(
        !stderr.contains("libibverbs: found"),
        "leveled log must go to the file only: {stderr}"
    );

    let (warn, _) = run("2");
    assert!(
        warn.contains("Warning: no userspace device-specific driver found for mlx5_0"),
        "{warn}"
    );
    assert!(
        !warn.contains("found rxe0") && !warn.contains("skipping"),
        "{warn}"
    );

    let (none, _) = run("0");
    assert_eq!(none, "", "level 0 writes nothing");
}
