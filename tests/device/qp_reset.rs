//! Issue 24 item 4 on rxe0: a QP moved to RESET leaves none of its
//! completions in its CQs (rdma-core's hardware providers clean them,
//! `mlx5_cq_clean`; rdma-core's `test_mr_rereg_pd` brings a QP back from
//! ERR and then expects the first completion to be a new one, not a
//! flushed one of the QP's earlier life). Another QP's completions in the
//! same CQ stay, in order.

use super::rig::{init_attr, open_rxe, rc_pair, wait, ALL_ACCESS, CAP};
use verbs::wr::{RecvWr, SendFlags, SendWr, Sge};
use verbs::{Cq, Mr, Pd, Wc};

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_reset_drops_the_qps_completions_and_keeps_the_others() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let scq = Cq::create(&ctx, 16, None, 0).unwrap();
    let rcq = Cq::create(&ctx, 16, None, 0).unwrap();
    let (mut a1, mut b1) = rc_pair(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let (mut a2, mut b2) = rc_pair(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let mr = Mr::reg(&pd, vec![0u8; 4096], ALL_ACCESS).unwrap();
    let (r1, r2) = ([Sge::from_mr(&mr, 0, 64)], [Sge::from_mr(&mr, 64, 64)]);
    b1.post_recv(&[RecvWr::new(11, &r1)]).unwrap();
    b2.post_recv(&[RecvWr::new(22, &r2)]).unwrap();
    a1.post_send(&[SendWr::send(1, &[]).inline(b"one").flags(SendFlags::SIGNALED)]).unwrap();
    a2.post_send(&[SendWr::send(2, &[]).inline(b"two").flags(SendFlags::SIGNALED)]).unwrap();
    // A send completes once the responder acknowledged it, which rxe does
    // after it wrote the receive's completion: both are in `rcq` now.
    let s = wait(&scq, 2);
    assert!(s.iter().all(|w| w.status().is_success()), "{s:?}");
    let b1 = b1.into_reset().expect("ibv_modify_qp to RESET");
    let mut out = [Wc::ZERO; 4];
    let n = rcq.poll(&mut out).unwrap();
    let ids: Vec<u64> = out[..n].iter().map(Wc::wr_id).collect();
    assert_eq!(ids, [22], "b1's completion (11) must be gone, b2's (22) kept");
    drop((b1, b2));
}
