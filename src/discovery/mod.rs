//! Device discovery (feature `std`): sysfs, RDMA netlink, provider matching.
