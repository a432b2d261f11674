//! # Safety
//!
//! Completion channels: `ibv_create_comp_channel`, `ibv_destroy_comp_channel`.
//!
//! A channel is a boxed [`CCompChannel`] whose first field is the C
//! `struct ibv_comp_channel`; its `CompChannel<'static>` borrows the
//! `Context` of the `Arc` the box holds after it (the argument of `pd.rs`).
//! `ibv_comp_channel.refcnt` counts the CQs using the channel; while it is
//! not 0, destroying fails with `EBUSY` as in rdma-core. The C view is in
//! an `UnsafeCell` and `refcnt` is only changed atomically
//! (`AtomicI32::from_ptr` on the aligned `int`), so CQs on several threads
//! may count themselves in and out; a CQ borrows the channel
//! (`&'static CompChannel`) only while it is counted.
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::c_int;
use core::sync::atomic::{AtomicI32, Ordering};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;

use verbs::{CompChannel, Context};

use crate::abi::device::IbvContext;
use crate::abi::objects::IbvCompChannel;
use crate::context;
use crate::errno::{errno_of, fail_errno, fail_null};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsCCH");

/// A completion channel: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CCompChannel {
    ibv: UnsafeCell<IbvCompChannel>,
    magic: u64,
    pub(crate) ch: CompChannel<'static>,
    /// Keeps the context `ch` borrows alive; dropped after `ch`.
    _ctx: Arc<Context>,
}

/// The [`CCompChannel`] behind a C pointer, if it is a live one of ours.
pub(crate) fn from_c<'a>(p: *mut IbvCompChannel) -> Option<&'a CCompChannel> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_comp_channel we hand out is the first field of a
    // live boxed CCompChannel; the magic check rejects freed ones.
    let c = unsafe { &*p.cast::<CCompChannel>() };
    (c.magic == MAGIC).then_some(c)
}

impl CCompChannel {
    /// `ibv_comp_channel.refcnt`, shared with C.
    fn refcnt(&self) -> &AtomicI32 {
        let p = self.ibv.get().wrapping_byte_add(core::mem::offset_of!(IbvCompChannel, refcnt)).cast::<i32>();
        // SAFETY: `p` is the aligned `int` refcnt inside the UnsafeCell of
        // a live box; every Rust access to it goes through this atomic.
        unsafe { AtomicI32::from_ptr(p) }
    }

    /// Counts one more CQ using the channel.
    pub(crate) fn hold(&self) {
        self.refcnt().fetch_add(1, Ordering::AcqRel);
    }

    /// A CQ counted by [`CCompChannel::hold`] is gone.
    pub(crate) fn release(&self) {
        self.refcnt().fetch_sub(1, Ordering::AcqRel);
    }
}

/// `ibv_create_comp_channel`: a new channel (`fd` is pollable), or NULL with errno.
pub(crate) extern "C" fn ibv_create_comp_channel(context: *mut IbvContext) -> *mut IbvCompChannel {
    let Some(c) = context::from_c(context) else { return fail_null(libc::EINVAL) };
    let arc = Arc::clone(&c.ctx);
    // SAFETY: the Context lives in `arc`'s allocation, which the box built
    // below keeps (field `_ctx`, dropped after `ch`) for as long as `ch`.
    let ctx: &'static Context = unsafe { &*Arc::as_ptr(&arc) };
    let ch = match CompChannel::create(ctx) {
        Ok(ch) => ch,
        Err(e) => return fail_null(errno_of(&e)),
    };
    let ibv = IbvCompChannel { context: c.as_c(), fd: ch.as_fd().as_raw_fd(), refcnt: 0 };
    Box::into_raw(Box::new(CCompChannel { ibv: UnsafeCell::new(ibv), magic: MAGIC, ch, _ctx: arc })).cast()
}

/// `ibv_destroy_comp_channel`: 0, or the errno value (`EBUSY` while CQs use it).
pub(crate) extern "C" fn ibv_destroy_comp_channel(channel: *mut IbvCompChannel) -> c_int {
    let Some(c) = from_c(channel) else { return fail_errno(libc::EINVAL) };
    if c.refcnt().load(Ordering::Acquire) != 0 {
        // rdma-core returns EBUSY here without setting errno.
        return libc::EBUSY;
    }
    let p = channel.cast::<CCompChannel>();
    // SAFETY: `p` (the pointer Box::into_raw gave C) is the live box from ibv_create_comp_channel (from_c
    // checked); clearing the magic makes later uses of it fail from_c.
    unsafe { (*p).magic = 0 };
    // SAFETY: as above; freed once and not used after.
    drop(unsafe { Box::from_raw(p) });
    0
}
