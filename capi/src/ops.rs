//! `struct ibv_context_ops`: the table the `static inline` data-path verbs
//! of verbs.h call through (`ibv_post_send`, `ibv_poll_cq`, …): CQs in
//! `cq.rs`, posting in `post.rs`. Memory windows are not implemented yet:
//! their entries refuse with `EOPNOTSUPP` rather than leaving a NULL
//! pointer for C to jump to.

use core::ffi::c_int;

use crate::abi::device::IbvContextOps;
use crate::abi::objects::{IbvMw, IbvPd, IbvQp};
use crate::abi::wr::IbvMwBind;
use crate::errno::{fail_errno, fail_null};

extern "C" fn alloc_mw(_pd: *mut IbvPd, _ty: c_int) -> *mut IbvMw {
    fail_null(libc::EOPNOTSUPP)
}

extern "C" fn bind_mw(_qp: *mut IbvQp, _mw: *mut IbvMw, _bind: *mut IbvMwBind) -> c_int {
    fail_errno(libc::EOPNOTSUPP)
}

extern "C" fn dealloc_mw(_mw: *mut IbvMw) -> c_int {
    fail_errno(libc::EOPNOTSUPP)
}

/// The ops table every context gets.
pub(crate) fn context_ops() -> IbvContextOps {
    IbvContextOps {
        _compat_query_device: None,
        _compat_query_port: None,
        _compat_alloc_pd: None,
        _compat_dealloc_pd: None,
        _compat_reg_mr: None,
        _compat_rereg_mr: None,
        _compat_dereg_mr: None,
        alloc_mw: Some(alloc_mw),
        bind_mw: Some(bind_mw),
        dealloc_mw: Some(dealloc_mw),
        _compat_create_cq: None,
        poll_cq: Some(crate::cq::poll_cq),
        req_notify_cq: Some(crate::cq::req_notify_cq),
        _compat_cq_event: None,
        _compat_resize_cq: None,
        _compat_destroy_cq: None,
        _compat_create_srq: None,
        _compat_modify_srq: None,
        _compat_query_srq: None,
        _compat_destroy_srq: None,
        post_srq_recv: Some(crate::post::post_srq_recv),
        _compat_create_qp: None,
        _compat_query_qp: None,
        _compat_modify_qp: None,
        _compat_destroy_qp: None,
        post_send: Some(crate::post::post_send),
        post_recv: Some(crate::post::post_recv),
        _compat_create_ah: None,
        _compat_destroy_ah: None,
        _compat_attach_mcast: None,
        _compat_detach_mcast: None,
        _compat_async_event: None,
    }
}
