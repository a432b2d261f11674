//! `verbs-rping` against rdma-core's `rping` (rdmacm-utils, on C
//! librdmacm) over rxe0 and siw0, both ways, and a pair of ours: both
//! processes exit 0, the client prints every ping's data (`-v`) exactly as
//! the C client formats it, validated (`-V`), and the server prints what
//! it read.

use core::time::Duration;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use super::cm_rig::{cm_devices, ip_of, next_port};
use super::common::tcp_listening;

const OURS: &str = env!("CARGO_BIN_EXE_verbs-rping");
const COUNT: usize = 5;
/// Per process: the VM runs under TCG.
const TIMEOUT: Duration = Duration::from_secs(90);

/// What rping's client puts in ping `i` of `size` bytes (without the NUL).
fn ping_text(i: usize, size: usize) -> String {
    let mut s = format!("rdma-ping-{i}: ");
    let mut c = 65 + (i % 58) as u8;
    while s.len() < size - 1 {
        s.push(c as char);
        c = if c >= 122 { 65 } else { c + 1 };
    }
    s.truncate(size - 1);
    s
}

/// Runs `prog` (on the libibverbs.so.1 in `lib` if given) until it exits
/// or `deadline`.
fn run(prog: &str, lib: Option<&Path>, args: &[String], deadline: Instant) -> Output {
    let mut cmd = Command::new(prog);
    cmd.env_remove("LD_LIBRARY_PATH");
    if let Some(d) = lib {
        cmd.env("LD_LIBRARY_PATH", d);
    }
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {prog}: {e}"));
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn pair(dev: &str, server: &str, client: &str) {
    pair_on(dev, (server, None), (client, None));
}

/// [`pair`] with each side's program on the libibverbs.so.1 in its
/// directory, if given (our C library, `tests/device/capi_cm.rs`).
pub(super) fn pair_on(dev: &str, server: (&str, Option<&Path>), client: (&str, Option<&Path>)) {
    let ((server, slib), (client, clib)) = (server, client);
    let ip = ip_of(dev);
    let port = next_port().to_string();
    let size = 64;
    let common = |role: &str| -> Vec<String> {
        vec![role.into(), "-a".into(), ip.clone(), "-p".into(), port.clone(), "-C".into(), COUNT.to_string(), "-v".into(), "-V".into()]
    };
    let (sargs, cargs) = (common("-s"), common("-c"));
    let srv_prog = server.to_string();
    let srv_lib = slib.map(Path::to_path_buf);
    let srv = std::thread::spawn(move || run(&srv_prog, srv_lib.as_deref(), &sargs, Instant::now() + TIMEOUT));
    // On iWARP the listener is a kernel TCP socket: wait for it, because C
    // rping's client does not exit after a refused connect on siw (on
    // either library; it hangs until killed). On RoCE a refused connect
    // exits at once, and the client retries below.
    let start = Instant::now();
    if dev == super::common::siw_name() {
        let p: u16 = port.parse().unwrap();
        while !tcp_listening(p) && start.elapsed() < TIMEOUT {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    // The client retries until the server listens (a refused connect exits 1 at once).
    let out = loop {
        std::thread::sleep(Duration::from_millis(500));
        let out = run(client, clib, &cargs, Instant::now() + TIMEOUT);
        let refused = !out.status.success() && String::from_utf8_lossy(&out.stdout).is_empty();
        if !refused || start.elapsed() > TIMEOUT {
            break out;
        }
    };
    let sout = srv.join().expect("server thread");
    let show = |o: &Output| format!("exit {:?}\n--- stdout\n{}--- stderr\n{}", o.status.code(), String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(out.status.success(), "{dev}: client {client}: {}", show(&out));
    assert!(sout.status.success(), "{dev}: server {server}: {}", show(&sout));
    let want: Vec<String> = (0..COUNT).map(|i| format!("ping data: {}", ping_text(i, size))).collect();
    let got: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    assert_eq!(got, want, "{dev}: client output ({client} against {server})");
    let swant: Vec<String> = want.iter().map(|l| format!("server {l}")).collect();
    let sgot: Vec<String> = String::from_utf8_lossy(&sout.stdout).lines().map(str::to_string).collect();
    assert_eq!(sgot, swant, "{dev}: server output ({server} against {client})");
}

#[test]
#[ignore = "device test: verbs-rping server, C rping client, rxe0"]
fn rxe_rping_ours_server_c_client() {
    pair(&cm_devices()[0], OURS, "rping");
}

#[test]
#[ignore = "device test: C rping server, verbs-rping client, rxe0"]
fn rxe_rping_c_server_ours_client() {
    pair(&cm_devices()[0], "rping", OURS);
}

#[test]
#[ignore = "device test: verbs-rping server, C rping client, siw0"]
fn siw_rping_ours_server_c_client() {
    pair(&cm_devices()[1], OURS, "rping");
}

#[test]
#[ignore = "device test: C rping server, verbs-rping client, siw0"]
fn siw_rping_c_server_ours_client() {
    pair(&cm_devices()[1], "rping", OURS);
}

#[test]
#[ignore = "device test: a pair of verbs-rping, siw0"]
fn siw_rping_ours_pair() {
    pair(&cm_devices()[1], OURS, OURS);
}
