//! Code shared by the `verbs-devices` and `verbs-devinfo` tools.

pub(crate) mod args;
pub(crate) mod devlist;
pub(crate) mod flags;
// the pingpong tools include it by path; here only its C number parsing is used
#[allow(dead_code)]
pub(crate) mod getopt;
pub(crate) mod hca;
pub(crate) mod strings;
