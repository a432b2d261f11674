//! ibv_create_ah / ibv_destroy_ah / ibv_init_ah_from_wc / ibv_create_ah_from_wc:
//! RoCE v2 addresses on rxe, the Unsupported answer on siw (iWARP has no AHs).

use super::common::{empty_gid_index, gid_index, rxe_name, siw_name};
use verbs::ah::{from_wc::WC_GRH, WcInfo, GRH_LEN};
use verbs::{discovery::devices, Ah, AhAttr, Context, ErrorKind, GlobalRoute, Pd};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).unwrap()
}

/// An address on port 1 towards `dgid` from the RoCE v2 source GID.
fn roce_v2_attr(dgid: [u8; 16]) -> AhAttr {
    AhAttr {
        grh: Some(GlobalRoute { dgid, flow_label: 0, sgid_index: gid_index() as u8, hop_limit: 64, traffic_class: 0 }),
        port_num: 1,
        ..Default::default()
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_create_destroy_ah() {
    let ctx = open(&rxe_name());
    let pd = Pd::alloc(&ctx).unwrap();
    // Our own RoCE v2 GID: the kernel resolves its MAC without ARP.
    let me = ctx.query_gid(1, gid_index()).unwrap();
    let attr = roce_v2_attr(me);
    let ahs: Vec<Ah<'_>> = (0..4).map(|_| Ah::create(&pd, &attr).expect("ibv_create_ah")).collect();
    let mut nums: Vec<u32> = ahs.iter().map(Ah::ah_num).collect();
    nums.sort_unstable();
    nums.dedup();
    assert_eq!(nums.len(), 4, "rxe gives each AH its own ah_num: {nums:?}");
    assert!(nums.iter().all(|n| *n != 0), "kernel ≥ 5.12 returns nonzero ah_num");
    assert_eq!(ahs[0].attr(), &attr);
    let mut it = ahs.into_iter();
    it.next().unwrap().destroy().expect("ibv_destroy_ah");
    drop(it);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_create_ah_bad_args() {
    let ctx = open(&rxe_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let me = ctx.query_gid(1, gid_index()).unwrap();
    // Port 0 does not exist.
    let e = Ah::create(&pd, &AhAttr { port_num: 0, ..roce_v2_attr(me) }).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_ah", ErrorKind::InvalidArgument), "{e}");
    // RoCE needs a GRH.
    let e = Ah::create(&pd, &AhAttr { grh: None, ..roce_v2_attr(me) }).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_ah", ErrorKind::InvalidArgument), "{e}");
    // A source GID index whose entry is empty.
    let mut attr = roce_v2_attr(me);
    attr.grh.as_mut().unwrap().sgid_index = empty_gid_index(&ctx);
    let e = Ah::create(&pd, &attr).unwrap_err();
    assert_eq!(e.verb(), "ibv_create_ah");
    assert!(e.errno().is_some(), "the kernel refused it: {e}");
}

/// The first 40 bytes of a RoCE v2 / IPv4 receive from `saddr` to `daddr`.
fn ipv4_grh(saddr: [u8; 4], daddr: [u8; 4], ttl: u8) -> [u8; GRH_LEN] {
    let mut g = [0u8; GRH_LEN];
    let h = &mut g[20..];
    h[0] = 0x45;
    h[2..4].copy_from_slice(&60u16.to_be_bytes());
    h[8] = ttl;
    h[9] = 17;
    h[12..16].copy_from_slice(&saddr);
    h[16..20].copy_from_slice(&daddr);
    let mut sum: u32 = (0..10).map(|i| u32::from(u16::from_be_bytes([h[2 * i], h[2 * i + 1]]))).sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    h[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
    g
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_ah_from_wc() {
    let ctx = open(&rxe_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let me = ctx.query_gid(1, gid_index()).unwrap();
    assert_eq!(me[..12], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], "GID {} is IPv4-mapped", gid_index());
    let ip: [u8; 4] = me[12..].try_into().unwrap();
    // A datagram we sent ourselves (loopback): source and destination are our address.
    let wc = WcInfo { src_qp: 0x99, slid: 0, sl: 0, dlid_path_bits: 0, wc_flags: WC_GRH, pkey_index: 0 };
    let grh = ipv4_grh(ip, ip, 61);
    let attr = ctx.init_ah_from_wc(1, &wc, Some(&grh)).expect("ibv_init_ah_from_wc");
    let r = attr.grh.expect("is_global");
    assert_eq!(r.dgid, me);
    assert_eq!(u32::from(r.sgid_index), gid_index(), "the RoCE v2 GID of our address");
    assert_eq!(r.hop_limit, 61);
    assert_eq!(attr.port_num, 1);
    let ah = Ah::create_from_wc(&pd, &wc, Some(&grh), 1).expect("ibv_create_ah_from_wc");
    assert_ne!(ah.ah_num(), 0);
    assert_eq!(ah.attr(), &attr);

    // Sent to an address this host does not have: no GID matches.
    let grh = ipv4_grh(ip, [192, 0, 2, 1], 64);
    let e = ctx.init_ah_from_wc(1, &wc, Some(&grh)).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_init_ah_from_wc", ErrorKind::InvalidArgument));
    let e = Ah::create_from_wc(&pd, &wc, Some(&grh), 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_create_ah_unsupported() {
    let ctx = open(&siw_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let gid = ctx.query_gid(1, 0).unwrap();
    let attr = AhAttr {
        grh: Some(GlobalRoute { dgid: gid, sgid_index: 0, hop_limit: 64, ..Default::default() }),
        port_num: 1,
        ..Default::default()
    };
    let e = Ah::create(&pd, &attr).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_ah", ErrorKind::Unsupported), "{e:?}");
    assert!(e.to_string().starts_with("ibv_create_ah: operation not supported"), "{e}");
}
