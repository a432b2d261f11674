//! Flow steering (`EX_CMD_CREATE_FLOW` / `EX_CMD_DESTROY_FLOW`): the flow
//! attribute header, the flow specs that follow it, and their filters.
//!
//! A create-flow command is [`CreateFlow`] followed by
//! `flow_attr.num_of_specs` specs, each starting with a [`FlowSpecHdr`]
//! whose `size` is the spec's byte length. Big-endian (`__be16`/`__be32`)
//! filter fields are stored as the raw network-order bits.
//! The specs' C anonymous union of `hdr` and `{ type; size; reserved; }`
//! is the single field `hdr`.

use core::mem::{offset_of, size_of};
use static_assertions::const_assert_eq;

use super::{write_cmd, EX_CMD_CREATE_FLOW, EX_CMD_DESTROY_FLOW};

abi_struct! {
    /// `struct ib_uverbs_flow_spec_hdr` (`flow_spec_data[0]` omitted).
    #[repr(C, align(8))]
    pub struct FlowSpecHdr {
        /// Flow spec type (`enum ib_flow_spec_type`).
        pub r#type: u32,
        /// Size of the whole spec in bytes.
        pub size: u16,
        /// Reserved.
        pub reserved: u16,
    }
}
const_assert_eq!(size_of::<FlowSpecHdr>(), 8);

abi_struct! {
    /// `struct ib_uverbs_flow_eth_filter`.
    #[repr(C)]
    pub struct FlowEthFilter {
        /// Destination MAC.
        pub dst_mac: [u8; 6],
        /// Source MAC.
        pub src_mac: [u8; 6],
        /// Ethertype (`__be16`).
        pub ether_type: u16,
        /// VLAN tag (`__be16`).
        pub vlan_tag: u16,
    }
}
const_assert_eq!(size_of::<FlowEthFilter>(), 16);

abi_struct! {
    /// `struct ib_uverbs_flow_ipv4_filter`.
    #[repr(C)]
    pub struct FlowIpv4Filter {
        /// Source address (`__be32`).
        pub src_ip: u32,
        /// Destination address (`__be32`).
        pub dst_ip: u32,
        /// IP protocol.
        pub proto: u8,
        /// Type of service.
        pub tos: u8,
        /// Time to live.
        pub ttl: u8,
        /// IP flags.
        pub flags: u8,
    }
}
const_assert_eq!(size_of::<FlowIpv4Filter>(), 12);

abi_struct! {
    /// `struct ib_uverbs_flow_tcp_udp_filter`.
    #[repr(C)]
    pub struct FlowTcpUdpFilter {
        /// Destination port (`__be16`).
        pub dst_port: u16,
        /// Source port (`__be16`).
        pub src_port: u16,
    }
}
const_assert_eq!(size_of::<FlowTcpUdpFilter>(), 4);

abi_struct! {
    /// `struct ib_uverbs_flow_ipv6_filter`.
    #[repr(C)]
    pub struct FlowIpv6Filter {
        /// Source address.
        pub src_ip: [u8; 16],
        /// Destination address.
        pub dst_ip: [u8; 16],
        /// Flow label (`__be32`).
        pub flow_label: u32,
        /// Next header.
        pub next_hdr: u8,
        /// Traffic class.
        pub traffic_class: u8,
        /// Hop limit.
        pub hop_limit: u8,
        /// Reserved.
        pub reserved: u8,
    }
}
const_assert_eq!(size_of::<FlowIpv6Filter>(), 40);

abi_struct! {
    /// `struct ib_uverbs_flow_tunnel_filter`.
    #[repr(C)]
    pub struct FlowTunnelFilter {
        /// Tunnel id (`__be32`).
        pub tunnel_id: u32,
    }
}
const_assert_eq!(size_of::<FlowTunnelFilter>(), 4);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_esp_filter`.
    #[repr(C)]
    pub struct FlowSpecEspFilter {
        /// Security parameter index.
        pub spi: u32,
        /// Sequence number.
        pub seq: u32,
    }
}
const_assert_eq!(size_of::<FlowSpecEspFilter>(), 8);

abi_struct! {
    /// `struct ib_uverbs_flow_gre_filter`.
    #[repr(C)]
    pub struct FlowGreFilter {
        /// C/K/S bits and version (`__be16`).
        pub c_ks_res0_ver: u16,
        /// Protocol (`__be16`).
        pub protocol: u16,
        /// Key (`__be32`).
        pub key: u32,
    }
}
const_assert_eq!(size_of::<FlowGreFilter>(), 8);

abi_struct! {
    /// `struct ib_uverbs_flow_mpls_filter`.
    #[repr(C)]
    pub struct FlowMplsFilter {
        /// Whole MPLS label word (`__be32`).
        pub label: u32,
    }
}
const_assert_eq!(size_of::<FlowMplsFilter>(), 4);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_eth`.
    #[repr(C, align(8))]
    pub struct FlowSpecEth {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Values to match.
        pub val: FlowEthFilter,
        /// Mask of the bits to match.
        pub mask: FlowEthFilter,
    }
}
const_assert_eq!(size_of::<FlowSpecEth>(), 40);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_ipv4`.
    #[repr(C, align(8))]
    pub struct FlowSpecIpv4 {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Values to match.
        pub val: FlowIpv4Filter,
        /// Mask of the bits to match.
        pub mask: FlowIpv4Filter,
    }
}
const_assert_eq!(size_of::<FlowSpecIpv4>(), 32);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_tcp_udp`.
    #[repr(C, align(8))]
    pub struct FlowSpecTcpUdp {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Values to match.
        pub val: FlowTcpUdpFilter,
        /// Mask of the bits to match.
        pub mask: FlowTcpUdpFilter,
    }
}
const_assert_eq!(size_of::<FlowSpecTcpUdp>(), 16);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_ipv6`.
    #[repr(C, align(8))]
    pub struct FlowSpecIpv6 {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Values to match.
        pub val: FlowIpv6Filter,
        /// Mask of the bits to match.
        pub mask: FlowIpv6Filter,
    }
}
const_assert_eq!(size_of::<FlowSpecIpv6>(), 88);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_action_tag`.
    #[repr(C, align(8))]
    pub struct FlowSpecActionTag {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Tag to report.
        pub tag_id: u32,
        /// Reserved.
        pub reserved1: u32,
    }
}
const_assert_eq!(size_of::<FlowSpecActionTag>(), 16);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_action_drop`.
    #[repr(C, align(8))]
    pub struct FlowSpecActionDrop {
        /// Spec header.
        pub hdr: FlowSpecHdr,
    }
}
const_assert_eq!(size_of::<FlowSpecActionDrop>(), 8);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_action_handle`.
    #[repr(C, align(8))]
    pub struct FlowSpecActionHandle {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Flow action handle.
        pub handle: u32,
        /// Reserved.
        pub reserved1: u32,
    }
}
const_assert_eq!(size_of::<FlowSpecActionHandle>(), 16);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_action_count`.
    #[repr(C, align(8))]
    pub struct FlowSpecActionCount {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Counters handle.
        pub handle: u32,
        /// Reserved.
        pub reserved1: u32,
    }
}
const_assert_eq!(size_of::<FlowSpecActionCount>(), 16);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_tunnel`.
    #[repr(C, align(8))]
    pub struct FlowSpecTunnel {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Values to match.
        pub val: FlowTunnelFilter,
        /// Mask of the bits to match.
        pub mask: FlowTunnelFilter,
    }
}
const_assert_eq!(size_of::<FlowSpecTunnel>(), 16);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_esp`.
    #[repr(C, align(8))]
    pub struct FlowSpecEsp {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Values to match.
        pub val: FlowSpecEspFilter,
        /// Mask of the bits to match.
        pub mask: FlowSpecEspFilter,
    }
}
const_assert_eq!(size_of::<FlowSpecEsp>(), 24);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_gre`.
    #[repr(C, align(8))]
    pub struct FlowSpecGre {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Values to match.
        pub val: FlowGreFilter,
        /// Mask of the bits to match.
        pub mask: FlowGreFilter,
    }
}
const_assert_eq!(size_of::<FlowSpecGre>(), 24);

abi_struct! {
    /// `struct ib_uverbs_flow_spec_mpls`.
    #[repr(C, align(8))]
    pub struct FlowSpecMpls {
        /// Spec header.
        pub hdr: FlowSpecHdr,
        /// Values to match.
        pub val: FlowMplsFilter,
        /// Mask of the bits to match.
        pub mask: FlowMplsFilter,
    }
}
const_assert_eq!(size_of::<FlowSpecMpls>(), 16);

abi_struct! {
    /// `struct ib_uverbs_flow_attr` (the `flow_specs[]` that follow are omitted).
    #[repr(C, align(8))]
    pub struct FlowAttr {
        /// Flow type (`enum ib_flow_attr_type`).
        pub r#type: u32,
        /// Size of the attribute and all specs in bytes.
        pub size: u16,
        /// Priority.
        pub priority: u16,
        /// Number of specs that follow.
        pub num_of_specs: u8,
        /// Reserved.
        pub reserved: [u8; 2],
        /// Port number.
        pub port: u8,
        /// `IB_FLOW_ATTR_FLAGS_*`.
        pub flags: u32,
    }
}
const_assert_eq!(size_of::<FlowAttr>(), 16);

const_assert_eq!(offset_of!(FlowAttr, num_of_specs), 8);
const_assert_eq!(offset_of!(FlowAttr, flags), 12);

abi_struct! {
    /// `struct ib_uverbs_create_flow`.
    #[repr(C, align(8))]
    pub struct CreateFlow {
        /// Must be zero.
        pub comp_mask: u32,
        /// Handle of the QP.
        pub qp_handle: u32,
        /// The flow (its specs follow).
        pub flow_attr: FlowAttr,
    }
}
const_assert_eq!(size_of::<CreateFlow>(), 24);

abi_struct! {
    /// `struct ib_uverbs_create_flow_resp`.
    #[repr(C)]
    pub struct CreateFlowResp {
        /// Which optional fields are valid.
        pub comp_mask: u32,
        /// Handle of the new flow.
        pub flow_handle: u32,
    }
}
const_assert_eq!(size_of::<CreateFlowResp>(), 8);

abi_struct! {
    /// `struct ib_uverbs_destroy_flow`.
    #[repr(C)]
    pub struct DestroyFlow {
        /// Must be zero.
        pub comp_mask: u32,
        /// Handle of the flow.
        pub flow_handle: u32,
    }
}
const_assert_eq!(size_of::<DestroyFlow>(), 8);

write_cmd! {
    CreateFlow => EX_CMD_CREATE_FLOW, true, CreateFlowResp;
    DestroyFlow => EX_CMD_DESTROY_FLOW, true, ();
}
