//! # Safety
//!
//! `ibv_query_device` and `verbs_context.query_device_ex` (behind the
//! `ibv_query_device_ex` inline of verbs.h), as rdma-core's
//! `ibv_cmd_query_device_any` and the rxe/siw providers fill them: the
//! kernel's extended reply mapped field by field (the TSO, packet-pacing
//! and PCI-atomic capabilities stay zero, as there), the firmware version
//! formatted by the provider, `phys_port_cnt_ex` from sysfs.
//!
//! The only unsafe operation is writing the result: a whole
//! `struct ibv_device_attr` (`ibv_query_device`), or the first
//! `min(attr_size, sizeof(struct ibv_device_attr_ex))` bytes of it
//! (`query_device_ex`), to a non-NULL pointer the caller promises is that
//! large.
#![allow(unsafe_code)]

use core::ffi::{c_int, c_uint};
use core::mem::size_of;

use crate::abi::device::{IbvContext, IbvDeviceAttr};
use crate::abi::device_ex::*;
use crate::context::{self, CContext};
use crate::errno::{copy_cstr, errno_of, fail_errno};

/// Copies the first `min(len, size_of::<T>())` bytes of `value` to `dst`.
///
/// # Safety
///
/// `dst` is non-NULL and points to at least `min(len, size_of::<T>())` writable bytes.
unsafe fn write_prefix<T: Copy>(dst: *mut T, value: &T, len: usize) {
    let n = len.min(size_of::<T>());
    // SAFETY: `value` has size_of::<T>() >= n bytes; `dst` has n writable
    // bytes by this function's contract; a local cannot overlap it.
    unsafe { core::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), dst.cast::<u8>(), n) };
}

fn device_attr_ex(c: &CContext) -> Result<IbvDeviceAttrEx, c_int> {
    let a = c.ctx.query_device().map_err(|e| errno_of(&e))?;
    let b = a.base();
    let x = &a.ex;
    let mut orig = IbvDeviceAttr {
        fw_ver: [0; 64],
        node_guid: b.node_guid,
        sys_image_guid: b.sys_image_guid,
        max_mr_size: b.max_mr_size,
        page_size_cap: b.page_size_cap,
        vendor_id: b.vendor_id,
        vendor_part_id: b.vendor_part_id,
        hw_ver: b.hw_ver,
        max_qp: b.max_qp as c_int,
        max_qp_wr: b.max_qp_wr as c_int,
        device_cap_flags: b.device_cap_flags as c_uint,
        max_sge: b.max_sge as c_int,
        max_sge_rd: b.max_sge_rd as c_int,
        max_cq: b.max_cq as c_int,
        max_cqe: b.max_cqe as c_int,
        max_mr: b.max_mr as c_int,
        max_pd: b.max_pd as c_int,
        max_qp_rd_atom: b.max_qp_rd_atom as c_int,
        max_ee_rd_atom: b.max_ee_rd_atom as c_int,
        max_res_rd_atom: b.max_res_rd_atom as c_int,
        max_qp_init_rd_atom: b.max_qp_init_rd_atom as c_int,
        max_ee_init_rd_atom: b.max_ee_init_rd_atom as c_int,
        atomic_cap: b.atomic_cap as c_int,
        max_ee: b.max_ee as c_int,
        max_rdd: b.max_rdd as c_int,
        max_mw: b.max_mw as c_int,
        max_raw_ipv6_qp: b.max_raw_ipv6_qp as c_int,
        max_raw_ethy_qp: b.max_raw_ethy_qp as c_int,
        max_mcast_grp: b.max_mcast_grp as c_int,
        max_mcast_qp_attach: b.max_mcast_qp_attach as c_int,
        max_total_mcast_qp_attach: b.max_total_mcast_qp_attach as c_int,
        max_ah: b.max_ah as c_int,
        max_fmr: b.max_fmr as c_int,
        max_map_per_fmr: b.max_map_per_fmr as c_int,
        max_srq: b.max_srq as c_int,
        max_srq_wr: b.max_srq_wr as c_int,
        max_srq_sge: b.max_srq_sge as c_int,
        max_pkeys: b.max_pkeys,
        local_ca_ack_delay: b.local_ca_ack_delay,
        phys_port_cnt: b.phys_port_cnt,
    };
    copy_cstr(&mut orig.fw_ver, &a.fw_ver);
    // Fields beyond the kernel's response_length are zero in `x` (the
    // reply buffer starts zeroed), which is what rdma-core leaves there too.
    Ok(IbvDeviceAttrEx {
        orig_attr: orig,
        comp_mask: 0,
        odp_caps: IbvOdpCaps {
            general_caps: x.odp_caps.general_caps,
            per_transport_caps: IbvOdpPerTransport {
                rc_odp_caps: x.odp_caps.per_transport_caps.rc_odp_caps,
                uc_odp_caps: x.odp_caps.per_transport_caps.uc_odp_caps,
                ud_odp_caps: x.odp_caps.per_transport_caps.ud_odp_caps,
            },
        },
        completion_timestamp_mask: x.timestamp_mask,
        hca_core_clock: x.hca_core_clock,
        device_cap_flags_ex: x.device_cap_flags_ex,
        tso_caps: IbvTsoCaps { max_tso: 0, supported_qpts: 0 },
        rss_caps: IbvRssCaps {
            supported_qpts: x.rss_caps.supported_qpts,
            max_rwq_indirection_tables: x.rss_caps.max_rwq_indirection_tables,
            max_rwq_indirection_table_size: x.rss_caps.max_rwq_indirection_table_size,
            rx_hash_fields_mask: 0,
            rx_hash_function: 0,
        },
        max_wq_type_rq: x.max_wq_type_rq,
        packet_pacing_caps: IbvPacketPacingCaps { qp_rate_limit_min: 0, qp_rate_limit_max: 0, supported_qpts: 0 },
        raw_packet_caps: x.raw_packet_caps,
        tm_caps: IbvTmCaps {
            max_rndv_hdr_size: x.tm_caps.max_rndv_hdr_size,
            max_num_tags: x.tm_caps.max_num_tags,
            flags: x.tm_caps.flags,
            max_ops: x.tm_caps.max_ops,
            max_sge: x.tm_caps.max_sge,
        },
        cq_mod_caps: IbvCqModerationCaps {
            max_cq_count: x.cq_moderation_caps.max_cq_moderation_count,
            max_cq_period: x.cq_moderation_caps.max_cq_moderation_period,
        },
        max_dm_size: x.max_dm_size,
        pci_atomic_caps: IbvPciAtomicCaps { fetch_add: 0, swap: 0, compare_swap: 0 },
        xrc_odp_caps: x.xrc_odp_caps,
        phys_port_cnt_ex: c.device.dev.num_ports().unwrap_or(u32::from(b.phys_port_cnt)),
    })
}

/// `ibv_query_device`: the classic attributes. 0 or the errno value.
///
/// # Safety
///
/// `attr` is NULL or points to a writable `struct ibv_device_attr`.
pub(crate) unsafe extern "C" fn ibv_query_device(context: *mut IbvContext, attr: *mut IbvDeviceAttr) -> c_int {
    let Some(c) = context::from_c(context) else { return fail_errno(libc::EINVAL) };
    if attr.is_null() {
        return fail_errno(libc::EINVAL);
    }
    match device_attr_ex(c) {
        Ok(a) => {
            // SAFETY: attr is non-NULL, a whole ibv_device_attr per the caller.
            unsafe { write_prefix(attr, &a.orig_attr, size_of::<IbvDeviceAttr>()) };
            0
        }
        Err(e) => fail_errno(e),
    }
}

/// `verbs_context.query_device_ex`: the first `attr_size` bytes of
/// `struct ibv_device_attr_ex`. 0 or the errno value (`EINVAL` for a
/// non-zero `input->comp_mask` or an `attr_size` below the classic struct).
///
/// # Safety
///
/// `input` is NULL or points to a readable `ibv_query_device_ex_input`;
/// `attr` is NULL or points to `attr_size` writable bytes.
pub(crate) unsafe extern "C" fn query_device_ex(
    context: *mut IbvContext,
    input: *const IbvQueryDeviceExInput,
    attr: *mut IbvDeviceAttrEx,
    attr_size: usize,
) -> c_int {
    let Some(c) = context::from_c(context) else { return fail_errno(libc::EINVAL) };
    // SAFETY: NULL or readable per the caller.
    let mask = unsafe { input.as_ref() }.map_or(0, |i| i.comp_mask);
    if attr.is_null() || mask != 0 || attr_size < size_of::<IbvDeviceAttr>() {
        return fail_errno(libc::EINVAL);
    }
    match device_attr_ex(c) {
        Ok(a) => {
            // SAFETY: attr is non-NULL with attr_size writable bytes per the caller.
            unsafe { write_prefix(attr, &a, attr_size) };
            0
        }
        Err(e) => fail_errno(e),
    }
}
