//! The programs in `examples/`, run in the VM as part of the device suite:
//! each file is compiled into this test binary as a module and its `main`
//! called. The examples use `rxe0` or the device named in `VERBS_DEVICE`,
//! which must then be the RoCE test device. An example that fails returns
//! its error, and the test fails with it.

use super::common::rxe_name;

#[path = "../../examples/atomics.rs"]
mod atomics;
#[path = "../../examples/huge_pages.rs"]
mod huge_pages;
#[path = "../../examples/loopback_rc.rs"]
mod loopback_rc;
#[path = "../../examples/memory_windows.rs"]
mod memory_windows;
#[path = "../../examples/rc_events.rs"]
mod rc_events;
#[path = "../../examples/srq_shared.rs"]
mod srq_shared;
#[path = "../../examples/ud_ah.rs"]
mod ud_ah;

fn run(main: fn() -> Result<(), Box<dyn core::error::Error>>) {
    let dev = std::env::var("VERBS_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    assert_eq!(dev, rxe_name(), "set VERBS_DEVICE to the RoCE test device for the examples");
    if let Err(e) = main() {
        panic!("example failed: {e}");
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_example_loopback_rc() {
    run(loopback_rc::main);
}

/// Needs huge pages: the VM reserves 16 at boot (vm/guest-stage2.sh); natively,
/// `sysctl vm.nr_hugepages=8`.
#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_example_huge_pages() {
    run(huge_pages::main);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_example_rc_events() {
    run(rc_events::main);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_example_atomics() {
    run(atomics::main);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_example_ud_ah() {
    run(ud_ah::main);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_example_srq_shared() {
    run(srq_shared::main);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_example_memory_windows() {
    run(memory_windows::main);
}

#[path = "../../examples/cm_client.rs"]
mod cm_client;
#[path = "../../examples/cm_server.rs"]
mod cm_server;

/// `cm_server` and `cm_client` against each other on `dev`'s address: 100
/// acknowledged messages, an RDMA READ of the server's region (checked
/// byte for byte), a clean disconnect on both sides.
fn cm_examples(dev: &str) {
    use super::cm_rig::{ip_of, next_port, with_port};
    let addr = with_port(&ip_of(dev), next_port());
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        cm_server::serve(addr, move || tx.send(()).expect("test waits")).map_err(|e| e.to_string())
    });
    if rx.recv().is_err() {
        // The server failed before listening: its error says why.
        panic!("{dev}: cm_server: {:?}", server.join().expect("server thread"));
    }
    let region = cm_client::run(addr).unwrap_or_else(|e| panic!("{dev}: cm_client: {e}"));
    server.join().expect("server thread").unwrap_or_else(|e| panic!("{dev}: cm_server: {e}"));
    let want: Vec<u8> = (0..cm_server::REGION).map(cm_server::pattern).collect();
    assert_eq!(region, want, "{dev}: the region read");
}

#[test]
#[ignore = "device test: examples/cm_server.rs + cm_client.rs on rxe0 (RoCE)"]
fn rxe_example_cm_server_client() {
    cm_examples(&super::cm_rig::cm_devices()[0]);
}

#[test]
#[ignore = "device test: examples/cm_server.rs + cm_client.rs on siw0 (iWARP)"]
fn siw_example_cm_server_client() {
    cm_examples(&super::cm_rig::cm_devices()[1]);
}
