//! # Safety
//!
//! `struct ibv_context_ops`: the table the `static inline` data-path verbs
//! of verbs.h call through (`ibv_post_send`, `ibv_poll_cq`, …). No QP, CQ,
//! SRQ or MW can be created yet, so every entry refuses with
//! `EOPNOTSUPP` rather than leaving a NULL pointer for C to jump to. The
//! one write, `*bad_wr = wr`, goes to a pointer the caller passes for that
//! purpose (checked for NULL).
#![allow(unsafe_code)]

use core::ffi::c_int;

use crate::abi::device::IbvContextOps;
use crate::abi::objects::{IbvCq, IbvMw, IbvPd, IbvQp, IbvSrq};
use crate::abi::wr::{IbvMwBind, IbvRecvWr, IbvSendWr, IbvWc};
use crate::errno::{fail_errno, fail_neg1, fail_null};

/// # Safety
///
/// `bad` is NULL or points to a writable `struct ibv_send_wr *`.
unsafe extern "C" fn post_send(_qp: *mut IbvQp, wr: *mut IbvSendWr, bad: *mut *mut IbvSendWr) -> c_int {
    if !bad.is_null() {
        // SAFETY: the caller passes NULL or a writable pointer slot.
        unsafe { *bad = wr };
    }
    fail_errno(libc::EOPNOTSUPP)
}

/// # Safety
///
/// `bad` is NULL or points to a writable `struct ibv_recv_wr *`.
unsafe extern "C" fn post_recv(_qp: *mut IbvQp, wr: *mut IbvRecvWr, bad: *mut *mut IbvRecvWr) -> c_int {
    if !bad.is_null() {
        // SAFETY: the caller passes NULL or a writable pointer slot.
        unsafe { *bad = wr };
    }
    fail_errno(libc::EOPNOTSUPP)
}

/// # Safety
///
/// `bad` is NULL or points to a writable `struct ibv_recv_wr *`.
unsafe extern "C" fn post_srq_recv(_srq: *mut IbvSrq, wr: *mut IbvRecvWr, bad: *mut *mut IbvRecvWr) -> c_int {
    if !bad.is_null() {
        // SAFETY: the caller passes NULL or a writable pointer slot.
        unsafe { *bad = wr };
    }
    fail_errno(libc::EOPNOTSUPP)
}

extern "C" fn poll_cq(_cq: *mut IbvCq, _n: c_int, _wc: *mut IbvWc) -> c_int {
    fail_neg1(libc::EOPNOTSUPP)
}

extern "C" fn req_notify_cq(_cq: *mut IbvCq, _solicited_only: c_int) -> c_int {
    fail_errno(libc::EOPNOTSUPP)
}

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
        poll_cq: Some(poll_cq),
        req_notify_cq: Some(req_notify_cq),
        _compat_cq_event: None,
        _compat_resize_cq: None,
        _compat_destroy_cq: None,
        _compat_create_srq: None,
        _compat_modify_srq: None,
        _compat_query_srq: None,
        _compat_destroy_srq: None,
        post_srq_recv: Some(post_srq_recv),
        _compat_create_qp: None,
        _compat_query_qp: None,
        _compat_modify_qp: None,
        _compat_destroy_qp: None,
        post_send: Some(post_send),
        post_recv: Some(post_recv),
        _compat_create_ah: None,
        _compat_destroy_ah: None,
        _compat_attach_mcast: None,
        _compat_detach_mcast: None,
        _compat_async_event: None,
    }
}
