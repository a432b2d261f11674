//! UD multicast through the connection manager on rxe0 (issue 13 item 1):
//! `rdma_join_multicast` / `rdma_leave_multicast` with our QPs on both
//! sides, then our sender to rdma-core's `mckey` receiver (C librdmacm).
//! siw0 has no UD QPs.
//!
//! Not tested: `mckey -s` as the sender. It posts its datagrams
//! unsignaled and destroys its QP right after posting, so rxe (which sends
//! from a work queue) drops whatever it had not sent yet; under TCG that
//! is usually all of them, whoever receives (seen with mckey's own
//! receiver too).

use core::net::SocketAddr;
use core::time::Duration;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use verbs::cm::{CmId, EventChannel, EventKind, Membership, PortSpace, UdPeer, MULTICAST_QPN, RDMA_UDP_QKEY};
use verbs::qp::{QueuePair, Rts, Ud, UdQp};
use verbs::wr::{RecvWr, SendWr, Sge, UdDest};
use verbs::{Ah, Cq, ErrorKind, Mr, Pd};

use super::cm_rig::{cm_devices, ip_of, open, CM_TIMEOUT_MS};
use super::rig::{assert_quiet, init_attr, wait, ALL_ACCESS, CAP};

/// A UD id bound to the device's address and resolved to `group`, as
/// `mckey` prepares its ids.
fn resolved<'ch>(ch: &'ch EventChannel, ip: &str, group: &SocketAddr) -> CmId<'ch> {
    let id = CmId::create(ch, PortSpace::Udp).expect("rdma_create_id");
    let local: SocketAddr = format!("{ip}:0").parse().unwrap();
    id.resolve_addr(Some(&local), group, 5000).expect("rdma_resolve_addr");
    id.wait(EventKind::AddrResolved, CM_TIMEOUT_MS).expect("ADDR_RESOLVED");
    id
}

/// Joins and waits for the join event; returns the membership and the
/// group's address as the event gives it.
fn join<'id, 'ch>(id: &'id CmId<'ch>, group: &SocketAddr, send_only: bool) -> (Membership<'id, 'ch>, UdPeer) {
    let m = id.join_multicast(group, send_only).expect("rdma_join_multicast");
    let ev = id.wait(EventKind::MulticastJoin, CM_TIMEOUT_MS).expect("MULTICAST_JOIN");
    assert!(ev.is_for_membership(&m), "the join event names the membership");
    assert_eq!(ev.status(), 0);
    let ud = ev.ud();
    assert_eq!((ud.qp_num, ud.qkey), (MULTICAST_QPN, RDMA_UDP_QKEY), "{ud:?}");
    // RoCE v2 over IPv4: the group's GID is the IPv4-mapped address.
    let SocketAddr::V4(g) = group else { unreachable!() };
    let grh = ud.ah_attr.grh.expect("a RoCE group address has a GRH");
    let mut want = [0u8; 16];
    want[10..12].copy_from_slice(&[0xff, 0xff]);
    want[12..].copy_from_slice(&g.ip().octets());
    assert_eq!(grh.dgid, want, "multicast GID ::ffff:{}", g.ip());
    (m, ud)
}

fn ud_qp<'a>(id: &CmId<'_>, pd: &'a Pd<'a>, cq: &'a Cq<'a>) -> QueuePair<'a, Ud, Rts> {
    id.init_ud_qp(UdQp::create(pd, init_attr(cq, cq, None, CAP)).expect("UD QP")).map_err(|e| e.error).expect("UD up")
}

fn group(last: u8) -> SocketAddr {
    format!("224.0.1.{last}:0").parse().unwrap()
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cm_multicast_join_send_receive_leave() {
    let dev = &cm_devices()[0];
    let ip = ip_of(dev);
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (rcq, scq) = (Cq::create(&ctx, 16, None, 0).unwrap(), Cq::create(&ctx, 16, None, 0).unwrap());
    let g = group(41);
    let ch = [EventChannel::create().unwrap(), EventChannel::create().unwrap()];

    // Joining needs a bound id: the kernel refuses, and says so.
    let unbound = CmId::create(&ch[0], PortSpace::Udp).unwrap();
    let e = unbound.join_multicast(&g, false).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("rdma_join_multicast", ErrorKind::InvalidArgument), "{e}");
    drop(unbound);

    let rid = resolved(&ch[0], &ip, &g);
    let mut rqp = ud_qp(&rid, &pd, &rcq);
    let (member, group_addr) = join(&rid, &g, false);
    let grh = group_addr.ah_attr.grh.unwrap();
    rqp.attach_mcast(&grh.dgid, group_addr.ah_attr.dlid).expect("ibv_attach_mcast");

    let sid = resolved(&ch[1], &ip, &g);
    let mut sqp = ud_qp(&sid, &pd, &scq);
    let (sender, to_group) = join(&sid, &g, true);
    let ah = Ah::create(&pd, &to_group.ah_attr).expect("ibv_create_ah (group)");
    let dest = UdDest { ah: &ah, remote_qpn: MULTICAST_QPN, remote_qkey: to_group.qkey };

    let mut mr = Mr::alloc(&pd, 4096, ALL_ACCESS).unwrap();
    for i in 0..3u64 {
        rqp.post_recv(&[RecvWr::new(i, &[Sge::from_mr(&mr, 1024 + 128 * i as usize, 40 + 64)])]).unwrap();
        mr.write_at(64 * i as usize, &[b'a' + i as u8; 64]).unwrap();
    }
    let sges: Vec<_> = (0..3).map(|i| [Sge::from_mr(&mr, 64 * i, 64)]).collect();
    let wrs: Vec<_> = sges.iter().enumerate().map(|(i, s)| SendWr::send(10 + i as u64, s).ud(dest).signaled()).collect();
    sqp.post_send(&wrs).expect("multicast sends");
    assert!(wait(&scq, 3).iter().all(|w| w.status().is_success()));
    let got = wait(&rcq, 3);
    for (i, w) in got.iter().enumerate() {
        assert!(w.status().is_success() && w.wr_id() == i as u64 && w.byte_len() == 40 + 64, "{w:?}");
        assert_eq!(w.src_qp(), sqp.qp_num(), "the datagram names its sender");
        let mut b = [0u8; 64];
        mr.read_at(1024 + 128 * i + 40, &mut b).unwrap();
        assert_eq!(b, [b'a' + i as u8; 64]);
    }

    // Detached and left: the next datagram reaches nobody.
    rqp.detach_mcast(&grh.dgid, group_addr.ah_attr.dlid).expect("ibv_detach_mcast");
    assert_eq!(member.leave().expect("rdma_leave_multicast"), 1, "one event (the join) reported");
    rqp.post_recv(&[RecvWr::new(9, &[Sge::from_mr(&mr, 2048, 40 + 64)])]).unwrap();
    sqp.post_send(&[SendWr::send(20, &sges[0]).ud(dest).signaled()]).unwrap();
    wait(&scq, 1);
    assert_quiet(&rcq);
    drop(sender);
}

/// rdma-core's `mckey` with `args`, stdout line-buffered and read by a
/// thread, which forwards each line.
fn mckey(args: &[&str]) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = Command::new("stdbuf")
        .arg("-oL")
        .arg("mckey")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("run mckey (rdmacm-utils)");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            eprintln!("mckey: {line}");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn exit_within(child: &mut Child, secs: u64) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mckey did not finish in {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_cm_multicast_we_send_to_c_mckey() {
    let dev = &cm_devices()[0];
    let ip = ip_of(dev);
    let (mut c, lines) = mckey(&["-m", "224.0.1.43", "-b", &ip, "-C", "5", "-S", "100"]);
    // Its receives are posted once it says so.
    let start = Instant::now();
    loop {
        let line = lines.recv_timeout(Duration::from_secs(60)).expect("mckey receiver starts");
        if line.contains("receiving data transfers") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60));
    }
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let g = group(43);
    let ch = EventChannel::create().unwrap();
    let id = resolved(&ch, &ip, &g);
    let mut qp = ud_qp(&id, &pd, &cq);
    let (_m, ga) = join(&id, &g, true);
    let ah = Ah::create(&pd, &ga.ah_attr).unwrap();
    let dest = UdDest { ah: &ah, remote_qpn: MULTICAST_QPN, remote_qkey: ga.qkey };
    let mr = Mr::alloc(&pd, 4096, ALL_ACCESS).unwrap();
    for i in 0..5u64 {
        qp.post_send(&[SendWr::send(i, &[Sge::from_mr(&mr, 0, 100)]).ud(dest).signaled()]).unwrap();
        wait(&cq, 1);
    }
    assert_eq!(exit_within(&mut c, 60), Some(0), "mckey receiver got all 5");
}
