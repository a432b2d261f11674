//! XRC on devices without it: ibv_open_xrcd and XRC send-side QPs must come
//! back as Unsupported errors naming the verb, on rxe and on siw.
//! (ibv_open_qp and XRC SRQs need an XRC domain, which these devices never
//! hand out, so they cannot be reached here.)

use super::common::{rxe_name, siw_name};
use verbs::qp::{QpCap, QpInitAttr, QueuePair, XrcSend};
use verbs::xrc::{Xrcd, XrcdFlags};
use verbs::{discovery::devices, Context, Cq, ErrorKind, Pd};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).expect("ibv_open_device")
}

fn refused(name: &str) {
    let ctx = open(name);
    let e = Xrcd::open(&ctx, None, XrcdFlags::CREATE).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_open_xrcd", ErrorKind::Unsupported), "{e}");
    assert!(e.errno().is_some(), "the kernel was asked: {e}");
    // Bad argument: a private domain must be created.
    let e = Xrcd::open(&ctx, None, XrcdFlags::empty()).unwrap_err();
    assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_open_xrcd", ErrorKind::InvalidArgument, None));
    // The send side of XRC needs only a PD, so it reaches the driver.
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 8, None, 0).unwrap();
    let cap = QpCap { max_send_wr: 4, max_send_sge: 1, ..Default::default() };
    let init = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false };
    let e = QueuePair::<XrcSend, _>::create(&pd, init).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_qp", ErrorKind::Unsupported), "{e}");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_xrc_unsupported() {
    refused(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_xrc_unsupported() {
    refused(&siw_name());
}
