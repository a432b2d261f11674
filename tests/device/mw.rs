//! ibv_alloc_mw / ibv_dealloc_mw: both window types on rxe, Unsupported on siw.

use super::common::{rxe_name, siw_name};
use verbs::{discovery::devices, Context, ErrorKind, Mw, MwType, Pd};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).unwrap()
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_alloc_dealloc_mw() {
    let name = rxe_name();
    let ctx = open(&name);
    let pd = Pd::alloc(&ctx).unwrap();
    let w1 = Mw::alloc(&pd, MwType::Type1).expect("ibv_alloc_mw type 1");
    let w2 = Mw::alloc(&pd, MwType::Type2).expect("ibv_alloc_mw type 2");
    assert_eq!((w1.mw_type(), w2.mw_type()), (MwType::Type1, MwType::Type2));
    assert_ne!(w1.rkey(), w2.rkey(), "each window has its own rkey");
    assert_ne!(w1.handle(), w2.handle());
    w1.destroy().expect("ibv_dealloc_mw");
    drop(w2);
    // Freed windows' resources are reusable: allocate again.
    Mw::alloc(&pd, MwType::Type2).expect("ibv_alloc_mw after dealloc");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_alloc_mw_unsupported() {
    let ctx = open(&siw_name());
    let pd = Pd::alloc(&ctx).unwrap();
    for t in [MwType::Type1, MwType::Type2] {
        let e = Mw::alloc(&pd, t).unwrap_err();
        assert_eq!((e.verb(), e.kind()), ("ibv_alloc_mw", ErrorKind::Unsupported), "{e:?}");
    }
}
