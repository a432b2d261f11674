//! Arbitrary request lists into siw's send and receive arrays, on plain
//! memory (no device), with a "kernel" taking elements in order between
//! posts: posting never panics; a refused list hands nothing over (no
//! flags word changes, the kernel's elements keep every byte, the
//! position stays); an accepted one writes and hands over
//! exactly the elements from the position on (flags with `VALID`; exactly
//! `VALID` for receives), never touches an element the kernel still
//! owns, and moves the position by its length.
#![no_main]

mod common;

use common::siw::Array;
use common::Bytes;
use libfuzzer_sys::fuzz_target;
use verbs::providers::siw::abi::{SiwRqe, SiwSqe, SIW_WQE_VALID};
use verbs::providers::siw::post::{post_recv, post_send, SendLimits};
use verbs::wr::{RecvWr, SendFlags, SendOp, SendWr, Sge};

const SQE: usize = core::mem::size_of::<SiwSqe>();
const RQE: usize = core::mem::size_of::<SiwRqe>();
const MAX_LIST: usize = 12;

fn sges(b: &mut Bytes<'_>, store: &mut [Sge; 8]) -> usize {
    let n = usize::from(b.u8() % 9);
    for s in store.iter_mut().take(n) {
        *s = Sge { addr: b.u64(), length: b.u32(), lkey: b.u32() };
    }
    n
}

/// Checks a post's effect on `a` (`E`-byte elements) given the bytes
/// before, the position before and whether it was accepted for `n`.
fn check<const E: usize>(a: &mut Array<E>, before: &[u8], pos0: u32, ok: bool, n: usize, recv: bool) {
    let after = a.bytes();
    let len = a.q.len();
    if !ok {
        // Free elements may hold what was written before the refusal; they
        // are still user space's. Nothing was handed over.
        for i in 0..len as usize {
            let elem = i * E..(i + 1) * E;
            let was = u16::from_ne_bytes([before[elem.start + 8], before[elem.start + 9]]);
            assert_eq!(after[elem.start + 8..elem.start + 10], before[elem.start + 8..elem.start + 10], "refused: no flags changed");
            if was & SIW_WQE_VALID != 0 {
                assert_eq!(after[elem.clone()], before[elem], "refused: the kernel's elements untouched");
            }
        }
        assert_eq!(a.q.next(), pos0, "refused: the position stays");
        return;
    }
    assert_eq!(a.q.next(), ((u64::from(pos0) + n as u64) % u64::from(len)) as u32, "accepted: moved by the list");
    for i in 0..len {
        let k = (u64::from(i) + u64::from(len) - u64::from(pos0)) % u64::from(len);
        let elem = i as usize * E..(i as usize + 1) * E;
        let was = u16::from_ne_bytes([before[elem.start + 8], before[elem.start + 9]]);
        if (k as usize) < n {
            assert_eq!(was & SIW_WQE_VALID, 0, "only free elements are written");
            let f = a.flags16(i);
            assert_ne!(f & SIW_WQE_VALID, 0, "handed over");
            if recv {
                assert_eq!(f, SIW_WQE_VALID, "receives carry exactly VALID");
            }
        } else {
            assert_eq!(after[elem.clone()], before[elem], "elements outside the list untouched");
        }
    }
}

/// The kernel takes up to `k` valid elements in order from `get`.
fn kernel_takes<const E: usize>(a: &mut Array<E>, get: &mut u32, k: u8) {
    for _ in 0..k {
        if a.flags16(*get) & SIW_WQE_VALID == 0 {
            break;
        }
        assert!(a.kernel.write::<u16>(*get as usize * E + 8, 0));
        *get = (*get + 1) % a.q.len();
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let cfg = b.u8();
    let n = 1 + u32::from(cfg & 7);
    let mut sq = Array::<SQE>::new(n, 0);
    let mut rq = Array::<RQE>::new(n, 0);
    let (mut sq_get, mut rq_get) = (0u32, 0u32);
    let lim = SendLimits::new(u32::from(b.u8() % 8), u32::from(b.u8()), cfg & 8 != 0);
    let payload = [0x5au8; 200];
    while !b.is_empty() {
        match b.u8() % 4 {
            0 | 1 => {
                let count = usize::from(b.u8()) % MAX_LIST;
                let mut sg = [[Sge { addr: 0, length: 0, lkey: 0 }; 8]; MAX_LIST];
                let mut desc = Vec::with_capacity(count);
                for store in sg.iter_mut().take(count) {
                    let k = sges(&mut b, store);
                    desc.push((k, b.u8(), b.u32(), b.u64(), b.u32(), b.u8()));
                }
                let wrs: Vec<SendWr<'_>> = desc
                    .iter()
                    .zip(sg.iter())
                    .enumerate()
                    .map(|(i, (&(k, op, flags, addr, key, inl), store))| {
                        let list = &store[..k];
                        let op = match op % 8 {
                            0 | 1 => SendOp::Send,
                            2 => SendOp::SendWithInv { invalidate_rkey: key },
                            3 => SendOp::RdmaWrite { remote_addr: addr, rkey: key },
                            4 => SendOp::RdmaRead { remote_addr: addr, rkey: key },
                            5 => SendOp::SendWithImm { imm: key },
                            6 => SendOp::AtomicFetchAdd { remote_addr: addr, rkey: key, add: 1 },
                            _ => SendOp::LocalInv { rkey: key },
                        };
                        let mut wr = SendWr::new(i as u64, op, list).flags(SendFlags::from_bits_retain(flags & 0xf));
                        if inl & 0x80 != 0 {
                            wr = wr.inline(&payload[..usize::from(inl & 0x7f).min(payload.len())]);
                        }
                        wr
                    })
                    .collect();
                let (before, pos0) = (sq.bytes(), sq.q.next());
                let r = post_send(&mut sq.q, &lim, &wrs);
                if let Err(e) = &r {
                    assert!(e.index <= wrs.len());
                }
                check(&mut sq, &before, pos0, r.is_ok(), wrs.len(), false);
            }
            2 => {
                let count = usize::from(b.u8()) % MAX_LIST;
                let mut sg = [[Sge { addr: 0, length: 0, lkey: 0 }; 8]; MAX_LIST];
                let mut ks = Vec::with_capacity(count);
                for store in sg.iter_mut().take(count) {
                    ks.push(sges(&mut b, store));
                }
                let wrs: Vec<RecvWr<'_>> =
                    ks.iter().zip(sg.iter()).enumerate().map(|(i, (&k, s))| RecvWr::new(i as u64, &s[..k])).collect();
                let max_sge = u32::from(b.u8() % 8);
                let (before, pos0) = (rq.bytes(), rq.q.next());
                let prod = if cfg & 16 != 0 { rq.q.producer_shared() } else { rq.q.producer_mut() };
                let r = post_recv("ibv_post_recv", prod, max_sge, &wrs);
                check(&mut rq, &before, pos0, r.is_ok(), wrs.len(), true);
            }
            _ => {
                let (which, k) = (b.u8(), b.u8());
                if which & 1 == 0 {
                    kernel_takes(&mut sq, &mut sq_get, k);
                } else {
                    kernel_takes(&mut rq, &mut rq_get, k);
                }
            }
        }
    }
});
