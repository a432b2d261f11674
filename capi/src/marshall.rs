//! # Safety
//!
//! The structure converters librdmacm calls (`ibv_copy_ah_attr_from_kern`,
//! `ibv_copy_qp_attr_from_kern`, `ibv_copy_path_rec_from_kern`,
//! `ibv_copy_path_rec_to_kern`): field-by-field copies between the kernel's
//! and libibverbs' layouts, as rdma-core's `marshall.c`. Fields C leaves
//! alone stay untouched (`qp_state` of the QP attributes, and the
//! destination's padding), which is why the destination is updated in
//! place through `&mut` rather than overwritten.
//!
//! The unsafe operations turn the C pointers into `&`/`&mut`: C passes a
//! source and a distinct destination, each valid for its struct; NULL is
//! refused (nothing is copied).
#![allow(unsafe_code)]

use crate::abi::device::IbvGid;
use crate::abi::kern::{IbUserPathRec, IbUverbsAhAttr, IbUverbsQpAttr, IbvSaPathRec};
use crate::abi::objects::{IbvAhAttr, IbvQpAttr};

fn ah_from_kern(d: &mut IbvAhAttr, s: &IbUverbsAhAttr) {
    d.grh.dgid = IbvGid { raw: s.grh.dgid };
    d.grh.flow_label = s.grh.flow_label;
    d.grh.sgid_index = s.grh.sgid_index;
    d.grh.hop_limit = s.grh.hop_limit;
    d.grh.traffic_class = s.grh.traffic_class;
    d.dlid = s.dlid;
    d.sl = s.sl;
    d.src_path_bits = s.src_path_bits;
    d.static_rate = s.static_rate;
    d.is_global = s.is_global;
    d.port_num = s.port_num;
}

/// `ibv_copy_ah_attr_from_kern`
///
/// # Safety
///
/// `dst`/`src` are NULL or valid, distinct `ibv_ah_attr` / `ib_uverbs_ah_attr`.
pub(crate) unsafe extern "C" fn ibv_copy_ah_attr_from_kern(dst: *mut IbvAhAttr, src: *const IbUverbsAhAttr) {
    // SAFETY: NULL or valid and distinct, per the caller.
    if let (Some(d), Some(s)) = (unsafe { dst.as_mut() }, unsafe { src.as_ref() }) {
        ah_from_kern(d, s);
    }
}

/// `ibv_copy_qp_attr_from_kern` (`qp_state` is not copied, as in rdma-core).
///
/// # Safety
///
/// `dst`/`src` are NULL or valid, distinct `ibv_qp_attr` / `ib_uverbs_qp_attr`.
pub(crate) unsafe extern "C" fn ibv_copy_qp_attr_from_kern(dst: *mut IbvQpAttr, src: *const IbUverbsQpAttr) {
    // SAFETY: NULL or valid and distinct, per the caller.
    let (Some(d), Some(s)) = (unsafe { dst.as_mut() }, unsafe { src.as_ref() }) else { return };
    d.cur_qp_state = s.cur_qp_state as i32;
    d.path_mtu = s.path_mtu as i32;
    d.path_mig_state = s.path_mig_state as i32;
    d.qkey = s.qkey;
    d.rq_psn = s.rq_psn;
    d.sq_psn = s.sq_psn;
    d.dest_qp_num = s.dest_qp_num;
    d.qp_access_flags = s.qp_access_flags;
    d.cap.max_send_wr = s.max_send_wr;
    d.cap.max_recv_wr = s.max_recv_wr;
    d.cap.max_send_sge = s.max_send_sge;
    d.cap.max_recv_sge = s.max_recv_sge;
    d.cap.max_inline_data = s.max_inline_data;
    ah_from_kern(&mut d.ah_attr, &s.ah_attr);
    ah_from_kern(&mut d.alt_ah_attr, &s.alt_ah_attr);
    d.pkey_index = s.pkey_index;
    d.alt_pkey_index = s.alt_pkey_index;
    d.en_sqd_async_notify = s.en_sqd_async_notify;
    d.sq_draining = s.sq_draining;
    d.max_rd_atomic = s.max_rd_atomic;
    d.max_dest_rd_atomic = s.max_dest_rd_atomic;
    d.min_rnr_timer = s.min_rnr_timer;
    d.port_num = s.port_num;
    d.timeout = s.timeout;
    d.retry_cnt = s.retry_cnt;
    d.rnr_retry = s.rnr_retry;
    d.alt_port_num = s.alt_port_num;
    d.alt_timeout = s.alt_timeout;
}

/// `ibv_copy_path_rec_from_kern`
///
/// # Safety
///
/// `dst`/`src` are NULL or valid, distinct `ibv_sa_path_rec` / `ib_user_path_rec`.
pub(crate) unsafe extern "C" fn ibv_copy_path_rec_from_kern(dst: *mut IbvSaPathRec, src: *const IbUserPathRec) {
    // SAFETY: NULL or valid and distinct, per the caller.
    let (Some(d), Some(s)) = (unsafe { dst.as_mut() }, unsafe { src.as_ref() }) else { return };
    d.dgid = IbvGid { raw: s.dgid };
    d.sgid = IbvGid { raw: s.sgid };
    d.dlid = s.dlid;
    d.slid = s.slid;
    d.raw_traffic = s.raw_traffic as i32;
    d.flow_label = s.flow_label;
    d.hop_limit = s.hop_limit;
    d.traffic_class = s.traffic_class;
    d.reversible = s.reversible as i32;
    d.numb_path = s.numb_path;
    d.pkey = s.pkey;
    d.sl = s.sl;
    d.mtu_selector = s.mtu_selector;
    d.mtu = s.mtu as u8;
    d.rate_selector = s.rate_selector;
    d.rate = s.rate;
    d.packet_life_time = s.packet_life_time;
    d.preference = s.preference;
    d.packet_life_time_selector = s.packet_life_time_selector;
}

/// `ibv_copy_path_rec_to_kern`
///
/// # Safety
///
/// `dst`/`src` are NULL or valid, distinct `ib_user_path_rec` / `ibv_sa_path_rec`.
pub(crate) unsafe extern "C" fn ibv_copy_path_rec_to_kern(dst: *mut IbUserPathRec, src: *const IbvSaPathRec) {
    // SAFETY: NULL or valid and distinct, per the caller.
    let (Some(d), Some(s)) = (unsafe { dst.as_mut() }, unsafe { src.as_ref() }) else { return };
    d.dgid = s.dgid.raw;
    d.sgid = s.sgid.raw;
    d.dlid = s.dlid;
    d.slid = s.slid;
    d.raw_traffic = s.raw_traffic as u32;
    d.flow_label = s.flow_label;
    d.hop_limit = s.hop_limit;
    d.traffic_class = s.traffic_class;
    d.reversible = s.reversible as u32;
    d.numb_path = s.numb_path;
    d.pkey = s.pkey;
    d.sl = s.sl;
    d.mtu_selector = s.mtu_selector;
    d.mtu = u32::from(s.mtu);
    d.rate_selector = s.rate_selector;
    d.rate = s.rate;
    d.packet_life_time = s.packet_life_time;
    d.preference = s.preference;
    d.packet_life_time_selector = s.packet_life_time_selector;
}
