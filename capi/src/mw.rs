//! # Safety
//!
//! Memory windows: the `ibv_context_ops` entries `alloc_mw`, `dealloc_mw`
//! and `bind_mw` (behind the `ibv_alloc_mw`/`ibv_dealloc_mw`/`ibv_bind_mw`
//! inlines), and the `IBV_WR_BIND_MW` requests of `post.rs` ([`bind`]).
//!
//! A window is a boxed [`CMw`] whose first field is the C `struct ibv_mw`
//! in an `UnsafeCell` (its `rkey` changes when a type 1 bind is posted,
//! under the QP's lock); its `Mw<'static>` borrows the `Pd` of a [`CPd`]
//! counted in its `users`.
//!
//! `verbs::wr::MwBind::new` ties the bound region's lifetime to the
//! window's (`&'static Mr` here) so that safe Rust cannot free a
//! region's *own* buffer while a window grants access to it. Regions of
//! this library hold the C caller's memory (`RawMem`: dropping them frees
//! nothing), and `ibv_dereg_mr(3)`/`ibv_dealloc_mw(3)` make the order the
//! C caller's business, as in rdma-core. [`bind`] therefore lends the
//! region, under its lock, for the constructor call only: `MwBind` keeps
//! the window's rkey cell and the region's lkey, never the reference.
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::c_int;
use core::sync::atomic::{AtomicU64, Ordering};

use verbs::mr::{Mr, RawMem};
use verbs::wr::MwBind;
use verbs::{AccessFlags, Mw, MwType};

use crate::abi::objects::{IbvMw, IbvPd, IbvQp};
use crate::abi::wr::{IbvMwBind, IbvMwBindInfo, IbvSendWr};
use crate::errno::{errno_of, fail_errno, fail_null};
use crate::names::{Names, UNKNOWN};
use crate::pd::{self, CPd};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsMW\0");

/// A memory window: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CMw {
    ibv: UnsafeCell<IbvMw>,
    magic: AtomicU64,
    /// `None` only transiently inside `dealloc_mw`.
    pub(crate) mw: Option<Mw<'static>>,
    pd: &'static CPd,
}

// SAFETY: the C view is written only under a QP lock (rkey) or by C.
unsafe impl Sync for CMw {}

/// The [`CMw`] behind a C `struct ibv_mw *`, if it is a live one of ours.
pub(crate) fn from_c<'a>(p: *mut IbvMw) -> Option<&'a CMw> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_mw we hand out is the first field of a live boxed
    // CMw (repr(C)); the magic check rejects freed ones still mapped.
    let c = unsafe { &*p.cast::<CMw>() };
    (c.magic.load(Ordering::Relaxed) == MAGIC).then_some(c)
}

impl CMw {
    /// Whether the C view's `context` and `handle` still name this window
    /// (what rdma-core sends the kernel to free it, see `names.rs`).
    fn named(&self) -> bool {
        let Some(inner) = self.mw.as_ref() else { return false };
        // SAFETY: a copy of the C view, which only C and the QP lock's
        // holder (rkey) write; C promises no concurrent use with dealloc.
        let v = unsafe { self.ibv.get().read() };
        Names::new(self.pd.context(), inner.handle()).said_by(v.context, v.handle)
    }

    /// Records the window's rkey in the C view (after a type 1 bind).
    pub(crate) fn set_c_rkey(&self, rkey: u32) {
        let p = self.ibv.get().wrapping_byte_add(core::mem::offset_of!(IbvMw, rkey)).cast::<u32>();
        // SAFETY: an aligned field of the live box's C view, written under
        // the QP lock the caller holds; C reads it as it reads rdma-core's.
        unsafe { p.write(rkey) };
    }
}

/// `ibv_context_ops.alloc_mw`: NULL with errno on failure.
pub(crate) extern "C" fn alloc_mw(pd: *mut IbvPd, ty: c_int) -> *mut IbvMw {
    let Some(cpd) = pd::from_c(pd) else { return fail_null(libc::EINVAL) };
    let cpd: &'static CPd = cpd;
    // An unknown type first (EINVAL; rdma-core's libsiw answers EOPNOTSUPP
    // to every type, which pyverbs takes for a skip, not a pass).
    let Ok(mw_type) = MwType::try_from(ty as u32) else { return fail_null(libc::EINVAL) };
    if !cpd.provider().caps().memory_windows {
        // libsiw has no alloc_mw: rdma-core answers before the kernel.
        return fail_null(libc::EOPNOTSUPP);
    }
    if !cpd.named() {
        return fail_null(UNKNOWN);
    }
    let Some(rpd) = cpd.pd() else { return fail_null(libc::EINVAL) };
    cpd.hold();
    let mw = match Mw::alloc(rpd, mw_type) {
        Ok(m) => m,
        Err(e) => {
            cpd.release();
            return fail_null(errno_of(&e));
        }
    };
    let ibv = IbvMw { context: cpd.context(), pd, rkey: mw.rkey(), handle: mw.handle(), type_: ty };
    let b = Box::new(CMw { ibv: UnsafeCell::new(ibv), magic: AtomicU64::new(MAGIC), mw: Some(mw), pd: cpd });
    Box::into_raw(b).cast()
}

/// `ibv_context_ops.dealloc_mw`: 0 or the errno value.
pub(crate) extern "C" fn dealloc_mw(mw: *mut IbvMw) -> c_int {
    let Some(c) = from_c(mw) else { return fail_errno(libc::EINVAL) };
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    // SAFETY: `mw` is the pointer Box::into_raw gave C for this live box
    // (from_c checked); C must not use it concurrently (ibv_dealloc_mw(3)).
    let mut b = unsafe { Box::from_raw(mw.cast::<CMw>()) };
    let Some(inner) = b.mw.take() else {
        let _ = Box::into_raw(b);
        return fail_errno(libc::EINVAL);
    };
    match inner.destroy() {
        Ok(()) => {
            b.magic.store(0, Ordering::Relaxed);
            b.pd.release();
            0
        }
        Err(e) => {
            b.mw = Some(e.object);
            // Same address: C keeps using its pointer.
            let _ = Box::into_raw(b);
            fail_errno(errno_of(&e.error))
        }
    }
}

/// The `verbs` bind of window `mw` to `info` (its region under the
/// region's lock for the constructor only, see the module docs), with
/// the window's new key `rkey`.
pub(crate) fn bind<'w>(mw: &'w Mw<'static>, info: &IbvMwBindInfo, rkey: u32) -> Option<MwBind<'w>> {
    let access = AccessFlags::from_bits_retain(info.mw_access_flags);
    if info.mr.is_null() {
        // Unbinding (a zero-length bind) names no region on rxe.
        return None;
    }
    let cmr = crate::mr::from_c(info.mr)?;
    cmr.with_mr(|mr| {
        let mr: *const Mr<'static, RawMem> = mr?;
        // SAFETY: the region is alive (its lock is held) for this call;
        // MwBind keeps only its lkey, not the reference (module docs).
        let mr: &'static Mr<'static, RawMem> = unsafe { &*mr };
        Some(MwBind::new(mw, mr, info.addr, info.length, access).with_rkey(rkey))
    })
}

/// `ibv_context_ops.bind_mw` (behind `ibv_bind_mw`, type 1 windows): posts
/// a bind request on `qp` and gives the window its next key. 0 or the
/// errno value.
///
/// # Safety
///
/// `mw_bind` is NULL or points to a readable `struct ibv_mw_bind`.
pub(crate) unsafe extern "C" fn bind_mw(qp: *mut IbvQp, mw: *mut IbvMw, mw_bind: *mut IbvMwBind) -> c_int {
    let (Some(cmw), false) = (from_c(mw), mw_bind.is_null()) else { return fail_errno(libc::EINVAL) };
    let Some(inner) = cmw.mw.as_ref() else { return fail_errno(libc::EINVAL) };
    // SAFETY: non-NULL, the caller promises a readable bind.
    let b = unsafe { mw_bind.read() };
    let rkey = inner.next_rkey();
    let mut wr: IbvSendWr = crate::post::zeroed_send_wr();
    wr.wr_id = b.wr_id;
    wr.opcode = crate::post::WR_BIND_MW;
    wr.send_flags = b.send_flags;
    wr.bind_mw.bind_mw = crate::abi::wr::IbvBindMwWr { mw, rkey, bind_info: b.bind_info };
    let mut bad = core::ptr::null_mut();
    // SAFETY: a one-request list on the stack, valid for the call.
    let r = unsafe { crate::post::post_send(qp, &mut wr, &mut bad) };
    if r == 0 {
        cmw.set_c_rkey(rkey);
    }
    r
}

