//! The list [`devices`](super::devices) returns.

use super::device::Device;
use super::warning::Warning;
use crate::error::{Error, ErrorKind, Result};

/// How the device list was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// RDMA netlink (driver ids known).
    Netlink,
    /// Sysfs only (driver ids unknown).
    Sysfs,
}

/// The result of [`devices`](super::devices): every uverbs device found, with or without a
/// provider, and the warnings raised while looking.
#[derive(Clone, Debug)]
pub struct DeviceList {
    pub(super) devices: Vec<Device>,
    pub(super) warnings: Vec<Warning>,
    pub(super) source: Source,
    pub(super) kernel_abi: u32,
}

impl DeviceList {
    /// The devices, sorted by uverbs number (sysfs) or kernel index (netlink).
    pub fn as_slice(&self) -> &[Device] {
        &self.devices
    }

    /// Iterates over the devices.
    pub fn iter(&self) -> core::slice::Iter<'_, Device> {
        self.devices.iter()
    }

    /// The number of devices.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// Whether no device was found.
    pub fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// The device named `name` (`"rxe0"`), or a [`ErrorKind::NoDevice`]
    /// error naming `ibv_open_device`.
    pub fn by_name(&self, name: &str) -> Result<&Device> {
        self.devices
            .iter()
            .find(|d| d.name() == name)
            .ok_or(Error::new("ibv_open_device", ErrorKind::NoDevice))
    }

    /// The warnings raised while listing (also printed through the log).
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// Whether netlink or sysfs supplied the list.
    pub fn source(&self) -> Source {
        self.source
    }

    /// The global uverbs ABI version (6 when netlink supplied the list, as
    /// rdma-core assumes).
    pub fn kernel_abi_version(&self) -> u32 {
        self.kernel_abi
    }
}

impl<'a> IntoIterator for &'a DeviceList {
    type Item = &'a Device;
    type IntoIter = core::slice::Iter<'a, Device>;
    fn into_iter(self) -> Self::IntoIter {
        self.devices.iter()
    }
}

impl IntoIterator for DeviceList {
    type Item = Device;
    type IntoIter = std::vec::IntoIter<Device>;
    fn into_iter(self) -> Self::IntoIter {
        self.devices.into_iter()
    }
}
