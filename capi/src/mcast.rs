//! # Safety
//!
//! `ibv_attach_mcast` / `ibv_detach_mcast` (IBVERBS_1.1): a UD QP joins or
//! leaves a multicast group, through [`verbs::AnyQp::attach_mcast`]. C
//! librdmacm calls them for `rdma_join_multicast` / `rdma_leave_multicast`.
//! The one unsafe operation is reading the caller's `union ibv_gid` (16
//! bytes, any alignment), which the caller promises is readable.
//!
//! As in rdma-core, the return value is 0 or the errno value (and `errno`
//! is set too). On siw every call gets `EOPNOTSUPP`, as libsiw answers.
//! A QP that is not UD gets `EINVAL`, as the kernel answers
//! rdma-core (which passes every QP to it); so does a GID that is not a
//! multicast GID, checked before the kernel, which refuses it the same way.
#![allow(unsafe_code)]

use core::ffi::c_int;

use crate::abi::objects::IbvQp;
use crate::errno::{errno_of, fail_errno};
use crate::qp::{self, Any};

fn mcast(qp: *mut IbvQp, gid: *const [u8; 16], lid: u16, attach: bool) -> c_int {
    let Some(c) = qp::from_c(qp) else { return fail_errno(libc::EINVAL) };
    if !c.provider().caps().multicast {
        // libsiw has no attach_mcast/detach_mcast: rdma-core answers
        // before the kernel, whatever the QP and its fields
        // (`tests/device/c/capi_fields.c`).
        return fail_errno(libc::EOPNOTSUPP);
    }
    if !c.named() {
        // A kernel command naming the QP by its C fields (`names.rs`).
        return fail_errno(crate::names::UNKNOWN);
    }
    if gid.is_null() {
        return fail_errno(libc::EINVAL);
    }
    // SAFETY: non-NULL; the caller promises a readable `union ibv_gid`,
    // 16 bytes of any alignment (read unaligned, copied out).
    let gid = unsafe { gid.read_unaligned() };
    let g = c.lock();
    let Some(Any::Ud(q)) = g.as_ref() else { return fail_errno(libc::EINVAL) };
    let r = if attach { q.attach_mcast(&gid, lid) } else { q.detach_mcast(&gid, lid) };
    match r {
        Ok(()) => 0,
        Err(e) => fail_errno(errno_of(&e)),
    }
}

/// `ibv_attach_mcast`: 0 or the errno value.
///
/// # Safety
///
/// `gid` is NULL or points to a readable `union ibv_gid`.
pub(crate) unsafe extern "C" fn ibv_attach_mcast(qp: *mut IbvQp, gid: *const [u8; 16], lid: u16) -> c_int {
    mcast(qp, gid, lid, true)
}

/// `ibv_detach_mcast`: 0 or the errno value.
///
/// # Safety
///
/// `gid` is NULL or points to a readable `union ibv_gid`.
pub(crate) unsafe extern "C" fn ibv_detach_mcast(qp: *mut IbvQp, gid: *const [u8; 16], lid: u16) -> c_int {
    mcast(qp, gid, lid, false)
}
