//! Sysfs: the files ib_uverbs and ib_core export, and panic-free parsers for
//! their contents (public, so fuzz targets can call them).
//!
//! Layout (rdma-core `init.c` / `sysfs.c`, kernel `uverbs_main.c`,
//! `sysfs.c`):
//! ```text
//! <root>/class/infiniband_verbs/abi_version            global uverbs ABI ("6")
//! <root>/class/infiniband_verbs/uverbsN/ibdev          device name ("rxe0")
//! <root>/class/infiniband_verbs/uverbsN/dev            "231:192"
//! <root>/class/infiniband_verbs/uverbsN/abi_version    per-device ABI ("2")
//! <root>/class/infiniband/<ibdev>/node_guid            "0002:c903:0003:1234"
//! <root>/class/infiniband/<ibdev>/node_type            "1: CA"
//! <root>/class/infiniband/<ibdev>/{sys_image_guid,fw_ver,hca_type,hw_rev,board_id}
//! <root>/class/infiniband/<ibdev>/ports/<n>/...
//! ```
//! `<root>` is `/sys` unless `SYSFS_PATH` says otherwise
//! ([`sysfs_root_from_env`], rdma-core `ibv_get_sysfs_path`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The default sysfs mount point.
pub const DEFAULT_SYSFS_ROOT: &str = "/sys";

/// Where the uverbs character devices live (rdma-core `RDMA_CDEV_DIR`).
pub const DEFAULT_DEV_DIR: &str = "/dev/infiniband";

/// The sysfs root rdma-core's `ibv_get_sysfs_path` would use: `SYSFS_PATH`
/// with trailing slashes removed, if set and the process is not set-uid
/// (real uid equals effective uid); otherwise `/sys`.
#[doc(alias = "ibv_get_sysfs_path")]
pub fn sysfs_root_from_env() -> PathBuf {
    let trusted = rustix::process::getuid() == rustix::process::geteuid();
    sysfs_root_from(trusted.then(|| std::env::var_os("SYSFS_PATH")).flatten())
}

/// The sysfs root for a given `SYSFS_PATH` value (see
/// [`sysfs_root_from_env`]).
pub fn sysfs_root_from(value: Option<OsString>) -> PathBuf {
    let Some(v) = value else {
        return PathBuf::from(DEFAULT_SYSFS_ROOT);
    };
    let s = v.to_string_lossy();
    let trimmed = s.trim_end_matches('/');
    if trimmed.is_empty() {
        // rdma-core strips to "" here, which then means the file system root.
        return PathBuf::from("/");
    }
    PathBuf::from(trimmed)
}

/// The sysfs class directory of uverbs devices under `root`.
pub fn uverbs_class_dir(root: &Path) -> PathBuf {
    root.join("class/infiniband_verbs")
}

/// The sysfs directory of an RDMA device (`ibdev_path`).
pub fn ibdev_dir(root: &Path, ibdev: &str) -> PathBuf {
    root.join("class/infiniband").join(ibdev)
}

/// The contents of a sysfs attribute as text without the trailing newline,
/// or `None` if it is missing, unreadable, not UTF-8 or empty.
pub fn read_attr(path: &Path) -> Option<String> {
    let mut s = String::from_utf8(std::fs::read(path).ok()?).ok()?;
    while s.ends_with('\n') {
        s.pop();
    }
    (!s.is_empty()).then_some(s)
}

/// Parses an `abi_version` file: a decimal number, optionally surrounded
/// by whitespace.
pub fn parse_abi_version(s: &str) -> Option<u32> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// Parses a `dev` file: `"major:minor"` in decimal (e.g. `"231:192"`).
pub fn parse_dev_t(s: &str) -> Option<(u32, u32)> {
    let (major, minor) = s.trim().split_once(':')?;
    let num = |p: &str| -> Option<u32> {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        p.parse().ok()
    };
    Some((num(major)?, num(minor)?))
}

/// Parses a GUID as sysfs prints it (`node_guid`, `sys_image_guid`): four
/// groups of 1-4 hex digits separated by colons, most significant first
/// (`"0002:c903:0003:1234"` → `0x0002_c903_0003_1234`). rdma-core reads it
/// with `"%hx:%hx:%hx:%hx"`.
pub fn parse_guid(s: &str) -> Option<u64> {
    let mut guid: u64 = 0;
    let mut groups = 0;
    for part in s.trim().split(':') {
        if part.is_empty() || part.len() > 4 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        guid = (guid << 16) | u64::from(u16::from_str_radix(part, 16).ok()?);
        groups += 1;
        if groups > 4 {
            return None;
        }
    }
    (groups == 4).then_some(guid)
}

/// Formats a GUID (host-order value) the way sysfs and `ibv_devinfo` print
/// it: `"0002:c903:0003:1234"`.
pub fn format_guid(guid: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (guid >> 48) & 0xffff,
        (guid >> 32) & 0xffff,
        (guid >> 16) & 0xffff,
        guid & 0xffff
    )
}

/// Parses a `node_type` file (`"1: CA"`, `"4: RNIC"`): the leading decimal
/// number, the kernel's `enum rdma_node_type`.
pub fn parse_node_type(s: &str) -> Option<u32> {
    let t = s.trim_start();
    let end = t
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(t.len());
    t.get(..end).filter(|d| !d.is_empty())?.parse().ok()
}

/// The PCI vendor and device of a `device/modalias` file
/// (`pci:v000015B3d0000101Dsv…`): how libibverbs matches providers that
/// list PCI ids (mlx5) when the driver id is unknown (sysfs discovery).
/// `None` for a device that is not PCI or a malformed line.
pub fn parse_pci_modalias(s: &str) -> Option<(u16, u16)> {
    let rest = s.trim().strip_prefix("pci:v")?;
    let (vendor, rest) = (rest.get(..8)?, rest.get(8..)?);
    let device = rest.strip_prefix('d')?.get(..8)?;
    let hex = |h: &str| u32::from_str_radix(h, 16).ok().and_then(|v| u16::try_from(v).ok());
    Some((hex(vendor)?, hex(device)?))
}

/// The PCI ids of the device behind `ibdev_path` (`device/modalias`).
pub fn pci_ids(ibdev_path: &Path) -> Option<(u16, u16)> {
    parse_pci_modalias(&read_attr(&ibdev_path.join("device/modalias"))?)
}

/// The number in a `uverbsN` directory name, for sorting.
pub fn uverbs_index(name: &str) -> Option<u32> {
    name.strip_prefix("uverbs")?.parse().ok()
}

/// One `uverbsN` entry of the sysfs class directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysfsUverbs {
    /// `uverbsN`
    pub sysfs_name: String,
    /// `<root>/class/infiniband_verbs/uverbsN`
    pub sysfs_path: PathBuf,
    /// The `ibdev` attribute: the RDMA device name.
    pub ibdev: String,
    /// The `dev` attribute.
    pub dev: (u32, u32),
    /// The `abi_version` attribute; 0 if missing, as rdma-core leaves it.
    pub abi_version: u32,
}

/// Why a `uverbsN` entry was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// No readable `ibdev` attribute.
    NoIbdev,
    /// No readable or parsable `dev` attribute.
    NoDev,
    /// `<root>/class/infiniband/<ibdev>` does not exist.
    NoIbdevDir,
}

/// Reads one `uverbsN` directory (rdma-core `setup_sysfs_dev`).
pub fn read_uverbs_dir(root: &Path, dir: &Path, name: &str) -> Result<SysfsUverbs, SkipReason> {
    let ibdev = read_attr(&dir.join("ibdev")).ok_or(SkipReason::NoIbdev)?;
    if !ibdev_dir(root, &ibdev).is_dir() {
        return Err(SkipReason::NoIbdevDir);
    }
    let dev = read_attr(&dir.join("dev"))
        .as_deref()
        .and_then(parse_dev_t)
        .ok_or(SkipReason::NoDev)?;
    let abi_version = read_attr(&dir.join("abi_version"))
        .as_deref()
        .and_then(parse_abi_version)
        .unwrap_or(0);
    Ok(SysfsUverbs {
        sysfs_name: name.into(),
        sysfs_path: dir.into(),
        ibdev,
        dev,
        abi_version,
    })
}

/// The `uverbsN` entries of the class directory, sorted by N; `Err` if the
/// directory does not exist or cannot be read.
pub fn list_uverbs_dirs(root: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(uverbs_class_dir(root))? {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') || !entry.path().is_dir() {
            continue;
        }
        out.push((name, entry.path()));
    }
    out.sort_by(|a, b| (uverbs_index(&a.0), &a.0).cmp(&(uverbs_index(&b.0), &b.0)));
    Ok(out)
}

/// The uverbs entry of an RDMA device found through its own sysfs
/// directory (`<ibdev_path>/device/infiniband_verbs/uverbsN`), for devices
/// netlink lists without a uverbs chardev (rdma-core `find_uverbs_sysfs`).
pub fn uverbs_of_ibdev(root: &Path, ibdev_path: &Path) -> Option<SysfsUverbs> {
    let dir = ibdev_path.join("device/infiniband_verbs");
    let entry = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .find(|e| !e.file_name().to_string_lossy().starts_with('.'))?;
    let name = entry.file_name().into_string().ok()?;
    read_uverbs_dir(root, &entry.path(), &name).ok()
}

/// The number of ports of a device from sysfs (entries of `ports/`).
pub fn count_ports(ibdev_path: &Path) -> Option<u32> {
    let n = std::fs::read_dir(ibdev_path.join("ports"))
        .ok()?
        .filter_map(|e| e.ok())
        .count();
    u32::try_from(n).ok()
}
