//! The system calls of the data path, counted by `strace -c` on the real
//! kernel: the test binary re-runs itself under strace for N and 2N
//! rounds of the same loop; the difference of the two counts is what the
//! extra N rounds cost, with every set-up call cancelled out.
//!
//! One round: post_recv (list of 2) + post_srq_recv + post_send (list of
//! 2, SGE and inline) + post_send (1) + poll_cq until 4 completions.
//! Expected: exactly one `write` (the send doorbell) per `post_send` call
//! and nothing else.

use std::collections::BTreeMap;
use std::process::Command;

use super::rig::{init_attr, open_rxe, rc_pair, ALL_ACCESS, CAP};
use verbs::srq::SrqInitAttr;
use verbs::wr::{RecvWr, SendFlags, SendWr, Sge};
use verbs::{Cq, Mr, Pd, Srq, Wc};

const CHILD_ENV: &str = "VERBS_SYSCALL_ROUNDS";

/// Spins until `n` completions (no sleeping, no yielding: those would be
/// system calls of the measurement loop itself).
fn spin(cq: &Cq<'_>, n: usize) {
    let mut wc = [Wc::ZERO; 4];
    let mut got = 0;
    let mut idle = 0u64;
    while got < n {
        let k = cq.poll(&mut wc[..(n - got).min(4)]).unwrap();
        assert!(wc[..k].iter().all(|w| w.is_success()), "{:?}", &wc[..k]);
        got += k;
        idle = if k == 0 { idle + 1 } else { 0 };
        assert!(idle < 2_000_000_000, "completions stopped");
    }
}

/// The measured loop (runs in the child, under strace).
fn child_loop(rounds: usize) {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 256, None, 0).unwrap(), Cq::create(&ctx, 256, None, 0).unwrap());
    let srq = Srq::create(&pd, SrqInitAttr { max_wr: 64, max_sge: 1, srq_limit: 0 }).unwrap();
    let (mut a, mut b) = rc_pair(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let (mut c, _d) = rc_pair(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, Some(&srq), CAP));
    let abuf = vec![0u8; 4096];
    let bbuf = vec![0u8; 4096];
    let amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let rs = [Sge::from_mr(&bmr, 0, 256)];
    let ss = [Sge::from_mr(&amr, 0, 32)];
    for i in 0..rounds as u64 {
        b.post_recv(&[RecvWr::new(i, &rs), RecvWr::new(i, &rs)]).unwrap();
        srq.post_recv(&[RecvWr::new(i, &rs)]).unwrap();
        a.post_send(&[SendWr::send(i, &ss), SendWr::send(i, &[]).inline(b"inline").flags(SendFlags::SIGNALED)])
            .unwrap();
        c.post_send(&[SendWr::send(i, &[]).inline(b"srq").flags(SendFlags::SIGNALED)]).unwrap();
        spin(&scq, 2);
        spin(&rcq, 3);
    }
}

/// Runs the child loop under `strace -f -c` and returns calls per syscall.
fn strace_counts(rounds: usize) -> BTreeMap<String, u64> {
    let out = std::env::temp_dir().join(format!("verbs-strace-{}-{rounds}.txt", std::process::id()));
    let exe = std::env::current_exe().unwrap();
    let status = Command::new("strace")
        .args(["-f", "-c", "-U", "name,calls", "-o"])
        .arg(&out)
        .arg(&exe)
        .args(["--ignored", "--exact", "device::syscalls::rxe_data_path_syscalls_are_only_doorbells", "--test-threads=1"])
        .env(CHILD_ENV, rounds.to_string())
        // The child's own libtest summary must not count in the suite's.
        .stdout(std::process::Stdio::null())
        .status()
        .expect("strace (installed by scripts/setup.sh)");
    assert!(status.success(), "child loop under strace failed: {status}");
    let text = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let mut m = BTreeMap::new();
    for line in text.lines() {
        let mut w = line.split_whitespace();
        if let (Some(name), Some(calls)) = (w.next(), w.next()) {
            if let Ok(n) = calls.parse::<u64>() {
                if name != "total" {
                    m.insert(name.to_owned(), n);
                }
            }
        }
    }
    assert!(!m.is_empty(), "no strace table in {text:?}");
    m
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_data_path_syscalls_are_only_doorbells() {
    if let Ok(rounds) = std::env::var(CHILD_ENV) {
        // We are the child that strace watches.
        return child_loop(rounds.parse().unwrap());
    }
    const N: usize = 200;
    let one = strace_counts(N);
    let two = strace_counts(2 * N);
    // A call that scales with the rounds differs by about N between the
    // runs; process start-up and exit (allocator trimming, libtest)
    // differ by a call or two from run to run, which is not per round.
    let mut per_round = BTreeMap::new();
    let mut noise = BTreeMap::new();
    let names: std::collections::BTreeSet<_> = one.keys().chain(two.keys()).cloned().collect();
    for name in names {
        let c1 = one.get(&name).copied().unwrap_or(0) as i64;
        let c2 = two.get(&name).copied().unwrap_or(0) as i64;
        if (c2 - c1).abs() > 5 {
            per_round.insert(name, (c2 - c1) as f64 / N as f64);
        } else if c2 != c1 {
            noise.insert(name, c2 - c1);
        }
    }
    println!("run-to-run differences that do not scale with the rounds: {noise:?}");
    println!("syscalls per round (2 post_send calls, 1 post_recv, 1 post_srq_recv, 5 completions polled): {per_round:?}");
    assert_eq!(
        per_round.get("write").copied(),
        Some(2.0),
        "one doorbell write per post_send call: {per_round:?}"
    );
    assert_eq!(per_round.len(), 1, "no other syscall grows with the rounds: {per_round:?}");
}
