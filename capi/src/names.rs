//! What a C struct names (issue 29): rdma-core sends the kernel the
//! fields of the public structs, not the object behind the pointer. A
//! verb on `pd` goes to `pd->context`'s device file with `pd->handle`; a
//! QP created with `attr->send_cq` names the CQ by `send_cq->handle`. A
//! caller that edits those fields (they are plain members of the C
//! structs) gets the kernel's answer for an object it does not know, and
//! the real object is left alone.
//!
//! This library acts on the Rust object behind the pointer, so it keeps
//! the names it handed out ([`Names`]) and, where the C view no longer
//! says them, answers what the kernel answers for an unknown handle
//! ([`UNKNOWN`]) without touching the object. The one case that differs
//! from rdma-core: a context pointing at another open context that holds
//! an object of the same kind under the same handle, where rdma-core would
//! act on that other object; this library refuses.
//!
//! Which fields each verb reads is rdma-core 44's choice (librxe, libsiw),
//! checked by `tests/device/c/capi_fields.c`: verbs on an object use its
//! `context` and `handle`; objects a verb only refers to (the CQs and SRQ
//! of a new QP) are named by their `handle` alone; verbs that the
//! providers run in user space (`ibv_poll_cq`, receives, siw's
//! `ibv_req_notify_cq` and posts) read neither.

use core::ffi::c_int;

use crate::abi::device::IbvContext;

/// The kernel's answer for a handle its device file does not hold: the
/// uobject lookup (`rdma_lookup_get_uobject`) gives `ENOENT`, which every
/// write and ioctl command of 6.12 passes on (seen on rxe and siw).
pub(crate) const UNKNOWN: c_int = libc::ENOENT;

/// The context and handle an object was handed out with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Names {
    context: usize,
    handle: u32,
}

impl Names {
    pub(crate) fn new(context: *mut IbvContext, handle: u32) -> Self {
        Self { context: context as usize, handle }
    }

    /// Whether a C view saying `context` and `handle` names this object.
    #[inline]
    pub(crate) fn said_by(&self, context: *mut IbvContext, handle: u32) -> bool {
        context as usize == self.context && handle == self.handle
    }

    /// Whether `handle` names this object (the context is not read).
    #[inline]
    pub(crate) fn handle_is(&self, handle: u32) -> bool {
        handle == self.handle
    }

    /// The context the object was made in (not the C view's field, which
    /// the caller may have changed).
    pub(crate) fn context(&self) -> *mut IbvContext {
        self.context as *mut IbvContext
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_field_no_longer_names_the_object() {
        let ctx = 0x1000 as *mut IbvContext;
        let n = Names::new(ctx, 7);
        assert!(n.said_by(ctx, 7) && n.handle_is(7));
        assert!(!n.said_by(ctx, 7 ^ 0xdead_beef) && !n.handle_is(7 ^ 0xdead_beef));
        assert!(!n.said_by(0x2000 as *mut IbvContext, 7));
        assert_eq!(n.context(), ctx);
    }
}
