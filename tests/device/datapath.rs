//! The rxe data path end to end: every opcode, inline, signaling, lists
//! with one doorbell, validation that leaves the queue untouched, flush
//! errors. Bytes are checked in the peer's memory, completions field by
//! field.

use super::rig::{assert_quiet, init_attr, is_siw, open_dev, open_rxe, rc_pair, rc_pair_on, uc_pair, wait, ALL_ACCESS, CAP};
use verbs::qp::QpCap;
use verbs::wr::{MwBind, RecvWr, SendFlags, SendOp, SendWr, Sge};
use verbs::{AccessFlags, Cq, ErrorKind, Mr, Mw, MwType, Pd, WcFlags, WcOpcode, WcStatus};

const SIG: SendFlags = SendFlags::SIGNALED;

fn send_recv_with_and_without_imm(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let abuf = vec![0u8; 4096];
    let bbuf = vec![0u8; 4096];
    let mut amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let mut bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let msg: Vec<u8> = (0..1500u32).map(|i| (i * 7) as u8).collect();
    amr.write_at(0, &msg).unwrap();
    bmr.fill(0, 4096, 0xee).unwrap();

    // Two receives in one call, scattered over two SGEs each.
    let r0 = [Sge::from_mr(&bmr, 0, 1000), Sge::from_mr(&bmr, 1000, 1000)];
    let r1 = [Sge::from_mr(&bmr, 2048, 1024), Sge::from_mr(&bmr, 3072, 1024)];
    b.post_recv(&[RecvWr::new(0xb0, &r0), RecvWr::new(0xb1, &r1)]).expect("ibv_post_recv");

    let s0 = [Sge::from_mr(&amr, 0, 1500)];
    let s1 = [Sge::from_mr(&amr, 0, 16)];
    // siw (iWARP) has no immediate data: refused before anything is
    // posted, and a plain SEND takes its place.
    let siw = is_siw(&ctx);
    let with_imm = SendWr::new(0xa1, SendOp::SendWithImm { imm: 0xdead_beef }, &s1).flags(SIG | SendFlags::SOLICITED);
    if siw {
        let e = a.post_send(&[SendWr::send(0xa0, &s0), with_imm]).expect_err("siw has no immediate data");
        assert_eq!((e.index, e.kind(), e.error.verb()), (1, ErrorKind::Unsupported, "ibv_post_send"), "{e}");
    }
    let second = if siw { SendWr::send(0xa1, &s1).flags(SIG | SendFlags::SOLICITED) } else { with_imm };
    a.post_send(&[SendWr::send(0xa0, &s0).flags(SIG), second]).expect("ibv_post_send");

    let sc = wait(&scq, 2);
    for (wc, id) in sc.iter().zip([0xa0, 0xa1]) {
        assert_eq!((wc.wr_id(), wc.status(), wc.opcode()), (id, WcStatus::Success, WcOpcode::Send), "{wc:?}");
        assert_eq!(wc.qp_num(), a.qp_num());
    }
    let rc = wait(&rcq, 2);
    assert_eq!((rc[0].wr_id(), rc[0].status(), rc[0].opcode()), (0xb0, WcStatus::Success, WcOpcode::Recv));
    assert_eq!((rc[0].byte_len(), rc[0].imm_data(), rc[0].qp_num()), (1500, None, b.qp_num()));
    let imm = if siw { None } else { Some(0xdead_beef) };
    assert_eq!((rc[1].wr_id(), rc[1].byte_len(), rc[1].imm_data()), (0xb1, 16, imm));
    assert_eq!(rc[1].wc_flags().contains(WcFlags::WITH_IMM), !siw);

    let mut got = vec![0u8; 4096];
    bmr.read_at(0, &mut got).unwrap();
    assert_eq!(&got[..1500], &msg[..], "first message scattered over 1000 + 500");
    assert!(got[1500..2048].iter().all(|&x| x == 0xee), "bytes past the message untouched");
    assert_eq!(&got[2048..2064], &msg[..16]);
    assert!(got[2064..].iter().all(|&x| x == 0xee));
}

fn rdma_write_read_and_write_with_imm(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let abuf = vec![0u8; 8192];
    let bbuf = vec![0u8; 8192];
    let mut amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let mut bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let pattern: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    amr.write_at(0, &pattern).unwrap();
    let remote: Vec<u8> = (0..2000u32).map(|i| (i % 13) as u8 ^ 0x5a).collect();
    bmr.write_at(4096, &remote).unwrap();

    // WRITE 3000 bytes into b at offset 100, READ 2000 bytes of b back
    // into a at 4096, WRITE_WITH_IMM of 8 bytes consuming a receive.
    let w = [Sge::from_mr(&amr, 0, 3000)];
    let r = [Sge::from_mr(&amr, 4096, 2000)];
    let wi = [Sge::from_mr(&amr, 0, 8)];
    b.post_recv(&[RecvWr::new(0x77, &[])]).unwrap();
    // siw: no immediate data, so the third is a plain RDMA WRITE that
    // consumes no receive.
    let siw = is_siw(&ctx);
    let with_imm =
        SendWr::new(3, SendOp::RdmaWriteWithImm { remote_addr: bmr.addr() + 6000, rkey: bmr.rkey(), imm: 42 }, &wi)
            .flags(SIG);
    if siw {
        let e = a.post_send(&[with_imm]).expect_err("siw has no immediate data");
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    }
    // siw also completes a WRITE posted after a READ as soon as it is
    // sent, before the READ's response is in (the kernel's ordering, seen
    // here): the fence makes it wait, and the completions come in order.
    let third = if siw {
        SendWr::rdma_write(3, &wi, bmr.addr() + 6000, bmr.rkey()).flags(SIG | SendFlags::FENCE)
    } else {
        with_imm
    };
    a.post_send(&[
        SendWr::rdma_write(1, &w, bmr.addr() + 100, bmr.rkey()).flags(SIG),
        SendWr::rdma_read(2, &r, bmr.addr() + 4096, bmr.rkey()).flags(SIG),
        third,
    ])
    .expect("ibv_post_send");
    let sc = wait(&scq, 3);
    let ops: Vec<_> = sc.iter().map(|c| (c.wr_id(), c.status(), c.opcode())).collect();
    assert_eq!(
        ops,
        [
            (1, WcStatus::Success, WcOpcode::RdmaWrite),
            (2, WcStatus::Success, WcOpcode::RdmaRead),
            (3, WcStatus::Success, WcOpcode::RdmaWrite),
        ]
    );
    assert_eq!(sc[1].byte_len(), 2000);
    if siw {
        assert_quiet(&rcq);
    } else {
        let rc = wait(&rcq, 1);
        assert_eq!((rc[0].wr_id(), rc[0].opcode(), rc[0].imm_data()), (0x77, WcOpcode::RecvRdmaWithImm, Some(42)));
        assert_eq!(rc[0].byte_len(), 8);
    }

    let mut got = vec![0u8; 3000];
    bmr.read_at(100, &mut got).unwrap();
    assert_eq!(got, pattern, "RDMA WRITE landed in the peer");
    let mut back = vec![0u8; 2000];
    amr.read_at(4096, &mut back).unwrap();
    assert_eq!(back, remote, "RDMA READ brought the peer's bytes");
    let mut imm_bytes = [0u8; 8];
    bmr.read_at(6000, &mut imm_bytes).unwrap();
    assert_eq!(&imm_bytes, &pattern[..8]);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_atomics_update_the_peer() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 64, None, 0).unwrap();
    let (mut a, _b) = rc_pair(&pd, init_attr(&cq, &cq, None, CAP), init_attr(&cq, &cq, None, CAP));
    let abuf = vec![0u8; 64];
    let bbuf = vec![0u8; 64];
    let amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let mut bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    bmr.write_at(8, &100u64.to_ne_bytes()).unwrap();
    let (raddr, rkey) = (bmr.addr() + 8, bmr.rkey());
    let r0 = [Sge::from_mr(&amr, 0, 8)];
    let r1 = [Sge::from_mr(&amr, 8, 8)];
    let r2 = [Sge::from_mr(&amr, 16, 8)];
    a.post_send(&[
        SendWr::new(1, SendOp::AtomicFetchAdd { remote_addr: raddr, rkey, add: 5 }, &r0).flags(SIG),
        // compare fails (value is 105): no swap, old value returned
        SendWr::new(2, SendOp::AtomicCmpSwp { remote_addr: raddr, rkey, compare: 100, swap: 1 }, &r1).flags(SIG),
        SendWr::new(3, SendOp::AtomicCmpSwp { remote_addr: raddr, rkey, compare: 105, swap: 7 }, &r2)
            .flags(SIG | SendFlags::FENCE),
    ])
    .expect("ibv_post_send");
    let c = wait(&cq, 3);
    let ops: Vec<_> = c.iter().map(|c| (c.wr_id(), c.status(), c.opcode(), c.byte_len())).collect();
    assert_eq!(
        ops,
        [
            (1, WcStatus::Success, WcOpcode::FetchAdd, 8),
            (2, WcStatus::Success, WcOpcode::CompSwap, 8),
            (3, WcStatus::Success, WcOpcode::CompSwap, 8),
        ]
    );
    assert_eq!(amr.read_u64(0).unwrap(), 100, "fetch-and-add returns the old value");
    assert_eq!(amr.read_u64(8).unwrap(), 105, "failed compare returns the current value");
    assert_eq!(amr.read_u64(16).unwrap(), 105);
    assert_eq!(bmr.read_u64(8).unwrap(), 7, "the successful swap stored 7");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_atomic_write_stores_eight_bytes() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 64, None, 0).unwrap();
    let (mut a, _b) = rc_pair(&pd, init_attr(&cq, &cq, None, CAP), init_attr(&cq, &cq, None, CAP));
    let bmr = Mr::reg(&pd, vec![0xeeu8; 64], ALL_ACCESS).unwrap();
    let (raddr, rkey) = (bmr.addr() + 16, bmr.rkey());
    let value = *b"atomic!!";
    // Misaligned, or with a gather list: refused before the ring, nothing posted.
    let e = a.post_send(&[SendWr::atomic_write(1, raddr + 4, rkey, value).flags(SIG)]).unwrap_err();
    assert_eq!((e.index, e.error.kind()), (0, ErrorKind::InvalidArgument), "{e}");
    let one = [Sge::from_mr(&bmr, 0, 8)];
    let e = a.post_send(&[SendWr::new(1, SendOp::AtomicWrite { remote_addr: raddr, rkey, value }, &one)]).unwrap_err();
    assert_eq!(e.error.kind(), ErrorKind::InvalidArgument, "{e}");
    assert_quiet(&cq);
    a.post_send(&[SendWr::atomic_write(2, raddr, rkey, value).flags(SIG)]).expect("ibv_post_send ATOMIC_WRITE");
    let c = wait(&cq, 1);
    assert_eq!((c[0].wr_id(), c[0].status(), c[0].opcode()), (2, WcStatus::Success, WcOpcode::AtomicWrite));
    let mut got = [0u8; 32];
    bmr.read_at(8, &mut got).unwrap();
    assert_eq!(&got[..8], &[0xee; 8], "nothing before the target");
    assert_eq!(&got[8..16], &value, "the 8 bytes landed");
    assert_eq!(&got[16..], &[0xee; 16], "nothing after the target");
}

fn inline_unsignaled_and_sq_sig_all(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    assert!(a.cap().max_inline_data >= 64, "{:?}", a.cap());
    let bbuf = vec![0u8; 4096];
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let rs: Vec<[Sge; 1]> = (0..3).map(|i| [Sge::from_mr(&bmr, i * 128, 128)]).collect();
    let rwrs: Vec<_> = rs.iter().enumerate().map(|(i, s)| RecvWr::new(i as u64, s)).collect();
    b.post_recv(&rwrs).unwrap();
    // Inline data needs no registration and can be reused at once.
    let mut stack = *b"inline payload, copied into the WQE at post time.";
    a.post_send(&[SendWr::send(10, &[]).inline(&stack)]).expect("unsignaled inline send");
    stack.fill(b'x');
    a.post_send(&[SendWr::send(11, &[]).inline(&stack[..7]).flags(SIG)]).unwrap();
    // Only the signaled one completes on the sender.
    let sc = wait(&scq, 1);
    assert_eq!(sc[0].wr_id(), 11);
    assert_quiet(&scq);
    let rc = wait(&rcq, 2);
    assert_eq!((rc[0].byte_len(), rc[1].byte_len()), (49, 7));
    let mut got = [0u8; 49];
    bmr.read_at(0, &mut got).unwrap();
    assert_eq!(&got, b"inline payload, copied into the WQE at post time.");
    bmr.read_at(128, &mut got[..7]).unwrap();
    assert_eq!(&got[..7], b"xxxxxxx");

    // A QP created with sq_sig_all signals every request.
    let mut attr = init_attr(&scq, &scq, None, CAP);
    attr.sq_sig_all = true;
    let (mut c, mut d, _conn2) = rc_pair_on(&pd, attr, init_attr(&scq, &rcq, None, CAP));
    d.post_recv(&[RecvWr::new(5, &rs[2])]).unwrap();
    c.post_send(&[SendWr::send(12, &[]).inline(b"hi")]).unwrap();
    let sc = wait(&scq, 1);
    assert_eq!((sc[0].wr_id(), sc[0].qp_num()), (12, c.qp_num()));
    assert_eq!(wait(&rcq, 1)[0].wr_id(), 5);
}

fn list_of_requests_one_doorbell(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 256, None, 0).unwrap(), Cq::create(&ctx, 256, None, 0).unwrap());
    let cap = QpCap { max_send_wr: 64, max_recv_wr: 64, ..CAP };
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, cap), init_attr(&scq, &rcq, None, cap));
    let bbuf = vec![0u8; 64 * 64];
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let rs: Vec<[Sge; 1]> = (0..48).map(|i| [Sge::from_mr(&bmr, i * 64, 64)]).collect();
    let rwrs: Vec<_> = rs.iter().enumerate().map(|(i, s)| RecvWr::new(1000 + i as u64, s)).collect();
    b.post_recv(&rwrs).unwrap();
    let payloads: Vec<[u8; 8]> = (0..48u64).map(|i| i.to_le_bytes()).collect();
    let swrs: Vec<_> = payloads
        .iter()
        .enumerate()
        .map(|(i, p)| SendWr::send(i as u64, &[]).inline(p).flags(if i % 8 == 7 { SIG } else { SendFlags::empty() }))
        .collect();
    a.post_send(&swrs).expect("48 requests, one doorbell");
    let sc = wait(&scq, 6);
    assert_eq!(sc.iter().map(|c| c.wr_id()).collect::<Vec<_>>(), [7, 15, 23, 31, 39, 47]);
    let rc = wait(&rcq, 48);
    for (i, c) in rc.iter().enumerate() {
        assert_eq!((c.wr_id(), c.status(), c.byte_len()), (1000 + i as u64, WcStatus::Success, 8));
        let mut got = [0u8; 8];
        bmr.read_at(i * 64, &mut got).unwrap();
        assert_eq!(u64::from_le_bytes(got), i as u64, "message {i} in order");
    }
}

fn bad_request_in_a_list_posts_nothing(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 32 };
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, cap), init_attr(&scq, &rcq, None, cap));
    let granted = a.cap();
    let abuf = vec![0u8; 256];
    let bbuf = vec![0u8; 256];
    let amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let mut bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    bmr.fill(0, 256, 0).unwrap();
    let one = [Sge::from_mr(&amr, 0, 8)];
    let too_many: Vec<Sge> = (0..granted.max_send_sge + 1).map(|_| one[0]).collect();
    let big = vec![1u8; granted.max_inline_data as usize + 1];
    let (raddr, rkey) = (bmr.addr(), bmr.rkey());
    let w = |id| SendWr::rdma_write(id, &one, raddr + 8 * id, rkey).inline(b"written!");
    let cases: Vec<(SendWr<'_>, ErrorKind)> = vec![
        (SendWr::rdma_write(9, &too_many, raddr, rkey), ErrorKind::TooManySge),
        (SendWr::send(9, &[]).inline(&big), ErrorKind::InlineTooLarge),
        (SendWr::new(9, SendOp::AtomicFetchAdd { remote_addr: raddr + 4, rkey, add: 1 }, &one), ErrorKind::InvalidArgument),
        (SendWr::new(9, SendOp::LocalInv { rkey }, &one), ErrorKind::InvalidArgument),
    ];
    for (bad, kind) in cases {
        let e = a.post_send(&[w(0), w(1), bad, w(3)]).expect_err("list with a bad request");
        assert_eq!((e.index, e.kind(), e.error.verb()), (2, kind, "ibv_post_send"), "{e}");
    }
    // Queue full: more requests than free slots; the error names the
    // first one that does not fit and nothing is posted.
    let many: Vec<_> = (0..granted.max_send_wr as u64 + 64).map(w).collect();
    let e = a.post_send(&many).expect_err("more than the queue holds");
    assert_eq!(e.kind(), ErrorKind::QueueFull);
    assert!(e.index as u32 >= granted.max_send_wr && e.index < many.len(), "{e:?}");

    // Nothing reached the peer and nothing completed.
    assert_quiet(&scq);
    let mut got = [0u8; 64];
    bmr.read_at(0, &mut got).unwrap();
    assert!(got.iter().all(|&x| x == 0), "no bytes arrived: {got:?}");

    // The queue is as it was: a good list still goes through in order.
    a.post_send(&[w(0), w(1).flags(SIG)]).unwrap();
    let c = wait(&scq, 1);
    assert_eq!((c[0].wr_id(), c[0].status()), (1, WcStatus::Success));
    bmr.read_at(0, &mut got[..16]).unwrap();
    assert_eq!(&got[..16], b"written!written!");

    // Receives: too many SGEs at index 1 posts nothing either.
    let rs = [Sge::from_mr(&bmr, 128, 8)];
    let rs2 = [rs[0]; 2];
    let e = b.post_recv(&[RecvWr::new(1, &rs), RecvWr::new(2, &rs2)]).expect_err("too many SGEs");
    assert_eq!((e.index, e.kind(), e.error.verb()), (1, ErrorKind::TooManySge, "ibv_post_recv"));
    b.post_recv(&[RecvWr::new(3, &rs)]).unwrap();
    a.post_send(&[SendWr::send(4, &[]).inline(b"one").flags(SIG)]).unwrap();
    assert_eq!(wait(&rcq, 1)[0].wr_id(), 3, "the refused list left no receive behind");
    wait(&scq, 1);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_opcode_must_fit_the_transport() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 64, None, 0).unwrap();
    let (mut a, mut b) = uc_pair(&pd, init_attr(&cq, &cq, None, CAP), init_attr(&cq, &cq, None, CAP));
    let buf = vec![0u8; 64];
    let mut mr = Mr::reg(&pd, buf, ALL_ACCESS).unwrap();
    let s = [Sge::from_mr(&mr, 0, 8)];
    for op in [
        SendOp::RdmaRead { remote_addr: mr.addr(), rkey: mr.rkey() },
        SendOp::AtomicFetchAdd { remote_addr: mr.addr(), rkey: mr.rkey(), add: 1 },
        SendOp::LocalInv { rkey: mr.rkey() },
    ] {
        let e = a.post_send(&[SendWr::new(1, op, &s)]).expect_err("not on UC");
        assert_eq!((e.kind(), e.index), (ErrorKind::UnsupportedOpcode, 0), "{op:?}");
    }
    // UC does carry RDMA WRITE.
    a.post_send(&[SendWr::rdma_write(2, &[], mr.addr() + 16, mr.rkey()).inline(b"uc-write").flags(SIG)]).unwrap();
    assert_eq!(wait(&cq, 1)[0].opcode(), WcOpcode::RdmaWrite);
    let mut got = [0u8; 8];
    let t0 = std::time::Instant::now();
    while &got != b"uc-write" && t0.elapsed().as_secs() < 10 {
        mr.read_at(16, &mut got).unwrap();
    }
    assert_eq!(&got, b"uc-write");
    mr.fill(0, 8, 0).unwrap();
    let _ = &mut b;
}

fn error_state_flushes_with_wr_ids(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let (_a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let buf = vec![0u8; 256];
    let mr = Mr::reg(&pd, buf, ALL_ACCESS).unwrap();
    let s: Vec<[Sge; 1]> = (0..4).map(|i| [Sge::from_mr(&mr, i * 64, 64)]).collect();
    let wrs: Vec<_> = s.iter().enumerate().map(|(i, s)| RecvWr::new(0x100 + i as u64, s)).collect();
    b.post_recv(&wrs).unwrap();
    let mut b = b.into_error().expect("RTS->ERR");
    let c = wait(&rcq, 4);
    for (i, wc) in c.iter().enumerate() {
        assert_eq!((wc.wr_id(), wc.status()), (0x100 + i as u64, WcStatus::WrFlushErr), "{wc:?}");
        assert_eq!(wc.qp_num(), b.qp_num());
    }
    if is_siw(&ctx) {
        // siw flushes only on the transition: a receive posted later would
        // never complete, so it is refused, and nothing is left behind.
        let e = b.post_recv(&[RecvWr::new(0x200, &s[0])]).expect_err("siw: receive in ERROR");
        assert_eq!((e.kind(), e.error.verb()), (ErrorKind::WrongState, "ibv_post_recv"), "{e}");
        assert_quiet(&rcq);
    } else {
        // Receives posted in ERROR are flushed too.
        b.post_recv(&[RecvWr::new(0x200, &s[0])]).unwrap();
        assert_eq!(wait(&rcq, 1)[0].status(), WcStatus::WrFlushErr);
    }
    // Sends posted in ERROR (issue 29): the spec's answer on rxe, a flush
    // completion each (signaled or not, a write, a window bind); siw
    // would leave them in its ring for ever, so it refuses them.
    let send = [SendWr::new(0x300, SendOp::Send, &s[1]).flags(SIG)];
    if is_siw(&ctx) {
        let e = b.post_send(&send).expect_err("siw: send in ERROR");
        assert_eq!((e.kind(), e.error.verb(), e.index), (ErrorKind::WrongState, "ibv_post_send", 0), "{e}");
        assert_quiet(&scq);
    } else {
        let mw = Mw::alloc(&pd, MwType::Type2).expect("ibv_alloc_mw");
        let bind = MwBind::new(&mw, &mr, mr.addr(), 64, AccessFlags::REMOTE_READ);
        b.post_send(&send).expect("send in ERROR");
        b.post_send(&[SendWr::new(0x301, SendOp::Send, &s[2])]).expect("unsignaled send in ERROR");
        b.post_send(&[SendWr::rdma_write(0x302, &s[3], mr.addr(), mr.rkey()).flags(SIG)]).expect("write in ERROR");
        b.post_send(&[SendWr::new(0x303, SendOp::BindMw(bind), &[]).flags(SIG)]).expect("bind in ERROR");
        let c = wait(&scq, 4);
        for (i, wc) in c.iter().enumerate() {
            assert_eq!((wc.wr_id(), wc.status()), (0x300 + i as u64, WcStatus::WrFlushErr), "{wc:?}");
        }
        assert_quiet(&scq);
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_send_with_invalidate_local_inv_and_bind_mw() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let bbuf = vec![0u8; 4096];
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS | AccessFlags::MW_BIND).unwrap();
    let mw = Mw::alloc(&pd, MwType::Type2).expect("ibv_alloc_mw");
    let old = mw.rkey();
    // b binds a type 2 window over 1 KiB of its region...
    let bind = MwBind::new(&mw, &bmr, bmr.addr(), 1024, AccessFlags::REMOTE_WRITE);
    b.post_send(&[SendWr::new(1, SendOp::BindMw(bind), &[]).flags(SIG)]).expect("post bind");
    assert_eq!(mw.rkey(), (old & !0xff) | (old.wrapping_add(1) & 0xff));
    let c = wait(&scq, 1);
    assert_eq!((c[0].wr_id(), c[0].status(), c[0].opcode()), (1, WcStatus::Success, WcOpcode::BindMw), "{c:?}");
    // ...a writes through it...
    a.post_send(&[SendWr::rdma_write(2, &[], bmr.addr() + 8, mw.rkey()).inline(b"via-mw").flags(SIG)]).unwrap();
    assert_eq!(wait(&scq, 1)[0].status(), WcStatus::Success);
    let mut got = [0u8; 6];
    bmr.read_at(8, &mut got).unwrap();
    assert_eq!(&got, b"via-mw");
    // ...and invalidates it with SEND_WITH_INV; b sees the rkey.
    let rs = [Sge::from_mr(&bmr, 2048, 64)];
    b.post_recv(&[RecvWr::new(3, &rs)]).unwrap();
    a.post_send(&[SendWr::new(4, SendOp::SendWithInv { invalidate_rkey: mw.rkey() }, &[]).inline(b"inv").flags(SIG)])
        .unwrap();
    let r = wait(&rcq, 1);
    assert_eq!((r[0].status(), r[0].invalidated_rkey()), (WcStatus::Success, Some(mw.rkey())), "{r:?}");
    assert_eq!(wait(&scq, 1)[0].status(), WcStatus::Success);
    // Writing through the invalidated window now fails remotely.
    a.post_send(&[SendWr::rdma_write(5, &[], bmr.addr() + 8, mw.rkey()).inline(b"late").flags(SIG)]).unwrap();
    assert_eq!(wait(&scq, 1)[0].status(), WcStatus::RemAccessErr);

    // LOCAL_INV of a window bound again, on a fresh QP pair.
    let (_c, mut d) = rc_pair(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let bind = MwBind::new(&mw, &bmr, bmr.addr(), 64, AccessFlags::REMOTE_READ);
    d.post_send(&[SendWr::new(6, SendOp::BindMw(bind), &[]).flags(SIG)]).unwrap();
    assert_eq!(wait(&scq, 1)[0].status(), WcStatus::Success);
    d.post_send(&[SendWr::new(7, SendOp::LocalInv { rkey: mw.rkey() }, &[]).flags(SIG)]).unwrap();
    let c = wait(&scq, 1);
    assert_eq!((c[0].wr_id(), c[0].status(), c[0].opcode()), (7, WcStatus::Success, WcOpcode::LocalInv), "{c:?}");
}

twins!(send_recv_with_and_without_imm: rxe_send_recv_with_and_without_imm, siw_send_recv_scattered);
twins!(rdma_write_read_and_write_with_imm: rxe_rdma_write_read_and_write_with_imm, siw_rdma_write_and_read);
twins!(inline_unsignaled_and_sq_sig_all: rxe_inline_unsignaled_and_sq_sig_all, siw_inline_unsignaled_and_sq_sig_all);
twins!(list_of_requests_one_doorbell: rxe_list_of_requests_one_doorbell, siw_list_of_requests_one_doorbell);
twins!(bad_request_in_a_list_posts_nothing: rxe_bad_request_in_a_list_posts_nothing, siw_bad_request_in_a_list_posts_nothing);
twins!(error_state_flushes_with_wr_ids: rxe_error_state_flushes_with_wr_ids, siw_error_state_flushes_with_wr_ids);
