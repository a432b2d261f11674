//! Sysfs attribute files are text written by drivers: every parser must
//! accept or reject arbitrary text without panicking, and a GUID that
//! parses must format back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use verbs::discovery::sysfs::{format_guid, parse_abi_version, parse_dev_t, parse_guid, parse_node_type};

fuzz_target!(|data: &[u8]| {
    let Ok(s) = core::str::from_utf8(data) else { return };
    let _ = parse_abi_version(s);
    let _ = parse_dev_t(s);
    let _ = parse_node_type(s);
    if let Some(g) = parse_guid(s) {
        assert_eq!(parse_guid(&format_guid(g)), Some(g));
    }
});
