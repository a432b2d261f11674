//! `verbs-udaddy` against rdma-core's `udaddy` (C librdmacm) over rxe0,
//! both ways: two UD "connections" (SIDR), ten 100-byte SENDs with
//! immediate each way on each; both exit 0 and print the C tool's lines.
//! (siw0 has no UD.) udaddy always uses port 7174, so the pairs run one
//! after another.

use core::time::Duration;
use std::time::Instant;

use super::cm_rig::{cm_devices, cm_ready, ip_of};
use super::procs::{both, start};

const OURS: &str = env!("CARGO_BIN_EXE_verbs-udaddy");
/// Per step (the server listening, each program exiting): the VM runs under TCG.
const TIMEOUT: Duration = Duration::from_secs(90);
/// udaddy's fixed port (its `-p` chooses the port space).
const PORT: u16 = 7174;

fn pair(server: &str, client: &str) {
    let dev = &cm_devices()[0];
    let ip = ip_of(dev);
    let common: Vec<String> = ["-c", "2", "-C", "10", "-S", "100"].map(String::from).to_vec();
    let mut sargs = vec!["-b".to_string(), ip.clone()];
    sargs.extend(common.clone());
    let mut cargs = vec!["-s".to_string(), ip];
    cargs.extend(common);
    let srv = start(server, &sargs).until("listened", || cm_ready(dev, PORT), Instant::now() + TIMEOUT);
    let c = start(client, &cargs).finish(Instant::now() + TIMEOUT);
    let s = srv.finish(Instant::now() + TIMEOUT);
    let both = both(&s, &c);
    assert_eq!((s.code, c.code), (Some(0), Some(0)), "exit codes (server, client)\n{both}");
    let want_c = ["udaddy: starting client", "udaddy: connecting", "initiating data transfers", "receiving data transfers", "data transfers complete", "test complete", "return status 0"];
    assert_eq!(c.stdout.lines().collect::<Vec<_>>(), want_c, "client output\n{both}");
    let want_s = ["udaddy: starting server", "receiving data transfers", "sending replies", "data transfers complete", "test complete", "return status 0"];
    assert_eq!(s.stdout.lines().collect::<Vec<_>>(), want_s, "server output\n{both}");
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
