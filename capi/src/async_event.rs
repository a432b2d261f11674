//! # Safety
//!
//! Asynchronous events: `ibv_get_async_event`, `ibv_ack_async_event`.
//!
//! The event is read from the context's async fd by the `verbs` crate (so
//! an `O_NONBLOCK` the C program sets on `ctx->async_fd` applies) and
//! written to the caller's non-NULL `struct ibv_async_event`. Events on a
//! CQ, QP or SRQ name it by the `user_handle` the `verbs` crate gave it;
//! the registry turns that into the C pointer (NULL for an object already
//! destroyed, or a WQ, which this library does not create).
//! `ibv_ack_async_event` counts the event in the object's
//! `async_events_completed`/`events_completed` (what `ibv_destroy_*` waits
//! for); acknowledging a port event has nothing to count.
#![allow(unsafe_code)]

use core::ffi::c_int;
use core::ptr::null_mut;

use verbs::AsyncElement;

use crate::abi::device::IbvContext;
use crate::abi::objects::{IbvAsyncElement, IbvAsyncEvent};
use crate::context;
use crate::cq::CCq;
use crate::errno::{errno_of, fail_neg1};
use crate::qp::CQp;
use crate::registry::{self, Kind};
use crate::srq::CSrq;

/// `ibv_get_async_event`: 0, or -1 with errno (`EAGAIN` on a non-blocking
/// async fd with no event).
///
/// # Safety
///
/// `event` is NULL or points to a writable `struct ibv_async_event`.
pub(crate) unsafe extern "C" fn ibv_get_async_event(context: *mut IbvContext, event: *mut IbvAsyncEvent) -> c_int {
    let Some(c) = context::from_c(context) else { return fail_neg1(libc::EINVAL) };
    if event.is_null() {
        return fail_neg1(libc::EINVAL);
    }
    let ev = match c.ctx.get_async_event() {
        Ok(ev) => ev,
        Err(e) => return fail_neg1(errno_of(&e)),
    };
    let mut element = IbvAsyncElement { cq: null_mut() };
    match ev.element() {
        AsyncElement::Port(p) => element.port_num = p as c_int,
        AsyncElement::Cq(h) => {
            // SAFETY: registry entries are live boxes while its lock is held.
            element.cq = registry::with(h, Kind::Cq, |a| if a == 0 { null_mut() } else { unsafe { &*(a as *const CCq) }.as_c() });
        }
        AsyncElement::Qp(h) => {
            // SAFETY: as above.
            element.qp = registry::with(h, Kind::Qp, |a| if a == 0 { null_mut() } else { unsafe { &*(a as *const CQp) }.as_c() });
        }
        AsyncElement::Srq(h) => {
            // SAFETY: as above.
            element.srq = registry::with(h, Kind::Srq, |a| if a == 0 { null_mut() } else { unsafe { &*(a as *const CSrq) }.as_c() });
        }
        AsyncElement::Wq(_) => {}
    }
    // SAFETY: non-NULL, and the caller promises a writable ibv_async_event.
    unsafe { event.write(IbvAsyncEvent { element, event_type: ev.event_type.raw() as c_int }) };
    0
}

/// `enum ibv_event_type` values naming a CQ, an SRQ, a QP.
const CQ_EVENTS: [c_int; 1] = [0];
const SRQ_EVENTS: [c_int; 2] = [14, 15];
const QP_EVENTS: [c_int; 8] = [1, 2, 3, 4, 5, 6, 7, 16];

/// `ibv_ack_async_event`: counts a CQ, QP or SRQ event for the
/// `ibv_destroy_*` that waits for it; nothing for port and device events.
///
/// # Safety
///
/// `event` is NULL or points to an event `ibv_get_async_event` filled.
pub(crate) unsafe extern "C" fn ibv_ack_async_event(event: *mut IbvAsyncEvent) {
    if event.is_null() {
        return;
    }
    // SAFETY: non-NULL, the caller promises a readable event.
    let ev = unsafe { event.read() };
    // Every member of the element union is plain data (pointers or an
    // int), so reading the pointer the event type selects is defined;
    // from_c checks it before use.
    let e = ev.element;
    if CQ_EVENTS.contains(&ev.event_type) {
        // SAFETY: see above.
        if let Some(c) = crate::cq::from_c(unsafe { e.cq }) {
            c.ack(0, 1);
        }
    } else if QP_EVENTS.contains(&ev.event_type) {
        // SAFETY: see above.
        if let Some(c) = crate::qp::from_c(unsafe { e.qp }) {
            c.ack(1);
        }
    } else if SRQ_EVENTS.contains(&ev.event_type) {
        // SAFETY: see above.
        if let Some(c) = crate::srq::from_c(unsafe { e.srq }) {
            c.ack(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_context_or_event_is_refused() {
        let mut ev = IbvAsyncEvent { element: IbvAsyncElement { cq: null_mut() }, event_type: 0 };
        // SAFETY: NULL context: refused before `ev` is touched.
        assert_eq!(unsafe { ibv_get_async_event(null_mut(), &mut ev) }, -1);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EINVAL));
        // SAFETY: NULL is allowed.
        unsafe { ibv_ack_async_event(null_mut()) };
    }
}
