//! Arbitrary bytes and flags in siw's CQE array, on plain memory (no
//! device): polling (copying: `poll`, and `copy_run`, the C library's,
//! whose `Consumer::drain` is also `Cq::poll`'s; and in
//! place) never panics, hands out the
//! completions of consecutive valid elements from the position on (each
//! completion names the element it was read from), stops at the first
//! element without `VALID` or at the caller's room, clears the flags of
//! exactly what it handed out, and touches no other byte.
#![no_main]

mod common;

use common::siw::Array;
use common::Bytes;
use libfuzzer_sys::fuzz_target;
use verbs::providers::siw::abi::{SiwCqCtrl, SiwCqe, SIW_WQE_VALID};
use verbs::providers::siw::poll::{copy_run, poll, poll_with, to_wc};
use zerocopy::{FromBytes, IntoBytes};
use verbs::Wc;

const CQE: usize = core::mem::size_of::<SiwCqe>();

/// The `wr_id` the fuzzer cannot choose: element `i` carries tag `i`.
fn tag(i: u32) -> u64 {
    0x5157_0000_0000 | u64::from(i)
}

fn exercise(wc: &Wc) {
    let _ = (wc.status(), wc.opcode(), wc.wc_flags(), wc.imm_data(), wc.invalidated_rkey(), wc.vendor_err());
    let _ = (wc.byte_len(), wc.qp_num(), wc.is_success());
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let n = 1 + u32::from(b.u8() & 15);
    let mut cq = Array::<CQE>::new(n, core::mem::size_of::<SiwCqCtrl>());
    let valid = |cq: &mut Array<CQE>, i: u32| cq.kernel.read::<u8>(i as usize * CQE + 8).unwrap() & SIW_WQE_VALID as u8 != 0;
    let mut out = vec![Wc::zeroed(); 20];
    while !b.is_empty() {
        match b.u8() % 4 {
            0 => {
                // The "kernel" (or garbage) fills an element.
                let i = u32::from(b.u8()) % n;
                for at in 0..CQE {
                    assert!(cq.kernel.write::<u8>(i as usize * CQE + at, b.u8()));
                }
                assert!(cq.kernel.write::<u64>(i as usize * CQE, tag(i)));
            }
            op => {
                let max = usize::from(b.u8()) % out.len();
                let (before, pos0) = (cq.bytes(), cq.q.next());
                let mut want = 0;
                while want < max.min(n as usize) && valid(&mut cq, (pos0 + want as u32) % n) {
                    want += 1;
                }
                let mut wcs = Vec::new();
                let got = if op == 3 {
                    // The copy past the empty check (`copy_run`), whose
                    // `Consumer::drain` is also that of `Cq::poll` and of
                    // the C library's `ibv_poll_cq` past their claim.
                    let k = copy_run(&cq.q, &mut out[..max]).expect("the only consumer");
                    wcs.extend(out[..k].iter().map(|w| {
                        exercise(w);
                        *w
                    }));
                    k
                } else if op == 1 {
                    let k = poll(&cq.q, &mut out[..max]).expect("the only consumer");
                    wcs.extend(out[..k].iter().map(|w| {
                        exercise(w);
                        *w
                    }));
                    k
                } else {
                    poll_with(&cq.q, max, |w| {
                        exercise(w);
                        wcs.push(*w);
                    })
                    .expect("the only consumer")
                };
                let ids: Vec<u64> = wcs.iter().map(Wc::wr_id).collect();
                assert_eq!(got, want, "exactly the consecutive valid elements, capped by the room");
                assert_eq!(ids.len(), got);
                let after = cq.bytes();
                for k in 0..n {
                    let i = (pos0 + k) % n;
                    let elem = i as usize * CQE..(i as usize + 1) * CQE;
                    if (k as usize) < got {
                        assert_eq!(ids[k as usize], tag(i), "completion {k} is element {i}'s");
                        // Both forms translate as `to_wc` does, whatever
                        // else the batch holds (the copying poll's fast
                        // path and its out-of-line redo alike).
                        let cqe = SiwCqe::read_from_bytes(&before[elem.clone()]).unwrap();
                        assert_eq!(wcs[k as usize].as_bytes(), to_wc(&cqe).as_bytes(), "element {i}");
                        assert_eq!(after[elem.start + 8], 0, "handed back");
                        assert_eq!(after[elem.start..elem.start + 8], before[elem.start..elem.start + 8]);
                        assert_eq!(after[elem.start + 9..elem.end], before[elem.start + 9..elem.end]);
                    } else {
                        assert_eq!(after[elem.clone()], before[elem], "nothing else touched");
                    }
                }
                assert_eq!(cq.q.next(), (pos0 + got as u32) % n);
            }
        }
    }
});
