//! Arbitrary bytes in rxe's CQ slots and arbitrary indices, on plain
//! memory (no device): polling (copying and in place) never panics, hands
//! out at most what is ready (`(producer - consumer) & mask`, capped by the
//! caller's room), in ring order from the consumer index - each
//! completion is the one of its slot, so nothing is read outside the
//! ring - frees exactly what it handed out and never moves the producer
//! index, also when the indices the kernel's side writes are not inside
//! the ring.
#![no_main]

mod common;

use common::{Bytes, Ring};
use libfuzzer_sys::fuzz_target;
use verbs::abi::uverbs::Wc as AbiWc;
use verbs::providers::rxe::post::{poll, poll_with};
use verbs::providers::rxe::queue::{CompletionQueue, CONSUMER_INDEX, PRODUCER_INDEX};
use verbs::Wc;
use zerocopy::FromZeros;

/// The `wr_id` the fuzzer cannot choose: slot `i` carries tag `i`, so
/// each completion polled names the slot it was read from.
fn tag(i: u32) -> u64 {
    0x7a67_0000_0000 | u64::from(i)
}

/// The flags a completion must carry for the raw kernel flag word `raw`
/// of its slot: rxe writes `enum ib_wc_flags`, whose bits 2 and 3 are
/// swapped relative to `enum ibv_wc_flags` (written out here, not taken
/// from the crate, so that the poll is checked against the rule).
fn ibv_flags(raw: u32) -> u32 {
    (raw & !0b1100) | (raw & 0b100) << 1 | (raw & 0b1000) >> 1
}

/// The raw flag word of slot `i`.
fn raw_flags<const M: usize>(cq: &mut Ring<M>, i: u32) -> u32 {
    let mut bytes = Vec::new();
    cq.slot_bytes(i, &mut bytes);
    let at = core::mem::offset_of!(AbiWc, wc_flags);
    u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn exercise(wc: &Wc) {
    let _ = (wc.status(), wc.opcode(), wc.wc_flags(), wc.imm_data(), wc.invalidated_rkey(), wc.addressing());
    let _ = (wc.byte_len(), wc.qp_num(), wc.src_qp(), wc.pkey_index(), wc.slid(), wc.sl(), wc.is_success());
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let cfg = b.u8();
    let slots = 2u32 << (cfg & 3); // 2..16
    let log2 = 6 + u32::from(cfg >> 2 & 1); // 64 or 128 bytes (a wc is 48)
    let mut cq = Ring::new(slots, log2, b.u32(), b.u32());
    let _: &CompletionQueue = &cq.q;
    let mask = slots - 1;
    // Every slot: arbitrary bytes, then its tag as wr_id.
    for i in 0..slots {
        let off = cq.q.slot_offset(i);
        for at in 0..(1usize << log2) {
            assert!(cq.kernel.write::<u8>(off + at, b.u8()));
        }
        assert!(cq.kernel.write::<u64>(off, tag(i)));
    }
    let mut out = vec![Wc::zeroed(); 20];
    while !b.is_empty() {
        let op = b.u8();
        let (p0, c0) = (cq.producer(), cq.consumer());
        let ready = (p0.wrapping_sub(c0) & mask) as usize;
        let room = usize::from(b.u8()) % 20;
        // What the flags of the completions about to be polled must be.
        let want: Vec<u32> = (0..ready.min(room) as u32).map(|k| ibv_flags(raw_flags(&mut cq, c0.wrapping_add(k) & mask))).collect();
        let n = if op & 1 == 0 {
            let n = poll(&cq.q, &mut out[..room]).expect("the only consumer is never refused the claim");
            for (k, wc) in out[..n].iter().enumerate() {
                assert_eq!(wc.wr_id(), tag(c0.wrapping_add(k as u32) & mask), "completion {k} from its slot");
                assert_eq!(wc.wc_flags().bits(), want[k], "completion {k}: the kernel's flag bits put right");
                exercise(wc);
            }
            n
        } else {
            let mut k = 0u32;
            let n = poll_with(&cq.q, room, |wc| {
                assert_eq!(wc.wr_id(), tag(c0.wrapping_add(k) & mask), "completion {k} from its slot");
                assert_eq!(wc.wc_flags().bits(), want[k as usize], "completion {k}: the kernel's flag bits put right");
                exercise(wc);
                k += 1;
            })
            .expect("the only consumer is never refused the claim");
            assert_eq!(n, k as usize, "poll_with returns how many it handed out");
            n
        };
        assert_eq!(n, ready.min(room), "hands out what is ready, up to the room");
        assert_eq!(cq.producer(), p0, "polling never moves the producer index");
        // (Masked: a poll that stores nothing leaves an index from outside
        // the ring as it was; one that stores, stores it masked.)
        let c1 = cq.consumer();
        assert_eq!(c1 & mask, c0.wrapping_add(n as u32) & mask, "frees exactly what it handed out");
        assert!(c1 == c0 || c1 <= mask, "the index stored is inside the ring");
        // The kernel: arbitrary new indices (inside the ring, as the
        // kernel's are, or, with bit 4, any value: a kernel or another
        // process sharing the mapping that breaks the rule must not make
        // a poll read or free outside the ring) and a slot's bytes
        // rewritten.
        let index = |v: u32| if op & 16 != 0 { v } else { v & mask };
        if op & 2 != 0 {
            assert!(cq.kernel.write::<u32>(PRODUCER_INDEX, index(b.u32())));
        }
        if op & 4 != 0 {
            assert!(cq.kernel.write::<u32>(CONSUMER_INDEX, index(b.u32())));
        }
        if op & 8 != 0 {
            let i = b.u32() & mask;
            let mut wc = AbiWc::new_zeroed();
            wc.wr_id = tag(i);
            wc.ex = b.u32();
            wc.sl = b.u8();
            wc.status = b.u32();
            wc.opcode = b.u32();
            wc.wc_flags = b.u32();
            assert!(cq.kernel.write(cq.q.slot_offset(i), wc));
        }
    }
});
