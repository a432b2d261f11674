//! The siw data path without a connection: receives posted to a QP in
//! INIT complete with `IBV_WC_WR_FLUSH_ERR` when the QP is moved to ERROR
//! (siw flushes its receive queue on that transition, synchronously), read
//! back through `poll` and `poll_with`; the completion channel reports the
//! flush when the CQ was armed through its mapped control word; the
//! receive queue and the SRQ refuse what does not fit, all or nothing.

use super::common::siw_name;
use super::rig::{init_attr, ALL_ACCESS};
use verbs::cq::get_cq_event;
use verbs::qp::{ConnInitAttr, Init, QpAccess, QpCap, RcQp};
use verbs::srq::SrqInitAttr;
use verbs::wr::{RecvWr, Sge};
use verbs::{discovery::devices, CompChannel, Context, Cq, ErrorKind, Mr, Pd, Srq, Wc, WcOpcode, WcStatus};

fn open_siw() -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(&siw_name()).expect("siw device")).expect("ibv_open_device")
}

const CAP: QpCap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 2, max_recv_sge: 2, max_inline_data: 64 };
const INIT: ConnInitAttr = ConnInitAttr { pkey_index: 0, port_num: 1, access: QpAccess::REMOTE_WRITE };

/// A siw RC QP in INIT.
fn qp_in_init<'a>(pd: &'a Pd<'a>, scq: &'a Cq<'a>, rcq: &'a Cq<'a>, srq: Option<&'a Srq<'a>>) -> RcQp<'a, Init> {
    RcQp::create(pd, init_attr(scq, rcq, srq, CAP)).expect("ibv_create_qp on siw").into_init(INIT).expect("siw INIT")
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_receives_flush_in_order_on_error() {
    let ctx = open_siw();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 16, None, 0).unwrap(), Cq::create(&ctx, 16, None, 0).unwrap());
    let mr = Mr::reg(&pd, vec![0u8; 4096], ALL_ACCESS).unwrap();
    let mut qp = qp_in_init(&pd, &scq, &rcq, None);
    let two = [Sge::from_mr(&mr, 0, 100), Sge::from_mr(&mr, 100, 100)];
    let one = [Sge::from_mr(&mr, 200, 50)];
    // A list with one bad request is refused whole.
    let three = [two[0], two[1], one[0]];
    let e = qp.post_recv(&[RecvWr::new(1, &one), RecvWr::new(2, &three)]).unwrap_err();
    assert_eq!((e.index, e.kind(), e.error.verb()), (1, ErrorKind::TooManySge, "ibv_post_recv"), "{e}");
    qp.post_recv(&[RecvWr::new(10, &two), RecvWr::new(11, &one), RecvWr::new(12, &[])]).expect("ibv_post_recv");
    qp.post_recv(&[RecvWr::new(13, &one)]).expect("ibv_post_recv");
    let mut wc = [Wc::ZERO; 8];
    assert_eq!(rcq.poll(&mut wc).unwrap(), 0, "nothing completes before the flush");
    let qpn = qp.qp_num();
    let mut qp = qp.into_error().expect("siw INIT->ERR");
    let n = rcq.poll(&mut wc[..3]).expect("ibv_poll_cq");
    assert_eq!(n, 3, "the flush is synchronous on siw: {:?}", &wc[..n]);
    let mut rest = Vec::new();
    assert_eq!(rcq.poll_with(8, |w| rest.push(*w)).expect("poll_with"), 1);
    let all: Vec<Wc> = wc[..3].iter().copied().chain(rest).collect();
    assert_eq!(all.iter().map(Wc::wr_id).collect::<Vec<_>>(), [10, 11, 12, 13], "{all:?}");
    for w in &all {
        assert_eq!((w.status(), w.opcode(), w.qp_num(), w.byte_len()), (WcStatus::WrFlushErr, WcOpcode::Recv, qpn, 0));
        assert_eq!((w.imm_data(), w.invalidated_rkey()), (None, None));
    }
    assert_eq!(rcq.poll(&mut wc).unwrap(), 0);
    assert_eq!(scq.poll(&mut wc).unwrap(), 0, "no send was posted");
    // siw flushes only on the transition: a receive posted now could never
    // complete, so it is refused (nothing written).
    let e = qp.post_recv(&[RecvWr::new(20, &one)]).unwrap_err();
    assert_eq!((e.index, e.kind()), (0, ErrorKind::WrongState), "{e}");
    qp.post_recv(&[]).expect("an empty list is fine");
    qp.destroy().expect("ibv_destroy_qp");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_receive_queue_full_is_refused_whole() {
    let ctx = open_siw();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 64, None, 0).unwrap();
    let mut qp = qp_in_init(&pd, &cq, &cq, None);
    let (_, rq) = qp.mapped_queue_slots();
    let rq = rq.expect("own receive queue");
    assert!(rq >= CAP.max_recv_wr);
    let wrs: Vec<RecvWr<'_>> = (0..u64::from(rq) + 1).map(|i| RecvWr::new(i, &[])).collect();
    let e = qp.post_recv(&wrs).unwrap_err();
    assert_eq!((e.index, e.kind()), (rq as usize, ErrorKind::QueueFull), "{e}");
    qp.post_recv(&wrs[..rq as usize - 1]).expect("all but one fit");
    let e = qp.post_recv(&wrs[..2]).unwrap_err();
    assert_eq!((e.index, e.kind()), (1, ErrorKind::QueueFull), "{e}");
    qp.post_recv(&wrs[rq as usize - 1..rq as usize]).expect("the last one");
    let qp = qp.into_error().unwrap();
    let mut got = Vec::new();
    while cq.poll_with(16, |w| got.push((w.wr_id(), w.status()))).unwrap() > 0 {}
    let want: Vec<_> = (0..u64::from(rq)).map(|i| (i, WcStatus::WrFlushErr)).collect();
    assert_eq!(got, want, "exactly what was accepted, in order");
    qp.destroy().unwrap();
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_flush_raises_the_armed_completion_event() {
    let ctx = open_siw();
    let pd = Pd::alloc(&ctx).unwrap();
    let ch = CompChannel::create(&ctx).unwrap();
    ch.set_nonblocking(true).unwrap();
    let cq = Cq::create(&ctx, 16, Some(&ch), 0).unwrap();
    let mut qp = qp_in_init(&pd, &cq, &cq, None);
    qp.post_recv(&[RecvWr::new(7, &[])]).unwrap();
    cq.req_notify(false).expect("ibv_req_notify_cq: a store, no system call");
    assert_eq!(cq.notify_flags(), Some(3), "SOLICITED | NEXT_COMPLETION");
    let qp = qp.into_error().unwrap();
    // The kernel disarmed the CQ when it signalled the flush completion.
    assert_eq!(cq.notify_flags(), Some(0));
    let got = get_cq_event(&ch, &[&cq]).expect("ibv_get_cq_event: the flush raised the event");
    assert!(core::ptr::eq(got, &cq));
    cq.ack_events(1).unwrap();
    let mut wc = [Wc::ZERO; 2];
    assert_eq!(cq.poll(&mut wc).unwrap(), 1);
    assert_eq!((wc[0].wr_id(), wc[0].status()), (7, WcStatus::WrFlushErr));
    // Disarmed: a second QP's flush raises no event.
    let mut qp2 = qp_in_init(&pd, &cq, &cq, None);
    qp2.post_recv(&[RecvWr::new(8, &[])]).unwrap();
    let qp2 = qp2.into_error().unwrap();
    assert_eq!(cq.poll(&mut wc).unwrap(), 1);
    let e = get_cq_event(&ch, &[&cq]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock, "{e}");
    // Armed for solicited completions only: a flushed receive is not one.
    cq.req_notify(true).unwrap();
    assert_eq!(cq.notify_flags(), Some(1));
    let mut qp3 = qp_in_init(&pd, &cq, &cq, None);
    qp3.post_recv(&[RecvWr::new(9, &[])]).unwrap();
    let qp3 = qp3.into_error().unwrap();
    assert_eq!(cq.poll(&mut wc).unwrap(), 1);
    assert_eq!(cq.notify_flags(), Some(1), "still armed");
    assert_eq!(get_cq_event(&ch, &[&cq]).unwrap_err().kind(), ErrorKind::WouldBlock);
    qp3.destroy().unwrap();
    qp2.destroy().unwrap();
    qp.destroy().unwrap();
    let d = cq.destroy().unwrap();
    assert_eq!(d.comp_events_reported, 1);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_srq_takes_receives_up_to_its_size() {
    let ctx = open_siw();
    let pd = Pd::alloc(&ctx).unwrap();
    let srq = Srq::create(&pd, SrqInitAttr { max_wr: 6, max_sge: 2, srq_limit: 0 }).unwrap();
    let n = srq.ring_slots().expect("siw SRQ");
    assert!(n >= 6, "{n}");
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let mut qp = qp_in_init(&pd, &cq, &cq, Some(&srq));
    let e = qp.post_recv(&[RecvWr::new(1, &[])]).unwrap_err();
    assert_eq!((e.kind(), e.error.verb()), (ErrorKind::InvalidArgument, "ibv_post_recv"), "post to the SRQ instead");
    let sg = [Sge { addr: 0x1000, length: 8, lkey: 0 }; 3];
    let e = srq.post_recv(&[RecvWr::new(1, &sg[..1]), RecvWr::new(2, &sg)]).unwrap_err();
    assert_eq!((e.index, e.kind(), e.error.verb()), (1, ErrorKind::TooManySge, "ibv_post_srq_recv"), "{e}");
    let wrs: Vec<RecvWr<'_>> = (0..u64::from(n) + 1).map(|i| RecvWr::new(i, &sg[..1])).collect();
    let e = srq.post_recv(&wrs).unwrap_err();
    assert_eq!((e.index, e.kind()), (n as usize, ErrorKind::QueueFull), "{e}");
    srq.post_recv(&wrs[..n as usize]).expect("ibv_post_srq_recv fills the SRQ");
    let e = srq.post_recv(&wrs[..1]).unwrap_err();
    assert_eq!((e.index, e.kind()), (0, ErrorKind::QueueFull), "{e}");
    // The SRQ's receives belong to no QP: a QP's flush leaves them alone.
    let qp = qp.into_error().unwrap();
    let mut wc = [Wc::ZERO; 4];
    assert_eq!(cq.poll(&mut wc).unwrap(), 0);
    qp.destroy().unwrap();
}
