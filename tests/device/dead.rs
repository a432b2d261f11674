//! Issue 12 item 9 on rxe0: when the ring cannot be mapped again after a
//! resize (the kernel has already switched to the new one), the CQ or SRQ
//! is dead and says so on every later call, instead of polling 0 forever
//! or accepting receives into a ring the kernel no longer reads. The
//! failure is injected with `providers::rxe::FAIL_NEXT_REMAP` (feature
//! `internals`, which the device suite is built with).

use core::sync::atomic::Ordering;

use super::rig::open_rxe;
use verbs::providers::rxe::FAIL_NEXT_REMAP;
use verbs::srq::{Srq, SrqInitAttr, SrqModify};
use verbs::wr::RecvWr;
use verbs::{Cq, ErrorKind, Pd, Wc};

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cq_whose_remap_failed_is_dead_on_every_call() {
    let ctx = open_rxe();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    // A good resize first: the remap path works when nothing is injected.
    cq.resize(32).expect("ibv_resize_cq");
    let mut wc = [Wc::ZERO; 4];
    assert_eq!(cq.poll(&mut wc).unwrap(), 0);

    FAIL_NEXT_REMAP.store(true, Ordering::Relaxed);
    let e = cq.resize(64).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_resize_cq", ErrorKind::OutOfResources), "{e}");
    assert!(!FAIL_NEXT_REMAP.load(Ordering::Relaxed), "the injected failure was consumed");

    let e = cq.poll(&mut wc).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_poll_cq", ErrorKind::Dead), "{e}");
    assert!(e.to_string().contains("destroy"), "{e}");
    let e = cq.poll_with(4, |_| ()).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_poll_cq", ErrorKind::Dead));
    let e = cq.req_notify(false).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_req_notify_cq", ErrorKind::Dead));
    let e = cq.resize(16).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_resize_cq", ErrorKind::Dead));
    // The kernel object is still there and is destroyed normally.
    cq.destroy().expect("ibv_destroy_cq of a dead CQ");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_srq_whose_remap_failed_is_dead_on_every_call() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let srq = Srq::create(&pd, SrqInitAttr { max_wr: 8, max_sge: 1, srq_limit: 0 }).unwrap();
    srq.post_recv(&[RecvWr::new(1, &[])]).expect("ibv_post_srq_recv before");

    FAIL_NEXT_REMAP.store(true, Ordering::Relaxed);
    let e = srq.modify(SrqModify { max_wr: Some(32), srq_limit: None }).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_modify_srq", ErrorKind::OutOfResources), "{e}");

    let e = srq.post_recv(&[RecvWr::new(2, &[])]).unwrap_err();
    assert_eq!((e.error.verb(), e.kind(), e.index), ("ibv_post_srq_recv", ErrorKind::Dead, 0));
    let e = srq.modify(SrqModify { max_wr: None, srq_limit: Some(2) }).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_modify_srq", ErrorKind::Dead));
    drop(srq);
}
