//! Command responses are bytes the kernel writes: every reply type must be
//! decodable from any byte string of its size without panicking, and the
//! friendly conversions built on top must not panic either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use verbs::abi::ioctl_verbs::{GidEntry, QueryPortRespEx};
use verbs::abi::uverbs::{ExQueryDeviceResp, GetContextResp};
use zerocopy::FromBytes;

fuzz_target!(|data: &[u8]| {
    if let Ok((r, _)) = ExQueryDeviceResp::read_from_prefix(data) {
        let a = verbs::query::DeviceAttr::from_kernel(r);
        assert!(a.fw_ver.len() <= 17);
        let _ = (a.node_guid(), a.sys_image_guid());
    }
    if let Ok((r, _)) = QueryPortRespEx::read_from_prefix(data) {
        let _ = verbs::query::PortAttr::from_kernel(r);
    }
    if let Ok((r, _)) = GidEntry::read_from_prefix(data) {
        let _ = verbs::query::GidEntry::from_kernel(r);
    }
    let _ = GetContextResp::read_from_prefix(data);
    let _ = verbs::query::parse_pkey(data);
});
