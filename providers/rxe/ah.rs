//! rxe's driver data for `ibv_create_ah` (`<rdma/rdma_user_rxe.h>`
//! `struct rxe_create_ah_resp`; rdma-core `providers/rxe/rxe.c`
//! `rxe_create_ah`).
//!
//! Kernels since 5.12 return a nonzero `ah_num` that UD send WQEs carry in
//! `wr.ud.ah_num`; older kernels return 0 and the provider must copy the
//! whole address vector into each WQE instead.

use core::mem::size_of;
use static_assertions::const_assert_eq;

crate::abi::abi_struct! {
    /// `struct rxe_create_ah_resp`: follows `ib_uverbs_create_ah_resp`.
    #[repr(C)]
    pub struct RxeCreateAhResp {
        /// The kernel's index of the AH, for UD send WQEs (0 on old kernels).
        pub ah_num: u32,
        /// Reserved.
        pub reserved: u32,
    }
}
const_assert_eq!(size_of::<RxeCreateAhResp>(), 8);
