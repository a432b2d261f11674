//! rdma-core's and perftest's programs, unmodified, on our
//! `libibverbs.so.1` (issue 14): each pairing runs one side with
//! `LD_LIBRARY_PATH` pointing at our library and the other on rdma-core's,
//! then the other way round, on rxe0 (loopback over TCP 127.0.0.1).
//! Each run asserts both processes exit 0, that the side on our library
//! really loaded it (the loader's trace), and what the program prints on
//! success: the pingpongs' `iters` and `bytes` lines (and `-c` finds no
//! invalid page), perftest's result row for the requested size and
//! iteration count. Iterations are few: the VM runs under TCG.

use super::capi::library_dir;
use super::common::{gid_index, rxe_name, tcp_listening};
use super::perf_interop::clock_unmeasured;
use super::procs::{both, start_on, Finished};
use core::time::Duration;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// Per pairing: the VM runs under TCG, 50-100x slower than the host.
const TIMEOUT: Duration = Duration::from_secs(120);

/// Asserts `prog` resolves libibverbs.so.1 to our library in `dir`.
fn loads_ours(prog: &str, dir: &Path) {
    let trace = Command::new(prog)
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .env("LD_LIBRARY_PATH", dir)
        .output()
        .expect("loader trace");
    let trace = String::from_utf8_lossy(&trace.stdout);
    assert!(
        trace.lines().any(|l| l.contains("libibverbs.so.1 =>") && l.contains(dir.to_str().unwrap())),
        "{prog} did not load our library:\n{trace}"
    );
}

/// Server (on ours if `ours_server`) and client with the same `args`;
/// returns (server, client) once both exited 0.
fn pair(prog: &str, args: &[String], port: u16, ours_server: bool) -> (Finished, Finished) {
    let dir = library_dir();
    loads_ours(prog, &dir);
    let (sl, cl) = if ours_server { (Some(dir.as_path()), None) } else { (None, Some(dir.as_path())) };
    let mut cargs = args.to_vec();
    cargs.push("127.0.0.1".to_owned());
    // perftest may fail to measure the CPU clock in a loaded TCG guest
    // (perf_interop::clock_unmeasured): that is perftest's own
    // measurement, not the library under test, so such a pair runs again.
    let mut lost = String::new();
    let (s, c) = loop {
        let deadline = Instant::now() + TIMEOUT;
        let srv = start_on(prog, args, sl).until(&format!("listened on {port}"), || tcp_listening(port), deadline);
        let c = start_on(prog, &cargs, cl).finish(deadline);
        let s = srv.finish(deadline);
        let attempts = lost.matches("=== attempt").count() + 1;
        if attempts < 3 && [&s, &c].iter().any(|side| clock_unmeasured(&side.stderr)) {
            eprintln!("{prog}: perftest could not measure the CPU clock; running the pair again");
            lost.push_str(&format!("=== attempt lost to clock calibration\n{}\n", both(&s, &c)));
            continue;
        }
        break (s, c);
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!((s.code, c.code), (Some(0), Some(0)), "exit codes (server, client)\n{lost}{}", both(&s, &c));
    (s, c)
}

const PP_ITERS: u32 = 20;

/// One pingpong both ways: ours as server, then ours as client.
fn pingpong(prog: &str, port: u16, extra: &[&str]) {
    let mut args: Vec<String> =
        ["-d", &rxe_name(), "-g", &gid_index().to_string(), "-n", &PP_ITERS.to_string()].iter().map(|s| s.to_string()).collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    for (i, ours_server) in [true, false].into_iter().enumerate() {
        let p = port + i as u16;
        let mut a = args.clone();
        a.extend(["-p".to_owned(), p.to_string()]);
        let (s, c) = pair(prog, &a, p, ours_server);
        let both = both(&s, &c);
        for side in [&s, &c] {
            assert_eq!(side.stdout.lines().filter(|l| l.starts_with(&format!("{PP_ITERS} iters in "))).count(), 1, "{both}");
            assert_eq!(side.stdout.lines().filter(|l| l.contains(" bytes in ")).count(), 1, "{both}");
            assert!(!side.stdout.contains("invalid data"), "{both}");
        }
    }
}

#[test]
#[ignore = "device test: needs rxe0 and rdma-core's ibverbs-utils (run in the VM)"]
fn capi_ibv_rc_pingpong_both_ways() {
    pingpong("ibv_rc_pingpong", 18800, &["-c"]);
    // completion events: ibv_req_notify_cq, ibv_get_cq_event, ibv_ack_cq_events
    pingpong("ibv_rc_pingpong", 18802, &["-e", "-c"]);
}

#[test]
#[ignore = "device test: needs rxe0 and rdma-core's ibverbs-utils (run in the VM)"]
fn capi_ibv_ud_pingpong_both_ways() {
    // messages must fit the port's MTU (rxe: 1024)
    pingpong("ibv_ud_pingpong", 18804, &["-s", "512", "-c"]);
}

#[test]
#[ignore = "device test: needs rxe0 and rdma-core's ibverbs-utils (run in the VM)"]
fn capi_ibv_srq_pingpong_both_ways() {
    pingpong("ibv_srq_pingpong", 18806, &["-q", "4", "-r", "16", "-s", "1024", "-c"]);
}

/// perftest's result row: `#bytes #iterations` then numbers.
fn result_rows(out: &str, size: u32, iters: u32) -> usize {
    out.lines()
        .filter(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            t.len() >= 5 && t[0] == size.to_string() && t[1] == iters.to_string() && t[2..].iter().all(|x| x.parse::<f64>().is_ok())
        })
        .count()
}

/// One perftest program both ways; `server_reports`: whether the server
/// prints a result row too (the read/atomic latency servers do not).
fn perftest(prog: &str, port: u16, extra: &[&str], size: u32, iters: u32, server_reports: bool) {
    let mut args: Vec<String> = ["-d", &rxe_name(), "-x", &gid_index().to_string(), "-n", &iters.to_string()]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    for (i, ours_server) in [true, false].into_iter().enumerate() {
        let p = port + i as u16;
        let mut a = args.clone();
        a.extend(["-p".to_owned(), p.to_string()]);
        let (s, c) = pair(prog, &a, p, ours_server);
        let both = both(&s, &c);
        assert_eq!(result_rows(&c.stdout, size, iters), 1, "{both}");
        if server_reports {
            assert_eq!(result_rows(&s.stdout, size, iters), 1, "{both}");
        }
    }
}

#[test]
#[ignore = "device test: needs rxe0 and perftest (run in the VM)"]
fn capi_perftest_lat_both_ways() {
    perftest("ib_send_lat", 18810, &["-s", "64"], 64, 50, true);
    perftest("ib_write_lat", 18812, &["-s", "32"], 32, 50, true);
    perftest("ib_read_lat", 18814, &["-s", "16"], 16, 50, false);
}

#[test]
#[ignore = "device test: needs rxe0 and perftest (run in the VM)"]
fn capi_perftest_bw_both_ways() {
    perftest("ib_send_bw", 18816, &["-s", "4096"], 4096, 50, true);
    perftest("ib_write_bw", 18818, &["-s", "8192"], 8192, 50, true);
    perftest("ib_atomic_bw", 18820, &[], 8, 50, true);
}
