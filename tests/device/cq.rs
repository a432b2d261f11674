//! ibv_create_cq / ibv_resize_cq / ibv_req_notify_cq / ibv_ack_cq_events /
//! ibv_destroy_cq on rxe and siw, with the ring mapping checked.

use super::common::{rxe_name, siw_name};
use verbs::{discovery::devices, Context, Cq, ErrorKind};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).expect("ibv_open_device")
}

fn create_and_destroy(name: &str) {
    let ctx = open(name);
    let cq = Cq::create(&ctx, 100, None, 0).expect("ibv_create_cq");
    assert!(cq.cqe() >= 100, "actual cqe {} < requested 100", cq.cqe());
    let cq2 = Cq::create(&ctx, 1, None, 0).expect("ibv_create_cq cqe=1");
    assert!(cq2.cqe() >= 1);
    assert_ne!(cq.handle(), cq2.handle());
    assert_ne!(cq.user_handle(), cq2.user_handle());
    let d = cq.destroy().expect("ibv_destroy_cq");
    assert_eq!(d.comp_events_reported, 0, "no event was ever generated");
    assert_eq!(d.async_events_reported, 0);
    drop(cq2); // destroyed by Drop
}

fn bad_args(name: &str) {
    let ctx = open(name);
    let max_cqe = ctx.query_device().unwrap().base().max_cqe;
    let e = Cq::create(&ctx, 0, None, 0).unwrap_err();
    assert_eq!(
        (e.verb(), e.kind()),
        ("ibv_create_cq", ErrorKind::InvalidArgument)
    );
    assert_eq!(e.errno(), None, "rejected before the kernel");
    let e = Cq::create(&ctx, max_cqe + 1, None, 0).unwrap_err();
    assert_eq!(
        (e.verb(), e.kind()),
        ("ibv_create_cq", ErrorKind::InvalidArgument),
        "{e}"
    );
    assert!(e.errno().is_some(), "the kernel refused cqe > max_cqe: {e}");
    let e = Cq::create(&ctx, 16, None, ctx.num_comp_vectors()).unwrap_err();
    assert_eq!(
        (e.verb(), e.kind()),
        ("ibv_create_cq", ErrorKind::InvalidArgument)
    );
    // The largest legal size works.
    let big = Cq::create(&ctx, max_cqe, None, 0).expect("ibv_create_cq max_cqe");
    assert!(big.cqe() >= max_cqe);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cq_create_destroy() {
    create_and_destroy(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_cq_create_destroy() {
    create_and_destroy(&siw_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cq_bad_args() {
    bad_args(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_cq_bad_args() {
    bad_args(&siw_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cq_ring_matches_cqe_and_resize_remaps() {
    let ctx = open(&rxe_name());
    let cq = Cq::create(&ctx, 10, None, 0).unwrap();
    // rxe sizes the ring to hold cqe entries plus the one free slot.
    let slots = cq.ring_slots().unwrap();
    assert!(
        slots > cq.cqe(),
        "ring slots {slots} must exceed cqe {}",
        cq.cqe()
    );
    assert!(slots.is_power_of_two());
    cq.resize(300).expect("ibv_resize_cq");
    assert!(cq.cqe() >= 300, "cqe after resize {}", cq.cqe());
    let slots2 = cq.ring_slots().unwrap();
    assert!(
        slots2 > cq.cqe(),
        "new mapping reflects the new size: {slots2}"
    );
    assert!(slots2 > slots);
    // Bad sizes: 0 (user side) and beyond max_cqe (kernel); the CQ is unchanged.
    let before = cq.cqe();
    let e = cq.resize(0).unwrap_err();
    assert_eq!(
        (e.verb(), e.kind()),
        ("ibv_resize_cq", ErrorKind::InvalidArgument)
    );
    let max_cqe = ctx.query_device().unwrap().base().max_cqe;
    let e = cq.resize(max_cqe + 1).unwrap_err();
    assert_eq!(
        (e.verb(), e.kind()),
        ("ibv_resize_cq", ErrorKind::InvalidArgument),
        "{e}"
    );
    assert_eq!(cq.cqe(), before);
    assert_eq!(cq.ring_slots().unwrap(), slots2);
    cq.destroy().expect("ibv_destroy_cq after resize");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_cq_resize_unsupported() {
    let ctx = open(&siw_name());
    let cq = Cq::create(&ctx, 10, None, 0).unwrap();
    let before = cq.cqe();
    let e = cq.resize(100).unwrap_err();
    assert_eq!(
        (e.verb(), e.kind()),
        ("ibv_resize_cq", ErrorKind::Unsupported)
    );
    assert_eq!(cq.cqe(), before);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cq_req_notify() {
    let ctx = open(&rxe_name());
    let cq = Cq::create(&ctx, 10, None, 0).unwrap();
    cq.req_notify(false).expect("ibv_req_notify_cq");
    cq.req_notify(true).expect("ibv_req_notify_cq solicited");
    assert_eq!(cq.notify_flags(), None);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_cq_req_notify_sets_mapped_flags() {
    let ctx = open(&siw_name());
    let cq = Cq::create(&ctx, 10, None, 0).unwrap();
    assert_eq!(cq.notify_flags(), Some(0), "disarmed after create");
    cq.req_notify(true).unwrap();
    assert_eq!(cq.notify_flags(), Some(1), "SIW_NOTIFY_SOLICITED");
    cq.req_notify(false).unwrap();
    assert_eq!(
        cq.notify_flags(),
        Some(3),
        "SOLICITED | NEXT_COMPLETION"
    );
    assert!(cq.ring_slots().is_some_and(|n| n >= 10), "the CQE array");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cq_ack_more_than_received_is_rejected() {
    let ctx = open(&rxe_name());
    let cq = Cq::create(&ctx, 10, None, 0).unwrap();
    assert_eq!(cq.unacked_events(), 0);
    cq.ack_events(0).expect("acking nothing is fine");
    let e = cq.ack_events(1).unwrap_err();
    assert_eq!(
        (e.verb(), e.kind()),
        ("ibv_ack_cq_events", ErrorKind::InvalidArgument)
    );
    assert_eq!(cq.unacked_events(), 0);
}

fn with_channel(name: &str) {
    use verbs::cq::get_cq_event;
    use verbs::CompChannel;
    let ctx = open(name);
    let ch = CompChannel::create(&ctx).expect("ibv_create_comp_channel");
    ch.set_nonblocking(true).unwrap();
    let cq = Cq::create(&ctx, 16, Some(&ch), 0).expect("ibv_create_cq with a channel");
    let plain = Cq::create(&ctx, 16, None, 0).unwrap();
    assert!(cq.channel().is_some() && plain.channel().is_none());
    cq.req_notify(false).expect("ibv_req_notify_cq");
    // Armed, but no completion happened: no event, and nothing counted.
    let e = get_cq_event(&ch, &[&cq, &plain]).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_get_cq_event", ErrorKind::WouldBlock), "{e}");
    assert_eq!(cq.unacked_events(), 0);
    let e = Cq::create(&ctx, 16, Some(&ch), ctx.num_comp_vectors()).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_cq", ErrorKind::InvalidArgument));
    let d = cq.destroy().expect("ibv_destroy_cq on a channel");
    assert_eq!(d.comp_events_reported, 0);
    ch.destroy(); // the CQ that borrowed it is gone
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cq_with_channel() {
    with_channel(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_cq_with_channel() {
    with_channel(&siw_name());
}
