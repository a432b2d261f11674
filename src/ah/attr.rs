//! Address vectors (`struct ibv_ah_attr`, `struct ibv_global_route`):
//! plain data below the handles (the checks, QP attributes and the
//! address handle read them).

use crate::abi::uverbs;

/// `struct ibv_global_route`: the GRH part of an address.
///
/// `Default` is all zero (what a non-global address carries); for a real
/// route use [`GlobalRoute::to`].
#[doc(alias = "ibv_global_route")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GlobalRoute {
    /// Destination GID (network byte order, as on the wire).
    pub dgid: [u8; 16],
    /// IPv6 flow label (20 bits).
    pub flow_label: u32,
    /// Index of the local source GID in the port's GID table.
    pub sgid_index: u8,
    /// Hop limit (IPv4 TTL for RoCE v2 over IPv4).
    pub hop_limit: u8,
    /// Traffic class (IPv4 TOS for RoCE v2 over IPv4).
    pub traffic_class: u8,
}

impl GlobalRoute {
    /// A route to `dgid` from the local GID at `sgid_index`, with the hop
    /// limit rdma-core's pingpong examples use (1), flow label and traffic
    /// class 0.
    pub const fn to(dgid: [u8; 16], sgid_index: u8) -> Self {
        Self { dgid, flow_label: 0, sgid_index, hop_limit: 1, traffic_class: 0 }
    }
}

/// `struct ibv_ah_attr`: an address vector.
#[doc(alias = "ibv_ah_attr")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AhAttr {
    /// The global route; `Some` means `is_global = 1` (required on RoCE).
    pub grh: Option<GlobalRoute>,
    /// Destination LID (InfiniBand; 0 on RoCE).
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Source path bits.
    pub src_path_bits: u8,
    /// `enum ibv_rate` value (0 = port's rate), see [`crate::strings`].
    pub static_rate: u8,
    /// Local port number (from 1).
    pub port_num: u8,
}

impl AhAttr {
    /// The kernel's `struct ib_uverbs_ah_attr` for this address.
    pub fn to_abi(&self) -> uverbs::AhAttr {
        let g = self.grh.unwrap_or_default();
        uverbs::AhAttr {
            grh: uverbs::GlobalRoute {
                dgid: g.dgid,
                flow_label: g.flow_label,
                sgid_index: g.sgid_index,
                hop_limit: g.hop_limit,
                traffic_class: g.traffic_class,
                reserved: 0,
            },
            dlid: self.dlid,
            sl: self.sl,
            src_path_bits: self.src_path_bits,
            static_rate: self.static_rate,
            is_global: u8::from(self.grh.is_some()),
            port_num: self.port_num,
            reserved: 0,
        }
    }

    /// From the kernel's `struct ib_uverbs_ah_attr` (e.g. a QP query).
    pub fn from_abi(a: &uverbs::AhAttr) -> Self {
        let grh = (a.is_global != 0).then_some(GlobalRoute {
            dgid: a.grh.dgid,
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
        });
        Self {
            grh,
            dlid: a.dlid,
            sl: a.sl,
            src_path_bits: a.src_path_bits,
            static_rate: a.static_rate,
            port_num: a.port_num,
        }
    }
}

