//! Device tests: everything that needs a kernel RDMA device (`/dev/infiniband/uverbsN`).
//!
//! Every test here is `#[ignore = "device test: ..."]`, so a plain `cargo test` on a machine
//! without RDMA lists them as ignored. `scripts/test.sh` builds this binary on the host and
//! runs it with `--ignored --test-threads=1` inside the VM (rxe0 + siw0), or natively with
//! `scripts/test.sh --native` on a host with real devices. Device names come from
//! `VERBS_TEST_RXE` / `VERBS_TEST_SIW`, the RoCE v2 GID index from `VERBS_TEST_GID_INDEX`
//! (see `device/common.rs`).
//!
//! One module per area in `tests/device/<area>.rs`; add a `mod <area>;` line below.
//!
//! `faults_*` are the fault scenarios of issue #12. `faults_link` deletes rxe0 with
//! `rdma link delete` and re-creates it on the same netdev (same GID at the same index),
//! also when it fails half-way, so the tests after it find the device as the VM made it.

/// `twins!(body: rxe_test, siw_test)`: two device tests running
/// `body(dev)` on rxe0 and on siw0 (`device/rig.rs`'s `rc_devices`).
macro_rules! twins {
    ($body:ident: $rxe:ident, $siw:ident) => {
        #[test]
        #[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
        fn $rxe() {
            $body(&super::rig::rc_devices()[0]);
        }

        #[test]
        #[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
        fn $siw() {
            $body(&super::rig::rc_devices()[1]);
        }
    };
}

mod device {
    #[allow(dead_code)]
    mod common;
    mod procs;

    mod ah;
    mod async_event;
    mod capi;
    mod capi_apps;
    mod capi_cm;
    mod capi_log;
    mod checks;
    mod cm;
    mod cm_datapath;
    mod cm_mcast;
    mod cm_rig;
    mod cm_tools;
    mod cm_ucmatose;
    mod cm_udaddy;
    mod comp_channel;
    mod connect;
    mod connector;
    mod cq;
    mod cq_pollers;
    mod cq_shared;
    mod cq_wait;
    #[cfg(feature = "internals")]
    mod dead;
    mod datapath;
    mod devinfo;
    mod discovery;
    mod examples;
    mod faults_access;
    mod faults_cq;
    mod faults_link;
    mod faults_pollers;
    mod faults_retry;
    mod fork;
    mod harness;
    mod mcast;
    mod mr;
    mod mr_iova;
    mod mr_own;
    mod no_alloc;
    mod pingpong;
    mod mw;
    mod pd;
    mod perf_interop;
    mod qp;
    mod qp_err_race;
    mod qp_reset;
    mod query;
    #[allow(dead_code)]
    mod rig;
    mod resize_shared;
    mod ring_reuse;
    mod siw_flush;
    mod srq;
    mod syscalls;
    mod syscalls_siw;
    #[cfg(feature = "tokio")]
    mod tokio_async;
    mod ud_events;
    mod xrc;
}
