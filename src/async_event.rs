//! Asynchronous events (`ibv_get_async_event`, `ibv_ack_async_event`).
//!
//! The kernel reports errors and state changes that do not belong to a
//! work request — a port going down, a QP entering the error state, an SRQ
//! falling below its limit — as `struct ib_uverbs_async_event_desc`
//! records on the context's async event file ([`Context::async_fd`]). That
//! fd works with poll/epoll (readable = an event is queued).
//!
//! # Acknowledging
//!
//! libibverbs makes `ibv_destroy_cq/qp/srq` wait until every async event
//! read for the object was acknowledged, because the event carries a
//! pointer to the object. Here an event carries only the object's
//! `user_handle` (a number the creator chose) and never a reference, so an
//! object can be destroyed while events about it are still being handled;
//! [`Context::ack_async_event`] exists for API parity and does nothing.

use zerocopy::{FromZeros, IntoBytes};

use crate::abi::uverbs::AsyncEventDesc;
use crate::event_fd::{read_record, set_nonblocking};
use crate::context::Context;
use crate::error::Result;

pub use crate::event_type::EventType;


/// What an async event is about (`ibv_async_event.element`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AsyncElement {
    /// A CQ, by the `user_handle` it was created with.
    Cq(u64),
    /// A QP, by the `user_handle` it was created with.
    Qp(u64),
    /// An SRQ, by the `user_handle` it was created with.
    Srq(u64),
    /// A work queue, by the `user_handle` it was created with.
    Wq(u64),
    /// A port (port and device events), by number.
    Port(u32),
}

/// One asynchronous event (`struct ibv_async_event`).
#[doc(alias = "ibv_async_event")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AsyncEvent {
    /// What happened.
    pub event_type: EventType,
    /// The raw `element` field: a `user_handle` or a port number,
    /// depending on the type (see [`AsyncEvent::element`]).
    pub raw_element: u64,
}

impl AsyncEvent {
    /// Decodes the kernel's record.
    pub fn from_desc(desc: &AsyncEventDesc) -> Self {
        Self { event_type: EventType::from_raw(desc.event_type), raw_element: desc.element }
    }

    /// What the event is about, classified by event type as libibverbs'
    /// `ibv_get_async_event` does (unknown types count as port events).
    pub fn element(&self) -> AsyncElement {
        use EventType::*;
        let h = self.raw_element;
        match self.event_type {
            CqErr => AsyncElement::Cq(h),
            QpFatal | QpReqErr | QpAccessErr | CommEst | SqDrained | PathMig | PathMigErr
            | QpLastWqeReached => AsyncElement::Qp(h),
            SrqErr | SrqLimitReached => AsyncElement::Srq(h),
            WqFatal => AsyncElement::Wq(h),
            _ => AsyncElement::Port(h as u32),
        }
    }
}

impl Context {
    /// `ibv_get_async_event`: takes the next asynchronous event off the
    /// context's async event file. Blocks until one arrives, unless the
    /// file was made non-blocking ([`Context::set_async_nonblocking`]),
    /// in which case no pending event gives
    /// [`ErrorKind::WouldBlock`](crate::ErrorKind::WouldBlock).
    #[doc(alias = "ibv_get_async_event")]
    pub fn get_async_event(&self) -> Result<AsyncEvent> {
        let mut desc = AsyncEventDesc::new_zeroed();
        read_record("ibv_get_async_event", self.async_fd(), desc.as_mut_bytes())?;
        Ok(AsyncEvent::from_desc(&desc))
    }

    /// `ibv_ack_async_event`: acknowledges an event. A no-op here — events
    /// hold no reference to the object they name (see the module docs).
    #[doc(alias = "ibv_ack_async_event")]
    pub fn ack_async_event(&self, event: AsyncEvent) {
        let _ = event;
    }

    /// Sets or clears `O_NONBLOCK` on the async event file (C:
    /// `fcntl(ctx->async_fd, F_SETFL, O_NONBLOCK)`).
    pub fn set_async_nonblocking(&self, nonblocking: bool) -> Result<()> {
        set_nonblocking("ibv_get_async_event", self.async_fd(), nonblocking)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbering_follows_ib_event_type() {
        // Spot values from <infiniband/verbs.h> enum ibv_event_type.
        assert_eq!(EventType::CqErr.raw(), 0);
        assert_eq!(EventType::DeviceFatal.raw(), 8);
        assert_eq!(EventType::PortActive.raw(), 9);
        assert_eq!(EventType::PortErr.raw(), 10);
        assert_eq!(EventType::SrqLimitReached.raw(), 15);
        assert_eq!(EventType::WqFatal.raw(), 19);
        for raw in 0..30 {
            assert_eq!(EventType::from_raw(raw).raw(), raw);
        }
        assert_eq!(EventType::from_raw(21), EventType::Unknown(21));
    }

    #[test]
    fn element_is_classified_by_type() {
        let ev = |t: EventType, e| AsyncEvent { event_type: t, raw_element: e };
        assert_eq!(ev(EventType::CqErr, 7).element(), AsyncElement::Cq(7));
        assert_eq!(ev(EventType::CommEst, 8).element(), AsyncElement::Qp(8));
        assert_eq!(ev(EventType::QpLastWqeReached, 9).element(), AsyncElement::Qp(9));
        assert_eq!(ev(EventType::SrqLimitReached, 1).element(), AsyncElement::Srq(1));
        assert_eq!(ev(EventType::WqFatal, 2).element(), AsyncElement::Wq(2));
        assert_eq!(ev(EventType::PortErr, 1).element(), AsyncElement::Port(1));
        assert_eq!(ev(EventType::Unknown(99), 3).element(), AsyncElement::Port(3));
        let desc = AsyncEventDesc { element: 1, event_type: 9, reserved: 0 };
        assert_eq!(AsyncEvent::from_desc(&desc), ev(EventType::PortActive, 1));
    }
}
