//! # Safety
//!
//! The data path of `ibv_context_ops`: `post_send`, `post_recv`,
//! `post_srq_recv` (behind the `static inline` verbs of verbs.h).
//!
//! A list of one request (the common case) of a straight shape (SEND,
//! SEND with immediate or invalidate, RDMA WRITE with or without
//! immediate, RDMA READ with one SGE, inline data or none; a receive of
//! at most one SGE) goes to the core's straight path with no `verbs` work
//! request built: the core reads the C request's fields where it writes
//! the WQE ([`CStraight`]) and takes it only if it would post it (on
//! mlx5 through the provider's own handle on the QP's queues, under its
//! lock alone: `qp::CQp::direct`). What it
//! leaves (another shape or state, a full queue, a bad request, a QP
//! another thread holds) is converted into one `verbs` work request on
//! the stack and posted, which judges it; longer lists become
//! `verbs` work requests in batches of [`BATCH`] on the stack (no heap
//! allocation per call). Their scatter/gather lists
//! are the caller's `struct ibv_sge` arrays themselves (same layout as
//! `verbs::Sge`, checked below), borrowed for the call; inline payloads
//! are the caller's bytes, borrowed for the call (one SGE) or copied into
//! a stack buffer (several). The C contract of the post verbs makes those
//! pointers valid and unchanged for the duration of the call.
//!
//! # `bad_wr` semantics
//!
//! rdma-core posts the requests before the first bad one, sets `*bad_wr`
//! to that one and returns its error (the man page: "`bad_wr` is set to
//! the first WR that failed"). The `verbs` core posts a list
//! all-or-nothing and names the refused request; this layer then posts
//! the requests before it (which passed every check, room included) so
//! that C callers get rdma-core's behaviour. Errors are returned as the
//! errno value (also stored in `errno`), as rdma-core's providers do.
//!
//! # States and operations
//!
//! A QP in ERR takes send requests and window binds, each completing with
//! `IBV_WC_WR_FLUSH_ERR`, as rdma-core + rxe (issue 29,
//! `tests/device/c/capi_err.c`). On siw this library refuses them
//! (`EINVAL`): libsiw accepts them into a ring the kernel never flushes
//! again, so they would never complete. RDMA READ/WRITE and atomics on a
//! UD QP are refused with `EOPNOTSUPP` before the kernel sees them (the
//! IB spec's local QP operation error, given at post time); librxe hands
//! them to the kernel, which fails the QP and flushes them: a deliberate
//! difference that keeps a programming error from taking the QP down.
#![allow(unsafe_code)]

use core::ffi::c_int;
use core::mem::MaybeUninit;

use verbs::cmd::channel::RingFailed;
use verbs::qp::{Plain, StraightWr};
use verbs::wr::{Payload, PostError, RecvWr, SendFlags, SendOp, SendWr, Sge, UdDest};

use crate::abi::objects::{IbvQp, IbvSrq};
use crate::abi::wr::{IbvRecvWr, IbvSendWr, IbvSge};
use crate::errno::{errno_of, fail_errno};
use crate::qp::{self, each, Any};

/// Work requests converted and posted at a time.
const BATCH: usize = 16;
/// Bytes of the stack buffer for inline payloads gathered from several SGEs.
const INLINE_BUF: usize = 1024;

const _: () = assert!(core::mem::size_of::<IbvSge>() == core::mem::size_of::<Sge>());
const _: () = assert!(core::mem::offset_of!(IbvSge, length) == core::mem::offset_of!(Sge, length));
const _: () = assert!(core::mem::offset_of!(IbvSge, lkey) == core::mem::offset_of!(Sge, lkey));

/// `IBV_SEND_INLINE`.
const SEND_INLINE: u32 = 1 << 3;

/// `enum ibv_wr_opcode`.
mod op {
    pub(super) const RDMA_WRITE: i32 = 0;
    pub(super) const RDMA_WRITE_WITH_IMM: i32 = 1;
    pub(super) const SEND: i32 = 2;
    pub(super) const SEND_WITH_IMM: i32 = 3;
    pub(super) const RDMA_READ: i32 = 4;
    pub(super) const ATOMIC_CMP_AND_SWP: i32 = 5;
    pub(super) const ATOMIC_FETCH_AND_ADD: i32 = 6;
    pub(super) const LOCAL_INV: i32 = 7;
    pub(super) const BIND_MW: i32 = 8;
    pub(super) const SEND_WITH_INV: i32 = 9;
    pub(super) const ATOMIC_WRITE: i32 = 15;
}

/// `IBV_WR_BIND_MW`, for `mw.rs`.
pub(crate) const WR_BIND_MW: c_int = op::BIND_MW;

/// An all-zero `struct ibv_send_wr` (NULL pointers, zero fields).
pub(crate) fn zeroed_send_wr() -> IbvSendWr {
    // SAFETY: every field of ibv_send_wr is an integer, a raw pointer or a
    // union of those: all-zero is a valid value (NULL, 0).
    unsafe { core::mem::zeroed() }
}

/// The caller's SGE array as `verbs` SGEs.
///
/// # Safety
///
/// `sg` points to `n` readable SGEs (or `n` is 0), unchanged for `'a`.
#[inline(always)]
unsafe fn sges<'a>(sg: *mut IbvSge, n: c_int) -> Option<&'a [Sge]> {
    match n {
        0 => Some(&[]),
        n if n < 0 || sg.is_null() => None,
        // SAFETY: the caller's promise; same layout (asserted above).
        n => Some(unsafe { core::slice::from_raw_parts(sg.cast::<Sge>(), n as usize) }),
    }
}

/// One C send request as a `verbs` one; `None` if it cannot be expressed
/// (`EINVAL` for it). `inline` is the rest of the stack buffer for
/// gathered inline data (advanced past what this request used).
///
/// # Safety
///
/// `w` and everything it points to is valid and unchanged for `'a`.
#[inline(always)]
unsafe fn send_wr<'a>(w: &'a IbvSendWr, qp_type: c_int, inline: &mut (*mut u8, usize)) -> Option<SendWr<'a>> {
    // SAFETY: forwarded contract.
    let sg = unsafe { sges(w.sg_list, w.num_sge) }?;
    if w.opcode == op::ATOMIC_WRITE {
        // SAFETY: forwarded contract.
        return unsafe { atomic_write_wr(w, sg, qp_type) };
    }
    let payload = if w.send_flags & SEND_INLINE != 0 {
        match sg {
            [] => Payload::Inline(&[]),
            [one] if one.length == 0 => Payload::Inline(&[]),
            // SAFETY: the C contract: the bytes of an inline SGE are
            // readable and unchanged during the call (non-empty here, so
            // the address is a real one).
            [one] => Payload::Inline(unsafe { core::slice::from_raw_parts(one.addr as usize as *const u8, one.length as usize) }),
            many => {
                let total: usize = many.iter().map(|s| s.length as usize).sum();
                if total > inline.1 {
                    return None;
                }
                let start = inline.0;
                for s in many.iter().filter(|s| s.length != 0) {
                    // SAFETY: source: the caller's readable bytes; the
                    // destination is inside the stack buffer (total fits).
                    unsafe { core::ptr::copy_nonoverlapping(s.addr as usize as *const u8, inline.0, s.length as usize) };
                    inline.0 = inline.0.wrapping_add(s.length as usize);
                }
                inline.1 -= total;
                // SAFETY: `total` bytes just written, not written again
                // while the batch lives (later requests use what follows).
                Payload::Inline(unsafe { core::slice::from_raw_parts(start, total) })
            }
        }
    } else {
        Payload::Sges(sg)
    };
    // SAFETY: the union's members are plain data (integers, a pointer);
    // which one is meaningful the opcode says below.
    let rdma = unsafe { w.wr.rdma };
    // SAFETY: as above.
    let atomic = unsafe { w.wr.atomic };
    let op = match w.opcode {
        op::RDMA_WRITE => SendOp::RdmaWrite { remote_addr: rdma.remote_addr, rkey: rdma.rkey },
        op::RDMA_WRITE_WITH_IMM => {
            SendOp::RdmaWriteWithImm { remote_addr: rdma.remote_addr, rkey: rdma.rkey, imm: u32::from_be(w.imm_data) }
        }
        op::SEND => SendOp::Send,
        op::SEND_WITH_IMM => SendOp::SendWithImm { imm: u32::from_be(w.imm_data) },
        op::SEND_WITH_INV => SendOp::SendWithInv { invalidate_rkey: w.imm_data },
        op::RDMA_READ => SendOp::RdmaRead { remote_addr: rdma.remote_addr, rkey: rdma.rkey },
        op::ATOMIC_CMP_AND_SWP => SendOp::AtomicCmpSwp {
            remote_addr: atomic.remote_addr,
            rkey: atomic.rkey,
            compare: atomic.compare_add,
            swap: atomic.swap,
        },
        op::ATOMIC_FETCH_AND_ADD => {
            SendOp::AtomicFetchAdd { remote_addr: atomic.remote_addr, rkey: atomic.rkey, add: atomic.compare_add }
        }
        op::LOCAL_INV => SendOp::LocalInv { rkey: w.imm_data },
        op::BIND_MW => {
            // SAFETY: plain data, as above; the opcode selects this member.
            let b = unsafe { w.bind_mw.bind_mw };
            let mw = crate::mw::from_c(b.mw)?.mw.as_ref()?;
            SendOp::BindMw(crate::mw::bind(mw, &b.bind_info, b.rkey)?)
        }
        _ => return None,
    };
    let ud = if qp_type == qp::QPT_UD {
        // SAFETY: the UD member, for a UD QP.
        let u = unsafe { w.wr.ud };
        let ah = crate::ah::from_c(u.ah)?.ah.as_ref()?;
        Some(UdDest { ah, remote_qpn: u.remote_qpn, remote_qkey: u.remote_qkey })
    } else {
        None
    };
    let flags = SendFlags::from_bits_retain(w.send_flags & !SEND_INLINE);
    Some(SendWr { wr_id: w.wr_id, payload, op, flags, ud })
}

/// `IBV_WR_ATOMIC_WRITE` through `ibv_post_send`: the 8 bytes written are
/// those of the request's one 8-byte SGE, read at post time (what
/// `ibv_wr_atomic_write` gathers into; librxe's own `ibv_post_send` has no
/// defined form for it). Anything else is refused (`EINVAL`).
///
/// # Safety
///
/// The SGE's 8 bytes are readable during the call (the post verbs' C
/// contract for the memory an SGE names).
#[cold]
unsafe fn atomic_write_wr<'a>(w: &'a IbvSendWr, sg: &'a [Sge], qp_type: c_int) -> Option<SendWr<'a>> {
    let [one] = sg else { return None };
    if one.length != 8 || w.send_flags & SEND_INLINE != 0 || qp_type != qp::QPT_RC || one.addr == 0 {
        return None;
    }
    // SAFETY: the caller's 8 readable bytes (non-NULL), read unaligned.
    let value = unsafe { (one.addr as usize as *const [u8; 8]).read_unaligned() };
    // SAFETY: the union's members are plain data; the opcode selects `rdma`.
    let rdma = unsafe { w.wr.rdma };
    let op = SendOp::AtomicWrite { remote_addr: rdma.remote_addr, rkey: rdma.rkey, value };
    let flags = SendFlags::from_bits_retain(w.send_flags);
    Some(SendWr { wr_id: w.wr_id, payload: Payload::Sges(&[]), op, flags, ud: None })
}

/// Posts `wrs` with C's semantics: on a refusal of request `i`, requests
/// before it are posted and `Err((i, errno))` returned.
#[inline(always)]
fn post_prefix<W>(wrs: &[W], mut post: impl FnMut(&[W]) -> Result<(), PostError>) -> Result<(), (usize, c_int)> {
    match post(wrs) {
        Ok(()) => Ok(()),
        Err(e) => {
            let i = e.index.min(wrs.len().saturating_sub(1));
            if e.index > 0 && e.index < wrs.len() {
                // The prefix passed every check (room included).
                if let Err(e2) = post(&wrs[..e.index]) {
                    return Err((e2.index.min(i), errno_of(&e2.error)));
                }
            }
            Err((i, errno_of(&e.error)))
        }
    }
}

/// A C send request as the core's straight path reads it: field by
/// field, where the WQE is written (no `SendWr` is built). The core
/// judges it (operation, transport, flags, capacities, room) and leaves
/// whatever is not straight to the general path.
///
/// Made only by [`post_send`] from a request the caller promises is
/// valid, with everything it points to, and unchanged during the call.
/// `INLINE`: whether it may carry inline data (`IBV_SEND_INLINE`); a
/// `CStraight<false>` is made only of a request without the flag (its
/// flag is not tested again), so the path of SGE requests has no copy of
/// inline bytes (a call to `memcpy`, which would give it a stack frame).
/// Were the flag set after all (a request changed during the call,
/// against the contract), its SGE would be sent as an SGE: no memory is
/// touched that the request does not name either way.
#[repr(transparent)]
struct CStraight<const INLINE: bool>(IbvSendWr);

impl<const INLINE: bool> StraightWr for CStraight<INLINE> {
    #[inline(always)]
    fn opcode(&self) -> u32 {
        self.0.opcode as u32
    }
    #[inline(always)]
    fn flags(&self) -> u32 {
        // Without `INLINE`, [`post_send`] found the flag clear.
        if INLINE {
            self.0.send_flags & !SEND_INLINE
        } else {
            self.0.send_flags
        }
    }
    #[inline(always)]
    fn data(&self) -> Option<Plain<'_>> {
        let w = &self.0;
        // [`post_send`] found the flag set (`INLINE`) or clear, and the
        // request is unchanged during the call: not tested again. (Were it
        // changed after all, against the contract, the SGE's bytes would
        // be sent as inline data or as an SGE: either way no memory is
        // touched that the request does not name.) One SGE, the common
        // case, is tested first.
        if w.num_sge == 1 && !w.sg_list.is_null() {
            // SAFETY: the request's promise (see the type): one readable
            // SGE (`ibv_sge` and `verbs::Sge` are one layout, asserted
            // above).
            let g = unsafe { &*w.sg_list.cast::<Sge>() };
            if !INLINE {
                return Some(Plain::Sge(g));
            }
            // With no branch on the length: a non-empty SGE's address is
            // a real one (non-NULL, left as it is by `max(1)`), an empty
            // one's may be anything, NULL made 1 (an empty slice needs a
            // non-NULL address, any for bytes).
            let addr = (g.addr as usize).max(1) as *const u8;
            // SAFETY: the C contract: the bytes of an inline SGE are
            // readable and unchanged during the call (see above for the
            // address); `length` < 2^32 < isize::MAX.
            return Some(Plain::Inline(unsafe { core::slice::from_raw_parts(addr, g.length as usize) }));
        }
        match w.num_sge {
            0 if INLINE => Some(Plain::Inline(&[])),
            0 => Some(Plain::Empty),
            _ => None,
        }
    }
    #[inline(always)]
    fn wr_id(&self) -> u64 {
        self.0.wr_id
    }
    #[inline(always)]
    fn ex(&self) -> u32 {
        // Big-endian as the WQE holds it; for SEND_WITH_INV the same union
        // is `invalidate_rkey`. rdma-core's librxe copies it for every
        // operation too.
        self.0.imm_data
    }
    #[inline(always)]
    fn remote(&self) -> (u64, u32) {
        if RDMA_OPS & (1u32 << (self.0.opcode & 31)) != 0 {
            self.rdma()
        } else {
            (0, 0)
        }
    }
    /// The provider matched the operation (an RDMA one): `wr.rdma` read
    /// with no second test (the default calls [`remote`](Self::remote),
    /// which tests the opcode again).
    #[inline(always)]
    fn rdma_fields(&self) -> (u64, u32) {
        self.rdma()
    }
}

/// The opcodes whose request carries `wr.rdma`, a bit each.
const RDMA_OPS: u32 = 1 << op::RDMA_WRITE | 1 << op::RDMA_WRITE_WITH_IMM | 1 << op::RDMA_READ;

impl<const INLINE: bool> CStraight<INLINE> {
    /// `wr.rdma`'s fields, whatever the opcode.
    #[inline(always)]
    fn rdma(&self) -> (u64, u32) {
        // SAFETY: the union's members are plain data (integers, a
        // pointer): any of them may be read; for an RDMA opcode `rdma` is
        // the meaningful one.
        let rdma = unsafe { self.0.wr.rdma };
        (rdma.remote_addr, rdma.rkey)
    }
}

/// `ibv_context_ops.post_send`: 0, or the errno value with `*bad_wr` set
/// to the first request not posted (those before it are posted).
///
/// A list of one plain request (the common case) takes the straight
/// path: its fields go to the core's straight path as they are (no
/// `SendWr` is built), under the QP's lock (on mlx5, under the provider's
/// lock of the QP's queues alone: `qp::CQp::direct`). Whatever that path does not
/// take (another operation or state, several SGEs, a full queue, a bad
/// request) goes to [`post_send_one`], which judges it; longer lists go
/// through [`post_send_list`].
///
/// # Safety
///
/// `wr` is NULL or a valid list of valid requests (SGEs, inline bytes, AHs
/// for UD); `bad_wr` is NULL or writable.
pub(crate) unsafe extern "C" fn post_send(qp: *mut IbvQp, wr: *mut IbvSendWr, bad_wr: *mut *mut IbvSendWr) -> c_int {
    // A QP with the provider's own handle on its queues (mlx5), told
    // apart by the handle's one check (`qp::from_c_direct`).
    #[cfg(feature = "mlx5")]
    if let Some(c) = qp::from_c_direct(qp) {
        // SAFETY: the caller promises NULL or a valid list.
        if wr.is_null() || !unsafe { (*wr).next }.is_null() {
            // SAFETY: forwarded caller contract.
            return unsafe { post_send_list(c, wr, bad_wr) };
        }
        // SAFETY: non-NULL: the caller promises a valid request.
        if unsafe { (*wr).send_flags } & SEND_INLINE != 0 {
            // SAFETY: forwarded caller contract; `wr` is not NULL, `c`
            // from `from_c_direct`.
            return unsafe { post_send_direct_inline(c, wr, bad_wr) };
        }
        // SAFETY: as above.
        return unsafe { post_send_direct_sges(c, wr, bad_wr) };
    }
    let Some(c) = qp::from_c(qp) else {
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, libc::EINVAL) };
    };
    // SAFETY: the caller promises NULL or a valid list.
    if wr.is_null() || !unsafe { (*wr).next }.is_null() {
        // SAFETY: forwarded caller contract.
        return unsafe { post_send_list(c, wr, bad_wr) };
    }
    // SAFETY: non-NULL: the caller promises a valid request.
    if unsafe { (*wr).send_flags } & SEND_INLINE != 0 {
        // SAFETY: forwarded caller contract; `wr` is not NULL.
        return unsafe { post_send_inline(c, wr, bad_wr) };
    }
    // SAFETY: forwarded caller contract; `wr` is not NULL.
    unsafe { post_send_sges(c, wr, bad_wr) }
}

/// [`post_send`] of one request without inline data, out of line (a tail
/// call: [`post_send`] itself keeps no stack frame, so the inline path it
/// jumps to does not pay for this one's saved registers).
///
/// # Safety
///
/// As [`post_send`]; `wr` is not NULL.
#[inline(never)]
unsafe extern "C" fn post_send_sges(c: &qp::CQp, wr: *mut IbvSendWr, bad_wr: *mut *mut IbvSendWr) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { post_send_straight::<false>(c, wr, bad_wr) }
}

/// [`post_send`] of one request with inline data: the same straight path
/// with the copy of its bytes, out of line (a tail call, as
/// [`post_send_sges`]).
///
/// # Safety
///
/// As [`post_send`]; `wr` is not NULL.
#[inline(never)]
unsafe extern "C" fn post_send_inline(c: &qp::CQp, wr: *mut IbvSendWr, bad_wr: *mut *mut IbvSendWr) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { post_send_straight::<true>(c, wr, bad_wr) }
}

/// [`post_send`] of one request without inline data on a QP with the
/// provider's own handle on its queues, out of line (a tail call, as
/// [`post_send_sges`]).
///
/// # Safety
///
/// As [`post_send`]; `wr` is not NULL; `qp::from_c_direct` returned `c`.
#[cfg(feature = "mlx5")]
#[inline(never)]
unsafe extern "C" fn post_send_direct_sges(c: &qp::CQp, wr: *mut IbvSendWr, bad_wr: *mut *mut IbvSendWr) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { post_send_direct::<false>(c, wr, bad_wr) }
}

/// As [`post_send_direct_sges`], for one request with inline data.
///
/// # Safety
///
/// As [`post_send_direct_sges`].
#[cfg(feature = "mlx5")]
#[inline(never)]
unsafe extern "C" fn post_send_direct_inline(c: &qp::CQp, wr: *mut IbvSendWr, bad_wr: *mut *mut IbvSendWr) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { post_send_direct::<true>(c, wr, bad_wr) }
}

/// [`post_send`] of one request through the provider's own handle on the
/// queues (mlx5): under its lock alone, the state asked there
/// (`qp::CQp::direct`); else [`post_send_one`].
///
/// # Safety
///
/// As [`post_send_direct_sges`].
#[cfg(feature = "mlx5")]
#[inline(always)]
unsafe fn post_send_direct<const INLINE: bool>(c: &qp::CQp, wr: *mut IbvSendWr, bad_wr: *mut *mut IbvSendWr) -> c_int {
    // SAFETY: as in `post_send_straight`.
    let s = unsafe { &*wr.cast::<CStraight<INLINE>>() };
    // SAFETY: the caller's promise: `from_c_direct` returned `c`.
    let d = unsafe { c.direct_unchecked() };
    // SAFETY: D1: `may_send_direct` is set only for a QP whose handle
    // `has_send`, and (F2, asked under the slot's lock) only while the
    // slot holds this QP's entry, which nothing here replaces.
    if unsafe { d.post_send_fitted(|| c.may_send_direct(), s) } {
        return 0;
    }
    // SAFETY: forwarded caller contract.
    unsafe { post_send_one(c, wr, bad_wr) }
}

/// [`post_send`] of one request through the core's straight path (with
/// inline data only if `INLINE`), else [`post_send_one`].
///
/// # Safety
///
/// As [`post_send`]; `wr` is not NULL.
#[inline(always)]
unsafe fn post_send_straight<const INLINE: bool>(c: &qp::CQp, wr: *mut IbvSendWr, bad_wr: *mut *mut IbvSendWr) -> c_int {
    // SAFETY: non-NULL: the caller promises a valid request, and valid
    // memory behind it, unchanged during the call (`CStraight` is
    // `repr(transparent)`).
    let s = unsafe { &*wr.cast::<CStraight<INLINE>>() };
    // (A QP with the provider's own handle went to `post_send_direct`.)
    // A QP another thread holds goes the general way, which waits.
    if let Some(mut g) = c.try_lock() {
        // The names test of `names_refused` first, with the provider's
        // answer kept in the lock (one load instead of a call): librxe's
        // doorbell names the QP. Then the common case, RC in RTS or SQD,
        // whatever the provider (one test of the lock's bits); else any
        // transport. (`plain_rc` first sent every rxe post to the general
        // `send_straight`: rxe's ibv_post_send 149 instructions, 137 so.)
        if g.doorbell_names_qp() && !c.named() {
            drop(g);
            // SAFETY: forwarded caller contract.
            return unsafe { refuse(bad_wr, wr, crate::names::UNKNOWN) };
        }
        let rc = g.send_straight_rc();
        let straight = if rc.is_some() { rc } else { g.send_straight() };
        match straight.and_then(|r| r.post(s)) {
            Some(Ok(())) => return 0,
            Some(Err(failed)) => {
                drop(g);
                // SAFETY: forwarded caller contract.
                return unsafe { refuse_rung(bad_wr, wr, failed) };
            }
            None => {}
        }
    }
    // SAFETY: forwarded caller contract.
    unsafe { post_send_one(c, wr, bad_wr) }
}

/// [`refuse`] of a request queued whose doorbell failed (`failed`), out
/// of line: the error is built here, not in [`post_send`]'s frame.
///
/// # Safety
///
/// As [`refuse`].
#[cold]
#[inline(never)]
unsafe extern "C" fn refuse_rung(bad_wr: *mut *mut IbvSendWr, wr: *mut IbvSendWr, failed: RingFailed) -> c_int {
    // SAFETY: forwarded caller contract.
    unsafe { refuse(bad_wr, wr, errno_of(&failed.error("ibv_post_send"))) }
}

/// Whether a post on `c` is refused because its C fields no longer name
/// it and rdma-core's provider of its device names the QP by them when it
/// posts: librxe's doorbell is a `POST_SEND` command with
/// `qp->handle` on `qp->context`'s device file, which the kernel answers
/// `ENOENT` for a handle it does not know (libsiw's doorbell was made
/// when the QP was). librxe has then already written the requests into
/// the ring, where the next doorbell finds them; this library posts
/// nothing and points `*bad_wr` at the first request (`names.rs`).
#[inline(always)]
fn names_refused(c: &qp::CQp) -> bool {
    !c.named() && doorbell_names_qp(c)
}

/// See [`names_refused`].
#[cold]
#[inline(never)]
fn doorbell_names_qp(c: &qp::CQp) -> bool {
    c.provider().caps().doorbell_names_qp
}

/// [`post_send`] of one request the straight path did not take: converted
/// into a `SendWr` and posted (the core judges it).
///
/// # Safety
///
/// As [`post_send`]; `wr` is not NULL.
#[inline(never)]
unsafe extern "C" fn post_send_one(c: &qp::CQp, wr: *mut IbvSendWr, bad_wr: *mut *mut IbvSendWr) -> c_int {
    if names_refused(c) {
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, crate::names::UNKNOWN) };
    }
    // SAFETY: non-NULL: the caller promises a valid request.
    let w = unsafe { &*wr };
    let qp_type = c.qp_type();
    let mut scratch = MaybeUninit::<[u8; INLINE_BUF]>::uninit();
    let mut inline = (scratch.as_mut_ptr().cast::<u8>(), INLINE_BUF);
    // SAFETY: the caller promises everything the request points to is valid.
    let Some(s) = (unsafe { send_wr(w, qp_type, &mut inline) }) else {
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, libc::EINVAL) };
    };
    let mut g = c.lock();
    let Some(any) = g.as_mut() else {
        drop(g);
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, libc::EINVAL) };
    };
    match each!(any, q => q.post_send(core::slice::from_ref(&s))) {
        Ok(()) => 0,
        // SAFETY: forwarded caller contract.
        Err(e) => unsafe { post_send_again(c, g, &s, e, wr, bad_wr) },
    }
}

/// The straight path of [`post_send`] after a refusal: if this library
/// still has the QP in INIT or RTR, the kernel may have moved it to RTS on
/// its own (iWARP's connection manager does, after librdmacm's RTR and RTS
/// requests, which the kernel answers without a state change): the QP is
/// retyped and the request posted again (a refused request wrote nothing).
/// Else, or if it is refused again, `*bad_wr` is set and the errno
/// returned. Out of line: the common path keeps its registers.
///
/// # Safety
///
/// As [`post_send`]; `g` is `c`'s lock.
#[cold]
#[inline(never)]
unsafe fn post_send_again(
    c: &qp::CQp,
    mut g: qp::QpGuard<'_>,
    s: &SendWr<'_>,
    mut e: PostError,
    wr: *mut IbvSendWr,
    bad_wr: *mut *mut IbvSendWr,
) -> c_int {
    if c.refresh_if_not_ready(&mut g) {
        if let Some(any) = g.as_mut() {
            match each!(any, q => q.post_send(core::slice::from_ref(s))) {
                Ok(()) => return 0,
                Err(again) => e = again,
            }
        }
    }
    drop(g);
    // SAFETY: forwarded caller contract.
    unsafe { refuse(bad_wr, wr, errno_of(&e.error)) }
}

/// Sets `*bad_wr` (when not NULL) to `wr` and returns `errno` (also
/// stored in `errno`). Out of line: the error paths of the posts.
///
/// # Safety
///
/// `bad_wr` is NULL or writable.
#[cold]
#[inline(never)]
unsafe extern "C" fn refuse<W>(bad_wr: *mut *mut W, wr: *mut W, errno: c_int) -> c_int {
    if !bad_wr.is_null() {
        // SAFETY: the caller passes NULL or a writable slot.
        unsafe { *bad_wr = wr };
    }
    // Opaque: were the result known to be `errno`, a caller would keep
    // `errno` across the call and return it itself (no tail call, and a
    // register saved for it in the caller's frame).
    core::hint::black_box(fail_errno(errno))
}

/// [`post_send`] of a list of several requests (or none): converted and
/// posted in batches of [`BATCH`] on the stack.
///
/// # Safety
///
/// As [`post_send`].
#[inline(never)]
unsafe extern "C" fn post_send_list(c: &qp::CQp, wr: *mut IbvSendWr, bad_wr: *mut *mut IbvSendWr) -> c_int {
    if names_refused(c) {
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, crate::names::UNKNOWN) };
    }
    let qp_type = c.qp_type();
    let mut g = c.lock();
    // Not ready to send as far as this library knows: the kernel may have
    // moved it on its own.
    c.refresh_if_not_ready(&mut g);
    let Some(any) = g.as_mut() else {
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, libc::EINVAL) };
    };
    let mut cur = wr;
    while !cur.is_null() {
        // Uninitialised stack space (no per-call zeroing): only the
        // entries and bytes written are read.
        let mut buf = [const { MaybeUninit::<SendWr<'_>>::uninit() }; BATCH];
        let mut ptrs = [core::ptr::null_mut::<IbvSendWr>(); BATCH];
        let mut scratch = MaybeUninit::<[u8; INLINE_BUF]>::uninit();
        let mut inline = (scratch.as_mut_ptr().cast::<u8>(), INLINE_BUF);
        let mut n = 0;
        let mut refused = false;
        while n < BATCH && !cur.is_null() {
            // SAFETY: the caller promises a valid list.
            let w = unsafe { &*cur };
            // SAFETY: as above, for everything the request points to.
            match unsafe { send_wr(w, qp_type, &mut inline) } {
                Some(s) => {
                    buf[n].write(s);
                    ptrs[n] = cur;
                    n += 1;
                    cur = w.next;
                }
                None => {
                    refused = true;
                    break;
                }
            }
        }
        // SAFETY: the first `n` entries were written above (MaybeUninit<T>
        // has T's layout).
        let wrs = unsafe { core::slice::from_raw_parts(buf.as_ptr().cast::<SendWr<'_>>(), n) };
        if n > 0 {
            if let Err((i, e)) = each!(&mut *any, q => post_prefix(wrs, |l| q.post_send(l))) {
                // SAFETY: forwarded caller contract.
                return unsafe { refuse(bad_wr, ptrs[i], e) };
            }
        }
        if refused {
            // SAFETY: forwarded caller contract.
            return unsafe { refuse(bad_wr, cur, libc::EINVAL) };
        }
    }
    0
}

/// Posts a C receive list through `post` in batches (C's semantics).
///
/// # Safety
///
/// `wr` is NULL or a valid list of valid requests; `bad_wr` NULL or writable.
#[inline(always)]
unsafe fn post_recv_list(
    wr: *mut IbvRecvWr,
    bad_wr: *mut *mut IbvRecvWr,
    mut post: impl FnMut(&[RecvWr<'_>]) -> Result<(), PostError>,
) -> c_int {
    let mut cur = wr;
    while !cur.is_null() {
        let mut buf = [const { MaybeUninit::<RecvWr<'_>>::uninit() }; BATCH];
        let mut ptrs = [core::ptr::null_mut::<IbvRecvWr>(); BATCH];
        let mut n = 0;
        let mut refused = false;
        while n < BATCH && !cur.is_null() {
            // SAFETY: the caller promises a valid list.
            let w = unsafe { &*cur };
            // SAFETY: and valid SGE arrays.
            match unsafe { sges(w.sg_list, w.num_sge) } {
                Some(sg) => {
                    buf[n].write(RecvWr::new(w.wr_id, sg));
                    ptrs[n] = cur;
                    n += 1;
                    cur = w.next;
                }
                None => {
                    refused = true;
                    break;
                }
            }
        }
        // SAFETY: the first `n` entries were written above.
        let wrs = unsafe { core::slice::from_raw_parts(buf.as_ptr().cast::<RecvWr<'_>>(), n) };
        if n > 0 {
            if let Err((i, e)) = post_prefix(wrs, &mut post) {
                // SAFETY: forwarded caller contract.
                return unsafe { refuse(bad_wr, ptrs[i], e) };
            }
        }
        if refused {
            // SAFETY: forwarded caller contract.
            return unsafe { refuse(bad_wr, cur, libc::EINVAL) };
        }
    }
    0
}

/// `ibv_context_ops.post_recv`: as [`post_send`], for receives (with
/// the same straight path for a list of one request of at most one SGE).
///
/// # Safety
///
/// As [`post_recv_list`].
pub(crate) unsafe extern "C" fn post_recv(qp: *mut IbvQp, wr: *mut IbvRecvWr, bad_wr: *mut *mut IbvRecvWr) -> c_int {
    // As in `post_send`: a QP with the provider's own handle (mlx5).
    #[cfg(feature = "mlx5")]
    if let Some(c) = qp::from_c_direct(qp) {
        // SAFETY: the caller promises NULL or a valid list.
        if wr.is_null() || !unsafe { (*wr).next }.is_null() {
            // SAFETY: forwarded caller contract.
            return unsafe { post_recv_several(c, wr, bad_wr) };
        }
        // SAFETY: non-NULL: the caller promises a valid request.
        let w = unsafe { &*wr };
        if w.num_sge != 1 || w.sg_list.is_null() {
            // SAFETY: forwarded caller contract.
            return unsafe { post_recv_no_sge(c, wr, bad_wr) };
        }
        // SAFETY: as below.
        let sge = unsafe { &*w.sg_list.cast::<Sge>() };
        // SAFETY: `from_c_direct` returned `c`.
        let d = unsafe { c.direct_unchecked() };
        // SAFETY: D1: `may_recv_direct` is set only for a QP whose handle
        // `has_recv`, and (F2, asked under the slot's lock) only while the
        // slot holds this QP's entry, which nothing here replaces.
        if unsafe { d.post_recv_fitted(|| c.may_recv_direct(), &w.wr_id, Some(sge)) } {
            return 0;
        }
        // SAFETY: forwarded caller contract.
        return unsafe { post_recv_one(c, wr, bad_wr) };
    }
    // SAFETY: forwarded caller contract.
    unsafe { post_recv_locked(qp, wr, bad_wr) }
}

/// [`post_recv`] on a QP without the provider's own handle (or not a QP
/// of ours): under the QP's lock. Inlined where it is the whole of
/// [`post_recv`] (no provider has the handle); out of line with mlx5 (a
/// tail call), so that the handle's path keeps no register of this one
/// (`push %rbx`).
///
/// # Safety
///
/// As [`post_recv`].
#[cfg_attr(feature = "mlx5", inline(never))]
#[cfg_attr(not(feature = "mlx5"), inline(always))]
unsafe extern "C" fn post_recv_locked(qp: *mut IbvQp, wr: *mut IbvRecvWr, bad_wr: *mut *mut IbvRecvWr) -> c_int {
    let Some(c) = qp::from_c(qp) else {
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, libc::EINVAL) };
    };
    // SAFETY: the caller promises NULL or a valid list.
    if wr.is_null() || !unsafe { (*wr).next }.is_null() {
        // SAFETY: forwarded caller contract.
        return unsafe { post_recv_several(c, wr, bad_wr) };
    }
    // SAFETY: non-NULL: the caller promises a valid request.
    let w = unsafe { &*wr };
    // One SGE (the common case) here, with the SGE known to be there: the
    // straight path is inlined with no test of it. No SGE: out of line.
    if w.num_sge != 1 || w.sg_list.is_null() {
        // SAFETY: forwarded caller contract.
        return unsafe { post_recv_no_sge(c, wr, bad_wr) };
    }
    // SAFETY: the caller's promise: one readable SGE, unchanged during the
    // call (same layout as `verbs::Sge`, asserted above).
    let sge = unsafe { &*w.sg_list.cast::<Sge>() };
    // (A QP with the provider's own handle went the way above.)
    // A QP another thread holds goes the general way, which waits.
    if let Some(mut g) = c.try_lock() {
        // No closure here: the straight path is inlined whole.
        if let Some(r) = g.recv_straight() {
            if r.post(w.wr_id, Some(sge)) {
                return 0;
            }
        }
    }
    // SAFETY: forwarded caller contract.
    unsafe { post_recv_one(c, wr, bad_wr) }
}

/// [`post_recv`] of one request that is not of one SGE: none (the
/// straight path, as for one SGE) or anything else ([`post_recv_one`],
/// which judges it).
///
/// # Safety
///
/// As [`post_recv_list`]; `wr` is not NULL.
#[inline(never)]
unsafe extern "C" fn post_recv_no_sge(c: &qp::CQp, wr: *mut IbvRecvWr, bad_wr: *mut *mut IbvRecvWr) -> c_int {
    // SAFETY: non-NULL: the caller promises a valid request.
    let w = unsafe { &*wr };
    #[cfg(feature = "mlx5")]
    if let (0, Some(d)) = (w.num_sge, c.direct()) {
        if d.post_recv(|| c.may_recv_direct(), &w.wr_id, None) {
            return 0;
        }
        // SAFETY: forwarded caller contract.
        return unsafe { post_recv_one(c, wr, bad_wr) };
    }
    if w.num_sge == 0 {
        // A QP another thread holds goes the general way, which waits.
        if let Some(mut g) = c.try_lock() {
            if let Some(r) = g.recv_straight() {
                if r.post(w.wr_id, None) {
                    return 0;
                }
            }
        }
    }
    // SAFETY: forwarded caller contract.
    unsafe { post_recv_one(c, wr, bad_wr) }
}

/// [`post_recv`] of one request the straight path did not take (the core
/// judges it).
///
/// # Safety
///
/// As [`post_recv_list`]; `wr` is not NULL.
#[inline(never)]
unsafe extern "C" fn post_recv_one(c: &qp::CQp, wr: *mut IbvRecvWr, bad_wr: *mut *mut IbvRecvWr) -> c_int {
    // SAFETY: non-NULL: the caller promises a valid request.
    let w = unsafe { &*wr };
    // SAFETY: and a valid SGE array, unchanged during the call.
    let Some(sg) = (unsafe { sges(w.sg_list, w.num_sge) }) else {
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, libc::EINVAL) };
    };
    let one = [RecvWr::new(w.wr_id, sg)];
    let mut g = c.lock();
    let Some(any) = g.as_mut() else {
        drop(g);
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, libc::EINVAL) };
    };
    match each!(any, q => q.post_recv(&one)) {
        Ok(()) => 0,
        Err(e) => {
            drop(g);
            // SAFETY: forwarded caller contract.
            unsafe { refuse(bad_wr, wr, errno_of(&e.error)) }
        }
    }
}

/// [`post_recv`] of a list of several requests (or none).
///
/// # Safety
///
/// As [`post_recv_list`].
#[inline(never)]
unsafe extern "C" fn post_recv_several(c: &qp::CQp, wr: *mut IbvRecvWr, bad_wr: *mut *mut IbvRecvWr) -> c_int {
    let mut g = c.lock();
    let Some(any) = g.as_mut() else {
        drop(g);
        // SAFETY: forwarded caller contract.
        return unsafe { refuse(bad_wr, wr, libc::EINVAL) };
    };
    let any: &mut Any = any;
    // SAFETY: forwarded caller contract.
    unsafe { post_recv_list(wr, bad_wr, |l| each!(&mut *any, q => q.post_recv(l))) }
}

/// `ibv_context_ops.post_srq_recv`: as [`post_recv`], on an SRQ.
///
/// # Safety
///
/// As [`post_recv_list`].
pub(crate) unsafe extern "C" fn post_srq_recv(srq: *mut IbvSrq, wr: *mut IbvRecvWr, bad_wr: *mut *mut IbvRecvWr) -> c_int {
    let Some(c) = crate::srq::from_c(srq) else {
        if !bad_wr.is_null() {
            // SAFETY: the caller passes NULL or a writable slot.
            unsafe { *bad_wr = wr };
        }
        return fail_errno(libc::EINVAL);
    };
    let g = c.srq.read().unwrap_or_else(|p| p.into_inner());
    let Some(s) = g.as_ref() else { return fail_errno(libc::EINVAL) };
    // SAFETY: forwarded caller contract.
    unsafe { post_recv_list(wr, bad_wr, |l| s.post_recv(l)) }
}
