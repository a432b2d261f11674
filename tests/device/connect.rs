//! Connecting RC QPs with `Endpoint` + `connect` (issue 15, item 2): the
//! endpoint found from the port (RoCE v2 IPv4 GID), sent as bytes, the
//! transitions derived from two endpoints, data moving; and the missing
//! GRH on a RoCE port refused before the system call.

use super::common::gid_index;
use super::rig::{init_attr, open_rxe, wait, CAP};
use verbs::qp::{ConnectOpts, Endpoint, GlobalRoute, QpAccess, QpStateKind, RcQp, RcRtrAttr};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{AccessFlags, Ah, AhAttr, Cq, ErrorKind, Mr, Pd, WcOpcode, WcStatus};

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_finds_the_roce_v2_ipv4_gid() {
    let ctx = open_rxe();
    let idx = ctx.roce_v2_ipv4_gid_index(1).expect("RoCE v2 IPv4 GID on rxe0 port 1");
    assert_eq!(u32::from(idx), gid_index(), "the index the VM harness found");
    let e = ctx.query_gid_ex(1, u32::from(idx)).unwrap();
    assert_eq!(e.gid_type, 2, "RoCE v2");
    assert_eq!(&e.gid[..12], &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], "IPv4-mapped");
    let err = ctx.roce_v2_ipv4_gid_index(9).unwrap_err();
    assert_ne!(err.kind(), ErrorKind::NotFound, "port 9 does not exist: the query fails, {err}");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_connect_two_rc_qps_from_endpoints_and_move_data() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 16, None, 0).unwrap(), Cq::create(&ctx, 16, None, 0).unwrap());
    let a = RcQp::create(&pd, init_attr(&scq, &scq, None, CAP)).unwrap();
    let b = RcQp::create(&pd, init_attr(&scq, &rcq, None, CAP)).unwrap();

    let a_ep = Endpoint::local(&a, 1, None, 0x12_3456).expect("endpoint a");
    let b_ep = Endpoint::local(&b, 1, None, 0xab_cdef).expect("endpoint b");
    assert_eq!(u32::from(a_ep.gid_index), gid_index());
    assert!(a_ep.has_gid());
    // What each side would send over a socket, and read back.
    let a_seen_by_b = Endpoint::from_bytes(&a_ep.to_bytes()).unwrap();
    let b_seen_by_a = Endpoint::from_bytes(&b_ep.to_bytes()).unwrap();
    assert_eq!(a_seen_by_b, a_ep);

    let opts = ConnectOpts { access: QpAccess::REMOTE_WRITE, ..ConnectOpts::default() };
    let mut a = a.connect(&a_ep, &b_seen_by_a, &opts).map_err(|e| e.error).expect("connect a");
    let mut b = b.connect(&b_ep, &a_seen_by_b, &opts).map_err(|e| e.error).expect("connect b");
    let q = a.query().unwrap();
    assert_eq!((q.qp_state, q.dest_qp_num, q.sq_psn, q.rq_psn), (Some(QpStateKind::Rts), b.qp_num(), 0x12_3456, 0xab_cdef));
    assert_eq!((q.timeout, q.retry_cnt, q.rnr_retry, q.max_rd_atomic), (14, 7, 7, 1));
    assert_eq!(q.path_mtu, Some(a_ep.mtu.min(b_ep.mtu)));

    let abuf = vec![0u8; 256];
    let bbuf = vec![0u8; 256];
    let mut amr = Mr::reg(&pd, abuf, AccessFlags::LOCAL_WRITE).unwrap();
    let bmr = Mr::reg(&pd, bbuf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
    let record: Vec<u8> = (0..64u8).map(|i| i ^ 0xa5).collect();
    amr.write_at(0, &record).unwrap();
    amr.write_at(64, b"hello").unwrap();

    let rsge = [Sge::from_mr(&bmr, 128, 64)];
    b.post_recv(&[RecvWr::new(7, &rsge)]).unwrap();
    let w = [Sge::from_mr(&amr, 0, 64)];
    let s = [Sge::from_mr(&amr, 64, 5)];
    a.post_send(&[
        SendWr::rdma_write(1, &w, bmr.addr(), bmr.rkey()).signaled(),
        SendWr::send_with_imm(2, &s, 0x0102_0304).signaled(),
    ])
    .unwrap();
    let sc = wait(&scq, 2);
    assert_eq!((sc[0].wr_id(), sc[0].status(), sc[0].opcode()), (1, WcStatus::Success, WcOpcode::RdmaWrite));
    assert_eq!((sc[1].wr_id(), sc[1].status(), sc[1].opcode()), (2, WcStatus::Success, WcOpcode::Send));
    let rc = wait(&rcq, 1);
    assert_eq!((rc[0].wr_id(), rc[0].status(), rc[0].byte_len(), rc[0].imm_data()), (7, WcStatus::Success, 5, Some(0x0102_0304)));
    let mut got = vec![0u8; 256];
    bmr.read_at(0, &mut got).unwrap();
    assert_eq!(&got[..64], &record[..], "the WRITE landed");
    assert_eq!(&got[128..133], b"hello", "the SEND landed");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_address_without_grh_is_refused_before_the_syscall() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 4, None, 0).unwrap();
    let qp = RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).unwrap();
    let qp = qp.into_init(Default::default()).unwrap();
    let no_grh = RcRtrAttr { dest_qp_num: qp.qp_num(), ah_attr: AhAttr { port_num: 1, ..Default::default() }, ..Default::default() };
    let err = qp.into_rtr(no_grh).unwrap_err();
    assert_eq!((err.error.kind(), err.error.verb(), err.error.errno()), (ErrorKind::InvalidArgument, "ibv_modify_qp", None));
    assert!(err.error.to_string().contains("needs a global route"), "{}", err.error);
    let qp = err.qp;
    assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Init), "nothing was sent");

    let err = Ah::create(&pd, &AhAttr { port_num: 1, ..Default::default() }).unwrap_err();
    assert_eq!((err.kind(), err.verb(), err.errno()), (ErrorKind::InvalidArgument, "ibv_create_ah", None));
    assert!(err.to_string().contains("needs a global route"), "{err}");

    // With the GRH the same transition goes through.
    let dgid = ctx.query_gid(1, gid_index()).unwrap();
    let ah_attr = AhAttr { grh: Some(GlobalRoute::to(dgid, gid_index() as u8)), port_num: 1, ..Default::default() };
    qp.into_rtr(RcRtrAttr { dest_qp_num: 1, ah_attr, ..Default::default() }).map_err(|e| e.error).expect("RTR with a GRH");
}
