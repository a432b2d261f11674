//! `verbs-ucmatose` against rdma-core's `ucmatose` (C librdmacm) over rxe0
//! and siw0, both ways: two connections, ten 100-byte messages each way
//! on each; both exit 0 and print the C tool's progress lines.
//!
//! # siw and the server that sends first
//!
//! ucmatose's server SENDs as soon as its last connection is ESTABLISHED.
//! On iWARP the passive side is ESTABLISHED when it has sent the MPA reply,
//! while siw's active side reads that reply later, in its connection
//! manager's work queue (`siw_cm_wq`). When the server's first FPDUs arrive
//! before that work ran (a loaded TCG guest: the queued work waits for a
//! vCPU while the server keeps posting), siw reads more bytes than the
//! reply's private data, takes them for a protocol violation
//! (`siw_recv_mpa_rr`: -EPROTO; the kernel log, with siw's debug messages
//! on, shows `siw_cm_queue_work: failed with no work available` for each
//! early segment, then `reason=2, status=-22`) and fails the connect with
//! `RDMA_CM_EVENT_CONNECT_ERROR`, status -EINVAL, while the server believes
//! it connected. The event comes from the kernel whichever side is ours
//! (seen with our client and with C's; issue #24 item 7: about one group
//! run in five lost a siw pair this way). An attempt whose client reports exactly that event on siw is run
//! again (new processes, new port), at most [`ATTEMPTS`] times in all; any
//! other failure fails the test at once. The C client hangs after that
//! event (waiting for disconnections that never come), so it and the
//! server are stopped as soon as it prints it.

use core::time::Duration;
use std::time::Instant;

use super::cm_rig::{cm_devices, cm_ready, ip_of, next_port};
use super::common::siw_name;
use super::procs::{both, start, Finished};

const OURS: &str = env!("CARGO_BIN_EXE_verbs-ucmatose");
/// Per step (the server listening, each program exiting): the VM runs under TCG.
const TIMEOUT: Duration = Duration::from_secs(90);
/// What a client prints when siw refused the MPA reply that arrived with the
/// server's first data (see the module docs).
const SIW_REPLY_RACE: &str = "cmatose: event: RDMA_CM_EVENT_CONNECT_ERROR, error: -22";
/// Attempts of one pair on siw when the client keeps losing that race.
const ATTEMPTS: usize = 5;

fn pair(dev: &str, server: &str, client: &str) {
    pair_with(dev, server, client, false);
}

/// One run of `server` and `client` with `args` (the address option comes
/// first): (server, client).
fn attempt(dev: &str, server: &str, client: &str, args: &[String]) -> (Finished, Finished) {
    let ip = ip_of(dev);
    let port = next_port();
    let common = [args, &["-p".to_string(), port.to_string()]].concat();
    let sargs = [&["-b".to_string(), ip.clone()], &common[..]].concat();
    let cargs = [&["-s".to_string(), ip], &common[..]].concat();
    let srv = start(server, &sargs).until("listened", || cm_ready(dev, port), Instant::now() + TIMEOUT);
    let raced = |out: &str| dev == siw_name() && out.contains(SIW_REPLY_RACE);
    let c = start(client, &cargs).finish_unless(Instant::now() + TIMEOUT, raced);
    // After a lost race the server may wait for transfers that never come.
    let s = srv.finish(if raced(&c.stdout) { Instant::now() } else { Instant::now() + TIMEOUT });
    (s, c)
}

/// With `migrate`, both sides run with `-m`: after the transfers every id
/// moves to a new event channel (`rdma_migrate_id`), where the
/// disconnection events then arrive.
fn pair_with(dev: &str, server: &str, client: &str, migrate: bool) {
    let mut args = ["-c", "2", "-C", "10", "-S", "100"].map(String::from).to_vec();
    if migrate {
        args.push("-m".into());
    }
    let mut lost = Vec::new();
    let (s, c) = loop {
        let (s, c) = attempt(dev, server, client, &args);
        if dev == siw_name() && c.stdout.contains(SIW_REPLY_RACE) && lost.len() + 1 < ATTEMPTS {
            eprintln!("{dev}: the client lost siw's MPA reply race (see the module docs); running the pair again");
            lost.push(format!("=== attempt {} lost siw's MPA reply race\n{}\n", lost.len() + 1, both(&s, &c)));
            continue;
        }
        break (s, c);
    };
    let both = format!("{}{}", lost.concat(), both(&s, &c));
    assert_eq!((s.code, c.code), (Some(0), Some(0)), "{dev}: exit codes (server, client)\n{both}");
    let mut want_c = vec!["cmatose: starting client", "cmatose: connecting", "receiving data transfers", "sending replies", "data transfers complete", "test complete", "return status 0"];
    if migrate {
        want_c.insert(5, "migrating to new event channel");
    }
    assert_eq!(c.stdout.lines().collect::<Vec<_>>(), want_c, "{dev}: client output\n{both}");
    let mut want_s = vec!["cmatose: starting server", "initiating data transfers", "completing sends", "receiving data transfers", "data transfers complete", "cmatose: disconnecting", "disconnected", "test complete", "return status 0"];
    if migrate {
        want_s.insert(5, "migrating to new event channel");
    }
    assert_eq!(s.stdout.lines().collect::<Vec<_>>(), want_s, "{dev}: server output\n{both}");
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
