//! # Safety
//!
//! The `ibv_wr_*` send API of `struct ibv_qp_ex` (a QP made by
//! `ibv_create_qp_ex` with `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`):
//! `ibv_wr_start`, an opcode call per request (`ibv_wr_send`,
//! `ibv_wr_rdma_write`, …) followed by its data (`ibv_wr_set_sge`,
//! `ibv_wr_set_inline_data`, `ibv_wr_set_ud_addr`, …), then
//! `ibv_wr_complete` (posts them all) or `ibv_wr_abort`.
//!
//! The requests gather in the QP's [`Batch`] (allocated once, when the QP
//! is created: no allocation per call), as `struct ibv_send_wr` records
//! whose SGE arrays and inline bytes live in the batch too (inline data
//! is copied at `ibv_wr_set_inline_data*` time, as the API requires);
//! `ibv_wr_complete` links them and hands the list to the ops table's
//! `post_send`, so the checks and the all-or-nothing rules are the same.
//! Each function takes the batch's mutex; a C caller that uses the API
//! on one QP from several threads gets serialised calls, not a race.
//! A call out of order (data with no request started, more requests than
//! the send queue holds, more SGEs or inline bytes than a request may
//! carry) makes `ibv_wr_complete` fail with the errno and post nothing.
#![allow(unsafe_code)]

use core::ffi::{c_int, c_uint, c_void};
use std::sync::Mutex;

use crate::abi::objects::{IbvAh, IbvMw, IbvQp, IbvQpEx};
use crate::abi::wr::{IbvMwBindInfo, IbvSendWr, IbvSge};

/// SGEs one request may carry here.
const MAX_SGE: usize = 8;
/// Inline bytes one request may carry here.
const MAX_INLINE: usize = 256;
/// Requests one batch may gather (the send queue bounds it further).
const MAX_BATCH: usize = 1024;

/// `IBV_SEND_INLINE`.
const SEND_INLINE: c_uint = 8;

/// `IBV_QP_EX_WITH_*` this API supports: RDMA WRITE (with immediate),
/// SEND (with immediate, with invalidate), RDMA READ, both atomics,
/// LOCAL_INV, BIND_MW and ATOMIC_WRITE (1 << 12). TSO and FLUSH are
/// refused.
pub(crate) const SUPPORTED_SEND_OPS: u64 = 0x3ff | 1 << 12;

/// One gathered request.
struct Pending {
    wr: IbvSendWr,
    sges: [IbvSge; MAX_SGE],
    inline: [u8; MAX_INLINE],
    /// A raw WQE (`mlx5dv_wr_raw_wqe`): its bytes, in `inline`; 0 for a
    /// request of the `ibv_wr_*` API.
    raw_len: usize,
}

/// The requests between `ibv_wr_start` and `ibv_wr_complete`.
pub(crate) struct Batch {
    items: Box<[Pending]>,
    len: usize,
    /// A sticky error of this batch (errno), reported by `wr_complete`.
    err: c_int,
    /// A request was started and has not been completed or aborted.
    open: bool,
}

impl Batch {
    /// A batch for a send queue of `max_send_wr` requests.
    pub(crate) fn new(max_send_wr: u32) -> Mutex<Self> {
        let n = (max_send_wr as usize).clamp(1, MAX_BATCH);
        // SAFETY: Pending is plain C data (integers, raw pointers, unions
        // of those, byte arrays): all-zero is a valid value.
        let items = (0..n).map(|_| unsafe { core::mem::zeroed::<Pending>() }).collect();
        Mutex::new(Batch { items, len: 0, err: 0, open: false })
    }

    /// The request being built, or `None` (and the batch's error set).
    fn current(&mut self) -> Option<&mut Pending> {
        if !self.open || self.len == 0 {
            self.fail(libc::EINVAL);
            return None;
        }
        self.items.get_mut(self.len - 1)
    }

    fn fail(&mut self, e: c_int) {
        if self.err == 0 {
            self.err = e;
        }
    }
}

// SAFETY: the raw pointers inside are C's (AHs, MWs, bind info MRs) or
// into the batch's own boxed storage; the batch is only used under its
// mutex.
unsafe impl Send for Batch {}

/// The QP's batch and its C view, for a `struct ibv_qp_ex *` of ours.
fn with<R>(qp: *mut IbvQpEx, f: impl FnOnce(&mut Batch, &IbvQpEx) -> R) -> Option<R> {
    let c = crate::qp::from_c(qp.cast::<IbvQp>())?;
    let batch = c.wr_batch()?;
    let mut g = batch.lock().unwrap_or_else(|p| p.into_inner());
    // SAFETY: `qp` is a live QP of ours (from_c checked); C writes wr_id
    // and wr_flags before each opcode call, on the thread calling us.
    let view = unsafe { &*qp };
    Some(f(&mut g, view))
}

/// Starts a request with `opcode`: `wr_id` and `wr_flags` as C set them.
fn push(qp: *mut IbvQpEx, opcode: c_int, fill: impl FnOnce(&mut IbvSendWr)) {
    push_pending(qp, opcode, |p| fill(&mut p.wr));
}

/// [`push`] with the whole gathered request (its SGE and inline storage).
fn push_pending(qp: *mut IbvQpEx, opcode: c_int, fill: impl FnOnce(&mut Pending)) {
    with(qp, |b, v| {
        if !b.open {
            b.fail(libc::EINVAL);
            return;
        }
        if b.len == b.items.len() {
            b.fail(libc::ENOMEM);
            return;
        }
        let p = &mut b.items[b.len];
        b.len += 1;
        // SAFETY: IbvSendWr is plain C data: all-zero is valid.
        p.wr = unsafe { core::mem::zeroed() };
        p.wr.wr_id = v.wr_id;
        p.wr.send_flags = v.wr_flags;
        p.wr.opcode = opcode;
        p.raw_len = 0;
        fill(p);
    });
}

/// `mlx5dv_wr_raw_wqe`: gathers the WQE at `wqe` (its control segment's
/// `ds` 16-byte units, at most [`MAX_INLINE`] bytes, else `EINVAL` from
/// `ibv_wr_complete`) as the next request, posted in order by
/// `ibv_wr_complete`.
///
/// # Safety
///
/// `wqe` points to a readable WQE of the length its control segment says.
#[cfg(feature = "mlx5")]
pub(crate) unsafe fn push_raw(qp: *mut IbvQpEx, wqe: *const u8) {
    with(qp, |b, v| {
        if !b.open || wqe.is_null() {
            b.fail(libc::EINVAL);
            return;
        }
        if b.len == b.items.len() {
            b.fail(libc::ENOMEM);
            return;
        }
        // The caller's promise: a WQE begins with its 16-byte control
        // segment, whose byte 7 holds ds in its low 6 bits.
        let at = wqe.wrapping_add(7);
        // SAFETY: byte 7 of the control segment, readable as promised.
        let ds = usize::from(unsafe { at.read() } & 0x3f);
        let len = ds * 16;
        if len == 0 || len > MAX_INLINE {
            b.fail(libc::EINVAL);
            return;
        }
        let p = &mut b.items[b.len];
        b.len += 1;
        // SAFETY: IbvSendWr is plain C data: all-zero is valid.
        p.wr = unsafe { core::mem::zeroed() };
        p.wr.wr_id = v.wr_id;
        // SAFETY: the caller promises `len` readable bytes at `wqe`; the
        // destination is the batch's own buffer of MAX_INLINE >= len bytes.
        unsafe { core::ptr::copy_nonoverlapping(wqe, p.inline.as_mut_ptr(), len) };
        p.raw_len = len;
    });
}

unsafe extern "C" fn wr_start(qp: *mut IbvQpEx) {
    with(qp, |b, _| {
        b.len = 0;
        b.err = 0;
        b.open = true;
    });
}

unsafe extern "C" fn wr_abort(qp: *mut IbvQpEx) {
    with(qp, |b, _| {
        b.len = 0;
        b.err = 0;
        b.open = false;
    });
}

/// Posts the gathered requests; 0 or the errno value (nothing of the
/// batch was posted unless the error came from the device's doorbell).
unsafe extern "C" fn wr_complete(qp: *mut IbvQpEx) -> c_int {
    with(qp, |b, _| {
        let (n, err, open) = (b.len, b.err, b.open);
        b.len = 0;
        b.err = 0;
        b.open = false;
        if err != 0 || !open {
            return if err != 0 { err } else { libc::EINVAL };
        }
        // Runs of `ibv_wr_*` requests go to `post_send` as one list each;
        // a raw WQE between them is posted on its own, in order.
        let mut s = 0;
        while s < n {
            if b.items[s].raw_len > 0 {
                let p = &b.items[s];
                let r = post_raw(qp, &p.inline[..p.raw_len], p.wr.wr_id);
                if r != 0 {
                    return r;
                }
                s += 1;
                continue;
            }
            let e = (s..n).find(|&i| b.items[i].raw_len > 0).unwrap_or(n);
            // SAFETY: s < e <= n <= items.len(): the records of this run.
            let r = unsafe { post_run(qp, b.items[s..e].as_mut_ptr(), e - s) };
            if r != 0 {
                return r;
            }
            s = e;
        }
        0
    })
    .unwrap_or(libc::EINVAL)
}

/// Links the `n >= 1` records at `base` and posts them as one list; 0 or
/// the errno value.
///
/// # Safety
///
/// `base` points to `n >= 1` gathered records of a locked batch of `qp`.
unsafe fn post_run(qp: *mut IbvQpEx, base: *mut Pending, n: usize) -> c_int {
    // Link the records and point each at its own SGEs (the storage is
    // boxed: the addresses are stable while the lock is held).
    for i in 0..n {
        // SAFETY: i < n: inside the run.
        let p = unsafe { &mut *base.wrapping_add(i) };
        p.wr.next = if i + 1 < n {
            // SAFETY: i + 1 < n: inside the run.
            unsafe { &raw mut (*base.wrapping_add(i + 1)).wr }
        } else {
            core::ptr::null_mut()
        };
        if p.wr.num_sge > 0 {
            p.wr.sg_list = p.sges.as_mut_ptr();
        }
    }
    let mut bad: *mut IbvSendWr = core::ptr::null_mut();
    // SAFETY: `base` is the first of n >= 1 live items (a field's
    // address, no read).
    let first = unsafe { &raw mut (*base).wr };
    // SAFETY: a valid list of n requests whose SGEs point to the
    // caller's registered memory or to the batch's inline copies.
    unsafe { crate::post::post_send(qp.cast::<IbvQp>(), first, &mut bad) }
}

/// Posts the raw WQE `wqe` on `qp` (`verbs::qp::AnyQp::post_raw_wqe`:
/// mlx5 only); 0 or the errno value.
fn post_raw(qp: *mut IbvQpEx, wqe: &[u8], wr_id: u64) -> c_int {
    let Some(c) = crate::qp::from_c(qp.cast::<IbvQp>()) else { return libc::EINVAL };
    let mut g = c.lock();
    let Some(any) = g.as_mut() else { return libc::EINVAL };
    use crate::qp::Any;
    match crate::qp::each!(any, q => q.post_raw_wqe(wqe, wr_id)) {
        Ok(()) => 0,
        Err(e) => crate::errno::errno_of(&e.into()),
    }
}

const WR_RDMA_WRITE: c_int = 0;
const WR_RDMA_WRITE_WITH_IMM: c_int = 1;
const WR_SEND: c_int = 2;
const WR_SEND_WITH_IMM: c_int = 3;
const WR_RDMA_READ: c_int = 4;
const WR_ATOMIC_CMP_AND_SWP: c_int = 5;
const WR_ATOMIC_FETCH_AND_ADD: c_int = 6;
const WR_LOCAL_INV: c_int = 7;
const WR_BIND_MW: c_int = 8;
const WR_SEND_WITH_INV: c_int = 9;
const WR_ATOMIC_WRITE: c_int = 15;

unsafe extern "C" fn wr_send(qp: *mut IbvQpEx) {
    push(qp, WR_SEND, |_| {});
}

unsafe extern "C" fn wr_send_imm(qp: *mut IbvQpEx, imm_data: u32) {
    push(qp, WR_SEND_WITH_IMM, |w| w.imm_data = imm_data);
}

unsafe extern "C" fn wr_send_inv(qp: *mut IbvQpEx, invalidate_rkey: u32) {
    push(qp, WR_SEND_WITH_INV, |w| w.imm_data = invalidate_rkey);
}

unsafe extern "C" fn wr_local_inv(qp: *mut IbvQpEx, invalidate_rkey: u32) {
    push(qp, WR_LOCAL_INV, |w| w.imm_data = invalidate_rkey);
}

fn rdma(w: &mut IbvSendWr, rkey: u32, remote_addr: u64) {
    w.wr.rdma.rkey = rkey;
    w.wr.rdma.remote_addr = remote_addr;
}

unsafe extern "C" fn wr_rdma_write(qp: *mut IbvQpEx, rkey: u32, remote_addr: u64) {
    push(qp, WR_RDMA_WRITE, |w| rdma(w, rkey, remote_addr));
}

unsafe extern "C" fn wr_rdma_write_imm(qp: *mut IbvQpEx, rkey: u32, remote_addr: u64, imm_data: u32) {
    push(qp, WR_RDMA_WRITE_WITH_IMM, |w| {
        rdma(w, rkey, remote_addr);
        w.imm_data = imm_data;
    });
}

unsafe extern "C" fn wr_rdma_read(qp: *mut IbvQpEx, rkey: u32, remote_addr: u64) {
    push(qp, WR_RDMA_READ, |w| rdma(w, rkey, remote_addr));
}

unsafe extern "C" fn wr_atomic_cmp_swp(qp: *mut IbvQpEx, rkey: u32, remote_addr: u64, compare: u64, swap: u64) {
    push(qp, WR_ATOMIC_CMP_AND_SWP, |w| {
        w.wr.atomic.rkey = rkey;
        w.wr.atomic.remote_addr = remote_addr;
        w.wr.atomic.compare_add = compare;
        w.wr.atomic.swap = swap;
    });
}

unsafe extern "C" fn wr_atomic_fetch_add(qp: *mut IbvQpEx, rkey: u32, remote_addr: u64, add: u64) {
    push(qp, WR_ATOMIC_FETCH_AND_ADD, |w| {
        w.wr.atomic.rkey = rkey;
        w.wr.atomic.remote_addr = remote_addr;
        w.wr.atomic.compare_add = add;
    });
}

/// `ibv_wr_atomic_write`: the 8 bytes at `atomic_wr` are copied now into
/// the request's own storage, which its one SGE points at (the classic
/// form `post.rs` reads them from: one 8-byte SGE).
///
/// # Safety
///
/// `atomic_wr` is NULL (refused) or points to 8 readable bytes.
unsafe extern "C" fn wr_atomic_write(qp: *mut IbvQpEx, rkey: u32, remote_addr: u64, atomic_wr: *const c_void) {
    if atomic_wr.is_null() {
        with(qp, |b, _| b.fail(libc::EINVAL));
        return;
    }
    // SAFETY: non-NULL; the caller promises 8 readable bytes (any
    // alignment: read unaligned, copied out).
    let value = unsafe { atomic_wr.cast::<[u8; 8]>().read_unaligned() };
    push_pending(qp, WR_ATOMIC_WRITE, |p| {
        rdma(&mut p.wr, rkey, remote_addr);
        p.inline[..8].copy_from_slice(&value);
        // The items are boxed: this address is stable while the batch lives.
        p.sges[0] = IbvSge { addr: p.inline.as_ptr() as u64, length: 8, lkey: 0 };
        p.wr.num_sge = 1;
    });
}

unsafe extern "C" fn wr_bind_mw(qp: *mut IbvQpEx, mw: *mut IbvMw, rkey: u32, info: *const IbvMwBindInfo) {
    if info.is_null() {
        with(qp, |b, _| b.fail(libc::EINVAL));
        return;
    }
    // SAFETY: non-NULL; the caller promises a readable bind info.
    let info = unsafe { *info };
    push(qp, WR_BIND_MW, |w| {
        w.bind_mw.bind_mw.mw = mw;
        w.bind_mw.bind_mw.rkey = rkey;
        w.bind_mw.bind_mw.bind_info = info;
    });
}

unsafe extern "C" fn wr_set_ud_addr(qp: *mut IbvQpEx, ah: *mut IbvAh, remote_qpn: u32, remote_qkey: u32) {
    with(qp, |b, _| {
        if let Some(p) = b.current() {
            p.wr.wr.ud.ah = ah;
            p.wr.wr.ud.remote_qpn = remote_qpn;
            p.wr.wr.ud.remote_qkey = remote_qkey;
        }
    });
}

unsafe extern "C" fn wr_set_sge(qp: *mut IbvQpEx, lkey: u32, addr: u64, length: u32) {
    with(qp, |b, _| {
        if let Some(p) = b.current() {
            p.sges[0] = IbvSge { addr, length, lkey };
            p.wr.num_sge = 1;
        }
    });
}

unsafe extern "C" fn wr_set_sge_list(qp: *mut IbvQpEx, num_sge: usize, sg_list: *const IbvSge) {
    with(qp, |b, _| {
        if num_sge > MAX_SGE || (num_sge > 0 && sg_list.is_null()) {
            b.fail(libc::EINVAL);
            return;
        }
        if let Some(p) = b.current() {
            for i in 0..num_sge {
                // SAFETY: i < num_sge; the caller promises num_sge entries.
                p.sges[i] = unsafe { *sg_list.wrapping_add(i) };
            }
            p.wr.num_sge = num_sge as c_int;
        }
    });
}

/// `struct ibv_data_buf`.
#[repr(C)]
pub(crate) struct IbvDataBuf {
    addr: *mut c_void,
    length: usize,
}

/// Copies the pieces into the current request's inline buffer.
fn set_inline(qp: *mut IbvQpEx, pieces: &[(*const u8, usize)]) {
    with(qp, |b, _| {
        let total: usize = pieces.iter().map(|p| p.1).sum();
        if total > MAX_INLINE || pieces.iter().any(|p| p.1 > 0 && p.0.is_null()) {
            b.fail(libc::EINVAL);
            return;
        }
        if let Some(p) = b.current() {
            let mut at = 0;
            for &(src, len) in pieces {
                if len > 0 {
                    // SAFETY: the caller promises `len` readable bytes at
                    // `src`; at + len <= total <= MAX_INLINE.
                    let s = unsafe { core::slice::from_raw_parts(src, len) };
                    p.inline[at..at + len].copy_from_slice(s);
                    at += len;
                }
            }
            p.sges[0] = IbvSge { addr: p.inline.as_ptr() as u64, length: total as u32, lkey: 0 };
            p.wr.num_sge = 1;
            p.wr.send_flags |= SEND_INLINE;
        }
    });
}

unsafe extern "C" fn wr_set_inline_data(qp: *mut IbvQpEx, addr: *mut c_void, length: usize) {
    set_inline(qp, &[(addr.cast::<u8>().cast_const(), length)]);
}

unsafe extern "C" fn wr_set_inline_data_list(qp: *mut IbvQpEx, num_buf: usize, list: *const IbvDataBuf) {
    if num_buf > MAX_SGE || (num_buf > 0 && list.is_null()) {
        with(qp, |b, _| b.fail(libc::EINVAL));
        return;
    }
    let mut pieces = [(core::ptr::null::<u8>(), 0usize); MAX_SGE];
    for (i, piece) in pieces.iter_mut().enumerate().take(num_buf) {
        // SAFETY: i < num_buf; the caller promises num_buf entries.
        let d = unsafe { &*list.wrapping_add(i) };
        *piece = (d.addr.cast::<u8>().cast_const(), d.length);
    }
    set_inline(qp, &pieces[..num_buf]);
}

/// `ibv_qp_to_qp_ex`: the extended view of a QP made by `ibv_create_qp_ex`
/// with send operations (the same object: `qp_base` is its first field);
/// NULL for any other QP, as rdma-core.
pub(crate) extern "C" fn ibv_qp_to_qp_ex(qp: *mut IbvQp) -> *mut IbvQpEx {
    match crate::qp::from_c(qp) {
        Some(c) if c.wr_batch().is_some() => qp.cast::<IbvQpEx>(),
        _ => core::ptr::null_mut(),
    }
}

/// As a C function pointer of `struct ibv_qp_ex`.
macro_rules! any_fn {
    ($f:expr, $t:ty) => {{
        let f: $t = $f;
        // SAFETY: only the pointer's type is erased; C calls it through
        // the struct ibv_qp_ex member of exactly this signature.
        Some(unsafe { core::mem::transmute::<$t, unsafe extern "C" fn()>(f) })
    }};
}

/// Fills the `ibv_wr_*` table of `ex`.
pub(crate) fn set_api(ex: &mut IbvQpEx) {
    type Q = *mut IbvQpEx;
    ex.wr_start = any_fn!(wr_start, unsafe extern "C" fn(Q));
    ex.wr_complete = any_fn!(wr_complete, unsafe extern "C" fn(Q) -> c_int);
    ex.wr_abort = any_fn!(wr_abort, unsafe extern "C" fn(Q));
    ex.wr_send = any_fn!(wr_send, unsafe extern "C" fn(Q));
    ex.wr_send_imm = any_fn!(wr_send_imm, unsafe extern "C" fn(Q, u32));
    ex.wr_send_inv = any_fn!(wr_send_inv, unsafe extern "C" fn(Q, u32));
    ex.wr_local_inv = any_fn!(wr_local_inv, unsafe extern "C" fn(Q, u32));
    ex.wr_rdma_write = any_fn!(wr_rdma_write, unsafe extern "C" fn(Q, u32, u64));
    ex.wr_rdma_write_imm = any_fn!(wr_rdma_write_imm, unsafe extern "C" fn(Q, u32, u64, u32));
    ex.wr_rdma_read = any_fn!(wr_rdma_read, unsafe extern "C" fn(Q, u32, u64));
    ex.wr_atomic_cmp_swp = any_fn!(wr_atomic_cmp_swp, unsafe extern "C" fn(Q, u32, u64, u64, u64));
    ex.wr_atomic_fetch_add = any_fn!(wr_atomic_fetch_add, unsafe extern "C" fn(Q, u32, u64, u64));
    ex.wr_atomic_write = any_fn!(wr_atomic_write, unsafe extern "C" fn(Q, u32, u64, *const c_void));
    ex.wr_bind_mw = any_fn!(wr_bind_mw, unsafe extern "C" fn(Q, *mut IbvMw, u32, *const IbvMwBindInfo));
    ex.wr_set_ud_addr = any_fn!(wr_set_ud_addr, unsafe extern "C" fn(Q, *mut IbvAh, u32, u32));
    ex.wr_set_sge = any_fn!(wr_set_sge, unsafe extern "C" fn(Q, u32, u64, u32));
    ex.wr_set_sge_list = any_fn!(wr_set_sge_list, unsafe extern "C" fn(Q, usize, *const IbvSge));
    ex.wr_set_inline_data = any_fn!(wr_set_inline_data, unsafe extern "C" fn(Q, *mut c_void, usize));
    ex.wr_set_inline_data_list = any_fn!(wr_set_inline_data_list, unsafe extern "C" fn(Q, usize, *const IbvDataBuf));
}
