//! A `poll_with` chunk ([`Chunk`]): completions taken from the CQ under
//! its lock into stack memory that is not zeroed first (the 768 bytes a
//! `[Wc::ZERO; CHUNK]` stores on every call), then lent out as `&[Wc]`.
//!
//! # Safety
//!
//! * **K1 — only written elements are read.** [`Chunk::fill`] views as
//!   `Wc` the first `n` elements of the slice `out` of the chunk it hands
//!   [`ops::poll_chunk`], `n` the count that poll returned, capped at
//!   `out.len()`. That count is the poll's contract (`CqRing::poll_deferred`,
//!   the one the C library hands on to C callers of `ibv_poll_cq` as the
//!   number of `struct ibv_wc` written, and `Cq::poll_uninit` to its
//!   callers): the completions it counts were stored into `out[0..n]` in
//!   order by `WcOut::set` (which writes a whole `Wc`), each before it was
//!   counted: the stash's (`Stash::drain`: one `set` per element it
//!   counts), a run's (`req_run`: `CqeRing::run64` counts the slots whose
//!   closure returned `true`, each after its `set`), the single slot's and
//!   the general path's (`out[n].set` before `n += 1`). A poll that fails
//!   counts only what it stored before.
//! * **K2 — layout.** `MaybeUninit<Wc>` has `Wc`'s size and alignment
//!   (`repr(transparent)`), so `n` written elements are a `[Wc]` of `n`
//!   elements at the same address, borrowed from the `&mut self` of the
//!   fill (nothing writes the chunk while the view lives).
//!
//! (The chunk is its array alone: a count stored beside it let LLVM merge
//! the count's zero and the array's undefined bytes into one `memset` of
//! the whole.)
#![allow(unsafe_code)]

use core::mem::MaybeUninit;

use crate::providers::mlx5::cqe::stash::CHUNK;
use crate::providers::mlx5::ops;
use crate::providers::mlx5::registry::MadeSlot;
use crate::wc::Wc;

/// Room for up to [`CHUNK`] completions of one `poll_with` chunk (K1).
pub(super) struct Chunk([MaybeUninit<Wc>; CHUNK]);

impl Chunk {
    /// A chunk with nothing written.
    #[inline(always)]
    pub(super) fn new() -> Self {
        Self([MaybeUninit::uninit(); CHUNK])
    }

    /// Up to `want` (at most [`CHUNK`]) completions of the CQ in slot
    /// `cq` ([`ops::poll_chunk`]), as the poll wrote them.
    #[inline(always)]
    pub(super) fn fill(&mut self, cq: &MadeSlot, want: usize) -> &[Wc] {
        let out = &mut self.0[..want.min(CHUNK)];
        let n = ops::poll_chunk(cq, out).min(out.len());
        let w = &out[..n];
        // SAFETY: the poll wrote the `n` elements it counted, from the
        // first (K1), and `n` written `MaybeUninit<Wc>` are a `[Wc]` at the
        // same address and length (K2), borrowed as `w` is.
        unsafe { core::slice::from_raw_parts(w.as_ptr().cast::<Wc>(), w.len()) }
    }
}
