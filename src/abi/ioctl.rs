//! `<rdma/rdma_user_ioctl_cmds.h>`: the `RDMA_VERBS_IOCTL` request, its
//! header and its attribute records.
//!
//! One `ioctl(fd, RDMA_VERBS_IOCTL, hdr)` carries an [`IoctlHdr`] followed
//! directly by `num_attrs` [`IoctlAttr`] records (the header's flexible
//! array `attrs[]` is not part of [`IoctlHdr`]; the command buffer in
//! `cmd/` lays the records out behind it). `hdr.length` is the total byte
//! length of header plus attributes.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `RDMA_IOCTL_MAGIC`: the ioctl "type" byte of every RDMA ioctl.
pub const RDMA_IOCTL_MAGIC: u8 = 0x1b;

/// Linux's generic `_IOC` encoding (x86, arm, arm64, riscv, s390, loongarch):
/// `dir << 30 | size << 16 | type << 8 | nr`.
const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u32 {
    (dir << 30) | ((size as u32) << 16) | ((ty as u32) << 8) | nr as u32
}

/// `_IOC_READ | _IOC_WRITE` in the generic encoding.
const IOC_READ_WRITE: u32 = 3;

/// `RDMA_VERBS_IOCTL` = `_IOWR(RDMA_IOCTL_MAGIC, 1, struct ib_uverbs_ioctl_hdr)`,
/// the single ioctl request number of the uverbs ioctl interface.
pub const RDMA_VERBS_IOCTL: u32 = ioc(IOC_READ_WRITE, RDMA_IOCTL_MAGIC, 1, size_of::<IoctlHdr>());
const_assert_eq!(RDMA_VERBS_IOCTL, 0xc018_1b01);

/// `UVERBS_ATTR_F_MANDATORY`: the kernel fails the call if it does not
/// know this attribute (user input).
pub const UVERBS_ATTR_F_MANDATORY: u16 = 1 << 0;
/// `UVERBS_ATTR_F_VALID_OUTPUT`: set by the kernel on an output attribute
/// it has written (kernel output; implied for mandatory attributes).
pub const UVERBS_ATTR_F_VALID_OUTPUT: u16 = 1 << 1;

/// `UVERBS_ID_NS_MASK`: the namespace bits of an object/method/attribute id.
pub const UVERBS_ID_NS_MASK: u16 = 0xf000;
/// `UVERBS_ID_NS_SHIFT`: shift of the namespace bits.
pub const UVERBS_ID_NS_SHIFT: u32 = 12;
/// `UVERBS_UDATA_DRIVER_DATA_NS`: namespace of driver-specific ids.
pub const UVERBS_UDATA_DRIVER_DATA_NS: u16 = 1;
/// `UVERBS_UDATA_DRIVER_DATA_FLAG` (`1 << UVERBS_ID_NS_SHIFT`): marks an id
/// as belonging to the driver namespace.
pub const UVERBS_UDATA_DRIVER_DATA_FLAG: u16 = 1 << UVERBS_ID_NS_SHIFT;

/// `struct ib_uverbs_attr`: one attribute of an ioctl command.
///
/// The C unions become plain fields: `attr_data` holds the two bytes of
/// `union { struct { __u8 elem_id; __u8 reserved; } enum_data; __u16 reserved; }`
/// (see [`IoctlAttr::elem_id`]); `data` holds
/// `union { __aligned_u64 data; __s64 data_s64; }` (see
/// [`IoctlAttr::data_s64`]).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C, align(8))]
pub struct IoctlAttr {
    /// Command-specific attribute id (`UVERBS_ATTR_*`).
    pub attr_id: u16,
    /// Length of the data a pointer attribute points to, or of an inline
    /// value (≤ 8 bytes are carried inline in `data`).
    pub len: u16,
    /// `UVERBS_ATTR_F_*` flags.
    pub flags: u16,
    /// The `attr_data` union: `enum_data.elem_id` in byte 0, reserved byte 1.
    pub attr_data: [u8; 2],
    /// Pointer to the data, inline data, an object handle or an fd
    /// (the `data`/`data_s64` union).
    pub data: u64,
}
const_assert_eq!(size_of::<IoctlAttr>(), 16);
const_assert_eq!(offset_of!(IoctlAttr, flags), 4);
const_assert_eq!(offset_of!(IoctlAttr, attr_data), 6);
const_assert_eq!(offset_of!(IoctlAttr, data), 8);

impl IoctlAttr {
    /// `attr_data.enum_data.elem_id`: the chosen element of an enum attribute.
    pub const fn elem_id(&self) -> u8 {
        self.attr_data[0]
    }

    /// Sets `attr_data.enum_data.elem_id` (and clears the reserved byte).
    pub const fn set_elem_id(&mut self, elem_id: u8) {
        self.attr_data = [elem_id, 0];
    }

    /// `data_s64`: the data word read as signed (FD_IN / FD_OUT attributes).
    pub const fn data_s64(&self) -> i64 {
        self.data as i64
    }

    /// Sets the data word from a signed value (`data_s64`).
    pub const fn set_data_s64(&mut self, v: i64) {
        self.data = v as u64;
    }
}

/// `struct ib_uverbs_ioctl_hdr`, without its flexible array
/// `struct ib_uverbs_attr attrs[]`, which follows it in memory.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C, align(8))]
pub struct IoctlHdr {
    /// Total length in bytes of the header and all attributes.
    pub length: u16,
    /// `UVERBS_OBJECT_*` id.
    pub object_id: u16,
    /// Method id within the object.
    pub method_id: u16,
    /// Number of [`IoctlAttr`] records following the header.
    pub num_attrs: u16,
    /// Reserved, must be zero.
    pub reserved1: u64,
    /// `enum rdma_driver_id` of the driver the driver-namespace attributes
    /// are meant for.
    pub driver_id: u32,
    /// Reserved, must be zero.
    pub reserved2: u32,
}
const_assert_eq!(size_of::<IoctlHdr>(), 24);
const_assert_eq!(offset_of!(IoctlHdr, num_attrs), 6);
const_assert_eq!(offset_of!(IoctlHdr, reserved1), 8);
const_assert_eq!(offset_of!(IoctlHdr, driver_id), 16);
const_assert_eq!(offset_of!(IoctlHdr, reserved2), 20);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_unions_roundtrip() {
        let mut a = IoctlAttr::default();
        a.set_elem_id(7);
        assert_eq!(a.elem_id(), 7);
        assert_eq!(a.as_bytes()[6], 7);
        a.set_data_s64(-1);
        assert_eq!(a.data, u64::MAX);
        assert_eq!(a.data_s64(), -1);
    }
}
