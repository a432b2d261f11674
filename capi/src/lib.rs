//! # libibverbs.so.1 in Rust
//!
//! A drop-in replacement for rdma-core's `libibverbs.so.1` built on the
//! `verbs` crate: same SONAME, the same symbol versions (`libibverbs.map`,
//! every name rdma-core 44 exports), the same struct layouts
//! (`<infiniband/verbs.h>`, checked by `abi/layout_test.rs`). A C program
//! built against rdma-core runs on it by `LD_LIBRARY_PATH`, unmodified.
//!
//! Layers: [`exports`] binds the C names (and their versions) to the Rust
//! functions of [`device`], [`context`], [`pd`] (and [`domain`]), [`comp_channel`], [`mr`],
//! [`cq`], [`qp`], [`srq`], [`ah`], [`mw`], [`misc`]; the data path of
//! `ibv_context_ops` ([`ops`]) is in [`cq`] (poll, notify) and [`post`].
//! These call only the `verbs` crate's API (its `internals` for the
//! device file and the `MODIFY_QP`/`QUERY_QP` commands of C's attribute
//! masks). What is not implemented yet is in [`stubs`]: it sets `errno`
//! to `EOPNOTSUPP` (`ENOSYS` for the IBVERBS_1.0 compatibility versions)
//! and returns what C returns on failure (NULL, -1 or the errno value).
//!
//! Objects are heap-allocated Rust structs whose first field is the C
//! struct, so `struct ibv_pd *` and the Rust wrapper share an address;
//! each child holds an `Arc` of its context, so a context outlives the
//! objects made from it even if C closes it first. The C struct's
//! `handle` and `context` fields are the caller's: where rdma-core sends
//! them to the kernel, a verb whose fields no longer name the object gets
//! the kernel's answer and leaves the object alone ([`names`]).
#![deny(unsafe_code)]
// The unit-test build leaves out `exports` (an executable has no version
// nodes for its `.symver`s), so the C entry points look unused there.
#![cfg_attr(test, allow(dead_code))]

mod abi;
mod acks;
mod ah;
mod async_event;
mod comp_channel;
mod context;
mod cq;
mod device;
mod domain;
mod errno;
#[cfg(not(test))]
mod init;
#[cfg(not(test))]
mod exports;
mod marshall;
mod mcast;
mod misc;
#[cfg(feature = "mlx5")]
mod mlx5dv;
mod mr;
mod names;
mod mw;
mod ops;
mod pd;
mod post;
mod qp;
mod qp_ex;
mod query_device;
mod registry;
mod srq;
mod stubs;
