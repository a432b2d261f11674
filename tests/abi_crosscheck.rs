//! Cross-checks every transcribed kernel ABI struct and constant against
//! the system's C headers (`/usr/include/rdma/*.h`, package
//! `linux-libc-dev`).
//!
//! The test writes a C program that prints `sizeof`, `_Alignof` and
//! `offsetof` for every struct and field in the table below plus the value
//! of every constant, compiles it with `cc` from `PATH`, runs it, and
//! compares each line with the value the Rust side computes
//! (`size_of::<T>()`, `align_of::<T>()`, `offset_of!(T, f)`). All
//! mismatches are listed. A missing compiler or missing headers is a
//! failure, not a skip.
//!
//! `table_covers_every_transcribed_struct` reads the ABI source files and
//! checks that every struct and every (non-padding) field in them appears
//! in the table, so coverage is complete by construction.
//!
//! Rust names that differ from the C member are mapped explicitly
//! (`field = "c_member"`); anonymous C structs inside unions are checked
//! through `__typeof__` of the member; where a flexible array member was
//! left out, its C offset is checked against the Rust struct's size.

use core::fmt::Write as _;
use core::mem::{align_of, offset_of, size_of};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use verbs::abi::ioctl::*;
use verbs::abi::ioctl_cmds;
use verbs::abi::ioctl_verbs::*;
use verbs::abi::ucma;
use verbs::abi::uverbs::*;
#[cfg(feature = "rxe")]
use verbs::providers::rxe::abi as rxe;
#[cfg(feature = "siw")]
use verbs::providers::siw::abi as siw;
#[cfg(feature = "mlx5")]
use verbs::providers::mlx5::{abi as mlx5, wqe as mlx5wqe};

/// One field: Rust name, C member designator, Rust offset.
struct Field {
    rust: &'static str,
    c: String,
    off: usize,
}

/// One struct: Rust name, C type expression, Rust size and alignment.
struct Entry {
    rust: &'static str,
    c_type: &'static str,
    size: usize,
    align: usize,
    fields: Vec<Field>,
}

/// The C member name: the Rust field name (minus `r#`) unless overridden.
fn c_member(rust: &'static str, over: &[&'static str]) -> String {
    over.first().map_or_else(
        || rust.trim_start_matches("r#").to_string(),
        |s| s.to_string(),
    )
}

/// `s!(RustType, "C type", [field, field = "c_member", ...])`
macro_rules! s {
    ($t:ty, $c:expr, [$($f:ident $(= $cf:literal)?),* $(,)?]) => {
        Entry {
            rust: stringify!($t),
            c_type: $c,
            size: size_of::<$t>(),
            align: align_of::<$t>(),
            fields: vec![$(Field {
                rust: stringify!($f),
                c: c_member(stringify!($f), &[$($cf)?]),
                off: offset_of!($t, $f),
            }),*],
        }
    };
}

/// C type of an anonymous member (`typeof(((struct S *)0)->member)`).
macro_rules! anon {
    ($s:literal, $m:literal) => {
        concat!("__typeof__(((", $s, " *)0)->", $m, ")")
    };
}

/// The table: every transcribed struct, its C type and its fields
/// (one line per struct, hence no rustfmt).
#[rustfmt::skip]
fn structs() -> Vec<Entry> {
    #[allow(unused_mut)]
    let mut v = vec![
        s!(IoctlAttr, "struct ib_uverbs_attr", [attr_id, len, flags, attr_data, data]),
        s!(IoctlHdr, "struct ib_uverbs_ioctl_hdr", [length, object_id, method_id, num_attrs, reserved1, driver_id, reserved2]),
        s!(CmdHdr, "struct ib_uverbs_cmd_hdr", [command, in_words, out_words]),
        s!(ExCmdHdr, "struct ib_uverbs_ex_cmd_hdr", [response, provider_in_words, provider_out_words, cmd_hdr_reserved]),
        s!(OdpPerTransportCaps, anon!("struct ib_uverbs_odp_caps", "per_transport_caps"), [rc_odp_caps, uc_odp_caps, ud_odp_caps]),
        s!(SendWrRdma, anon!("struct ib_uverbs_send_wr", "wr.rdma"), [remote_addr, rkey, reserved]),
        s!(SendWrAtomic, anon!("struct ib_uverbs_send_wr", "wr.atomic"), [remote_addr, compare_add, swap, rkey, reserved]),
        s!(SendWrUd, anon!("struct ib_uverbs_send_wr", "wr.ud"), [ah, remote_qpn, remote_qkey, reserved]),
        s!(FlowSpecHdr, "struct ib_uverbs_flow_spec_hdr", [r#type, size, reserved]),
        s!(FlowEthFilter, "struct ib_uverbs_flow_eth_filter", [dst_mac, src_mac, ether_type, vlan_tag]),
        s!(FlowIpv4Filter, "struct ib_uverbs_flow_ipv4_filter", [src_ip, dst_ip, proto, tos, ttl, flags]),
        s!(FlowTcpUdpFilter, "struct ib_uverbs_flow_tcp_udp_filter", [dst_port, src_port]),
        s!(FlowIpv6Filter, "struct ib_uverbs_flow_ipv6_filter", [src_ip, dst_ip, flow_label, next_hdr, traffic_class, hop_limit, reserved]),
        s!(FlowTunnelFilter, "struct ib_uverbs_flow_tunnel_filter", [tunnel_id]),
        s!(FlowSpecEspFilter, "struct ib_uverbs_flow_spec_esp_filter", [spi, seq]),
        s!(FlowGreFilter, "struct ib_uverbs_flow_gre_filter", [c_ks_res0_ver, protocol, key]),
        s!(FlowMplsFilter, "struct ib_uverbs_flow_mpls_filter", [label]),
        s!(FlowSpecEth, "struct ib_uverbs_flow_spec_eth", [hdr, val, mask]),
        s!(FlowSpecIpv4, "struct ib_uverbs_flow_spec_ipv4", [hdr, val, mask]),
        s!(FlowSpecTcpUdp, "struct ib_uverbs_flow_spec_tcp_udp", [hdr, val, mask]),
        s!(FlowSpecIpv6, "struct ib_uverbs_flow_spec_ipv6", [hdr, val, mask]),
        s!(FlowSpecActionTag, "struct ib_uverbs_flow_spec_action_tag", [hdr, tag_id, reserved1]),
        s!(FlowSpecActionDrop, "struct ib_uverbs_flow_spec_action_drop", [hdr]),
        s!(FlowSpecActionHandle, "struct ib_uverbs_flow_spec_action_handle", [hdr, handle, reserved1]),
        s!(FlowSpecActionCount, "struct ib_uverbs_flow_spec_action_count", [hdr, handle, reserved1]),
        s!(FlowSpecTunnel, "struct ib_uverbs_flow_spec_tunnel", [hdr, val, mask]),
        s!(FlowSpecEsp, "struct ib_uverbs_flow_spec_esp", [hdr, val, mask]),
        s!(FlowSpecGre, "struct ib_uverbs_flow_spec_gre", [hdr, val, mask]),
        s!(FlowSpecMpls, "struct ib_uverbs_flow_spec_mpls", [hdr, val, mask]),
        s!(FlowAttr, "struct ib_uverbs_flow_attr", [r#type, size, priority, num_of_specs, reserved, port, flags]),
        s!(CreateFlow, "struct ib_uverbs_create_flow", [comp_mask, qp_handle, flow_attr]),
        s!(CreateFlowResp, "struct ib_uverbs_create_flow_resp", [comp_mask, flow_handle]),
        s!(DestroyFlow, "struct ib_uverbs_destroy_flow", [comp_mask, flow_handle]),
        s!(FlowActionEspKeymatAesGcm, "struct ib_uverbs_flow_action_esp_keymat_aes_gcm", [iv, iv_algo, salt, icv_len, key_len, aes_key]),
        s!(FlowActionEspReplayBmp, "struct ib_uverbs_flow_action_esp_replay_bmp", [size]),
        s!(FlowActionEspEncap, "struct ib_uverbs_flow_action_esp_encap", [val_ptr, next_ptr, len, r#type]),
        s!(FlowActionEsp, "struct ib_uverbs_flow_action_esp", [spi, seq, tfc_pad, flags, hard_limit_pkts]),
        s!(QueryPortRespEx, "struct ib_uverbs_query_port_resp_ex", [legacy_resp, port_cap_flags2, reserved, active_speed_ex = "reserved[2]"]),
        s!(QpCap, "struct ib_uverbs_qp_cap", [max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data]),
        s!(GidEntry, "struct ib_uverbs_gid_entry", [gid, gid_index, port_num, gid_type, netdev_ifindex]),
        s!(CreateCq, "struct ib_uverbs_create_cq", [response, user_handle, cqe, comp_vector, comp_channel, reserved]),
        s!(ExCreateCq, "struct ib_uverbs_ex_create_cq", [user_handle, cqe, comp_vector, comp_channel, comp_mask, flags, reserved]),
        s!(CreateCqResp, "struct ib_uverbs_create_cq_resp", [cq_handle, cqe]),
        s!(ExCreateCqResp, "struct ib_uverbs_ex_create_cq_resp", [base, comp_mask, response_length]),
        s!(ResizeCq, "struct ib_uverbs_resize_cq", [response, cq_handle, cqe]),
        s!(ResizeCqResp, "struct ib_uverbs_resize_cq_resp", [cqe, reserved]),
        s!(PollCq, "struct ib_uverbs_poll_cq", [response, cq_handle, ne]),
        s!(Wc, "struct ib_uverbs_wc", [wr_id, status, opcode, vendor_err, byte_len, ex, qp_num, src_qp, wc_flags, pkey_index, slid, sl, dlid_path_bits, port_num, reserved]),
        s!(PollCqResp, "struct ib_uverbs_poll_cq_resp", [count, reserved]),
        s!(ReqNotifyCq, "struct ib_uverbs_req_notify_cq", [cq_handle, solicited_only]),
        s!(DestroyCq, "struct ib_uverbs_destroy_cq", [response, cq_handle, reserved]),
        s!(DestroyCqResp, "struct ib_uverbs_destroy_cq_resp", [comp_events_reported, async_events_reported]),
        s!(CqModeration, "struct ib_uverbs_cq_moderation", [cq_count, cq_period]),
        s!(ExModifyCq, "struct ib_uverbs_ex_modify_cq", [cq_handle, attr_mask, attr, reserved]),
        s!(GetContext, "struct ib_uverbs_get_context", [response]),
        s!(GetContextResp, "struct ib_uverbs_get_context_resp", [async_fd, num_comp_vectors]),
        s!(QueryDevice, "struct ib_uverbs_query_device", [response]),
        s!(QueryDeviceResp, "struct ib_uverbs_query_device_resp", [fw_ver, node_guid, sys_image_guid, max_mr_size, page_size_cap, vendor_id, vendor_part_id, hw_ver, max_qp, max_qp_wr, device_cap_flags, max_sge, max_sge_rd, max_cq, max_cqe, max_mr, max_pd, max_qp_rd_atom, max_ee_rd_atom, max_res_rd_atom, max_qp_init_rd_atom, max_ee_init_rd_atom, atomic_cap, max_ee, max_rdd, max_mw, max_raw_ipv6_qp, max_raw_ethy_qp, max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach, max_ah, max_fmr, max_map_per_fmr, max_srq, max_srq_wr, max_srq_sge, max_pkeys, local_ca_ack_delay, phys_port_cnt, reserved]),
        s!(ExQueryDevice, "struct ib_uverbs_ex_query_device", [comp_mask, reserved]),
        s!(OdpCaps, "struct ib_uverbs_odp_caps", [general_caps, per_transport_caps, reserved]),
        s!(RssCaps, "struct ib_uverbs_rss_caps", [supported_qpts, max_rwq_indirection_tables, max_rwq_indirection_table_size, reserved]),
        s!(TmCaps, "struct ib_uverbs_tm_caps", [max_rndv_hdr_size, max_num_tags, flags, max_ops, max_sge, reserved]),
        s!(CqModerationCaps, "struct ib_uverbs_cq_moderation_caps", [max_cq_moderation_count, max_cq_moderation_period, reserved]),
        s!(ExQueryDeviceResp, "struct ib_uverbs_ex_query_device_resp", [base, comp_mask, response_length, odp_caps, timestamp_mask, hca_core_clock, device_cap_flags_ex, rss_caps, max_wq_type_rq, raw_packet_caps, tm_caps, cq_moderation_caps, max_dm_size, xrc_odp_caps, reserved]),
        s!(QueryPort, "struct ib_uverbs_query_port", [response, port_num, reserved]),
        s!(QueryPortResp, "struct ib_uverbs_query_port_resp", [port_cap_flags, max_msg_sz, bad_pkey_cntr, qkey_viol_cntr, gid_tbl_len, pkey_tbl_len, lid, sm_lid, state, max_mtu, active_mtu, lmc, max_vl_num, sm_sl, subnet_timeout, init_type_reply, active_width, active_speed, phys_state, link_layer, flags, reserved]),
        s!(CreateCompChannel, "struct ib_uverbs_create_comp_channel", [response]),
        s!(CreateCompChannelResp, "struct ib_uverbs_create_comp_channel_resp", [fd]),
        s!(AsyncEventDesc, "struct ib_uverbs_async_event_desc", [element, event_type, reserved]),
        s!(CompEventDesc, "struct ib_uverbs_comp_event_desc", [cq_handle]),
        s!(CreateAh, "struct ib_uverbs_create_ah", [response, user_handle, pd_handle, reserved, attr]),
        s!(CreateAhResp, "struct ib_uverbs_create_ah_resp", [ah_handle]),
        s!(DestroyAh, "struct ib_uverbs_destroy_ah", [ah_handle]),
        s!(AttachMcast, "struct ib_uverbs_attach_mcast", [gid, qp_handle, mlid, reserved]),
        s!(DetachMcast, "struct ib_uverbs_detach_mcast", [gid, qp_handle, mlid, reserved]),
        s!(ExCreateWq, "struct ib_uverbs_ex_create_wq", [comp_mask, wq_type, user_handle, pd_handle, cq_handle, max_wr, max_sge, create_flags, reserved]),
        s!(ExCreateWqResp, "struct ib_uverbs_ex_create_wq_resp", [comp_mask, response_length, wq_handle, max_wr, max_sge, wqn]),
        s!(ExDestroyWq, "struct ib_uverbs_ex_destroy_wq", [comp_mask, wq_handle]),
        s!(ExDestroyWqResp, "struct ib_uverbs_ex_destroy_wq_resp", [comp_mask, response_length, events_reported, reserved]),
        s!(ExModifyWq, "struct ib_uverbs_ex_modify_wq", [attr_mask, wq_handle, wq_state, curr_wq_state, flags, flags_mask]),
        s!(ExCreateRwqIndTable, "struct ib_uverbs_ex_create_rwq_ind_table", [comp_mask, log_ind_tbl_size]),
        s!(ExCreateRwqIndTableResp, "struct ib_uverbs_ex_create_rwq_ind_table_resp", [comp_mask, response_length, ind_tbl_handle, ind_tbl_num]),
        s!(ExDestroyRwqIndTable, "struct ib_uverbs_ex_destroy_rwq_ind_table", [comp_mask, ind_tbl_handle]),
        s!(AllocPd, "struct ib_uverbs_alloc_pd", [response]),
        s!(AllocPdResp, "struct ib_uverbs_alloc_pd_resp", [pd_handle]),
        s!(DeallocPd, "struct ib_uverbs_dealloc_pd", [pd_handle]),
        s!(OpenXrcd, "struct ib_uverbs_open_xrcd", [response, fd, oflags]),
        s!(OpenXrcdResp, "struct ib_uverbs_open_xrcd_resp", [xrcd_handle]),
        s!(CloseXrcd, "struct ib_uverbs_close_xrcd", [xrcd_handle]),
        s!(RegMr, "struct ib_uverbs_reg_mr", [response, start, length, hca_va, pd_handle, access_flags]),
        s!(RegMrResp, "struct ib_uverbs_reg_mr_resp", [mr_handle, lkey, rkey]),
        s!(ReregMr, "struct ib_uverbs_rereg_mr", [response, mr_handle, flags, start, length, hca_va, pd_handle, access_flags]),
        s!(ReregMrResp, "struct ib_uverbs_rereg_mr_resp", [lkey, rkey]),
        s!(DeregMr, "struct ib_uverbs_dereg_mr", [mr_handle]),
        s!(AllocMw, "struct ib_uverbs_alloc_mw", [response, pd_handle, mw_type, reserved]),
        s!(AllocMwResp, "struct ib_uverbs_alloc_mw_resp", [mw_handle, rkey]),
        s!(DeallocMw, "struct ib_uverbs_dealloc_mw", [mw_handle]),
        s!(GlobalRoute, "struct ib_uverbs_global_route", [dgid, flow_label, sgid_index, hop_limit, traffic_class, reserved]),
        s!(AhAttr, "struct ib_uverbs_ah_attr", [grh, dlid, sl, src_path_bits, static_rate, is_global, port_num, reserved]),
        s!(QpAttr, "struct ib_uverbs_qp_attr", [qp_attr_mask, qp_state, cur_qp_state, path_mtu, path_mig_state, qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags, ah_attr, alt_ah_attr, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, pkey_index, alt_pkey_index, en_sqd_async_notify, sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, reserved]),
        s!(CreateQp, "struct ib_uverbs_create_qp", [response, user_handle, pd_handle, send_cq_handle, recv_cq_handle, srq_handle, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, sq_sig_all, qp_type, is_srq, reserved]),
        s!(ExCreateQp, "struct ib_uverbs_ex_create_qp", [user_handle, pd_handle, send_cq_handle, recv_cq_handle, srq_handle, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, sq_sig_all, qp_type, is_srq, reserved, comp_mask, create_flags, rwq_ind_tbl_handle, source_qpn]),
        s!(OpenQp, "struct ib_uverbs_open_qp", [response, user_handle, pd_handle, qpn, qp_type, reserved]),
        s!(CreateQpResp, "struct ib_uverbs_create_qp_resp", [qp_handle, qpn, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, reserved]),
        s!(ExCreateQpResp, "struct ib_uverbs_ex_create_qp_resp", [base, comp_mask, response_length]),
        s!(QpDest, "struct ib_uverbs_qp_dest", [dgid, flow_label, dlid, reserved, sgid_index, hop_limit, traffic_class, sl, src_path_bits, static_rate, is_global, port_num]),
        s!(QueryQp, "struct ib_uverbs_query_qp", [response, qp_handle, attr_mask]),
        s!(QueryQpResp, "struct ib_uverbs_query_qp_resp", [dest, alt_dest, max_send_wr, max_recv_wr, max_send_sge, max_recv_sge, max_inline_data, qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags, pkey_index, alt_pkey_index, qp_state, cur_qp_state, path_mtu, path_mig_state, sq_draining, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, sq_sig_all, reserved]),
        s!(ModifyQp, "struct ib_uverbs_modify_qp", [dest, alt_dest, qp_handle, attr_mask, qkey, rq_psn, sq_psn, dest_qp_num, qp_access_flags, pkey_index, alt_pkey_index, qp_state, cur_qp_state, path_mtu, path_mig_state, en_sqd_async_notify, max_rd_atomic, max_dest_rd_atomic, min_rnr_timer, port_num, timeout, retry_cnt, rnr_retry, alt_port_num, alt_timeout, reserved]),
        s!(ExModifyQp, "struct ib_uverbs_ex_modify_qp", [base, rate_limit, reserved]),
        s!(ExModifyQpResp, "struct ib_uverbs_ex_modify_qp_resp", [comp_mask, response_length]),
        s!(DestroyQp, "struct ib_uverbs_destroy_qp", [response, qp_handle, reserved]),
        s!(DestroyQpResp, "struct ib_uverbs_destroy_qp_resp", [events_reported]),
        s!(CreateSrq, "struct ib_uverbs_create_srq", [response, user_handle, pd_handle, max_wr, max_sge, srq_limit]),
        s!(CreateXsrq, "struct ib_uverbs_create_xsrq", [response, user_handle, srq_type, pd_handle, max_wr, max_sge, srq_limit, max_num_tags, xrcd_handle, cq_handle]),
        s!(CreateSrqResp, "struct ib_uverbs_create_srq_resp", [srq_handle, max_wr, max_sge, srqn]),
        s!(ModifySrq, "struct ib_uverbs_modify_srq", [srq_handle, attr_mask, max_wr, srq_limit]),
        s!(QuerySrq, "struct ib_uverbs_query_srq", [response, srq_handle, reserved]),
        s!(QuerySrqResp, "struct ib_uverbs_query_srq_resp", [max_wr, max_sge, srq_limit, reserved]),
        s!(DestroySrq, "struct ib_uverbs_destroy_srq", [response, srq_handle, reserved]),
        s!(DestroySrqResp, "struct ib_uverbs_destroy_srq_resp", [events_reported]),
        s!(Sge, "struct ib_uverbs_sge", [addr, length, lkey]),
        s!(SendWr, "struct ib_uverbs_send_wr", [wr_id, num_sge, opcode, send_flags, ex, wr]),
        s!(PostSend, "struct ib_uverbs_post_send", [response, qp_handle, wr_count, sge_count, wqe_size]),
        s!(PostSendResp, "struct ib_uverbs_post_send_resp", [bad_wr]),
        s!(RecvWr, "struct ib_uverbs_recv_wr", [wr_id, num_sge, reserved]),
        s!(PostRecv, "struct ib_uverbs_post_recv", [response, qp_handle, wr_count, sge_count, wqe_size]),
        s!(PostRecvResp, "struct ib_uverbs_post_recv_resp", [bad_wr]),
        s!(PostSrqRecv, "struct ib_uverbs_post_srq_recv", [response, srq_handle, wr_count, sge_count, wqe_size]),
        s!(PostSrqRecvResp, "struct ib_uverbs_post_srq_recv_resp", [bad_wr]),
    ];
    #[cfg(feature = "rxe")]
    v.extend([
        s!(rxe::RxeGid, "union rxe_gid", [raw]),
        s!(rxe::RxeGlobalRoute, "struct rxe_global_route", [dgid, flow_label, sgid_index, hop_limit, traffic_class]),
        s!(rxe::RxeAv, "struct rxe_av", [port_num, network_type, dmac, grh, sgid_addr, dgid_addr]),
        s!(rxe::RxeSendWrRdma, anon!("struct rxe_send_wr", "wr.rdma"), [remote_addr, rkey, reserved]),
        s!(rxe::RxeSendWrAtomic, anon!("struct rxe_send_wr", "wr.atomic"), [remote_addr, compare_add, swap, rkey, reserved]),
        s!(rxe::RxeSendWrUd, anon!("struct rxe_send_wr", "wr.ud"), [remote_qpn, remote_qkey, pkey_index, reserved, ah_num, pad, av]),
        s!(rxe::RxeSendWrMw, anon!("struct rxe_send_wr", "wr.mw"), [addr, length, mr_lkey, mw_rkey, rkey, access]),
        s!(rxe::RxeSendWr, "struct rxe_send_wr", [wr_id, reserved, opcode, send_flags, ex, wr]),
        s!(rxe::RxeSge, "struct rxe_sge", [addr, length, lkey]),
        s!(rxe::Mminfo, "struct mminfo", [offset, size, pad]),
        s!(rxe::RxeDmaInfo, "struct rxe_dma_info", [length, resid, cur_sge, num_sge, sge_offset, reserved]),
        s!(rxe::RxeSendWqe, "struct rxe_send_wqe", [wr, status, state, iova, mask, first_psn, last_psn, ack_length, ssn, has_rd_atomic, dma]),
        s!(rxe::RxeRecvWqe, "struct rxe_recv_wqe", [wr_id, reserved, padding, dma]),
        s!(rxe::RxeCreateAhResp, "struct rxe_create_ah_resp", [ah_num, reserved]),
        s!(rxe::RxeCreateCqResp, "struct rxe_create_cq_resp", [mi]),
        s!(rxe::RxeResizeCqResp, "struct rxe_resize_cq_resp", [mi]),
        s!(rxe::RxeCreateQpResp, "struct rxe_create_qp_resp", [rq_mi, sq_mi]),
        s!(rxe::RxeCreateSrqResp, "struct rxe_create_srq_resp", [mi, srq_num, reserved]),
        s!(rxe::RxeModifySrqCmd, "struct rxe_modify_srq_cmd", [mmap_info_addr]),
        s!(rxe::RxeQueueBuf, "struct rxe_queue_buf", [log2_elem_size, index_mask, pad_1, producer_index, pad_2, consumer_index, pad_3]),
    ]);
    #[cfg(feature = "siw")]
    v.extend([
        s!(siw::SiwUrespCreateCq, "struct siw_uresp_create_cq", [cq_id, num_cqe, cq_key]),
        s!(siw::SiwUrespCreateQp, "struct siw_uresp_create_qp", [qp_id, num_sqe, num_rqe, pad, sq_key, rq_key]),
        s!(siw::SiwUreqRegMr, "struct siw_ureq_reg_mr", [stag_key, reserved, pad]),
        s!(siw::SiwUrespRegMr, "struct siw_uresp_reg_mr", [stag, pad]),
        s!(siw::SiwUrespCreateSrq, "struct siw_uresp_create_srq", [num_rqe, pad, srq_key]),
        s!(siw::SiwUrespAllocCtx, "struct siw_uresp_alloc_ctx", [dev_id, pad]),
        s!(siw::SiwSge, "struct siw_sge", [laddr, length, lkey]),
        s!(siw::SiwSqe, "struct siw_sqe", [id, flags, num_sge, opcode, rkey, raddr, sge]),
        s!(siw::SiwRqe, "struct siw_rqe", [id, flags, num_sge, opcode, unused, sge]),
        s!(siw::SiwCqe, "struct siw_cqe", [id, flags, opcode, status, bytes, imm_data, qp_id]),
        s!(siw::SiwCqCtrl, "struct siw_cq_ctrl", [flags, pad]),
    ]);
    #[cfg(feature = "mlx5")]
    v.extend([
        s!(mlx5::Mlx5AllocUcontextReqV2, "struct mlx5_ib_alloc_ucontext_req_v2", [total_num_bfregs, num_low_latency_bfregs, flags, comp_mask, max_cqe_version, reserved0, reserved1, reserved2, lib_caps]),
        s!(mlx5::Mlx5AllocUcontextResp, "struct mlx5_ib_alloc_ucontext_resp", [qp_tab_size, bf_reg_size, tot_bfregs, cache_line_size, max_sq_desc_sz, max_rq_desc_sz, max_send_wqebb, max_recv_wr, max_srq_recv_wr, num_ports, flow_action_flags, comp_mask, response_length, cqe_version, cmds_supp_uhw, eth_min_inline, clock_info_versions, hca_core_clock_offset, log_uar_size, num_uars_per_page, num_dyn_bfregs, dump_fill_mkey]),
        s!(mlx5::Mlx5AllocPdResp, "struct mlx5_ib_alloc_pd_resp", [pdn]),
        s!(mlx5::Mlx5CreateCq, "struct mlx5_ib_create_cq", [buf_addr, db_addr, cqe_size, cqe_comp_en, cqe_comp_res_format, flags, uar_page_index, reserved0, reserved1]),
        s!(mlx5::Mlx5CreateCqResp, "struct mlx5_ib_create_cq_resp", [cqn, reserved]),
        s!(mlx5::Mlx5ResizeCq, "struct mlx5_ib_resize_cq", [buf_addr, cqe_size, reserved0, reserved1]),
        s!(mlx5::Mlx5CreateSrq, "struct mlx5_ib_create_srq", [buf_addr, db_addr, flags, reserved0, uidx, reserved1]),
        s!(mlx5::Mlx5CreateSrqResp, "struct mlx5_ib_create_srq_resp", [srqn, reserved]),
        s!(mlx5::Mlx5CreateQp, "struct mlx5_ib_create_qp", [buf_addr, db_addr, sq_wqe_count, rq_wqe_count, rq_wqe_shift, flags, uidx, bfreg_index, sq_buf_addr, ece_options, dci_streams, reserved]),
        s!(mlx5::Mlx5CreateQpResp, "struct mlx5_ib_create_qp_resp", [bfreg_index, ece_options, comp_mask, tirn, tisn, rqn, sqn, reserved1, tir_icm_addr]),
        s!(mlx5::Mlx5CreateAhResp, "struct mlx5_ib_create_ah_resp", [response_length, dmac, reserved]),
        s!(mlx5::Mlx5BurstInfo, "struct mlx5_ib_burst_info", [max_burst_sz, typical_pkt_sz, reserved]),
        s!(mlx5::Mlx5ModifyQp, "struct mlx5_ib_modify_qp", [comp_mask, burst_info, ece_options]),
        s!(mlx5::Mlx5ModifyQpResp, "struct mlx5_ib_modify_qp_resp", [response_length, dctn, ece_options, reserved]),
        s!(mlx5wqe::CtrlSeg, "struct mlx5_wqe_ctrl_seg", [opmod_idx_opcode, qpn_ds, signature, dci_stream_channel_id, fm_ce_se, imm]),
        s!(mlx5wqe::RaddrSeg, "struct mlx5_wqe_raddr_seg", [raddr, rkey, reserved]),
        s!(mlx5wqe::AtomicSeg, "struct mlx5_wqe_atomic_seg", [swap_add, compare]),
        s!(mlx5wqe::DataSeg, "struct mlx5_wqe_data_seg", [byte_count, lkey, addr]),
        s!(mlx5wqe::Av, "struct mlx5_wqe_av", [qkey = "key.qkey.qkey", key_reserved = "key.qkey.reserved", dqp_dct, stat_rate_sl, fl_mlid, rlid, reserved0, rmac, tclass, hop_limit, grh_gid_fl, rgid]),
        s!(mlx5wqe::SrqNextSeg, "struct mlx5_wqe_srq_next_seg", [rsvd0, next_wqe_index, signature, rsvd1]),
        s!(mlx5wqe::Cqe64, "struct mlx5_cqe64", [rsvd0, wqe_id, rsvd4, ml_path, rsvd20, slid, flags_rqpn, hds_ip_ext, l4_hdr_type_etc, vlan_info, srqn_uidx, imm_inval_pkey, app, app_op, app_info, byte_cnt, timestamp, sop_drop_qpn, wqe_counter, signature, op_own]),
        s!(mlx5wqe::UmrCtrlSeg, "struct mlx5_wqe_umr_ctrl_seg", [flags, rsvd0, klm_octowords, translation_offset, mkey_mask, rsvd1]),
        s!(mlx5wqe::MkeyContextSeg, "struct mlx5_wqe_mkey_context_seg", [free, reserved1, access_flags, sf, qpn_mkey, reserved2, flags_pd, start_addr, len, bsf_octword_size, reserved3, translations_octword_size, reserved4, log_page_size, reserved]),
        s!(mlx5wqe::UmrKlmSeg, "struct mlx5_wqe_umr_klm_seg", [byte_count, mkey, address]),
        s!(mlx5wqe::ErrCqe, "struct mlx5_err_cqe", [rsvd0, srqn, rsvd1, vendor_err_synd, syndrome, s_wqe_opcode_qpn, wqe_counter, signature, op_own]),
    ]);
    v.extend([
        s!(ucma::UcmaHdr, "struct rdma_ucm_cmd_hdr", [cmd, r#in, out]),
        s!(ucma::CreateId, "struct rdma_ucm_create_id", [uid, response, ps, qp_type, reserved]),
        s!(ucma::CreateIdResp, "struct rdma_ucm_create_id_resp", [id]),
        s!(ucma::DestroyId, "struct rdma_ucm_destroy_id", [response, id, reserved]),
        s!(ucma::DestroyIdResp, "struct rdma_ucm_destroy_id_resp", [events_reported]),
        s!(ucma::Bind, "struct rdma_ucm_bind", [id, addr_size, reserved, addr]),
        s!(ucma::ResolveAddr, "struct rdma_ucm_resolve_addr", [id, timeout_ms, src_size, dst_size, reserved, src_addr, dst_addr]),
        s!(ucma::ResolveRoute, "struct rdma_ucm_resolve_route", [id, timeout_ms]),
        s!(ucma::Query, "struct rdma_ucm_query", [response, id, option]),
        s!(ucma::QueryAddrResp, "struct rdma_ucm_query_addr_resp", [node_guid, port_num, reserved, pkey, src_size, dst_size, src_addr, dst_addr, ibdev_index, reserved1]),
        s!(ucma::ConnParam, "struct rdma_ucm_conn_param", [qp_num, qkey, private_data, private_data_len, srq, responder_resources, initiator_depth, flow_control, retry_count, rnr_retry_count, valid]),
        s!(ucma::UdParam, "struct rdma_ucm_ud_param", [qp_num, qkey, ah_attr, private_data, private_data_len, reserved]),
        s!(ucma::Ece, "struct rdma_ucm_ece", [vendor_id, attr_mod]),
        s!(ucma::Connect, "struct rdma_ucm_connect", [conn_param, id, reserved, ece]),
        s!(ucma::Listen, "struct rdma_ucm_listen", [id, backlog]),
        s!(ucma::Accept, "struct rdma_ucm_accept", [uid, conn_param, id, reserved, ece]),
        s!(ucma::Reject, "struct rdma_ucm_reject", [id, private_data_len, reason, reserved, private_data]),
        s!(ucma::Disconnect, "struct rdma_ucm_disconnect", [id]),
        s!(ucma::InitQpAttr, "struct rdma_ucm_init_qp_attr", [response, id, qp_state]),
        s!(ucma::Notify, "struct rdma_ucm_notify", [id, event]),
        s!(ucma::JoinMcast, "struct rdma_ucm_join_mcast", [response, uid, id, addr_size, join_flags, addr]),
        s!(ucma::MigrateId, "struct rdma_ucm_migrate_id", [response, id, fd]),
        s!(ucma::MigrateResp, "struct rdma_ucm_migrate_resp", [events_reported]),
        s!(ucma::GetEvent, "struct rdma_ucm_get_event", [response]),
        s!(ucma::EventResp, "struct rdma_ucm_event_resp", [uid, id, event, status, param, reserved, ece]),
        s!(ucma::SetOption, "struct rdma_ucm_set_option", [optval, id, level, optname, optlen]),
    ]);
    v
}

/// Every constant checked: (C expression, Rust value).
fn consts() -> Vec<(String, u64)> {
    let mut v: Vec<(String, u64)> = Vec::new();
    let tables: &[&[(&str, u64)]] = &[
        CMD_IDS,
        EX_CMD_IDS,
        CQ_FLAGS_IDS,
        WC_OPCODE_IDS,
        WR_OPCODE_IDS,
        CREATE_QP_MASK_IDS,
        DEVICE_CAP_IDS,
        RAW_PACKET_CAP_IDS,
        CORE_SUPPORT_IDS,
        ACCESS_IDS,
        SRQT_IDS,
        WQ_IDS,
        QPT_IDS,
        QP_CREATE_IDS,
        PCF_IDS,
        QPF_IDS,
        FLOW_ACTION_IDS,
        MISC_IDS,
        GID_TYPE_IDS,
        ucma::UCMA_CMD_IDS,
        ucma::UCMA_MISC_IDS,
    ];
    for t in tables.iter().chain(ioctl_cmds::ALL_IDS) {
        v.extend(t.iter().map(|(n, x)| (n.to_string(), *x)));
    }
    for (id, name) in RdmaDriverId::ALL {
        // RDMA_DRIVER_MANA (Linux 6.2) is newer than Debian 12's 6.1 headers;
        // it is the enumerator after ERDMA.
        let c = if *name == "RDMA_DRIVER_MANA" {
            "(RDMA_DRIVER_ERDMA + 1)"
        } else {
            name
        };
        v.push((c.to_string(), u64::from(id.0)));
    }
    v.push(("RDMA_DRIVER_IRDMA".into(), u64::from(RdmaDriverId::IRDMA.0)));
    let single: &[(&str, u64)] = &[
        ("RDMA_IOCTL_MAGIC", u64::from(RDMA_IOCTL_MAGIC)),
        ("RDMA_VERBS_IOCTL", u64::from(RDMA_VERBS_IOCTL)),
        (
            "UVERBS_ATTR_F_MANDATORY",
            u64::from(UVERBS_ATTR_F_MANDATORY),
        ),
        (
            "UVERBS_ATTR_F_VALID_OUTPUT",
            u64::from(UVERBS_ATTR_F_VALID_OUTPUT),
        ),
        ("UVERBS_ID_NS_MASK", u64::from(UVERBS_ID_NS_MASK)),
        ("UVERBS_ID_NS_SHIFT", u64::from(UVERBS_ID_NS_SHIFT)),
        (
            "UVERBS_UDATA_DRIVER_DATA_NS",
            u64::from(UVERBS_UDATA_DRIVER_DATA_NS),
        ),
        (
            "UVERBS_UDATA_DRIVER_DATA_FLAG",
            u64::from(UVERBS_UDATA_DRIVER_DATA_FLAG),
        ),
        (
            "IB_USER_VERBS_ABI_VERSION",
            u64::from(IB_USER_VERBS_ABI_VERSION),
        ),
        (
            "IB_USER_VERBS_CMD_THRESHOLD",
            u64::from(IB_USER_VERBS_CMD_THRESHOLD),
        ),
        (
            "IB_USER_VERBS_CMD_COMMAND_MASK",
            u64::from(IB_USER_VERBS_CMD_COMMAND_MASK),
        ),
        (
            "IB_USER_VERBS_CMD_FLAG_EXTENDED",
            u64::from(IB_USER_VERBS_CMD_FLAG_EXTENDED),
        ),
        (
            "IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE",
            u64::from(IB_USER_VERBS_MAX_LOG_IND_TBL_SIZE),
        ),
        ("IB_DEVICE_NAME_MAX", IB_DEVICE_NAME_MAX as u64),
        (
            "IB_UVERBS_ACCESS_OPTIONAL_FIRST",
            u64::from(ACCESS_OPTIONAL_FIRST),
        ),
        (
            "IB_UVERBS_ACCESS_OPTIONAL_LAST",
            u64::from(ACCESS_OPTIONAL_LAST),
        ),
    ];
    v.extend(single.iter().map(|(n, x)| (n.to_string(), *x)));
    // Omitted flexible array members start where the Rust struct ends;
    // other union members alias the field the Rust struct names.
    let layout: &[(&str, usize)] = &[
        (
            "offsetof(struct ib_uverbs_ioctl_hdr, attrs)",
            size_of::<IoctlHdr>(),
        ),
        (
            "offsetof(struct ib_uverbs_get_context_resp, driver_data)",
            size_of::<GetContextResp>(),
        ),
        (
            "offsetof(struct ib_uverbs_create_cq_resp, driver_data)",
            size_of::<CreateCqResp>(),
        ),
        (
            "offsetof(struct ib_uverbs_create_qp_resp, driver_data)",
            size_of::<CreateQpResp>(),
        ),
        (
            "offsetof(struct ib_uverbs_modify_qp, driver_data)",
            size_of::<ModifyQp>(),
        ),
        (
            "offsetof(struct ib_uverbs_query_qp_resp, driver_data)",
            size_of::<QueryQpResp>(),
        ),
        (
            "offsetof(struct ib_uverbs_poll_cq_resp, wc)",
            size_of::<PollCqResp>(),
        ),
        (
            "offsetof(struct ib_uverbs_post_send, send_wr)",
            size_of::<PostSend>(),
        ),
        (
            "offsetof(struct ib_uverbs_post_recv, recv_wr)",
            size_of::<PostRecv>(),
        ),
        (
            "offsetof(struct ib_uverbs_post_srq_recv, recv)",
            size_of::<PostSrqRecv>(),
        ),
        (
            "offsetof(struct ib_uverbs_ex_create_rwq_ind_table, wq_handles)",
            size_of::<ExCreateRwqIndTable>(),
        ),
        (
            "offsetof(struct ib_uverbs_flow_attr, flow_specs)",
            size_of::<FlowAttr>(),
        ),
        (
            "offsetof(struct ib_uverbs_flow_spec_eth, size)",
            offset_of!(FlowSpecEth, hdr) + offset_of!(FlowSpecHdr, size),
        ),
        (
            "offsetof(struct ib_uverbs_attr, attr_data.enum_data.elem_id)",
            offset_of!(IoctlAttr, attr_data),
        ),
        (
            "offsetof(struct ib_uverbs_attr, data_s64)",
            offset_of!(IoctlAttr, data),
        ),
        (
            "offsetof(struct ib_uverbs_wc, ex.invalidate_rkey)",
            offset_of!(Wc, ex),
        ),
        (
            "offsetof(struct ib_uverbs_send_wr, ex.imm_data)",
            offset_of!(SendWr, ex),
        ),
        (
            "sizeof(((struct ib_uverbs_send_wr *)0)->wr)",
            size_of::<[u8; 32]>(),
        ),
    ];
    v.extend(layout.iter().map(|(n, x)| (n.to_string(), *x as u64)));
    #[cfg(feature = "rxe")]
    {
        v.extend(
            rxe::NETWORK_TYPE_IDS
                .iter()
                .map(|(n, x)| (n.to_string(), *x)),
        );
        let layout: &[(&str, usize)] = &[
            (
                "offsetof(struct rxe_dma_info, sge)",
                size_of::<rxe::RxeDmaInfo>(),
            ),
            (
                "offsetof(struct rxe_dma_info, inline_data)",
                size_of::<rxe::RxeDmaInfo>(),
            ),
            (
                "offsetof(struct rxe_queue_buf, data)",
                rxe::RXE_QUEUE_BUF_DATA_OFFSET,
            ),
            (
                "offsetof(struct rxe_queue_buf, producer_index)",
                rxe::RXE_QUEUE_BUF_PRODUCER_OFFSET,
            ),
            (
                "offsetof(struct rxe_queue_buf, consumer_index)",
                rxe::RXE_QUEUE_BUF_CONSUMER_OFFSET,
            ),
            (
                "offsetof(struct rxe_queue_buf, index_mask)",
                rxe::RXE_QUEUE_BUF_INDEX_MASK_OFFSET,
            ),
            (
                "offsetof(struct rxe_queue_buf, log2_elem_size)",
                rxe::RXE_QUEUE_BUF_LOG2_ELEM_SIZE_OFFSET,
            ),
            (
                "sizeof(((struct rxe_send_wr *)0)->wr)",
                size_of::<[u8; 120]>(),
            ),
            ("sizeof(((struct rxe_av *)0)->sgid_addr)", 28),
        ];
        v.extend(layout.iter().map(|(n, x)| (n.to_string(), *x as u64)));
    }
    #[cfg(feature = "siw")]
    {
        for t in [
            siw::LIMIT_IDS,
            siw::OPCODE_IDS,
            siw::WQE_FLAG_IDS,
            siw::NOTIFY_IDS,
            siw::WC_STATUS_IDS,
        ] {
            v.extend(t.iter().map(|(n, x)| (n.to_string(), *x)));
        }
        let layout: &[(&str, usize)] = &[
            (
                "offsetof(struct siw_sqe, base_mr)",
                offset_of!(siw::SiwSqe, raddr),
            ),
            (
                "offsetof(struct siw_sqe, access)",
                offset_of!(siw::SiwSqe, sge),
            ),
            (
                "offsetof(struct siw_cqe, inval_stag)",
                offset_of!(siw::SiwCqe, imm_data),
            ),
            (
                "offsetof(struct siw_cqe, base_qp)",
                offset_of!(siw::SiwCqe, qp_id),
            ),
            (
                "sizeof(SIW_NODE_DESC_COMMON) - 1",
                siw::SIW_NODE_DESC_COMMON.len(),
            ),
        ];
        v.extend(layout.iter().map(|(n, x)| (n.to_string(), *x as u64)));
    }
    #[cfg(feature = "mlx5")]
    {
        for t in [
            mlx5::LIB_CAP_IDS,
            mlx5::UCTX_FLAG_IDS,
            mlx5::SUPP_UHW_IDS,
            mlx5::QP_FLAG_IDS,
            mlx5::CQ_FLAG_IDS,
            mlx5::MMAP_CMD_IDS,
            mlx5::SRQ_FLAG_IDS,
            mlx5wqe::OPCODE_IDS,
            mlx5wqe::FM_CE_SE_IDS,
            mlx5wqe::WQE_CONST_IDS,
            mlx5wqe::CQE_OPCODE_IDS,
            mlx5wqe::SYNDROME_IDS,
            mlx5wqe::CQ_DB_IDS,
            mlx5wqe::UMR_CTRL_FLAG_IDS,
            mlx5wqe::MKEY_MASK_IDS,
            mlx5wqe::MKEY_CONTEXT_IDS,
        ] {
            v.extend(t.iter().map(|(n, x)| (n.to_string(), *x)));
        }
        let layout: &[(&str, usize)] = &[
            ("MLX5_IB_UVERBS_ABI_VERSION", mlx5::MLX5_IB_UVERBS_ABI_VERSION as usize),
            ("sizeof(struct mlx5_wqe_inl_data_seg)", mlx5wqe::INLINE_HDR),
            ("sizeof(struct mlx5_wqe_umr_ctrl_seg)", mlx5wqe::UMR_CTRL_SEG),
            ("sizeof(struct mlx5_wqe_mkey_context_seg)", mlx5wqe::MKEY_CONTEXT_SEG),
            ("sizeof(struct mlx5_wqe_datagram_seg)", size_of::<mlx5wqe::Av>()),
        ];
        v.extend(layout.iter().map(|(n, x)| (n.to_string(), *x as u64)));
    }
    v
}

/// The C program printing `key value` lines, and the Rust side's values
/// for the same keys.
fn program() -> (String, BTreeMap<String, u64>) {
    let mut c = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n\
         #include <rdma/rdma_user_ioctl_cmds.h>\n#include <rdma/ib_user_verbs.h>\n\
         #include <rdma/ib_user_ioctl_cmds.h>\n#include <rdma/ib_user_ioctl_verbs.h>\n\
         #include <rdma/rdma_user_rxe.h>\n#include <rdma/siw-abi.h>\n\
         #include <rdma/rdma_user_cm.h>\n\
         #define P(k, v) printf(\"%s %llu\\n\", k, (unsigned long long)(v))\n\
         int main(void) {\n",
    );
    if cfg!(feature = "mlx5") {
        // mlx5's driver data and its WQE/CQE layouts (libibverbs-dev's
        // `infiniband/mlx5dv.h`).
        c = c.replacen("int main(void)", "#include <rdma/mlx5-abi.h>\n#include <infiniband/mlx5dv.h>\nint main(void)", 1);
    }
    let mut rust = BTreeMap::new();
    let mut put = |c: &mut String, key: String, expr: String, val: u64| {
        writeln!(c, "  P(\"{key}\", {expr});").unwrap();
        assert!(
            rust.insert(key.clone(), val).is_none(),
            "duplicate table key {key}"
        );
    };
    for e in structs() {
        put(
            &mut c,
            format!("size:{}", e.rust),
            format!("sizeof({})", e.c_type),
            e.size as u64,
        );
        put(
            &mut c,
            format!("align:{}", e.rust),
            format!("_Alignof({})", e.c_type),
            e.align as u64,
        );
        for f in &e.fields {
            put(
                &mut c,
                format!("offset:{}.{}", e.rust, f.rust),
                format!("offsetof({}, {})", e.c_type, f.c),
                f.off as u64,
            );
        }
    }
    for (name, val) in consts() {
        put(&mut c, format!("const:{name}"), name.clone(), val);
    }
    c.push_str("  return 0;\n}\n");
    (c, rust)
}

#[test]
fn abi_matches_system_headers() {
    let hdr = Path::new("/usr/include/rdma/ib_user_verbs.h");
    assert!(
        hdr.exists(),
        "{} not found: install the kernel uAPI headers (Debian/Ubuntu: linux-libc-dev) to run the ABI cross-check",
        hdr.display()
    );
    let (src, rust) = program();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("abi_crosscheck_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c_path = dir.join("abi.c");
    let exe = dir.join("abi");
    std::fs::write(&c_path, &src).unwrap();
    let out = Command::new("cc")
        .args(["-std=gnu11", "-Wall", "-I/usr/include", "-o"])
        .arg(&exe)
        .arg(&c_path)
        .output()
        .unwrap_or_else(|e| panic!("cannot run `cc` from PATH ({e}): install a C compiler (e.g. gcc) to run the ABI cross-check"));
    assert!(
        out.status.success(),
        "cc failed on {}:\n{}",
        c_path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe)
        .output()
        .expect("run the compiled cross-check program");
    assert!(run.status.success(), "cross-check program failed");
    let stdout = String::from_utf8(run.stdout).unwrap();
    let mut c_vals = BTreeMap::new();
    for line in stdout.lines() {
        let (k, v) = line.rsplit_once(" ").expect("`key value` line");
        c_vals.insert(k.to_string(), v.parse::<u64>().expect("number"));
    }
    let mut bad = Vec::new();
    for (k, r) in &rust {
        match c_vals.get(k) {
            Some(c) if c == r => {}
            Some(c) => bad.push(format!("{k}: Rust {r}, C {c}")),
            None => bad.push(format!("{k}: missing from C output")),
        }
    }
    assert_eq!(
        c_vals.len(),
        rust.len(),
        "C printed a different number of lines"
    );
    assert!(
        bad.is_empty(),
        "{} ABI mismatch(es) against /usr/include/rdma:\n  {}",
        bad.len(),
        bad.join("\n  ")
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The ABI sources whose structs must all be in the table.
const SOURCES: &[(&str, &str)] = &[
    ("src/abi/ioctl.rs", include_str!("../src/abi/ioctl.rs")),
    (
        "src/abi/ioctl_verbs.rs",
        include_str!("../src/abi/ioctl_verbs.rs"),
    ),
    ("src/abi/uverbs.rs", include_str!("../src/abi/uverbs.rs")),
    (
        "src/abi/uverbs/addr.rs",
        include_str!("../src/abi/uverbs/addr.rs"),
    ),
    (
        "src/abi/uverbs/cq.rs",
        include_str!("../src/abi/uverbs/cq.rs"),
    ),
    (
        "src/abi/uverbs/device.rs",
        include_str!("../src/abi/uverbs/device.rs"),
    ),
    (
        "src/abi/uverbs/flow.rs",
        include_str!("../src/abi/uverbs/flow.rs"),
    ),
    (
        "src/abi/uverbs/misc.rs",
        include_str!("../src/abi/uverbs/misc.rs"),
    ),
    (
        "src/abi/uverbs/pd_mr.rs",
        include_str!("../src/abi/uverbs/pd_mr.rs"),
    ),
    (
        "src/abi/uverbs/qp.rs",
        include_str!("../src/abi/uverbs/qp.rs"),
    ),
    (
        "src/abi/uverbs/srq.rs",
        include_str!("../src/abi/uverbs/srq.rs"),
    ),
    (
        "src/abi/uverbs/wr.rs",
        include_str!("../src/abi/uverbs/wr.rs"),
    ),
    ("src/abi/ucma.rs", include_str!("../src/abi/ucma.rs")),
    #[cfg(feature = "rxe")]
    (
        "providers/rxe/abi.rs",
        include_str!("../providers/rxe/abi.rs"),
    ),
    #[cfg(feature = "siw")]
    (
        "providers/siw/abi.rs",
        include_str!("../providers/siw/abi.rs"),
    ),
    #[cfg(feature = "mlx5")]
    (
        "providers/mlx5/abi.rs",
        include_str!("../providers/mlx5/abi.rs"),
    ),
    #[cfg(feature = "mlx5")]
    (
        "providers/mlx5/wqe.rs",
        include_str!("../providers/mlx5/wqe.rs"),
    ),
    #[cfg(feature = "mlx5")]
    (
        "providers/mlx5/cqe_layout.rs",
        include_str!("../providers/mlx5/cqe_layout.rs"),
    ),
];

/// Newtypes that are not C structs.
const NOT_C_STRUCTS: &[&str] = &["RdmaDriverId"];

/// `(struct name, its named fields)` for every `pub struct Name { ... }` in `src`.
fn parse_structs(src: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = src;
    while let Some(i) = rest.find("pub struct ") {
        rest = &rest[i + "pub struct ".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after = rest[name.len()..].trim_start();
        if !after.starts_with('{') {
            out.push((name, Vec::new()));
            continue;
        }
        let body_end = after.find('}').expect("struct body ends");
        let fields = after[1..body_end]
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub "))
            .filter_map(|l| {
                l.split_once(':')
                    .map(|(n, _)| n.trim().trim_start_matches("r#").to_string())
            })
            .filter(|n| !n.starts_with('_'))
            .collect();
        out.push((name, fields));
    }
    out
}

#[test]
fn table_covers_every_transcribed_struct() {
    let table = structs();
    let by_name: BTreeMap<&str, &Entry> = table
        .iter()
        .map(|e| (e.rust.rsplit("::").next().unwrap().trim(), e))
        .collect();
    assert_eq!(by_name.len(), table.len(), "a struct is listed twice");
    let mut missing = Vec::new();
    let mut seen = 0;
    for (file, src) in SOURCES {
        for (name, fields) in parse_structs(src) {
            if NOT_C_STRUCTS.contains(&name.as_str()) {
                continue;
            }
            seen += 1;
            let Some(e) = by_name.get(name.as_str()) else {
                missing.push(format!("{file}: struct {name} not in table"));
                continue;
            };
            for f in fields {
                if !e
                    .fields
                    .iter()
                    .any(|x| x.rust.trim_start_matches("r#") == f)
                {
                    missing.push(format!("{file}: {name}.{f} not in table"));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "cross-check table incomplete:\n  {}",
        missing.join("\n  ")
    );
    assert_eq!(
        seen,
        table.len(),
        "table lists structs that are not in the ABI sources"
    );
}
