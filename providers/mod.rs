//! The providers compiled into this build, and how a device is matched to one.
//!
//! Like rdma-core's `verbs_device_ops` match tables, a provider is chosen by
//! the device's kernel driver id (learned over RDMA netlink), then by device
//! name, and finally checked against the per-device uverbs ABI version.

#[cfg(any(feature = "rxe", feature = "siw"))]
pub mod claim;
#[cfg(feature = "mlx5")]
pub mod mlx5;
#[cfg(feature = "rxe")]
pub mod rxe;
#[cfg(feature = "siw")]
pub mod siw;

use crate::abi::RdmaDriverId;

/// A provider this build can drive, identified without any runtime state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProviderKind {
    /// Soft-RoCE (`rdma_rxe`): InfiniBand transport over UDP.
    #[cfg(feature = "rxe")]
    Rxe,
    /// SoftiWARP (`siw`): iWARP over kernel TCP sockets.
    #[cfg(feature = "siw")]
    Siw,
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
    /// Lowest per-device uverbs ABI version the provider speaks.
    pub min_abi: u32,
    /// Highest per-device uverbs ABI version the provider speaks.
    pub max_abi: u32,
}

/// Every provider compiled into this build, in match order.
pub const PROVIDERS: &[MatchRule] = &[
    #[cfg(feature = "rxe")]
    MatchRule {
        kind: ProviderKind::Rxe,
        driver_id: RdmaDriverId::RXE,
        name_prefix: Some("rxe"),
        min_abi: 1,
        max_abi: 2,
    },
    #[cfg(feature = "siw")]
    MatchRule {
        kind: ProviderKind::Siw,
        driver_id: RdmaDriverId::SIW,
        name_prefix: None,
        min_abi: 1,
        max_abi: 1,
    },
];

impl ProviderKind {
    /// The provider's short name, as rdma-core names its provider library.
    pub const fn name(self) -> &'static str {
        match self {
            #[cfg(feature = "rxe")]
            ProviderKind::Rxe => "rxe",
            #[cfg(feature = "siw")]
            ProviderKind::Siw => "siw",
        }
    }

    /// Whether the provider's kernel driver addresses a memory region by
    /// the I/O virtual address it was registered with (`hca_va`, what
    /// `ibv_reg_mr_iova` sets): rxe does (`mr->ibmr.iova`, against which
    /// it checks local SGEs and peers' addresses). siw does not: it
    /// addresses every region by its buffer address (`siw_mr_add_mem`
    /// keeps `start`) and ignores `hca_va`.
    pub const fn addresses_regions_by_iova(self) -> bool {
        match self {
            #[cfg(feature = "rxe")]
            ProviderKind::Rxe => true,
            #[cfg(feature = "siw")]
            ProviderKind::Siw => false,
        }
    }

    /// Whether the provider's devices are RoCE (Ethernet link layer,
    /// addressed by GID: every address needs a GRH).
    pub const fn is_roce(self) -> bool {
        match self {
            #[cfg(feature = "rxe")]
            ProviderKind::Rxe => true,
            #[cfg(feature = "siw")]
            ProviderKind::Siw => false,
        }
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
    PROVIDERS
        .iter()
        .find(|rule| {
            let by_id = driver_id == Some(rule.driver_id);
            let by_name = driver_id.is_none()
                && rule.name_prefix.is_some_and(|p| ibdev_name.starts_with(p));
            (by_id || by_name) && (rule.min_abi..=rule.max_abi).contains(&abi_version)
        })
        .map(|rule| rule.kind)
}
