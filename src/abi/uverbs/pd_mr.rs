//! Protection domains, XRC domains, memory regions and memory windows.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use super::{
    write_cmd, CMD_ALLOC_MW, CMD_ALLOC_PD, CMD_CLOSE_XRCD, CMD_DEALLOC_MW, CMD_DEALLOC_PD,
    CMD_DEREG_MR, CMD_OPEN_XRCD, CMD_REG_MR, CMD_REREG_MR,
};

abi_struct! {
    /// `struct ib_uverbs_alloc_pd` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct AllocPd {
        /// User address of the [`AllocPdResp`] buffer.
        pub response: u64,
    }
}
const_assert_eq!(size_of::<AllocPd>(), 8);

abi_struct! {
    /// `struct ib_uverbs_alloc_pd_resp` (`driver_data[]` omitted).
    #[repr(C)]
    pub struct AllocPdResp {
        /// Handle of the new PD.
        pub pd_handle: u32,
    }
}
const_assert_eq!(size_of::<AllocPdResp>(), 4);

abi_struct! {
    /// `struct ib_uverbs_dealloc_pd`.
    #[repr(C)]
    pub struct DeallocPd {
        /// Handle of the PD to free.
        pub pd_handle: u32,
    }
}
const_assert_eq!(size_of::<DeallocPd>(), 4);

abi_struct! {
    /// `struct ib_uverbs_open_xrcd` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct OpenXrcd {
        /// User address of the [`OpenXrcdResp`] buffer.
        pub response: u64,
        /// File whose inode names the shared XRCD, or -1 (as `u32`) for none.
        pub fd: u32,
        /// `O_CREAT` / `O_EXCL` flags.
        pub oflags: u32,
    }
}
const_assert_eq!(size_of::<OpenXrcd>(), 16);
const_assert_eq!(offset_of!(OpenXrcd, oflags), 12);

abi_struct! {
    /// `struct ib_uverbs_open_xrcd_resp` (`driver_data[]` omitted).
    #[repr(C)]
    pub struct OpenXrcdResp {
        /// Handle of the XRCD.
        pub xrcd_handle: u32,
    }
}
const_assert_eq!(size_of::<OpenXrcdResp>(), 4);

abi_struct! {
    /// `struct ib_uverbs_close_xrcd`.
    #[repr(C)]
    pub struct CloseXrcd {
        /// Handle of the XRCD to close.
        pub xrcd_handle: u32,
    }
}
const_assert_eq!(size_of::<CloseXrcd>(), 4);

abi_struct! {
    /// `struct ib_uverbs_reg_mr` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct RegMr {
        /// User address of the [`RegMrResp`] buffer.
        pub response: u64,
        /// Start of the user memory.
        pub start: u64,
        /// Length in bytes.
        pub length: u64,
        /// I/O virtual address the region is addressed with.
        pub hca_va: u64,
        /// Handle of the PD.
        pub pd_handle: u32,
        /// `IB_UVERBS_ACCESS_*` bits.
        pub access_flags: u32,
    }
}
const_assert_eq!(size_of::<RegMr>(), 40);
const_assert_eq!(offset_of!(RegMr, hca_va), 24);
const_assert_eq!(offset_of!(RegMr, access_flags), 36);

abi_struct! {
    /// `struct ib_uverbs_reg_mr_resp` (`driver_data[]` omitted).
    #[repr(C)]
    pub struct RegMrResp {
        /// Handle of the new MR.
        pub mr_handle: u32,
        /// Local key.
        pub lkey: u32,
        /// Remote key.
        pub rkey: u32,
    }
}
const_assert_eq!(size_of::<RegMrResp>(), 12);

abi_struct! {
    /// `struct ib_uverbs_rereg_mr` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct ReregMr {
        /// User address of the [`ReregMrResp`] buffer.
        pub response: u64,
        /// Handle of the MR.
        pub mr_handle: u32,
        /// `IB_MR_REREG_*` bits: what to change.
        pub flags: u32,
        /// New start address.
        pub start: u64,
        /// New length.
        pub length: u64,
        /// New I/O virtual address.
        pub hca_va: u64,
        /// New PD.
        pub pd_handle: u32,
        /// New access bits.
        pub access_flags: u32,
    }
}
const_assert_eq!(size_of::<ReregMr>(), 48);
const_assert_eq!(offset_of!(ReregMr, start), 16);
const_assert_eq!(offset_of!(ReregMr, pd_handle), 40);

abi_struct! {
    /// `struct ib_uverbs_rereg_mr_resp` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct ReregMrResp {
        /// New local key.
        pub lkey: u32,
        /// New remote key.
        pub rkey: u32,
    }
}
const_assert_eq!(size_of::<ReregMrResp>(), 8);

abi_struct! {
    /// `struct ib_uverbs_dereg_mr`.
    #[repr(C)]
    pub struct DeregMr {
        /// Handle of the MR.
        pub mr_handle: u32,
    }
}
const_assert_eq!(size_of::<DeregMr>(), 4);

abi_struct! {
    /// `struct ib_uverbs_alloc_mw` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct AllocMw {
        /// User address of the [`AllocMwResp`] buffer.
        pub response: u64,
        /// Handle of the PD.
        pub pd_handle: u32,
        /// Window type (1 or 2).
        pub mw_type: u8,
        /// Reserved, must be zero.
        pub reserved: [u8; 3],
    }
}
const_assert_eq!(size_of::<AllocMw>(), 16);
const_assert_eq!(offset_of!(AllocMw, mw_type), 12);

abi_struct! {
    /// `struct ib_uverbs_alloc_mw_resp` (`driver_data[]` omitted).
    #[repr(C, align(8))]
    pub struct AllocMwResp {
        /// Handle of the new MW.
        pub mw_handle: u32,
        /// Its remote key.
        pub rkey: u32,
    }
}
const_assert_eq!(size_of::<AllocMwResp>(), 8);

abi_struct! {
    /// `struct ib_uverbs_dealloc_mw`.
    #[repr(C)]
    pub struct DeallocMw {
        /// Handle of the MW.
        pub mw_handle: u32,
    }
}
const_assert_eq!(size_of::<DeallocMw>(), 4);

write_cmd! {
    AllocPd => CMD_ALLOC_PD, false, AllocPdResp;
    DeallocPd => CMD_DEALLOC_PD, false, ();
    OpenXrcd => CMD_OPEN_XRCD, false, OpenXrcdResp;
    CloseXrcd => CMD_CLOSE_XRCD, false, ();
    RegMr => CMD_REG_MR, false, RegMrResp;
    ReregMr => CMD_REREG_MR, false, ReregMrResp;
    DeregMr => CMD_DEREG_MR, false, ();
    AllocMw => CMD_ALLOC_MW, false, AllocMwResp;
    DeallocMw => CMD_DEALLOC_MW, false, ();
}
