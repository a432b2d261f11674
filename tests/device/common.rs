//! Helpers shared by the device tests: which devices to use and where they live in sysfs.
//!
//! Environment (set by the VM harness, or by the user in native mode):
//! - `VERBS_TEST_RXE`: the RoCE device (default `rxe0`),
//! - `VERBS_TEST_SIW`: the iWARP device (default `siw0`),
//! - `VERBS_TEST_GID_INDEX`: index of the RoCE v2 IPv4 GID on the RoCE device
//!   (default: `VM_RXE_GID_INDEX`, else 1).

use std::path::PathBuf;

/// The sysfs root: `$SYSFS_PATH` (as rdma-core and this library take it: the
/// simulated ConnectX's devices live in a fixture tree), else `/sys`.
fn sysfs_root() -> PathBuf {
    PathBuf::from(env_or("SYSFS_PATH", "/sys"))
}

/// `<sysfs>/class/infiniband`: one directory per registered RDMA device.
pub(crate) fn sys_infiniband() -> PathBuf {
    sysfs_root().join("class/infiniband")
}

/// `<sysfs>/class/infiniband_verbs`: one `uverbsN` directory per uverbs character device.
pub(crate) fn sys_infiniband_verbs() -> PathBuf {
    sysfs_root().join("class/infiniband_verbs")
}

fn env_or(var: &str, default: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.is_empty() => v,
        _ => default.to_owned(),
    }
}

/// Name of the RoCE test device: `$VERBS_TEST_RXE`, default `rxe0`.
pub(crate) fn rxe_name() -> String {
    env_or("VERBS_TEST_RXE", "rxe0")
}

/// Name of the iWARP test device: `$VERBS_TEST_SIW`, default `siw0`.
pub(crate) fn siw_name() -> String {
    env_or("VERBS_TEST_SIW", "siw0")
}

/// An index inside port 1's GID table whose entry is empty, for the tests
/// of what the kernel does with such a source GID: 250 when the table is
/// that long (rxe's holds 1024), else the table's last index (the simulated
/// ConnectX's holds 16, of which 4 are in use). Panics if that entry is in
/// use, so a test never takes a live GID for an empty one.
pub(crate) fn empty_gid_index(ctx: &verbs::Context) -> u8 {
    let len = ctx.query_port(1).expect("ibv_query_port").gid_tbl_len;
    assert!(len > 0, "port 1 has no GID table");
    let index = if len > 250 { 250 } else { (len.min(256) - 1) as u8 };
    let gid = ctx.query_gid(1, u32::from(index)).expect("ibv_query_gid");
    assert_eq!(gid, [0; 16], "GID {index} of port 1 is in use: the test needs an empty entry");
    index
}

/// RoCE v2 GID index on the RoCE device: `$VERBS_TEST_GID_INDEX`, else `$VM_RXE_GID_INDEX`,
/// else 1 (what the VM's rxe0 on an IPv4 netdev gets).
pub(crate) fn gid_index() -> u32 {
    for var in ["VERBS_TEST_GID_INDEX", "VM_RXE_GID_INDEX"] {
        if let Ok(v) = std::env::var(var) {
            if !v.is_empty() {
                return v
                    .parse()
                    .unwrap_or_else(|_| panic!("{var}={v:?} is not a GID index"));
            }
        }
    }
    1
}

/// `/sys/class/infiniband/<dev>`; panics with a clear message if the device is not there,
/// so a missing device is a test failure, never a silent pass.
pub(crate) fn sysfs_dev(dev: &str) -> PathBuf {
    let p = sys_infiniband().join(dev);
    assert!(
        p.is_dir(),
        "RDMA device {dev} not found: {} does not exist (set VERBS_TEST_RXE / VERBS_TEST_SIW \
         or run scripts/test.sh)",
        p.display()
    );
    p
}

/// Reads a sysfs attribute and strips the trailing newline.
pub(crate) fn read_attr(path: impl Into<PathBuf>) -> String {
    let path = path.into();
    let s = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    s.trim_end_matches('\n').to_owned()
}

/// The `uverbsN` name of a device's uverbs character device, found through
/// `/sys/class/infiniband_verbs/uverbsN/ibdev`.
pub(crate) fn uverbs_of(dev: &str) -> String {
    let mut found = Vec::new();
    let dir = sys_infiniband_verbs();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
    {
        let entry = entry.expect("readdir entry");
        let ibdev = entry.path().join("ibdev");
        if ibdev.exists() && read_attr(&ibdev) == dev {
            found.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    assert_eq!(found.len(), 1, "uverbs devices for {dev}: {found:?}");
    found.pop().unwrap()
}

/// True once a TCP socket (IPv4 or IPv6) listens on `port`, read from
/// `/proc/net/tcp{,6}`: probing with a connection would use up a server's
/// single `accept`, and on iWARP the connection manager's listener is such
/// a socket too.
pub(crate) fn tcp_listening(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).unwrap_or_default().lines().skip(1).any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() > 3
                && cols[3] == "0A"
                && cols[1].rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok()) == Some(port)
        })
    })
}

/// True once a connection-manager id listens on `port` (`rdma res show cm_id`, any device,
/// TCP or UDP port space): RoCE listeners have no socket to find in `/proc/net`.
pub(crate) fn cm_listening(port: u16) -> bool {
    let out = std::process::Command::new("rdma").args(["res", "show", "cm_id"]).output().map(|o| o.stdout).unwrap_or_default();
    let want = format!(":{port} ");
    String::from_utf8_lossy(&out).lines().any(|l| l.contains("state LISTEN") && l.contains(&want))
}
