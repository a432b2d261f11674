//! Queue pairs: ibv_create_qp / ibv_modify_qp (every transition, read back
//! with ibv_query_qp) / ibv_destroy_qp, typed and as AnyQp, on rxe and siw.

use super::common::{empty_gid_index, gid_index, rxe_name, siw_name};
use verbs::qp::{
    AhAttr, AnyQp, ConnInitAttr, GlobalRoute, Mtu, QpAccess, QpCap, QpInitAttr, QpStateKind,
    RcQp, RcRtrAttr, RcRtsAttr, SqPsnAttr, UcQp, UcRtrAttr, UdInitAttr, UdQp,
    UdRtrAttr,
};
use verbs::srq::{Srq, SrqInitAttr};
use verbs::{discovery::devices, Context, Cq, ErrorKind, Pd};

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).expect("ibv_open_device")
}

const CAP: QpCap =
    QpCap { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };

fn init<'a>(cq: &'a Cq<'a>) -> QpInitAttr<'a> {
    QpInitAttr { send_cq: cq, recv_cq: cq, srq: None, cap: CAP, sq_sig_all: false }
}

const INIT: ConnInitAttr = ConnInitAttr {
    pkey_index: 0,
    port_num: 1,
    access: QpAccess::REMOTE_WRITE.union(QpAccess::REMOTE_READ),
};

fn rtr(ctx: &Context, dest_qp_num: u32, sgid_index: u8) -> RcRtrAttr {
    let dgid = ctx.query_gid(1, gid_index()).expect("ibv_query_gid");
    let grh = GlobalRoute { dgid, flow_label: 0, sgid_index, hop_limit: 1, traffic_class: 0 };
    RcRtrAttr {
        path_mtu: Mtu::Mtu1024,
        dest_qp_num,
        rq_psn: 0x1234,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ah_attr: AhAttr { grh: Some(grh), port_num: 1, ..Default::default() },
    }
}

const RTS: RcRtsAttr =
    RcRtsAttr { sq_psn: 0x4321, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_rc_every_transition_reads_back() {
    let ctx = open(&rxe_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 64, None, 0).unwrap();
    let qp = RcQp::create(&pd, init(&cq)).expect("ibv_create_qp");
    let peer = RcQp::create(&pd, init(&cq)).unwrap();
    assert_ne!(qp.qp_num(), peer.qp_num());
    let cap = qp.cap();
    assert!(cap.max_send_wr >= 16 && cap.max_recv_wr >= 16, "{cap:?}");
    let (sq, rq) = qp.mapped_queue_slots();
    assert!(sq > cap.max_send_wr && rq.unwrap() > cap.max_recv_wr, "rings {sq} {rq:?} vs {cap:?}");

    let a = qp.query().expect("ibv_query_qp");
    assert_eq!(a.qp_state, Some(QpStateKind::Reset));
    assert_eq!(a.cap, cap);

    let qp = qp.into_init(INIT).expect("RESET->INIT");
    let a = qp.query().unwrap();
    assert_eq!((a.qp_state, a.port_num, a.pkey_index), (Some(QpStateKind::Init), 1, 0));
    assert_eq!(a.qp_access_flags, INIT.access);

    let attr = rtr(&ctx, peer.qp_num(), gid_index() as u8);
    let qp = qp.into_rtr(attr).expect("INIT->RTR");
    let a = qp.query().unwrap();
    assert_eq!(a.qp_state, Some(QpStateKind::Rtr));
    assert_eq!(a.path_mtu, Some(Mtu::Mtu1024));
    assert_eq!((a.dest_qp_num, a.rq_psn), (peer.qp_num(), 0x1234));
    assert_eq!((a.max_dest_rd_atomic, a.min_rnr_timer), (1, 12));
    let grh = a.ah_attr.grh.expect("RoCE path has a GRH");
    assert_eq!(grh.dgid, attr.ah_attr.grh.unwrap().dgid);
    assert_eq!(grh.sgid_index, gid_index() as u8);
    // On RoCE the kernel replaces hop_limit with the IP route's (it resolves
    // the destination MAC and TTL when the AV is set), so only check it is set.
    assert_ne!(grh.hop_limit, 0);
    assert_eq!(a.ah_attr.port_num, 1);

    let qp = qp.into_rts(RTS).expect("RTR->RTS");
    let a = qp.query().unwrap();
    assert_eq!(a.qp_state, Some(QpStateKind::Rts));
    assert_eq!((a.sq_psn, a.timeout, a.retry_cnt, a.rnr_retry), (0x4321, 14, 7, 7));
    assert_eq!(a.max_rd_atomic, 1);

    let qp = qp.into_sqd().expect("RTS->SQD");
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Sqd));
    // SQD -> RTS is refused while the send queue is still draining (rxe's
    // send task clears sq_draining asynchronously, and IBV_EVENT_SQ_DRAINED
    // reports it); wait for the drain, as an application would.
    let mut tries = 0;
    while qp.query().unwrap().sq_draining {
        tries += 1;
        assert!(tries < 500, "SQ never drained");
        std::thread::sleep(core::time::Duration::from_millis(10));
    }
    let qp = qp.resume().expect("SQD->RTS");
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Rts));

    let qp = qp.into_error().expect("RTS->ERR");
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Error));
    let qp = qp.into_reset().expect("ERR->RESET");
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Reset));
    // Back up again from RESET.
    let qp = qp.into_init(INIT).expect("RESET->INIT again");
    assert_eq!(qp.destroy().expect("ibv_destroy_qp"), 0);
    drop(peer);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_failed_transition_hands_the_qp_back() {
    let ctx = open(&rxe_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let qp = RcQp::create(&pd, init(&cq)).unwrap();
    // Port 9 does not exist: RESET->INIT fails, the QP is still in RESET.
    let bad = ConnInitAttr { port_num: 9, ..INIT };
    let e = qp.into_init(bad).unwrap_err();
    assert_eq!((e.error.verb(), e.error.kind()), ("ibv_modify_qp", ErrorKind::InvalidArgument));
    let qp = e.qp;
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Reset));
    let qp = qp.into_init(INIT).unwrap();
    // A source GID index whose entry is empty: INIT->RTR fails, still INIT.
    let e = qp.into_rtr(rtr(&ctx, 1, empty_gid_index(&ctx))).unwrap_err();
    assert_eq!(e.error.verb(), "ibv_modify_qp");
    assert!(e.error.errno().is_some(), "refused by the kernel: {}", e.error);
    let qp = e.qp;
    let a = qp.query().unwrap();
    assert_eq!(a.qp_state, Some(QpStateKind::Init));
    assert_eq!(a.dest_qp_num, 0, "nothing of the failed RTR was applied");
    // And the QP still works: the correct RTR succeeds.
    let me = qp.qp_num();
    let qp = qp.into_rtr(rtr(&ctx, me, gid_index() as u8)).expect("RTR after a failed one");
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Rtr));
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_ud_and_uc_transitions() {
    let ctx = open(&rxe_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let ud = UdQp::create(&pd, init(&cq)).expect("ibv_create_qp UD");
    let ud = ud.into_init(UdInitAttr { pkey_index: 0, port_num: 1, qkey: 0x1111_1111 }).expect("UD INIT");
    let q = ud.query().unwrap();
    assert_eq!(q.qkey, 0x1111_1111);
    // The capacities granted at creation, also where the kernel answers 0
    // for the send queue's (mlx5_ib: the library reports them).
    let (c, g) = (q.cap, ud.cap());
    assert_eq!((c.max_send_wr, c.max_send_sge, c.max_inline_data), (g.max_send_wr, g.max_send_sge, g.max_inline_data), "{c:?} vs {g:?}");
    assert!(c.max_recv_wr >= CAP.max_recv_wr && c.max_recv_sge >= CAP.max_recv_sge, "{c:?}");
    let ud = ud.into_rtr(UdRtrAttr).expect("UD RTR");
    let ud = ud.into_rts(SqPsnAttr { sq_psn: 77 }).expect("UD RTS");
    let a = ud.query().unwrap();
    assert_eq!((a.qp_state, a.sq_psn), (Some(QpStateKind::Rts), 77));

    let uc = UcQp::create(&pd, init(&cq)).expect("ibv_create_qp UC");
    let uc = uc.into_init(INIT).unwrap();
    let r = rtr(&ctx, ud.qp_num(), gid_index() as u8);
    let uc = uc
        .into_rtr(UcRtrAttr { path_mtu: r.path_mtu, dest_qp_num: r.dest_qp_num, rq_psn: 9, ah_attr: r.ah_attr })
        .expect("UC RTR");
    let uc = uc.into_rts(SqPsnAttr { sq_psn: 10 }).expect("UC RTS");
    let a = uc.query().unwrap();
    assert_eq!((a.qp_state, a.rq_psn, a.sq_psn), (Some(QpStateKind::Rts), 9, 10));
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_qp_bad_caps_and_srq() {
    let ctx = open(&rxe_name());
    let dev = ctx.query_device().unwrap();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let mut attr = init(&cq);
    attr.cap.max_send_wr = dev.base().max_qp_wr + 1;
    let e = RcQp::create(&pd, attr).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_qp", ErrorKind::InvalidArgument), "{e}");
    let mut attr = init(&cq);
    attr.cap.max_send_sge = dev.base().max_sge + 1;
    let e = RcQp::create(&pd, attr).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_qp", ErrorKind::InvalidArgument), "{e}");
    // With an SRQ the QP has no receive ring of its own.
    let srq = Srq::create(&pd, SrqInitAttr { max_wr: 16, max_sge: 1, srq_limit: 0 }).unwrap();
    let qp = RcQp::create(&pd, QpInitAttr { srq: Some(&srq), ..init(&cq) }).expect("QP on an SRQ");
    assert_eq!(qp.mapped_queue_slots().1, None);
    assert_eq!(qp.srq().map(|s| s.handle()), Some(srq.handle()));
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_any_qp_table() {
    let ctx = open(&rxe_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let mut table: Vec<AnyQp<'_, verbs::qp::Rc>> = Vec::new();
    table.push(RcQp::create(&pd, init(&cq)).unwrap().into());
    table.push(RcQp::create(&pd, init(&cq)).unwrap().into_init(INIT).unwrap().into());
    let states: Vec<_> = table.iter().map(AnyQp::state).collect();
    assert_eq!(states, [QpStateKind::Reset, QpStateKind::Init]);
    for q in &table {
        assert_eq!(q.query().unwrap().qp_state, Some(q.state()), "type state == kernel state");
    }
    let second = table.pop().unwrap();
    // Not in RTS: handed back unchanged.
    let second = second.try_into_rts().unwrap_err();
    let second = second.try_into_init().expect("it is in INIT");
    let any: AnyQp<'_, _> = second.into();
    let any = any.into_error().expect("to ERROR from AnyQp");
    assert_eq!(any.state(), QpStateKind::Error);
    assert_eq!(any.query().unwrap().qp_state, Some(QpStateKind::Error));
    any.destroy().expect("destroy AnyQp");
    for q in table.drain(..) {
        q.destroy().unwrap();
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_rc_create_init_query_destroy() {
    let ctx = open(&siw_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let qp = RcQp::create(&pd, init(&cq)).expect("ibv_create_qp on siw");
    let cap = qp.cap();
    let (sq, rq) = qp.mapped_queue_slots();
    assert!(sq >= cap.max_send_wr && rq.unwrap() >= cap.max_recv_wr, "{sq} {rq:?} {cap:?}");
    // siw has one IDLE state for RESET and INIT and reports it as INIT
    // (kernel siw_qp_state_to_ib_qp_state), even right after create.
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Init));
    let qp = qp.into_init(INIT).expect("siw RESET->INIT");
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Init));
    let qp = qp.into_error().expect("siw INIT->ERR");
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Error));
    qp.destroy().expect("ibv_destroy_qp on siw");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_ud_uc_unsupported_and_bad_caps() {
    let ctx = open(&siw_name());
    let dev = ctx.query_device().unwrap();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let e = UdQp::create(&pd, init(&cq)).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_qp", ErrorKind::Unsupported), "{e}");
    let e = UcQp::create(&pd, init(&cq)).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_qp", ErrorKind::Unsupported), "{e}");
    let mut attr = init(&cq);
    attr.cap.max_send_wr = dev.base().max_qp_wr + 1;
    let e = RcQp::create(&pd, attr).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_qp", ErrorKind::InvalidArgument), "{e}");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_failed_transition_hands_the_qp_back() {
    // iWARP QPs reach RTS through a connection (rdma_cm/iw_cm), not through
    // an address vector: siw refuses RTS without its socket, and the QP
    // comes back in the state it was in.
    let ctx = open(&siw_name());
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let qp = RcQp::create(&pd, init(&cq)).unwrap().into_init(INIT).unwrap();
    let me = qp.qp_num();
    let attr = RcRtrAttr {
        path_mtu: Mtu::Mtu1024,
        dest_qp_num: me,
        rq_psn: 0,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ah_attr: AhAttr { grh: None, port_num: 1, ..Default::default() },
    };
    // siw accepts RTR but keeps the QP idle (it reports INIT).
    let qp = qp.into_rtr(attr).expect("siw INIT->RTR");
    let before = qp.query().unwrap();
    assert_eq!(before.qp_state, Some(QpStateKind::Init));
    let e = qp.into_rts(RTS).unwrap_err();
    assert_eq!((e.error.verb(), e.error.kind()), ("ibv_modify_qp", ErrorKind::InvalidArgument));
    let qp = e.qp;
    assert_eq!(qp.query().unwrap(), before, "the failed RTS changed nothing");
    qp.destroy().expect("destroy the handed-back QP");
}

/// `ibv_create_qp_ex` with creation flags: rxe and siw take none (refused
/// before the kernel, as rdma-core's providers do); on mlx5 the kernel
/// judges them (mlx5_ib: BLOCK_SELF_MCAST_LB where the device blocks
/// multicast loopback, SCATTER_FCS only on raw packet QPs: EOPNOTSUPP).
fn create_flags(name: &str) {
    use verbs::qp::QpCreateFlags;
    let ctx = open(name);
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 64, None, 0).unwrap();
    let block = QpCreateFlags::BLOCK_SELF_MCAST_LB;
    // RC: every provider has it (siw has no UD).
    let plain = RcQp::create_with_flags(&pd, init(&cq), QpCreateFlags::empty()).expect("no flag: as ibv_create_qp");
    drop(plain);
    let passed = QpCreateFlags::from_bits_retain(ctx.provider_caps().qp_create_flags);
    if passed.is_empty() {
        let e = RcQp::create_with_flags(&pd, init(&cq), block).unwrap_err();
        assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_create_qp_ex", ErrorKind::Unsupported, None), "{e}");
        let e = RcQp::create_with_flags(&pd, init(&cq), QpCreateFlags::PCI_WRITE_END_PADDING).unwrap_err();
        assert_eq!((e.kind(), e.errno()), (ErrorKind::Unsupported, None), "{e}");
    } else {
        assert_eq!(passed, QpCreateFlags::all());
        let qp = UdQp::create_with_flags(&pd, init(&cq), block).expect("UD QP that blocks its own multicast");
        assert!(qp.cap().max_send_wr >= CAP.max_send_wr, "{:?}", qp.cap());
        let qp = qp.into_init(UdInitAttr { pkey_index: 0, port_num: 1, qkey: 0x1111 }).expect("UD INIT");
        assert_eq!(qp.query().expect("ibv_query_qp").qp_state, Some(QpStateKind::Init));
        let e = RcQp::create_with_flags(&pd, init(&cq), QpCreateFlags::SCATTER_FCS).unwrap_err();
        assert_eq!((e.verb(), e.kind()), ("ibv_create_qp_ex", ErrorKind::Unsupported), "{e}");
        assert_eq!(e.errno(), Some(verbs::error::Errno::OPNOTSUPP), "refused by the kernel: {e}");
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_qp_create_flags() {
    create_flags(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_qp_create_flags() {
    create_flags(&siw_name());
}
