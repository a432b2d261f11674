//! Device discovery (feature `std`): which RDMA devices exist and which
//! compiled-in provider drives each — what `ibv_get_device_list` does.
//!
//! 1. **RDMA netlink** first (rdma-core `ibdev_nl.c`): an
//!    `RDMA_NLDEV_CMD_GET` dump lists the devices (index, name, node GUID,
//!    node type, ports), then `RDMA_NLDEV_CMD_GET_CHARDEV` for `"uverbs"`
//!    gives each device's `uverbsN` name, `dev_t`, ABI version and kernel
//!    **driver id**. The driver id is the only way to recognise siw.
//! 2. **Sysfs** if netlink is unavailable (rdma-core `init.c`
//!    `find_sysfs_devs`): `<sysfs>/class/infiniband_verbs/abi_version` must
//!    be within [`MIN_KERNEL_ABI`]`..=`[`MAX_KERNEL_ABI`], then each
//!    `uverbsN/{ibdev,dev,abi_version}` and the device's
//!    `class/infiniband/<ibdev>/{node_guid,node_type,...}`. Driver ids are
//!    unknown here: rxe is matched by its name prefix, siw cannot be.
//! 3. Devices whose `/dev/infiniband/uverbsN` file is missing are left out
//!    (as rdma-core does), with a [`Warning::NoDeviceFile`].
//! 4. Each device is matched to a provider (`providers::match_device`).
//!    Unlike rdma-core, devices without a provider stay in the list with
//!    [`Device::provider`] `None` and a [`Warning::NoProvider`], so tools can
//!    show them; opening one fails with [`ErrorKind::NoProvider`](crate::ErrorKind::NoProvider).
//!
//! The sysfs root honours `SYSFS_PATH` like rdma-core; [`DiscoveryConfig`]
//! overrides it, the device directory and netlink for tests on fixture
//! trees.
//!
//! ```no_run
//! let list = verbs::discovery::devices()?;
//! for w in list.warnings() {
//!     eprintln!("{w}");
//! }
//! for dev in &list {
//!     println!("{:<16} {:016x}", dev.name(), dev.guid());
//! }
//! let fd = list.by_name("rxe0")?.open_file()?;
//! # drop(fd);
//! # Ok::<(), verbs::Error>(())
//! ```

mod device;
mod devlist;
mod list;
pub mod netlink;
pub mod nlsock;
pub mod sysfs;
mod warning;

pub use device::{Device, NodeType, TransportType};
pub use devlist::{DeviceList, Source};
pub use list::{devices, DiscoveryConfig, MAX_KERNEL_ABI, MIN_KERNEL_ABI};
pub use nlsock::copy_on_fork;
pub use warning::{
    can_exceed_memlock, check_memlock, memlock_warning, Warning, MEMLOCK_WARN_LIMIT,
};
