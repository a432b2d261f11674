//! Connection identifiers (`struct rdma_cm_id`): create, bind, resolve,
//! listen, reject, disconnect, query, options, destroy. The QP side of
//! connecting is in [`super::connect`].

use core::mem::offset_of;
use core::net::SocketAddr;

use zerocopy::FromZeros;

use crate::abi::ucma::*;
use crate::error::{Error, ErrorKind, Result};

use super::addr;
use super::channel::EventChannel;
use super::event::{Event, EventKind};

/// `enum rdma_port_space`: which transport service an id speaks, and with
/// it the QP type it connects.
#[doc(alias = "rdma_port_space")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortSpace {
    /// `RDMA_PS_TCP`: reliable connected (RC) QPs.
    Tcp,
    /// `RDMA_PS_UDP`: unreliable datagram (UD) QPs.
    Udp,
    /// `RDMA_PS_IB`: any QP type, InfiniBand addressing.
    Ib,
}

impl PortSpace {
    fn raw(self) -> (u16, u8) {
        // (port space, IB_QPT_*): RC is 2, UD is 4.
        match self {
            Self::Tcp => (RDMA_PS_TCP as u16, 2),
            Self::Udp => (RDMA_PS_UDP as u16, 4),
            Self::Ib => (RDMA_PS_IB as u16, 2),
        }
    }
}

/// What `rdma_query_addr` reports of an id's binding (`rdma_get_local_addr`,
/// `rdma_get_peer_addr`, the device and port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddrInfo {
    /// The local address (`None` while unbound).
    pub src: Option<SocketAddr>,
    /// The peer's address (`None` before resolution or a request).
    pub dst: Option<SocketAddr>,
    /// The bound device's node GUID as `ibv_get_device_guid` returns it
    /// (network byte order); 0 while no device is bound.
    pub node_guid_be: u64,
    /// The kernel's index of the bound device.
    pub ibdev_index: u32,
    /// The port number.
    pub port_num: u8,
    /// The P_Key.
    pub pkey: u16,
}

/// `struct rdma_cm_id`. Every id belongs to the [`EventChannel`] it was
/// created on (or whose listener received its connection request), and
/// its events are read there. Dropping it is `rdma_destroy_id`: the
/// kernel discards events not yet read and, for an id that was never
/// accepted, rejects the peer's request.
#[doc(alias = "rdma_cm_id")]
#[derive(Debug)]
pub struct CmId<'ch> {
    ch: &'ch EventChannel,
    handle: u32,
    context: u64,
    live: bool,
}

impl<'ch> CmId<'ch> {
    /// `rdma_create_id` with a context unique in this process (counting
    /// from 1; see [`create_with_context`](Self::create_with_context)).
    #[doc(alias = "rdma_create_id")]
    pub fn create(ch: &'ch EventChannel, ps: PortSpace) -> Result<Self> {
        use core::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Self::create_with_context(ch, ps, NEXT.fetch_add(1, Ordering::Relaxed) | 1 << 62)
    }

    /// `rdma_create_id`: a new id on `ch` for port space `ps`; `context`
    /// comes back in every event of the id ([`Event::context`]), and in
    /// the connection requests of a listener. Context 0 is refused
    /// (`InvalidArgument`): the kernel reports no events for an id whose
    /// context (`uid`) is 0.
    #[doc(alias = "rdma_create_id")]
    pub fn create_with_context(ch: &'ch EventChannel, ps: PortSpace, context: u64) -> Result<Self> {
        if context == 0 {
            return Err(Error::invalid("rdma_create_id", "context 0: the kernel drops the events of an id whose uid is 0"));
        }
        let (ps, qp_type) = ps.raw();
        let cmd = CreateId { uid: context, response: 0, ps, qp_type, reserved: [0; 5] };
        let r: CreateIdResp =
            ch.file.call("rdma_create_id", RDMA_USER_CM_CMD_CREATE_ID, &cmd, offset_of!(CreateId, response))?;
        Ok(Self::adopt(ch, r.id, context))
    }

    /// The id the kernel created for a connection request.
    pub(crate) fn adopt(ch: &'ch EventChannel, handle: u32, context: u64) -> Self {
        Self { ch, handle, context, live: true }
    }

    /// The kernel's handle of this id.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The context given at creation (a request's id: its listener's,
    /// until [`accept`](Self::accept) gives it its own).
    pub fn context(&self) -> u64 {
        self.context
    }

    /// The channel the id's events arrive on.
    pub fn channel(&self) -> &'ch EventChannel {
        self.ch
    }

    pub(crate) fn send<C: zerocopy::IntoBytes + zerocopy::Immutable>(
        &self,
        verb: &'static str,
        cmd: u32,
        body: &C,
    ) -> Result<()> {
        self.ch.file.send(verb, cmd, body)
    }

    /// `rdma_bind_addr`: binds the id to a local address (port 0: the
    /// kernel picks one), and with it to the device that owns the address.
    #[doc(alias = "rdma_bind_addr")]
    pub fn bind_addr(&self, local: &SocketAddr) -> Result<()> {
        let (addr, addr_size) = addr::encode(local);
        let cmd = Bind { id: self.handle, addr_size, reserved: 0, addr };
        self.send("rdma_bind_addr", RDMA_USER_CM_CMD_BIND, &cmd)
    }

    /// `rdma_resolve_addr`: starts resolving `dst` (from `src` if given);
    /// [`EventKind::AddrResolved`] or [`EventKind::AddrError`] follows
    /// within `timeout_ms`.
    #[doc(alias = "rdma_resolve_addr")]
    pub fn resolve_addr(&self, src: Option<&SocketAddr>, dst: &SocketAddr, timeout_ms: u32) -> Result<()> {
        let (src_addr, src_size) = src.map_or(([0; SOCKADDR_STORAGE], 0), addr::encode);
        let (dst_addr, dst_size) = addr::encode(dst);
        let cmd = ResolveAddr {
            id: self.handle,
            timeout_ms,
            src_size,
            dst_size,
            reserved: 0,
            src_addr,
            dst_addr,
        };
        self.send("rdma_resolve_addr", RDMA_USER_CM_CMD_RESOLVE_ADDR, &cmd)
    }

    /// `rdma_resolve_route`: after the address was resolved;
    /// [`EventKind::RouteResolved`] or [`EventKind::RouteError`] follows.
    #[doc(alias = "rdma_resolve_route")]
    pub fn resolve_route(&self, timeout_ms: u32) -> Result<()> {
        let cmd = ResolveRoute { id: self.handle, timeout_ms };
        self.send("rdma_resolve_route", RDMA_USER_CM_CMD_RESOLVE_ROUTE, &cmd)
    }

    /// `rdma_listen`: a bound id starts accepting connection requests;
    /// up to `backlog` wait for [`get_event`](EventChannel::get_event).
    #[doc(alias = "rdma_listen")]
    pub fn listen(&self, backlog: u32) -> Result<()> {
        let cmd = Listen { id: self.handle, backlog };
        self.send("rdma_listen", RDMA_USER_CM_CMD_LISTEN, &cmd)
    }

    /// `rdma_reject`: refuses the connection request this id came from,
    /// with up to 256 bytes of private data for the peer (which sees
    /// [`EventKind::Rejected`]); then drop the id.
    #[doc(alias = "rdma_reject")]
    pub fn reject(&self, private_data: &[u8]) -> Result<()> {
        const VERB: &str = "rdma_reject";
        let Ok(len) = u8::try_from(private_data.len()) else {
            return Err(Error::invalid(VERB, "private_data is longer than 255 bytes"));
        };
        let mut cmd = Reject { id: self.handle, private_data_len: len, ..Reject::new_zeroed() };
        cmd.private_data[..private_data.len()].copy_from_slice(private_data);
        self.send(VERB, RDMA_USER_CM_CMD_REJECT, &cmd)
    }

    /// `rdma_disconnect`: closes the connection; both sides get
    /// [`EventKind::Disconnected`]. The QP's outstanding work requests
    /// complete with flush errors once it is in ERROR (on InfiniBand/RoCE
    /// move it there with `into_error`; on iWARP the kernel does).
    #[doc(alias = "rdma_disconnect")]
    pub fn disconnect(&self) -> Result<()> {
        self.send("rdma_disconnect", RDMA_USER_CM_CMD_DISCONNECT, &Disconnect { id: self.handle })
    }

    /// `rdma_query_addr` (what `rdma_get_local_addr`, `rdma_get_peer_addr`
    /// and `id->verbs`/`id->port_num` read).
    pub fn query_addr(&self) -> Result<AddrInfo> {
        let cmd = Query { response: 0, id: self.handle, option: RDMA_USER_CM_QUERY_ADDR };
        let r: QueryAddrResp =
            self.ch.file.call("rdma_query_addr", RDMA_USER_CM_CMD_QUERY, &cmd, offset_of!(Query, response))?;
        Ok(AddrInfo {
            src: addr::decode(&r.src_addr),
            dst: addr::decode(&r.dst_addr),
            node_guid_be: r.node_guid,
            ibdev_index: r.ibdev_index,
            port_num: r.port_num,
            pkey: r.pkey,
        })
    }

    /// `rdma_get_local_addr`.
    #[doc(alias = "rdma_get_local_addr")]
    pub fn local_addr(&self) -> Result<Option<SocketAddr>> {
        Ok(self.query_addr()?.src)
    }

    /// `rdma_get_peer_addr`.
    #[doc(alias = "rdma_get_peer_addr")]
    pub fn peer_addr(&self) -> Result<Option<SocketAddr>> {
        Ok(self.query_addr()?.dst)
    }

    fn set_option(&self, name: u32, value: &[u8]) -> Result<()> {
        let cmd = SetOption {
            optval: 0,
            id: self.handle,
            level: RDMA_OPTION_ID,
            optname: name,
            optlen: value.len() as u32,
        };
        let at = offset_of!(SetOption, optval);
        self.ch.file.send_with_value("rdma_set_option", RDMA_USER_CM_CMD_SET_OPTION, &cmd, at, value)
    }

    /// `rdma_set_option(RDMA_OPTION_ID_TOS)`: the type of service of the
    /// id's traffic (before resolving the route / listening).
    #[doc(alias = "rdma_set_option")]
    pub fn set_tos(&self, tos: u8) -> Result<()> {
        self.set_option(RDMA_OPTION_ID_TOS, &[tos])
    }

    /// `rdma_set_option(RDMA_OPTION_ID_REUSEADDR)` (before binding).
    #[doc(alias = "rdma_set_option")]
    pub fn set_reuseaddr(&self, on: bool) -> Result<()> {
        self.set_option(RDMA_OPTION_ID_REUSEADDR, &i32::from(on).to_ne_bytes())
    }

    /// `rdma_set_option(RDMA_OPTION_ID_AFONLY)`: an IPv6 listener accepts
    /// only IPv6 (before binding).
    #[doc(alias = "rdma_set_option")]
    pub fn set_afonly(&self, on: bool) -> Result<()> {
        self.set_option(RDMA_OPTION_ID_AFONLY, &i32::from(on).to_ne_bytes())
    }

    /// `rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)`: the QP's local ACK
    /// timeout exponent (4.096 µs × 2^timeout) used for RTS.
    #[doc(alias = "rdma_set_option")]
    pub fn set_ack_timeout(&self, timeout: u8) -> Result<()> {
        self.set_option(RDMA_OPTION_ID_ACK_TIMEOUT, &[timeout])
    }

    /// Reads the channel's next event and checks that it is `kind` about
    /// this id (for a listener: a connection request it received). Any
    /// other event is handed back inside the error, never lost. Meant for
    /// a channel that serves this id alone, as the synchronous
    /// `rdma_*` calls of librdmacm do.
    #[allow(clippy::result_large_err)] // the event comes back by value; no heap
    pub fn wait(&self, kind: EventKind, timeout_ms: i32) -> core::result::Result<Event<'ch>, WaitError<'ch>> {
        const VERB: &str = "rdma_get_cm_event";
        let ev = match self.ch.get_event_timeout(timeout_ms) {
            Ok(Some(ev)) => ev,
            Ok(None) => {
                let error = Error::new(VERB, ErrorKind::WouldBlock).with_detail("no event arrived in time");
                return Err(WaitError { error, event: None });
            }
            Err(error) => return Err(WaitError { error, event: None }),
        };
        if ev.kind() == kind && ev.is_for(self) {
            return Ok(ev);
        }
        let detail = if ev.is_for(self) { unexpected(ev.kind()) } else { "an event of another id arrived" };
        Err(WaitError { error: Error::new(VERB, ErrorKind::WrongState).with_detail(detail), event: Some(ev) })
    }

    /// `rdma_migrate_id`: moves the id to channel `to`: its events not yet
    /// read, and all later ones, arrive there. A listener's future
    /// connection requests too. On failure the id comes back unchanged in
    /// the error. Nothing to wait for: events already read are copies.
    #[doc(alias = "rdma_migrate_id")]
    #[allow(clippy::result_large_err)] // the id comes back by value; no heap
    pub fn migrate<'to>(mut self, to: &'to EventChannel) -> core::result::Result<CmId<'to>, MigrateError<'ch>> {
        use rustix::fd::{AsFd, AsRawFd};
        const VERB: &str = "rdma_migrate_id";
        // The command goes to the new channel's file and names the
        // current one by its fd (the kernel holds that file meanwhile).
        let fd = self.ch.as_fd().as_raw_fd() as u32;
        let cmd = MigrateId { response: 0, id: self.handle, fd };
        match to.file.call::<_, MigrateResp>(VERB, RDMA_USER_CM_CMD_MIGRATE_ID, &cmd, offset_of!(MigrateId, response)) {
            Ok(_) => {
                // The kernel object now belongs to `to`'s file.
                self.live = false;
                Ok(CmId { ch: to, handle: self.handle, context: self.context, live: true })
            }
            Err(error) => Err(MigrateError { error, id: self }),
        }
    }

    /// `rdma_destroy_id`: returns how many events the kernel reported for
    /// the id. Events already read stay valid (they are copies).
    #[doc(alias = "rdma_destroy_id")]
    pub fn destroy(mut self) -> Result<u32> {
        self.live = false;
        self.destroy_raw()
    }

    fn destroy_raw(&self) -> Result<u32> {
        let cmd = DestroyId { response: 0, id: self.handle, reserved: 0 };
        let r: DestroyIdResp = self.ch.file.call(
            "rdma_destroy_id",
            RDMA_USER_CM_CMD_DESTROY_ID,
            &cmd,
            offset_of!(DestroyId, response),
        )?;
        Ok(r.events_reported)
    }
}

impl Drop for CmId<'_> {
    fn drop(&mut self) {
        if self.live {
            // Nothing to hand back from a drop; the kernel frees the id
            // with the channel at the latest.
            let _ = self.destroy_raw();
        }
    }
}

/// A failed [`CmId::migrate`]: why, and the id, still on its old
/// channel. Converts into [`Error`].
#[derive(Debug)]
pub struct MigrateError<'ch> {
    /// Why.
    pub error: Error,
    /// The id, unchanged.
    pub id: CmId<'ch>,
}

impl From<MigrateError<'_>> for Error {
    fn from(e: MigrateError<'_>) -> Self {
        e.error
    }
}

impl core::fmt::Display for MigrateError<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Display::fmt(&self.error, f)
    }
}

crate::error::box_error_from!(['ch] MigrateError<'ch>, |e| e.error);

/// The detail of a wait that got `kind` instead.
fn unexpected(kind: EventKind) -> &'static str {
    match kind {
        EventKind::AddrError => "RDMA_CM_EVENT_ADDR_ERROR arrived: the address could not be resolved",
        EventKind::RouteError => "RDMA_CM_EVENT_ROUTE_ERROR arrived: no route to the address",
        EventKind::ConnectError => "RDMA_CM_EVENT_CONNECT_ERROR arrived",
        EventKind::Unreachable => "RDMA_CM_EVENT_UNREACHABLE arrived: the peer did not answer",
        EventKind::Rejected => "RDMA_CM_EVENT_REJECTED arrived: refused by the peer, or nobody listens there",
        EventKind::Disconnected => "RDMA_CM_EVENT_DISCONNECTED arrived",
        EventKind::DeviceRemoval => "RDMA_CM_EVENT_DEVICE_REMOVAL arrived",
        _ => "a different event of this id arrived",
    }
}

/// A [`CmId::wait`] that did not get the event it waited for: why, and
/// the event that came instead (if one did). Converts into [`Error`].
#[derive(Debug)]
pub struct WaitError<'ch> {
    /// Why.
    pub error: Error,
    /// The event that arrived instead.
    pub event: Option<Event<'ch>>,
}

/// A [`WaitError`] without the event: its error, and the kind and
/// status of the event that came instead (what `?` boxes).
#[cfg(feature = "std")]
#[derive(Debug)]
struct DetachedWait {
    error: Error,
    event: Option<(EventKind, i32)>,
}

#[cfg(feature = "std")]
impl core::fmt::Display for DetachedWait {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        fmt_wait(f, &self.error, self.event)
    }
}

#[cfg(feature = "std")]
impl core::error::Error for DetachedWait {}

impl WaitError<'_> {
    #[cfg(feature = "std")]
    fn detached(self) -> DetachedWait {
        DetachedWait { error: self.error, event: self.event.map(|ev| (ev.kind(), ev.status())) }
    }
}

fn fmt_wait(f: &mut core::fmt::Formatter<'_>, error: &Error, event: Option<(EventKind, i32)>) -> core::fmt::Result {
    match event {
        Some((kind, status)) if kind == EventKind::Rejected => {
            write!(f, "{error} (event {}, status {status}: {})", kind.as_str(), super::reason::reject_msg(status))
        }
        Some((kind, status)) => write!(f, "{error} (event {}, status {status})", kind.as_str()),
        None => write!(f, "{error}"),
    }
}

impl From<WaitError<'_>> for Error {
    fn from(e: WaitError<'_>) -> Self {
        e.error
    }
}

impl core::fmt::Display for WaitError<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        fmt_wait(f, &self.error, self.event.as_ref().map(|ev| (ev.kind(), ev.status())))
    }
}

crate::error::box_error_from!(['ch] WaitError<'ch>, |e| e.detached());
