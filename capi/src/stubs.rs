//! The entry points not implemented yet: each fails the way C reports
//! failure for its return type, with `errno` = `EOPNOTSUPP`
//! (`ENOSYS` for the IBVERBS_1.0 compatibility versions, [`v1_0`]).
//!
//! They are declared without parameters: in the x86-64 System V calling
//! convention arguments live in registers and on the caller-cleaned stack,
//! so a callee that reads none of them is unaffected by how many were
//! passed (variadic `__verbs_log` included); only the return register
//! matters, and each stub's return type has the size and class of the C
//! one (pointer, `int`, `uint64_t`, `void`).
//!
//! The provider interface (IBVERBS_PRIVATE_34: `ibv_cmd_*`,
//! `verbs_register_driver_34`, …) exists only so that rdma-core's C
//! provider libraries (`libmlx5.so.1`, `libefa.so.1`), which programs such
//! as perftest link, load: a C provider's registration
//! (`verbs_register_driver_34`, called from its constructor) is accepted
//! and ignored, so no C provider ever drives a device; our Rust providers do.

use core::ffi::{c_int, c_void};

use crate::errno::{fail_neg1, fail_null, set_errno};

/// Pointer-returning verbs: NULL with errno.
macro_rules! null_stubs {
    ($e:expr => $($name:ident),* $(,)?) => {$(
        pub(crate) extern "C" fn $name() -> *mut c_void { fail_null($e) }
    )*};
}

/// Verbs returning the errno value (0 on success).
macro_rules! errno_stubs {
    ($e:expr => $($name:ident),* $(,)?) => {$(
        pub(crate) extern "C" fn $name() -> c_int { set_errno($e); $e }
    )*};
}

/// Verbs returning -1 with errno.
macro_rules! neg1_stubs {
    ($e:expr => $($name:ident),* $(,)?) => {$(
        pub(crate) extern "C" fn $name() -> c_int { fail_neg1($e) }
    )*};
}

/// `void` functions: nothing to report, nothing done.
macro_rules! void_stubs {
    ($($name:ident),* $(,)?) => {$(
        pub(crate) extern "C" fn $name() {}
    )*};
}

const E: c_int = libc::EOPNOTSUPP;

null_stubs!(E =>
    ibv_import_device,
    ibv_import_mr, ibv_import_pd, ibv_reg_dmabuf_mr, ibv_import_dm,
    _verbs_init_and_alloc_context, verbs_open_device,
);

errno_stubs!(E =>
    ibv_query_ece, ibv_set_ece, execute_ioctl,
    ibv_cmd_advise_mr, ibv_cmd_alloc_dm, ibv_cmd_alloc_mw, ibv_cmd_alloc_pd, ibv_cmd_attach_mcast,
    ibv_cmd_close_xrcd, ibv_cmd_create_ah, ibv_cmd_create_counters, ibv_cmd_create_cq,
    ibv_cmd_create_cq_ex, ibv_cmd_create_flow, ibv_cmd_create_flow_action_esp, ibv_cmd_create_qp,
    ibv_cmd_create_qp_ex, ibv_cmd_create_qp_ex2, ibv_cmd_create_rwq_ind_table, ibv_cmd_create_srq,
    ibv_cmd_create_srq_ex, ibv_cmd_create_wq, ibv_cmd_dealloc_mw, ibv_cmd_dealloc_pd,
    ibv_cmd_dereg_mr, ibv_cmd_destroy_ah, ibv_cmd_destroy_counters, ibv_cmd_destroy_cq,
    ibv_cmd_destroy_flow, ibv_cmd_destroy_flow_action, ibv_cmd_destroy_qp,
    ibv_cmd_destroy_rwq_ind_table, ibv_cmd_destroy_srq, ibv_cmd_destroy_wq, ibv_cmd_detach_mcast,
    ibv_cmd_free_dm, ibv_cmd_get_context, ibv_cmd_modify_cq, ibv_cmd_modify_flow_action_esp,
    ibv_cmd_modify_qp, ibv_cmd_modify_qp_ex, ibv_cmd_modify_srq, ibv_cmd_modify_wq,
    ibv_cmd_open_qp, ibv_cmd_open_xrcd, ibv_cmd_poll_cq, ibv_cmd_post_recv, ibv_cmd_post_send,
    ibv_cmd_post_srq_recv, ibv_cmd_query_context, ibv_cmd_query_device_any, ibv_cmd_query_mr,
    ibv_cmd_query_port, ibv_cmd_query_qp, ibv_cmd_query_srq, ibv_cmd_read_counters,
    ibv_cmd_reg_dm_mr, ibv_cmd_reg_dmabuf_mr, ibv_cmd_reg_mr, ibv_cmd_req_notify_cq,
    ibv_cmd_rereg_mr, ibv_cmd_resize_cq,
);

neg1_stubs!(E =>
    ibv_resolve_eth_l2_from_gid,
    ibv_dontfork_range, ibv_dofork_range, ibv_read_ibdev_sysfs_file,
    __ioctl_final_num_attrs,
);

void_stubs!(
    ibv_unimport_mr, ibv_unimport_pd, ibv_unimport_dm, verbs_register_driver_34, verbs_set_ops,
    verbs_init_cq, verbs_uninit_context, __verbs_log,
);

/// `ibv_query_qp_data_in_order`: 0 = "no in-order guarantee" (no errno).
pub(crate) extern "C" fn ibv_query_qp_data_in_order() -> c_int {
    0
}

/// `verbs_allow_disassociate_destroy` (IBVERBS_PRIVATE_34 data): a `bool`
/// rdma-core's providers read; never set here.
pub(crate) static VERBS_ALLOW_DISASSOCIATE_DESTROY: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(false);

/// `ibv_register_driver@IBVERBS_1.1` (the pre-rdma-core provider interface).
pub(crate) extern "C" fn ibv_register_driver() {}

/// The IBVERBS_1.0 versions of the classic verbs (the pre-2006 ABI with
/// different structs): `ENOSYS`.
pub(crate) mod v1_0 {
    use super::*;

    const E: c_int = libc::ENOSYS;

    null_stubs!(E =>
        ibv_get_device_list, ibv_open_device, ibv_alloc_pd, ibv_reg_mr, ibv_create_cq,
        ibv_create_srq, ibv_create_qp, ibv_create_ah, ibv_get_device_name,
    );

    neg1_stubs!(E =>
        ibv_close_device, ibv_dealloc_pd, ibv_dereg_mr, ibv_destroy_ah, ibv_destroy_cq,
        ibv_destroy_qp, ibv_destroy_srq, ibv_modify_qp, ibv_modify_srq, ibv_query_qp,
        ibv_query_srq, ibv_resize_cq, ibv_attach_mcast, ibv_detach_mcast, ibv_query_device,
        ibv_query_port, ibv_query_gid, ibv_query_pkey, ibv_get_cq_event, ibv_get_async_event,
    );

    void_stubs!(ibv_free_device_list, ibv_ack_cq_events, ibv_ack_async_event);

    /// `ibv_get_device_guid@IBVERBS_1.0`: 0 with `ENOSYS`.
    pub(crate) extern "C" fn ibv_get_device_guid() -> u64 {
        set_errno(E);
        0
    }
}
