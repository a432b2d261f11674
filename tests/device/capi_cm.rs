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
//!
//! Multicast through C librdmacm on our library (`rdma_join_multicast`
//! attaching the UD QP with our `ibv_attach_mcast`) is tested by
//! rdma-core's own suite, which `scripts/test.sh` runs and gates on
//! (pyverbs' `test_rdmacm_async_*multicast_traffic`, in the ratchet).
//! rdmacm-utils' `mckey` is no test of it under TCG: its sender posts
//! unsignaled sends and destroys its QP at once, so rxe often has not
//! transmitted them, on either library (seen in the VM: its receiver
//! waited in vain for senders on rdma-core's library as on ours).

use super::capi::library_dir;
use super::cm_rig::cm_devices;
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
