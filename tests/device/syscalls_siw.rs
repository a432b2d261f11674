//! The system calls of the siw (iWARP) data path, counted as
//! `syscalls.rs` counts rxe's: the test binary re-runs itself under
//! `strace -f -c` for N and 2N rounds over a pair connected by
//! `verbs::cm`; the difference is what N rounds cost.
//!
//! One round: post_recv (list of 2) + post_send (list of 2: SGE and
//! inline, one doorbell) + post_send (1) + poll until 5 completions.
//! Expected: one `write` (the doorbell) per `post_send` call, nothing
//! else.

use std::collections::BTreeMap;
use std::process::Command;

use super::cm_rig::{channels, cm_devices, cm_rc_pair, ip_of, open};
use super::rig::{init_attr, ALL_ACCESS, CAP};
use verbs::wr::{RecvWr, SendFlags, SendWr, Sge};
use verbs::{Cq, Mr, Pd, Wc};

const CHILD_ENV: &str = "VERBS_SIW_SYSCALL_ROUNDS";
const NAME: &str = "device::syscalls_siw::siw_data_path_syscalls_are_only_doorbells";

fn spin(cq: &Cq<'_>, n: usize) {
    let mut wc = [Wc::ZERO; 4];
    let (mut got, mut idle) = (0, 0u64);
    while got < n {
        let k = cq.poll(&mut wc[..(n - got).min(4)]).unwrap();
        assert!(wc[..k].iter().all(|w| w.is_success()), "{:?}", &wc[..k]);
        got += k;
        idle = if k == 0 { idle + 1 } else { 0 };
        assert!(idle < 2_000_000_000, "completions stopped");
    }
}

fn child_loop(rounds: usize) {
    let dev = &cm_devices()[1];
    let ctx = open(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 256, None, 0).unwrap(), Cq::create(&ctx, 256, None, 0).unwrap());
    let ch = channels();
    let mut p = cm_rc_pair(&ch, &ip_of(dev), &pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let mr = Mr::alloc(&pd, 8192, ALL_ACCESS).unwrap();
    let rs = [Sge::from_mr(&mr, 4096, 256)];
    let ss = [Sge::from_mr(&mr, 0, 32)];
    for i in 0..rounds as u64 {
        p.server.post_recv(&[RecvWr::new(i, &rs), RecvWr::new(i, &rs), RecvWr::new(i, &rs)]).unwrap();
        p.client
            .post_send(&[SendWr::send(i, &ss), SendWr::send(i, &[]).inline(b"inline").flags(SendFlags::SIGNALED)])
            .unwrap();
        p.client.post_send(&[SendWr::send(i, &ss).flags(SendFlags::SIGNALED)]).unwrap();
        spin(&scq, 2);
        spin(&rcq, 3);
    }
}

fn strace_counts(rounds: usize) -> BTreeMap<String, u64> {
    let out = std::env::temp_dir().join(format!("verbs-strace-siw-{}-{rounds}.txt", std::process::id()));
    let status = Command::new("strace")
        .args(["-f", "-c", "-U", "name,calls", "-o"])
        .arg(&out)
        .arg(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", NAME, "--test-threads=1"])
        .env(CHILD_ENV, rounds.to_string())
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
#[ignore = "device test: siw0 data-path system calls under strace"]
fn siw_data_path_syscalls_are_only_doorbells() {
    if let Ok(rounds) = std::env::var(CHILD_ENV) {
        return child_loop(rounds.parse().unwrap());
    }
    const N: usize = 200;
    let (one, two) = (strace_counts(N), strace_counts(2 * N));
    let mut per_round = BTreeMap::new();
    let names: std::collections::BTreeSet<_> = one.keys().chain(two.keys()).cloned().collect();
    for name in names {
        let c1 = one.get(&name).copied().unwrap_or(0) as i64;
        let c2 = two.get(&name).copied().unwrap_or(0) as i64;
        if (c2 - c1).abs() > 5 {
            per_round.insert(name, (c2 - c1) as f64 / N as f64);
        }
    }
    println!("siw0 syscalls per round (2 post_send calls, 1 post_recv, 5 completions polled): {per_round:?}");
    // The connection manager's own writes (connect, events, teardown) vary
    // by a call or two between runs; a call per round would add 1.0.
    let writes = per_round.get("write").copied().unwrap_or(0.0);
    assert!((writes - 2.0).abs() < 0.05, "one doorbell write per post_send call: {per_round:?}");
    assert_eq!(per_round.len(), 1, "no other syscall grows with the rounds: {per_round:?}");
}
