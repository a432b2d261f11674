//! The RDMA connection manager (librdmacm's `rdma_*` calls) in pure Rust,
//! over the kernel's `/dev/infiniband/rdma_cm`: connect queue pairs by IP
//! address and port, on InfiniBand/RoCE and on iWARP (where it is the
//! only way to connect).
//!
//! ## Connecting and accepting ([`Connector`], [`Listener`])
//!
//! One code path for InfiniBand/RoCE and iWARP: each side ends with a
//! [`Connection`] whose `qp` is an `RcQp<Rts>`, and refusal, timeout and
//! an unreachable peer are errors of kind
//! [`Refused`](crate::ErrorKind::Refused),
//! [`TimedOut`](crate::ErrorKind::TimedOut) and
//! [`Unreachable`](crate::ErrorKind::Unreachable) on both (the reject
//! reason in words in the detail). `examples/cm_server.rs` and
//! `examples/cm_client.rs` are complete programs.
//!
//! The server: bind and listen, wait for a request, create the QP on the
//! request's device, post receives, accept.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use verbs::cm::{ConnParam, EventChannel, Listener};
//! use verbs::qp::{QpCap, QpInitAttr, RcQp};
//! use verbs::wr::{RecvWr, Sge};
//! use verbs::{AccessFlags, Cq, Mr, Pd};
//!
//! let ch = EventChannel::create()?;                                // rdma_create_event_channel
//! let listener = Listener::bind(&ch, &"10.77.0.1:7471".parse()?, 8)?; // rdma_bind_addr + rdma_listen
//! let req = listener.next_request(-1)?;                            // RDMA_CM_EVENT_CONNECT_REQUEST
//! println!("from {:?}: {:?}", req.id().peer_addr()?, req.peer().private_data());
//! let ctx = req.open_device()?;                                    // id->verbs
//! let pd = Pd::alloc(&ctx)?;
//! let cq = Cq::create(&ctx, 16, None, 0)?;
//! let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
//! let mut qp = req.init_qp(RcQp::create(&pd, QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false })?)?;
//! let mr = Mr::alloc(&pd, 4096, AccessFlags::LOCAL_WRITE)?;
//! qp.post_recv(&[RecvWr::new(1, &[Sge::from_mr(&mr, 0, 4096)])])?;   // before the client can send
//! let conn_ch = EventChannel::create()?;                           // the connection's own events
//! let conn = req.accept(&conn_ch, qp, &ConnParam::default(), 5000)?; // rdma_accept, ESTABLISHED
//! // conn.qp: RcQp<Rts>; serve, then:
//! conn.wait_disconnected(-1)?;
//! # Ok(()) }
//! ```
//!
//! The client: [`Connector::resolve`], [`Connector::open_device`],
//! [`Connector::init_qp`], [`Connector::connect`] (see [`Connector`]).
//!
//! ## Step by step ([`CmId`])
//!
//! The same with the librdmacm calls one by one (what the high-level
//! types do; the client's answer differs by transport):
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use verbs::cm::{CmId, ConnParam, EventChannel, EventKind, PortSpace};
//! use verbs::qp::{QpCap, QpInitAttr, RcQp};
//! use verbs::{Cq, Pd};
//!
//! let ch = EventChannel::create()?;                          // rdma_create_event_channel
//! let id = CmId::create(&ch, PortSpace::Tcp)?;               // rdma_create_id
//! id.resolve_addr(None, &"10.77.0.1:7471".parse()?, 2000)?;  // rdma_resolve_addr
//! id.wait(EventKind::AddrResolved, 5000)?;                   // any other event: Err(WaitError { event, .. })
//! id.resolve_route(2000)?;                                   // rdma_resolve_route
//! id.wait(EventKind::RouteResolved, 5000)?;
//! let ctx = id.open_device()?;                               // id->verbs
//! let pd = Pd::alloc(&ctx)?;
//! let cq = Cq::create(&ctx, 16, None, 0)?;
//! let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
//! let qp = RcQp::create(&pd, QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false })?;
//! let qp = id.init_qp(qp)?;              // rdma_create_qp
//! id.connect(&qp, &ConnParam::default())?;                   // rdma_connect
//! let ev = ch.get_event()?;                                  // CONNECT_RESPONSE (RoCE) / ESTABLISHED (iWARP)
//! let qp = id.establish(qp, &ev)?;      // QueuePair<Rc, Rts>
//! # drop(qp); Ok(()) }
//! ```
//!
//! The server side step by step: [`CmId::bind_addr`], [`CmId::listen`],
//! [`CmId::wait`]`(`[`EventKind::ConnectRequest`]`)`,
//! [`Event::take_request`], [`CmId::open_device`] on the new id,
//! [`CmId::init_qp`], post receives, [`CmId::accept`], then
//! [`EventKind::Established`] on the new id.
//!
//! Events are copied out of the kernel ([`Event`]): there is nothing to
//! acknowledge, and destroying an id never waits for its events. Nothing
//! here allocates, except [`CmId::open_device`], which runs device
//! discovery.

pub(crate) mod addr;
mod channel;
mod connect;
#[cfg(feature = "std")]
mod device;
mod event;
mod id;
mod mcast;
mod reason;
#[cfg(feature = "std")]
mod resolve;
#[cfg(feature = "std")]
pub(crate) mod session;
mod ud;

pub use channel::EventChannel;
pub use connect::{CmTransition, ConnParam};
pub use event::{Event, EventKind, PeerParam, UdPeer};
pub use id::{AddrInfo, CmId, MigrateError, PortSpace, WaitError};
pub use mcast::{Membership, MULTICAST_QPN};
pub use reason::reject_msg;
#[cfg(feature = "std")]
pub use session::{Connection, Connector, Listener, Request};
pub use ud::RDMA_UDP_QKEY;
#[cfg(feature = "std")]
pub use resolve::{getaddrinfo, AddrHints};
