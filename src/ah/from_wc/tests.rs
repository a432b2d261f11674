//! Host tests of the GRH / IPv4 header parsing in `init_ah_from_wc`.

use super::*;

/// A RoCE v2 IPv4 receive header: `pad` in bytes 0..20, then a 20-byte
/// IPv4 header with a correct checksum.
fn ipv4_grh(pad: u8, saddr: [u8; 4], daddr: [u8; 4], ttl: u8, tos: u8) -> [u8; GRH_LEN] {
    let mut g = [pad; GRH_LEN];
    let h = &mut g[20..];
    h[0] = 0x45;
    h[1] = tos;
    h[2..4].copy_from_slice(&60u16.to_be_bytes());
    h[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    h[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
    h[8] = ttl;
    h[9] = 17;
    h[10] = 0;
    h[11] = 0;
    h[12..16].copy_from_slice(&saddr);
    h[16..20].copy_from_slice(&daddr);
    let c = ipv4_header_checksum(h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    g
}

fn ipv6_grh(tclass: u8, flow: u32, next_hdr: u8, hop: u8, sgid: [u8; 16], dgid: [u8; 16]) -> [u8; GRH_LEN] {
    let mut g = [0u8; GRH_LEN];
    let w = (6u32 << 28) | (u32::from(tclass) << 20) | (flow & 0xf_ffff);
    g[0..4].copy_from_slice(&w.to_be_bytes());
    g[4..6].copy_from_slice(&100u16.to_be_bytes());
    g[6] = next_hdr;
    g[7] = hop;
    g[8..24].copy_from_slice(&sgid);
    g[24..40].copy_from_slice(&dgid);
    g
}

const WC: WcInfo = WcInfo { src_qp: 0x11, slid: 0x22, sl: 3, dlid_path_bits: 4, wc_flags: WC_GRH, pkey_index: 0 };

#[test]
fn checksum_matches_a_known_header() {
    // The classic example header from RFC 1071 write-ups (checksum 0xb861).
    let h = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
        0xc0, 0xa8, 0x00, 0xc7,
    ];
    assert_eq!(ipv4_header_checksum(&h), 0xb861);
}

#[test]
fn roce_v2_ipv4_answer_goes_back_to_the_source() {
    let me = [10, 0, 0, 2];
    let peer = [10, 0, 0, 9];
    for pad in [0x00, 0x60, 0xff] {
        let grh = ipv4_grh(pad, peer, me, 63, 0x28);
        let mut asked = None;
        let a = init_ah_from_wc(1, &WC, Some(&grh), |gid, kind| {
            asked = Some((*gid, kind));
            Ok(5)
        })
        .unwrap();
        assert_eq!(asked, Some((ipv4_mapped(&me), GidKind::RoceV2)), "pad {pad:#x}");
        let r = a.grh.unwrap();
        assert_eq!(r.dgid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 9]);
        assert_eq!((r.sgid_index, r.hop_limit, r.traffic_class), (5, 63, 0x28));
        assert_eq!((a.dlid, a.sl, a.src_path_bits, a.port_num, a.static_rate), (0x22, 3, 4, 1, 0));
    }
}

#[test]
fn ipv6_forms_pick_the_gid_type_from_next_hdr() {
    let sgid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
    let dgid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9];
    for (next, kind) in [(17, GidKind::RoceV2), (0x1b, GidKind::IbOrRoceV1)] {
        let grh = ipv6_grh(0xb8, 0x12345, next, 7, sgid, dgid);
        let a = init_ah_from_wc(2, &WC, Some(&grh), |gid, k| {
            assert_eq!((*gid, k), (dgid, kind));
            Ok(0)
        })
        .unwrap();
        let r = a.grh.unwrap();
        assert_eq!((r.dgid, r.flow_label, r.traffic_class, r.hop_limit), (sgid, 0x12345, 0xb8, 7));
    }
    let grh = ipv6_grh(0, 0, 6, 7, sgid, dgid);
    let e = init_ah_from_wc(1, &WC, Some(&grh), |_, _| Ok(0)).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::Unsupported, Some(Errno::PROTONOSUPPORT)));
}

#[test]
fn version_six_with_a_bad_ipv4_checksum_is_ipv6() {
    // Bytes 20.. look like an IPv4 header (0x45) but the checksum is wrong:
    // the 40 bytes are taken as an IPv6 header.
    let mut grh = ipv6_grh(0, 0, 17, 1, [1; 16], [2; 16]);
    grh[20] = 0x45;
    let a = init_ah_from_wc(1, &WC, Some(&grh), |g, k| {
        assert_eq!((*g, k), ([2u8; 16], GidKind::RoceV2));
        Ok(1)
    })
    .unwrap()
    .grh
    .unwrap();
    // Byte 20 of the 40 is byte 12 of the IPv6 source GID.
    let mut sgid = [1u8; 16];
    sgid[12] = 0x45;
    assert_eq!((a.dgid, a.hop_limit, a.sgid_index), (sgid, 1, 1));
    // With a correct checksum it is IPv4 even though byte 0 says 6.
    let mut grh = ipv4_grh(0x60, [1, 2, 3, 4], [5, 6, 7, 8], 9, 0);
    grh[0] = 0x60;
    let a = init_ah_from_wc(1, &WC, Some(&grh), |_, k| {
        assert_eq!(k, GidKind::RoceV2);
        Ok(0)
    });
    assert_eq!(a.unwrap().grh.unwrap().dgid[12..], [1, 2, 3, 4]);
}

#[test]
fn refusals() {
    // Multicast destinations are not in the GID table.
    let grh = ipv4_grh(0, [1, 2, 3, 4], [224, 0, 0, 1], 1, 0);
    let e = init_ah_from_wc(1, &WC, Some(&grh), |_, _| panic!("no lookup")).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_init_ah_from_wc", ErrorKind::InvalidArgument));
    let mut mc = [0u8; 16];
    mc[0] = 0xff;
    let grh = ipv6_grh(0, 0, 17, 1, [1; 16], mc);
    assert_eq!(init_ah_from_wc(1, &WC, Some(&grh), |_, _| Ok(0)).unwrap_err().kind(), ErrorKind::InvalidArgument);
    // Neither IPv6 nor IPv4.
    let grh = [0u8; GRH_LEN];
    assert_eq!(init_ah_from_wc(1, &WC, Some(&grh), |_, _| Ok(0)).unwrap_err().kind(), ErrorKind::Unsupported);
    // GRH flag without the bytes.
    assert_eq!(init_ah_from_wc(1, &WC, None, |_, _| Ok(0)).unwrap_err().kind(), ErrorKind::InvalidArgument);
    // The lookup's error is passed on.
    let grh = ipv4_grh(0, [1, 2, 3, 4], [5, 6, 7, 8], 1, 0);
    let e = init_ah_from_wc(1, &WC, Some(&grh), |_, _| Err(Error::new("x", ErrorKind::NoDevice))).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoDevice);
}

#[test]
fn without_grh_only_the_lid_fields_are_set() {
    let wc = WcInfo { wc_flags: 0, ..WC };
    let a = init_ah_from_wc(1, &wc, None, |_, _| panic!("no lookup")).unwrap();
    assert_eq!(a, AhAttr { grh: None, dlid: 0x22, sl: 3, src_path_bits: 4, static_rate: 0, port_num: 1 });
}
