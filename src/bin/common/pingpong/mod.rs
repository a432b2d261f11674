//! Code shared by `verbs-rc-pingpong`, `verbs-ud-pingpong` and
//! `verbs-srq-pingpong`, the counterparts of rdma-core's
//! `ibv_rc_pingpong`, `ibv_ud_pingpong` and `ibv_srq_pingpong`.

pub(crate) mod device;
pub(crate) mod exchange;
pub(crate) mod opts;
pub(crate) mod report;
pub(crate) mod run;
