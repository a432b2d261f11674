//! # verbs — RDMA verbs in pure Rust
//!
//! A reimplementation of what rdma-core's `libibverbs` and its user-space
//! providers do, talking to the kernel's uverbs interface
//! (`/dev/infiniband/uverbsN`) directly with `ioctl`, `write` and `mmap`
//! through [rustix]. No C library, no bindgen, no `dlopen`.
//!
//! ## Getting started
//!
//! Two RC queue pairs on one RoCE device (rxe loops packets for its own
//! address back), connected from their [`Endpoint`](qp::Endpoint)s with
//! rdma-core's `ibv_rc_pingpong` defaults; then an RDMA WRITE of a 64-byte
//! record and a SEND with immediate data, busy-polled. `examples/` has it
//! as `loopback_rc`, the same with completion events through epoll
//! (`rc_events`), then `ud_ah` (UD datagrams through an address handle),
//! `srq_shared` (three QPs on one shared receive queue), `atomics` and
//! `memory_windows` (bind, write through, invalidate); the device suite
//! runs each in the VM (`cargo run --example NAME` runs one on a host
//! with RDMA). Connecting by IP address (rdma_cm, the only way on iWARP)
//! is [`cm::Connector`] and [`cm::Listener`] (`cm_server`, `cm_client`);
//! waiting for a completion with a deadline is [`Cq::wait`]; with the
//! feature `tokio`, `async_io` has completions, connection-manager events
//! and connect/accept as cancel-safe futures.
//!
//! ```no_run
//! use verbs::discovery::devices;
//! use verbs::qp::{ConnectOpts, Endpoint, QpCap, QpInitAttr, RcQp};
//! use verbs::wr::{RecvWr, SendWr, Sge};
//! use verbs::{AccessFlags, Context, Cq, Mr, Pd, Wc};
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let list = devices()?;                                   // ibv_get_device_list
//!     let ctx = Context::open(list.by_name("rxe0")?)?;         // ibv_open_device
//!     let pd = Pd::alloc(&ctx)?;                               // ibv_alloc_pd
//!     let cq = Cq::create(&ctx, 16, None, 0)?;                 // ibv_create_cq
//!     let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
//!     let attr = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false };
//!     let (a, b) = (RcQp::create(&pd, attr)?, RcQp::create(&pd, attr)?); // ibv_create_qp
//!
//!     // What each side tells the other (over a socket: `to_bytes()` / `from_bytes()`):
//!     // QPN, PSN, LID, the port's RoCE v2 IPv4 GID, MTU.
//!     let (ea, eb) = (Endpoint::local(&a, 1, None, 0)?, Endpoint::local(&b, 1, None, 0)?);
//!     // RESET -> INIT -> RTR -> RTS; b's memory may be written by its peer.
//!     let opts = ConnectOpts { access: AccessFlags::REMOTE_WRITE, ..ConnectOpts::default() };
//!     let mut a = a.connect(&ea, &eb, &opts)?; // a failed transition hands the QP back in e.qp; ? keeps only the error
//!     let mut b = b.connect(&eb, &ea, &opts)?; // a failed transition hands the QP back in e.qp; ? keeps only the error
//!
//!     let src = vec![7u8; 128];
//!     let dst = vec![0u8; 128];
//!     let src_mr = Mr::reg(&pd, src, AccessFlags::LOCAL_WRITE)?;   // ibv_reg_mr
//!     let dst_mr = Mr::reg(&pd, dst, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)?;
//!
//!     let recv = [Sge::from_mr(&dst_mr, 64, 64)];
//!     b.post_recv(&[RecvWr::new(1, &recv)])?;                  // ibv_post_recv
//!     let record = [Sge::from_mr(&src_mr, 0, 64)];
//!     a.post_send(&[                                           // ibv_post_send, one doorbell
//!         SendWr::rdma_write(10, &record, dst_mr.addr(), dst_mr.rkey()).signaled(),
//!         SendWr::send_with_imm(11, &record[..0], 0xcafe).signaled(),
//!     ])?;
//!
//!     // ibv_poll_cq until both sends and the receive completed.
//!     let (mut done, mut wc) = (0, [Wc::ZERO; 4]);
//!     while done < 3 {
//!         let n = cq.poll(&mut wc)?;
//!         for w in &wc[..n] {
//!             assert!(w.status().is_success(), "{w:?}");
//!             if w.wr_id() == 1 {
//!                 assert_eq!(w.imm_data(), Some(0xcafe));
//!             }
//!             done += 1;
//!         }
//!     }
//!     Ok(())
//! }
//! ```
//!
//! ## From libibverbs
//!
//! | C (`<infiniband/verbs.h>`) | here |
//! |---|---|
//! | `ibv_get_device_list`, `ibv_free_device_list` | [`discovery::devices`] (dropped) |
//! | `ibv_open_device`, `ibv_close_device` | [`Context::open`], drop |
//! | `ibv_query_device(_ex)`, `ibv_query_port`, `ibv_query_gid(_ex)`, `ibv_query_gid_table`, `ibv_query_pkey` | [`Context::query_device`], [`Context::query_port`], [`Context::query_gid`] / [`query_gid_ex`](Context::query_gid_ex), [`Context::query_gid_table`], [`Context::query_pkey`] |
//! | finding the RoCE v2 GID index by hand | [`Context::roce_v2_ipv4_gid_index`] |
//! | `ibv_alloc_pd`, `ibv_dealloc_pd` | [`Pd::alloc`], drop or [`Pd::destroy`] |
//! | `ibv_reg_mr`, `ibv_dereg_mr` | [`Mr::reg`], drop or [`Mr::destroy`] |
//! | `ibv_create_comp_channel`, `ibv_destroy_comp_channel` | [`CompChannel::create`], drop |
//! | `ibv_create_cq`, `ibv_resize_cq`, `ibv_destroy_cq` | [`Cq::create`], [`Cq::resize`], drop or [`Cq::destroy`] |
//! | `ibv_req_notify_cq`, `ibv_get_cq_event`, `ibv_ack_cq_events` | [`Cq::req_notify`], [`cq::get_cq_event`], [`Cq::ack_events`] |
//! | `ibv_poll_cq` / `ibv_start_poll`… | [`Cq::poll`] / [`Cq::poll_with`] |
//! | `ibv_create_qp`, `ibv_destroy_qp` | [`QueuePair::create`], drop or [`QueuePair::destroy`] |
//! | `ibv_modify_qp` | [`into_init`](QueuePair::into_init), [`into_rtr`](QueuePair::into_rtr), [`into_rts`](QueuePair::into_rts), [`into_error`](QueuePair::into_error), [`into_reset`](QueuePair::into_reset); RC from two endpoints: [`connect`](QueuePair::connect) |
//! | `ibv_query_qp` | [`QueuePair::query`] |
//! | `ibv_post_send`, `ibv_post_recv` | [`QueuePair::post_send`], [`QueuePair::post_recv`] with [`SendWr`] / [`RecvWr`] |
//! | `ibv_create_srq`, `ibv_modify_srq`, `ibv_post_srq_recv` | [`Srq::create`], [`Srq::modify`], [`Srq::post_recv`] |
//! | `ibv_create_ah`, `ibv_create_ah_from_wc` | [`Ah::create`], [`Ah::create_from_wc`] |
//! | `ibv_alloc_mw`, `ibv_bind_mw` | [`Mw::alloc`], [`SendOp::BindMw`] |
//! | `ibv_get_async_event`, `ibv_ack_async_event` | [`async_event`] |
//! | `errno` | [`Error`]: the verb, an [`ErrorKind`], the errno and a detail |
//!
//! ## Layers
//!
//! Each layer calls only the layers below it:
//!
//! | layer | module | what it does |
//! |---|---|---|
//! | discovery (`std`) | [`discovery`] | sysfs + RDMA netlink: which devices exist, which provider drives each |
//! | handles | [`Context`], [`query`] | the device context and its queries |
//! | providers | `providers` | the provider seam (`seam`: the `Provider` trait and its hooks), the dispatch enums generated from the one registration list, and each provider's ABI and data path (rxe, siw) |
//! | command channel | `cmd` | `RDMA_VERBS_IOCTL` and legacy `write()` commands on the device fd |
//! | queue memory | `mmap` | the rings' `MAP_SHARED` regions of the device file |
//! | kernel ABI | `abi` | `#[repr(C)]` zerocopy transcriptions of `<rdma/*.h>` |
//!
//! The last four layers are private: through them safe code could hand the
//! kernel any address (a hand-made `REG_MR`, a response pointer) or race
//! the device on a ring. What callers need of them is re-exported here
//! ([`ProviderKind`], [`RdmaDriverId`]) or wrapped by the handle types.
//! The cargo feature `internals` makes them public again (`#[doc(hidden)]`,
//! outside the safe API and its semver promise) for the crate's own ABI
//! cross-check, benches and fuzz targets; code built with it can break
//! every guarantee of this crate.
//!
//! The core is `#![no_std]` and never allocates; the default `std` feature
//! adds device discovery, the debug log and `std::error::Error`
//! conversions.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(unsafe_code)]
#![warn(missing_docs)]

// The private backend (see the table above): public only with the
// `internals` feature. Without it nothing outside the crate reaches these
// modules, so their `pub` items are crate-internal (hence the allows).
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod abi;
#[cfg(not(feature = "internals"))]
#[allow(unreachable_pub, dead_code, unused_imports)]
mod abi;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod cmd;
#[cfg(not(feature = "internals"))]
#[allow(unreachable_pub, dead_code, unused_imports)]
mod cmd;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod mmap;
#[cfg(not(feature = "internals"))]
#[allow(unreachable_pub, dead_code, unused_imports)]
mod mmap;
#[cfg(feature = "internals")]
#[doc(hidden)]
#[path = "../providers/mod.rs"]
pub mod providers;
#[cfg(not(feature = "internals"))]
#[allow(unreachable_pub, dead_code, unused_imports)]
#[path = "../providers/mod.rs"]
mod providers;

mod access;
mod event_fd;
mod event_type;
pub mod ah;
#[cfg(feature = "tokio")]
pub mod async_io;
mod async_fd;
pub mod cm;
pub mod async_event;
pub mod comp_channel;
pub mod context;
pub mod cq;
pub mod cq_wait;
pub mod domain;
pub mod error;
pub mod fork;
pub mod mcast;
pub mod mr;
mod attr_check;
mod huge_buf;
mod anon_map;
mod mr_buf;
mod mr_io;
pub mod mw;
pub mod pd;
pub mod qp;
pub mod query;
mod swap_cell;
mod user_handle;
pub mod srq;
pub mod strings;
pub mod wc;
pub mod wr;
pub mod xrc;

#[cfg(feature = "std")]
pub mod discovery;
#[cfg(feature = "std")]
pub mod log;

/// The README's code, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub use ah::{Ah, AhAttr, GlobalRoute};
pub use async_event::{AsyncElement, AsyncEvent, EventType};
pub use comp_channel::CompChannel;
pub use abi::RdmaDriverId;
pub use context::Context;
pub use cq::{Cq, CqOptions};
pub use mr::{AccessFlags, Mr, MrBuffer, PageBuf};
pub use huge_buf::{HugePageBuf, HUGE_PAGE_SIZE};
pub use async_fd::AsyncEventFd;
pub use mw::{Mw, MwType};
pub use domain::{ParentDomain, Td};
pub use pd::{DestroyError, Pd};
pub use providers::{Caps as ProviderCaps, ProviderKind};
pub use qp::{AnyQp, QueuePair};
pub use error::{Error, ErrorKind, Result};
pub use query::{DeviceAttr, GidEntry, PortAttr};
pub use srq::Srq;
pub use wc::{Wc, WcFlags, WcOpcode, WcStatus};
pub use wr::{PostError, RecvWr, SendFlags, SendOp, SendWr, Sge};
