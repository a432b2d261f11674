//! `<rdma/rdma_netlink.h>` (the RDMA netlink "nldev" interface) and the
//! generic netlink framing of `<linux/netlink.h>` it travels in.
//!
//! Only what device discovery and the fork-safety query use is transcribed.
//! Numbers were checked against `/usr/include/rdma/rdma_netlink.h` and
//! `/usr/include/linux/netlink.h` (linux-libc-dev); attribute payload types
//! against the kernel's `drivers/infiniband/core/nldev.c`.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `NETLINK_RDMA`: the netlink protocol number of the RDMA subsystem.
pub const NETLINK_RDMA: u32 = 20;

/// `RDMA_NL_NLDEV`: the netlink client index of the RDMA device interface.
pub const RDMA_NL_NLDEV: u16 = 5;

/// `RDMA_NL_GET_TYPE(client, op)`: the `nlmsg_type` of an RDMA netlink
/// message, `(client << 10) + op`.
#[doc(alias = "RDMA_NL_GET_TYPE")]
pub const fn rdma_nl_get_type(client: u16, op: u16) -> u16 {
    (client << 10) + op
}

/// `RDMA_NL_GET_CLIENT(type)`: the client part of an `nlmsg_type`.
pub const fn rdma_nl_get_client(ty: u16) -> u16 {
    (ty & (((1 << 6) - 1) << 10)) >> 10
}

/// `RDMA_NL_GET_OP(type)`: the operation part of an `nlmsg_type`.
pub const fn rdma_nl_get_op(ty: u16) -> u16 {
    ty & ((1 << 10) - 1)
}

/// `RDMA_NLDEV_CMD_GET`: device information (can dump all devices).
pub const RDMA_NLDEV_CMD_GET: u16 = 1;
/// `RDMA_NLDEV_CMD_PORT_GET`: port information (can dump).
pub const RDMA_NLDEV_CMD_PORT_GET: u16 = 5;
/// `RDMA_NLDEV_CMD_SYS_GET`: system-wide RDMA settings.
pub const RDMA_NLDEV_CMD_SYS_GET: u16 = 6;
/// `RDMA_NLDEV_CMD_GET_CHARDEV`: the character device a client (`"uverbs"`,
/// `"umad"`, ...) exposes for a device.
pub const RDMA_NLDEV_CMD_GET_CHARDEV: u16 = 15;

/// `RDMA_NLDEV_ATTR_PAD`: alignment padding before a 64-bit attribute.
pub const RDMA_NLDEV_ATTR_PAD: u16 = 0;
/// `RDMA_NLDEV_ATTR_DEV_INDEX` (u32): the kernel's device index.
pub const RDMA_NLDEV_ATTR_DEV_INDEX: u16 = 1;
/// `RDMA_NLDEV_ATTR_DEV_NAME` (NUL-terminated string): e.g. `"rxe0"`.
pub const RDMA_NLDEV_ATTR_DEV_NAME: u16 = 2;
/// `RDMA_NLDEV_ATTR_PORT_INDEX` (u32): in a `CMD_GET` reply, the number of
/// the last port (`rdma_end_port`).
pub const RDMA_NLDEV_ATTR_PORT_INDEX: u16 = 3;
/// `RDMA_NLDEV_ATTR_CAP_FLAGS` (u64): device capability flags.
pub const RDMA_NLDEV_ATTR_CAP_FLAGS: u16 = 4;
/// `RDMA_NLDEV_ATTR_FW_VERSION` (string): absent if the device has none.
pub const RDMA_NLDEV_ATTR_FW_VERSION: u16 = 5;
/// `RDMA_NLDEV_ATTR_NODE_GUID` (u64, host byte order).
pub const RDMA_NLDEV_ATTR_NODE_GUID: u16 = 6;
/// `RDMA_NLDEV_ATTR_SYS_IMAGE_GUID` (u64, host byte order).
pub const RDMA_NLDEV_ATTR_SYS_IMAGE_GUID: u16 = 7;
/// `RDMA_NLDEV_ATTR_DEV_NODE_TYPE` (u8): `enum rdma_node_type`.
pub const RDMA_NLDEV_ATTR_DEV_NODE_TYPE: u16 = 14;
/// `RDMA_NLDEV_SYS_ATTR_NETNS_MODE` (u8).
pub const RDMA_NLDEV_SYS_ATTR_NETNS_MODE: u16 = 66;
/// `RDMA_NLDEV_ATTR_DEV_PROTOCOL` (string): `"ib"`, `"iw"`, `"roce"`, ...
pub const RDMA_NLDEV_ATTR_DEV_PROTOCOL: u16 = 67;
/// `RDMA_NLDEV_ATTR_CHARDEV_TYPE` (string): the client name, `"uverbs"`.
pub const RDMA_NLDEV_ATTR_CHARDEV_TYPE: u16 = 69;
/// `RDMA_NLDEV_ATTR_CHARDEV_NAME` (string): the `/dev` file name, `"uverbs0"`.
pub const RDMA_NLDEV_ATTR_CHARDEV_NAME: u16 = 70;
/// `RDMA_NLDEV_ATTR_CHARDEV_ABI` (u64): the per-device ABI version.
pub const RDMA_NLDEV_ATTR_CHARDEV_ABI: u16 = 71;
/// `RDMA_NLDEV_ATTR_CHARDEV` (u64): the `dev_t` in the kernel's
/// `huge_encode_dev` format.
pub const RDMA_NLDEV_ATTR_CHARDEV: u16 = 72;
/// `RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID` (the header says u64; the kernel's
/// `ib_uverbs_get_nl_info` puts a u32): `enum rdma_driver_id`.
pub const RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID: u16 = 73;
/// `RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK` (u8): the kernel copies pinned pages on
/// fork, so `madvise(MADV_DONTFORK)` is unneeded.
pub const RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK: u16 = 93;

/// `enum rdma_node_type` value `RDMA_NODE_IB_CA`.
pub const RDMA_NODE_IB_CA: u32 = 1;
/// `RDMA_NODE_IB_SWITCH`
pub const RDMA_NODE_IB_SWITCH: u32 = 2;
/// `RDMA_NODE_IB_ROUTER`
pub const RDMA_NODE_IB_ROUTER: u32 = 3;
/// `RDMA_NODE_RNIC`
pub const RDMA_NODE_RNIC: u32 = 4;
/// `RDMA_NODE_USNIC`
pub const RDMA_NODE_USNIC: u32 = 5;
/// `RDMA_NODE_USNIC_UDP`
pub const RDMA_NODE_USNIC_UDP: u32 = 6;
/// `RDMA_NODE_UNSPECIFIED`
pub const RDMA_NODE_UNSPECIFIED: u32 = 7;

// ---- <linux/netlink.h> framing -------------------------------------------

/// `NLMSG_NOOP`
pub const NLMSG_NOOP: u16 = 1;
/// `NLMSG_ERROR`: the payload is a [`NlMsgErr`].
pub const NLMSG_ERROR: u16 = 2;
/// `NLMSG_DONE`: end of a multipart (dump) reply.
pub const NLMSG_DONE: u16 = 3;
/// `NLMSG_OVERRUN`
pub const NLMSG_OVERRUN: u16 = 4;

/// `NLM_F_REQUEST`
pub const NLM_F_REQUEST: u16 = 0x1;
/// `NLM_F_MULTI`: part of a multipart reply ended by `NLMSG_DONE`.
pub const NLM_F_MULTI: u16 = 0x2;
/// `NLM_F_ACK`
pub const NLM_F_ACK: u16 = 0x4;
/// `NLM_F_DUMP_INTR`: the dump was interrupted and may be inconsistent.
pub const NLM_F_DUMP_INTR: u16 = 0x10;
/// `NLM_F_DUMP` (`NLM_F_ROOT | NLM_F_MATCH`)
pub const NLM_F_DUMP: u16 = 0x300;

/// `NLA_F_NESTED`
pub const NLA_F_NESTED: u16 = 1 << 15;
/// `NLA_F_NET_BYTEORDER`
pub const NLA_F_NET_BYTEORDER: u16 = 1 << 14;
/// `NLA_TYPE_MASK`: the attribute type without the two flag bits.
pub const NLA_TYPE_MASK: u16 = !(NLA_F_NESTED | NLA_F_NET_BYTEORDER);

/// `NLMSG_ALIGNTO` and `NLA_ALIGNTO`: both framings align to 4 bytes.
pub const NL_ALIGNTO: usize = 4;

/// `NLMSG_ALIGN(len)` / `NLA_ALIGN(len)`, saturating instead of wrapping.
pub const fn nl_align(len: usize) -> usize {
    len.saturating_add(NL_ALIGNTO - 1) & !(NL_ALIGNTO - 1)
}

/// `struct nlmsghdr` (native byte order).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct NlMsgHdr {
    /// `nlmsg_len`: length of the message including this header.
    pub nlmsg_len: u32,
    /// `nlmsg_type`
    pub nlmsg_type: u16,
    /// `nlmsg_flags`
    pub nlmsg_flags: u16,
    /// `nlmsg_seq`
    pub nlmsg_seq: u32,
    /// `nlmsg_pid`: the sending port id (0 for the kernel).
    pub nlmsg_pid: u32,
}

/// `struct nlattr`: a type-length-value attribute header; `nla_len`
/// includes this header but not the padding after the payload.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct NlAttr {
    /// `nla_len`
    pub nla_len: u16,
    /// `nla_type` (with the `NLA_F_*` flag bits)
    pub nla_type: u16,
}

/// `struct nlmsgerr`: payload of an `NLMSG_ERROR` message; `error` is a
/// negative errno (0 for an acknowledgement), followed by the offending
/// request's header.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
#[repr(C)]
pub struct NlMsgErr {
    /// `error`: `-errno`, or 0.
    pub error: i32,
    /// `msg`: the header of the request that failed.
    pub msg: NlMsgHdr,
}

/// `NLMSG_HDRLEN`
pub const NLMSG_HDRLEN: usize = core::mem::size_of::<NlMsgHdr>();
/// `NLA_HDRLEN`
pub const NLA_HDRLEN: usize = core::mem::size_of::<NlAttr>();

static_assertions::const_assert_eq!(core::mem::size_of::<NlMsgHdr>(), 16);
static_assertions::const_assert_eq!(core::mem::size_of::<NlAttr>(), 4);
static_assertions::const_assert_eq!(core::mem::size_of::<NlMsgErr>(), 20);
static_assertions::const_assert_eq!(core::mem::offset_of!(NlMsgHdr, nlmsg_type), 4);
static_assertions::const_assert_eq!(core::mem::offset_of!(NlMsgHdr, nlmsg_seq), 8);
static_assertions::const_assert_eq!(core::mem::offset_of!(NlMsgErr, msg), 4);
static_assertions::const_assert_eq!(rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 5121);
static_assertions::const_assert_eq!(
    rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV),
    5135
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_round_trips_through_client_and_op() {
        let ty = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET);
        assert_eq!(ty, 5126);
        assert_eq!(rdma_nl_get_client(ty), RDMA_NL_NLDEV);
        assert_eq!(rdma_nl_get_op(ty), RDMA_NLDEV_CMD_SYS_GET);
    }

    #[test]
    fn align_rounds_up_to_four() {
        assert_eq!(nl_align(0), 0);
        assert_eq!(nl_align(5), 8);
        assert_eq!(nl_align(8), 8);
        assert_eq!(nl_align(usize::MAX), usize::MAX & !3);
    }
}
