//! `verbs-udaddy` against rdma-core's `udaddy` (C librdmacm) over rxe0,
//! both ways: two UD "connections" (SIDR), ten 100-byte SENDs with
//! immediate each way on each; both exit 0 and print the C tool's lines.
//! (siw0 has no UD.) udaddy always uses port 7174, so the pairs run one
//! after another.

use core::time::Duration;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use super::cm_rig::{cm_devices, ip_of};

const OURS: &str = env!("CARGO_BIN_EXE_verbs-udaddy");
const TIMEOUT: Duration = Duration::from_secs(90);

fn run(prog: &str, args: &[String]) -> Output {
    let deadline = Instant::now() + TIMEOUT;
    let mut child = Command::new(prog)
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

fn pair(server: &str, client: &str) {
    let dev = &cm_devices()[0];
    let ip = ip_of(dev);
    let common: Vec<String> = ["-c", "2", "-C", "10", "-S", "100"].map(String::from).to_vec();
    let mut sargs = vec!["-b".to_string(), ip.clone()];
    sargs.extend(common.clone());
    let mut cargs = vec!["-s".to_string(), ip];
    cargs.extend(common);
    let srv_prog = server.to_string();
    let srv = std::thread::spawn(move || run(&srv_prog, &sargs));
    let start = Instant::now();
    let out = loop {
        std::thread::sleep(Duration::from_millis(500));
        let out = run(client, &cargs);
        let refused = !out.status.success() && !String::from_utf8_lossy(&out.stdout).contains("initiating data transfers");
        if !refused || start.elapsed() > TIMEOUT {
            break out;
        }
    };
    let sout = srv.join().expect("server");
    let show = |o: &Output| format!("exit {:?}\n--- stdout\n{}--- stderr\n{}", o.status.code(), String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(out.status.success(), "client {client}: {}", show(&out));
    assert!(sout.status.success(), "server {server}: {}", show(&sout));
    let c: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    let want_c = ["udaddy: starting client", "udaddy: connecting", "initiating data transfers", "receiving data transfers", "data transfers complete", "test complete", "return status 0"];
    assert_eq!(c, want_c, "client output ({client} against {server})");
    let s: Vec<String> = String::from_utf8_lossy(&sout.stdout).lines().map(str::to_string).collect();
    let want_s = ["udaddy: starting server", "receiving data transfers", "sending replies", "data transfers complete", "test complete", "return status 0"];
    assert_eq!(s, want_s, "server output ({server} against {client})");
}

#[test]
#[ignore = "device test: verbs-udaddy server, C udaddy client, rxe0"]
fn rxe_udaddy_ours_server_c_client() {
    pair(OURS, "udaddy");
}

#[test]
#[ignore = "device test: C udaddy server, verbs-udaddy client, rxe0"]
fn rxe_udaddy_c_server_ours_client() {
    pair("udaddy", OURS);
}
