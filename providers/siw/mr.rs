//! siw's driver data for `ibv_reg_mr` (rdma-core `providers/siw/siw_abi.h`:
//! `DECLARE_DRV_CMD(siw_cmd_reg_mr, IB_USER_VERBS_CMD_REG_MR,
//! siw_ureq_reg_mr, siw_uresp_reg_mr)`; layouts from `<rdma/siw-abi.h>`).
//!
//! siw's kernel `siw_reg_user_mr` reads the request (the low byte of the
//! new STag, `stag_key`) and writes the response (the STag it chose).
//! rdma-core sends a zeroed request; so do we.

use core::mem::size_of;
use static_assertions::const_assert_eq;

crate::abi::abi_struct! {
    /// `struct siw_ureq_reg_mr`: follows `ib_uverbs_reg_mr` in the command.
    #[repr(C)]
    pub struct SiwUreqRegMr {
        /// Key part (low 8 bits) of the STag; 0 lets the kernel choose.
        pub stag_key: u8,
        /// Reserved, zero.
        pub reserved: [u8; 3],
        /// Padding, zero.
        pub pad: u32,
    }
}
const_assert_eq!(size_of::<SiwUreqRegMr>(), 8);

crate::abi::abi_struct! {
    /// `struct siw_uresp_reg_mr`: follows `ib_uverbs_reg_mr_resp`.
    #[repr(C)]
    pub struct SiwUrespRegMr {
        /// The STag the kernel assigned (equals lkey and rkey).
        pub stag: u32,
        /// Padding.
        pub pad: u32,
    }
}
const_assert_eq!(size_of::<SiwUrespRegMr>(), 8);
