// A QP borrows its CQ: the CQ cannot be destroyed while the QP lives.
use verbs::qp::{QpCap, QpInitAttr, RcQp};
use verbs::{Cq, Pd};

fn under<'a>(pd: &'a Pd<'a>, cq: Cq<'a>) {
    let init = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap: QpCap::default(), sq_sig_all: false };
    let qp = RcQp::create(pd, init).unwrap();
    let _ = cq.destroy();
    let _ = qp.qp_num();
}

fn main() {
    let _ = under;
}
