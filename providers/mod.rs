//! The providers compiled into this build, and how a device is matched to one.
//!
//! Like rdma-core's `verbs_device_ops` match tables, a provider is chosen by
//! the device's kernel driver id (learned over RDMA netlink), then by device
//! name, and finally checked against the per-device uverbs ABI version.
//!
//! # How a provider plugs in
//!
//! A provider lives in `providers/<name>/`: a zero-sized type implementing
//! [`seam::Provider`] (match rule, [`Caps`], and the associated types that
//! hold its per-context, per-CQ, per-QP and per-SRQ state, with the hooks
//! that add its driver data to the create commands), behind a cargo
//! feature of its name. It is registered with one line in the
//! `dispatch::registry!` list below, which generates [`ProviderKind`],
//! the match table and the dispatch enums the object layer uses.

pub mod claim;
mod dispatch;
pub mod seam;
#[cfg(feature = "mlx5")]
pub mod mlx5;
#[cfg(feature = "rxe")]
pub mod rxe;
#[cfg(feature = "siw")]
pub mod siw;

use core::mem::MaybeUninit;

use rustix::fd::BorrowedFd;

use crate::abi::uverbs::{
    AllocPd, AllocPdResp, CreateAh, CreateAhResp, CreateCq, ModifySrq, RegMr, RegMrResp,
    ResizeCq,
};
use crate::abi::RdmaDriverId;
use crate::cmd::channel::RingFailed;
use crate::cmd::device::ContextReply;
use crate::cmd::Channel;
use crate::error::{ErrorKind, Result};
use crate::qp::kind::{QpStateKind, QpType};
use crate::wc::{Wc, WcOut};
use crate::wr::{PostError, RecvWr, SendWr, Sge};
use seam::{QpCreateCmd, SrqCreateCmd, 
    DriverCmd, Provider, ProviderContext, ProviderCq, ProviderQp, ProviderSrq, ResizeFailed, StraightWr,
};

pub use seam::Caps;
pub(crate) use dispatch::{dead, poll_with_error};
use dispatch::mismatch;

// The registration list: one line per provider.
dispatch::registry! {
    /// Soft-RoCE (`rdma_rxe`): InfiniBand transport over UDP.
    "rxe" => Rxe(rxe::Rxe),
    /// SoftiWARP (`siw`): iWARP over kernel TCP sockets.
    "siw" => Siw(siw::Siw),
    /// ConnectX-4 and later (`mlx5_ib`).
    "mlx5" => Mlx5(mlx5::Mlx5),
}

/// How a provider recognises its devices (rdma-core `verbs_match_ent`).
#[derive(Clone, Copy, Debug)]
pub struct MatchRule {
    /// The provider this rule selects.
    pub kind: ProviderKind,
    /// Kernel driver id (`enum rdma_driver_id`) that selects this provider.
    pub driver_id: RdmaDriverId,
    /// Device-name prefix accepted when the driver id is unknown (sysfs-only
    /// discovery); `None` if the provider can only be matched by driver id.
    pub name_prefix: Option<&'static str>,
    /// PCI (vendor, device) ids accepted when the driver id is unknown.
    pub pci_ids: &'static [(u16, u16)],
    /// Lowest per-device uverbs ABI version the provider speaks.
    pub min_abi: u32,
    /// Highest per-device uverbs ABI version the provider speaks.
    pub max_abi: u32,
}

impl ProviderKind {
    /// Whether the provider's kernel driver addresses a memory region by
    /// the I/O virtual address it was registered with ([`Caps`]).
    pub const fn addresses_regions_by_iova(self) -> bool {
        self.caps().addresses_regions_by_iova
    }

    /// Whether the provider's devices are RoCE (Ethernet link layer,
    /// addressed by GID: every address needs a GRH).
    pub const fn is_roce(self) -> bool {
        self.caps().roce
    }
}

/// Picks the provider for a device (rdma-core `match_device`): driver id
/// first, then the name prefix, then the ABI version range. Returns `None`
/// if no compiled-in provider fits.
pub fn match_device(
    driver_id: Option<RdmaDriverId>,
    ibdev_name: &str,
    abi_version: u32,
) -> Option<ProviderKind> {
    match_device_pci(driver_id, ibdev_name, abi_version, None)
}

/// [`match_device`], also accepting a provider that lists the device's
/// PCI ids (from its `modalias`) when the driver id is unknown.
pub fn match_device_pci(
    driver_id: Option<RdmaDriverId>,
    ibdev_name: &str,
    abi_version: u32,
    pci: Option<(u16, u16)>,
) -> Option<ProviderKind> {
    PROVIDERS
        .iter()
        .find(|rule| {
            let by_id = driver_id == Some(rule.driver_id);
            let by_name = driver_id.is_none()
                && rule.name_prefix.is_some_and(|p| ibdev_name.starts_with(p));
            let by_pci = driver_id.is_none() && pci.is_some_and(|id| rule.pci_ids.contains(&id));
            (by_id || by_name || by_pci) && (rule.min_abi..=rule.max_abi).contains(&abi_version)
        })
        .map(|rule| rule.kind)
}
