//! Issue 24 item 2 on rxe0 and siw0: a region registered with an I/O
//! virtual address (`Mr::reg_iova`) is addressed by `Mr::iova()` both by
//! local scatter/gather entries (`Sge::from_mr`) and by peers' RDMA WRITE
//! and READ. rxe checks SGEs against `[iova, iova + len)` (an SGE at the
//! buffer's address was a local protection error); siw ignores the iova
//! and addresses the region by its buffer address, which `Mr::iova()`
//! reports there (a peer using the requested iova got a remote access
//! error).

use super::rig::{init_attr, is_siw, open_dev, rc_pair_on, wait, ALL_ACCESS, CAP};
use verbs::wr::{RecvWr, SendFlags, SendWr, Sge};
use verbs::{Cq, Mr, Pd, WcStatus};

const SIG: SendFlags = SendFlags::SIGNALED;

fn reg_iova_region_is_addressed_by_its_iova(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 32, None, 0).unwrap();
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&cq, &cq, None, CAP), init_attr(&cq, &cq, None, CAP));
    // B's region: an I/O virtual address far from the buffer, same offset
    // in the page (the kernel's rule).
    let buf = vec![0u8; 4096];
    let page_off = buf.as_ptr() as u64 & 0xfff;
    let want_iova = 0x7_7700_0000 + page_off;
    let bmr = Mr::reg_iova(&pd, buf, want_iova, ALL_ACCESS).expect("ibv_reg_mr_iova");
    assert_ne!(bmr.addr(), want_iova);
    if is_siw(&ctx) {
        assert_eq!(bmr.iova(), bmr.addr(), "siw addresses the region by its buffer address");
    } else {
        assert_eq!(bmr.iova(), want_iova);
    }
    let mut amr = Mr::reg(&pd, vec![0u8; 4096], ALL_ACCESS).unwrap();
    amr.write_at(0, b"sent-into-an-iova-region").unwrap();

    // Local SGE, receive side: B receives A's SEND into its iova region.
    let rs = [Sge::from_mr(&bmr, 64, 64)];
    b.post_recv(&[RecvWr::new(1, &rs)]).unwrap();
    let ss = [Sge::from_mr(&amr, 0, 24)];
    a.post_send(&[SendWr::send(2, &ss).flags(SIG)]).unwrap();
    let mut c = wait(&cq, 2);
    c.sort_by_key(|w| w.wr_id());
    assert_eq!((c[0].wr_id(), c[0].status(), c[0].byte_len()), (1, WcStatus::Success, 24), "{c:?}");
    assert_eq!(c[1].status(), WcStatus::Success, "{c:?}");
    let mut got = [0u8; 24];
    bmr.read_at(64, &mut got).unwrap();
    assert_eq!(&got, b"sent-into-an-iova-region");

    // Local SGE, send side: B sends from its iova region to A.
    let rs = [Sge::from_mr(&amr, 512, 64)];
    a.post_recv(&[RecvWr::new(3, &rs)]).unwrap();
    let ss = [Sge::from_mr(&bmr, 64, 24)];
    b.post_send(&[SendWr::send(4, &ss).flags(SIG)]).unwrap();
    let mut c = wait(&cq, 2);
    c.sort_by_key(|w| w.wr_id());
    assert_eq!((c[0].wr_id(), c[0].status(), c[0].byte_len()), (3, WcStatus::Success, 24), "{c:?}");
    assert_eq!(c[1].status(), WcStatus::Success, "{c:?}");
    amr.read_at(512, &mut got).unwrap();
    assert_eq!(&got, b"sent-into-an-iova-region");

    // A peer's RDMA WRITE and READ addressed by iova + offset.
    a.post_send(&[SendWr::rdma_write(5, &[], bmr.iova() + 1024, bmr.rkey()).inline(b"written-at-iova").flags(SIG)])
        .unwrap();
    let c = wait(&cq, 1);
    assert_eq!((c[0].wr_id(), c[0].status()), (5, WcStatus::Success), "{c:?}");
    let mut w = [0u8; 15];
    bmr.read_at(1024, &mut w).unwrap();
    assert_eq!(&w, b"written-at-iova");
    let ls = [Sge::from_mr(&amr, 2048, 15)];
    a.post_send(&[SendWr::rdma_read(6, &ls, bmr.iova() + 1024, bmr.rkey()).flags(SIG)]).unwrap();
    let c = wait(&cq, 1);
    assert_eq!((c[0].wr_id(), c[0].status()), (6, WcStatus::Success), "{c:?}");
    amr.read_at(2048, &mut w).unwrap();
    assert_eq!(&w, b"written-at-iova");
}

twins!(reg_iova_region_is_addressed_by_its_iova: rxe_reg_iova_region_is_addressed_by_its_iova, siw_reg_iova_region_is_addressed_by_its_iova);
