//! Warnings discovery raises without failing, and the `RLIMIT_MEMLOCK`
//! check.
//!
//! Each warning is printed through [`crate::log`] the way libibverbs prints
//! it (same wording, `libibverbs: ` prefix) with a fix appended, and is also
//! kept in [`DeviceList::warnings`](super::DeviceList::warnings) so programs
//! and tests can act on it without reading stderr.

use crate::providers::ProviderKind;
use core::fmt;
use std::path::PathBuf;

/// rdma-core warns when the soft `RLIMIT_MEMLOCK` is at most this many
/// bytes (`check_memlock_limit`: `rlim_cur <= 32768`).
pub const MEMLOCK_WARN_LIMIT: u64 = 32 * 1024;

/// A problem found while listing devices that does not stop the listing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Warning {
    /// The soft `RLIMIT_MEMLOCK` is at most [`MEMLOCK_WARN_LIMIT`] and the
    /// process cannot lock memory beyond it.
    MemlockTooLow {
        /// The soft limit in bytes.
        limit: u64,
    },
    /// No provider compiled into this build drives the device.
    NoProvider {
        /// The device name (`"mlx5_0"`).
        device: String,
        /// The driver id from netlink, if known (`enum rdma_driver_id`).
        driver_id: Option<u32>,
    },
    /// A provider recognises the device but not its per-device ABI version.
    ProviderAbi {
        /// The provider that matched.
        provider: ProviderKind,
        /// The device's `abi_version`.
        abi: u32,
        /// Lowest version the provider supports.
        min: u32,
        /// Highest version the provider supports.
        max: u32,
        /// The device's sysfs directory.
        ibdev_path: PathBuf,
    },
    /// The device exists but its character device file does not; the
    /// device is left out of the list, as rdma-core does.
    NoDeviceFile {
        /// The device name.
        device: String,
        /// The missing file.
        path: PathBuf,
    },
}

impl Warning {
    /// Whether libibverbs prints this warning even without
    /// `IBV_SHOW_WARNINGS` (the memlock and provider-ABI warnings).
    pub fn always_shown(&self) -> bool {
        matches!(
            self,
            Warning::MemlockTooLow { .. } | Warning::ProviderAbi { .. }
        )
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::MemlockTooLow { limit } => write!(
                f,
                "Warning: RLIMIT_MEMLOCK is {limit} bytes.\n    This will severely limit memory \
                 registrations.\n    Fix: raise the limit (`ulimit -l unlimited`, a `memlock` line \
                 in /etc/security/limits.conf, or LimitMEMLOCK= for a systemd service)."
            ),
            Warning::NoProvider { device, driver_id } => {
                write!(
                    f,
                    "Warning: no userspace device-specific driver found for {device}"
                )?;
                if let Some(id) = driver_id {
                    write!(f, " (kernel driver id {id})")?;
                }
                write!(
                    f,
                    ".\n    This build of verbs drives only: {}. Fix: enable the provider's cargo \
                     feature, or use another device.",
                    ProviderNames
                )
            }
            Warning::ProviderAbi {
                provider,
                abi,
                min,
                max,
                ibdev_path,
            } => write!(
                f,
                "Warning: Driver {} does not support the kernel ABI of {abi} (supports {min} to \
                 {max}) for device {}\n    Fix: use a kernel whose driver speaks a supported ABI, \
                 or a newer build of verbs.",
                provider.name(),
                ibdev_path.display()
            ),
            Warning::NoDeviceFile { device, path } => write!(
                f,
                "Warning: device {device} has no device file {}.\n    Fix: create it (udev rule \
                 KERNEL==\"uverbs*\", NAME=\"infiniband/%k\") or, in a container, pass \
                 /dev/infiniband through.",
                path.display()
            ),
        }
    }
}

/// Displays the compiled-in provider names, comma separated.
struct ProviderNames;

impl fmt::Display for ProviderNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for rule in crate::providers::PROVIDERS {
            if !first {
                f.write_str(", ")?;
            }
            f.write_str(rule.kind.name())?;
            first = false;
        }
        if first {
            f.write_str("(none)")?;
        }
        Ok(())
    }
}

/// The memlock warning for a soft limit of `limit` bytes (`None` =
/// unlimited) in a process that has no right to exceed it, or `None` if the
/// limit is high enough.
pub fn memlock_warning(limit: Option<u64>) -> Option<Warning> {
    let limit = limit?;
    (limit <= MEMLOCK_WARN_LIMIT).then_some(Warning::MemlockTooLow { limit })
}

/// `CAP_IPC_LOCK` (`<linux/capability.h>`): exempts a process from
/// `RLIMIT_MEMLOCK`, also for memory registration (`ib_umem_get`).
const CAP_IPC_LOCK: u32 = 14;

/// Whether the process may lock memory beyond `RLIMIT_MEMLOCK`: its
/// effective capabilities (`CapEff` in `/proc/self/status`) include
/// `CAP_IPC_LOCK`. rdma-core approximates this with `geteuid() == 0`; that
/// is the fallback when `/proc` cannot be read.
pub fn can_exceed_memlock() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").ok();
    let cap_eff = status.as_deref().and_then(|s| {
        let line = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
        u64::from_str_radix(line.trim(), 16).ok()
    });
    match cap_eff {
        Some(caps) => caps & (1 << CAP_IPC_LOCK) != 0,
        None => rustix::process::geteuid().is_root(),
    }
}

/// The memlock check of `ibverbs_init` for this process: the warning if the
/// soft limit is at most 32 KiB and the process lacks `CAP_IPC_LOCK`.
#[doc(alias = "check_memlock_limit")]
pub fn check_memlock() -> Option<Warning> {
    if can_exceed_memlock() {
        return None;
    }
    let rl = rustix::process::getrlimit(rustix::process::Resource::Memlock);
    memlock_warning(rl.current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memlock_threshold_is_inclusive_32k() {
        assert_eq!(
            memlock_warning(Some(32768)),
            Some(Warning::MemlockTooLow { limit: 32768 })
        );
        assert_eq!(
            memlock_warning(Some(0)),
            Some(Warning::MemlockTooLow { limit: 0 })
        );
        assert_eq!(memlock_warning(Some(32769)), None);
        assert_eq!(memlock_warning(None), None);
    }

    #[test]
    fn memlock_text_matches_libibverbs_and_has_the_fix() {
        let w = memlock_warning(Some(16384)).unwrap().to_string();
        assert!(w.starts_with(
            "Warning: RLIMIT_MEMLOCK is 16384 bytes.\n    This will severely limit memory registrations."
        ));
        assert!(w.contains("ulimit -l unlimited"), "{w}");
    }
}
