//! RDMA netlink replies come from the kernel (or anyone who can talk on the
//! socket): the parsers must reject any malformed byte string with an
//! error, never panic or read out of bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use verbs::discovery::netlink::{parse_chardev_reply, parse_dev_get_reply, parse_sys_get_reply, Messages};

fuzz_target!(|data: &[u8]| {
    if let Ok(reply) = parse_dev_get_reply(data) {
        let _ = format!("{reply:?}");
    }
    let _ = parse_chardev_reply(data);
    let _ = parse_sys_get_reply(data);
    for msg in Messages::new(data, "fuzz") {
        let _ = msg;
    }
});
