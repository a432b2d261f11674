//! UD multicast through the connection manager (`rdma_join_multicast`,
//! `rdma_leave_multicast`): a UD id bound to a local address joins an IP
//! multicast group; the kernel answers with
//! [`EventKind::MulticastJoin`](super::EventKind::MulticastJoin), whose
//! [`Event::ud`](super::Event::ud) carries the group's address handle
//! attributes (the multicast GID in `grh.dgid`, e.g. `::ffff:224.0.1.10`
//! on RoCE v2), its Q_Key, and QP number `0xffffff`.
//!
//! librdmacm also attaches the id's QP to the group when the join event
//! is read, and detaches it on leave. Here the id does not own the QP:
//! attach with [`QueuePair::attach_mcast`](crate::qp::QueuePair::attach_mcast)
//! (the GID and LID from the event) after the join event and detach
//! before leaving. Senders build an [`Ah`](crate::Ah) from the same
//! attributes and send to QP `0xffffff` with the event's Q_Key.

use core::mem::offset_of;
use core::net::SocketAddr;

use crate::abi::ucma::{
    CreateIdResp, DestroyId, DestroyIdResp, JoinMcast, RDMA_MC_JOIN_FLAG_FULLMEMBER,
    RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER, RDMA_USER_CM_CMD_JOIN_MCAST, RDMA_USER_CM_CMD_LEAVE_MCAST,
};
use crate::error::Result;

use super::addr;
use super::event::{Event, EventKind};
use super::id::CmId;

/// The QP number a multicast datagram is sent to (`0xffffff`).
pub const MULTICAST_QPN: u32 = 0x00ff_ffff;

/// A multicast group joined by a UD id (`struct cma_multicast` of
/// librdmacm). It borrows the id, which cannot be destroyed while the
/// membership exists. Dropping it is [`leave`](Self::leave) with the
/// error ignored; a forgotten membership ends with its id.
#[derive(Debug)]
pub struct Membership<'id, 'ch> {
    id: &'id CmId<'ch>,
    handle: u32,
    group: SocketAddr,
    live: bool,
}

impl<'ch> CmId<'ch> {
    /// `rdma_join_multicast` (`rdma_join_multicast_ex` with `send_only`:
    /// a send-only full member, which receives nothing): starts joining
    /// `group` (an IPv4 or IPv6 multicast address). The id must be bound
    /// to a local address ([`bind_addr`](Self::bind_addr), or
    /// [`resolve_addr`](Self::resolve_addr) of the group from a local
    /// address, as `mckey` does); otherwise the kernel answers `EINVAL`.
    /// [`EventKind::MulticastJoin`] (or `MulticastError`) follows on the
    /// channel, with the id's context ([`Event::is_for_membership`]).
    #[doc(alias = "rdma_join_multicast", alias = "rdma_join_multicast_ex")]
    pub fn join_multicast(&self, group: &SocketAddr, send_only: bool) -> Result<Membership<'_, 'ch>> {
        const VERB: &str = "rdma_join_multicast";
        let (a, addr_size) = addr::encode(group);
        let join_flags =
            if send_only { RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER } else { RDMA_MC_JOIN_FLAG_FULLMEMBER } as u16;
        let cmd = JoinMcast { response: 0, uid: self.context(), id: self.handle(), addr_size, join_flags, addr: a };
        let r: CreateIdResp =
            self.channel().file.call(VERB, RDMA_USER_CM_CMD_JOIN_MCAST, &cmd, offset_of!(JoinMcast, response))?;
        Ok(Membership { id: self, handle: r.id, group: *group, live: true })
    }
}

impl<'id, 'ch> Membership<'id, 'ch> {
    /// The kernel's handle of the membership (the `id` of its events).
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// The group address joined.
    pub fn group(&self) -> SocketAddr {
        self.group
    }

    /// The id that joined.
    pub fn id(&self) -> &'id CmId<'ch> {
        self.id
    }

    /// `rdma_leave_multicast`: leaves the group (detach the QP first);
    /// returns how many events the kernel reported for the membership.
    /// Events already read stay valid (they are copies).
    #[doc(alias = "rdma_leave_multicast")]
    pub fn leave(mut self) -> Result<u32> {
        self.live = false;
        self.leave_raw()
    }

    fn leave_raw(&self) -> Result<u32> {
        let cmd = DestroyId { response: 0, id: self.handle, reserved: 0 };
        let r: DestroyIdResp = self.id.channel().file.call(
            "rdma_leave_multicast",
            RDMA_USER_CM_CMD_LEAVE_MCAST,
            &cmd,
            offset_of!(DestroyId, response),
        )?;
        Ok(r.events_reported)
    }
}

impl Drop for Membership<'_, '_> {
    fn drop(&mut self) {
        if self.live {
            // Nothing to hand back from a drop; destroying the id leaves
            // at the latest.
            let _ = self.leave_raw();
        }
    }
}

impl Event<'_> {
    /// Whether the event is the join result
    /// ([`MulticastJoin`](EventKind::MulticastJoin) or
    /// [`MulticastError`](EventKind::MulticastError)) of `m`.
    pub fn is_for_membership(&self, m: &Membership<'_, '_>) -> bool {
        matches!(self.kind(), EventKind::MulticastJoin | EventKind::MulticastError)
            && self.is_for(m.id)
            && self.id_handle() == m.handle
    }
}
