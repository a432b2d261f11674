//! The mlx5 direct verbs not implemented: each fails the way libmlx5
//! reports an unsupported feature for its return type (`errno` =
//! `EOPNOTSUPP`): NULL for a pointer, the errno value for an `int`
//! (libmlx5's convention for these), -1 for `mlx5dv_devx_get_event`'s
//! `ssize_t`; the `void` ones do nothing (they free objects that only the
//! failing constructors would have made).
//!
//! As in `crate::stubs`, they are declared without parameters: in the
//! x86-64 System V calling convention a callee that reads no argument is
//! unaffected by how many were passed; only the return register matters,
//! and each stub's return type has the size and class of the C one.

use core::ffi::{c_int, c_void};

use crate::errno::{fail_null, set_errno};

const E: c_int = libc::EOPNOTSUPP;

/// Pointer-returning: NULL with errno.
macro_rules! null_stubs {
    ($($name:ident),* $(,)?) => {$(
        pub(crate) extern "C" fn $name() -> *mut c_void { fail_null(E) }
    )*};
}

/// `int`-returning: the errno value (0 would be success).
macro_rules! errno_stubs {
    ($($name:ident),* $(,)?) => {$(
        pub(crate) extern "C" fn $name() -> c_int { set_errno(E); E }
    )*};
}

/// `void`: nothing to free (nothing was ever made).
macro_rules! void_stubs {
    ($($name:ident),* $(,)?) => {$(
        pub(crate) extern "C" fn $name() {}
    )*};
}

null_stubs!(
    mlx5dv_alloc_dm, mlx5dv_alloc_var, mlx5dv_create_flow, mlx5dv_create_flow_action_esp,
    mlx5dv_create_flow_action_modify_header, mlx5dv_create_flow_action_packet_reformat,
    mlx5dv_create_flow_matcher, mlx5dv_create_mkey, mlx5dv_create_steering_anchor, mlx5dv_create_wq,
    mlx5dv_crypto_login_create, mlx5dv_dek_create, mlx5dv_devx_alloc_msi_vector,
    mlx5dv_devx_alloc_uar, mlx5dv_devx_create_cmd_comp, mlx5dv_devx_create_eq,
    mlx5dv_devx_create_event_channel, mlx5dv_devx_obj_create, mlx5dv_devx_umem_reg,
    mlx5dv_devx_umem_reg_ex, mlx5dv_dm_map_op_addr, mlx5dv_dr_action_create_aso,
    mlx5dv_dr_action_create_default_miss, mlx5dv_dr_action_create_dest_array,
    mlx5dv_dr_action_create_dest_devx_tir, mlx5dv_dr_action_create_dest_ib_port,
    mlx5dv_dr_action_create_dest_ibv_qp, mlx5dv_dr_action_create_dest_root_table,
    mlx5dv_dr_action_create_dest_table, mlx5dv_dr_action_create_dest_vport,
    mlx5dv_dr_action_create_drop, mlx5dv_dr_action_create_flow_counter,
    mlx5dv_dr_action_create_flow_meter, mlx5dv_dr_action_create_flow_sampler,
    mlx5dv_dr_action_create_modify_header, mlx5dv_dr_action_create_packet_reformat,
    mlx5dv_dr_action_create_pop_vlan, mlx5dv_dr_action_create_push_vlan,
    mlx5dv_dr_action_create_tag, mlx5dv_dr_domain_create, mlx5dv_dr_matcher_create,
    mlx5dv_dr_rule_create, mlx5dv_dr_table_create, mlx5dv_get_vfio_device_list, mlx5dv_pp_alloc,
    mlx5dv_sched_leaf_create, mlx5dv_sched_node_create,
);

errno_stubs!(
    _mlx5dv_mkey_check, _mlx5dv_query_port, mlx5dv_crypto_login, mlx5dv_crypto_login_destroy,
    mlx5dv_crypto_login_query, mlx5dv_crypto_login_query_state, mlx5dv_crypto_logout,
    mlx5dv_dci_stream_id_reset, mlx5dv_dek_destroy, mlx5dv_dek_query, mlx5dv_destroy_flow_matcher,
    mlx5dv_destroy_mkey, mlx5dv_destroy_steering_anchor, mlx5dv_devx_cq_modify,
    mlx5dv_devx_cq_query, mlx5dv_devx_destroy_eq, mlx5dv_devx_free_msi_vector,
    mlx5dv_devx_general_cmd, mlx5dv_devx_get_async_cmd_comp, mlx5dv_devx_ind_tbl_modify,
    mlx5dv_devx_ind_tbl_query, mlx5dv_devx_obj_destroy, mlx5dv_devx_obj_modify,
    mlx5dv_devx_obj_query, mlx5dv_devx_obj_query_async, mlx5dv_devx_qp_modify, mlx5dv_devx_qp_query,
    mlx5dv_devx_query_eqn, mlx5dv_devx_srq_modify, mlx5dv_devx_srq_query,
    mlx5dv_devx_subscribe_devx_event, mlx5dv_devx_subscribe_devx_event_fd, mlx5dv_devx_umem_dereg,
    mlx5dv_devx_wq_modify, mlx5dv_devx_wq_query, mlx5dv_dr_action_destroy,
    mlx5dv_dr_action_modify_aso, mlx5dv_dr_action_modify_flow_meter,
    mlx5dv_dr_aso_other_domain_link, mlx5dv_dr_aso_other_domain_unlink, mlx5dv_dr_domain_destroy,
    mlx5dv_dr_domain_sync, mlx5dv_dr_matcher_destroy, mlx5dv_dr_matcher_set_layout,
    mlx5dv_dr_rule_destroy, mlx5dv_dr_table_destroy, mlx5dv_dump_dr_domain, mlx5dv_dump_dr_matcher,
    mlx5dv_dump_dr_rule, mlx5dv_dump_dr_table, mlx5dv_get_clock_info, mlx5dv_map_ah_to_qp,
    mlx5dv_modify_qp_lag_port, mlx5dv_modify_qp_sched_elem, mlx5dv_modify_qp_udp_sport,
    mlx5dv_qp_cancel_posted_send_wrs, mlx5dv_query_qp_lag_port, mlx5dv_reserved_qpn_alloc,
    mlx5dv_reserved_qpn_dealloc, mlx5dv_sched_leaf_destroy, mlx5dv_sched_leaf_modify,
    mlx5dv_sched_node_destroy, mlx5dv_sched_node_modify, mlx5dv_set_context_attr,
    mlx5dv_vfio_get_events_fd, mlx5dv_vfio_process_events,
);

void_stubs!(
    mlx5dv_devx_destroy_cmd_comp, mlx5dv_devx_destroy_event_channel, mlx5dv_devx_free_uar,
    mlx5dv_dr_domain_allow_duplicate_rules, mlx5dv_dr_domain_set_reclaim_device_memory,
    mlx5dv_free_var, mlx5dv_pp_free,
);

/// `mlx5dv_devx_get_event` (`ssize_t`): -1 with errno.
pub(crate) extern "C" fn mlx5dv_devx_get_event() -> isize {
    set_errno(E);
    -1
}
