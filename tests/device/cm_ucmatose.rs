//! `verbs-ucmatose` against rdma-core's `ucmatose` (C librdmacm) over rxe0
//! and siw0, both ways: two connections, ten 100-byte messages each way
//! on each; both exit 0 and print the C tool's progress lines.

use core::time::Duration;
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use super::cm_rig::{cm_devices, ip_of, next_port};

const OURS: &str = env!("CARGO_BIN_EXE_verbs-ucmatose");
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

fn pair(dev: &str, server: &str, client: &str) {
    pair_with(dev, server, client, false);
}

/// With `migrate`, both sides run with `-m`: after the transfers every id
/// moves to a new event channel (`rdma_migrate_id`), where the
/// disconnection events then arrive.
fn pair_with(dev: &str, server: &str, client: &str, migrate: bool) {
    let ip = ip_of(dev);
    let port = next_port().to_string();
    let mut common = ["-c", "2", "-C", "10", "-S", "100", "-p", &port].map(String::from).to_vec();
    if migrate {
        common.push("-m".into());
    }
    let mut sargs = vec!["-b".to_string(), ip.clone()];
    sargs.extend(common.clone());
    let mut cargs = vec!["-s".to_string(), ip.clone()];
    cargs.extend(common);
    let srv_prog = server.to_string();
    let srv = std::thread::spawn(move || run(&srv_prog, &sargs));
    let start = Instant::now();
    let out = loop {
        std::thread::sleep(Duration::from_millis(500));
        let out = run(client, &cargs);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let refused = !out.status.success() && !text.contains("receiving data transfers");
        if !refused || start.elapsed() > TIMEOUT {
            break out;
        }
    };
    let sout = srv.join().expect("server");
    let show = |o: &Output| format!("exit {:?}\n--- stdout\n{}--- stderr\n{}", o.status.code(), String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(out.status.success(), "{dev}: client {client}: {}", show(&out));
    assert!(sout.status.success(), "{dev}: server {server}: {}", show(&sout));
    let c: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    let mut want_c = vec!["cmatose: starting client", "cmatose: connecting", "receiving data transfers", "sending replies", "data transfers complete", "test complete", "return status 0"];
    if migrate {
        want_c.insert(5, "migrating to new event channel");
    }
    assert_eq!(c, want_c, "{dev}: client output ({client} against {server}): {}", show(&out));
    let s: Vec<String> = String::from_utf8_lossy(&sout.stdout).lines().map(str::to_string).collect();
    let mut want_s = vec!["cmatose: starting server", "initiating data transfers", "completing sends", "receiving data transfers", "data transfers complete", "cmatose: disconnecting", "disconnected", "test complete", "return status 0"];
    if migrate {
        want_s.insert(5, "migrating to new event channel");
    }
    assert_eq!(s, want_s, "{dev}: server output ({server} against {client}): {}", show(&sout));
}

#[test]
#[ignore = "device test: verbs-ucmatose server, C ucmatose client, rxe0"]
fn rxe_ucmatose_ours_server_c_client() {
    pair(&cm_devices()[0], OURS, "ucmatose");
}

#[test]
#[ignore = "device test: C ucmatose server, verbs-ucmatose client, rxe0"]
fn rxe_ucmatose_c_server_ours_client() {
    pair(&cm_devices()[0], "ucmatose", OURS);
}

#[test]
#[ignore = "device test: verbs-ucmatose server, C ucmatose client, siw0"]
fn siw_ucmatose_ours_server_c_client() {
    pair(&cm_devices()[1], OURS, "ucmatose");
}

#[test]
#[ignore = "device test: C ucmatose server, verbs-ucmatose client, siw0"]
fn siw_ucmatose_c_server_ours_client() {
    pair(&cm_devices()[1], "ucmatose", OURS);
}

#[test]
#[ignore = "device test: ucmatose -m both ways (rdma_migrate_id), rxe0"]
fn rxe_ucmatose_migrate_both_ways() {
    pair_with(&cm_devices()[0], OURS, "ucmatose", true);
    pair_with(&cm_devices()[0], "ucmatose", OURS, true);
}

#[test]
#[ignore = "device test: ucmatose -m both ways (rdma_migrate_id), siw0"]
fn siw_ucmatose_migrate_both_ways() {
    pair_with(&cm_devices()[1], OURS, "ucmatose", true);
    pair_with(&cm_devices()[1], "ucmatose", OURS, true);
}
