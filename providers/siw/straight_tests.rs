//! siw's straight paths on plain memory (a memfd plays the kernel, as in
//! `tests.rs`): every request the straight path takes leaves the element
//! byte for byte as the general path ([`post_send`] / [`post_recv`])
//! writes it, with the same doorbell decision; every request it leaves
//! is left untouched (nothing written, nothing handed over).

use core::mem::size_of;

use rustix::fd::OwnedFd;

use super::abi::*;
use super::post::{give_recv_one, post_gather, post_recv, post_recv_list, post_send, SendLimits};
use super::ring::{RecvRing, Ring, SendRing};
use super::straight::{post_recv_straight, post_send_straight};
use crate::abi::uverbs::{WR_ATOMIC_CMP_AND_SWP, WR_RDMA_READ, WR_RDMA_WRITE, WR_RDMA_WRITE_WITH_IMM, WR_SEND, WR_SEND_WITH_IMM, WR_SEND_WITH_INV};
use crate::mmap::Mapping;
use crate::providers::seam::{Plain, StraightWr};
use crate::qp::kind::QpType;
use crate::wr::{Payload, RecvWr, SendFlags, SendOp, SendWr, Sge};

fn ring<const E: usize>(n: u32) -> (OwnedFd, Ring<E>, Mapping) {
    let fd = rustix::fs::memfd_create("verbs-siw-straight", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    let len = n as usize * E;
    rustix::fs::ftruncate(&fd, len as u64).unwrap();
    let kernel = Mapping::new("test", &fd, 0, len).unwrap();
    let r = Ring::<E>::map("test", &fd, 0, n, 0).unwrap();
    (fd, r, kernel)
}

/// The bytes of element `i`.
fn bytes<const E: usize>(k: &mut Mapping, i: usize) -> [u8; E] {
    k.read::<[u8; E]>(i * E).unwrap()
}

/// A request as the straight path reads it (what the C library's
/// `ibv_send_wr` gives).
#[derive(Clone, Copy)]
struct Req<'a> {
    opcode: u32,
    flags: u32,
    data: Option<Plain<'a>>,
    wr_id: u64,
    ex: u32,
    remote: (u64, u32),
}

impl StraightWr for Req<'_> {
    fn opcode(&self) -> u32 {
        self.opcode
    }
    fn flags(&self) -> u32 {
        self.flags
    }
    fn data(&self) -> Option<Plain<'_>> {
        self.data
    }
    fn wr_id(&self) -> u64 {
        self.wr_id
    }
    fn ex(&self) -> u32 {
        self.ex
    }
    /// `(0, 0)` but for an RDMA operation (the trait's contract).
    fn remote(&self) -> (u64, u32) {
        if self.opcode == WR_RDMA_WRITE || self.opcode == WR_RDMA_READ {
            self.remote
        } else {
            (0, 0)
        }
    }
}

/// The same request as a `SendWr` (for the operations siw has).
fn send_wr<'a>(r: &Req<'a>, sge: &'a [Sge]) -> SendWr<'a> {
    let op = match r.opcode {
        WR_SEND => SendOp::Send,
        WR_SEND_WITH_INV => SendOp::SendWithInv { invalidate_rkey: r.ex },
        WR_RDMA_WRITE => SendOp::RdmaWrite { remote_addr: r.remote.0, rkey: r.remote.1 },
        WR_RDMA_READ => SendOp::RdmaRead { remote_addr: r.remote.0, rkey: r.remote.1 },
        _ => unreachable!(),
    };
    let payload = match r.data.unwrap() {
        Plain::Empty => Payload::Sges(&[]),
        Plain::Sge(_) => Payload::Sges(sge),
        Plain::Inline(d) => Payload::Inline(d),
    };
    SendWr { wr_id: r.wr_id, payload, op, flags: SendFlags::from_bits_retain(r.flags), ud: None }
}

const SQE: usize = size_of::<SiwSqe>();
const RQE: usize = size_of::<SiwRqe>();

#[test]
fn a_straight_send_writes_what_the_general_path_writes() {
    let g = [Sge { addr: 0x1000, length: 8, lkey: 7 }];
    let data: [Plain<'_>; 4] = [Plain::Empty, Plain::Sge(&g[0]), Plain::Inline(b"inline bytes"), Plain::Inline(b"")];
    for sig_all in [false, true] {
        let lim = SendLimits { max_sge: 2, max_inline: 64, sig_all };
        for opcode in [WR_SEND, WR_SEND_WITH_INV, WR_RDMA_WRITE, WR_RDMA_READ] {
            for flags in 0..8 {
                for d in data {
                    let r = Req { opcode, flags, data: Some(d), wr_id: 0x1234_5678_9abc, ex: 0x55, remote: (0xdead_0000, 99) };
                    let (_f1, mut a, mut ka) = ring::<SQE>(4);
                    let (_f2, mut b, mut kb) = ring::<SQE>(4);
                    let (a, b): (&mut SendRing, &mut SendRing) = (&mut a, &mut b);
                    // The third element of each, the one before it still the kernel's.
                    for q in [&mut *a, &mut *b] {
                        let w = SendWr::send(0, &[]);
                        assert!(post_send(q, &lim, &[w, w]).is_ok());
                    }
                    assert!(kb.write::<u16>(8, 0) && ka.write::<u16>(8, 0));
                    let general = post_send(a, &lim, &[send_wr(&r, &g)]);
                    let straight = post_send_straight(b, QpType::Rc, &lim, &r);
                    let what = format!("opcode {opcode} flags {flags} sig_all {sig_all}");
                    match straight {
                        Some(ring) => assert_eq!(general.ok(), Some(ring), "{what}: the doorbell decision"),
                        // Left for the general path, which refuses it:
                        // nothing written.
                        None => {
                            assert!(general.is_err(), "{what}: a request siw posts was left");
                            assert!(bytes::<SQE>(&mut kb, 2).iter().all(|&x| x == 0), "{what}");
                            continue;
                        }
                    }
                    assert_eq!(bytes::<SQE>(&mut ka, 2), bytes::<SQE>(&mut kb, 2), "{what}");
                    // The next post starts at the next element in both.
                    assert!(post_send(a, &lim, &[SendWr::send(9, &[])]).is_ok());
                    assert!(post_send(b, &lim, &[SendWr::send(9, &[])]).is_ok());
                    assert_eq!(bytes::<SQE>(&mut ka, 3), bytes::<SQE>(&mut kb, 3), "{what}");
                }
            }
        }
    }
}

#[test]
fn the_straight_send_takes_what_siw_posts_and_leaves_the_rest() {
    let lim = SendLimits { max_sge: 1, max_inline: 16, sig_all: false };
    let g = Sge { addr: 0x1000, length: 8, lkey: 7 };
    let big = Sge { addr: 0x1000, length: (1 << 31) + 1, lkey: 7 };
    let base = Req { opcode: WR_RDMA_WRITE, flags: 2, data: Some(Plain::Sge(&g)), wr_id: 1, ex: 0, remote: (0x2000, 5) };
    let taken = |r: &Req<'_>, qp_type: QpType| {
        let (_f, mut q, mut k) = ring::<SQE>(2);
        let got = post_send_straight(&mut q, qp_type, &lim, r);
        if got.is_none() {
            assert!(bytes::<SQE>(&mut k, 0).iter().all(|&x| x == 0), "nothing written");
        }
        got.is_some()
    };
    assert!(taken(&base, QpType::Rc));
    // Not siw's transport, operations or flags.
    assert!(!taken(&base, QpType::Uc));
    for opcode in [WR_SEND_WITH_IMM, WR_RDMA_WRITE_WITH_IMM, WR_ATOMIC_CMP_AND_SWP, 7, 8, 31, 32, 200] {
        assert!(!taken(&Req { opcode, ..base }, QpType::Rc), "opcode {opcode}");
    }
    assert!(!taken(&Req { flags: 8, ..base }, QpType::Rc), "IBV_SEND_INLINE is not a flag here");
    assert!(!taken(&Req { flags: 1 << 7, ..base }, QpType::Rc));
    // Not a straight shape, or siw refuses it.
    assert!(!taken(&Req { data: None, ..base }, QpType::Rc));
    assert!(!taken(&Req { data: Some(Plain::Sge(&big)), ..base }, QpType::Rc));
    assert!(!taken(&Req { data: Some(Plain::Inline(&[0; 17])), ..base }, QpType::Rc), "over max_inline");
    assert!(!taken(&Req { opcode: WR_RDMA_READ, data: Some(Plain::Empty), ..base }, QpType::Rc), "READ needs an SGE");
    assert!(!taken(&Req { opcode: WR_RDMA_READ, flags: 1, ..base }, QpType::Rc), "READ cannot be fenced");
    assert!(!taken(&Req { opcode: WR_RDMA_READ, data: Some(Plain::Inline(b"x")), ..base }, QpType::Rc));
    assert!(!taken(&Req { opcode: WR_SEND_WITH_INV, data: Some(Plain::Inline(b"x")), ..base }, QpType::Rc));
    let none = SendLimits { max_sge: 0, ..lim };
    let (_f, mut q, _k) = ring::<SQE>(2);
    assert!(post_send_straight(&mut q, QpType::Rc, &none, &base).is_none(), "no SGE allowed");
    // A full queue: left for the general path, which names it.
    let (_f, mut q, _k) = ring::<SQE>(1);
    assert_eq!(post_send_straight(&mut q, QpType::Rc, &lim, &base), Some(true), "an array of one always rings");
    assert!(post_send_straight(&mut q, QpType::Rc, &lim, &base).is_none());
}

#[test]
fn a_straight_receive_writes_what_the_general_path_writes() {
    let g = Sge { addr: 0x3000, length: 64, lkey: 3 };
    for sge in [None, Some(&g)] {
        let (_f1, mut a, mut ka) = ring::<RQE>(2);
        let (_f2, mut b, mut kb) = ring::<RQE>(2);
        let (a, b): (&mut RecvRing, &mut RecvRing) = (&mut a, &mut b);
        let sg: &[Sge] = sge.map_or(&[], core::slice::from_ref);
        for _ in 0..2 {
            post_recv("ibv_post_recv", a.producer_mut(), 1, &[RecvWr::new(77, sg)]).unwrap();
            assert!(post_recv_straight(b.producer_mut(), 1, 77, sge));
        }
        for i in 0..2 {
            assert_eq!(bytes::<RQE>(&mut ka, i), bytes::<RQE>(&mut kb, i));
        }
        // Full, and (after the kernel took one) no SGE allowed: left.
        assert!(!post_recv_straight(b.producer_mut(), 1, 78, sge));
        assert!(kb.write::<u16>(8, 0));
        let before = bytes::<RQE>(&mut kb, 0);
        assert_eq!(post_recv_straight(b.producer_mut(), 0, 78, sge), sge.is_none());
        if sge.is_some() {
            assert_eq!(bytes::<RQE>(&mut kb, 0), before, "nothing written");
        }
    }
}

/// The native straight path ([`post_gather`]): every request it takes is
/// written byte for byte as the general path writes it, with the same
/// doorbell decision; every request it leaves is left untouched, and it
/// leaves everything the general path refuses.
#[test]
fn the_native_straight_send_writes_what_the_general_path_writes() {
    let g = [Sge { addr: 0x1000, length: 8, lkey: 7 }, Sge { addr: 0x2000, length: 4, lkey: 8 }];
    let big = [Sge { addr: 0x1000, length: (1 << 31) + 1, lkey: 7 }];
    let max = [Sge { addr: 0x1000, length: 1 << 31, lkey: 7 }];
    let payloads: [Payload<'_>; 6] =
        [Payload::Sges(&[]), Payload::Sges(&g[..1]), Payload::Sges(&g), Payload::Sges(&big), Payload::Sges(&max), Payload::Inline(b"x")];
    let ops = [
        SendOp::Send,
        SendOp::SendWithInv { invalidate_rkey: 0x55 },
        SendOp::RdmaWrite { remote_addr: 0xdead_0000, rkey: 99 },
        SendOp::RdmaRead { remote_addr: 0xbeef_0000, rkey: 98 },
        SendOp::SendWithImm { imm: 3 },
        SendOp::RdmaWriteWithImm { remote_addr: 1, rkey: 2, imm: 3 },
        SendOp::AtomicFetchAdd { remote_addr: 8, rkey: 2, add: 1 },
        SendOp::LocalInv { rkey: 4 },
    ];
    let mut taken = 0;
    for (sig_all, max_sge) in [(false, 2), (true, 2), (false, 0)] {
        let lim = SendLimits { max_sge, max_inline: 64, sig_all };
        for op in ops {
            for flags in [0, 1, 2, 3, 4, 5, 6, 7, 8, 0x80] {
                for payload in payloads {
                    let wr = SendWr { wr_id: 0x1234_5678_9abc, payload, op, flags: SendFlags::from_bits_retain(flags), ud: None };
                    for pending in [false, true] {
                        let (_f1, mut a, mut ka) = ring::<SQE>(4);
                        let (_f2, mut b, mut kb) = ring::<SQE>(4);
                        let (a, b): (&mut SendRing, &mut SendRing) = (&mut a, &mut b);
                        // The third element of each; the one before it still
                        // the kernel's, or taken.
                        for q in [&mut *a, &mut *b] {
                            let w = SendWr::send(0, &[]);
                            assert!(post_send(q, &SendLimits { max_sge: 2, ..lim }, &[w, w]).is_ok());
                        }
                        assert!(kb.write::<u16>(8, 0) && ka.write::<u16>(8, 0));
                        if !pending {
                            assert!(kb.write::<u16>(SQE + 8, 0) && ka.write::<u16>(SQE + 8, 0));
                        }
                        let general = post_send(a, &lim, &[wr]);
                        let straight = post_gather(b, &lim, &[wr]);
                        let what = format!("{op:?} {payload:?} flags {flags} sig_all {sig_all} max_sge {max_sge}");
                        match straight {
                            Some(ring) => assert_eq!(general.ok(), Some(ring), "{what}: the doorbell decision"),
                            None => {
                                assert!(bytes::<SQE>(&mut kb, 2).iter().all(|&x| x == 0), "{what}: nothing written");
                                continue;
                            }
                        }
                        taken += 1;
                        assert_eq!(bytes::<SQE>(&mut ka, 2), bytes::<SQE>(&mut kb, 2), "{what}");
                        // The next post starts at the next element in both.
                        assert!(post_send(a, &lim, &[SendWr::send(9, &[])]).is_ok());
                        assert!(post_send(b, &lim, &[SendWr::send(9, &[])]).is_ok());
                        assert_eq!(bytes::<SQE>(&mut ka, 3), bytes::<SQE>(&mut kb, 3), "{what}");
                    }
                }
            }
        }
    }
    // Four operations (RDMA READ unfenced only), one SGE of an allowed
    // length, known flags, max_sge 2: (3 * 8 + 4 unfenced READs) * 2
    // payloads * 2 sig_all * 2 pending.
    assert_eq!(taken, (3 * 8 + 4) * 2 * 2 * 2);
    // A full queue: left for the general path, which names it.
    let lim = SendLimits { max_sge: 1, max_inline: 0, sig_all: false };
    let w = SendWr::new(1, SendOp::RdmaWrite { remote_addr: 2, rkey: 3 }, &g[..1]);
    let (_f, mut q, _k) = ring::<SQE>(1);
    assert_eq!(post_gather(&mut q, &lim, &[w]), Some(true), "an array of one always rings");
    assert_eq!(post_gather(&mut q, &lim, &[w]), None);
    // Lists are the general path's.
    let (_f, mut q, _k) = ring::<SQE>(4);
    assert_eq!(post_gather(&mut q, &lim, &[w, w]), None);
    assert_eq!(post_gather(&mut q, &lim, &[]), None);
}

/// The one-request receive path writes what the list path writes, and
/// leaves (untouched) what it does not take.
#[test]
fn the_one_request_receive_writes_what_the_list_path_writes() {
    let g = [Sge { addr: 0x3000, length: 64, lkey: 3 }, Sge { addr: 0x4000, length: 8, lkey: 4 }];
    for sg in [&g[..0], &g[..1], &g[..]] {
        for max_sge in [0, 1, 2] {
            let (_f1, mut a, mut ka) = ring::<RQE>(2);
            let (_f2, mut b, mut kb) = ring::<RQE>(2);
            let wr = [RecvWr::new(77, sg)];
            let list = post_recv_list("ibv_post_recv", a.producer_mut(), max_sge, &wr);
            let mut prod = b.producer_mut();
            let one = give_recv_one(&mut prod, max_sge, &wr);
            if one {
                prod.advance(1);
                assert!(list.is_ok(), "{sg:?} {max_sge}");
                assert_eq!(bytes::<RQE>(&mut ka, 0), bytes::<RQE>(&mut kb, 0));
                assert_eq!(a.next(), b.next());
            } else {
                drop(prod);
                assert!(bytes::<RQE>(&mut kb, 0).iter().all(|&x| x == 0), "nothing written");
                assert_eq!(b.next(), 0);
            }
            assert_eq!(one, sg.len() == 1 && max_sge >= 1, "{sg:?} {max_sge}");
        }
    }
}
