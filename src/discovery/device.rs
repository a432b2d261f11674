//! One discovered RDMA device (`struct ibv_device` plus rdma-core's
//! `verbs_sysfs_dev`), and opening its uverbs character device.

use crate::abi::netlink::{
    RDMA_NODE_IB_CA, RDMA_NODE_IB_ROUTER, RDMA_NODE_IB_SWITCH, RDMA_NODE_RNIC,
    RDMA_NODE_UNSPECIFIED, RDMA_NODE_USNIC, RDMA_NODE_USNIC_UDP,
};
use crate::abi::RdmaDriverId;
use crate::error::{Errno, Error, ErrorKind, Result};
use crate::providers::ProviderKind;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use std::path::{Path, PathBuf};

/// `enum ibv_node_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[doc(alias = "ibv_node_type")]
pub enum NodeType {
    /// `IBV_NODE_UNKNOWN` (-1)
    Unknown,
    /// `IBV_NODE_CA` (1): InfiniBand channel adapter (also RoCE, rxe).
    Ca,
    /// `IBV_NODE_SWITCH` (2)
    Switch,
    /// `IBV_NODE_ROUTER` (3)
    Router,
    /// `IBV_NODE_RNIC` (4): iWARP NIC (siw).
    Rnic,
    /// `IBV_NODE_USNIC` (5)
    Usnic,
    /// `IBV_NODE_USNIC_UDP` (6)
    UsnicUdp,
    /// `IBV_NODE_UNSPECIFIED` (7)
    Unspecified,
}

impl NodeType {
    /// Decodes the kernel's `enum rdma_node_type` (rdma-core
    /// `decode_knode_type`).
    pub const fn from_kernel(v: u32) -> Self {
        match v {
            RDMA_NODE_IB_CA => Self::Ca,
            RDMA_NODE_IB_SWITCH => Self::Switch,
            RDMA_NODE_IB_ROUTER => Self::Router,
            RDMA_NODE_RNIC => Self::Rnic,
            RDMA_NODE_USNIC => Self::Usnic,
            RDMA_NODE_USNIC_UDP => Self::UsnicUdp,
            RDMA_NODE_UNSPECIFIED => Self::Unspecified,
            _ => Self::Unknown,
        }
    }

    /// The C enum value.
    pub const fn as_raw(self) -> i32 {
        match self {
            Self::Unknown => -1,
            Self::Ca => 1,
            Self::Switch => 2,
            Self::Router => 3,
            Self::Rnic => 4,
            Self::Usnic => 5,
            Self::UsnicUdp => 6,
            Self::Unspecified => 7,
        }
    }

    /// `ibv_node_type_str`: e.g. `"InfiniBand channel adapter"`.
    #[doc(alias = "ibv_node_type_str")]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "unknown",
            Self::Ca => "InfiniBand channel adapter",
            Self::Switch => "InfiniBand switch",
            Self::Router => "InfiniBand router",
            Self::Rnic => "iWARP NIC",
            Self::Usnic => "usNIC",
            Self::UsnicUdp => "usNIC UDP",
            Self::Unspecified => "unspecified",
        }
    }

    /// The transport the node type implies (as rdma-core's `try_driver`).
    pub const fn transport(self) -> TransportType {
        match self {
            Self::Ca | Self::Switch | Self::Router => TransportType::Ib,
            Self::Rnic => TransportType::Iwarp,
            Self::Usnic => TransportType::Usnic,
            Self::UsnicUdp => TransportType::UsnicUdp,
            Self::Unspecified => TransportType::Unspecified,
            Self::Unknown => TransportType::Unknown,
        }
    }
}

/// `enum ibv_transport_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[doc(alias = "ibv_transport_type")]
pub enum TransportType {
    /// `IBV_TRANSPORT_UNKNOWN` (-1)
    Unknown,
    /// `IBV_TRANSPORT_IB` (0): InfiniBand, including RoCE.
    Ib,
    /// `IBV_TRANSPORT_IWARP` (1)
    Iwarp,
    /// `IBV_TRANSPORT_USNIC` (2)
    Usnic,
    /// `IBV_TRANSPORT_USNIC_UDP` (3)
    UsnicUdp,
    /// `IBV_TRANSPORT_UNSPECIFIED` (4)
    Unspecified,
}

impl TransportType {
    /// The C enum value.
    pub const fn as_raw(self) -> i32 {
        match self {
            Self::Unknown => -1,
            Self::Ib => 0,
            Self::Iwarp => 1,
            Self::Usnic => 2,
            Self::UsnicUdp => 3,
            Self::Unspecified => 4,
        }
    }
}

/// An RDMA device found by [`devices`](super::devices).
///
/// Holds only what discovery learned; nothing is open until
/// [`Device::open_file`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(alias = "ibv_device")]
pub struct Device {
    pub(super) name: String,
    pub(super) sysfs_name: String,
    pub(super) index: Option<u32>,
    pub(super) dev: (u32, u32),
    pub(super) abi_version: u32,
    pub(super) node_type: NodeType,
    pub(super) node_guid: Option<u64>,
    pub(super) sys_image_guid: Option<u64>,
    pub(super) fw_version: Option<String>,
    pub(super) num_ports: Option<u32>,
    pub(super) driver_id: Option<RdmaDriverId>,
    pub(super) provider: Option<ProviderKind>,
    pub(super) ibdev_path: PathBuf,
    pub(super) sysfs_path: PathBuf,
    pub(super) uverbs_path: PathBuf,
}

impl Device {
    /// `ibv_get_device_name`: the kernel's name for the device (`"rxe0"`).
    #[doc(alias = "ibv_get_device_name")]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The uverbs character device's name (`"uverbs0"`; `ibv_device.dev_name`).
    pub fn dev_name(&self) -> &str {
        &self.sysfs_name
    }

    /// `ibv_get_device_index`: the kernel's device index, known only when
    /// discovery used netlink.
    #[doc(alias = "ibv_get_device_index")]
    pub fn index(&self) -> Option<u32> {
        self.index
    }

    /// The node GUID as a number (host byte order):
    /// `0x0002_c903_0003_1234` for sysfs `"0002:c903:0003:1234"`; 0 if
    /// unknown.
    ///
    /// `ibv_get_device_guid` returns the same GUID in network byte order
    /// (`__be64`); that raw value is [`Device::guid_be`].
    #[doc(alias = "ibv_get_device_guid")]
    pub fn guid(&self) -> u64 {
        self.node_guid.unwrap_or(0)
    }

    /// The node GUID exactly as `ibv_get_device_guid` returns it: the
    /// big-endian (`__be64`) representation, i.e. `guid().to_be()`.
    pub fn guid_be(&self) -> u64 {
        self.guid().to_be()
    }

    /// The system image GUID (host byte order), if known.
    pub fn sys_image_guid(&self) -> Option<u64> {
        self.sys_image_guid
    }

    /// The firmware version string, if the device has one.
    pub fn fw_version(&self) -> Option<&str> {
        self.fw_version.as_deref()
    }

    /// The number of physical ports, if known.
    pub fn num_ports(&self) -> Option<u32> {
        self.num_ports
    }

    /// `ibv_device.node_type`.
    pub fn node_type(&self) -> NodeType {
        self.node_type
    }

    /// `ibv_device.transport_type`.
    pub fn transport(&self) -> TransportType {
        self.node_type.transport()
    }

    /// The kernel driver id (`enum rdma_driver_id`), known only when
    /// discovery used netlink.
    pub fn driver_id(&self) -> Option<RdmaDriverId> {
        self.driver_id
    }

    /// The compiled-in provider that drives this device, or `None` (then
    /// [`Device::open_file`] fails with [`ErrorKind::NoProvider`]).
    pub fn provider(&self) -> Option<ProviderKind> {
        self.provider
    }

    /// The per-device uverbs ABI version (`uverbsN/abi_version`).
    pub fn abi_version(&self) -> u32 {
        self.abi_version
    }

    /// The character device number `(major, minor)`.
    pub fn dev_t(&self) -> (u32, u32) {
        self.dev
    }

    /// The uverbs character device, `/dev/infiniband/uverbsN`.
    pub fn uverbs_path(&self) -> &Path {
        &self.uverbs_path
    }

    /// The device's sysfs directory, `<sysfs>/class/infiniband/<name>`
    /// (`ibv_device.ibdev_path`).
    pub fn ibdev_path(&self) -> &Path {
        &self.ibdev_path
    }

    /// The uverbs sysfs directory, `<sysfs>/class/infiniband_verbs/uverbsN`
    /// (`ibv_device.dev_path`).
    pub fn sysfs_path(&self) -> &Path {
        &self.sysfs_path
    }

    /// Reads a sysfs attribute of the device, relative to
    /// [`Device::ibdev_path`] (`"hca_type"`, `"ports/1/state"`), without the
    /// trailing newline (rdma-core `ibv_read_ibdev_sysfs_file`).
    pub fn sysfs_attr(&self, relative: &str) -> Option<String> {
        super::sysfs::read_attr(&self.ibdev_path.join(relative))
    }

    /// Opens the uverbs character device read-write, close-on-exec: the
    /// first step of `ibv_open_device`. The device is closed by dropping
    /// the descriptor.
    ///
    /// Errors (verb `ibv_open_device`):
    /// * [`ErrorKind::NoProvider`]: no compiled-in provider drives the device;
    /// * [`ErrorKind::PermissionDenied`] (`EACCES`/`EPERM`): the message
    ///   says how to grant access;
    /// * [`ErrorKind::NoDevice`] (`ENOENT`/`ENODEV`/`ENXIO`): the device
    ///   file is gone (device removed, or `/dev/infiniband` not present in
    ///   this container);
    /// * any other errno as [`Error::from_errno`].
    #[doc(alias = "ibv_open_device")]
    pub fn open_file(&self) -> Result<OwnedFd> {
        const VERB: &str = "ibv_open_device";
        if self.provider.is_none() {
            crate::log::err(format_args!(
                "no userspace device-specific driver found for {} in this build",
                self.name
            ));
            return Err(Error::new(VERB, ErrorKind::NoProvider));
        }
        let flags = OFlags::RDWR | OFlags::CLOEXEC;
        match rustix::fs::open(&self.uverbs_path, flags, Mode::empty()) {
            Ok(fd) => {
                crate::log::debug(format_args!("opened {}", self.uverbs_path.display()));
                Ok(fd)
            }
            Err(e @ (Errno::ACCESS | Errno::PERM)) => {
                crate::log::err(format_args!(
                    "permission denied opening {} for {}; grant read/write access (ls -l {}; \
                     a udev rule with MODE=\"0666\" or a GROUP the user is in)",
                    self.uverbs_path.display(),
                    self.name,
                    self.uverbs_path.display()
                ));
                Err(Error::with_errno(VERB, ErrorKind::PermissionDenied, e))
            }
            Err(e @ (Errno::NOENT | Errno::NODEV | Errno::NXIO)) => {
                Err(Error::with_errno(VERB, ErrorKind::NoDevice, e))
            }
            Err(e) => Err(Error::from_errno(VERB, e)),
        }
    }
}
