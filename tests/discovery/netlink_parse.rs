//! The public netlink reply parsers, on replies laid out the way the
//! kernel's nldev.c writes them (built with `NlWriter`), and on damaged or
//! random bytes.

use super::sysfs_parse::xorshift;
use verbs::abi::netlink::*;
use verbs::discovery::netlink::*;
use verbs::discovery::nlsock::NlWriter;
use verbs::ErrorKind;

const GET: u16 = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
const CHARDEV: u16 = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV);
const SYS: u16 = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET);

/// One device message as `fill_dev_info` writes it (attribute order and
/// payload types of nldev.c), with a PAD attribute as `nla_put_u64_64bit`
/// adds on strict-alignment machines.
fn put_device(
    w: &mut NlWriter<'_>,
    index: u32,
    name: &str,
    guid: u64,
    node_type: u8,
    fw: Option<&str>,
) {
    w.begin(GET, NLM_F_MULTI, 7).unwrap();
    w.attr_u32(RDMA_NLDEV_ATTR_DEV_INDEX, index).unwrap();
    w.attr_str(RDMA_NLDEV_ATTR_DEV_NAME, name).unwrap();
    w.attr_u32(RDMA_NLDEV_ATTR_PORT_INDEX, 1).unwrap();
    w.attr(RDMA_NLDEV_ATTR_PAD, &[]).unwrap();
    w.attr_u64(RDMA_NLDEV_ATTR_CAP_FLAGS, 0x1234).unwrap();
    if let Some(fw) = fw {
        w.attr_str(RDMA_NLDEV_ATTR_FW_VERSION, fw).unwrap();
    }
    w.attr_u64(RDMA_NLDEV_ATTR_NODE_GUID, guid).unwrap();
    w.attr_u64(RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, guid).unwrap();
    w.attr(RDMA_NLDEV_ATTR_DEV_NODE_TYPE, &[node_type]).unwrap();
    w.attr_str(RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce").unwrap();
    w.end().unwrap();
}

fn dump() -> Vec<u8> {
    let mut buf = vec![0u8; 1024];
    let mut w = NlWriter::new(&mut buf);
    put_device(&mut w, 0, "rxe0", 0x5054_00ff_fe12_3456, 1, None);
    put_device(&mut w, 3, "siw0", 0x5254_0012_3456_0000, 4, Some("0.1"));
    w.begin(NLMSG_DONE, NLM_F_MULTI, 7)
        .unwrap()
        .attr(0, &0u32.to_ne_bytes())
        .unwrap()
        .end()
        .unwrap();
    w.bytes().to_vec()
}

#[test]
fn device_dump_is_parsed() {
    let r = parse_dev_get_reply(&dump()).unwrap();
    assert!(r.done);
    assert_eq!(r.devices.len(), 2);
    let rxe = &r.devices[0];
    assert_eq!(
        (rxe.index, rxe.name.as_str(), rxe.num_ports, rxe.node_type),
        (0, "rxe0", 1, 1)
    );
    assert_eq!(rxe.node_guid, 0x5054_00ff_fe12_3456);
    assert_eq!(rxe.sys_image_guid, Some(0x5054_00ff_fe12_3456));
    assert_eq!(rxe.protocol.as_deref(), Some("roce"));
    assert_eq!(rxe.fw_version, None);
    assert_eq!(r.devices[1].fw_version.as_deref(), Some("0.1"));
    assert_eq!(r.devices[1].node_type, 4);
}

#[test]
fn dump_without_done_is_not_finished() {
    let mut buf = vec![0u8; 512];
    let mut w = NlWriter::new(&mut buf);
    put_device(&mut w, 0, "rxe0", 1, 1, None);
    let r = parse_dev_get_reply(w.bytes()).unwrap();
    assert!(!r.done);
    assert_eq!(r.devices.len(), 1);
}

#[test]
fn kernel_error_reply_becomes_its_errno() {
    let mut buf = vec![0u8; 128];
    let mut w = NlWriter::new(&mut buf);
    let mut payload = (-libc::EOPNOTSUPP).to_ne_bytes().to_vec();
    payload.extend_from_slice(&[0u8; 16]);
    w.begin(NLMSG_ERROR, 0, 7).unwrap();
    // The nlmsgerr payload has no attributes: write it raw through a
    // zero-type attribute header and patch the header away.
    let bytes = {
        w.end().unwrap();
        let mut v = w.bytes().to_vec();
        v.extend_from_slice(&payload);
        let len = v.len() as u32;
        v[..4].copy_from_slice(&len.to_ne_bytes());
        v
    };
    for parsed in [
        parse_dev_get_reply(&bytes).map(|_| ()),
        parse_chardev_reply(&bytes).map(|_| ()),
        parse_sys_get_reply(&bytes).map(|_| ()),
    ] {
        let e = parsed.unwrap_err();
        assert_eq!(e.errno(), Some(rustix::io::Errno::OPNOTSUPP));
        assert_eq!(e.kind(), ErrorKind::Unsupported);
    }
}

#[test]
fn interrupted_dump_is_eintr() {
    let mut buf = vec![0u8; 64];
    let mut w = NlWriter::new(&mut buf);
    w.begin(GET, NLM_F_MULTI | NLM_F_DUMP_INTR, 1)
        .unwrap()
        .end()
        .unwrap();
    let e = parse_dev_get_reply(w.bytes()).unwrap_err();
    assert_eq!(e.errno(), Some(rustix::io::Errno::INTR));
}

fn chardev_reply(driver_id: Option<&[u8]>) -> Vec<u8> {
    let mut buf = vec![0u8; 256];
    let mut w = NlWriter::new(&mut buf);
    w.begin(CHARDEV, 0, 9).unwrap();
    // huge_encode_dev(MKDEV(231, 192)) = (minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12)
    w.attr_u64(RDMA_NLDEV_ATTR_CHARDEV, (231 << 8) | 192)
        .unwrap();
    w.attr_u64(RDMA_NLDEV_ATTR_CHARDEV_ABI, 2).unwrap();
    w.attr_str(RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs0").unwrap();
    if let Some(id) = driver_id {
        w.attr(RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, id).unwrap();
    }
    w.end().unwrap();
    w.bytes().to_vec()
}

#[test]
fn chardev_reply_gives_name_abi_dev_and_driver_id() {
    let c = parse_chardev_reply(&chardev_reply(Some(&18u32.to_ne_bytes()))).unwrap();
    assert_eq!(
        c,
        NlChardev {
            name: "uverbs0".into(),
            abi: 2,
            dev: (231, 192),
            driver_id: Some(18)
        }
    );
    let c = parse_chardev_reply(&chardev_reply(Some(&14u64.to_ne_bytes()))).unwrap();
    assert_eq!(
        c.driver_id,
        Some(14),
        "a u64 driver id (as the header declares) is accepted too"
    );
    let c = parse_chardev_reply(&chardev_reply(None)).unwrap();
    assert_eq!(c.driver_id, None);
    // Minor numbers above 255 use the high bits of the huge encoding.
    assert_eq!(
        decode_huge_dev((231 << 8) | 0x34 | (0x12 << 20)),
        (231, 0x1234)
    );
}

#[test]
fn sys_get_reply_reports_copy_on_fork() {
    let mut buf = vec![0u8; 128];
    let mut w = NlWriter::new(&mut buf);
    w.begin(SYS, 0, 3)
        .unwrap()
        .attr(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, &[1])
        .unwrap();
    w.attr(RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, &[1])
        .unwrap()
        .end()
        .unwrap();
    assert!(parse_sys_get_reply(w.bytes()).unwrap());
    let mut buf = vec![0u8; 128];
    let mut w = NlWriter::new(&mut buf);
    w.begin(SYS, 0, 3)
        .unwrap()
        .attr(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, &[1])
        .unwrap()
        .end()
        .unwrap();
    assert!(
        !parse_sys_get_reply(w.bytes()).unwrap(),
        "older kernels omit the attribute"
    );
}

#[test]
fn missing_required_attributes_are_malformed() {
    let mut buf = vec![0u8; 256];
    let mut w = NlWriter::new(&mut buf);
    w.begin(GET, NLM_F_MULTI, 1).unwrap();
    w.attr_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 0)
        .unwrap()
        .attr_str(RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")
        .unwrap();
    w.end().unwrap();
    assert_eq!(
        parse_dev_get_reply(w.bytes()).unwrap_err().kind(),
        ErrorKind::Malformed
    );
    // A u32 attribute with a 2-byte payload.
    let mut buf = vec![0u8; 256];
    let mut w = NlWriter::new(&mut buf);
    w.begin(CHARDEV, 0, 1)
        .unwrap()
        .attr(RDMA_NLDEV_ATTR_CHARDEV, &[1, 2])
        .unwrap()
        .end()
        .unwrap();
    assert_eq!(
        parse_chardev_reply(w.bytes()).unwrap_err().kind(),
        ErrorKind::Malformed
    );
    assert_eq!(
        parse_chardev_reply(&[]).unwrap_err().kind(),
        ErrorKind::Malformed
    );
}

#[test]
fn every_truncation_of_a_valid_reply_is_handled() {
    let full = dump();
    for cut in 0..full.len() {
        // Either an error or a partial (not done) result; never a panic and
        // never a claim that the dump finished.
        if let Ok(r) = parse_dev_get_reply(&full[..cut]) {
            assert!(!r.done || cut >= full.len() - 20, "cut at {cut}");
        }
    }
    let cd = chardev_reply(Some(&18u32.to_ne_bytes()));
    for cut in 0..cd.len() {
        let _ = parse_chardev_reply(&cd[..cut]);
    }
}

#[test]
fn random_and_mutated_bytes_never_panic() {
    let valid = dump();
    let mut seed = 0x1234_5678_9abc_def1;
    for round in 0..20_000 {
        let mut bytes = if round % 2 == 0 {
            valid.clone()
        } else {
            (0..(xorshift(&mut seed) % 200) as usize)
                .map(|_| xorshift(&mut seed) as u8)
                .collect()
        };
        for _ in 0..(xorshift(&mut seed) % 4) {
            if !bytes.is_empty() {
                let i = (xorshift(&mut seed) % bytes.len() as u64) as usize;
                bytes[i] = xorshift(&mut seed) as u8;
            }
        }
        let _ = parse_dev_get_reply(&bytes);
        let _ = parse_chardev_reply(&bytes);
        let _ = parse_sys_get_reply(&bytes);
        for a in Attrs::new(&bytes, "fuzz").take(64) {
            let _ = a.map(|(_, p)| (attr_u8(p), attr_u32(p), attr_u64(p), attr_str(p)));
        }
    }
}

#[test]
fn writer_refuses_to_overflow() {
    let mut buf = [0u8; 20];
    let mut w = NlWriter::new(&mut buf);
    w.begin(GET, 0, 1).unwrap();
    assert!(w
        .attr_str(RDMA_NLDEV_ATTR_DEV_NAME, "much too long")
        .is_none());
    let mut w = NlWriter::new(&mut buf);
    assert!(w.attr(1, &[0u8; 70000]).is_none(), "nla_len is 16 bits");
}

#[test]
fn chardev_request_bytes_match_the_kernel_layout() {
    let mut buf = [0u8; 64];
    let mut w = NlWriter::new(&mut buf);
    w.begin(CHARDEV, NLM_F_REQUEST, 0x0102_0304).unwrap();
    w.attr_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 5).unwrap();
    w.attr_str(RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs").unwrap();
    w.end().unwrap();
    let mut want = Vec::new();
    want.extend_from_slice(&36u32.to_ne_bytes()); // 16 + 8 + align4(4 + 7)
    want.extend_from_slice(&5135u16.to_ne_bytes()); // (5 << 10) + 15
    want.extend_from_slice(&1u16.to_ne_bytes()); // NLM_F_REQUEST
    want.extend_from_slice(&0x0102_0304u32.to_ne_bytes());
    want.extend_from_slice(&0u32.to_ne_bytes()); // pid: kernel fills in
    want.extend_from_slice(&8u16.to_ne_bytes());
    want.extend_from_slice(&1u16.to_ne_bytes()); // DEV_INDEX
    want.extend_from_slice(&5u32.to_ne_bytes());
    want.extend_from_slice(&11u16.to_ne_bytes()); // nla_len excludes padding
    want.extend_from_slice(&69u16.to_ne_bytes()); // CHARDEV_TYPE
    want.extend_from_slice(b"uverbs\0\0");
    assert_eq!(w.bytes(), want.as_slice());
}
