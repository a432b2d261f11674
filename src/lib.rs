//! # verbs — RDMA verbs in pure Rust
//!
//! A reimplementation of what rdma-core's `libibverbs` and its user-space
//! providers do, talking to the kernel's uverbs interface
//! (`/dev/infiniband/uverbsN`) directly with `ioctl`, `write` and `mmap`
//! through [rustix]. No C library, no bindgen, no `dlopen`.
//!
//! ## Layers
//!
//! Each layer calls only the layers below it:
//!
//! | layer | module | what it does |
//! |---|---|---|
//! | discovery (`std`) | [`discovery`] | sysfs + RDMA netlink: which devices exist, which provider drives each |
//! | handles | [`Context`], [`query`] | the device context and its queries |
//! | providers | `providers` | the compiled-in provider table and per-driver ABI and rings (rxe, siw) |
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

pub mod ah;
pub mod async_event;
pub mod comp_channel;
pub mod context;
pub mod cq;
pub mod error;
pub mod fork;
pub mod mcast;
pub mod mr;
mod attr_check;
mod mr_buf;
mod mr_io;
pub mod mw;
pub mod pd;
pub mod qp;
pub mod query;
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

pub use ah::{Ah, AhAttr, GlobalRoute};
pub use async_event::{AsyncElement, AsyncEvent, EventType};
pub use comp_channel::CompChannel;
pub use abi::RdmaDriverId;
pub use context::Context;
pub use cq::Cq;
pub use mr::{AccessFlags, Mr, MrBuffer, PageBuf};
pub use mw::{Mw, MwType};
pub use pd::{DestroyError, Pd};
pub use providers::ProviderKind;
pub use qp::{AnyQp, QueuePair};
pub use error::{Error, ErrorKind, Result};
pub use query::{DeviceAttr, GidEntry, PortAttr};
pub use srq::Srq;
pub use wc::{Wc, WcFlags, WcOpcode, WcStatus};
pub use wr::{PostError, RecvWr, SendFlags, SendOp, SendWr, Sge};
