//! ibv_attach_mcast / ibv_detach_mcast on a UD QP (rxe); siw has no UD QPs.

use super::common::{gid_index, rxe_name, siw_name};
use verbs::qp::{QpCap, QpInitAttr, UdInitAttr, UdQp};
use verbs::{discovery::devices, Context, Cq, ErrorKind, Pd};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).expect("ibv_open_device")
}

const CAP: QpCap =
    QpCap { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };

/// 224.0.1.1 as an IPv4-mapped RoCE multicast GID: ff0e::ffff:e000:0101.
const GROUP: [u8; 16] = [0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xe0, 0x00, 0x01, 0x01];
const GROUP2: [u8; 16] = [0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xe0, 0x00, 0x01, 0x02];

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_attach_detach_mcast() {
    let ctx = open(&rxe_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 8, None, 0).unwrap();
    let init = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap: CAP, sq_sig_all: false };
    let qp = UdQp::create(&pd, init).unwrap();
    let qp = qp.into_init(UdInitAttr { pkey_index: 0, port_num: 1, qkey: 0x1111 }).unwrap();
    qp.attach_mcast(&GROUP, 0).expect("ibv_attach_mcast");
    qp.attach_mcast(&GROUP2, 0).expect("second group");
    qp.detach_mcast(&GROUP, 0).expect("ibv_detach_mcast");
    // Not a member any more: the kernel refuses a second detach.
    let e = qp.detach_mcast(&GROUP, 0).unwrap_err();
    assert_eq!(e.verb(), "ibv_detach_mcast");
    assert!(e.errno().is_some(), "refused by the kernel: {e}");
    qp.detach_mcast(&GROUP2, 0).expect("detach the other group");
    // A unicast GID (the port's own) is not a group.
    let own = ctx.query_gid(1, gid_index()).unwrap();
    let e = qp.attach_mcast(&own, 0).unwrap_err();
    assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_attach_mcast", ErrorKind::InvalidArgument, None));
    // The kernel refuses to destroy a QP that is still in a group (EBUSY):
    // the error is reported and the QP handed back, usable.
    qp.attach_mcast(&GROUP, 0).unwrap();
    let e = qp.destroy().unwrap_err();
    assert_eq!((e.error.verb(), e.error.kind()), ("ibv_destroy_qp", ErrorKind::Busy), "{}", e.error);
    let qp = e.object;
    qp.detach_mcast(&GROUP, 0).expect("detach after the refused destroy");
    qp.destroy().expect("destroy once detached");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_mcast_unsupported() {
    // Multicast needs a UD QP; siw refuses to create one.
    let ctx = open(&siw_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 8, None, 0).unwrap();
    let init = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap: CAP, sq_sig_all: false };
    let e = UdQp::create(&pd, init).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_qp", ErrorKind::Unsupported), "{e}");
}
