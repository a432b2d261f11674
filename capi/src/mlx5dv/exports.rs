//! libmlx5's exported names (rdma-core 44, `mlx5dv.map`), bound to their
//! Rust functions by module-level assembly as in `crate::exports`: a
//! plain name takes its version from the version script
//! (`NAME@@MLX5_1.x`); `mlx5dv_init_obj`, which libmlx5 exports in two
//! versions, is bound by `.symver` of two aliases.
//!
//! # Safety
//!
//! `global_asm!` is the unsafe operation: the assembly only creates symbol
//! aliases (`.globl`, `.type`, `.set`, `.symver`) of functions named by
//! `sym` operands, emits no code or data, and each alias has its target's
//! address and type. That a C caller's view of each name matches its Rust
//! function is the contract of the functions (their `# Safety` sections
//! and `stubs.rs`).
#![allow(unsafe_code)]

use super::stubs;

macro_rules! exports {
    (
        default { $($name:ident = $f:path,)* }
        versioned { $($alias:ident => $cname:ident $ver:literal = $cf:path,)* }
    ) => {
        core::arch::global_asm!(
            $(concat!(
                ".globl ", stringify!($name), "\n",
                ".type ", stringify!($name), ", @function\n",
                ".set ", stringify!($name), ", {", stringify!($name), "}",
            ),)*
            $(concat!(
                ".globl ", stringify!($alias), "\n",
                ".type ", stringify!($alias), ", @function\n",
                ".set ", stringify!($alias), ", {", stringify!($alias), "}\n",
                ".symver ", stringify!($alias), ", ", stringify!($cname), $ver,
            ),)*
            $($name = sym $f,)*
            $($alias = sym $cf,)*
        );
    };
}

exports! {
    default {
        mlx5dv_is_supported = super::mlx5dv_is_supported,
        mlx5dv_open_device = super::mlx5dv_open_device,
        mlx5dv_query_device = super::mlx5dv_query_device,
        mlx5dv_create_cq = super::mlx5dv_create_cq,
        mlx5dv_create_qp = super::qp::mlx5dv_create_qp,
        mlx5dv_qp_ex_from_ibv_qp_ex = super::qp::mlx5dv_qp_ex_from_ibv_qp_ex,
        _mlx5dv_mkey_check = stubs::_mlx5dv_mkey_check,
        _mlx5dv_query_port = stubs::_mlx5dv_query_port,
        mlx5dv_alloc_dm = stubs::mlx5dv_alloc_dm,
        mlx5dv_alloc_var = stubs::mlx5dv_alloc_var,
        mlx5dv_create_flow = stubs::mlx5dv_create_flow,
        mlx5dv_create_flow_action_esp = stubs::mlx5dv_create_flow_action_esp,
        mlx5dv_create_flow_action_modify_header = stubs::mlx5dv_create_flow_action_modify_header,
        mlx5dv_create_flow_action_packet_reformat = stubs::mlx5dv_create_flow_action_packet_reformat,
        mlx5dv_create_flow_matcher = stubs::mlx5dv_create_flow_matcher,
        mlx5dv_create_mkey = stubs::mlx5dv_create_mkey,
        mlx5dv_create_steering_anchor = stubs::mlx5dv_create_steering_anchor,
        mlx5dv_create_wq = stubs::mlx5dv_create_wq,
        mlx5dv_crypto_login = stubs::mlx5dv_crypto_login,
        mlx5dv_crypto_login_create = stubs::mlx5dv_crypto_login_create,
        mlx5dv_crypto_login_destroy = stubs::mlx5dv_crypto_login_destroy,
        mlx5dv_crypto_login_query = stubs::mlx5dv_crypto_login_query,
        mlx5dv_crypto_login_query_state = stubs::mlx5dv_crypto_login_query_state,
        mlx5dv_crypto_logout = stubs::mlx5dv_crypto_logout,
        mlx5dv_dci_stream_id_reset = stubs::mlx5dv_dci_stream_id_reset,
        mlx5dv_dek_create = stubs::mlx5dv_dek_create,
        mlx5dv_dek_destroy = stubs::mlx5dv_dek_destroy,
        mlx5dv_dek_query = stubs::mlx5dv_dek_query,
        mlx5dv_destroy_flow_matcher = stubs::mlx5dv_destroy_flow_matcher,
        mlx5dv_destroy_mkey = stubs::mlx5dv_destroy_mkey,
        mlx5dv_destroy_steering_anchor = stubs::mlx5dv_destroy_steering_anchor,
        mlx5dv_devx_alloc_msi_vector = stubs::mlx5dv_devx_alloc_msi_vector,
        mlx5dv_devx_alloc_uar = stubs::mlx5dv_devx_alloc_uar,
        mlx5dv_devx_cq_modify = stubs::mlx5dv_devx_cq_modify,
        mlx5dv_devx_cq_query = stubs::mlx5dv_devx_cq_query,
        mlx5dv_devx_create_cmd_comp = stubs::mlx5dv_devx_create_cmd_comp,
        mlx5dv_devx_create_eq = stubs::mlx5dv_devx_create_eq,
        mlx5dv_devx_create_event_channel = stubs::mlx5dv_devx_create_event_channel,
        mlx5dv_devx_destroy_cmd_comp = stubs::mlx5dv_devx_destroy_cmd_comp,
        mlx5dv_devx_destroy_eq = stubs::mlx5dv_devx_destroy_eq,
        mlx5dv_devx_destroy_event_channel = stubs::mlx5dv_devx_destroy_event_channel,
        mlx5dv_devx_free_msi_vector = stubs::mlx5dv_devx_free_msi_vector,
        mlx5dv_devx_free_uar = stubs::mlx5dv_devx_free_uar,
        mlx5dv_devx_general_cmd = stubs::mlx5dv_devx_general_cmd,
        mlx5dv_devx_get_async_cmd_comp = stubs::mlx5dv_devx_get_async_cmd_comp,
        mlx5dv_devx_get_event = stubs::mlx5dv_devx_get_event,
        mlx5dv_devx_ind_tbl_modify = stubs::mlx5dv_devx_ind_tbl_modify,
        mlx5dv_devx_ind_tbl_query = stubs::mlx5dv_devx_ind_tbl_query,
        mlx5dv_devx_obj_create = stubs::mlx5dv_devx_obj_create,
        mlx5dv_devx_obj_destroy = stubs::mlx5dv_devx_obj_destroy,
        mlx5dv_devx_obj_modify = stubs::mlx5dv_devx_obj_modify,
        mlx5dv_devx_obj_query = stubs::mlx5dv_devx_obj_query,
        mlx5dv_devx_obj_query_async = stubs::mlx5dv_devx_obj_query_async,
        mlx5dv_devx_qp_modify = stubs::mlx5dv_devx_qp_modify,
        mlx5dv_devx_qp_query = stubs::mlx5dv_devx_qp_query,
        mlx5dv_devx_query_eqn = stubs::mlx5dv_devx_query_eqn,
        mlx5dv_devx_srq_modify = stubs::mlx5dv_devx_srq_modify,
        mlx5dv_devx_srq_query = stubs::mlx5dv_devx_srq_query,
        mlx5dv_devx_subscribe_devx_event = stubs::mlx5dv_devx_subscribe_devx_event,
        mlx5dv_devx_subscribe_devx_event_fd = stubs::mlx5dv_devx_subscribe_devx_event_fd,
        mlx5dv_devx_umem_dereg = stubs::mlx5dv_devx_umem_dereg,
        mlx5dv_devx_umem_reg = stubs::mlx5dv_devx_umem_reg,
        mlx5dv_devx_umem_reg_ex = stubs::mlx5dv_devx_umem_reg_ex,
        mlx5dv_devx_wq_modify = stubs::mlx5dv_devx_wq_modify,
        mlx5dv_devx_wq_query = stubs::mlx5dv_devx_wq_query,
        mlx5dv_dm_map_op_addr = stubs::mlx5dv_dm_map_op_addr,
        mlx5dv_dr_action_create_aso = stubs::mlx5dv_dr_action_create_aso,
        mlx5dv_dr_action_create_default_miss = stubs::mlx5dv_dr_action_create_default_miss,
        mlx5dv_dr_action_create_dest_array = stubs::mlx5dv_dr_action_create_dest_array,
        mlx5dv_dr_action_create_dest_devx_tir = stubs::mlx5dv_dr_action_create_dest_devx_tir,
        mlx5dv_dr_action_create_dest_ib_port = stubs::mlx5dv_dr_action_create_dest_ib_port,
        mlx5dv_dr_action_create_dest_ibv_qp = stubs::mlx5dv_dr_action_create_dest_ibv_qp,
        mlx5dv_dr_action_create_dest_root_table = stubs::mlx5dv_dr_action_create_dest_root_table,
        mlx5dv_dr_action_create_dest_table = stubs::mlx5dv_dr_action_create_dest_table,
        mlx5dv_dr_action_create_dest_vport = stubs::mlx5dv_dr_action_create_dest_vport,
        mlx5dv_dr_action_create_drop = stubs::mlx5dv_dr_action_create_drop,
        mlx5dv_dr_action_create_flow_counter = stubs::mlx5dv_dr_action_create_flow_counter,
        mlx5dv_dr_action_create_flow_meter = stubs::mlx5dv_dr_action_create_flow_meter,
        mlx5dv_dr_action_create_flow_sampler = stubs::mlx5dv_dr_action_create_flow_sampler,
        mlx5dv_dr_action_create_modify_header = stubs::mlx5dv_dr_action_create_modify_header,
        mlx5dv_dr_action_create_packet_reformat = stubs::mlx5dv_dr_action_create_packet_reformat,
        mlx5dv_dr_action_create_pop_vlan = stubs::mlx5dv_dr_action_create_pop_vlan,
        mlx5dv_dr_action_create_push_vlan = stubs::mlx5dv_dr_action_create_push_vlan,
        mlx5dv_dr_action_create_tag = stubs::mlx5dv_dr_action_create_tag,
        mlx5dv_dr_action_destroy = stubs::mlx5dv_dr_action_destroy,
        mlx5dv_dr_action_modify_aso = stubs::mlx5dv_dr_action_modify_aso,
        mlx5dv_dr_action_modify_flow_meter = stubs::mlx5dv_dr_action_modify_flow_meter,
        mlx5dv_dr_aso_other_domain_link = stubs::mlx5dv_dr_aso_other_domain_link,
        mlx5dv_dr_aso_other_domain_unlink = stubs::mlx5dv_dr_aso_other_domain_unlink,
        mlx5dv_dr_domain_allow_duplicate_rules = stubs::mlx5dv_dr_domain_allow_duplicate_rules,
        mlx5dv_dr_domain_create = stubs::mlx5dv_dr_domain_create,
        mlx5dv_dr_domain_destroy = stubs::mlx5dv_dr_domain_destroy,
        mlx5dv_dr_domain_set_reclaim_device_memory = stubs::mlx5dv_dr_domain_set_reclaim_device_memory,
        mlx5dv_dr_domain_sync = stubs::mlx5dv_dr_domain_sync,
        mlx5dv_dr_matcher_create = stubs::mlx5dv_dr_matcher_create,
        mlx5dv_dr_matcher_destroy = stubs::mlx5dv_dr_matcher_destroy,
        mlx5dv_dr_matcher_set_layout = stubs::mlx5dv_dr_matcher_set_layout,
        mlx5dv_dr_rule_create = stubs::mlx5dv_dr_rule_create,
        mlx5dv_dr_rule_destroy = stubs::mlx5dv_dr_rule_destroy,
        mlx5dv_dr_table_create = stubs::mlx5dv_dr_table_create,
        mlx5dv_dr_table_destroy = stubs::mlx5dv_dr_table_destroy,
        mlx5dv_dump_dr_domain = stubs::mlx5dv_dump_dr_domain,
        mlx5dv_dump_dr_matcher = stubs::mlx5dv_dump_dr_matcher,
        mlx5dv_dump_dr_rule = stubs::mlx5dv_dump_dr_rule,
        mlx5dv_dump_dr_table = stubs::mlx5dv_dump_dr_table,
        mlx5dv_free_var = stubs::mlx5dv_free_var,
        mlx5dv_get_clock_info = stubs::mlx5dv_get_clock_info,
        mlx5dv_get_vfio_device_list = stubs::mlx5dv_get_vfio_device_list,
        mlx5dv_map_ah_to_qp = stubs::mlx5dv_map_ah_to_qp,
        mlx5dv_modify_qp_lag_port = stubs::mlx5dv_modify_qp_lag_port,
        mlx5dv_modify_qp_sched_elem = stubs::mlx5dv_modify_qp_sched_elem,
        mlx5dv_modify_qp_udp_sport = stubs::mlx5dv_modify_qp_udp_sport,
        mlx5dv_pp_alloc = stubs::mlx5dv_pp_alloc,
        mlx5dv_pp_free = stubs::mlx5dv_pp_free,
        mlx5dv_qp_cancel_posted_send_wrs = stubs::mlx5dv_qp_cancel_posted_send_wrs,
        mlx5dv_query_qp_lag_port = stubs::mlx5dv_query_qp_lag_port,
        mlx5dv_reserved_qpn_alloc = stubs::mlx5dv_reserved_qpn_alloc,
        mlx5dv_reserved_qpn_dealloc = stubs::mlx5dv_reserved_qpn_dealloc,
        mlx5dv_sched_leaf_create = stubs::mlx5dv_sched_leaf_create,
        mlx5dv_sched_leaf_destroy = stubs::mlx5dv_sched_leaf_destroy,
        mlx5dv_sched_leaf_modify = stubs::mlx5dv_sched_leaf_modify,
        mlx5dv_sched_node_create = stubs::mlx5dv_sched_node_create,
        mlx5dv_sched_node_destroy = stubs::mlx5dv_sched_node_destroy,
        mlx5dv_sched_node_modify = stubs::mlx5dv_sched_node_modify,
        mlx5dv_set_context_attr = stubs::mlx5dv_set_context_attr,
        mlx5dv_vfio_get_events_fd = stubs::mlx5dv_vfio_get_events_fd,
        mlx5dv_vfio_process_events = stubs::mlx5dv_vfio_process_events,
    }
    versioned {
        mlx5dv_init_obj_v1_0 => mlx5dv_init_obj "@MLX5_1.0" = super::mlx5dv_init_obj,
        mlx5dv_init_obj_v1_2 => mlx5dv_init_obj "@@MLX5_1.2" = super::mlx5dv_init_obj,
    }
}
