//! ibv_alloc_pd / ibv_dealloc_pd on both soft devices.

use super::common::{rxe_name, siw_name};
use verbs::{discovery::devices, Context, Pd};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).unwrap()
}

fn alloc_many(name: &str) {
    let ctx = open(name);
    let pds: Vec<Pd<'_>> = (0..8).map(|_| Pd::alloc(&ctx).expect("ibv_alloc_pd")).collect();
    let mut handles: Vec<u32> = pds.iter().map(Pd::handle).collect();
    handles.sort_unstable();
    handles.dedup();
    assert_eq!(handles.len(), 8, "every PD gets its own kernel handle");
    // Explicit destroy reports success; the rest are destroyed by Drop.
    let mut it = pds.into_iter();
    it.next().unwrap().destroy().expect("ibv_dealloc_pd");
    drop(it);
    // The context is still usable after all PDs are gone.
    Pd::alloc(&ctx).expect("ibv_alloc_pd after dealloc");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_pd_alloc_dealloc() {
    alloc_many(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_pd_alloc_dealloc() {
    alloc_many(&siw_name());
}

/// ibv_alloc_td / ibv_alloc_parent_domain: rxe and siw have neither (as
/// rdma-core's); on mlx5 a parent domain with a thread domain stands for
/// its PD wherever one is taken: a QP, an SRQ and an MR made through it
/// are the PD's (same kernel handle).
fn domains(name: &str) {
    use verbs::qp::{QpCap, QpInitAttr, RcQp};
    use verbs::srq::{Srq, SrqInitAttr};
    use verbs::{AccessFlags, Cq, ErrorKind, Mr, ParentDomain, Td};
    let ctx = open(name);
    let pd = Pd::alloc(&ctx).unwrap();
    if !ctx.provider_caps().parent_domains {
        let e = Td::alloc(&ctx).unwrap_err();
        assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_alloc_td", ErrorKind::Unsupported, None), "{e}");
        let e = ParentDomain::alloc(&pd, None).unwrap_err();
        assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_alloc_parent_domain", ErrorKind::Unsupported, None), "{e}");
        return;
    }
    let td = Td::alloc(&ctx).expect("ibv_alloc_td");
    let other = open(name);
    let foreign = Td::alloc(&other).unwrap();
    let e = ParentDomain::alloc(&pd, Some(&foreign)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let parent = ParentDomain::alloc(&pd, Some(&td)).expect("ibv_alloc_parent_domain");
    assert!(parent.td().is_some());
    assert_eq!(parent.handle(), pd.handle(), "the PD's kernel handle");
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let qp = RcQp::create(&parent, QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false }).expect("QP in the parent domain");
    assert_eq!(qp.pd().handle(), pd.handle());
    let srq = Srq::create(&parent, SrqInitAttr { max_wr: 4, max_sge: 1, srq_limit: 0 }).expect("SRQ in the parent domain");
    let mr = Mr::reg(&parent, vec![0u8; 4096], AccessFlags::LOCAL_WRITE).expect("MR in the parent domain");
    drop((mr, srq, qp));
    parent.destroy();
    td.destroy();
    pd.destroy().expect("the PD is free once its parent domain is gone");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_parent_and_thread_domains() {
    domains(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_parent_and_thread_domains() {
    domains(&siw_name());
}
