//! `#[repr(C)]` transcriptions of the `<infiniband/verbs.h>` structs the C
//! library hands out or reads (rdma-core 44). Field names are C's.
//! `layout_test.rs` checks every size, alignment and offset against the
//! installed header with a C compiler (tests only: the library itself is
//! built by cargo alone).
#![allow(dead_code)] // fields exist for their layout; not every one is read or written

pub(crate) mod device;
pub(crate) mod device_ex;
pub(crate) mod kern;
pub(crate) mod objects;
pub(crate) mod wr;

#[cfg(test)]
mod layout_test;
