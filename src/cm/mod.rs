//! The RDMA connection manager (librdmacm's `rdma_*` calls) in pure Rust,
//! over the kernel's `/dev/infiniband/rdma_cm`: connect queue pairs by IP
//! address and port, on InfiniBand/RoCE and on iWARP (where it is the
//! only way to connect).
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
//! id.wait(EventKind::AddrResolved, 5000).map_err(|e| e.error)?; // any other event comes back in e.event
//! id.resolve_route(2000)?;                                   // rdma_resolve_route
//! id.wait(EventKind::RouteResolved, 5000).map_err(|e| e.error)?;
//! let ctx = id.open_device()?;                               // id->verbs
//! let pd = Pd::alloc(&ctx)?;
//! let cq = Cq::create(&ctx, 16, None, 0)?;
//! let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
//! let qp = RcQp::create(&pd, QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false })?;
//! let qp = id.init_qp(qp).map_err(|e| e.error)?;              // rdma_create_qp
//! id.connect(&qp, &ConnParam::default())?;                   // rdma_connect
//! let ev = ch.get_event()?;                                  // CONNECT_RESPONSE (RoCE) / ESTABLISHED (iWARP)
//! let qp = id.establish(qp, &ev).map_err(|e| e.error)?;      // QueuePair<Rc, Rts>
//! # drop(qp); Ok(()) }
//! ```
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
#[cfg(feature = "std")]
mod resolve;
mod ud;

pub use channel::EventChannel;
pub use connect::{CmTransition, ConnParam};
pub use event::{Event, EventKind, PeerParam, UdPeer};
pub use id::{AddrInfo, CmId, MigrateError, PortSpace, WaitError};
pub use mcast::{Membership, MULTICAST_QPN};
pub use ud::RDMA_UDP_QKEY;
#[cfg(feature = "std")]
pub use resolve::{getaddrinfo, AddrHints};
