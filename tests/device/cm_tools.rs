//! `verbs-rping` against rdma-core's `rping` (rdmacm-utils, on C
//! librdmacm) over rxe0 and siw0, both ways, and a pair of ours: both
//! processes exit 0, the client prints every ping's data (`-v`) exactly as
//! the C client formats it, validated (`-V`), and the server prints what
//! it read.

use core::time::Duration;
use std::path::Path;
use std::time::Instant;

use super::cm_rig::{cm_devices, cm_ready, ip_of, next_port};
use super::common::siw_name;
use super::procs::{both, start_on, Finished, SiwStall};

const OURS: &str = env!("CARGO_BIN_EXE_verbs-rping");
const COUNT: usize = 5;
/// Per step (the server listening, each program exiting): the VM runs under TCG.
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

fn pair(dev: &str, server: &str, client: &str) {
    pair_on(dev, (server, None), (client, None));
}

/// Runs of one pair on siw when siw loses the client's first message
/// ([`SiwStall`]).
const ATTEMPTS: usize = 4;

/// [`pair`] with each side's program on the libibverbs.so.1 in its
/// directory, if given (our C library, `tests/device/capi_cm.rs`).
pub(super) fn pair_on(dev: &str, server: (&str, Option<&Path>), client: (&str, Option<&Path>)) {
    let mut lost = Vec::new();
    let (s, c) = loop {
        let (s, c, stalled) = attempt(dev, server, client);
        if stalled && lost.len() + 1 < ATTEMPTS {
            eprintln!("{dev}: siw lost the client's first message (see procs::SiwStall); running the pair again");
            lost.push(format!("=== attempt {} stalled: siw lost the client's first message\n{}\n", lost.len() + 1, both(&s, &c)));
            continue;
        }
        break (s, c);
    };
    let size = 64;
    let both = format!("{}{}", lost.concat(), both(&s, &c));
    assert_eq!((s.code, c.code), (Some(0), Some(0)), "{dev}: exit codes (server, client)\n{both}");
    let want: Vec<String> = (0..COUNT).map(|i| format!("ping data: {}", ping_text(i, size))).collect();
    assert_eq!(c.stdout.lines().collect::<Vec<_>>(), want, "{dev}: client output\n{both}");
    let swant: Vec<String> = want.iter().map(|l| format!("server {l}")).collect();
    assert_eq!(s.stdout.lines().collect::<Vec<_>>(), swant, "{dev}: server output\n{both}");
}

/// One run of the pair on a new port: (server, client, whether it stalled
/// as [`SiwStall`] describes and was stopped).
fn attempt(dev: &str, (server, slib): (&str, Option<&Path>), (client, clib): (&str, Option<&Path>)) -> (Finished, Finished, bool) {
    let ip = ip_of(dev);
    let port = next_port();
    let common = |role: &str| -> Vec<String> {
        vec![role.into(), "-a".into(), ip.clone(), "-p".into(), port.to_string(), "-C".into(), COUNT.to_string(), "-v".into(), "-V".into()]
    };
    let (sargs, cargs) = (common("-s"), common("-c"));
    // The client starts once, when the server listens: C rping's client
    // does not exit after a refused connect on siw (on either library; it
    // hangs until killed).
    let srv = start_on(server, &sargs, slib).until("listened", || cm_ready(dev, port), Instant::now() + TIMEOUT);
    let stall = SiwStall::new(port);
    let siw = dev == siw_name();
    let c = start_on(client, &cargs, clib).finish_unless(Instant::now() + TIMEOUT, |_| siw && stall.check());
    let stalled = c.stopped;
    let s = srv.finish(if stalled { Instant::now() } else { Instant::now() + TIMEOUT });
    (s, c, stalled)
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
