//! The pingpong tools against rdma-core's originals over rxe: for each of
//! rc, ud and srq, our server with the C client, the C server with our
//! client, and a pair of ours with `-e` (CQ events). Each run asserts both
//! processes exit 0, both print the `iters` line for the requested count,
//! `-c` finds no invalid page, and each side's `remote address` lines are
//! the other side's `local address` lines (the TCP exchange carried
//! LID/QPN/PSN/GID intact in both directions).

use super::common::{gid_index, rxe_name, tcp_listening};
use core::time::Duration;
use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const RC: &str = env!("CARGO_BIN_EXE_verbs-rc-pingpong");
const UD: &str = env!("CARGO_BIN_EXE_verbs-ud-pingpong");
const SRQ: &str = env!("CARGO_BIN_EXE_verbs-srq-pingpong");
/// Per process: the VM runs under TCG, 50-100x slower than the host.
const TIMEOUT: Duration = Duration::from_secs(60);
const ITERS: u32 = 20;

/// A started process and threads draining its pipes.
struct Running {
    name: String,
    child: Child,
    out: std::thread::JoinHandle<String>,
    err: std::thread::JoinHandle<String>,
}

struct Finished {
    name: String,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl core::fmt::Display for Finished {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.name, self.code, self.stdout, self.stderr
        )
    }
}

fn start(prog: &str, args: &[String]) -> Running {
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {prog}: {e}"));
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    Running {
        name: format!("{prog} {}", args.join(" ")),
        child,
        out,
        err,
    }
}

impl Running {
    /// Waits up to `TIMEOUT` (from `since`); kills the process when it
    /// runs longer. Returns its output and status (None: killed).
    fn finish(mut self, since: Instant) -> Finished {
        let code = loop {
            match self.child.try_wait().expect("try_wait") {
                Some(status) => break status.code(),
                None if since.elapsed() > TIMEOUT => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        Finished {
            name: self.name,
            code,
            stdout: self.out.join().unwrap(),
            stderr: self.err.join().unwrap(),
        }
    }

    fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }
}

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
    let since = Instant::now();
    let mut srv = start(server, &args(port, extra));
    while !tcp_listening(port) {
        if srv.exited() || since.elapsed() > TIMEOUT {
            panic!("server never listened on {port}:\n{}", srv.finish(since));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut cargs = args(port, extra);
    cargs.push("127.0.0.1".to_owned());
    let cli = start(client, &cargs);
    let c = cli.finish(Instant::now());
    let s = srv.finish(Instant::now());
    let both = format!("{s}\n{c}");
    assert_eq!((s.code, c.code), (Some(0), Some(0)), "{both}");
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
    let since = Instant::now();
    let port = 19104;
    let mut srv = start(RC, &args(port, &["-e"]));
    while !tcp_listening(port) {
        if srv.exited() || since.elapsed() > TIMEOUT {
            panic!("server never listened:\n{}", srv.finish(since));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut cargs = args(port, &[]);
    cargs.push("127.0.0.1".to_owned());
    let c = start(RC_C, &cargs).finish(Instant::now());
    let s = srv.finish(Instant::now());
    assert_eq!((s.code, c.code), (Some(0), Some(0)), "{s}\n{c}");
    assert!(s.stdout.contains(&format!("\n{ITERS} iters in ")), "{s}");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_rc_pingpong_small_messages_both_ways() {
    // 16-byte messages: both programs send inline (IBV_SEND_INLINE)
    // whenever the max_inline_data the QP was granted holds the message
    pair(RC, RC_C, 19105, &["-s", "16", "-c"], 1);
    pair(RC_C, RC, 19106, &["-s", "16", "-c"], 1);
}
