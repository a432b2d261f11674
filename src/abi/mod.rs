//! Kernel uAPI structures, transcribed 1:1 from `<rdma/*.h>`.
//!
//! Every struct is `#[repr(C)]` with zerocopy derives (so padding is
//! rejected at compile time) and compile-time size/offset assertions next
//! to it. `tests/abi_crosscheck.rs` compiles a C program against the
//! system's `/usr/include/rdma/*.h` and compares every size and offset.
//! Kernel unions become plain byte/integer fields with typed accessors.

pub mod ioctl;
pub mod ioctl_cmds;
pub mod ioctl_verbs;
pub mod netlink;
pub mod uverbs;

pub use ioctl_verbs::RdmaDriverId;
