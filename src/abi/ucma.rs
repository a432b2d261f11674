//! `<rdma/rdma_user_cm.h>`: the RDMA connection manager's user interface
//! (`/dev/infiniband/rdma_cm`, the kernel's `ucma`), ABI version 4.
//!
//! Every command is one `write()` of a [`UcmaHdr`] followed by the
//! command struct; commands with a response carry its address in their
//! `response` field and the kernel writes `out` bytes there. Type names
//! drop the `rdma_ucm_` prefix; field names are the kernel's. Socket
//! addresses are `struct __kernel_sockaddr_storage`, kept as 128 raw bytes
//! (the structs holding one are `align(8)` as in C).

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use super::uverbs::AhAttr;

/// `RDMA_USER_CM_ABI_VERSION` (sysfs `/sys/class/misc/rdma_cm/abi_version`).
pub const RDMA_USER_CM_ABI_VERSION: u32 = 4;
/// `RDMA_MAX_PRIVATE_DATA`: bytes of private data a command can carry.
pub const RDMA_MAX_PRIVATE_DATA: usize = 256;
/// `sizeof(struct __kernel_sockaddr_storage)`.
pub const SOCKADDR_STORAGE: usize = 128;

c_consts! {
    /// The `RDMA_USER_CM_CMD_*` command numbers with their C names.
    UCMA_CMD_IDS: u32, prefix "";
    RDMA_USER_CM_CMD_CREATE_ID = 0;
    RDMA_USER_CM_CMD_DESTROY_ID = 1;
    RDMA_USER_CM_CMD_BIND_IP = 2;
    RDMA_USER_CM_CMD_RESOLVE_IP = 3;
    RDMA_USER_CM_CMD_RESOLVE_ROUTE = 4;
    RDMA_USER_CM_CMD_QUERY_ROUTE = 5;
    RDMA_USER_CM_CMD_CONNECT = 6;
    RDMA_USER_CM_CMD_LISTEN = 7;
    RDMA_USER_CM_CMD_ACCEPT = 8;
    RDMA_USER_CM_CMD_REJECT = 9;
    RDMA_USER_CM_CMD_DISCONNECT = 10;
    RDMA_USER_CM_CMD_INIT_QP_ATTR = 11;
    RDMA_USER_CM_CMD_GET_EVENT = 12;
    RDMA_USER_CM_CMD_GET_OPTION = 13;
    RDMA_USER_CM_CMD_SET_OPTION = 14;
    RDMA_USER_CM_CMD_NOTIFY = 15;
    RDMA_USER_CM_CMD_JOIN_IP_MCAST = 16;
    RDMA_USER_CM_CMD_LEAVE_MCAST = 17;
    RDMA_USER_CM_CMD_MIGRATE_ID = 18;
    RDMA_USER_CM_CMD_QUERY = 19;
    RDMA_USER_CM_CMD_BIND = 20;
    RDMA_USER_CM_CMD_RESOLVE_ADDR = 21;
    RDMA_USER_CM_CMD_JOIN_MCAST = 22;
}

c_consts! {
    /// `enum rdma_ucm_port_space`, query options, option levels and names,
    /// multicast join flags.
    UCMA_MISC_IDS: u32, prefix "";
    RDMA_PS_IPOIB = 0x0002;
    RDMA_PS_IB = 0x013F;
    RDMA_PS_TCP = 0x0106;
    RDMA_PS_UDP = 0x0111;
    RDMA_USER_CM_QUERY_ADDR = 0;
    RDMA_USER_CM_QUERY_PATH = 1;
    RDMA_USER_CM_QUERY_GID = 2;
    RDMA_OPTION_ID = 0;
    RDMA_OPTION_IB = 1;
    RDMA_OPTION_ID_TOS = 0;
    RDMA_OPTION_ID_REUSEADDR = 1;
    RDMA_OPTION_ID_AFONLY = 2;
    RDMA_OPTION_ID_ACK_TIMEOUT = 3;
    RDMA_OPTION_IB_PATH = 1;
    RDMA_MC_JOIN_FLAG_FULLMEMBER = 0;
    RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER = 1;
}

abi_struct! {
    /// `struct rdma_ucm_cmd_hdr`: command number and the byte lengths of
    /// the command (after this header) and of the response.
    #[repr(C)]
    pub struct UcmaHdr {
        /// `RDMA_USER_CM_CMD_*`.
        pub cmd: u32,
        /// Bytes of command after the header.
        pub r#in: u16,
        /// Bytes of response the kernel may write.
        pub out: u16,
    }
}

abi_struct! {
    /// `struct rdma_ucm_create_id`.
    #[repr(C, align(8))]
    pub struct CreateId {
        /// The caller's context, echoed in every event of this id.
        pub uid: u64,
        /// Address of a [`CreateIdResp`].
        pub response: u64,
        /// `RDMA_PS_*`.
        pub ps: u16,
        /// `IB_QPT_*` (RC 2, UD 4).
        pub qp_type: u8,
        /// Reserved.
        pub reserved: [u8; 5],
    }
}

abi_struct! {
    /// `struct rdma_ucm_create_id_resp` (also the response of the join commands).
    #[repr(C)]
    pub struct CreateIdResp {
        /// The kernel's handle of the new id.
        pub id: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_destroy_id`.
    #[repr(C, align(8))]
    pub struct DestroyId {
        /// Address of a [`DestroyIdResp`].
        pub response: u64,
        /// Id handle.
        pub id: u32,
        /// Reserved.
        pub reserved: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_destroy_id_resp`.
    #[repr(C)]
    pub struct DestroyIdResp {
        /// How many events the kernel reported for the id.
        pub events_reported: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_bind`.
    #[repr(C, align(8))]
    pub struct Bind {
        /// Id handle.
        pub id: u32,
        /// Bytes of `addr` in use.
        pub addr_size: u16,
        /// Reserved.
        pub reserved: u16,
        /// The local address.
        pub addr: [u8; SOCKADDR_STORAGE],
    }
}

abi_struct! {
    /// `struct rdma_ucm_resolve_addr`.
    #[repr(C, align(8))]
    pub struct ResolveAddr {
        /// Id handle.
        pub id: u32,
        /// Milliseconds before `RDMA_CM_EVENT_ADDR_ERROR`.
        pub timeout_ms: u32,
        /// Bytes of `src_addr` in use (0: any).
        pub src_size: u16,
        /// Bytes of `dst_addr` in use.
        pub dst_size: u16,
        /// Reserved.
        pub reserved: u32,
        /// Source address.
        pub src_addr: [u8; SOCKADDR_STORAGE],
        /// Destination address.
        pub dst_addr: [u8; SOCKADDR_STORAGE],
    }
}

abi_struct! {
    /// `struct rdma_ucm_resolve_route`.
    #[repr(C)]
    pub struct ResolveRoute {
        /// Id handle.
        pub id: u32,
        /// Milliseconds before `RDMA_CM_EVENT_ROUTE_ERROR`.
        pub timeout_ms: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_query`.
    #[repr(C, align(8))]
    pub struct Query {
        /// Address of the response.
        pub response: u64,
        /// Id handle.
        pub id: u32,
        /// `RDMA_USER_CM_QUERY_*`.
        pub option: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_query_addr_resp`.
    #[repr(C, align(8))]
    pub struct QueryAddrResp {
        /// Node GUID of the bound device (network byte order), 0 if unbound.
        pub node_guid: u64,
        /// Port number.
        pub port_num: u8,
        /// Reserved.
        pub reserved: u8,
        /// P_Key.
        pub pkey: u16,
        /// Bytes of `src_addr` in use.
        pub src_size: u16,
        /// Bytes of `dst_addr` in use.
        pub dst_size: u16,
        /// Source address.
        pub src_addr: [u8; SOCKADDR_STORAGE],
        /// Destination address.
        pub dst_addr: [u8; SOCKADDR_STORAGE],
        /// The kernel's index of the bound device.
        pub ibdev_index: u32,
        /// Reserved.
        pub reserved1: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_conn_param`.
    #[repr(C)]
    pub struct ConnParam {
        /// The local QP number.
        pub qp_num: u32,
        /// Q_Key (UD).
        pub qkey: u32,
        /// Private data.
        pub private_data: [u8; RDMA_MAX_PRIVATE_DATA],
        /// Bytes of `private_data` in use.
        pub private_data_len: u8,
        /// The QP uses an SRQ.
        pub srq: u8,
        /// Incoming RDMA READs/atomics accepted at once.
        pub responder_resources: u8,
        /// Outgoing RDMA READs/atomics at once.
        pub initiator_depth: u8,
        /// Flow control (IB).
        pub flow_control: u8,
        /// Transport retries.
        pub retry_count: u8,
        /// RNR retries.
        pub rnr_retry_count: u8,
        /// Nonzero: the fields above are set.
        pub valid: u8,
    }
}

abi_struct! {
    /// `struct rdma_ucm_ud_param`.
    #[repr(C)]
    pub struct UdParam {
        /// The remote QP number.
        pub qp_num: u32,
        /// The remote Q_Key.
        pub qkey: u32,
        /// Address of the remote port.
        pub ah_attr: AhAttr,
        /// Private data.
        pub private_data: [u8; RDMA_MAX_PRIVATE_DATA],
        /// Bytes of `private_data` in use.
        pub private_data_len: u8,
        /// Reserved.
        pub reserved: [u8; 7],
    }
}

abi_struct! {
    /// `struct rdma_ucm_ece`.
    #[repr(C)]
    pub struct Ece {
        /// Vendor.
        pub vendor_id: u32,
        /// Options.
        pub attr_mod: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_connect`.
    #[repr(C)]
    pub struct Connect {
        /// Connection parameters.
        pub conn_param: ConnParam,
        /// Id handle.
        pub id: u32,
        /// Reserved.
        pub reserved: u32,
        /// Enhanced connection establishment options.
        pub ece: Ece,
    }
}

abi_struct! {
    /// `struct rdma_ucm_listen`.
    #[repr(C)]
    pub struct Listen {
        /// Id handle.
        pub id: u32,
        /// Pending connection requests the kernel queues.
        pub backlog: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_accept`.
    #[repr(C, align(8))]
    pub struct Accept {
        /// The caller's context for the accepted id.
        pub uid: u64,
        /// Connection parameters.
        pub conn_param: ConnParam,
        /// Id handle.
        pub id: u32,
        /// Reserved.
        pub reserved: u32,
        /// Enhanced connection establishment options.
        pub ece: Ece,
    }
}

abi_struct! {
    /// `struct rdma_ucm_reject`.
    #[repr(C)]
    pub struct Reject {
        /// Id handle.
        pub id: u32,
        /// Bytes of `private_data` in use.
        pub private_data_len: u8,
        /// Reject reason (0: the transport's default).
        pub reason: u8,
        /// Reserved.
        pub reserved: [u8; 2],
        /// Private data.
        pub private_data: [u8; RDMA_MAX_PRIVATE_DATA],
    }
}

abi_struct! {
    /// `struct rdma_ucm_disconnect`.
    #[repr(C)]
    pub struct Disconnect {
        /// Id handle.
        pub id: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_init_qp_attr`.
    #[repr(C, align(8))]
    pub struct InitQpAttr {
        /// Address of a `struct ib_uverbs_qp_attr`.
        pub response: u64,
        /// Id handle.
        pub id: u32,
        /// The state to compute attributes for (`IB_QPS_*`).
        pub qp_state: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_notify`.
    #[repr(C)]
    pub struct Notify {
        /// Id handle.
        pub id: u32,
        /// `enum ib_event_type`.
        pub event: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_join_mcast`.
    #[repr(C, align(8))]
    pub struct JoinMcast {
        /// Address of a [`CreateIdResp`].
        pub response: u64,
        /// The caller's context for the membership.
        pub uid: u64,
        /// Id handle.
        pub id: u32,
        /// Bytes of `addr` in use.
        pub addr_size: u16,
        /// `RDMA_MC_JOIN_FLAG_*`.
        pub join_flags: u16,
        /// The group address.
        pub addr: [u8; SOCKADDR_STORAGE],
    }
}

abi_struct! {
    /// `struct rdma_ucm_migrate_id`.
    #[repr(C, align(8))]
    pub struct MigrateId {
        /// Address of a [`MigrateResp`].
        pub response: u64,
        /// Id handle.
        pub id: u32,
        /// The file descriptor of the channel the id is on now (the
        /// command is written to the channel it moves to).
        pub fd: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_migrate_resp`.
    #[repr(C)]
    pub struct MigrateResp {
        /// Events the kernel reported for the id on its old channel.
        pub events_reported: u32,
    }
}

abi_struct! {
    /// `struct rdma_ucm_get_event`.
    #[repr(C, align(8))]
    pub struct GetEvent {
        /// Address of an [`EventResp`].
        pub response: u64,
    }
}

abi_struct! {
    /// `struct rdma_ucm_event_resp`. `param` is the union of
    /// `struct rdma_ucm_conn_param` and `struct rdma_ucm_ud_param` (only
    /// 4-byte aligned in C, so kept as bytes; see [`EventResp::conn`] and
    /// [`EventResp::ud`]).
    #[repr(C, align(8))]
    pub struct EventResp {
        /// The `uid` of the id (for a connection request: the listener's).
        pub uid: u64,
        /// Id handle (for a connection request: the new id's).
        pub id: u32,
        /// `enum rdma_cm_event_type`.
        pub event: u32,
        /// 0 or a negative errno / a transport status.
        pub status: u32,
        /// `union { conn; ud; }`.
        pub param: [u8; size_of::<UdParam>()],
        /// Reserved.
        pub reserved: u32,
        /// Enhanced connection establishment options.
        pub ece: Ece,
    }
}

impl EventResp {
    /// `param.conn`.
    pub fn conn(&self) -> ConnParam {
        zerocopy::FromBytes::read_from_prefix(&self.param[..]).map(|(p, _)| p).unwrap_or_default()
    }

    /// `param.ud`.
    pub fn ud(&self) -> UdParam {
        zerocopy::FromBytes::read_from_prefix(&self.param[..]).map(|(p, _)| p).unwrap_or_default()
    }
}

abi_struct! {
    /// `struct rdma_ucm_set_option`.
    #[repr(C, align(8))]
    pub struct SetOption {
        /// Address of the option value.
        pub optval: u64,
        /// Id handle.
        pub id: u32,
        /// `RDMA_OPTION_*` level.
        pub level: u32,
        /// Option name.
        pub optname: u32,
        /// Bytes at `optval`.
        pub optlen: u32,
    }
}

const_assert_eq!(size_of::<UcmaHdr>(), 8);
const_assert_eq!(size_of::<CreateId>(), 24);
const_assert_eq!(size_of::<Bind>(), 136);
const_assert_eq!(size_of::<ResolveAddr>(), 272);
const_assert_eq!(size_of::<QueryAddrResp>(), 280);
const_assert_eq!(size_of::<ConnParam>(), 272);
const_assert_eq!(size_of::<UdParam>(), 304);
const_assert_eq!(size_of::<Connect>(), 288);
const_assert_eq!(size_of::<Accept>(), 296);
const_assert_eq!(size_of::<Reject>(), 264);
const_assert_eq!(size_of::<JoinMcast>(), 152);
const_assert_eq!(size_of::<EventResp>(), 336);
const_assert_eq!(offset_of!(EventResp, param), 20);
const_assert_eq!(offset_of!(EventResp, ece), 328);
