//! The pingpong tools against rdma-core's originals over rxe: for each of
//! rc, ud and srq, our server with the C client, the C server with our
//! client, and a pair of ours with `-e` (CQ events). Each run asserts both
//! processes exit 0, both print the `iters` line for the requested count,
//! `-c` finds no invalid page, and each side's `remote address` lines are
//! the other side's `local address` lines (the TCP exchange carried
//! LID/QPN/PSN/GID intact in both directions).

use super::common::{gid_index, rxe_name, tcp_listening};
use super::procs::{both, start};
use core::time::Duration;
use std::time::Instant;

const RC: &str = env!("CARGO_BIN_EXE_verbs-rc-pingpong");
const UD: &str = env!("CARGO_BIN_EXE_verbs-ud-pingpong");
const SRQ: &str = env!("CARGO_BIN_EXE_verbs-srq-pingpong");
/// Per step (the server listening, each program exiting): the VM runs under TCG, 50-100x slower than the host.
const TIMEOUT: Duration = Duration::from_secs(60);
const ITERS: u32 = 20;

/// The common arguments: device, GID index, TCP port, iterations, `extra`.
fn args(port: u16, extra: &[&str]) -> Vec<String> {
    let mut a = vec![
        "-d".to_owned(),
        rxe_name(),
        "-g".to_owned(),
        gid_index().to_string(),
        "-p".to_owned(),
        port.to_string(),
        "-n".to_owned(),
        ITERS.to_string(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// The address part of `  local address:  ...` / `  remote address: ...`
/// lines (ud_pingpong prints `PSN 0x...: GID` in its local line only).
fn addresses(out: &str, which: &str) -> Vec<String> {
    out.lines()
        .filter_map(|l| l.strip_prefix(which))
        .map(|rest| rest.trim_start().replace(": GID", ", GID"))
        .collect()
}

/// Runs `server` then (once it listens) `client` with the same options,
/// and checks what both printed.
fn pair(server: &str, client: &str, port: u16, extra: &[&str], qps: usize) {
    let srv = start(server, &args(port, extra)).until(&format!("listened on {port}"), || tcp_listening(port), Instant::now() + TIMEOUT);
    let mut cargs = args(port, extra);
    cargs.push("127.0.0.1".to_owned());
    let c = start(client, &cargs).finish(Instant::now() + TIMEOUT);
    let s = srv.finish(Instant::now() + TIMEOUT);
    let both = both(&s, &c);
    assert_eq!((s.code, c.code), (Some(0), Some(0)), "exit codes (server, client)\n{both}");
    for side in [&s, &c] {
        let iters: Vec<&str> = side
            .stdout
            .lines()
            .filter(|l| l.contains(" iters in "))
            .collect();
        assert_eq!(iters.len(), 1, "{both}");
        assert!(
            iters[0].starts_with(&format!("{ITERS} iters in ")),
            "{both}"
        );
        assert!(iters[0].ends_with(" usec/iter"), "{both}");
        assert_eq!(
            side.stdout
                .lines()
                .filter(|l| l.contains(" bytes in "))
                .count(),
            1,
            "{both}"
        );
        assert!(!side.stdout.contains("invalid data"), "{both}");
        assert_eq!(
            addresses(&side.stdout, "  local address:").len(),
            qps,
            "{both}"
        );
    }
    assert_eq!(
        addresses(&s.stdout, "  remote address:"),
        addresses(&c.stdout, "  local address:"),
        "{both}"
    );
    assert_eq!(
        addresses(&c.stdout, "  remote address:"),
        addresses(&s.stdout, "  local address:"),
        "{both}"
    );
    // The GID printed is the one at -g (RoCE v2 IPv4: ::ffff:a.b.c.d).
    assert!(
        addresses(&s.stdout, "  local address:")[0].contains("GID ::ffff:"),
        "{both}"
    );
}

const RC_C: &str = "ibv_rc_pingpong";
const UD_C: &str = "ibv_ud_pingpong";
const SRQ_C: &str = "ibv_srq_pingpong";
/// ud: messages must fit the port's MTU (rxe: 1024).
const UD_OPTS: &[&str] = &["-s", "512", "-c"];
const SRQ_OPTS: &[&str] = &["-q", "4", "-r", "16", "-s", "1024", "-c"];

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_rc_pingpong_rust_server_c_client() {
    pair(RC, RC_C, 19101, &["-c"], 1);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_rc_pingpong_c_server_rust_client() {
    pair(RC_C, RC, 19102, &["-c"], 1);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_rc_pingpong_rust_pair_events() {
    pair(RC, RC, 19103, &["-c", "-e"], 1);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_ud_pingpong_rust_server_c_client() {
    pair(UD, UD_C, 19111, UD_OPTS, 1);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_ud_pingpong_c_server_rust_client() {
    pair(UD_C, UD, 19112, UD_OPTS, 1);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_ud_pingpong_rust_pair_events() {
    pair(UD, UD, 19113, &["-s", "512", "-c", "-e"], 1);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_srq_pingpong_rust_server_c_client() {
    pair(SRQ, SRQ_C, 19121, SRQ_OPTS, 4);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_srq_pingpong_c_server_rust_client() {
    pair(SRQ_C, SRQ, 19122, SRQ_OPTS, 4);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_srq_pingpong_rust_pair_events() {
    pair(
        SRQ,
        SRQ,
        19123,
        &["-q", "4", "-r", "16", "-s", "1024", "-c", "-e"],
        4,
    );
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_rc_pingpong_events_against_c() {
    // events on our side only: the C client polls
    let port = 19104;
    let srv = start(RC, &args(port, &["-e"])).until(&format!("listened on {port}"), || tcp_listening(port), Instant::now() + TIMEOUT);
    let mut cargs = args(port, &[]);
    cargs.push("127.0.0.1".to_owned());
    let c = start(RC_C, &cargs).finish(Instant::now() + TIMEOUT);
    let s = srv.finish(Instant::now() + TIMEOUT);
    let both = both(&s, &c);
    assert_eq!((s.code, c.code), (Some(0), Some(0)), "exit codes (server, client)\n{both}");
    assert!(s.stdout.contains(&format!("\n{ITERS} iters in ")), "{both}");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_rc_pingpong_small_messages_both_ways() {
    // 16-byte messages: both programs send inline (IBV_SEND_INLINE)
    // whenever the max_inline_data the QP was granted holds the message
    pair(RC, RC_C, 19105, &["-s", "16", "-c"], 1);
    pair(RC_C, RC, 19106, &["-s", "16", "-c"], 1);
}
