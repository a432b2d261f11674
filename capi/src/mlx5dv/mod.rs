//! # Safety
//!
//! mlx5 direct verbs (`<infiniband/mlx5dv.h>`, libmlx5's `mlx5dv_*`) on
//! our mlx5 provider: with feature mlx5 this library is `libmlx5.so.1` as
//! well (its names and version nodes, `mlx5dv.map`; a `libmlx5.so.1`
//! symlink to this file is the same loaded object, glibc maps a file
//! once), so programs and pyverbs' mlx5 modules linked against libmlx5
//! reach these functions for the contexts our library opened.
//!
//! Implemented: `mlx5dv_is_supported`, `mlx5dv_open_device`,
//! `mlx5dv_query_device` (the flags it can vouch for, no optional
//! capability), `mlx5dv_create_cq` (CQE size 64 or 128, `MLX5_CQE_SIZE`),
//! and `mlx5dv_create_qp` / `mlx5dv_qp_ex_from_ibv_qp_ex` with
//! `mlx5dv_wr_raw_wqe` ([`qp`]). Everything else fails with `EOPNOTSUPP`
//! ([`stubs`]), as libmlx5 reports a feature the device lacks.
//!
//! The unsafe operations are reads of the caller's attribute structs and
//! the write of `mlx5dv_query_device`'s answer, each through a pointer the
//! caller promises valid (checked for NULL first); the struct layouts are
//! rdma-core 44's (sizes and offsets asserted in the tests below).
#![allow(unsafe_code)]

use core::ffi::c_int;

use verbs::{CqOptions, ProviderKind};

use crate::abi::device::{IbvContext, IbvDevice};
use crate::abi::objects::{IbvCqEx, IbvCqInitAttrEx};
use crate::errno::{fail_errno, fail_null};
use crate::{context, device};

#[cfg(not(test))]
mod exports;
mod qp;
mod stubs;

pub(crate) use qp::DvQpEx;

/// `struct mlx5dv_context_attr` (`mlx5dv_open_device`).
#[repr(C)]
pub(crate) struct Mlx5dvContextAttr {
    /// `MLX5DV_CONTEXT_FLAGS_DEVX` (1).
    flags: u32,
    comp_mask: u64,
}

/// The head of `struct mlx5dv_context` (`mlx5dv_query_device`): what is
/// written whatever `comp_mask` asks; the fields after it are written only
/// for the `comp_mask` bits answered, and none is.
#[repr(C)]
pub(crate) struct Mlx5dvContextHead {
    version: u8,
    /// `MLX5DV_CONTEXT_FLAGS_*`.
    flags: u64,
    /// In: the optional fields wanted; out: those answered.
    comp_mask: u64,
}

/// `struct mlx5dv_cq_init_attr` (`mlx5dv_create_cq`).
#[repr(C)]
pub(crate) struct Mlx5dvCqInitAttr {
    /// `MLX5DV_CQ_INIT_ATTR_MASK_*`.
    comp_mask: u64,
    cqe_comp_res_format: u8,
    /// `MLX5DV_CQ_INIT_ATTR_FLAGS_CQE_PAD` (1).
    flags: u32,
    cqe_size: u16,
}

/// `MLX5DV_CONTEXT_FLAGS_DEVX`.
const CONTEXT_FLAGS_DEVX: u32 = 1;
/// `MLX5DV_CQ_INIT_ATTR_MASK_COMPRESSED_CQE`, `_FLAGS`, `_CQE_SIZE`.
const CQ_MASK_COMPRESSED_CQE: u64 = 1;
const CQ_MASK_FLAGS: u64 = 2;
const CQ_MASK_CQE_SIZE: u64 = 4;

/// Our mlx5 provider drives `device`.
fn is_mlx5(device: *const IbvDevice) -> bool {
    device::lookup(device).is_some_and(|d| d.dev.provider() == Some(ProviderKind::Mlx5))
}

/// `mlx5dv_is_supported`: whether `device` is an mlx5 device this library
/// drives (its mlx5 provider; a device of another provider, or a pointer
/// that is not one of our devices, is not).
pub(crate) extern "C" fn mlx5dv_is_supported(device: *mut IbvDevice) -> bool {
    is_mlx5(device)
}

/// `mlx5dv_open_device`: `ibv_open_device` of an mlx5 device; NULL with
/// `EOPNOTSUPP` for another device and for DEVX (not implemented), `EINVAL`
/// for a `comp_mask` or unknown flags (libmlx5's checks).
///
/// # Safety
///
/// `attr` is NULL or points to a readable `struct mlx5dv_context_attr`.
pub(crate) unsafe extern "C" fn mlx5dv_open_device(device: *mut IbvDevice, attr: *mut Mlx5dvContextAttr) -> *mut IbvContext {
    if !is_mlx5(device) {
        return fail_null(libc::EOPNOTSUPP);
    }
    if !attr.is_null() {
        // SAFETY: non-NULL; the caller promises a readable struct.
        let a = unsafe { &*attr };
        if a.comp_mask != 0 || a.flags & !CONTEXT_FLAGS_DEVX != 0 {
            return fail_null(libc::EINVAL);
        }
        if a.flags & CONTEXT_FLAGS_DEVX != 0 {
            return fail_null(libc::EOPNOTSUPP);
        }
    }
    context::ibv_open_device(device)
}

/// `mlx5dv_query_device`: version 0, no flags, and none of the optional
/// capabilities (`comp_mask` 0 on return: CQE compression, striding RQ,
/// DCI streams, … are not implemented). The flag `MLX5DV_CONTEXT_FLAGS_CQE_V1`
/// is not claimed: this library does not hand out CQ buffers
/// (`mlx5dv_init_obj` is `EOPNOTSUPP`), so no caller parses CQEs itself.
/// 0, or `EOPNOTSUPP` for a context of another provider, `EINVAL` for
/// NULL.
///
/// # Safety
///
/// `attrs_out` is NULL or points to a writable `struct mlx5dv_context`.
pub(crate) unsafe extern "C" fn mlx5dv_query_device(context: *mut IbvContext, attrs_out: *mut Mlx5dvContextHead) -> c_int {
    let Some(c) = context::from_c(context) else { return fail_errno(libc::EINVAL) };
    if c.ctx.provider() != ProviderKind::Mlx5 {
        return fail_errno(libc::EOPNOTSUPP);
    }
    if attrs_out.is_null() {
        return fail_errno(libc::EINVAL);
    }
    // SAFETY: non-NULL; the caller promises a writable struct, which
    // begins with these three fields.
    let out = unsafe { &mut *attrs_out };
    out.version = 0;
    out.flags = 0;
    out.comp_mask = 0;
    0
}

/// `mlx5dv_create_cq`: `ibv_create_cq_ex` with libmlx5's choices: the CQE
/// size (`MLX5DV_CQ_INIT_ATTR_MASK_CQE_SIZE`: 64 or 128, else `EINVAL`;
/// without it the `MLX5_CQE_SIZE` environment variable, else 64). CQE
/// compression and 128-byte padding are `EINVAL`, as libmlx5 answers when
/// the device reports no such capability (and [`mlx5dv_query_device`]
/// reports none); unknown mask bits and flags are `EINVAL` too. NULL with
/// `EOPNOTSUPP` for a context of another provider.
///
/// # Safety
///
/// `cq_attr` as `ibv_create_cq_ex`'s; `mlx5_attr` is NULL or points to a
/// readable `struct mlx5dv_cq_init_attr`.
pub(crate) unsafe extern "C" fn mlx5dv_create_cq(
    context: *mut IbvContext,
    cq_attr: *mut IbvCqInitAttrEx,
    mlx5_attr: *mut Mlx5dvCqInitAttr,
) -> *mut IbvCqEx {
    let Some(c) = context::from_c(context) else { return fail_null(libc::EINVAL) };
    if c.ctx.provider() != ProviderKind::Mlx5 {
        return fail_null(libc::EOPNOTSUPP);
    }
    let mut opts = CqOptions::default();
    if !mlx5_attr.is_null() {
        // SAFETY: non-NULL; the caller promises a readable struct.
        let a = unsafe { &*mlx5_attr };
        if a.comp_mask & !(CQ_MASK_COMPRESSED_CQE | CQ_MASK_FLAGS | CQ_MASK_CQE_SIZE) != 0
            || a.comp_mask & CQ_MASK_COMPRESSED_CQE != 0
            || (a.comp_mask & CQ_MASK_FLAGS != 0 && a.flags != 0)
        {
            return fail_null(libc::EINVAL);
        }
        if a.comp_mask & CQ_MASK_CQE_SIZE != 0 {
            opts.cqe_size = Some(u32::from(a.cqe_size));
        }
    }
    // SAFETY: the caller's promise about cq_attr, passed on.
    unsafe { crate::cq::create_cq_ex_with(context, cq_attr, opts) }
}

/// `mlx5dv_init_obj` (both versions): `EOPNOTSUPP`; the rings and doorbell
/// records of our objects are the provider's, not the caller's.
pub(crate) extern "C" fn mlx5dv_init_obj() -> c_int {
    fail_errno(libc::EOPNOTSUPP)
}

#[cfg(test)]
mod tests {
    use core::mem::{offset_of, size_of};

    use super::*;

    /// The layouts of rdma-core 44's `mlx5dv.h`.
    #[test]
    fn struct_layouts() {
        assert_eq!((size_of::<Mlx5dvContextAttr>(), offset_of!(Mlx5dvContextAttr, comp_mask)), (16, 8));
        assert_eq!(
            (offset_of!(Mlx5dvContextHead, flags), offset_of!(Mlx5dvContextHead, comp_mask)),
            (8, 16)
        );
        assert_eq!(size_of::<Mlx5dvCqInitAttr>(), 24);
        assert_eq!(
            (offset_of!(Mlx5dvCqInitAttr, cqe_comp_res_format), offset_of!(Mlx5dvCqInitAttr, flags), offset_of!(Mlx5dvCqInitAttr, cqe_size)),
            (8, 12, 16)
        );
    }

    #[test]
    fn foreign_pointers_are_refused() {
        assert!(!mlx5dv_is_supported(core::ptr::null_mut()));
        let mut dummy = 0u64;
        assert!(!mlx5dv_is_supported((&raw mut dummy).cast()));
        // SAFETY: NULL attributes; the device is not ours.
        assert!(unsafe { mlx5dv_open_device((&raw mut dummy).cast(), core::ptr::null_mut()) }.is_null());
        // SAFETY: the context is not ours: refused before any read.
        let r = unsafe { mlx5dv_query_device((&raw mut dummy).cast(), core::ptr::null_mut()) };
        assert_eq!(r, libc::EINVAL);
    }
}
