//! The programs in `examples/`, run in the VM as part of the device suite:
//! each file is compiled into this test binary as a module and its `main`
//! called. The examples use `rxe0` or the device named in `VERBS_DEVICE`,
//! which must then be the RoCE test device. An example that fails returns
//! its error, and the test fails with it.

use super::common::rxe_name;

#[path = "../../examples/atomics.rs"]
mod atomics;
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
