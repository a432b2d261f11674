//! Connecting and accepting in a few calls, the same way on
//! InfiniBand/RoCE and on iWARP: a [`Connector`] (active side) or a
//! [`Listener`] and its [`Request`]s (passive side) end in a
//! [`Connection`]: the id and a QP typed RTS.
//!
//! The transports end a connect differently (RoCE answers
//! `CONNECT_RESPONSE` and the library moves the QP; iWARP answers
//! `ESTABLISHED` with the QP already moved; "nobody listens" is an error
//! from `rdma_connect` on iWARP but a `REJECTED` event on RoCE). Here
//! every outcome is an [`Error`] of one kind on both:
//!
//! | what happened                               | [`ErrorKind`]                 |
//! |---------------------------------------------|-------------------------------|
//! | nobody listens, or the listener rejected    | [`Refused`](ErrorKind::Refused) (reason in the detail) |
//! | no answer before the timeout                | [`TimedOut`](ErrorKind::TimedOut) |
//! | address/route unresolvable, peer silent     | [`Unreachable`](ErrorKind::Unreachable) |
//!
//! Each connection (and each connector) reads the events of a channel of
//! its own: pass it one [`EventChannel`] per connection. A listener's
//! requests move to the channel given to [`Request::accept`].

use core::net::SocketAddr;
use std::time::Instant;

use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::qp::{Init, QueuePair, Reset, Rts, Transport};

use super::channel::EventChannel;
use super::connect::ConnParam;
use super::event::{Event, EventKind, PeerParam};
use super::id::{CmId, PortSpace};
use super::reason::{reject_msg, IB_CM_REJ_CONSUMER_DEFINED, IB_CM_REJ_INVALID_SERVICE_ID};

const CONNECT: &str = "rdma_connect";
const ACCEPT: &str = "rdma_accept";

/// A deadline `timeout_ms` from now (negative: none).
#[derive(Clone, Copy)]
struct Deadline {
    start: Instant,
    timeout_ms: i32,
}

impl Deadline {
    fn new(timeout_ms: i32) -> Self {
        Self { start: Instant::now(), timeout_ms }
    }

    /// Milliseconds left (-1: forever; 0 once passed).
    fn left_ms(&self) -> i32 {
        if self.timeout_ms < 0 {
            return -1;
        }
        let spent = i64::try_from(self.start.elapsed().as_millis()).unwrap_or(i64::MAX);
        (i64::from(self.timeout_ms) - spent).clamp(0, i64::from(i32::MAX)) as i32
    }

    /// The timeout a kernel resolution step gets (at least 1 ms; 2 s
    /// without a deadline, librdmacm's default).
    fn kernel_ms(&self) -> u32 {
        match self.left_ms() {
            -1 => 2000,
            ms => ms.max(1) as u32,
        }
    }
}

/// The error an unexpected event of the id means.
pub(crate) fn event_error(verb: &'static str, ev: &Event<'_>) -> Error {
    let status = ev.status();
    let (kind, detail) = match ev.kind() {
        EventKind::Rejected => (
            ErrorKind::Refused,
            match status {
                IB_CM_REJ_INVALID_SERVICE_ID => "nobody listens on that address and port (IB CM reject reason: invalid service ID)",
                IB_CM_REJ_CONSUMER_DEFINED => "the listener rejected the request (IB CM reject reason: consumer defined)",
                // iWARP: an MPA reject reaches the requester as a reset.
                -104 => "the listener rejected the request (iWARP: reset by remote host)",
                -111 => "the listener rejected the request (iWARP: refused by remote application)",
                s => reject_msg(s),
            },
        ),
        EventKind::Unreachable => (ErrorKind::Unreachable, "RDMA_CM_EVENT_UNREACHABLE: the peer did not answer"),
        EventKind::AddrError => (ErrorKind::Unreachable, "RDMA_CM_EVENT_ADDR_ERROR: the address could not be resolved"),
        EventKind::RouteError => (ErrorKind::Unreachable, "RDMA_CM_EVENT_ROUTE_ERROR: no route to the address"),
        EventKind::ConnectError => (ErrorKind::Unreachable, "RDMA_CM_EVENT_CONNECT_ERROR: establishing the connection failed"),
        EventKind::Disconnected => (ErrorKind::WrongState, "RDMA_CM_EVENT_DISCONNECTED: the peer closed the connection"),
        EventKind::DeviceRemoval => (ErrorKind::NoDevice, "RDMA_CM_EVENT_DEVICE_REMOVAL: the device went away"),
        _ => (ErrorKind::WrongState, "an unexpected event of the id arrived"),
    };
    // A negative status is an errno (iWARP, address/route errors).
    match status.checked_neg().and_then(crate::error::errno_from_raw) {
        Some(errno) if ev.kind() != EventKind::Rejected || status < 0 => {
            Error::with_errno(verb, kind, errno).with_detail(detail)
        }
        _ => Error::new(verb, kind).with_detail(detail),
    }
}

/// Reads the next event of `id` and checks that it is one of `kinds`; any
/// other outcome is the error it means.
fn expect<'ch>(id: &CmId<'ch>, kinds: &[EventKind], verb: &'static str, deadline: Deadline) -> Result<Event<'ch>> {
    let Some(ev) = id.channel().get_event_timeout(deadline.left_ms())? else {
        return Err(Error::new(verb, ErrorKind::TimedOut).with_detail("the connection manager did not answer in time"));
    };
    if !ev.is_for(id) {
        return Err(Error::new(verb, ErrorKind::WrongState)
            .with_detail("an event of another id arrived: give each connection an EventChannel of its own"));
    }
    if kinds.contains(&ev.kind()) {
        Ok(ev)
    } else {
        Err(event_error(verb, &ev))
    }
}

/// A connected RC (or UC) queue pair and the id that owns its
/// connection. Dropping the id (`rdma_destroy_id`) tears the connection
/// down; [`disconnect`](Self::disconnect) closes it politely first.
#[derive(Debug)]
pub struct Connection<'ch, 'a, T: Transport> {
    /// The connection's id (`rdma_get_peer_addr`, options, ...).
    pub id: CmId<'ch>,
    /// The queue pair, in RTS.
    pub qp: QueuePair<'a, T, Rts>,
    /// What the peer sent along (its private data, RDMA READ depths).
    pub peer: PeerParam,
}

impl<T: Transport> Connection<'_, '_, T> {
    /// `rdma_disconnect`, then waits up to `timeout_ms` for
    /// `RDMA_CM_EVENT_DISCONNECTED` (the peer's answer).
    #[doc(alias = "rdma_disconnect")]
    pub fn disconnect(&self, timeout_ms: i32) -> Result<()> {
        self.id.disconnect()?;
        expect(&self.id, &[EventKind::Disconnected], "rdma_disconnect", Deadline::new(timeout_ms)).map(drop)
    }

    /// Waits up to `timeout_ms` for the peer to disconnect, then answers
    /// with `rdma_disconnect` (on InfiniBand/RoCE the reply the peer's
    /// [`disconnect`](Self::disconnect) waits for).
    pub fn wait_disconnected(&self, timeout_ms: i32) -> Result<()> {
        expect(&self.id, &[EventKind::Disconnected], "rdma_get_cm_event", Deadline::new(timeout_ms))?;
        // The peer may already be gone; nothing to report then.
        let _ = self.id.disconnect();
        Ok(())
    }
}

/// The active side: an id whose address and route are resolved, ready to
/// [`connect`](Self::connect) a QP created on its device
/// ([`open_device`](Self::open_device)).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// use verbs::cm::{ConnParam, Connector, EventChannel};
/// use verbs::qp::{QpCap, QpInitAttr, RcQp};
/// use verbs::{Cq, Pd};
///
/// let ch = EventChannel::create()?;
/// let conn = Connector::resolve(&ch, &"10.77.0.1:7471".parse()?, 5000)?;
/// let ctx = conn.open_device()?;
/// let (pd, cq) = (Pd::alloc(&ctx)?, Cq::create(&ctx, 16, None, 0)?);
/// let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// let qp = conn.init_qp(RcQp::create(&pd, QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false })?)?;
/// // post receives here, before the peer can send
/// let c = conn.connect(qp, &ConnParam::default())?; // c.qp: RcQp<Rts>, on RoCE and iWARP alike
/// c.disconnect(5000)?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Connector<'ch> {
    pub(crate) id: CmId<'ch>,
    pub(crate) timeout_ms: i32,
}

impl<'ch> Connector<'ch> {
    /// `rdma_create_id` + `rdma_resolve_addr` + `rdma_resolve_route` for
    /// `dst`, waiting up to `timeout_ms` in all (negative: no limit);
    /// [`connect`](Self::connect) gets the same time again. `ch` must
    /// serve this connection alone.
    pub fn resolve(ch: &'ch EventChannel, dst: &SocketAddr, timeout_ms: i32) -> Result<Self> {
        let deadline = Deadline::new(timeout_ms);
        let id = CmId::create(ch, PortSpace::Tcp)?;
        id.resolve_addr(None, dst, deadline.kernel_ms())?;
        expect(&id, &[EventKind::AddrResolved], "rdma_resolve_addr", deadline)?;
        id.resolve_route(deadline.kernel_ms())?;
        expect(&id, &[EventKind::RouteResolved], "rdma_resolve_route", deadline)?;
        Ok(Self { id, timeout_ms })
    }

    /// The same connector with another timeout for
    /// [`connect`](Self::connect) (milliseconds; negative: no limit).
    #[must_use]
    pub fn with_timeout(mut self, timeout_ms: i32) -> Self {
        self.timeout_ms = timeout_ms;
        self
    }

    /// The id (bound to the device that reaches the peer).
    pub fn id(&self) -> &CmId<'ch> {
        &self.id
    }

    /// The device that reaches the peer (`id->verbs`): create the PD, CQs
    /// and QP on it.
    pub fn open_device(&self) -> Result<Context> {
        self.id.open_device()
    }

    /// RESET → INIT with the connection manager's attributes (then post
    /// receives before [`connect`](Self::connect) if the peer sends first).
    /// On failure the QP is dropped.
    pub fn init_qp<'a, T: Transport>(&self, qp: QueuePair<'a, T, Reset>) -> Result<QueuePair<'a, T, Init>> {
        Ok(self.id.init_qp(qp)?)
    }

    /// `rdma_connect` and everything up to a QP in RTS, within the
    /// timeout given to [`resolve`](Self::resolve). Refusal, timeout and
    /// an unreachable peer come back as [`ErrorKind::Refused`],
    /// [`ErrorKind::TimedOut`] and [`ErrorKind::Unreachable`] on every
    /// transport; the QP is dropped then.
    #[doc(alias = "rdma_connect")]
    pub fn connect<'a, T: Transport>(
        self,
        qp: QueuePair<'a, T, Init>,
        param: &ConnParam<'_>,
    ) -> Result<Connection<'ch, 'a, T>> {
        let deadline = Deadline::new(self.timeout_ms);
        start_connect(&self.id, &qp, param)?;
        let ev = expect(&self.id, &[EventKind::ConnectResponse, EventKind::Established], CONNECT, deadline)?;
        let qp = self.id.establish(qp, &ev)?;
        Ok(Connection { peer: ev.param(), id: self.id, qp })
    }
}

/// `rdma_connect` with iWARP's refusal inside the call made
/// [`ErrorKind::Refused`].
pub(crate) fn start_connect<T: Transport>(id: &CmId<'_>, qp: &QueuePair<'_, T, Init>, param: &ConnParam<'_>) -> Result<()> {
    match id.connect(qp, param) {
        // iWARP connects a TCP socket inside the call.
        Err(e) if e.errno() == Some(rustix::io::Errno::CONNREFUSED) => {
            Err(Error::with_errno(CONNECT, ErrorKind::Refused, rustix::io::Errno::CONNREFUSED)
                .with_detail("nobody listens on that address and port"))
        }
        r => r,
    }
}

/// The passive side: an id bound to an address and listening. Each
/// [`next_request`](Self::next_request) is a peer asking to connect.
#[derive(Debug)]
pub struct Listener<'ch> {
    pub(crate) id: CmId<'ch>,
}

impl<'ch> Listener<'ch> {
    /// `rdma_create_id` + `rdma_bind_addr(addr)` + `rdma_listen(backlog)`.
    /// Port 0 lets the kernel pick one (see [`id`](Self::id)'s
    /// `local_addr`).
    #[doc(alias = "rdma_listen")]
    pub fn bind(ch: &'ch EventChannel, addr: &SocketAddr, backlog: u32) -> Result<Self> {
        let id = CmId::create(ch, PortSpace::Tcp)?;
        id.bind_addr(addr)?;
        id.listen(backlog)?;
        Ok(Self { id })
    }

    /// The listening id.
    pub fn id(&self) -> &CmId<'ch> {
        &self.id
    }

    /// Waits up to `timeout_ms` (negative: forever) for a connection
    /// request ([`ErrorKind::TimedOut`] if none). Events of other ids on
    /// the listener's channel (requests not yet accepted) are skipped.
    pub fn next_request(&self, timeout_ms: i32) -> Result<Request<'ch>> {
        const VERB: &str = "rdma_get_request";
        let deadline = Deadline::new(timeout_ms);
        loop {
            let left = deadline.left_ms();
            let Some(mut ev) = self.id.channel().get_event_timeout(left)? else {
                if left == 0 {
                    return Err(Error::new(VERB, ErrorKind::TimedOut).with_detail("no connection request arrived in time"));
                }
                continue;
            };
            if ev.kind() == EventKind::ConnectRequest && ev.is_for(&self.id) {
                if let Some(id) = ev.take_request() {
                    return Ok(Request { id, peer: ev.param() });
                }
            }
        }
    }
}

/// A peer's connection request: [`accept`](Self::accept) it with a QP
/// created on its device ([`open_device`](Self::open_device)), or
/// [`reject`](Self::reject) it. Dropping it rejects it too.
#[derive(Debug)]
pub struct Request<'ch> {
    pub(crate) id: CmId<'ch>,
    pub(crate) peer: PeerParam,
}

impl<'ch> Request<'ch> {
    /// The request's id (`peer_addr` says who asks).
    pub fn id(&self) -> &CmId<'ch> {
        &self.id
    }

    /// The requester's parameters and private data.
    pub fn peer(&self) -> &PeerParam {
        &self.peer
    }

    /// The device the request arrived on.
    pub fn open_device(&self) -> Result<Context> {
        self.id.open_device()
    }

    /// RESET → INIT for this connection (then post receives, then
    /// [`accept`](Self::accept)). On failure the QP is dropped.
    pub fn init_qp<'a, T: Transport>(&self, qp: QueuePair<'a, T, Reset>) -> Result<QueuePair<'a, T, Init>> {
        Ok(self.id.init_qp(qp)?)
    }

    /// `rdma_reject` with private data for the peer (who gets
    /// [`ErrorKind::Refused`]).
    #[doc(alias = "rdma_reject")]
    pub fn reject(self, private_data: &[u8]) -> Result<()> {
        self.id.reject(private_data)
    }

    /// Moves the request's id to `ch` (its connection's channel; the
    /// listener's own is allowed for one connection at a time),
    /// `rdma_accept`s with `qp` and waits up to `timeout_ms` for the
    /// connection to be established.
    #[doc(alias = "rdma_accept")]
    pub fn accept<'c, 'a, T: Transport>(
        self,
        ch: &'c EventChannel,
        qp: QueuePair<'a, T, Init>,
        param: &ConnParam<'_>,
        timeout_ms: i32,
    ) -> Result<Connection<'c, 'a, T>> {
        let deadline = Deadline::new(timeout_ms);
        let (id, qp, peer) = self.accept_start(ch, qp, param)?;
        expect(&id, &[EventKind::Established], ACCEPT, deadline)?;
        Ok(Connection { id, qp, peer })
    }

    /// [`accept`](Self::accept) up to the wait for `ESTABLISHED`.
    #[allow(clippy::type_complexity)]
    pub(crate) fn accept_start<'c, 'a, T: Transport>(
        self,
        ch: &'c EventChannel,
        qp: QueuePair<'a, T, Init>,
        param: &ConnParam<'_>,
    ) -> Result<(CmId<'c>, QueuePair<'a, T, Rts>, PeerParam)> {
        let id = if core::ptr::eq(ch, self.id.channel()) {
            // Same channel: only the lifetime changes.
            let raw = (self.id.handle(), self.id.context());
            core::mem::forget(self.id);
            CmId::adopt(ch, raw.0, raw.1)
        } else {
            self.id.migrate(ch)?
        };
        let qp = id.accept(qp, param)?;
        Ok((id, qp, self.peer))
    }
}
