//! The command channel: `RDMA_VERBS_IOCTL` and legacy `write()` commands on
//! an open `/dev/infiniband/uverbsN`.
