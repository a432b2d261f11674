//! C librdmacm on our `libibverbs.so.1` (issue 14): rdmacm-utils'
//! programs, unmodified, with one side on our library (`LD_LIBRARY_PATH`)
//! and the other on rdma-core's, both ways. librdmacm creates the QPs
//! through our `ibv_create_qp`, moves them with our `ibv_modify_qp` from
//! the attributes the kernel computes (on iWARP the kernel moves them to
//! RTS itself), and the programs post and poll through our
//! `ibv_context_ops`.
//!
//! * `rping` over rxe0 and siw0 (the C data path on iWARP: siw QPs can
//!   only be connected by the connection manager), checked as
//!   `tests/device/cm_tools.rs` checks ours: every ping's data, validated.
//! * `mckey` over rxe0: a UD QP joins an IPv4 multicast group
//!   (`rdma_join_multicast` attaches it with our `ibv_attach_mcast`), and
//!   the receiver gets every datagram the sender sends.

use core::time::Duration;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Instant;

use super::capi::library_dir;
use super::cm_rig::{cm_devices, ip_of};
use super::cm_tools::pair_on;

fn rping_both_ways(dev: &str) {
    let dir = library_dir();
    pair_on(dev, ("rping", Some(&dir)), ("rping", None));
    pair_on(dev, ("rping", None), ("rping", Some(&dir)));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "device test: C rping on our libibverbs against C rping on rdma-core's, rxe0 (run in the VM)"]
fn capi_rping_rxe_both_ways() {
    rping_both_ways(&cm_devices()[0]);
}

#[test]
#[ignore = "device test: C rping on our libibverbs against C rping on rdma-core's, siw0 (run in the VM)"]
fn capi_rping_siw_both_ways() {
    rping_both_ways(&cm_devices()[1]);
}

/// `mckey ARGS` on the library in `lib` (rdma-core's if `None`), stdout
/// line-buffered and forwarded line by line.
fn mckey(args: &[&str], lib: Option<&Path>) -> (Child, Receiver<String>) {
    let mut c = Command::new("stdbuf");
    c.arg("-oL").arg("mckey").args(args).env_remove("LD_LIBRARY_PATH");
    if let Some(d) = lib {
        c.env("LD_LIBRARY_PATH", d);
    }
    let mut child = c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("run mckey (rdmacm-utils)");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let tag = if lib.is_some() { "mckey [ours]" } else { "mckey [rdma-core]" };
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            eprintln!("{tag}: {line}");
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits for `child` to exit within `secs`; kills it and fails otherwise.
fn exit_code(child: &mut Child, secs: u64, what: &str) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish in {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A receiving `mckey` on `recv_lib`, then sending ones on `send_lib`, to
/// group `group`, 5 datagrams of 100 bytes each; every process must exit
/// 0, and the receiver exits only once it has received 5.
///
/// mckey's sender posts its sends unsignaled and destroys its QP right
/// after posting, so rxe may not have transmitted them all by then (under
/// TCG, on either library, it often has sent one): the sender runs again,
/// at most 6 times, until the receiver has its 5.
fn mckey_pair(group: &str, recv_lib: Option<&Path>, send_lib: Option<&Path>) {
    let ip = ip_of(&cm_devices()[0]);
    let common = ["-m", group, "-b", ip.as_str(), "-C", "5", "-S", "100"];
    let (mut r, lines) = mckey(&common, recv_lib);
    let start = Instant::now();
    loop {
        let line = lines.recv_timeout(Duration::from_secs(60)).expect("the mckey receiver starts");
        if line.contains("receiving data transfers") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "mckey receiver never got ready");
    }
    let mut send_args = common.to_vec();
    send_args.push("-s");
    for _ in 0..6 {
        let (mut s, _slines) = mckey(&send_args, send_lib);
        assert_eq!(exit_code(&mut s, 60, "mckey sender"), Some(0), "the mckey sender failed");
        // The receiver has what it waits for once it exits.
        let since = Instant::now();
        while since.elapsed() < Duration::from_secs(2) && r.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
        if r.try_wait().unwrap().is_some() {
            break;
        }
    }
    assert_eq!(exit_code(&mut r, 10, "mckey receiver"), Some(0), "the mckey receiver did not get 5 datagrams from 6 senders");
}

#[test]
#[ignore = "device test: C mckey on our libibverbs against C mckey on rdma-core's, rxe0 (run in the VM)"]
fn capi_mckey_rxe_both_ways() {
    let dir = library_dir();
    mckey_pair("224.0.1.44", Some(&dir), None);
    mckey_pair("224.0.1.45", None, Some(&dir));
    let _ = std::fs::remove_dir_all(&dir);
}
