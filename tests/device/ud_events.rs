//! UD traffic with address handles (unicast and multicast), completion
//! events end to end, the SRQ data path with its limit event, and a CQ
//! resized while completions are queued.

use core::time::Duration;
use std::os::fd::AsFd;
use std::time::Instant;

use super::comp_channel::poll_in;
use super::rig::{assert_quiet, init_attr, open_rxe, rc_pair, self_av, ud_qp, wait, ALL_ACCESS, CAP, QKEY};
use verbs::ah::{Ah, AhAttr, GlobalRoute, GRH_LEN};
use verbs::cq::get_cq_event;
use verbs::srq::{SrqInitAttr, SrqModify};
use verbs::wr::{RecvWr, SendFlags, SendOp, SendWr, Sge, UdDest};
use verbs::{AsyncElement, CompChannel, Cq, ErrorKind, EventType, Mr, Pd, Srq, WcFlags, WcOpcode, WcStatus};

const SIG: SendFlags = SendFlags::SIGNALED;

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_ud_send_with_ah_and_reply_from_wc() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let cap = verbs::qp::QpCap { max_send_sge: 1, max_recv_sge: 1, ..CAP };
    let mut a = ud_qp(&pd, init_attr(&scq, &rcq, None, cap));
    let mut b = ud_qp(&pd, init_attr(&scq, &rcq, None, cap));
    let buf = vec![0u8; 8192];
    let mut mr = Mr::reg(&pd, buf, ALL_ACCESS).unwrap();
    let msg = b"datagram over RoCE v2";
    mr.write_at(0, msg).unwrap();
    let rb = [Sge::from_mr(&mr, 4096, (GRH_LEN + 256) as u32)];
    b.post_recv(&[RecvWr::new(0xb, &rb)]).unwrap();
    let ah = Ah::create(&pd, &self_av(&ctx)).expect("ibv_create_ah");
    let to_b = UdDest { ah: &ah, remote_qpn: b.qp_num(), remote_qkey: QKEY };
    let s = [Sge::from_mr(&mr, 0, msg.len() as u32)];

    // Refused before anything is written: no destination, a connected-only
    // opcode.
    let e = a.post_send(&[SendWr::send(1, &s)]).unwrap_err();
    assert_eq!((e.kind(), e.index), (ErrorKind::InvalidArgument, 0));
    let e = a.post_send(&[SendWr::rdma_write(1, &s, 0, 0).ud(to_b)]).unwrap_err();
    assert_eq!((e.kind(), e.index), (ErrorKind::UnsupportedOpcode, 0));

    a.post_send(&[SendWr::new(1, SendOp::SendWithImm { imm: 99 }, &s).ud(to_b).flags(SIG)]).expect("UD send");
    assert_eq!(wait(&scq, 1)[0].status(), WcStatus::Success);
    let r = wait(&rcq, 1)[0];
    assert_eq!((r.wr_id(), r.status(), r.opcode()), (0xb, WcStatus::Success, WcOpcode::Recv), "{r:?}");
    assert_eq!((r.src_qp(), r.qp_num(), r.imm_data()), (a.qp_num(), b.qp_num(), Some(99)));
    assert!(r.wc_flags().contains(WcFlags::GRH), "{r:?}");
    assert_eq!(r.byte_len() as usize, GRH_LEN + msg.len(), "UD receives start with the 40-byte GRH");
    let mut got = vec![0u8; msg.len()];
    mr.read_at(4096 + GRH_LEN, &mut got).unwrap();
    assert_eq!(&got[..], msg);

    // Answer the sender from the completion and the GRH it carried.
    let mut grh = [0u8; GRH_LEN];
    mr.read_at(4096, &mut grh).unwrap();
    let back = Ah::create_from_wc(&pd, &r.addressing(), Some(&grh), 1).expect("ibv_create_ah_from_wc");
    let ra = [Sge::from_mr(&mr, 6144, (GRH_LEN + 64) as u32)];
    a.post_recv(&[RecvWr::new(0xa, &ra)]).unwrap();
    let to_a = UdDest { ah: &back, remote_qpn: r.src_qp(), remote_qkey: QKEY };
    b.post_send(&[SendWr::send(2, &[]).inline(b"pong").ud(to_a).flags(SIG)]).unwrap();
    assert_eq!(wait(&scq, 1)[0].wr_id(), 2);
    let r = wait(&rcq, 1)[0];
    assert_eq!((r.wr_id(), r.src_qp(), r.byte_len() as usize), (0xa, b.qp_num(), GRH_LEN + 4));
}

/// 224.0.1.3 as an IPv4-mapped GID (`::ffff:224.0.1.3`): on RoCE v2 over
/// IPv4 the group GID becomes the packet's IP destination, so it must be
/// the mapped form (what rdma_cm uses for IPv4 groups).
const GROUP: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xe0, 0x00, 0x01, 0x03];

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_ud_multicast_reaches_every_member() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let cap = verbs::qp::QpCap { max_send_sge: 1, max_recv_sge: 1, ..CAP };
    let mut a = ud_qp(&pd, init_attr(&scq, &rcq, None, cap));
    let mut m1 = ud_qp(&pd, init_attr(&scq, &rcq, None, cap));
    let mut m2 = ud_qp(&pd, init_attr(&scq, &rcq, None, cap));
    let buf = vec![0u8; 4096];
    let mr = Mr::reg(&pd, buf, ALL_ACCESS).unwrap();
    // rxe hands multicast datagrams to the IP stack, which loops a copy
    // back to local receivers only if this host is a member of the IP
    // group on the RoCE netdev (rxe's attach programs only the MAC
    // filter): join 224.0.1.3 there, as a RoCE application host would.
    let local = core::net::Ipv4Addr::from(<[u8; 4]>::try_from(&ctx.query_gid(1, super::common::gid_index()).unwrap()[12..]).unwrap());
    let member = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    member.join_multicast_v4(&core::net::Ipv4Addr::new(224, 0, 1, 3), &local).expect("IP_ADD_MEMBERSHIP");
    m1.attach_mcast(&GROUP, 0).expect("ibv_attach_mcast");
    m2.attach_mcast(&GROUP, 0).expect("ibv_attach_mcast");
    let r1 = [Sge::from_mr(&mr, 0, 512)];
    let r2 = [Sge::from_mr(&mr, 1024, 512)];
    m1.post_recv(&[RecvWr::new(1, &r1)]).unwrap();
    m2.post_recv(&[RecvWr::new(2, &r2)]).unwrap();
    let gid_index = self_av(&ctx).grh.unwrap().sgid_index;
    let grh = GlobalRoute { dgid: GROUP, flow_label: 0, sgid_index: gid_index, hop_limit: 1, traffic_class: 0 };
    let ah = Ah::create(&pd, &AhAttr { grh: Some(grh), port_num: 1, ..Default::default() }).expect("multicast AH");
    let dest = UdDest { ah: &ah, remote_qpn: 0xff_ffff, remote_qkey: QKEY };
    a.post_send(&[SendWr::send(9, &[]).inline(b"to the group").ud(dest).flags(SIG)]).unwrap();
    assert_eq!(wait(&scq, 1)[0].status(), WcStatus::Success);
    let mut got = wait(&rcq, 2);
    got.sort_by_key(|w| w.wr_id());
    for (w, (id, qpn)) in got.iter().zip([(1, m1.qp_num()), (2, m2.qp_num())]) {
        assert_eq!((w.wr_id(), w.status(), w.qp_num(), w.src_qp()), (id, WcStatus::Success, qpn, a.qp_num()), "{w:?}");
        assert_eq!(w.byte_len() as usize, GRH_LEN + 12);
    }
    let mut text = [0u8; 12];
    mr.read_at(1024 + GRH_LEN, &mut text).unwrap();
    assert_eq!(&text, b"to the group");
    m1.detach_mcast(&GROUP, 0).unwrap();
    m2.detach_mcast(&GROUP, 0).unwrap();
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_completion_events_end_to_end() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let ch = CompChannel::create(&ctx).unwrap();
    let scq = Cq::create(&ctx, 64, None, 0).unwrap();
    let rcq = Cq::create(&ctx, 64, Some(&ch), 0).unwrap();
    let (mut a, mut b) = rc_pair(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let buf = vec![0u8; 1024];
    let mr = Mr::reg(&pd, buf, ALL_ACCESS).unwrap();
    let rs: Vec<[Sge; 1]> = (0..4).map(|i| [Sge::from_mr(&mr, i * 64, 64)]).collect();
    let rw: Vec<_> = rs.iter().enumerate().map(|(i, s)| RecvWr::new(i as u64, s)).collect();
    b.post_recv(&rw).unwrap();

    // notify -> completion -> the channel fd becomes readable -> get/ack -> poll
    rcq.req_notify(false).expect("ibv_req_notify_cq");
    assert_eq!(poll_in(ch.as_fd(), 0), 0, "no event before a completion");
    a.post_send(&[SendWr::send(1, &[]).inline(b"wake up")]).unwrap();
    assert_ne!(poll_in(ch.as_fd(), 30_000) & libc::POLLIN, 0, "completion event within 30 s");
    let which = get_cq_event(&ch, &[&scq, &rcq]).expect("ibv_get_cq_event");
    assert!(core::ptr::eq(which, &rcq));
    assert_eq!(rcq.unacked_events(), 1);
    rcq.ack_events(1).expect("ibv_ack_cq_events");
    let w = wait(&rcq, 1)[0];
    assert_eq!((w.wr_id(), w.byte_len()), (0, 7));

    // Solicited-only: an unsolicited message raises no event, a solicited
    // one does.
    rcq.req_notify(true).unwrap();
    a.post_send(&[SendWr::send(2, &[]).inline(b"quiet")]).unwrap();
    wait(&rcq, 1);
    assert_eq!(poll_in(ch.as_fd(), 500), 0, "unsolicited completion raised an event");
    a.post_send(&[SendWr::send(3, &[]).inline(b"loud").flags(SendFlags::SOLICITED)]).unwrap();
    assert_ne!(poll_in(ch.as_fd(), 30_000) & libc::POLLIN, 0, "solicited completion raises the event");
    get_cq_event(&ch, &[&rcq]).unwrap();
    rcq.ack_events(1).unwrap();
    assert_eq!(wait(&rcq, 1)[0].byte_len(), 4);
    // Not armed again: no event for the next one.
    a.post_send(&[SendWr::send(4, &[]).inline(b"x").flags(SendFlags::SOLICITED)]).unwrap();
    wait(&rcq, 1);
    assert_eq!(poll_in(ch.as_fd(), 300), 0);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_srq_receives_for_two_qps_and_limit_event() {
    let ctx = open_rxe();
    ctx.set_async_nonblocking(true).unwrap();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let srq = Srq::create(&pd, SrqInitAttr { max_wr: 16, max_sge: 1, srq_limit: 0 }).unwrap();
    let buf = vec![0u8; 4096];
    let mr = Mr::reg(&pd, buf, ALL_ACCESS).unwrap();
    let rs: Vec<[Sge; 1]> = (0..6).map(|i| [Sge::from_mr(&mr, i * 256, 256)]).collect();
    let rw: Vec<_> = rs.iter().enumerate().map(|(i, s)| RecvWr::new(0x50 + i as u64, s)).collect();
    srq.post_recv(&rw).expect("ibv_post_srq_recv");
    // Too many SGEs: refused, nothing posted.
    let two = [rs[0][0], rs[1][0]];
    let e = srq.post_recv(&[RecvWr::new(1, &rs[0]), RecvWr::new(2, &two)]).unwrap_err();
    assert_eq!((e.kind(), e.index, e.error.verb()), (ErrorKind::TooManySge, 1, "ibv_post_srq_recv"));
    srq.modify(SrqModify { max_wr: None, srq_limit: Some(4) }).expect("arm the limit");

    let (mut a, b) = rc_pair(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, Some(&srq), CAP));
    let (mut c, d) = rc_pair(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, Some(&srq), CAP));
    a.post_send(&[SendWr::send(1, &[]).inline(b"from a")]).unwrap();
    c.post_send(&[SendWr::send(2, &[]).inline(b"from c")]).unwrap();
    let mut got = wait(&rcq, 2);
    got.sort_by_key(|w| w.qp_num());
    let mut expect = [(b.qp_num(), 6u32), (d.qp_num(), 6)];
    expect.sort();
    assert_eq!(got.iter().map(|w| (w.qp_num(), w.byte_len())).collect::<Vec<_>>(), expect);
    let mut ids: Vec<_> = got.iter().map(|w| w.wr_id()).collect();
    ids.sort();
    assert_eq!(ids, [0x50, 0x51], "SRQ receives are taken in order");
    // 4 left: at the limit, not below it; no event yet.
    assert_eq!(ctx.get_async_event().unwrap_err().kind(), ErrorKind::WouldBlock);
    a.post_send(&[SendWr::send(3, &[]).inline(b"third")]).unwrap();
    wait(&rcq, 1);
    // 3 left < 4: one SRQ_LIMIT_REACHED, and the limit disarms.
    let deadline = Instant::now() + Duration::from_secs(20);
    let ev = loop {
        match ctx.get_async_event() {
            Ok(ev) => break ev,
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Err(e) => panic!("no SRQ_LIMIT_REACHED: {e}"),
        }
    };
    ctx.ack_async_event(ev);
    assert_eq!(ev.event_type, EventType::SrqLimitReached);
    assert_eq!(ev.element(), AsyncElement::Srq(srq.user_handle()));
    assert_eq!(srq.query().unwrap().srq_limit, 0, "the limit disarms after firing");
    assert_quiet(&scq);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_resize_cq_keeps_queued_completions() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let scq = Cq::create(&ctx, 8, None, 0).unwrap();
    let rcq = Cq::create(&ctx, 64, None, 0).unwrap();
    {
        let (mut a, mut b) = rc_pair(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&rcq, &rcq, None, CAP));
        let buf = vec![0u8; 512];
        let mr = Mr::reg(&pd, buf, ALL_ACCESS).unwrap();
        let rs: Vec<[Sge; 1]> = (0..6).map(|i| [Sge::from_mr(&mr, i * 64, 64)]).collect();
        let rw: Vec<_> = rs.iter().enumerate().map(|(i, s)| RecvWr::new(i as u64, s)).collect();
        b.post_recv(&rw).unwrap();
        let sw: Vec<_> = (0..5u64).map(|i| SendWr::send(100 + i, &[]).inline(b"q").flags(SIG)).collect();
        a.post_send(&sw).unwrap();
        wait(&rcq, 5);
        std::thread::sleep(Duration::from_millis(500));
        // The five send completions wait in the 8-entry ring of the CQ the
        // QPs still use (a QP's destroy would drop them on mlx5, as
        // libmlx5's mlx5_destroy_qp cleans its CQs).
        scq.resize(64).expect("ibv_resize_cq with completions queued");
        assert!(scq.cqe() >= 64);
        let got = wait(&scq, 5);
        assert_eq!(got.iter().map(|w| w.wr_id()).collect::<Vec<_>>(), [100, 101, 102, 103, 104]);
        assert!(got.iter().all(|w| w.status() == WcStatus::Success));
        // The ring goes on in the new buffer.
        a.post_send(&[SendWr::send(105, &[]).inline(b"q").flags(SIG)]).unwrap();
        assert_eq!(wait(&scq, 1)[0].wr_id(), 105);
        assert_eq!(wait(&rcq, 1)[0].wr_id(), 5);
    }
    assert_quiet(&scq);
}
