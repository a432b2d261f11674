//! `mlx5dv_create_qp` and `mlx5dv_qp_ex_from_ibv_qp_ex`: not implemented
//! yet (`EOPNOTSUPP`, NULL).

use core::ffi::c_void;

use crate::errno::fail_null;

/// `mlx5dv_create_qp`: NULL with `EOPNOTSUPP`.
pub(crate) extern "C" fn mlx5dv_create_qp() -> *mut c_void {
    fail_null(libc::EOPNOTSUPP)
}

/// `mlx5dv_qp_ex_from_ibv_qp_ex`: NULL with `EOPNOTSUPP`.
pub(crate) extern "C" fn mlx5dv_qp_ex_from_ibv_qp_ex() -> *mut c_void {
    fail_null(libc::EOPNOTSUPP)
}
