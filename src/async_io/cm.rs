//! [`AsyncEventChannel`]: connection-manager events, connect and accept as
//! futures.

use core::net::SocketAddr;

use rustix::fd::AsFd;
use tokio::io::unix::AsyncFd;

use crate::cm::session::{event_error, start_connect};
use crate::cm::{CmId, ConnParam, Connection, Connector, Event, EventChannel, EventKind, Listener, PortSpace, Request};
use crate::error::{Error, ErrorKind, Result};
use crate::qp::{Init, QueuePair, Transport};

use super::{io_error, register, Fd};

const VERB: &str = "rdma_get_cm_event";

/// The kernel's own timeout for one resolution step (librdmacm's
/// default): the future also ends when the kernel gives up.
const RESOLVE_MS: u32 = 2000;

/// An [`EventChannel`] registered with the tokio reactor:
/// `ch.next_event().await`, and the [`Connector`]/[`Listener`] steps as
/// futures.
///
/// The futures here have no timeout of their own: wrap them in
/// `tokio::time::timeout` (they are cancel-safe; a dropped connect or
/// accept destroys the id and QP it was given). The errors are the ones
/// of the blocking calls ([`ErrorKind::Refused`],
/// [`ErrorKind::Unreachable`], ... on both transports).
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
/// use verbs::async_io::AsyncEventChannel;
/// use verbs::cm::{ConnParam, EventChannel};
/// use verbs::qp::{QpCap, QpInitAttr, RcQp};
/// use verbs::{Cq, Pd};
///
/// let raw = EventChannel::create()?;
/// let ch = AsyncEventChannel::new(&raw)?;
/// let conn = ch.resolve(&"10.77.0.1:7471".parse()?).await?;
/// let ctx = conn.open_device()?;
/// let (pd, cq) = (Pd::alloc(&ctx)?, Cq::create(&ctx, 16, None, 0)?);
/// let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// let qp = conn.init_qp(RcQp::create(&pd, QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false })?)?;
/// let c = ch.connect(conn, qp, &ConnParam::default()).await?; // c.qp: RcQp<Rts>
/// ch.disconnect(&c).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct AsyncEventChannel<'ch> {
    ch: &'ch EventChannel,
    fd: AsyncFd<Fd>,
}

impl<'ch> AsyncEventChannel<'ch> {
    /// Registers `ch` with the current tokio runtime and makes it
    /// non-blocking; outside a runtime, [`ErrorKind::Unsupported`].
    pub fn new(ch: &'ch EventChannel) -> Result<Self> {
        ch.set_nonblocking(true)?;
        let fd = register(VERB, ch.as_fd())?;
        Ok(Self { ch, fd })
    }

    /// The channel.
    pub fn channel(&self) -> &'ch EventChannel {
        self.ch
    }

    /// `rdma_get_cm_event` as a future: the channel's next event.
    /// Cancel-safe: an event is read only in the step that returns it.
    #[doc(alias = "rdma_get_cm_event")]
    pub async fn next_event(&self) -> Result<Event<'ch>> {
        loop {
            // Readiness first: it consumes nothing.
            let mut guard = self.fd.readable().await.map_err(|e| io_error(VERB, &e))?;
            match self.ch.get_event() {
                Ok(ev) => return Ok(ev),
                Err(e) if e.kind() == ErrorKind::WouldBlock => guard.clear_ready(),
                Err(e) => return Err(e),
            }
        }
    }

    /// The next event, which must be about `id` and one of `kinds`;
    /// anything else is the error it means.
    async fn expect(&self, id: &CmId<'ch>, kinds: &[EventKind], verb: &'static str) -> Result<Event<'ch>> {
        let ev = self.next_event().await?;
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

    /// [`Connector::resolve`] as a future: a new id on this channel with
    /// its address and route to `dst` resolved. The channel must serve
    /// this connection alone.
    pub async fn resolve(&self, dst: &SocketAddr) -> Result<Connector<'ch>> {
        let id = CmId::create(self.ch, PortSpace::Tcp)?;
        id.resolve_addr(None, dst, RESOLVE_MS)?;
        self.expect(&id, &[EventKind::AddrResolved], "rdma_resolve_addr").await?;
        id.resolve_route(RESOLVE_MS)?;
        self.expect(&id, &[EventKind::RouteResolved], "rdma_resolve_route").await?;
        Ok(Connector { id, timeout_ms: -1 })
    }

    /// [`Connector::connect`] as a future (the connector's timeout does
    /// not apply: wrap the future in `tokio::time::timeout`). `connector`
    /// must have been resolved on this channel.
    #[doc(alias = "rdma_connect")]
    pub async fn connect<'a, T: Transport>(
        &self,
        connector: Connector<'ch>,
        qp: QueuePair<'a, T, Init>,
        param: &ConnParam<'_>,
    ) -> Result<Connection<'ch, 'a, T>> {
        let id = connector.id;
        check_channel(&id, self.ch, "rdma_connect")?;
        start_connect(&id, &qp, param)?;
        let ev = self.expect(&id, &[EventKind::ConnectResponse, EventKind::Established], "rdma_connect").await?;
        let qp = id.establish(qp, &ev)?;
        Ok(Connection { peer: ev.param(), id, qp })
    }

    /// [`Listener::next_request`] as a future: the next connection
    /// request to `listener` (which listens on this channel); events of
    /// other ids are skipped. Cancel-safe.
    #[doc(alias = "rdma_get_request")]
    pub async fn next_request(&self, listener: &Listener<'ch>) -> Result<Request<'ch>> {
        check_channel(&listener.id, self.ch, "rdma_get_request")?;
        loop {
            let mut ev = self.next_event().await?;
            if ev.kind() == EventKind::ConnectRequest && ev.is_for(&listener.id) {
                if let Some(id) = ev.take_request() {
                    return Ok(Request { id, peer: ev.param() });
                }
            }
        }
    }

    /// [`Request::accept`] as a future, the connection on this channel
    /// (the request's id moves here): `rdma_accept`, then the wait for
    /// `ESTABLISHED`.
    #[doc(alias = "rdma_accept")]
    pub async fn accept<'a, T: Transport>(
        &self,
        request: Request<'_>,
        qp: QueuePair<'a, T, Init>,
        param: &ConnParam<'_>,
    ) -> Result<Connection<'ch, 'a, T>> {
        let (id, qp, peer) = request.accept_start(self.ch, qp, param)?;
        self.expect(&id, &[EventKind::Established], "rdma_accept").await?;
        Ok(Connection { id, qp, peer })
    }

    /// [`Connection::disconnect`] as a future: `rdma_disconnect`, then
    /// the wait for `DISCONNECTED`.
    #[doc(alias = "rdma_disconnect")]
    pub async fn disconnect<T: Transport>(&self, conn: &Connection<'ch, '_, T>) -> Result<()> {
        check_channel(&conn.id, self.ch, "rdma_disconnect")?;
        conn.id.disconnect()?;
        self.expect(&conn.id, &[EventKind::Disconnected], "rdma_disconnect").await.map(drop)
    }

    /// [`Connection::wait_disconnected`] as a future: waits for the peer
    /// to disconnect, then answers with `rdma_disconnect`.
    pub async fn wait_disconnected<T: Transport>(&self, conn: &Connection<'ch, '_, T>) -> Result<()> {
        check_channel(&conn.id, self.ch, "rdma_get_cm_event")?;
        self.expect(&conn.id, &[EventKind::Disconnected], "rdma_get_cm_event").await?;
        // The peer may already be gone; nothing to report then.
        let _ = conn.id.disconnect();
        Ok(())
    }
}

/// An id whose events arrive on another channel would wait forever here.
fn check_channel(id: &CmId<'_>, ch: &EventChannel, verb: &'static str) -> Result<()> {
    if core::ptr::eq(id.channel(), ch) {
        Ok(())
    } else {
        Err(Error::new(verb, ErrorKind::InvalidArgument)
            .with_detail("the id's events arrive on another EventChannel than this AsyncEventChannel's"))
    }
}
