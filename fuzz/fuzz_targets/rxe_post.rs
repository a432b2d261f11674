//! Arbitrary request lists into rxe's send and receive rings, on plain
//! memory (no device): whatever the caller asks, posting never panics, a
//! refused list publishes nothing (all-or-nothing), an accepted one moves
//! the producer index by exactly its length, the consumer index and the
//! slots the "kernel" owns (`[consumer, producer)`) are never touched, and
//! the indices stay inside the ring.
#![no_main]

mod common;

use common::{Bytes, Ring};
use libfuzzer_sys::fuzz_target;
use verbs::providers::rxe::post::{post_recv, post_send, SendLimits};
use verbs::providers::rxe::queue::{RecvQueue, SendQueue};
use verbs::qp::QpType;
use verbs::wr::{RecvWr, SendFlags, SendOp, SendWr, Sge};

const MAX_LIST: usize = 12;

/// The slots the kernel owns, byte for byte.
fn owned<const MIN: usize>(r: &mut Ring<MIN>) -> Vec<Vec<u8>> {
    let (p, c) = (r.producer(), r.consumer());
    let mask = r.q.index_mask();
    let mut v = Vec::new();
    let mut buf = Vec::new();
    for k in 0..(p.wrapping_sub(c) & mask) {
        r.slot_bytes(c.wrapping_add(k), &mut buf);
        v.push(buf.clone());
    }
    v
}

fn check<const MIN: usize>(r: &mut Ring<MIN>, before: (u32, u32, Vec<Vec<u8>>), ok: bool, n: usize) {
    let (p0, c0, owned0) = before;
    let mask = r.q.index_mask();
    let (p, c) = (r.producer(), r.consumer());
    assert!(p <= mask && c <= mask, "indices inside the ring");
    assert_eq!(c, c0, "posting never moves the consumer index");
    if ok {
        assert_eq!(p, p0.wrapping_add(n as u32) & mask, "accepted: published exactly the list");
        assert!((p0.wrapping_sub(c0) & mask) as usize + n <= mask as usize, "accepted only what fits");
    } else {
        assert_eq!(p, p0, "refused: nothing published");
    }
    let mut r2 = Vec::new();
    let mut buf = Vec::new();
    for k in 0..(p0.wrapping_sub(c0) & mask) {
        r.slot_bytes(c0.wrapping_add(k), &mut buf);
        r2.push(buf.clone());
    }
    assert_eq!(r2, owned0, "the kernel's slots are untouched");
}

fn sges(b: &mut Bytes<'_>, store: &mut [Sge; 6]) -> usize {
    let n = usize::from(b.u8() % 7);
    for s in store.iter_mut().take(n) {
        *s = Sge { addr: b.u64(), length: b.u32(), lkey: b.u32() };
    }
    n
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let cfg = b.u8();
    let slots = 2u32 << (cfg & 3); // 2..16
    // rxe's element sizes: at least 256 bytes for a send WQE, 64 for a
    // receive WQE (the const parameter is inferred from the ring types).
    let mut sq = Ring::new(slots, 8 + u32::from(cfg >> 2 & 1), b.u32(), b.u32());
    let mut rq = Ring::new(slots, 6 + u32::from(cfg >> 3 & 1), b.u32(), b.u32());
    let _: (&SendQueue, &RecvQueue) = (&sq.q, &rq.q);
    let qp_type = [QpType::Rc, QpType::Uc, QpType::Ud][usize::from(cfg >> 4) % 3];
    let lim = SendLimits { max_sge: u32::from(b.u8() % 8), max_inline: u32::from(b.u8()) * 2 };
    let payload = [0x5au8; 600];
    while !b.is_empty() {
        match b.u8() % 4 {
            0 | 1 => {
                // A send list.
                let n = usize::from(b.u8()) % MAX_LIST;
                let mut sg = [[Sge { addr: 0, length: 0, lkey: 0 }; 6]; MAX_LIST];
                let mut desc = Vec::with_capacity(n);
                for store in sg.iter_mut().take(n) {
                    let k = sges(&mut b, store);
                    desc.push((k, b.u8(), b.u32(), b.u64(), b.u32(), b.u64(), b.u8()));
                }
                let wrs: Vec<SendWr<'_>> = desc
                    .iter()
                    .zip(sg.iter())
                    .enumerate()
                    .map(|(i, (&(k, op, flags, addr, key, val, inl), store))| {
                        let list = &store[..k];
                        let op = match op % 10 {
                            0 => SendOp::Send,
                            1 => SendOp::SendWithImm { imm: key },
                            2 => SendOp::SendWithInv { invalidate_rkey: key },
                            3 => SendOp::RdmaWrite { remote_addr: addr, rkey: key },
                            4 => SendOp::RdmaWriteWithImm { remote_addr: addr, rkey: key, imm: flags },
                            5 => SendOp::RdmaRead { remote_addr: addr, rkey: key },
                            6 => SendOp::AtomicCmpSwp { remote_addr: addr, rkey: key, compare: val, swap: !val },
                            7 => SendOp::AtomicFetchAdd { remote_addr: addr, rkey: key, add: val },
                            8 => SendOp::AtomicWrite { remote_addr: addr, rkey: key, value: val.to_ne_bytes() },
                            _ => SendOp::LocalInv { rkey: key },
                        };
                        let mut wr = SendWr::new(i as u64, op, list).flags(SendFlags::from_bits_retain(flags & 0x7f));
                        if inl & 0x80 != 0 {
                            wr = wr.inline(&payload[..(usize::from(inl & 0x7f) * 5).min(payload.len())]);
                        }
                        wr
                    })
                    .collect();
                let before = (sq.producer(), sq.consumer(), owned(&mut sq));
                let r = post_send(&mut sq.q, qp_type, &lim, &wrs);
                if let Err(e) = &r {
                    assert!(e.index <= wrs.len());
                }
                check(&mut sq, before, r.is_ok(), wrs.len());
            }
            2 => {
                // A receive list.
                let n = usize::from(b.u8()) % MAX_LIST;
                let mut sg = [[Sge { addr: 0, length: 0, lkey: 0 }; 6]; MAX_LIST];
                let mut ks = Vec::with_capacity(n);
                for store in sg.iter_mut().take(n) {
                    ks.push(sges(&mut b, store));
                }
                let wrs: Vec<RecvWr<'_>> =
                    ks.iter().zip(sg.iter()).enumerate().map(|(i, (&k, s))| RecvWr::new(i as u64, &s[..k])).collect();
                let before = (rq.producer(), rq.consumer(), owned(&mut rq));
                let r = post_recv("ibv_post_recv", rq.q.producer_mut(), lim.max_sge, &wrs);
                check(&mut rq, before, r.is_ok(), wrs.len());
            }
            _ => {
                // The kernel consumes some of what was published.
                let (which, k) = (b.u8(), b.u8());
                let ring_mask = sq.q.index_mask();
                let (p, c) = if which & 1 == 0 { (sq.producer(), sq.consumer()) } else { (rq.producer(), rq.consumer()) };
                let used = p.wrapping_sub(c) & ring_mask;
                let new_c = c.wrapping_add(u32::from(k) % (used + 1)) & ring_mask;
                let kernel = if which & 1 == 0 { &mut sq.kernel } else { &mut rq.kernel };
                assert!(kernel.write::<u32>(verbs::providers::rxe::queue::CONSUMER_INDEX, new_c));
            }
        }
    }
});
