//! `struct ibv_context_ops`: the table the `static inline` data-path verbs
//! of verbs.h call through (`ibv_post_send`, `ibv_poll_cq`, …): CQs in
//! `cq.rs`, posting in `post.rs`, memory windows in `mw.rs`.

use crate::abi::device::IbvContextOps;


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
        alloc_mw: Some(crate::mw::alloc_mw),
        bind_mw: Some(crate::mw::bind_mw),
        dealloc_mw: Some(crate::mw::dealloc_mw),
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
