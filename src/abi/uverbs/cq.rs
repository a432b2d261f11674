//! Completion queues: create (legacy and extended), resize, poll, notify,
//! destroy, moderation, and the work completion record.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use super::{
    write_cmd, CMD_CREATE_CQ, CMD_DESTROY_CQ, CMD_POLL_CQ, CMD_REQ_NOTIFY_CQ, CMD_RESIZE_CQ,
    EX_CMD_CREATE_CQ, EX_CMD_MODIFY_CQ,
};

c_consts! {
    /// `enum ib_uverbs_ex_create_cq_flags`.
    CQ_FLAGS_IDS: u32, prefix "IB_UVERBS_";
    CQ_FLAGS_TIMESTAMP_COMPLETION = 1 << 0;
    CQ_FLAGS_IGNORE_OVERRUN = 1 << 1;
}

c_consts! {
    /// `enum ib_uverbs_wc_opcode`.
    WC_OPCODE_IDS: u32, prefix "IB_UVERBS_";
    WC_SEND = 0;
    WC_RDMA_WRITE = 1;
    WC_RDMA_READ = 2;
    WC_COMP_SWAP = 3;
    WC_FETCH_ADD = 4;
    WC_BIND_MW = 5;
    WC_LOCAL_INV = 6;
    WC_TSO = 7;
}

abi_struct! {
    /// `struct ib_uverbs_create_cq` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct CreateCq {
        /// User address of the [`CreateCqResp`] buffer.
        pub response: u64,
        /// Value returned in completion events for this CQ.
        pub user_handle: u64,
        /// Minimum number of entries.
        pub cqe: u32,
        /// Completion vector.
        pub comp_vector: u32,
        /// Completion channel fd, or -1.
        pub comp_channel: i32,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<CreateCq>(), 32);
const_assert_eq!(offset_of!(CreateCq, comp_channel), 24);

abi_struct! {
    /// `struct ib_uverbs_ex_create_cq`.
    #[repr(C, align(8))]
    pub struct ExCreateCq {
        /// Value returned in completion events for this CQ.
        pub user_handle: u64,
        /// Minimum number of entries.
        pub cqe: u32,
        /// Completion vector.
        pub comp_vector: u32,
        /// Completion channel fd, or -1.
        pub comp_channel: i32,
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// `CQ_FLAGS_*` bits.
        pub flags: u32,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<ExCreateCq>(), 32);
const_assert_eq!(offset_of!(ExCreateCq, flags), 24);

abi_struct! {
    /// `struct ib_uverbs_create_cq_resp` (`driver_data[0]` omitted).
    #[repr(C, align(8))]
    pub struct CreateCqResp {
        /// Handle of the new CQ.
        pub cq_handle: u32,
        /// Actual number of entries.
        pub cqe: u32,
    }
}
const_assert_eq!(size_of::<CreateCqResp>(), 8);

abi_struct! {
    /// `struct ib_uverbs_ex_create_cq_resp`.
    #[repr(C, align(8))]
    pub struct ExCreateCqResp {
        /// The legacy response.
        pub base: CreateCqResp,
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// Number of bytes of this struct the kernel wrote.
        pub response_length: u32,
    }
}
const_assert_eq!(size_of::<ExCreateCqResp>(), 16);
const_assert_eq!(offset_of!(ExCreateCqResp, comp_mask), 8);

abi_struct! {
    /// `struct ib_uverbs_resize_cq` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct ResizeCq {
        /// User address of the [`ResizeCqResp`] buffer.
        pub response: u64,
        /// Handle of the CQ.
        pub cq_handle: u32,
        /// New minimum number of entries.
        pub cqe: u32,
    }
}
const_assert_eq!(size_of::<ResizeCq>(), 16);

abi_struct! {
    /// `struct ib_uverbs_resize_cq_resp` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct ResizeCqResp {
        /// Actual number of entries.
        pub cqe: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<ResizeCqResp>(), 8);

abi_struct! {
    /// `struct ib_uverbs_poll_cq`.
    #[repr(C, align(8))]
    pub struct PollCq {
        /// User address of the [`PollCqResp`] + `ne` × [`Wc`] buffer.
        pub response: u64,
        /// Handle of the CQ.
        pub cq_handle: u32,
        /// Maximum number of completions to return.
        pub ne: u32,
    }
}
const_assert_eq!(size_of::<PollCq>(), 16);

abi_struct! {
    /// `struct ib_uverbs_wc`: a work completion as the kernel's poll
    /// command returns it.
    #[repr(C, align(8))]
    pub struct Wc {
        /// The WR's `wr_id`.
        pub wr_id: u64,
        /// `enum ib_wc_status`.
        pub status: u32,
        /// `WC_*` opcode.
        pub opcode: u32,
        /// Vendor error syndrome.
        pub vendor_err: u32,
        /// Bytes transferred.
        pub byte_len: u32,
        /// The `ex` union: `imm_data` (`__be32`) or `invalidate_rkey`; see
        /// [`Wc::imm_data`] / [`Wc::invalidate_rkey`].
        pub ex: u32,
        /// Local QP number.
        pub qp_num: u32,
        /// Remote QP number (UD).
        pub src_qp: u32,
        /// `IBV_WC_*` flags.
        pub wc_flags: u32,
        /// P_Key index (GSI).
        pub pkey_index: u16,
        /// Source LID.
        pub slid: u16,
        /// Service level.
        pub sl: u8,
        /// Destination LID path bits.
        pub dlid_path_bits: u8,
        /// Port number.
        pub port_num: u8,
        /// Reserved.
        pub reserved: u8,
    }
}
const_assert_eq!(size_of::<Wc>(), 48);
const_assert_eq!(offset_of!(Wc, ex), 24);
const_assert_eq!(offset_of!(Wc, pkey_index), 40);
const_assert_eq!(offset_of!(Wc, reserved), 47);

impl Wc {
    /// `ex.imm_data`: the immediate data, as stored (network byte order
    /// bits, like `ibv_wc::imm_data`).
    pub const fn imm_data(&self) -> u32 {
        self.ex
    }

    /// `ex.invalidate_rkey`: the invalidated rkey (host order).
    pub const fn invalidate_rkey(&self) -> u32 {
        self.ex
    }
}

abi_struct! {
    /// `struct ib_uverbs_poll_cq_resp` (the `wc[]` array that follows is omitted).
    #[repr(C, align(8))]
    pub struct PollCqResp {
        /// Number of [`Wc`] records that follow.
        pub count: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<PollCqResp>(), 8);

abi_struct! {
    /// `struct ib_uverbs_req_notify_cq`.
    #[repr(C)]
    pub struct ReqNotifyCq {
        /// Handle of the CQ.
        pub cq_handle: u32,
        /// Nonzero: notify only on solicited completions.
        pub solicited_only: u32,
    }
}
const_assert_eq!(size_of::<ReqNotifyCq>(), 8);

abi_struct! {
    /// `struct ib_uverbs_destroy_cq`.
    #[repr(C, align(8))]
    pub struct DestroyCq {
        /// User address of the [`DestroyCqResp`] buffer.
        pub response: u64,
        /// Handle of the CQ.
        pub cq_handle: u32,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<DestroyCq>(), 16);

abi_struct! {
    /// `struct ib_uverbs_destroy_cq_resp`.
    #[repr(C)]
    pub struct DestroyCqResp {
        /// Completion events delivered for this CQ.
        pub comp_events_reported: u32,
        /// Async events delivered for this CQ.
        pub async_events_reported: u32,
    }
}
const_assert_eq!(size_of::<DestroyCqResp>(), 8);

abi_struct! {
    /// `struct ib_uverbs_cq_moderation`.
    #[repr(C)]
    pub struct CqModeration {
        /// Completions before an event.
        pub cq_count: u16,
        /// Microseconds before an event.
        pub cq_period: u16,
    }
}
const_assert_eq!(size_of::<CqModeration>(), 4);

abi_struct! {
    /// `struct ib_uverbs_ex_modify_cq`.
    #[repr(C)]
    pub struct ExModifyCq {
        /// Handle of the CQ.
        pub cq_handle: u32,
        /// Which attributes to modify.
        pub attr_mask: u32,
        /// New moderation.
        pub attr: CqModeration,
        /// Reserved, must be zero.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<ExModifyCq>(), 16);
const_assert_eq!(offset_of!(ExModifyCq, attr), 8);

write_cmd! {
    CreateCq => CMD_CREATE_CQ, false, CreateCqResp;
    ExCreateCq => EX_CMD_CREATE_CQ, true, ExCreateCqResp;
    ResizeCq => CMD_RESIZE_CQ, false, ResizeCqResp;
    PollCq => CMD_POLL_CQ, false, PollCqResp;
    ReqNotifyCq => CMD_REQ_NOTIFY_CQ, false, ();
    DestroyCq => CMD_DESTROY_CQ, false, DestroyCqResp;
    ExModifyCq => EX_CMD_MODIFY_CQ, true, ();
}
