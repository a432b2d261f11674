//! # Safety
//!
//! Asynchronous events: `ibv_get_async_event`, `ibv_ack_async_event`.
//!
//! The event is read from the context's async fd by the `verbs` crate (so
//! an `O_NONBLOCK` the C program sets on `ctx->async_fd` applies) and
//! written to the caller's non-NULL `struct ibv_async_event`. No CQ, QP,
//! SRQ or WQ can be created through this library yet, so the kernel can
//! only report port and device events; should it name another object, the
//! element is NULL. Acknowledging a port event has nothing to count.
#![allow(unsafe_code)]

use core::ffi::c_int;
use core::ptr::null_mut;

use verbs::AsyncElement;

use crate::abi::device::IbvContext;
use crate::abi::objects::{IbvAsyncElement, IbvAsyncEvent};
use crate::context;
use crate::errno::{errno_of, fail_neg1};

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
    if let AsyncElement::Port(p) = ev.element() {
        element.port_num = p as c_int;
    }
    // SAFETY: non-NULL, and the caller promises a writable ibv_async_event.
    unsafe { event.write(IbvAsyncEvent { element, event_type: ev.event_type.raw() as c_int }) };
    0
}

/// `ibv_ack_async_event`: nothing to count for port and device events.
pub(crate) extern "C" fn ibv_ack_async_event(_event: *mut IbvAsyncEvent) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_context_or_event_is_refused() {
        let mut ev = IbvAsyncEvent { element: IbvAsyncElement { cq: null_mut() }, event_type: 0 };
        // SAFETY: NULL context: refused before `ev` is touched.
        assert_eq!(unsafe { ibv_get_async_event(null_mut(), &mut ev) }, -1);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EINVAL));
        ibv_ack_async_event(null_mut());
    }
}
