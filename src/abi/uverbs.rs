//! `<rdma/ib_user_verbs.h>`: the write-format commands, their extended
//! forms and the structures they carry.
//!
//! # Command numbers
//!
//! `enum ib_uverbs_write_cmds` and the anonymous enum of extended commands
//! are plain `u32` constants named after the C enumerator without the
//! `IB_USER_VERBS_` prefix: `IB_USER_VERBS_CMD_POST_SEND` is
//! [`CMD_POST_SEND`], `IB_USER_VERBS_EX_CMD_CREATE_QP` is
//! [`EX_CMD_CREATE_QP`]. The tables [`CMD_IDS`] and [`EX_CMD_IDS`] list them
//! with their C names.
//!
//! # Commands and responses
//!
//! Each command struct implements [`WriteCommand`], whose associated type
//! names the response struct the kernel writes (or `()` if the command has
//! none). Type names drop the `ib_uverbs_` prefix (`struct
//! ib_uverbs_create_cq` is [`CreateCq`], `struct ib_uverbs_ex_create_cq` is
//! [`ExCreateCq`]); field names are the kernel's.
//!
//! # Omitted members
//!
//! Flexible array members (`driver_data[]`, `__u64 driver_data[0]`,
//! `send_wr[]`, `wc[]`, …) are left out: the provider's driver data or the
//! array elements follow the struct in the command buffer. Where the
//! omitted member's `__aligned_u64` type gave the C struct 8-byte
//! alignment, the Rust struct is `align(8)` too, so both sizes agree.
//! Anonymous unions become byte or integer fields with typed accessors.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;
use zerocopy::{FromBytes, Immutable, IntoBytes};

mod addr;
mod cq;
mod device;
mod flow;
mod misc;
mod pd_mr;
mod qp;
mod srq;
mod wr;

pub use addr::*;
pub use cq::*;
pub use device::*;
pub use flow::*;
pub use misc::*;
pub use pd_mr::*;
pub use qp::*;
pub use srq::*;
pub use wr::*;

/// `IB_USER_VERBS_ABI_VERSION`: the uverbs ABI version this transcription
/// speaks (sysfs `abi_version` of `/sys/class/infiniband_verbs`).
pub const IB_USER_VERBS_ABI_VERSION: u32 = 6;
/// `IB_USER_VERBS_CMD_THRESHOLD`: extended-only commands are numbered from here.
pub const IB_USER_VERBS_CMD_THRESHOLD: u32 = 50;
/// `IB_USER_VERBS_CMD_COMMAND_MASK`: the command-number bits of
/// [`CmdHdr::command`].
pub const IB_USER_VERBS_CMD_COMMAND_MASK: u32 = 0xff;
/// `IB_USER_VERBS_CMD_FLAG_EXTENDED`: set in [`CmdHdr::command`] for an
/// extended command (an [`ExCmdHdr`] follows the [`CmdHdr`]).
pub const IB_USER_VERBS_CMD_FLAG_EXTENDED: u32 = 0x8000_0000;
/// `IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE`: largest log2 size of an RWQ
/// indirection table the kernel accepts.
pub const IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE: u32 = 0x0d;
/// `IB_DEVICE_NAME_MAX`: size of a device-name buffer, NUL included.
pub const IB_DEVICE_NAME_MAX: usize = 64;

c_consts! {
    /// Every `enum ib_uverbs_write_cmds` value with its C name.
    CMD_IDS: u32, prefix "IB_USER_VERBS_";
    CMD_GET_CONTEXT = 0;
    CMD_QUERY_DEVICE = 1;
    CMD_QUERY_PORT = 2;
    CMD_ALLOC_PD = 3;
    CMD_DEALLOC_PD = 4;
    CMD_CREATE_AH = 5;
    CMD_MODIFY_AH = 6;
    CMD_QUERY_AH = 7;
    CMD_DESTROY_AH = 8;
    CMD_REG_MR = 9;
    CMD_REG_SMR = 10;
    CMD_REREG_MR = 11;
    CMD_QUERY_MR = 12;
    CMD_DEREG_MR = 13;
    CMD_ALLOC_MW = 14;
    CMD_BIND_MW = 15;
    CMD_DEALLOC_MW = 16;
    CMD_CREATE_COMP_CHANNEL = 17;
    CMD_CREATE_CQ = 18;
    CMD_RESIZE_CQ = 19;
    CMD_DESTROY_CQ = 20;
    CMD_POLL_CQ = 21;
    CMD_PEEK_CQ = 22;
    CMD_REQ_NOTIFY_CQ = 23;
    CMD_CREATE_QP = 24;
    CMD_QUERY_QP = 25;
    CMD_MODIFY_QP = 26;
    CMD_DESTROY_QP = 27;
    CMD_POST_SEND = 28;
    CMD_POST_RECV = 29;
    CMD_ATTACH_MCAST = 30;
    CMD_DETACH_MCAST = 31;
    CMD_CREATE_SRQ = 32;
    CMD_MODIFY_SRQ = 33;
    CMD_QUERY_SRQ = 34;
    CMD_DESTROY_SRQ = 35;
    CMD_POST_SRQ_RECV = 36;
    CMD_OPEN_XRCD = 37;
    CMD_CLOSE_XRCD = 38;
    CMD_CREATE_XSRQ = 39;
    CMD_OPEN_QP = 40;
}

c_consts! {
    /// Every extended command number with its C name.
    EX_CMD_IDS: u32, prefix "IB_USER_VERBS_";
    EX_CMD_QUERY_DEVICE = CMD_QUERY_DEVICE;
    EX_CMD_CREATE_CQ = CMD_CREATE_CQ;
    EX_CMD_CREATE_QP = CMD_CREATE_QP;
    EX_CMD_MODIFY_QP = CMD_MODIFY_QP;
    EX_CMD_CREATE_FLOW = IB_USER_VERBS_CMD_THRESHOLD;
    EX_CMD_DESTROY_FLOW = IB_USER_VERBS_CMD_THRESHOLD + 1;
    EX_CMD_CREATE_WQ = IB_USER_VERBS_CMD_THRESHOLD + 2;
    EX_CMD_MODIFY_WQ = IB_USER_VERBS_CMD_THRESHOLD + 3;
    EX_CMD_DESTROY_WQ = IB_USER_VERBS_CMD_THRESHOLD + 4;
    EX_CMD_CREATE_RWQ_IND_TBL = IB_USER_VERBS_CMD_THRESHOLD + 5;
    EX_CMD_DESTROY_RWQ_IND_TBL = IB_USER_VERBS_CMD_THRESHOLD + 6;
    EX_CMD_MODIFY_CQ = IB_USER_VERBS_CMD_THRESHOLD + 7;
}

/// A write-format command struct: which command number it is sent with
/// and which struct the kernel writes back.
///
/// For a legacy command the buffer is [`CmdHdr`] + the struct (+ driver
/// data); for an extended one ([`WriteCommand::EXTENDED`]) it is
/// [`CmdHdr`] + [`ExCmdHdr`] + the struct (+ driver data), with
/// [`IB_USER_VERBS_CMD_FLAG_EXTENDED`] set in `command`.
pub trait WriteCommand: IntoBytes + Immutable {
    /// The command number (`CMD_*` or `EX_CMD_*`).
    const COMMAND: u32;
    /// Whether this is an extended command.
    const EXTENDED: bool;
    /// The response struct the kernel writes, `()` if none.
    type Resp: FromBytes + IntoBytes + Immutable;
}

/// Implements [`WriteCommand`] for command structs.
macro_rules! write_cmd {
    ($( $cmd:ty => $num:expr, $ext:expr, $resp:ty; )*) => {
        $(
            #[doc = concat!(
                "`", stringify!($cmd), "` is sent as command `", stringify!($num),
                "`; the kernel answers with `", stringify!($resp), "`."
            )]
            impl $crate::abi::uverbs::WriteCommand for $cmd {
                const COMMAND: u32 = $num;
                const EXTENDED: bool = $ext;
                type Resp = $resp;
            }
        )*
    };
}
use write_cmd;

/// Copies a `T` out of the front of a union's byte storage.
pub(crate) fn union_get<T: FromBytes, const N: usize>(bytes: &[u8; N]) -> T {
    const { assert!(core::mem::size_of::<T>() <= N) };
    match T::read_from_prefix(bytes) {
        Ok((v, _)) => v,
        // The size is checked at compile time above; reading from a byte
        // array needs no alignment.
        Err(_) => unreachable!(),
    }
}

/// Stores `v` at the front of a union's byte storage and zeroes the rest.
pub(crate) fn union_set<T: IntoBytes + Immutable, const N: usize>(bytes: &mut [u8; N], v: &T) {
    const { assert!(core::mem::size_of::<T>() <= N) };
    *bytes = [0; N];
    bytes[..core::mem::size_of::<T>()].copy_from_slice(v.as_bytes());
}

abi_struct! {
    /// `struct ib_uverbs_cmd_hdr`: starts every write-format command.
    #[repr(C)]
    pub struct CmdHdr {
        /// Command number, `| IB_USER_VERBS_CMD_FLAG_EXTENDED` for extended ones.
        pub command: u32,
        /// Length of the command (this header included for legacy
        /// commands) in 32-bit words; for extended commands, the length
        /// of the core command struct in 8-byte words, headers excluded.
        pub in_words: u16,
        /// Length of the response buffer in 32-bit words (legacy) or
        /// 8-byte words (extended).
        pub out_words: u16,
    }
}
const_assert_eq!(size_of::<CmdHdr>(), 8);
const_assert_eq!(offset_of!(CmdHdr, out_words), 6);

abi_struct! {
    /// `struct ib_uverbs_ex_cmd_hdr`: follows [`CmdHdr`] in an extended command.
    #[repr(C, align(8))]
    pub struct ExCmdHdr {
        /// User address of the response buffer.
        pub response: u64,
        /// Length of the driver's command data in 8-byte words.
        pub provider_in_words: u16,
        /// Length of the driver's response data in 8-byte words.
        pub provider_out_words: u16,
        /// Reserved, must be zero.
        pub cmd_hdr_reserved: u32,
    }
}
const_assert_eq!(size_of::<ExCmdHdr>(), 16);
const_assert_eq!(offset_of!(ExCmdHdr, provider_in_words), 8);
const_assert_eq!(offset_of!(ExCmdHdr, cmd_hdr_reserved), 12);
