//! Listing devices (`ibv_get_device_list`): netlink first, sysfs as the
//! fallback, then matching each device to a compiled-in provider.

use super::device::{Device, NodeType};
use super::devlist::{DeviceList, Source};
use super::netlink::NlDevice;
use super::nlsock::RdmaNetlink;
use super::sysfs::{self, SysfsUverbs};
use super::warning::{check_memlock, Warning};
use crate::abi::RdmaDriverId;
use crate::error::{Error, ErrorKind, Result};
use crate::log::Logger;
use crate::providers::{self, ProviderKind, PROVIDERS};
use std::path::{Path, PathBuf};

/// `IB_USER_VERBS_MIN_ABI_VERSION` (rdma-core `kern-abi.h`): the oldest
/// global uverbs ABI this library accepts.
pub const MIN_KERNEL_ABI: u32 = 3;
/// `IB_USER_VERBS_MAX_ABI_VERSION` / `IB_USER_VERBS_ABI_VERSION`
/// (`<rdma/ib_user_verbs.h>`): the newest.
pub const MAX_KERNEL_ABI: u32 = 6;

const VERB: &str = "ibv_get_device_list";

/// Where discovery looks. [`DiscoveryConfig::from_env`] gives what
/// libibverbs uses; tests point it at fixture trees.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiscoveryConfig {
    sysfs_root: PathBuf,
    dev_dir: PathBuf,
    netlink: bool,
    memlock_check: bool,
}

impl Default for DiscoveryConfig {
    fn default() -> Self {
        Self::from_env()
    }
}

impl DiscoveryConfig {
    /// The sysfs root from `SYSFS_PATH` (or `/sys`), `/dev/infiniband`,
    /// netlink and the memlock check enabled.
    pub fn from_env() -> Self {
        Self {
            sysfs_root: sysfs::sysfs_root_from_env(),
            dev_dir: PathBuf::from(sysfs::DEFAULT_DEV_DIR),
            netlink: true,
            memlock_check: true,
        }
    }

    /// Uses `root` instead of `/sys` (rdma-core's `SYSFS_PATH`).
    pub fn sysfs_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.sysfs_root = root.into();
        self
    }

    /// Looks for the `uverbsN` files in `dir` instead of `/dev/infiniband`.
    pub fn dev_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dev_dir = dir.into();
        self
    }

    /// Whether to ask RDMA netlink first (default `true`). Without it,
    /// driver ids are unknown: rxe is still matched by name, siw is not.
    pub fn netlink(mut self, enabled: bool) -> Self {
        self.netlink = enabled;
        self
    }

    /// Whether to check `RLIMIT_MEMLOCK` (default `true`).
    pub fn memlock_check(mut self, enabled: bool) -> Self {
        self.memlock_check = enabled;
        self
    }

    /// Lists the devices, logging through the process logger.
    #[doc(alias = "ibv_get_device_list")]
    pub fn devices(&self) -> Result<DeviceList> {
        self.devices_with_logger(crate::log::logger())
    }

    /// Lists the devices, logging through `log` (tests pass a
    /// [`Logger::memory`]).
    pub fn devices_with_logger(&self, log: &Logger) -> Result<DeviceList> {
        use crate::log::LogLevel::{Debug, Info};
        let mut warnings = Vec::new();
        if self.memlock_check {
            warnings.extend(check_memlock());
        }
        let (found, source, kernel_abi) = match self.netlink.then(|| self.scan_netlink(log)) {
            Some(Ok(found)) => (found, Source::Netlink, MAX_KERNEL_ABI),
            other => {
                if let Some(Err(e)) = other {
                    log.log(
                        Debug,
                        format_args!("RDMA netlink unavailable ({e}); reading sysfs"),
                    );
                }
                let (found, abi) = self.scan_sysfs(log)?;
                (found, Source::Sysfs, abi)
            }
        };
        let mut devices = Vec::with_capacity(found.len());
        for raw in found {
            let uverbs_path = self.dev_dir.join(&raw.uverbs.sysfs_name);
            if std::fs::metadata(&uverbs_path).is_err() {
                warnings.push(Warning::NoDeviceFile {
                    device: raw.uverbs.ibdev.clone(),
                    path: uverbs_path,
                });
                continue;
            }
            let dev = self.build_device(raw, uverbs_path, &mut warnings);
            log.log(
                Info,
                format_args!(
                    "found {} ({}, abi {}, driver id {:?}) -> provider {:?}",
                    dev.name,
                    dev.sysfs_name,
                    dev.abi_version,
                    dev.driver_id.map(|d| d.0),
                    dev.provider.map(ProviderKind::name)
                ),
            );
            devices.push(dev);
        }
        for w in &warnings {
            log.console(w.always_shown(), format_args!("{w}"));
        }
        Ok(DeviceList {
            devices,
            warnings,
            source,
            kernel_abi,
        })
    }

    fn scan_netlink(&self, log: &Logger) -> Result<Vec<Found>> {
        let mut nl = RdmaNetlink::open(VERB)?;
        let mut out = Vec::new();
        for dev in nl.devices()? {
            let ibdev_path = sysfs::ibdev_dir(&self.sysfs_root, &dev.name);
            let (uverbs, driver_id) = match nl.chardev(dev.index, "uverbs") {
                Ok(cd) => {
                    let sysfs_path = sysfs::uverbs_class_dir(&self.sysfs_root).join(&cd.name);
                    let abi_version = u32::try_from(cd.abi).unwrap_or(u32::MAX);
                    let u = SysfsUverbs {
                        sysfs_name: cd.name,
                        sysfs_path,
                        ibdev: dev.name.clone(),
                        dev: cd.dev,
                        abi_version,
                    };
                    (u, cd.driver_id.filter(|&id| id != 0).map(RdmaDriverId))
                }
                Err(e) => match sysfs::uverbs_of_ibdev(&self.sysfs_root, &ibdev_path) {
                    Some(u) => (u, None),
                    None => {
                        log.log(
                            crate::log::LogLevel::Debug,
                            format_args!("{}: no uverbs device ({e})", dev.name),
                        );
                        continue;
                    }
                },
            };
            out.push(Found {
                uverbs,
                ibdev_path,
                nl: Some(dev),
                driver_id,
            });
        }
        Ok(out)
    }

    fn scan_sysfs(&self, log: &Logger) -> Result<(Vec<Found>, u32)> {
        let root = &self.sysfs_root;
        let class = sysfs::uverbs_class_dir(root);
        // No class directory: ib_uverbs is not loaded (rdma-core: ENOSYS).
        let entries = sysfs::list_uverbs_dirs(root).map_err(|_| no_abi_file(log, &class))?;
        let abi_text =
            sysfs::read_attr(&class.join("abi_version")).ok_or_else(|| no_abi_file(log, &class))?;
        let abi =
            sysfs::parse_abi_version(&abi_text).ok_or(Error::new(VERB, ErrorKind::Malformed))?;
        if !(MIN_KERNEL_ABI..=MAX_KERNEL_ABI).contains(&abi) {
            let kind = ErrorKind::AbiMismatch {
                kernel: abi,
                min: MIN_KERNEL_ABI,
                max: MAX_KERNEL_ABI,
            };
            log.console(
                true,
                format_args!("Fatal: kernel ABI version {abi} doesn't match library version {MAX_KERNEL_ABI}."),
            );
            return Err(Error::new(VERB, kind));
        }
        let mut out = Vec::new();
        for (name, dir) in entries {
            match sysfs::read_uverbs_dir(root, &dir, &name) {
                Ok(uverbs) => {
                    let ibdev_path = sysfs::ibdev_dir(root, &uverbs.ibdev);
                    out.push(Found {
                        uverbs,
                        ibdev_path,
                        nl: None,
                        driver_id: None,
                    });
                }
                Err(why) => log.log(
                    crate::log::LogLevel::Debug,
                    format_args!("skipping {name}: {why:?}"),
                ),
            }
        }
        Ok((out, abi))
    }

    fn build_device(
        &self,
        raw: Found,
        uverbs_path: PathBuf,
        warnings: &mut Vec<Warning>,
    ) -> Device {
        let Found {
            uverbs,
            ibdev_path,
            nl,
            driver_id,
        } = raw;
        let attr = |name: &str| sysfs::read_attr(&ibdev_path.join(name));
        let (index, node_type, guid, sys_guid, fw, ports) = match nl {
            Some(NlDevice {
                index,
                node_type,
                node_guid,
                sys_image_guid,
                fw_version,
                num_ports,
                ..
            }) => (
                Some(index),
                NodeType::from_kernel(u32::from(node_type)),
                Some(node_guid),
                sys_image_guid,
                fw_version,
                Some(num_ports),
            ),
            None => (
                None,
                attr("node_type")
                    .as_deref()
                    .and_then(sysfs::parse_node_type)
                    .map_or(NodeType::Unknown, NodeType::from_kernel),
                attr("node_guid").as_deref().and_then(sysfs::parse_guid),
                attr("sys_image_guid")
                    .as_deref()
                    .and_then(sysfs::parse_guid),
                attr("fw_ver"),
                sysfs::count_ports(&ibdev_path),
            ),
        };
        let provider = match_provider(
            &uverbs.ibdev,
            driver_id,
            uverbs.abi_version,
            &ibdev_path,
            warnings,
        );
        Device {
            name: uverbs.ibdev,
            sysfs_name: uverbs.sysfs_name,
            index,
            dev: uverbs.dev,
            abi_version: uverbs.abi_version,
            node_type,
            node_guid: guid,
            sys_image_guid: sys_guid,
            fw_version: fw,
            num_ports: ports,
            driver_id,
            provider,
            ibdev_path,
            sysfs_path: uverbs.sysfs_path,
            uverbs_path,
        }
    }
}

fn no_abi_file(log: &Logger, class: &Path) -> Error {
    log.log(
        crate::log::LogLevel::Err,
        format_args!(
            "Fatal: couldn't read uverbs ABI version ({}/abi_version).",
            class.display()
        ),
    );
    Error::new(VERB, ErrorKind::NoAbiFile)
}

/// Matches a device to a provider like rdma-core's `match_device`, and
/// records why none fits.
fn match_provider(
    name: &str,
    driver_id: Option<RdmaDriverId>,
    abi: u32,
    ibdev_path: &Path,
    warnings: &mut Vec<Warning>,
) -> Option<ProviderKind> {
    let pci = if driver_id.is_none() { super::sysfs::pci_ids(ibdev_path) } else { None };
    let found = providers::match_device_pci(driver_id, name, abi, pci);
    if found.is_some() {
        return found;
    }
    let by_id_or_name = PROVIDERS.iter().find(|r| {
        driver_id == Some(r.driver_id)
            || (driver_id.is_none() && r.name_prefix.is_some_and(|p| name.starts_with(p)))
            || (driver_id.is_none() && pci.is_some_and(|id| r.pci_ids.contains(&id)))
    });
    warnings.push(match by_id_or_name {
        Some(r) => Warning::ProviderAbi {
            provider: r.kind,
            abi,
            min: r.min_abi,
            max: r.max_abi,
            ibdev_path: ibdev_path.into(),
        },
        None => Warning::NoProvider {
            device: name.into(),
            driver_id: driver_id.map(|d| d.0),
        },
    });
    None
}

/// A device as found, before provider matching.
struct Found {
    uverbs: SysfsUverbs,
    ibdev_path: PathBuf,
    nl: Option<NlDevice>,
    driver_id: Option<RdmaDriverId>,
}

/// `ibv_get_device_list`: every RDMA device with a uverbs interface, using
/// the configuration the environment gives ([`DiscoveryConfig::from_env`]).
///
/// Errors: [`ErrorKind::NoAbiFile`] when the RDMA modules are not loaded,
/// [`ErrorKind::AbiMismatch`] for a kernel ABI outside
/// [`MIN_KERNEL_ABI`]`..=`[`MAX_KERNEL_ABI`].
#[doc(alias = "ibv_get_device_list")]
pub fn devices() -> Result<DeviceList> {
    DiscoveryConfig::from_env().devices()
}
