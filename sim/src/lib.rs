//! A simulated ConnectX (mlx5): everything below the uverbs boundary.
//!
//! The real driver that judges this model is rdma-core's unmodified
//! libibverbs + libmlx5. Layers (each calls only downward):
//!
//! ```text
//! bin/simd.rs   the device daemon: one per simulated NIC, serves every process
//! server/       (daemon side) connections, uverbs write commands and ioctls answered as
//!               mlx5_ib answers them, UAR pages and the doorbell scanner, event fds
//! fixture.rs    the device's sysfs tree (SYSFS_PATH)
//! proto.rs      shim <-> daemon messages; fdpass.rs: SCM_RIGHTS
//! cm_listen.rs  the daemon's rdma_cm listener file, read by harnesses and the shim
//! engine/       the NIC: doorbells, send-queue WQEs, receive queues, SRQs, CQEs
//! model.rs      the objects both halves share (PD, MR, MW, CQ, QP, SRQ, AH)
//! mem.rs        host memory of the applications (process_vm_readv/writev: DMA)
//! ```
//!
//! Applications reach the daemon through `verbs-sim-shim` (an `LD_PRELOAD`
//! library, `sim/shim`), which owns the uverbs descriptor in each process.
#![warn(missing_docs)]

pub mod cm_listen;
pub mod engine;
pub mod fdpass;
pub mod fixture;
pub mod mem;
pub mod model;
pub mod proto;
pub mod server;
