//! The siw data path on plain memory: a memfd stands in for the device
//! file, the test plays the kernel through a second mapping of it.

use core::mem::{offset_of, size_of};
use core::sync::atomic::Ordering;

use rustix::fd::OwnedFd;
use zerocopy::FromZeros;

use super::abi::*;
use super::poll::{poll, poll_with, UNKNOWN_OPCODE_BASE};
use super::post::{post_recv, post_send, SendLimits};
use super::ring::{CqRing, RecvRing, Ring, SendRing};
use crate::error::ErrorKind;
use crate::mmap::Mapping;
use crate::providers::claim::Claim;
use crate::wc::{Wc, WcOpcode, WcStatus};
use crate::wr::{RecvWr, SendFlags, SendOp, SendWr, Sge};

/// A ring of `n` elements and the "kernel's" mapping of the same memory.
fn ring<const E: usize>(n: u32, tail: usize) -> (OwnedFd, Ring<E>, Mapping) {
    let fd = rustix::fs::memfd_create("verbs-siw-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    let len = n as usize * E + tail;
    rustix::fs::ftruncate(&fd, len as u64).unwrap();
    let kernel = Mapping::new("test", &fd, 0, len).unwrap();
    let r = Ring::<E>::map("test", &fd, 0, n, tail).unwrap();
    (fd, r, kernel)
}

fn sqe(k: &mut Mapping, i: usize) -> SiwSqe {
    k.read::<SiwSqe>(i * size_of::<SiwSqe>()).unwrap()
}

fn rqe(k: &mut Mapping, i: usize) -> SiwRqe {
    k.read::<SiwRqe>(i * size_of::<SiwRqe>()).unwrap()
}

/// The kernel takes element `i` of a work queue (clears its flags).
fn take(k: &mut Mapping, i: usize, elem: usize) {
    assert!(k.write::<u16>(i * elem + 8, 0));
}

const LIM: SendLimits = SendLimits { max_sge: 2, max_inline: 64, sig_all: false };

#[test]
fn send_elements_carry_what_siw_reads() {
    let (_fd, mut sq, mut k) = ring::<{ size_of::<SiwSqe>() }>(4, 0);
    let sq: &mut SendRing = &mut sq;
    let sg = [Sge { addr: 0x1000, length: 10, lkey: 7 }, Sge { addr: 0x2000, length: 20, lkey: 8 }];
    let wrs = [
        SendWr::send(1, &sg).signaled(),
        SendWr::rdma_write(2, &sg[..1], 0xdead_0000, 99).flags(SendFlags::FENCE | SendFlags::SOLICITED),
        SendWr::rdma_read(3, &sg[1..], 0xbeef_0000, 98),
        SendWr::new(4, SendOp::SendWithInv { invalidate_rkey: 0x55 }, &[]).inline(b"").signaled(),
    ];
    // SEND with invalidate cannot be inline: the list is refused whole.
    let e = post_send(sq, &LIM, &wrs).unwrap_err();
    assert_eq!((e.index, e.kind()), (3, ErrorKind::Unsupported));
    for i in 0..4 {
        assert_eq!(sqe(&mut k, i).flags, 0, "nothing handed over");
    }
    let wrs = [wrs[0], wrs[1], wrs[2], SendWr::new(4, SendOp::SendWithInv { invalidate_rkey: 0x55 }, &[]).signaled()];
    assert!(post_send(sq, &LIM, &wrs).unwrap(), "an idle queue needs the doorbell");
    let s = sqe(&mut k, 0);
    assert_eq!((s.id, s.opcode, s.num_sge, s.flags), (1, SIW_OP_SEND, 2, SIW_WQE_VALID | SIW_WQE_SIGNALLED));
    assert_eq!((s.sge[1].laddr, s.sge[1].length, s.sge[1].lkey), (0x2000, 20, 8));
    let s = sqe(&mut k, 1);
    assert_eq!((s.opcode, s.raddr, s.rkey, s.num_sge), (SIW_OP_WRITE, 0xdead_0000, 99, 1));
    assert_eq!(s.flags, SIW_WQE_VALID | SIW_WQE_READ_FENCE | SIW_WQE_SOLICITED);
    let s = sqe(&mut k, 2);
    assert_eq!((s.opcode, s.raddr, s.rkey, s.flags), (SIW_OP_READ, 0xbeef_0000, 98, SIW_WQE_VALID));
    let s = sqe(&mut k, 3);
    assert_eq!((s.opcode, s.rkey, s.num_sge), (SIW_OP_SEND_REMOTE_INV, 0x55, 0));
    // Full: nothing more fits until the kernel takes some.
    let one = [SendWr::send(5, &sg[..1])];
    assert_eq!(post_send(sq, &LIM, &one).unwrap_err().kind(), ErrorKind::QueueFull);
    take(&mut k, 0, size_of::<SiwSqe>());
    // The previous element (3) is still the kernel's: no doorbell.
    assert!(!post_send(sq, &LIM, &one).unwrap());
    assert_eq!(sqe(&mut k, 0).id, 5);
}

#[test]
fn inline_data_sits_in_sge_1_on() {
    let (_fd, mut sq, mut k) = ring::<{ size_of::<SiwSqe>() }>(2, 0);
    let data: Vec<u8> = (0..64).collect();
    let lim = SendLimits::new(6, 200, true);
    assert_eq!(lim.max_inline, SIW_MAX_INLINE, "capped at what the element holds");
    post_send(&mut sq, &lim, &[SendWr::rdma_write(9, &[], 0x10, 3).inline(&data)]).unwrap();
    let s = sqe(&mut k, 0);
    assert_eq!(s.flags, SIW_WQE_VALID | SIW_WQE_INLINE | SIW_WQE_SIGNALLED, "sq_sig_all signals");
    assert_eq!((s.num_sge, s.sge[0].length), (1, 64));
    let at = offset_of!(SiwSqe, sge) + size_of::<SiwSge>();
    let bytes: Vec<u8> = (0..64).map(|i| k.read::<u8>(at + i).unwrap()).collect();
    assert_eq!(bytes, data);
    let big = [0u8; 81];
    let e = post_send(&mut sq, &lim, &[SendWr::send(1, &[]).inline(&big)]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InlineTooLarge);
}

#[test]
fn what_siw_lacks_is_refused_before_anything_is_written() {
    let (_fd, mut sq, mut k) = ring::<{ size_of::<SiwSqe>() }>(8, 0);
    let sg = [Sge { addr: 0x1000, length: 8, lkey: 1 }];
    let two = [sg[0], sg[0]];
    let cases: [(SendWr<'_>, ErrorKind); 8] = [
        (SendWr::send_with_imm(1, &sg, 5), ErrorKind::Unsupported),
        (SendWr::rdma_write_with_imm(1, &sg, 8, 1, 5), ErrorKind::Unsupported),
        (SendWr::fetch_add(1, &sg, 8, 1, 1), ErrorKind::Unsupported),
        (SendWr::compare_swap(1, &sg, 8, 1, 1, 2), ErrorKind::Unsupported),
        (SendWr::new(1, SendOp::LocalInv { rkey: 3 }, &[]), ErrorKind::Unsupported),
        (SendWr::rdma_read(1, &[], 8, 1), ErrorKind::InvalidArgument),
        (SendWr::rdma_read(1, &two, 8, 1), ErrorKind::TooManySge),
        (SendWr::rdma_read(1, &sg, 8, 1).flags(SendFlags::FENCE), ErrorKind::Unsupported),
    ];
    for (wr, kind) in cases {
        let e = post_send(&mut sq, &LIM, &[SendWr::send(0, &sg), wr]).unwrap_err();
        assert_eq!((e.index, e.kind(), e.error.verb()), (1, kind, "ibv_post_send"), "{wr:?}");
        assert!(e.error.detail().is_some());
    }
    for i in 0..8 {
        assert_eq!(sqe(&mut k, i).flags, 0);
    }
    assert_eq!(sq.next(), 0, "the position did not move");
}

#[test]
fn receives_are_handed_over_with_valid_only() {
    let (_fd, mut rq, mut k) = ring::<{ size_of::<SiwRqe>() }>(2, 0);
    let rq: &mut RecvRing = &mut rq;
    let sg = [Sge { addr: 0x1000, length: 10, lkey: 7 }];
    let too_many = [sg[0]; 3];
    let e = post_recv("ibv_post_recv", rq.producer_mut(), 2, &[RecvWr::new(1, &sg), RecvWr::new(2, &too_many)]).unwrap_err();
    assert_eq!((e.index, e.kind()), (1, ErrorKind::TooManySge));
    assert_eq!(rqe(&mut k, 0).flags, 0);
    post_recv("ibv_post_recv", rq.producer_mut(), 2, &[RecvWr::new(1, &sg), RecvWr::new(2, &[])]).unwrap();
    let r = rqe(&mut k, 0);
    assert_eq!((r.id, r.flags, r.num_sge, r.sge[0].length), (1, SIW_WQE_VALID, 1, 10));
    assert_eq!((rqe(&mut k, 1).id, rqe(&mut k, 1).num_sge), (2, 0));
    let e = post_recv("ibv_post_srq_recv", rq.producer_shared(), 2, &[RecvWr::new(3, &sg)]).unwrap_err();
    assert_eq!((e.index, e.kind(), e.error.verb()), (0, ErrorKind::QueueFull, "ibv_post_srq_recv"));
    take(&mut k, 0, size_of::<SiwRqe>());
    post_recv("ibv_post_srq_recv", rq.producer_shared(), 2, &[RecvWr::new(3, &sg)]).unwrap();
    assert_eq!(rqe(&mut k, 0).id, 3);
}

/// A CQ holding completions `(id, opcode, status)` written as the kernel
/// writes them (body, then flags).
fn cq_with(cqes: &[(u64, u8, u16)]) -> (OwnedFd, CqRing, Mapping) {
    let (fd, cq, mut k) = ring::<{ size_of::<SiwCqe>() }>(4, size_of::<SiwCqCtrl>());
    for (i, &(id, opcode, status)) in cqes.iter().enumerate() {
        let mut c = SiwCqe::new_zeroed();
        (c.id, c.opcode, c.status, c.bytes, c.qp_id) = (id, opcode, status, 100 + id as u32, 77);
        assert!(k.write(i * 32, c));
        assert!(k.write::<u8>(i * 32 + 8, SIW_WQE_VALID as u8));
    }
    (fd, cq, k)
}

#[test]
fn completions_translate_to_ibv_wc() {
    let (_fd, cq, mut k) = cq_with(&[
        (1, SIW_OP_RECEIVE, SIW_WC_WR_FLUSH_ERR),
        (2, SIW_OP_READ, SIW_WC_SUCCESS),
        (3, SIW_OP_SEND_REMOTE_INV, SIW_WC_REM_ACCESS_ERR),
        (4, 42, 200),
    ]);
    let mut out = [Wc::ZERO; 8];
    assert_eq!(poll(&cq, &mut out[..1]), Ok(1));
    assert_eq!((out[0].wr_id(), out[0].status(), out[0].opcode()), (1, WcStatus::WrFlushErr, WcOpcode::Recv));
    assert_eq!((out[0].byte_len(), out[0].qp_num()), (101, 77));
    assert_eq!(k.read::<u8>(8), Some(0), "element handed back");
    assert_eq!(poll(&cq, &mut out), Ok(3));
    assert_eq!((out[0].status(), out[0].opcode()), (WcStatus::Success, WcOpcode::RdmaRead));
    assert_eq!((out[1].status(), out[1].opcode()), (WcStatus::RemAccessErr, WcOpcode::Send));
    assert_eq!((out[2].status(), out[2].vendor_err()), (WcStatus::GeneralErr, 200));
    assert_eq!(out[2].opcode(), WcOpcode::Other(UNKNOWN_OPCODE_BASE + 42));
    assert_eq!(poll(&cq, &mut out), Ok(0));
    // The position wrapped: the next completion is read from element 0.
    let mut c = SiwCqe::new_zeroed();
    c.id = 5;
    assert!(k.write(0, c) && k.write::<u8>(8, 1));
    assert_eq!(poll(&cq, &mut out), Ok(1));
    assert_eq!(out[0].wr_id(), 5);
}

#[test]
fn poll_with_lends_the_claim_and_a_panic_consumes_what_was_handed_out() {
    let (_fd, cq, _k) =
        cq_with(&[(1, SIW_OP_SEND, 0), (2, SIW_OP_SEND, 0), (3, SIW_OP_SEND, 0), (4, SIW_OP_SEND, 0)]);
    let mut seen = Vec::new();
    let n = poll_with(&cq, 1, |wc| {
        seen.push(wc.wr_id());
        assert_eq!(poll(&cq, &mut [Wc::ZERO]), Err(Claim::Lent));
    });
    assert_eq!((n, seen), (Ok(1), vec![1]));
    // Another thread's copying poll holds the claim: this poll waits for
    // it instead of failing with `Held` (issue 24 item 6).
    let held = cq.try_consumer().unwrap();
    std::thread::scope(|s| {
        let other = s.spawn(|| {
            let mut out = [Wc::ZERO; 1];
            poll(&cq, &mut out).map(|n| (n, out[0].wr_id()))
        });
        std::thread::sleep(core::time::Duration::from_millis(20));
        drop(held);
        assert_eq!(other.join().unwrap(), Ok((1, 2)), "the poll waited for the held claim");
    });
    let r = std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| poll_with(&cq, 4, |_| panic!("caller code"))));
    assert!(r.is_err());
    let mut out = [Wc::ZERO; 4];
    assert_eq!(poll(&cq, &mut out), Ok(1), "3 was consumed by the panicking closure");
    assert_eq!(out[0].wr_id(), 4);
}

#[test]
fn invalid_key_and_empty_arrays_are_refused() {
    let fd = rustix::fs::memfd_create("verbs-siw-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&fd, 4096).unwrap();
    let e = SendRing::map("ibv_create_qp", &fd, u64::from(SIW_INVAL_UOBJ_KEY), 4, 0).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_create_qp", ErrorKind::Malformed));
    assert_eq!(CqRing::map("ibv_create_cq", &fd, 0, 0, 8).unwrap_err().kind(), ErrorKind::Malformed);
    let r = RecvRing::map("ibv_create_srq", &fd, 0, 3, 0).unwrap();
    assert_eq!((r.len(), r.wrap(2, 1), r.wrap(2, 5)), (3, 0, 1));
    assert_eq!(r.flags16(0).load(Ordering::Relaxed), 0);
}

#[test]
fn a_full_array_is_polled_once_round_not_again() {
    // Every element valid and room for three times the array: the copying
    // poll hands the four back only at its end, so it must stop after one
    // lap (a second would read them again).
    let (_fd, cq, mut k) = cq_with(&[(0, SIW_OP_WRITE, 0), (1, SIW_OP_WRITE, 0), (2, SIW_OP_WRITE, 0), (3, SIW_OP_WRITE, 0)]);
    let mut out = [Wc::ZERO; 12];
    assert_eq!(poll(&cq, &mut out), Ok(4));
    assert_eq!(out[..4].iter().map(Wc::wr_id).collect::<Vec<_>>(), [0, 1, 2, 3]);
    for i in 0..4 {
        assert_eq!(k.read::<u8>(i * 32 + 8), Some(0), "element {i} handed back");
    }
    assert_eq!((cq.next(), poll(&cq, &mut out)), (0, Ok(0)));
}
