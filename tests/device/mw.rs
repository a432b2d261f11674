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

/// Issue 24 item 3: a bind names exactly the window it was made from, the
/// one whose borrow keeps the region alive. Safe code once pointed a
/// window's rkey cell at another window (`Mw::set_rkey`), and the bind
/// built from the first window bound the second one over a region only the
/// first borrows: after the first was dropped, nothing kept the region
/// while a window was bound over it (rxe refusing DEREG_MR was all that
/// stood between that and a freed buffer the device writes).
#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_bind_names_exactly_the_window_it_borrows_for() {
    use super::rig::{init_attr, open_rxe, rc_pair_on, wait, ALL_ACCESS, CAP};
    use verbs::wr::{MwBind, SendFlags, SendOp, SendWr};
    use verbs::{AccessFlags, Cq, Mr, WcStatus};
    const SIG: SendFlags = SendFlags::SIGNALED;

    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&cq, &cq, None, CAP), init_attr(&cq, &cq, None, CAP));
    let victim = Mw::alloc(&pd, MwType::Type2).expect("ibv_alloc_mw");
    let victim_key = victim.rkey();
    let mr = Mr::reg(&pd, vec![0u8; 4096], ALL_ACCESS | AccessFlags::MW_BIND).unwrap();
    let addr = mr.addr();
    {
        let decoy = Mw::alloc(&pd, MwType::Type2).expect("ibv_alloc_mw");
        let decoy_key = decoy.rkey();
        // Safe code tries to make the decoy's key cell name the victim.
        let redirected = decoy.set_rkey(victim_key);
        assert_eq!(decoy.rkey(), decoy_key, "{redirected:?}: a window's key cell took another window's key");
        let bind = MwBind::new(&decoy, &mr, addr, 1024, AccessFlags::REMOTE_WRITE);
        b.post_send(&[SendWr::new(1, SendOp::BindMw(bind), &[]).flags(SIG)]).expect("post bind");
        let c = wait(&cq, 1);
        assert_eq!(c[0].status(), WcStatus::Success, "{c:?}");
        assert_eq!(victim.rkey(), victim_key, "the victim's key changed");
        assert_eq!(decoy.rkey() & !0xff, decoy_key & !0xff, "the decoy's key left its index");
        // The decoy is the window bound: a peer writes through its key.
        a.post_send(&[SendWr::rdma_write(2, &[], addr + 8, decoy.rkey()).inline(b"decoy").flags(SIG)]).unwrap();
        let c = wait(&cq, 1);
        assert_eq!(c[0].status(), WcStatus::Success, "{c:?}");
        let mut got = [0u8; 5];
        mr.read_at(8, &mut got).unwrap();
        assert_eq!(&got, b"decoy");
    } // The decoy is deallocated, which unbinds it.
    // No window is bound over the region any more (the victim never was):
    // the kernel deregisters it.
    if let Err(e) = mr.destroy() {
        // Keep the registration (and its buffer) leaked, as Drop would.
        core::mem::forget(e.object);
        panic!("ibv_dereg_mr refused: another window is bound over the region ({:?})", e.error);
    }
    drop(victim);
}
