//! The address vector of a UD destination ([`Av`], `struct mlx5_wqe_av`),
//! built once per address handle as libmlx5's `mlx5_create_ah` builds it
//! (rdma-core v44 `verbs.c`), and copied into every UD send WQE.
//!
//! On InfiniBand the vector carries the LID, path bits and SL, and a GRH
//! only for a global address; on RoCE (Ethernet) every address is global,
//! the SL moves to bits 1..3, the GRH bit stays clear, the destination MAC
//! comes from the kernel (`CREATE_AH`'s driver response) and, for a RoCE
//! v2 source GID, `rlid` carries the UDP source port.

use zerocopy::byteorder::network_endian::{U16, U32};

use super::wqe::Av;
use crate::ah::AhAttr;

/// What the port and the kernel add to an [`AhAttr`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// An InfiniBand port (`grh_required`: the port's
    /// `IBV_QPF_GRH_REQUIRED` flag).
    Ib {
        /// Every address needs a GRH on this port.
        grh_required: bool,
    },
    /// An Ethernet (RoCE) port.
    Roce {
        /// The destination MAC the kernel resolved.
        dmac: [u8; 6],
        /// RoCE v2 source GID: the UDP source port (see
        /// [`roce_v2_sport`]); `None` for RoCE v1.
        udp_sport: Option<u16>,
    },
}

/// `IB_ROCE_UDP_ENCAP_VALID_PORT_MIN`.
const SPORT_MIN: u16 = 0xc000;

/// The UDP source port libmlx5 gives a RoCE v2 AH: folded from the flow
/// label (`ibv_flow_label_to_udp_sport`) if it is not 0, else a random
/// port in `0xc000..=0xffff` (libmlx5 calls `get_random()`), drawn here
/// from `random`.
pub const fn roce_v2_sport(flow_label: u32, random: u32) -> u16 {
    let fl = flow_label & 0xf_ffff;
    if fl != 0 {
        let low = (fl & 0x3fff) ^ ((fl & 0xf_c000) >> 14);
        low as u16 | SPORT_MIN
    } else {
        (random % (0x1_0000 - SPORT_MIN as u32)) as u16 + SPORT_MIN
    }
}

/// libmlx5's `ib_to_mlx5_rate_table`: `enum ibv_rate` to the device's
/// static rate code (best effort; 0 is "port rate").
pub const fn mlx5_rate(ibv_rate: u8) -> u8 {
    const TABLE: [u8; 23] = [0, 0, 7, 8, 9, 10, 11, 12, 13, 14, 15, 11, 13, 15, 0, 9, 15, 0, 0, 9, 13, 0, 0];
    if (ibv_rate as usize) < TABLE.len() {
        TABLE[ibv_rate as usize]
    } else {
        0
    }
}

/// Builds the vector; `Err` for a non-global address where the port needs
/// a GRH (libmlx5: `EINVAL`).
pub fn build_av(attr: &AhAttr, link: Link) -> Result<Av, &'static str> {
    let mut av = Av::default();
    let rate = mlx5_rate(attr.static_rate) << 4;
    let grh_bit: u32 = match link {
        Link::Roce { dmac, udp_sport } => {
            if attr.grh.is_none() {
                return Err("a RoCE address must be global (it needs a GRH)");
            }
            if let Some(p) = udp_sport {
                av.rlid = U16::new(p);
            }
            av.stat_rate_sl = rate | (attr.sl & 0x7) << 1;
            av.rmac = dmac;
            0
        }
        Link::Ib { grh_required } => {
            if attr.grh.is_none() && grh_required {
                return Err("the port requires a GRH: the address must be global");
            }
            av.fl_mlid = attr.src_path_bits & 0x7f;
            av.rlid = U16::new(attr.dlid);
            av.stat_rate_sl = rate | (attr.sl & 0xf);
            1
        }
    };
    if let Some(g) = attr.grh {
        av.tclass = g.traffic_class;
        av.hop_limit = g.hop_limit;
        av.grh_gid_fl = U32::new(grh_bit << 30 | u32::from(g.sgid_index) << 20 | (g.flow_label & 0xf_ffff));
        av.rgid = g.dgid;
    }
    Ok(av)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ah::GlobalRoute;
    use zerocopy::IntoBytes;

    #[test]
    fn roce_v2_vector_bytes() {
        let g = GlobalRoute { dgid: [0xfe; 16], flow_label: 0x12345, sgid_index: 3, hop_limit: 64, traffic_class: 0x20 };
        let attr = AhAttr { grh: Some(g), sl: 5, static_rate: 3, port_num: 1, ..Default::default() };
        // 0x12345: low 14 bits 0x2345 ^ (0x10000 >> 14 = 4) = 0x2341, | 0xc000.
        let sport = roce_v2_sport(g.flow_label, 0);
        assert_eq!(sport, 0xe341);
        let av = build_av(&attr, Link::Roce { dmac: [1, 2, 3, 4, 5, 6], udp_sport: Some(sport) }).unwrap();
        let b = av.as_bytes();
        assert_eq!(&b[..12], &[0; 12], "qkey and dqp are set per WQE");
        // rate(3 = 10 Gb/s) -> 8; 8 << 4 | (5 & 7) << 1.
        assert_eq!(b[12], 0x8a);
        assert_eq!((b[13], &b[14..16]), (0, &[0xe3, 0x41][..]));
        assert_eq!(&b[20..26], &[1, 2, 3, 4, 5, 6]);
        assert_eq!((b[26], b[27]), (0x20, 64));
        // no GRH bit on RoCE; sgid 3 << 20 | 0x12345.
        assert_eq!(&b[28..32], &[0x00, 0x31, 0x23, 0x45]);
        assert_eq!(&b[32..48], &[0xfe; 16]);
        assert!(build_av(&AhAttr::default(), Link::Roce { dmac: [0; 6], udp_sport: None }).is_err());
    }

    #[test]
    fn ib_vector_bytes() {
        let attr = AhAttr { dlid: 0x1234, sl: 0xb, src_path_bits: 0xff, static_rate: 0, port_num: 1, grh: None };
        let av = build_av(&attr, Link::Ib { grh_required: false }).unwrap();
        let b = av.as_bytes();
        assert_eq!((b[12], b[13], &b[14..16]), (0x0b, 0x7f, &[0x12, 0x34][..]));
        assert_eq!(&b[28..32], &[0; 4], "no GRH, no GID word");
        assert!(build_av(&attr, Link::Ib { grh_required: true }).is_err());
        let g = GlobalRoute { flow_label: 1, sgid_index: 2, ..GlobalRoute::to([7; 16], 2) };
        let av = build_av(&AhAttr { grh: Some(g), ..attr }, Link::Ib { grh_required: true }).unwrap();
        assert_eq!(&av.as_bytes()[28..32], &[0x40, 0x20, 0x00, 0x01], "GRH bit 30, sgid 2 << 20, flow label 1");
    }

    #[test]
    fn sport_range_and_rates() {
        for r in [0, 1, 0x3fff, 0x3fff_ffff, u32::MAX] {
            assert!(roce_v2_sport(0, r) >= 0xc000);
        }
        assert_eq!(roce_v2_sport(0, 0x4000), 0xc000, "0x4000 % 0x4000");
        assert_eq!(roce_v2_sport(0x10_0000, 5), 0xc005, "bits above the 20-bit label are ignored");
        assert_eq!((mlx5_rate(2), mlx5_rate(16), mlx5_rate(22), mlx5_rate(200)), (7, 15, 0, 0));
    }
}
