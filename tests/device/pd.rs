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
