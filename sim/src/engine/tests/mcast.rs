//! UD multicast: a datagram to a group reaches every attached UD QP (each
//! behind its GRH, each with its own Q_Key check), nobody after a detach,
//! nobody when the DestQP is not 0xffffff, and not its own sender when
//! that was created with BLOCK_SELF_MCAST_LB.

use super::*;
use crate::engine::{cqe_op, op, MULTICAST_QPN};

const RW: u32 = access::LOCAL_WRITE | access::REMOTE_WRITE;
/// ::ffff:224.0.1.3, rdma_cm's RoCE v2 form of the IPv4 group.
const GROUP: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 224, 0, 1, 3];
const QKEY: u32 = 0x1111_1111;

/// A datagram segment to `GROUP` with DestQP `qpn`, source GID index 3.
fn to_group(qpn: u32) -> Vec<u8> {
    let mut b = datagram(qpn, QKEY);
    b[28..32].copy_from_slice(&((1u32 << 30) | (3 << 20)).to_be_bytes());
    b[32..48].copy_from_slice(&GROUP);
    b
}

fn attach(r: &mut Rig, qpn: u32) {
    r.dev.qps.get_mut(&qpn).unwrap().mcast.push((GROUP, 0));
}

#[test]
fn a_group_datagram_reaches_every_member_and_no_one_else() {
    let mut r = Rig::new();
    let mut port = [0u8; 16];
    port[10..].copy_from_slice(&[0xff, 0xff, 10, 251, 0, 1]);
    r.dev.gids = vec![[0; 16], [0; 16], port, port];
    let (ca, cb) = (r.cq(A, 16, 64), r.cq(B, 16, 64));
    let qa = r.qp(A, QpType::Ud, ca, 16, None);
    let (m1, m2, other) = (r.qp(B, QpType::Ud, cb, 16, None), r.qp(B, QpType::Ud, cb, 16, None), r.qp(B, QpType::Ud, cb, 16, None));
    attach(&mut r, m1);
    attach(&mut r, m2);
    let (kb, xb) = r.mr(B, 4096, RW);
    for (i, q) in [m1, m2, other].into_iter().enumerate() {
        for j in 0..2 {
            r.recv(q, &[(45, kb, xb + 128 * (2 * i as u64 + j))]);
        }
    }
    r.send(qa, op::SEND, &[to_group(MULTICAST_QPN), inline(b"hello")]);
    let mut got = r.poll(cb);
    got.sort_by_key(|c| c.qpn);
    assert_eq!(got.len(), 2, "{got:?}");
    for (c, q) in got.iter().zip([m1, m2]) {
        assert_eq!((c.opcode, c.qpn, c.byte_cnt, c.flags_rqpn & 0xff_ffff), (cqe_op::RESP_SEND, q, 45, qa));
    }
    let grh = r.read(B, xb, 45);
    assert_eq!(&grh[40..], b"hello");
    assert_eq!(&grh[32..40], &[10, 251, 0, 1, 224, 0, 1, 3], "IPv4 source the sender's GID, destination the group");
    assert_eq!(r.read(B, xb + 128 * 4, 5), [0; 5], "a QP not in the group got nothing");

    // Another DestQP: no receiver takes it (the requester still completes).
    r.send(qa, op::SEND, &[to_group(m1), inline(b"x")]);
    assert!(r.poll(cb).is_empty());
    // Detached: only the other member.
    r.dev.qps.get_mut(&m2).unwrap().mcast.clear();
    r.send(qa, op::SEND, &[to_group(MULTICAST_QPN), inline(b"again")]);
    let got = r.poll(cb);
    assert_eq!((got.len(), got[0].qpn), (1, m1));
    assert_eq!(r.poll(ca).len(), 3, "the UD requester always completes");
}

#[test]
fn the_sender_gets_its_own_datagram_unless_it_blocks_self_loopback() {
    let mut r = Rig::new();
    let ca = r.cq(A, 16, 64);
    let qa = r.qp(A, QpType::Ud, ca, 16, None);
    attach(&mut r, qa);
    let (ka, xa) = r.mr(A, 4096, RW);
    r.recv(qa, &[(45, ka, xa)]);
    r.recv(qa, &[(45, ka, xa + 128)]);
    r.send(qa, op::SEND, &[to_group(MULTICAST_QPN), inline(b"me")]);
    let got = r.poll(ca);
    assert_eq!(got.iter().filter(|c| c.opcode == cqe_op::RESP_SEND).count(), 1, "{got:?}");
    r.dev.qps.get_mut(&qa).unwrap().block_self_mcast_lb = true;
    r.send(qa, op::SEND, &[to_group(MULTICAST_QPN), inline(b"me")]);
    let got = r.poll(ca);
    assert_eq!(got.iter().map(|c| c.opcode).collect::<Vec<_>>(), [cqe_op::REQ]);
}
