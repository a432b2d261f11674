//! Host-only benchmark (no device): cost of building the command frames the
//! control path sends, and of decoding kernel replies. Prints ns/op; this is
//! a measurement, not a test. Run with `cargo bench --features internals --bench cmd_frames`.

use core::hint::black_box;

use verbs::abi::ioctl_cmds::{device, OBJECT_DEVICE};
use verbs::abi::ioctl_verbs::{GidEntry, QueryPortRespEx};
use verbs::abi::RdmaDriverId;
use verbs::cmd::IoctlBuf;
use zerocopy::{FromBytes, FromZeros};

// The timing loop shared with the ring benches (its memfd and poll tally
// are not used here).
#[allow(dead_code)]
mod common;
use common::bench;

fn main() {
    println!("verbs host benchmarks: command frames (median of 15 runs)");
    bench("ioctl frame: QUERY_PORT (2 attrs) build+seal", 2_000_000, || {
        let mut resp = QueryPortRespEx::new_zeroed();
        let mut b = IoctlBuf::<2>::new(OBJECT_DEVICE, device::METHOD_QUERY_PORT);
        b.in_const(device::ATTR_QUERY_PORT_PORT_NUM, black_box(1));
        b.out_obj(device::ATTR_QUERY_PORT_RESP, &mut resp);
        b.seal(RdmaDriverId::RXE);
        black_box(b.header());
    });
    bench("ioctl frame: GID entry (4 attrs) build+seal", 2_000_000, || {
        let mut e = GidEntry::new_zeroed();
        let mut b = IoctlBuf::<4>::new(OBJECT_DEVICE, device::METHOD_QUERY_GID_ENTRY);
        b.in_const(device::ATTR_QUERY_GID_ENTRY_PORT, 1);
        b.in_const(device::ATTR_QUERY_GID_ENTRY_GID_INDEX, black_box(3));
        b.in_value(device::ATTR_QUERY_GID_ENTRY_FLAGS, 0u32);
        b.out_obj(device::ATTR_QUERY_GID_ENTRY_RESP_ENTRY, &mut e);
        b.seal(RdmaDriverId::RXE);
        black_box(b.attrs());
    });
    let raw = [0x5au8; 64];
    bench("decode ib_uverbs_gid_entry -> GidEntry", 5_000_000, || {
        let (e, _) = GidEntry::read_from_prefix(black_box(&raw[..])).unwrap();
        black_box(verbs::GidEntry::from_kernel(e));
    });
    bench("decode query_port_resp_ex -> PortAttr", 5_000_000, || {
        let (r, _) = QueryPortRespEx::read_from_prefix(black_box(&raw[..])).unwrap();
        black_box(verbs::PortAttr::from_kernel(r));
    });
}
