//! ibv_create_srq / ibv_modify_srq / ibv_query_srq / ibv_destroy_srq on rxe
//! and siw.

use super::common::{rxe_name, siw_name};
use verbs::srq::{Srq, SrqAttr, SrqInitAttr, SrqModify};
use verbs::{discovery::devices, Context, ErrorKind, Pd};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).expect("ibv_open_device")
}

fn init(max_wr: u32) -> SrqInitAttr {
    SrqInitAttr { max_wr, max_sge: 1, srq_limit: 0 }
}

fn create_query_limit_destroy(name: &str) {
    let ctx = open(name);
    let pd = Pd::alloc(&ctx).unwrap();
    let srq = Srq::create(&pd, init(16)).expect("ibv_create_srq");
    assert!(srq.max_wr() >= 16 && srq.max_sge() >= 1, "{srq:?}");
    let q = srq.query().expect("ibv_query_srq");
    assert_eq!(q, SrqAttr { max_wr: srq.max_wr(), max_sge: srq.max_sge(), srq_limit: 0 });
    // Arm the limit and read it back.
    srq.modify(SrqModify { srq_limit: Some(4), ..Default::default() }).expect("ibv_modify_srq limit");
    assert_eq!(srq.query().unwrap().srq_limit, 4);
    // A second SRQ gets its own handle; both go away (explicitly / by Drop).
    let other = Srq::create(&pd, init(8)).unwrap();
    assert_ne!(other.handle(), srq.handle());
    assert_eq!(srq.destroy().expect("ibv_destroy_srq"), 0, "no async event was delivered");
    drop(other);
    pd.destroy().expect("PD free once its SRQs are gone");
}

fn bad_args(name: &str) {
    let ctx = open(name);
    let dev = ctx.query_device().unwrap();
    let pd = Pd::alloc(&ctx).unwrap();
    // max_wr 0 is the provider's and kernel's to judge (libibverbs checks
    // nothing): mlx5 sizes the queue for max_wr + 1 and grants an SRQ that
    // holds no receive, the rxe and siw kernels answer EINVAL.
    #[cfg(feature = "mlx5")]
    let takes_empty = ctx.provider() == verbs::ProviderKind::Mlx5;
    #[cfg(not(feature = "mlx5"))]
    let takes_empty = false;
    if takes_empty {
        let srq = Srq::create(&pd, init(0)).expect("ibv_create_srq max_wr 0 on mlx5");
        assert_eq!(srq.max_wr(), 0, "{srq:?}");
        assert_eq!(srq.query().unwrap().max_wr, 0);
        srq.destroy().expect("ibv_destroy_srq");
    } else {
        let e = Srq::create(&pd, init(0)).unwrap_err();
        assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_create_srq", ErrorKind::InvalidArgument, Some(verbs::error::Errno::INVAL)), "{e}");
    }
    let e = Srq::create(&pd, init(dev.base().max_srq_wr + 1)).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_srq", ErrorKind::InvalidArgument), "{e}");
    assert!(e.errno().is_some(), "refused by the kernel: {e}");
    let big_sge = SrqInitAttr { max_wr: 4, max_sge: dev.base().max_srq_sge + 1, srq_limit: 0 };
    let e = Srq::create(&pd, big_sge).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_srq", ErrorKind::InvalidArgument), "{e}");
    // A limit above the queue size is refused and nothing changes.
    let srq = Srq::create(&pd, init(16)).unwrap();
    let before = srq.query().unwrap();
    let e = srq.modify(SrqModify { srq_limit: Some(srq.max_wr() * 4 + 64), ..Default::default() }).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_modify_srq", ErrorKind::InvalidArgument), "{e}");
    assert_eq!(srq.query().unwrap(), before);
    let e = srq.modify(SrqModify { max_wr: Some(0), ..Default::default() }).unwrap_err();
    assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_modify_srq", ErrorKind::InvalidArgument, None));
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_srq_create_query_limit_destroy() {
    create_query_limit_destroy(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_srq_create_query_limit_destroy() {
    create_query_limit_destroy(&siw_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_srq_bad_args() {
    bad_args(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_srq_bad_args() {
    bad_args(&siw_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_srq_resize_remaps_the_ring() {
    let ctx = open(&rxe_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let srq = Srq::create(&pd, init(16)).unwrap();
    let slots = srq.ring_slots().unwrap();
    assert!(slots > srq.max_wr());
    srq.modify(SrqModify { max_wr: Some(200), ..Default::default() }).expect("ibv_modify_srq max_wr");
    assert!(srq.max_wr() >= 200, "max_wr after resize: {}", srq.max_wr());
    assert_eq!(srq.query().unwrap().max_wr, srq.max_wr());
    let slots2 = srq.ring_slots().unwrap();
    assert!(slots2 > 200 && slots2 > slots, "the new mapping is the bigger ring: {slots2}");
    srq.destroy().expect("destroy after resize");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_srq_resize_unsupported() {
    let ctx = open(&siw_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let srq = Srq::create(&pd, init(16)).unwrap();
    let n = srq.ring_slots().unwrap();
    assert!(n >= srq.max_wr(), "mapped RQEs {n} cover max_wr {}", srq.max_wr());
    let before = srq.query().unwrap();
    let e = srq.modify(SrqModify { max_wr: Some(64), ..Default::default() }).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_modify_srq", ErrorKind::Unsupported), "{e}");
    assert_eq!(srq.query().unwrap(), before);
}
