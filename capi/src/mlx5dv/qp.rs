//! # Safety
//!
//! `wr_raw_wqe` finds its QP from the `struct mlx5dv_qp_ex` pointer C
//! passes back (the `dv` field of a boxed, `repr(C)` `CQp`: the field's
//! offset subtracted, then `crate::qp::from_c`'s magic check), and hands
//! the caller's WQE pointer to `crate::qp_ex::push_raw`, which reads the
//! length its control segment states; `mlx5dv_create_qp` reads the
//! caller's attribute structs after a NULL check. Layouts: rdma-core 44's
//! `mlx5dv.h` (unit test `layouts`).
//!
//! `mlx5dv_create_qp`, `mlx5dv_qp_ex_from_ibv_qp_ex` and the one entry of
//! `struct mlx5dv_qp_ex` implemented, `wr_raw_wqe` (behind the
//! `mlx5dv_wr_raw_wqe` inline): the WQE joins the QP's `ibv_wr_*` batch
//! and `ibv_wr_complete` posts it in order (`crate::qp_ex::push_raw`,
//! `verbs::qp::QueuePair::post_raw_wqe`).
//!
//! Every QP of ours carries its `struct mlx5dv_qp_ex` ([`DvQpEx`], a field
//! of `crate::qp::CQp`, which C only reads); `wr_raw_wqe` is set for a QP
//! with the `ibv_wr_*` API, the other entries stay NULL (libmlx5 sets
//! them only for the operations asked for).
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::mem::offset_of;

use verbs::ProviderKind;

use crate::abi::device::IbvContext;
use crate::abi::objects::{IbvQp, IbvQpEx, IbvQpInitAttrEx};
use crate::context;
use crate::errno::fail_null;
use crate::qp::CQp;

/// `struct mlx5dv_qp_ex`: `comp_mask`, then twelve function pointers, of
/// which `wr_raw_wqe` is the ninth.
#[repr(C)]
pub(crate) struct DvQpEx {
    comp_mask: u64,
    wr_set_dc_addr: Option<unsafe extern "C" fn()>,
    wr_mr: [Option<unsafe extern "C" fn()>; 7],
    wr_raw_wqe: Option<unsafe extern "C" fn(*mut DvQpEx, *const c_void)>,
    rest: [Option<unsafe extern "C" fn()>; 3],
}

impl DvQpEx {
    /// The table of a QP (`wr_api`: made with the `ibv_wr_*` API).
    pub(crate) fn new(wr_api: bool) -> Self {
        let raw: unsafe extern "C" fn(*mut DvQpEx, *const c_void) = wr_raw_wqe;
        Self { comp_mask: 0, wr_set_dc_addr: None, wr_mr: [None; 7], wr_raw_wqe: wr_api.then_some(raw), rest: [None; 3] }
    }
}

/// `struct mlx5dv_qp_init_attr` (`struct mlx5dv_dc_init_attr` as 16 bytes).
#[repr(C)]
pub(crate) struct Mlx5dvQpInitAttr {
    comp_mask: u64,
    create_flags: u32,
    dc_init_attr: [u64; 2],
    send_ops_flags: u64,
}

/// `MLX5DV_QP_INIT_ATTR_MASK_QP_CREATE_FLAGS`, `_DC`, `_SEND_OPS_FLAGS`,
/// `_DCI_STREAMS`.
const MASK_CREATE_FLAGS: u64 = 1;
const MASK_SEND_OPS_FLAGS: u64 = 4;
const MASK_ALL: u64 = 0xf;
/// `MLX5DV_QP_EX_WITH_RAW_WQE`.
const WITH_RAW_WQE: u64 = 1 << 3;

/// `mlx5dv_create_qp`: `ibv_create_qp_ex` with libmlx5's attributes, of
/// which only the raw WQE send operation is implemented
/// (`MLX5DV_QP_EX_WITH_RAW_WQE`, with `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`,
/// else `EINVAL`). mlx5 creation flags, DC and DCI streams, and the other
/// mlx5 send operations are `EOPNOTSUPP`; unknown mask bits `EINVAL`;
/// another provider's context `EOPNOTSUPP`.
///
/// # Safety
///
/// `qp_attr` as `ibv_create_qp_ex`'s; `mlx5_attr` is NULL or points to a
/// readable `struct mlx5dv_qp_init_attr`.
pub(crate) unsafe extern "C" fn mlx5dv_create_qp(
    context: *mut IbvContext,
    qp_attr: *mut IbvQpInitAttrEx,
    mlx5_attr: *mut Mlx5dvQpInitAttr,
) -> *mut IbvQp {
    let Some(c) = context::from_c(context) else { return fail_null(libc::EINVAL) };
    if c.ctx.provider() != ProviderKind::Mlx5 {
        return fail_null(libc::EOPNOTSUPP);
    }
    // libmlx5 (`mlx5_qp_fill_wr_pfns`) installs the `ibv_wr_*` table, and
    // with mlx5 operations asked for their `mlx5dv_qp_ex` entries, when
    // either attribute struct has its send-operations mask: so a QP asked
    // for `MLX5DV_QP_EX_WITH_RAW_WQE` alone never has a NULL entry a C
    // caller of `ibv_wr_start`/`mlx5dv_wr_raw_wqe` would call.
    let mut dv_ops = false;
    if !mlx5_attr.is_null() {
        // SAFETY: non-NULL; the caller promises a readable struct.
        let a = unsafe { &*mlx5_attr };
        if a.comp_mask & !MASK_ALL != 0 {
            return fail_null(libc::EINVAL);
        }
        let flags = if a.comp_mask & MASK_CREATE_FLAGS != 0 { a.create_flags } else { 0 };
        let ops = if a.comp_mask & MASK_SEND_OPS_FLAGS != 0 { a.send_ops_flags } else { 0 };
        if flags != 0 || a.comp_mask & !(MASK_CREATE_FLAGS | MASK_SEND_OPS_FLAGS) != 0 || ops & !WITH_RAW_WQE != 0 {
            return fail_null(libc::EOPNOTSUPP);
        }
        dv_ops = a.comp_mask & MASK_SEND_OPS_FLAGS != 0;
    }
    // SAFETY: the caller's promise about qp_attr, passed on.
    unsafe { crate::qp::create_qp_ex_with(context, qp_attr, dv_ops) }
}

/// `mlx5dv_qp_ex_from_ibv_qp_ex`: the QP's `struct mlx5dv_qp_ex`; NULL
/// with `EINVAL` for a pointer that is not a live QP of ours.
pub(crate) extern "C" fn mlx5dv_qp_ex_from_ibv_qp_ex(qp: *mut IbvQpEx) -> *mut DvQpEx {
    match crate::qp::from_c(qp.cast::<IbvQp>()) {
        Some(c) => (&raw const c.dv).cast_mut(),
        None => fail_null(libc::EINVAL),
    }
}

/// `wr_raw_wqe` of `struct mlx5dv_qp_ex`: the WQE at `wqe` joins the
/// batch of the QP whose table `mqp` is.
///
/// # Safety
///
/// `mqp` is what [`mlx5dv_qp_ex_from_ibv_qp_ex`] returned for a live QP;
/// `wqe` points to a WQE as long as its control segment says.
unsafe extern "C" fn wr_raw_wqe(mqp: *mut DvQpEx, wqe: *const c_void) {
    // The QP whose `dv` field `mqp` is (CQp is repr(C) and begins with
    // its `struct ibv_qp_ex`); `from_c` checks it is a live one.
    let qp = mqp.cast::<u8>().wrapping_sub(offset_of!(CQp, dv)).cast::<IbvQpEx>();
    // SAFETY: the caller's promise about `wqe`, passed on.
    unsafe { crate::qp_ex::push_raw(qp, wqe.cast::<u8>()) }
}

#[cfg(test)]
mod tests {
    use core::mem::{offset_of, size_of};

    use super::*;

    #[test]
    fn layouts() {
        assert_eq!(size_of::<DvQpEx>(), 104);
        assert_eq!(offset_of!(DvQpEx, wr_raw_wqe), 72);
        assert_eq!(size_of::<Mlx5dvQpInitAttr>(), 40);
        assert_eq!((offset_of!(Mlx5dvQpInitAttr, create_flags), offset_of!(Mlx5dvQpInitAttr, dc_init_attr), offset_of!(Mlx5dvQpInitAttr, send_ops_flags)), (8, 16, 32));
    }

    /// A QP of `mlx5dv_create_qp` asking `MLX5DV_QP_EX_WITH_RAW_WQE` and no
    /// `ibv_wr_*` operation (send_ops_flags 0, or no
    /// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`) gets both tables, as libmlx5's
    /// QPs do: `ibv_wr_start`, the `ibv_wr_*` builders and setters and
    /// `mlx5dv_wr_raw_wqe` call no NULL pointer.
    #[test]
    fn raw_wqe_qp_without_ibv_send_ops_has_both_tables() {
        const PD: u32 = 1;
        const SEND_OPS_FLAGS: u32 = 64;
        assert!(crate::qp::wants_wr_table(PD, true), "mlx5 send ops alone");
        assert!(crate::qp::wants_wr_table(PD | SEND_OPS_FLAGS, false), "the mask with send_ops_flags 0");
        assert!(!crate::qp::wants_wr_table(PD, false), "a QP without the builder API");
        // SAFETY: struct ibv_qp_ex is plain C data (integers, pointers and
        // nullable function pointers): all-zero is valid.
        let mut ex: IbvQpEx = unsafe { core::mem::zeroed() };
        crate::qp_ex::set_api(&mut ex);
        let entries = [
            ("wr_start", ex.wr_start),
            ("wr_complete", ex.wr_complete),
            ("wr_abort", ex.wr_abort),
            ("wr_send", ex.wr_send),
            ("wr_send_imm", ex.wr_send_imm),
            ("wr_send_inv", ex.wr_send_inv),
            ("wr_local_inv", ex.wr_local_inv),
            ("wr_rdma_write", ex.wr_rdma_write),
            ("wr_rdma_write_imm", ex.wr_rdma_write_imm),
            ("wr_rdma_read", ex.wr_rdma_read),
            ("wr_atomic_cmp_swp", ex.wr_atomic_cmp_swp),
            ("wr_atomic_fetch_add", ex.wr_atomic_fetch_add),
            ("wr_bind_mw", ex.wr_bind_mw),
            ("wr_set_ud_addr", ex.wr_set_ud_addr),
            ("wr_set_sge", ex.wr_set_sge),
            ("wr_set_sge_list", ex.wr_set_sge_list),
            ("wr_set_inline_data", ex.wr_set_inline_data),
            ("wr_set_inline_data_list", ex.wr_set_inline_data_list),
        ];
        for (name, f) in entries {
            assert!(f.is_some(), "{name} is NULL");
        }
        assert!(DvQpEx::new(true).wr_raw_wqe.is_some(), "wr_raw_wqe is NULL");
    }
}
