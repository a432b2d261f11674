//! The command channel: `RDMA_VERBS_IOCTL` and legacy `write()` commands on
//! an open `/dev/infiniband/uverbsN`.
//!
//! Commands are built on the stack ([`IoctlBuf`], fixed-size write frames);
//! nothing here allocates. One file per kernel object, as in rdma-core's
//! `libibverbs/cmd_*.c`.

pub mod channel;
pub mod device;
pub mod ioctl_buf;
pub mod ucma;

pub use channel::Channel;
pub use ioctl_buf::{AttrSlot, IoctlBuf};
