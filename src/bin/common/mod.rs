//! Code shared by the `verbs-devices` and `verbs-devinfo` tools.

pub(crate) mod args;
pub(crate) mod devlist;
pub(crate) mod flags;
pub(crate) mod hca;
pub(crate) mod strings;
