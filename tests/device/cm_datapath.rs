//! The data path over connections made by the connection manager, on
//! rxe0 and on siw0 (iWARP QPs reach RTS only this way): SEND, RDMA
//! WRITE, RDMA READ, inline data, a list rung with one doorbell, a bad
//! request in a list posting nothing, verbs iWARP lacks, and the flush of
//! outstanding receives when the peer disconnects.

use verbs::cm::EventKind;
use verbs::qp::{QpStateKind, RcQp, Rts};
use verbs::wr::{RecvWr, SendWr, Sge};
use verbs::{Cq, ErrorKind, Mr, Pd, WcOpcode, WcStatus};

use super::cm_rig::{channels, cm_devices, cm_rc_pair, ip_of, open, CM_TIMEOUT_MS};
use super::rig::{assert_quiet, init_attr, wait, ALL_ACCESS, CAP};

/// Runs `f` on a connected pair on `dev` (client, server, their CQs, one MR
/// of 64 KiB both may use).
fn with_pair(dev: &str, f: impl FnOnce(&mut RcQp<'_, Rts>, &mut RcQp<'_, Rts>, &Cq<'_>, &Cq<'_>, &mut Mr<'_>)) {
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).expect("pd");
    let (cq_c, cq_s) = (Cq::create(&ctx, 64, None, 0).expect("cq"), Cq::create(&ctx, 64, None, 0).expect("cq"));
    let ch = channels();
    let mut p = cm_rc_pair(&ch, &ip_of(dev), &pd, init_attr(&cq_c, &cq_c, None, CAP), init_attr(&cq_s, &cq_s, None, CAP));
    let mut mr = Mr::alloc(&pd, 64 * 1024, ALL_ACCESS).expect("ibv_reg_mr");
    f(&mut p.client, &mut p.server, &cq_c, &cq_s, &mut mr);
}

fn send_write_read(dev: &str) {
    with_pair(dev, |c, s, cq_c, cq_s, mr| {
        mr.write_at(0, &[1u8; 256]).unwrap();
        // SEND 256 bytes into a receive at 4096.
        s.post_recv(&[RecvWr::new(1, &[Sge::from_mr(mr, 4096, 256)])]).expect("post_recv");
        c.post_send(&[SendWr::send(2, &[Sge::from_mr(mr, 0, 256)]).signaled()]).expect("SEND");
        let r = wait(cq_s, 1);
        assert_eq!((r[0].status(), r[0].opcode(), r[0].byte_len(), r[0].wr_id()), (WcStatus::Success, WcOpcode::Recv, 256, 1), "{dev}");
        assert_eq!(wait(cq_c, 1)[0].opcode(), WcOpcode::Send, "{dev}");
        // RDMA WRITE 512 bytes to 8192, then RDMA READ them back to 12288.
        mr.write_at(1024, &[2u8; 512]).unwrap();
        let (addr, rkey) = (mr.addr(), mr.rkey());
        c.post_send(&[
            SendWr::rdma_write(3, &[Sge::from_mr(mr, 1024, 512)], addr + 8192, rkey).signaled(),
            SendWr::rdma_read(4, &[Sge::from_mr(mr, 12288, 512)], addr + 8192, rkey).signaled(),
        ])
        .expect("WRITE + READ, one doorbell");
        let w = wait(cq_c, 2);
        assert!(w.iter().all(|w| w.status() == WcStatus::Success), "{dev}: {w:?}");
        assert_eq!((w[0].opcode(), w[1].opcode()), (WcOpcode::RdmaWrite, WcOpcode::RdmaRead), "{dev}");
        let mut back = [0u8; 512];
        mr.read_at(12288, &mut back).unwrap();
        assert_eq!(back, [2u8; 512], "{dev}: READ returns what WRITE wrote");
        // Inline SEND: bytes, not an address.
        s.post_recv(&[RecvWr::new(5, &[Sge::from_mr(mr, 16384, 64)])]).expect("post_recv");
        c.post_send(&[SendWr::send(6, &[]).inline(b"inline over the connection manager").signaled()]).expect("inline");
        let r = wait(cq_s, 1);
        assert_eq!(r[0].byte_len(), 34, "{dev}");
        let mut got = [0u8; 34];
        mr.read_at(16384, &mut got).unwrap();
        assert_eq!(&got, b"inline over the connection manager");
        wait(cq_c, 1);
        assert_quiet(cq_s);
    });
}

#[test]
#[ignore = "device test: SEND / RDMA WRITE / RDMA READ / inline over rdma_cm on rxe0"]
fn rxe_cm_send_write_read_inline() {
    send_write_read(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: SEND / RDMA WRITE / RDMA READ / inline over rdma_cm on siw0"]
fn siw_cm_send_write_read_inline() {
    send_write_read(&cm_devices()[1]);
}

/// A list of eight SENDs completes in order; a list with a refused request
/// in the middle posts nothing (all-or-nothing, as on rxe).
#[test]
#[ignore = "device test: siw0 post lists, all-or-nothing"]
fn siw_cm_lists_all_or_nothing() {
    with_pair(&cm_devices()[1], |c, s, cq_c, cq_s, mr| {
        let recvs: Vec<_> = (0..8u64).map(|i| [Sge::from_mr(mr, 4096 + 64 * i as usize, 64)]).collect();
        let rwrs: Vec<_> = recvs.iter().enumerate().map(|(i, sg)| RecvWr::new(100 + i as u64, sg)).collect();
        s.post_recv(&rwrs).expect("post_recv list");
        let src = [Sge::from_mr(mr, 0, 64)];
        let (addr, rkey) = (mr.addr(), mr.rkey());
        let bad = [SendWr::send(1, &src), SendWr::fetch_add(2, &src[..1], addr, rkey, 1), SendWr::send(3, &src)];
        let e = c.post_send(&bad).expect_err("siw has no atomics");
        assert_eq!(e.index, 1, "{e}");
        let sends: Vec<_> = (0..8u64).map(|i| SendWr::send(10 + i, &src).signaled()).collect();
        c.post_send(&sends).expect("list of 8");
        let r = wait(cq_s, 8);
        let ids: Vec<u64> = r.iter().map(|w| w.wr_id()).collect();
        assert_eq!(ids, (100..108).collect::<Vec<_>>(), "the refused list sent nothing: receives are used in order by the 8 SENDs alone");
        let ids: Vec<u64> = wait(cq_c, 8).iter().map(|w| w.wr_id()).collect();
        assert_eq!(ids, (10..18).collect::<Vec<_>>());
        assert_quiet(cq_s);
    });
}

/// Atomics are refused on siw with an Unsupported-kind error naming the verb.
#[test]
#[ignore = "device test: siw0 refuses atomics"]
fn siw_cm_atomics_unsupported() {
    with_pair(&cm_devices()[1], |c, _s, _cq_c, _cq_s, mr| {
        let sg = [Sge::from_mr(mr, 0, 8)];
        let e = c.post_send(&[SendWr::compare_swap(1, &sg, mr.addr(), mr.rkey(), 0, 1)]).expect_err("no atomics");
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert_eq!(e.error.verb(), "ibv_post_send");
    });
}

/// The peer disconnects with receives outstanding: every receive
/// completes, flushed, once the QP is in ERROR.
fn disconnect_flushes(dev: &str) {
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).expect("pd");
    let (cq_c, cq_s) = (Cq::create(&ctx, 64, None, 0).expect("cq"), Cq::create(&ctx, 64, None, 0).expect("cq"));
    let ch = channels();
    let mut p = cm_rc_pair(&ch, &ip_of(dev), &pd, init_attr(&cq_c, &cq_c, None, CAP), init_attr(&cq_s, &cq_s, None, CAP));
    let mr = Mr::alloc(&pd, 4096, ALL_ACCESS).expect("mr");
    let sgs: Vec<_> = (0..4usize).map(|i| [Sge::from_mr(&mr, 64 * i, 64)]).collect();
    let wrs: Vec<_> = sgs.iter().enumerate().map(|(i, sg)| RecvWr::new(50 + i as u64, sg)).collect();
    p.server.post_recv(&wrs).expect("post_recv");
    p.client_id.disconnect().expect("rdma_disconnect");
    p.server_id.wait(EventKind::Disconnected, CM_TIMEOUT_MS).expect("DISCONNECTED");
    // IB/RoCE: the application moves the QP to ERROR (librdmacm does it in
    // rdma_disconnect); iWARP: the kernel already did.
    let state = p.server.query().expect("query").qp_state;
    let server = if state == Some(QpStateKind::Error) { None } else { Some(p.server.into_error().map_err(|e| e.error).expect("to ERROR")) };
    let r = wait(&cq_s, 4);
    assert!(r.iter().all(|w| w.status() == WcStatus::WrFlushErr), "{dev}: {r:?}");
    let ids: Vec<u64> = r.iter().map(|w| w.wr_id()).collect();
    assert_eq!(ids, vec![50, 51, 52, 53], "{dev}");
    drop(server);
}

#[test]
#[ignore = "device test: receives flushed after the peer disconnects, rxe0"]
fn rxe_cm_disconnect_flushes_receives() {
    disconnect_flushes(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: receives flushed after the peer disconnects, siw0"]
fn siw_cm_disconnect_flushes_receives() {
    disconnect_flushes(&cm_devices()[1]);
}
