//! The mlx5 (ConnectX) provider, in pure Rust: no libibverbs, no libmlx5.
//!
//! Plugged into the provider seam by [`provider`] (cargo feature `mlx5`,
//! not default): `Context::open` on a ConnectX (matched by driver id, or
//! by PCI id from sysfs) creates the context with mlx5 driver data and
//! legacy UARs; CQs, QPs (RC, UC, UD), SRQs and AHs carry our buffers and
//! doorbell records; posts ring the UAR (BlueFlame as libmlx5 decides);
//! polls reach the queues through the context's slot table. Proven on the
//! simulated ConnectX against libmlx5 (`scripts/sim.sh --ours`). Not yet:
//! dynamic UARs, CQE version 0, InfiniBand ports. The pieces: the ABI of the driver
//! data ([`abi`]), the ring layouts ([`wqe`]), queue sizing as libmlx5
//! computes it ([`sizing`]), the work queue memory ([`buf`]), the send
//! queue writer with its doorbell decision ([`sq`], memory-window binds and
//! local invalidates in [`sq::umr`]), the receive and SRQ
//! writers ([`rq`]), the address vector of UD sends ([`av`]) and CQE
//! parsing ([`cqe`]). Facts come from `../shared/MLX5.md` and rdma-core
//! v44's `providers/mlx5` (`qp.c`, `cq.c`, `srq.c`, `verbs.c`).
//!
//! # How it plugs in
//!
//! Unlike rxe and siw, whose rings live in kernel memory mapped through
//! the device file, mlx5's queues are memory *user space* allocates and
//! hands to the kernel (which pins it for the device): the buffer
//! addresses go into the driver data of `CREATE_CQ`/`CREATE_QP`/
//! `CREATE_SRQ`, the device reads WQEs and writes CQEs there by DMA, and
//! user space rings doorbells by storing into a UAR page it mapped from
//! the device file. What the wiring (issue 26 item 1, behind the provider
//! seam of item 6) needs:
//!
//! * **`Context::open`**: `GET_CONTEXT` with [`abi::Mlx5AllocUcontextReqV2`]
//!   (16 bfregs, 4 low-latency, `DEVX`, CQE version 1, `4K_UAR|DYN_UAR`;
//!   retry with 40- and 32-byte requests, then without `DEVX`, as libmlx5
//!   does) and keep [`abi::Mlx5AllocUcontextResp`]: `max_sq_desc_sz`,
//!   `max_rq_desc_sz`, `max_send_wqebb`, `max_recv_wr`, `max_srq_recv_wr`
//!   feed [`sizing::DeviceLimits`]; `cqe_version` (0 or 1, else refuse)
//!   picks how CQEs name their QP; `cache_line_size` spaces doorbell
//!   records; `bf_reg_size` (0: no BlueFlame) and `tot_bfregs` (0: dynamic
//!   UARs) choose the UAR scheme.
//! * **UAR mapping**: legacy (`tot_bfregs > 0`): `tot_bfregs / 2` pages at
//!   mmap offsets `i * 4096` (command [`abi::MMAP_REGULAR_PAGE`]), a QP's
//!   register at `page + 0x800 + k * bf_reg_size` for the `bfreg_index`
//!   of [`abi::Mlx5CreateQpResp`]; dynamic: `UAR_OBJ_ALLOC` ioctls (one NC UAR
//!   for CQ arming at context creation, BF UARs for QPs), each mapped at
//!   the offset the ioctl returns. A mapped UAR is an MMIO page: only
//!   volatile 64-bit stores into it, never a reference; it is owned by the
//!   context and outlives every QP and CQ that rings it.
//! * **Object creation**: queue buffers and doorbell records are
//!   [`buf::WqBuf`]s (page-aligned anonymous memory, zeroed, never moved)
//!   owned by the QP/CQ/SRQ handle and dropped only after the destroy
//!   command succeeded (the kernel unpins them then); their addresses go
//!   into [`abi::Mlx5CreateQp`] (with `sq_wqe_count`, `rq_wqe_count`,
//!   `rq_wqe_shift` from `sizing`, `uidx` from a per-context table,
//!   flags without `SCATTER_CQE`: this provider never lets the device put
//!   data into CQEs, see [`cqe`]), [`abi::Mlx5CreateCq`], [`abi::Mlx5CreateSrq`].
//! * **The doorbell path**: [`sq::SendQueue::post`] writes the WQEs,
//!   stores the doorbell record (after the release fence that orders the
//!   WQE stores before it) and returns a [`sq::Ring`]: the 8 bytes of the
//!   last control segment, or the BlueFlame copy of the one WQE, exactly
//!   as libmlx5 decides. The UAR code then does what `post_send_db` does:
//!   `sfence` (write-combining), the 64-bit store or the 64-byte-chunk
//!   copy to `register + offset`, `sfence`, and flips `offset ^=
//!   buf_size` (per register, under its lock when shared). Receive and
//!   SRQ posts only store their doorbell records; CQ polling stores the
//!   consumer index into the CQ's record; arming stores the arm word into
//!   the record and then `(arm << 32) | cqn` at UAR `+ 0x20`.
//!
//! The control path: the context's driver data,
//! what its response grants and its legacy UAR pages ([`ctx`]); the UAR
//! stores and write-combining fences, the BlueFlame register's lock and
//! alternating halves ([`uar`]); each object's buffer, doorbell record and
//! `CREATE_CQ`/`CREATE_QP`/`CREATE_SRQ` driver data ([`res`]); the
//! context's table of CQ, QP and SRQ state by user index, through which a
//! poll reaches the queues its CQEs name ([`registry`]), the data-path
//! verbs on it ([`ops`]) and a QP's move to RESET ([`reset`]).
//!
//! The barriers the device needs (and that the simulator cannot prove)
//! are listed in SAFETY.md with the reason for each.

pub mod abi;
pub mod av;
pub mod buf;
pub mod cqe;
pub mod cqe_layout;
pub mod rq;
pub mod sizing;
pub mod sq;
pub mod wqe;
pub mod ctx;
pub mod res;
pub mod uar;
pub mod registry;
pub mod ops;
#[cfg(feature = "internals")]
pub mod direct;
pub mod reset;
pub mod provider;
pub use provider::Mlx5;
