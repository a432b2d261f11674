//! Connection manager events (`struct rdma_cm_event`,
//! `rdma_get_cm_event`): what happened to which id, with the peer's
//! connection parameters and private data.

use crate::abi::ucma::{EventResp, RDMA_MAX_PRIVATE_DATA};
use crate::ah::AhAttr;

use super::channel::EventChannel;
use super::id::CmId;

macro_rules! event_kinds {
    ($($name:ident = $v:expr, $c:literal, $doc:literal;)*) => {
        /// `enum rdma_cm_event_type`.
        #[doc(alias = "rdma_cm_event_type")]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum EventKind {
            $(#[doc = concat!("`", $c, "`: ", $doc)] $name,)*
            /// A value this library does not know.
            Other(u32),
        }

        impl EventKind {
            /// Converts the kernel's value.
            pub const fn from_raw(v: u32) -> Self {
                match v { $($v => Self::$name,)* other => Self::Other(other) }
            }

            /// The kernel's value.
            pub const fn raw(self) -> u32 {
                match self { $(Self::$name => $v,)* Self::Other(v) => v }
            }

            /// `rdma_event_str`: the C name (`"RDMA_CM_EVENT_ESTABLISHED"`).
            #[doc(alias = "rdma_event_str")]
            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$name => $c,)* Self::Other(_) => "UNKNOWN EVENT" }
            }
        }
    };
}

event_kinds! {
    AddrResolved = 0, "RDMA_CM_EVENT_ADDR_RESOLVED", "the destination address was resolved (`rdma_resolve_addr`).";
    AddrError = 1, "RDMA_CM_EVENT_ADDR_ERROR", "address resolution failed.";
    RouteResolved = 2, "RDMA_CM_EVENT_ROUTE_RESOLVED", "the route was resolved (`rdma_resolve_route`).";
    RouteError = 3, "RDMA_CM_EVENT_ROUTE_ERROR", "route resolution failed.";
    ConnectRequest = 4, "RDMA_CM_EVENT_CONNECT_REQUEST", "a peer asks to connect; the event carries the new id.";
    ConnectResponse = 5, "RDMA_CM_EVENT_CONNECT_RESPONSE", "the passive side accepted (IB/RoCE; handled inside [`CmId::establish`]).";
    ConnectError = 6, "RDMA_CM_EVENT_CONNECT_ERROR", "establishing the connection failed.";
    Unreachable = 7, "RDMA_CM_EVENT_UNREACHABLE", "the remote side did not answer.";
    Rejected = 8, "RDMA_CM_EVENT_REJECTED", "the remote side rejected the request (or nobody listens).";
    Established = 9, "RDMA_CM_EVENT_ESTABLISHED", "the connection is up.";
    Disconnected = 10, "RDMA_CM_EVENT_DISCONNECTED", "the connection was closed.";
    DeviceRemoval = 11, "RDMA_CM_EVENT_DEVICE_REMOVAL", "the id's device went away.";
    MulticastJoin = 12, "RDMA_CM_EVENT_MULTICAST_JOIN", "a multicast join completed.";
    MulticastError = 13, "RDMA_CM_EVENT_MULTICAST_ERROR", "a multicast membership failed.";
    AddrChange = 14, "RDMA_CM_EVENT_ADDR_CHANGE", "the id's network address changed.";
    TimewaitExit = 15, "RDMA_CM_EVENT_TIMEWAIT_EXIT", "the QP left its time-wait state.";
}

/// The peer's connection parameters and private data, as they arrived
/// (`struct rdma_conn_param` of an event).
#[doc(alias = "rdma_conn_param")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerParam {
    /// The peer's QP number (a connection request or response).
    pub qp_num: u32,
    /// The peer's incoming RDMA READ/atomic depth.
    pub responder_resources: u8,
    /// The peer's outgoing RDMA READ/atomic depth.
    pub initiator_depth: u8,
    /// Flow control.
    pub flow_control: u8,
    /// Transport retries.
    pub retry_count: u8,
    /// RNR retries.
    pub rnr_retry_count: u8,
    /// The peer uses an SRQ.
    pub srq: bool,
    private: [u8; RDMA_MAX_PRIVATE_DATA],
    private_len: u8,
}

impl PeerParam {
    /// The private data the peer sent. On InfiniBand/RoCE the kernel
    /// reports the transport's whole private-data field (e.g. 56 bytes of a
    /// connection request, zero-padded after what the peer gave); on
    /// iWARP exactly what was sent.
    pub fn private_data(&self) -> &[u8] {
        &self.private[..usize::from(self.private_len)]
    }
}

/// What a UD peer announced (`struct rdma_ud_param`): its QP number,
/// Q_Key and the address to reach it.
#[doc(alias = "rdma_ud_param")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdPeer {
    /// The peer's QP number.
    pub qp_num: u32,
    /// The peer's Q_Key.
    pub qkey: u32,
    /// The address handle attributes that reach the peer.
    pub ah_attr: AhAttr,
    private: [u8; RDMA_MAX_PRIVATE_DATA],
    private_len: u8,
}

impl UdPeer {
    /// The private data of a UD request or reply.
    pub fn private_data(&self) -> &[u8] {
        &self.private[..usize::from(self.private_len)]
    }
}

/// One event (`struct rdma_cm_event`, copied out of the kernel, so there
/// is nothing to acknowledge: dropping it is `rdma_ack_cm_event`). A
/// connection request carries the new id; take it with
/// [`Event::take_request`], or dropping the event destroys the new id,
/// which rejects the request.
#[derive(Debug)]
pub struct Event<'ch> {
    ch: &'ch EventChannel,
    kind: EventKind,
    status: i32,
    handle: u32,
    context: u64,
    resp: EventResp,
    request: Option<CmId<'ch>>,
}

impl<'ch> Event<'ch> {
    pub(crate) fn new(ch: &'ch EventChannel, resp: EventResp, request: Option<CmId<'ch>>) -> Self {
        Self {
            ch,
            kind: EventKind::from_raw(resp.event),
            status: resp.status as i32,
            handle: resp.id,
            context: resp.uid,
            resp,
            request,
        }
    }

    /// The event type.
    pub fn kind(&self) -> EventKind {
        self.kind
    }

    /// `status`: 0, a negative errno (e.g. `-ETIMEDOUT` with an
    /// [`AddrError`](EventKind::AddrError)) or, for
    /// [`Rejected`](EventKind::Rejected), the transport's reject reason.
    pub fn status(&self) -> i32 {
        self.status
    }

    /// `rdma_reject_msg`: the status of a [`Rejected`](EventKind::Rejected)
    /// event in words (`"invalid service ID"`: nobody listens there, on
    /// InfiniBand/RoCE; `"consumer defined"`: the peer called
    /// `rdma_reject`; `"refused by remote application"` on iWARP). See
    /// [`reject_msg`](super::reject_msg).
    #[doc(alias = "rdma_reject_msg")]
    pub fn reject_msg(&self) -> &'static str {
        super::reason::reject_msg(self.status)
    }

    /// The kernel handle of the id the event is about (for a connection
    /// request: the new id's).
    pub fn id_handle(&self) -> u32 {
        self.handle
    }

    /// The context given when the id was created (for a connection
    /// request: the listener's).
    pub fn context(&self) -> u64 {
        self.context
    }

    /// Whether the event is about `id` (for a connection request: whether
    /// `id` is the listener it arrived on; for a multicast join result:
    /// whether `id` joined).
    pub fn is_for(&self, id: &CmId<'_>) -> bool {
        if !core::ptr::eq(self.ch, id.channel()) {
            false
        } else if matches!(self.kind, EventKind::ConnectRequest | EventKind::MulticastJoin | EventKind::MulticastError) {
            // A request carries the new id's handle, a join result its
            // membership's (see `Event::is_for_membership`): the context
            // names the id.
            self.context == id.context()
        } else {
            self.handle == id.handle()
        }
    }

    /// The peer's connection parameters and private data (connection
    /// request, response, established, rejected events on RC ids; UD ids
    /// carry theirs in [`ud`](Self::ud)).
    pub fn param(&self) -> PeerParam {
        let c = self.resp.conn();
        PeerParam {
            qp_num: c.qp_num,
            responder_resources: c.responder_resources,
            initiator_depth: c.initiator_depth,
            flow_control: c.flow_control,
            retry_count: c.retry_count,
            rnr_retry_count: c.rnr_retry_count,
            srq: c.srq != 0,
            private: c.private_data,
            private_len: c.private_data_len,
        }
    }

    /// The UD peer: on [`Established`](EventKind::Established) of a UD
    /// id, the passive side's QP number, Q_Key and address (multicast
    /// joins: the group's). A UD connection request carries only private
    /// data: the requester's QP number and address arrive with its first
    /// datagram (`src_qp`, [`Ah::create_from_wc`](crate::Ah::create_from_wc)).
    pub fn ud(&self) -> UdPeer {
        let u = self.resp.ud();
        UdPeer {
            qp_num: u.qp_num,
            qkey: u.qkey,
            ah_attr: AhAttr::from_abi(&u.ah_attr),
            private: u.private_data,
            private_len: u.private_data_len,
        }
    }

    /// The new id of a [`ConnectRequest`](EventKind::ConnectRequest)
    /// (once; `None` for other events).
    pub fn take_request(&mut self) -> Option<CmId<'ch>> {
        self.request.take()
    }
}
