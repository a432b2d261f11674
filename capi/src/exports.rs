//! The exported names: every symbol rdma-core 44's `libibverbs.so.1`
//! exports, bound to its Rust function by module-level assembly.
//!
//! * `default`: `NAME` becomes a global alias of the Rust function; the
//!   linker gives it its version from `libibverbs.map` (`NAME@@VERSION`).
//! * `versioned`: the names rdma-core exports in two versions, an old one
//!   (`NAME@IBVERBS_1.0`) and the default (`NAME@@IBVERBS_1.1`), plus
//!   `ibv_register_driver@IBVERBS_1.1` which has only an old one. Each
//!   version is a global alias `ALIAS` bound by `.symver ALIAS, NAME@…`;
//!   `ALIAS` itself is not exported (the map's `local: *`). A plain `NAME`
//!   would not do here: the linker drops it once `NAME@VER` exists.
//!
//! `.set` needs the Rust function in the same object file as this
//! assembly, hence `codegen-units = 1` for this crate (root `Cargo.toml`).
//! `tests/symbols.rs` compares the resulting dynamic symbol table with
//! rdma-core's (`tests/fixtures/rdma-core-44.symbols`).
//!
//! # Safety
//!
//! `global_asm!` is the unsafe operation: the assembly only creates symbol
//! aliases (`.globl`, `.type`, `.set`, `.symver`, `.size`) of items named
//! by `sym` operands, emits no code or data, and each alias has the
//! address, type and size of its target. That a C caller's view of each
//! name matches its Rust function's signature is the contract of the
//! functions themselves (their `# Safety` sections and `stubs.rs`).
#![allow(unsafe_code)]

use crate::{ah, async_event, comp_channel, context, cq, device, marshall, mcast, misc, mr, pd, qp, qp_ex, query_device, srq, stubs};

/// Binds exported names to Rust items by module-level assembly; also used
/// by `crate::mlx5dv::exports` for libmlx5's names.
///
/// * `default { NAME = path, … }`: a global function alias `NAME`.
/// * `versioned { ALIAS => NAME "@VER" = path, … }`: a global function
///   alias `ALIAS` bound to `NAME@VER` (or `NAME@@VER`) by `.symver`.
/// * optional `objects { NAME = path, size N, … }`: a global data alias
///   of `N` bytes (libibverbs' `verbs_allow_disassociate_destroy`).
macro_rules! exports {
    (
        default { $($name:ident = $f:path,)* }
        versioned { $($alias:ident => $cname:ident $ver:literal = $cf:path,)* }
        $(objects { $($obj:ident = $of:path, size $size:literal,)* })?
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
            $($(concat!(
                ".globl ", stringify!($obj), "\n",
                ".type ", stringify!($obj), ", @object\n",
                ".size ", stringify!($obj), ", ", stringify!($size), "\n",
                ".set ", stringify!($obj), ", {", stringify!($obj), "}",
            ),)*)?
            $($name = sym $f,)*
            $($alias = sym $cf,)*
            $($($obj = sym $of,)*)?
        );
    };
}
#[cfg(feature = "mlx5")]
pub(crate) use exports;

exports! {
    default {
        // IBVERBS_1.0
        ibv_copy_path_rec_from_kern = marshall::ibv_copy_path_rec_from_kern,
        ibv_copy_path_rec_to_kern = marshall::ibv_copy_path_rec_to_kern,
        ibv_copy_qp_attr_from_kern = marshall::ibv_copy_qp_attr_from_kern,
        ibv_create_comp_channel = comp_channel::ibv_create_comp_channel,
        ibv_destroy_comp_channel = comp_channel::ibv_destroy_comp_channel,
        ibv_get_sysfs_path = misc::ibv_get_sysfs_path,
        ibv_rate_to_mult = misc::ibv_rate_to_mult,
        ibv_read_sysfs_file = misc::ibv_read_sysfs_file,
        mult_to_ibv_rate = misc::mult_to_ibv_rate,
        // IBVERBS_1.1
        ibv_copy_ah_attr_from_kern = marshall::ibv_copy_ah_attr_from_kern,
        ibv_create_ah_from_wc = ah::ibv_create_ah_from_wc,
        ibv_dofork_range = stubs::ibv_dofork_range,
        ibv_dontfork_range = stubs::ibv_dontfork_range,
        ibv_event_type_str = misc::ibv_event_type_str,
        ibv_fork_init = misc::ibv_fork_init,
        ibv_init_ah_from_wc = ah::ibv_init_ah_from_wc,
        ibv_node_type_str = misc::ibv_node_type_str,
        ibv_port_state_str = misc::ibv_port_state_str,
        ibv_rate_to_mbps = misc::ibv_rate_to_mbps,
        ibv_rereg_mr = mr::ibv_rereg_mr,
        ibv_resolve_eth_l2_from_gid = stubs::ibv_resolve_eth_l2_from_gid,
        ibv_wc_status_str = misc::ibv_wc_status_str,
        mbps_to_ibv_rate = misc::mbps_to_ibv_rate,
        // IBVERBS_1.5
        ibv_get_pkey_index = context::ibv_get_pkey_index,
        // IBVERBS_1.6
        ibv_qp_to_qp_ex = qp_ex::ibv_qp_to_qp_ex,
        // IBVERBS_1.7
        ibv_reg_mr_iova = mr::ibv_reg_mr_iova,
        // IBVERBS_1.8
        ibv_reg_mr_iova2 = mr::ibv_reg_mr_iova2,
        // IBVERBS_1.9
        ibv_get_device_index = device::ibv_get_device_index,
        // IBVERBS_1.10
        ibv_import_device = stubs::ibv_import_device,
        ibv_import_mr = stubs::ibv_import_mr,
        ibv_import_pd = stubs::ibv_import_pd,
        ibv_query_ece = stubs::ibv_query_ece,
        ibv_set_ece = stubs::ibv_set_ece,
        ibv_unimport_mr = stubs::ibv_unimport_mr,
        ibv_unimport_pd = stubs::ibv_unimport_pd,
        // IBVERBS_1.11
        _ibv_query_gid_ex = context::_ibv_query_gid_ex,
        _ibv_query_gid_table = context::_ibv_query_gid_table,
        // IBVERBS_1.12
        ibv_reg_dmabuf_mr = stubs::ibv_reg_dmabuf_mr,
        // IBVERBS_1.13
        ibv_import_dm = stubs::ibv_import_dm,
        ibv_is_fork_initialized = misc::ibv_is_fork_initialized,
        ibv_unimport_dm = stubs::ibv_unimport_dm,
        // IBVERBS_1.14
        ibv_query_qp_data_in_order = stubs::ibv_query_qp_data_in_order,
        // IBVERBS_PRIVATE_34
        __ioctl_final_num_attrs = stubs::__ioctl_final_num_attrs,
        __verbs_log = stubs::__verbs_log,
        _verbs_init_and_alloc_context = stubs::_verbs_init_and_alloc_context,
        execute_ioctl = stubs::execute_ioctl,
        ibv_cmd_advise_mr = stubs::ibv_cmd_advise_mr,
        ibv_cmd_alloc_dm = stubs::ibv_cmd_alloc_dm,
        ibv_cmd_alloc_mw = stubs::ibv_cmd_alloc_mw,
        ibv_cmd_alloc_pd = stubs::ibv_cmd_alloc_pd,
        ibv_cmd_attach_mcast = stubs::ibv_cmd_attach_mcast,
        ibv_cmd_close_xrcd = stubs::ibv_cmd_close_xrcd,
        ibv_cmd_create_ah = stubs::ibv_cmd_create_ah,
        ibv_cmd_create_counters = stubs::ibv_cmd_create_counters,
        ibv_cmd_create_cq = stubs::ibv_cmd_create_cq,
        ibv_cmd_create_cq_ex = stubs::ibv_cmd_create_cq_ex,
        ibv_cmd_create_flow = stubs::ibv_cmd_create_flow,
        ibv_cmd_create_flow_action_esp = stubs::ibv_cmd_create_flow_action_esp,
        ibv_cmd_create_qp = stubs::ibv_cmd_create_qp,
        ibv_cmd_create_qp_ex = stubs::ibv_cmd_create_qp_ex,
        ibv_cmd_create_qp_ex2 = stubs::ibv_cmd_create_qp_ex2,
        ibv_cmd_create_rwq_ind_table = stubs::ibv_cmd_create_rwq_ind_table,
        ibv_cmd_create_srq = stubs::ibv_cmd_create_srq,
        ibv_cmd_create_srq_ex = stubs::ibv_cmd_create_srq_ex,
        ibv_cmd_create_wq = stubs::ibv_cmd_create_wq,
        ibv_cmd_dealloc_mw = stubs::ibv_cmd_dealloc_mw,
        ibv_cmd_dealloc_pd = stubs::ibv_cmd_dealloc_pd,
        ibv_cmd_dereg_mr = stubs::ibv_cmd_dereg_mr,
        ibv_cmd_destroy_ah = stubs::ibv_cmd_destroy_ah,
        ibv_cmd_destroy_counters = stubs::ibv_cmd_destroy_counters,
        ibv_cmd_destroy_cq = stubs::ibv_cmd_destroy_cq,
        ibv_cmd_destroy_flow = stubs::ibv_cmd_destroy_flow,
        ibv_cmd_destroy_flow_action = stubs::ibv_cmd_destroy_flow_action,
        ibv_cmd_destroy_qp = stubs::ibv_cmd_destroy_qp,
        ibv_cmd_destroy_rwq_ind_table = stubs::ibv_cmd_destroy_rwq_ind_table,
        ibv_cmd_destroy_srq = stubs::ibv_cmd_destroy_srq,
        ibv_cmd_destroy_wq = stubs::ibv_cmd_destroy_wq,
        ibv_cmd_detach_mcast = stubs::ibv_cmd_detach_mcast,
        ibv_cmd_free_dm = stubs::ibv_cmd_free_dm,
        ibv_cmd_get_context = stubs::ibv_cmd_get_context,
        ibv_cmd_modify_cq = stubs::ibv_cmd_modify_cq,
        ibv_cmd_modify_flow_action_esp = stubs::ibv_cmd_modify_flow_action_esp,
        ibv_cmd_modify_qp = stubs::ibv_cmd_modify_qp,
        ibv_cmd_modify_qp_ex = stubs::ibv_cmd_modify_qp_ex,
        ibv_cmd_modify_srq = stubs::ibv_cmd_modify_srq,
        ibv_cmd_modify_wq = stubs::ibv_cmd_modify_wq,
        ibv_cmd_open_qp = stubs::ibv_cmd_open_qp,
        ibv_cmd_open_xrcd = stubs::ibv_cmd_open_xrcd,
        ibv_cmd_poll_cq = stubs::ibv_cmd_poll_cq,
        ibv_cmd_post_recv = stubs::ibv_cmd_post_recv,
        ibv_cmd_post_send = stubs::ibv_cmd_post_send,
        ibv_cmd_post_srq_recv = stubs::ibv_cmd_post_srq_recv,
        ibv_cmd_query_context = stubs::ibv_cmd_query_context,
        ibv_cmd_query_device_any = stubs::ibv_cmd_query_device_any,
        ibv_cmd_query_mr = stubs::ibv_cmd_query_mr,
        ibv_cmd_query_port = stubs::ibv_cmd_query_port,
        ibv_cmd_query_qp = stubs::ibv_cmd_query_qp,
        ibv_cmd_query_srq = stubs::ibv_cmd_query_srq,
        ibv_cmd_read_counters = stubs::ibv_cmd_read_counters,
        ibv_cmd_reg_dm_mr = stubs::ibv_cmd_reg_dm_mr,
        ibv_cmd_reg_dmabuf_mr = stubs::ibv_cmd_reg_dmabuf_mr,
        ibv_cmd_reg_mr = stubs::ibv_cmd_reg_mr,
        ibv_cmd_req_notify_cq = stubs::ibv_cmd_req_notify_cq,
        ibv_cmd_rereg_mr = stubs::ibv_cmd_rereg_mr,
        ibv_cmd_resize_cq = stubs::ibv_cmd_resize_cq,
        ibv_query_gid_type = context::ibv_query_gid_type,
        ibv_read_ibdev_sysfs_file = stubs::ibv_read_ibdev_sysfs_file,
        verbs_init_cq = stubs::verbs_init_cq,
        verbs_open_device = stubs::verbs_open_device,
        verbs_register_driver_34 = stubs::verbs_register_driver_34,
        verbs_set_ops = stubs::verbs_set_ops,
        verbs_uninit_context = stubs::verbs_uninit_context,
    }
    versioned {
        ibv_ack_async_event_v1_1 => ibv_ack_async_event "@@IBVERBS_1.1" = async_event::ibv_ack_async_event,
        ibv_ack_cq_events_v1_1 => ibv_ack_cq_events "@@IBVERBS_1.1" = cq::ibv_ack_cq_events,
        ibv_alloc_pd_v1_1 => ibv_alloc_pd "@@IBVERBS_1.1" = pd::ibv_alloc_pd,
        ibv_attach_mcast_v1_1 => ibv_attach_mcast "@@IBVERBS_1.1" = mcast::ibv_attach_mcast,
        ibv_close_device_v1_1 => ibv_close_device "@@IBVERBS_1.1" = context::ibv_close_device,
        ibv_create_ah_v1_1 => ibv_create_ah "@@IBVERBS_1.1" = ah::ibv_create_ah,
        ibv_create_cq_v1_1 => ibv_create_cq "@@IBVERBS_1.1" = cq::ibv_create_cq,
        ibv_create_qp_v1_1 => ibv_create_qp "@@IBVERBS_1.1" = qp::ibv_create_qp,
        ibv_create_srq_v1_1 => ibv_create_srq "@@IBVERBS_1.1" = srq::ibv_create_srq,
        ibv_dealloc_pd_v1_1 => ibv_dealloc_pd "@@IBVERBS_1.1" = pd::ibv_dealloc_pd,
        ibv_dereg_mr_v1_1 => ibv_dereg_mr "@@IBVERBS_1.1" = mr::ibv_dereg_mr,
        ibv_destroy_ah_v1_1 => ibv_destroy_ah "@@IBVERBS_1.1" = ah::ibv_destroy_ah,
        ibv_destroy_cq_v1_1 => ibv_destroy_cq "@@IBVERBS_1.1" = cq::ibv_destroy_cq,
        ibv_destroy_qp_v1_1 => ibv_destroy_qp "@@IBVERBS_1.1" = qp::ibv_destroy_qp,
        ibv_destroy_srq_v1_1 => ibv_destroy_srq "@@IBVERBS_1.1" = srq::ibv_destroy_srq,
        ibv_detach_mcast_v1_1 => ibv_detach_mcast "@@IBVERBS_1.1" = mcast::ibv_detach_mcast,
        ibv_free_device_list_v1_1 => ibv_free_device_list "@@IBVERBS_1.1" = device::ibv_free_device_list,
        ibv_get_async_event_v1_1 => ibv_get_async_event "@@IBVERBS_1.1" = async_event::ibv_get_async_event,
        ibv_get_cq_event_v1_1 => ibv_get_cq_event "@@IBVERBS_1.1" = cq::ibv_get_cq_event,
        ibv_get_device_guid_v1_1 => ibv_get_device_guid "@@IBVERBS_1.1" = device::ibv_get_device_guid,
        ibv_get_device_list_v1_1 => ibv_get_device_list "@@IBVERBS_1.1" = device::ibv_get_device_list,
        ibv_get_device_name_v1_1 => ibv_get_device_name "@@IBVERBS_1.1" = device::ibv_get_device_name,
        ibv_modify_qp_v1_1 => ibv_modify_qp "@@IBVERBS_1.1" = qp::ibv_modify_qp,
        ibv_modify_srq_v1_1 => ibv_modify_srq "@@IBVERBS_1.1" = srq::ibv_modify_srq,
        ibv_open_device_v1_1 => ibv_open_device "@@IBVERBS_1.1" = context::ibv_open_device,
        ibv_query_device_v1_1 => ibv_query_device "@@IBVERBS_1.1" = query_device::ibv_query_device,
        ibv_query_gid_v1_1 => ibv_query_gid "@@IBVERBS_1.1" = context::ibv_query_gid,
        ibv_query_pkey_v1_1 => ibv_query_pkey "@@IBVERBS_1.1" = context::ibv_query_pkey,
        ibv_query_port_v1_1 => ibv_query_port "@@IBVERBS_1.1" = context::ibv_query_port,
        ibv_query_qp_v1_1 => ibv_query_qp "@@IBVERBS_1.1" = qp::ibv_query_qp,
        ibv_query_srq_v1_1 => ibv_query_srq "@@IBVERBS_1.1" = srq::ibv_query_srq,
        ibv_reg_mr_v1_1 => ibv_reg_mr "@@IBVERBS_1.1" = mr::ibv_reg_mr,
        ibv_resize_cq_v1_1 => ibv_resize_cq "@@IBVERBS_1.1" = cq::ibv_resize_cq,
        ibv_ack_async_event_v1_0 => ibv_ack_async_event "@IBVERBS_1.0" = stubs::v1_0::ibv_ack_async_event,
        ibv_ack_cq_events_v1_0 => ibv_ack_cq_events "@IBVERBS_1.0" = stubs::v1_0::ibv_ack_cq_events,
        ibv_alloc_pd_v1_0 => ibv_alloc_pd "@IBVERBS_1.0" = stubs::v1_0::ibv_alloc_pd,
        ibv_attach_mcast_v1_0 => ibv_attach_mcast "@IBVERBS_1.0" = stubs::v1_0::ibv_attach_mcast,
        ibv_close_device_v1_0 => ibv_close_device "@IBVERBS_1.0" = stubs::v1_0::ibv_close_device,
        ibv_create_ah_v1_0 => ibv_create_ah "@IBVERBS_1.0" = stubs::v1_0::ibv_create_ah,
        ibv_create_cq_v1_0 => ibv_create_cq "@IBVERBS_1.0" = stubs::v1_0::ibv_create_cq,
        ibv_create_qp_v1_0 => ibv_create_qp "@IBVERBS_1.0" = stubs::v1_0::ibv_create_qp,
        ibv_create_srq_v1_0 => ibv_create_srq "@IBVERBS_1.0" = stubs::v1_0::ibv_create_srq,
        ibv_dealloc_pd_v1_0 => ibv_dealloc_pd "@IBVERBS_1.0" = stubs::v1_0::ibv_dealloc_pd,
        ibv_dereg_mr_v1_0 => ibv_dereg_mr "@IBVERBS_1.0" = stubs::v1_0::ibv_dereg_mr,
        ibv_destroy_ah_v1_0 => ibv_destroy_ah "@IBVERBS_1.0" = stubs::v1_0::ibv_destroy_ah,
        ibv_destroy_cq_v1_0 => ibv_destroy_cq "@IBVERBS_1.0" = stubs::v1_0::ibv_destroy_cq,
        ibv_destroy_qp_v1_0 => ibv_destroy_qp "@IBVERBS_1.0" = stubs::v1_0::ibv_destroy_qp,
        ibv_destroy_srq_v1_0 => ibv_destroy_srq "@IBVERBS_1.0" = stubs::v1_0::ibv_destroy_srq,
        ibv_detach_mcast_v1_0 => ibv_detach_mcast "@IBVERBS_1.0" = stubs::v1_0::ibv_detach_mcast,
        ibv_free_device_list_v1_0 => ibv_free_device_list "@IBVERBS_1.0" = stubs::v1_0::ibv_free_device_list,
        ibv_get_async_event_v1_0 => ibv_get_async_event "@IBVERBS_1.0" = stubs::v1_0::ibv_get_async_event,
        ibv_get_cq_event_v1_0 => ibv_get_cq_event "@IBVERBS_1.0" = stubs::v1_0::ibv_get_cq_event,
        ibv_get_device_guid_v1_0 => ibv_get_device_guid "@IBVERBS_1.0" = stubs::v1_0::ibv_get_device_guid,
        ibv_get_device_list_v1_0 => ibv_get_device_list "@IBVERBS_1.0" = stubs::v1_0::ibv_get_device_list,
        ibv_get_device_name_v1_0 => ibv_get_device_name "@IBVERBS_1.0" = stubs::v1_0::ibv_get_device_name,
        ibv_modify_qp_v1_0 => ibv_modify_qp "@IBVERBS_1.0" = stubs::v1_0::ibv_modify_qp,
        ibv_modify_srq_v1_0 => ibv_modify_srq "@IBVERBS_1.0" = stubs::v1_0::ibv_modify_srq,
        ibv_open_device_v1_0 => ibv_open_device "@IBVERBS_1.0" = stubs::v1_0::ibv_open_device,
        ibv_query_device_v1_0 => ibv_query_device "@IBVERBS_1.0" = stubs::v1_0::ibv_query_device,
        ibv_query_gid_v1_0 => ibv_query_gid "@IBVERBS_1.0" = stubs::v1_0::ibv_query_gid,
        ibv_query_pkey_v1_0 => ibv_query_pkey "@IBVERBS_1.0" = stubs::v1_0::ibv_query_pkey,
        ibv_query_port_v1_0 => ibv_query_port "@IBVERBS_1.0" = stubs::v1_0::ibv_query_port,
        ibv_query_qp_v1_0 => ibv_query_qp "@IBVERBS_1.0" = stubs::v1_0::ibv_query_qp,
        ibv_query_srq_v1_0 => ibv_query_srq "@IBVERBS_1.0" = stubs::v1_0::ibv_query_srq,
        ibv_reg_mr_v1_0 => ibv_reg_mr "@IBVERBS_1.0" = stubs::v1_0::ibv_reg_mr,
        ibv_resize_cq_v1_0 => ibv_resize_cq "@IBVERBS_1.0" = stubs::v1_0::ibv_resize_cq,
        ibv_register_driver_v1_1 => ibv_register_driver "@IBVERBS_1.1" = stubs::ibv_register_driver,
    }
    objects {
        verbs_allow_disassociate_destroy = stubs::VERBS_ALLOW_DISASSOCIATE_DESTROY, size 1,
    }
}
