//! `<rdma/ib_user_ioctl_verbs.h>`: enums and structs shared by the ioctl
//! interface.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `enum rdma_driver_id`: which kernel driver backs a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, FromBytes, IntoBytes, Immutable, KnownLayout)]
#[repr(transparent)]
pub struct RdmaDriverId(pub u32);

impl RdmaDriverId {
    /// `RDMA_DRIVER_UNKNOWN`
    pub const UNKNOWN: Self = Self(0);
    /// `RDMA_DRIVER_RXE`
    pub const RXE: Self = Self(14);
    /// `RDMA_DRIVER_SIW`
    pub const SIW: Self = Self(18);
}
