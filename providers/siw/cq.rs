//! siw completion queues: the driver response of create CQ, the mapped
//! CQE array with its trailing `struct siw_cq_ctrl`, and arming the CQ for
//! a completion event, which on siw is a plain store into that control word
//! (the kernel reads it when it adds a CQE), not a system call.

use core::mem::size_of;
use core::sync::atomic::Ordering;

use rustix::fd::AsFd;
use static_assertions::const_assert_eq;
use zerocopy::FromBytes;

use crate::abi::abi_struct;
use crate::error::{Error, ErrorKind, Result};
use crate::mmap::Mapping;

abi_struct! {
    /// `struct siw_uresp_create_cq`.
    #[repr(C)]
    pub struct CreateCqResp {
        /// siw's CQ id.
        pub cq_id: u32,
        /// Number of CQEs in the mapped array.
        pub num_cqe: u32,
        /// The `mmap` offset of the array.
        pub cq_key: u64,
    }
}
const_assert_eq!(size_of::<CreateCqResp>(), 16);

/// `SIW_UOBJ_MAX_KEY + 1`: the key siw returns when it could not prepare
/// a mapping.
pub const SIW_INVAL_UOBJ_KEY: u64 = 0x08FFFF + 1;
/// `sizeof(struct siw_cqe)`.
pub const CQE_SIZE: usize = 32;
/// `sizeof(struct siw_cq_ctrl)`.
pub const CQ_CTRL_SIZE: usize = 8;

/// `SIW_NOTIFY_NOT`.
pub const SIW_NOTIFY_NOT: u32 = 0;
/// `SIW_NOTIFY_SOLICITED`.
pub const SIW_NOTIFY_SOLICITED: u32 = 1 << 0;
/// `SIW_NOTIFY_NEXT_COMPLETION`.
pub const SIW_NOTIFY_NEXT_COMPLETION: u32 = 1 << 1;

/// The user-space side of a siw CQ.
#[derive(Debug)]
pub struct SiwCq {
    map: Mapping,
    id: u32,
    num_cqe: u32,
}

impl SiwCq {
    /// Maps `num_cqe * sizeof(siw_cqe) + sizeof(siw_cq_ctrl)` bytes at
    /// `cq_key` (from the driver response `drv_out`) and disarms the CQ.
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, drv_out: &[u8]) -> Result<Self> {
        let bad = || Error::new(verb, ErrorKind::Malformed);
        let resp = CreateCqResp::read_from_bytes(drv_out).map_err(|_| bad())?;
        if resp.cq_key == SIW_INVAL_UOBJ_KEY || resp.num_cqe == 0 {
            return Err(bad());
        }
        let len = (resp.num_cqe as usize)
            .checked_mul(CQE_SIZE)
            .and_then(|n| n.checked_add(CQ_CTRL_SIZE))
            .ok_or_else(bad)?;
        let map = Mapping::new(verb, fd, resp.cq_key, len)?;
        let cq = Self {
            map,
            id: resp.cq_id,
            num_cqe: resp.num_cqe,
        };
        cq.ctrl_flags().store(SIW_NOTIFY_NOT, Ordering::SeqCst);
        Ok(cq)
    }

    fn ctrl_flags(&self) -> &core::sync::atomic::AtomicU32 {
        match self.map.atomic_u32(self.num_cqe as usize * CQE_SIZE) {
            Some(a) => a,
            // `map` sized the mapping to hold the control word right there.
            None => unreachable!("siw CQ mapping holds its control word"),
        }
    }

    /// `ibv_req_notify_cq` on siw: stores `SIW_NOTIFY_SOLICITED`, or
    /// `SOLICITED | NEXT_COMPLETION`, into `siw_cq_ctrl.flags`.
    pub fn arm(&self, solicited_only: bool) {
        let flags = if solicited_only {
            SIW_NOTIFY_SOLICITED
        } else {
            SIW_NOTIFY_SOLICITED | SIW_NOTIFY_NEXT_COMPLETION
        };
        self.ctrl_flags().store(flags, Ordering::SeqCst);
    }

    /// The current `siw_cq_ctrl.flags` (the kernel clears it when it
    /// signals an event).
    pub fn notify_flags(&self) -> u32 {
        self.ctrl_flags().load(Ordering::SeqCst)
    }

    /// siw's CQ id.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Number of CQEs in the mapped array.
    pub fn num_cqe(&self) -> u32 {
        self.num_cqe
    }
}
