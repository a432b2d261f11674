//! # Safety
//!
//! Completion queues: `ibv_create_cq`, `ibv_resize_cq`, `ibv_destroy_cq`,
//! `ibv_get_cq_event`, `ibv_ack_cq_events`, the ops-table entries
//! `poll_cq` and `req_notify_cq`, and `verbs_context.create_cq_ex` with the
//! extended polling API (`ibv_start_poll`, `ibv_next_poll`,
//! `ibv_end_poll`, `ibv_wc_read_*`): each poll copies one completion into
//! the CQ's `current` slot (under its own mutex), whose `wr_id` and
//! `status` are also written into the C struct, where verbs.h reads them.
//!
//! A CQ is a boxed [`CCq`] whose first field is the C view, a
//! `struct ibv_cq_ex` (which begins with every field of `struct ibv_cq`,
//! so the same box serves `ibv_create_cq_ex`), in an `UnsafeCell`
//! because C writes it (`cq_context`) and the pthread mutex/condition in it
//! are used through raw pointers only. The `Cq<'static>` borrows the
//! `Context` of the `Arc` in the same box (dropped after it) and the
//! channel of a [`CCompChannel`] that counts it in `refcnt` (so the
//! channel cannot be destroyed under it). QPs and SRQs borrow the `Cq`
//! (`&'static Cq`, [`CCq::hold`]) only while counted in [`CCq::users`];
//! resize and destroy take the write lock and refuse (`EBUSY`) while the
//! count is not 0, so no `&mut Cq` ever coexists with those borrows.
//!
//! `ibv_poll_cq`, the hot path, takes no lock: it reaches the `Cq` through
//! [`CCq::live`], a pointer to it that `ibv_destroy_cq` clears under the
//! write lock before it takes the `Cq` out, and relies on C's rule that no
//! call on a CQ runs during or after its destroy (rdma-core's destroy
//! frees the CQ). It copies completions straight into the caller's
//! `struct ibv_wc` array (`verbs::Wc` has that layout, asserted below).
//!
//! `ibv_destroy_cq` waits, as rdma-core does, until `ibv_ack_cq_events`
//! and `ibv_ack_async_event` acknowledged as many events as the kernel
//! reports having delivered for the CQ; the counters and the wait use the
//! C struct's own mutex and condition (all-zero = glibc's initializers).
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::{c_int, c_void};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use verbs::{Context, Cq, CqOptions, ErrorKind};

use crate::abi::device::IbvContext;
use crate::abi::objects::{IbvCompChannel, IbvCq, IbvCqEx, IbvCqInitAttrEx, IbvPollCqAttr};
use crate::abi::wr::IbvWc;
use crate::acks::Counters;
use crate::comp_channel::{self, CCompChannel};
use crate::context;
use crate::errno::{errno_of, fail_errno, fail_neg1, fail_null};
use crate::names::{Names, UNKNOWN};
use crate::pd::{self, CPd};
use crate::registry::{self, Kind};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsCQ\0");

/// A completion queue: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CCq {
    ibv: UnsafeCell<IbvCqEx>,
    magic: AtomicU64,
    /// `None` once destroyed (the box then lives on until the wait ends).
    cq: RwLock<Option<Cq<'static>>>,
    /// The `Cq` inside `cq` for the data path (`ibv_poll_cq`), which reads
    /// it without the lock: set once the box is made, cleared by
    /// `ibv_destroy_cq` (under the write lock) before it takes the `Cq`
    /// out; NULL also while the box is being made.
    live: AtomicPtr<Cq<'static>>,
    /// QPs and SRQs borrowing `cq` (see the module docs).
    users: AtomicU32,
    channel: Option<&'static CCompChannel>,
    /// The parent domain of `ibv_create_cq_ex` (`IBV_CQ_INIT_ATTR_MASK_PD`),
    /// held until the CQ is destroyed.
    domain: Option<&'static CPd>,
    user_handle: u64,
    /// The extended polling API's current completion.
    current: Mutex<IbvWc>,
    /// What `ibv` said when handed out (see `names.rs`).
    names: Names,
    /// Keeps the context `cq` borrows alive; dropped after `cq`.
    _ctx: Arc<Context>,
}

// SAFETY: the C view is only touched through raw pointers under its own
// pthread mutex (counters) or by C; everything else is Sync.
unsafe impl Sync for CCq {}
// SAFETY: as above; the box is freed on whichever thread destroys it.
unsafe impl Send for CCq {}

/// The [`CCq`] behind a C `struct ibv_cq *`, if it is a live one of ours.
#[inline]
pub(crate) fn from_c<'a>(p: *mut IbvCq) -> Option<&'a CCq> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_cq we hand out is the first field of a live boxed
    // CCq (repr(C)); the magic check rejects destroyed ones still mapped.
    let c = unsafe { &*p.cast::<CCq>() };
    (c.magic.load(Ordering::Relaxed) == MAGIC).then_some(c)
}

impl CCq {
    /// The `struct ibv_cq *` C sees.
    pub(crate) fn as_c(&self) -> *mut IbvCq {
        self.ibv.get().cast()
    }

    /// The Rust CQ, counted in `users` until [`CCq::release`]; `None`
    /// once destroyed.
    pub(crate) fn hold(&self) -> Option<&'static Cq<'static>> {
        let g = self.cq.read().unwrap_or_else(|p| p.into_inner());
        let cq: *const Cq<'static> = g.as_ref()?;
        self.users.fetch_add(1, Ordering::AcqRel);
        // SAFETY: counted in `users` under the read lock: destroy (write
        // lock) refuses while the count is not 0, so the Cq is neither
        // moved nor dropped while this borrow lives; resize (write lock)
        // only borrows it shared.
        Some(unsafe { &*cq })
    }

    /// The Rust CQ for `ibv_poll_cq`, without taking the lock; `None`
    /// once destroyed.
    ///
    /// # Safety
    ///
    /// C's rule for every CQ verb: the call does not run concurrently with
    /// (or after) `ibv_destroy_cq` of this CQ; the borrow ends before the
    /// call returns.
    #[inline(always)]
    unsafe fn live(&self) -> Option<&Cq<'static>> {
        let p = self.live.load(Ordering::Acquire);
        // SAFETY: non-NULL, `p` points to the `Cq` in `self.cq`'s `Some`,
        // at a fixed address in this box from creation until destroy,
        // which clears `live` before it takes the `Cq` out (the only `&mut`
        // to it ever formed; resize derefs its write guard shared only).
        // Shared borrows coexist with the lock's readers and with resize;
        // the caller promises no destroy meanwhile (C's rule, rdma-core's
        // too: its destroy frees the CQ).
        unsafe { p.as_ref() }
    }

    /// Ends a borrow taken by [`CCq::hold`].
    pub(crate) fn release(&self) {
        self.users.fetch_sub(1, Ordering::AcqRel);
    }

    fn counters(&self) -> Counters {
        use core::mem::offset_of;
        Counters::of(
            self.ibv.get(),
            offset_of!(IbvCqEx, mutex),
            offset_of!(IbvCqEx, cond),
            offset_of!(IbvCqEx, comp_events_completed),
            offset_of!(IbvCqEx, async_events_completed),
        )
    }

    /// Counts acknowledged events (completion, async) and wakes a waiting
    /// `ibv_destroy_cq`.
    pub(crate) fn ack(&self, comp: u32, async_: u32) {
        self.counters().add([comp, async_]);
    }

    /// Waits until `comp`/`async_` events were acknowledged.
    fn wait_acks(&self, comp: u32, async_: u32) {
        self.counters().wait([comp, async_]);
    }

    /// The C view's `context` and `handle`.
    fn said(&self) -> (*mut IbvContext, u32) {
        let v = self.ibv.get();
        // SAFETY: plain reads of two fields of the live C view, which only
        // C writes (C's rule: not during a call on the CQ).
        let context = unsafe { (*v).context };
        // SAFETY: as above.
        let handle = unsafe { (*v).handle };
        (context, handle)
    }

    /// Whether the C view still names this CQ (verbs on the CQ: rdma-core
    /// sends `handle` to `context`'s device file).
    fn named(&self) -> bool {
        let (context, handle) = self.said();
        self.names.said_by(context, handle)
    }

    /// Whether the C view's `handle` still names this CQ (a new QP's CQs,
    /// sent with the PD's context).
    pub(crate) fn handle_named(&self) -> bool {
        self.names.handle_is(self.said().1)
    }

    /// `cq_context` as C last set it.
    pub(crate) fn cq_context(&self) -> *mut c_void {
        // SAFETY: a plain read of a pointer field C may write; C gives no
        // more ordering than rdma-core does for the same field.
        unsafe { (*self.ibv.get()).cq_context }
    }
}

/// `ibv_create_cq`: a CQ of at least `cqe` entries, reporting completion
/// events on `channel` (may be NULL); NULL with errno on failure.
pub(crate) extern "C" fn ibv_create_cq(
    context: *mut IbvContext,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut IbvCompChannel,
    comp_vector: c_int,
) -> *mut IbvCq {
    create(context, cqe, cq_context, channel, comp_vector, None, CqOptions::default())
}

/// The `read_*` fields every provider here fills (`IBV_WC_STANDARD_FLAGS`:
/// byte_len, imm, qp_num, src_qp, slid, sl, dlid_path_bits), as librxe.
const WC_STANDARD_FLAGS: u64 = 0x7f;
/// `IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD`.
const CQ_INIT_ATTR_MASKS: u32 = 0x3;
/// `IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN`.
const CQ_CREATE_FLAGS: u32 = 0x3;

/// `verbs_context.create_cq_ex` (behind the `ibv_create_cq_ex` inline): a
/// CQ with the extended polling API; NULL with errno (`EOPNOTSUPP` for
/// timestamps, flow tags or TM info, and for a parent domain where the
/// provider has none, as librxe; `EINVAL` for unknown mask bits, and for
/// a `parent_domain` that is not a parent domain of this context, as
/// libmlx5). The parent domain is held until the CQ is destroyed
/// (`EBUSY` for its `ibv_dealloc_pd` meanwhile).
///
/// # Safety
///
/// `attr` is NULL or points to a readable `struct ibv_cq_init_attr_ex`.
pub(crate) unsafe extern "C" fn create_cq_ex(context: *mut IbvContext, attr: *mut IbvCqInitAttrEx) -> *mut IbvCqEx {
    // SAFETY: the caller's promise, passed on.
    unsafe { create_cq_ex_with(context, attr, CqOptions::default()) }
}

/// [`create_cq_ex`] with the provider-specific choices of `opts`
/// (`mlx5dv_create_cq`).
///
/// # Safety
///
/// As [`create_cq_ex`].
pub(crate) unsafe fn create_cq_ex_with(context: *mut IbvContext, attr: *mut IbvCqInitAttrEx, opts: CqOptions) -> *mut IbvCqEx {
    if attr.is_null() {
        return fail_null(libc::EINVAL);
    }
    // SAFETY: non-NULL; the caller promises a readable struct.
    let a = unsafe { &*attr };
    if a.comp_mask & !CQ_INIT_ATTR_MASKS != 0 {
        return fail_null(libc::EINVAL);
    }
    let Some(c) = context::from_c(context) else { return fail_null(libc::EINVAL) };
    let wants_domain = a.comp_mask & 2 != 0 && !a.parent_domain.is_null();
    if a.wc_flags & !WC_STANDARD_FLAGS != 0
        || (a.comp_mask & 1 != 0 && a.flags & !CQ_CREATE_FLAGS != 0)
        || (wants_domain && !c.ctx.provider_caps().parent_domains)
    {
        return fail_null(libc::EOPNOTSUPP);
    }
    let domain: Option<&'static CPd> = match wants_domain {
        false => None,
        true => match pd::from_c(a.parent_domain) {
            Some(d) if d.is_parent() && d.context() == c.as_c() => Some(d),
            _ => return fail_null(libc::EINVAL),
        },
    };
    let (Ok(cqe), Ok(vector)) = (c_int::try_from(a.cqe), c_int::try_from(a.comp_vector)) else {
        return fail_null(libc::EINVAL);
    };
    create(context, cqe, a.cq_context, a.channel, vector, Some(domain), opts).cast()
}

/// As a C function pointer of the extended CQ API.
macro_rules! any_fn {
    ($f:expr, $t:ty) => {{
        let f: $t = $f;
        // SAFETY: only the pointer's type is erased; C calls it through
        // the struct ibv_cq_ex member of exactly this signature.
        Some(unsafe { core::mem::transmute::<$t, unsafe extern "C" fn()>(f) })
    }};
}

/// Fills the extended polling API of `ibv`.
fn set_poll_api(ibv: &mut IbvCqEx) {
    type Cx = *mut IbvCqEx;
    ibv.start_poll = any_fn!(start_poll, unsafe extern "C" fn(Cx, *mut IbvPollCqAttr) -> c_int);
    ibv.next_poll = any_fn!(next_poll, unsafe extern "C" fn(Cx) -> c_int);
    ibv.end_poll = any_fn!(end_poll, unsafe extern "C" fn(Cx));
    ibv.read_opcode = any_fn!(read_opcode, unsafe extern "C" fn(Cx) -> c_int);
    ibv.read_vendor_err = any_fn!(read_vendor_err, unsafe extern "C" fn(Cx) -> u32);
    ibv.read_byte_len = any_fn!(read_byte_len, unsafe extern "C" fn(Cx) -> u32);
    ibv.read_imm_data = any_fn!(read_imm_data, unsafe extern "C" fn(Cx) -> u32);
    ibv.read_qp_num = any_fn!(read_qp_num, unsafe extern "C" fn(Cx) -> u32);
    ibv.read_src_qp = any_fn!(read_src_qp, unsafe extern "C" fn(Cx) -> u32);
    ibv.read_wc_flags = any_fn!(read_wc_flags, unsafe extern "C" fn(Cx) -> core::ffi::c_uint);
    ibv.read_slid = any_fn!(read_slid, unsafe extern "C" fn(Cx) -> u32);
    ibv.read_sl = any_fn!(read_sl, unsafe extern "C" fn(Cx) -> u8);
    ibv.read_dlid_path_bits = any_fn!(read_dlid_path_bits, unsafe extern "C" fn(Cx) -> u8);
}

/// `ibv_start_poll`: takes the first completion; 0, `ENOENT` when the CQ
/// is empty (then `ibv_end_poll` must not be called), or an errno value.
unsafe extern "C" fn start_poll(cq: *mut IbvCqEx, attr: *mut IbvPollCqAttr) -> c_int {
    // SAFETY: attr is NULL or the caller's struct (verbs.h passes it on).
    if !attr.is_null() && unsafe { (*attr).comp_mask } != 0 {
        return libc::EINVAL;
    }
    // SAFETY: as next_poll.
    unsafe { next_poll(cq) }
}

/// `ibv_next_poll`: takes the next completion; 0, `ENOENT`, or errno.
unsafe extern "C" fn next_poll(cq: *mut IbvCqEx) -> c_int {
    let Some(c) = from_c(cq.cast()) else { return libc::EINVAL };
    let g = c.cq.read().unwrap_or_else(|p| p.into_inner());
    let Some(inner) = g.as_ref() else { return libc::EINVAL };
    let mut wc = [verbs::Wc::ZERO; 1];
    loop {
        match inner.poll(&mut wc) {
            Ok(0) => return libc::ENOENT,
            Ok(_) => break,
            Err(e) if e.kind() == ErrorKind::Busy => core::hint::spin_loop(),
            Err(e) => return errno_of(&e),
        }
    }
    let w = c_wc(&wc[0]);
    let (wr_id, status) = (w.wr_id, w.status);
    *c.current.lock().unwrap_or_else(|p| p.into_inner()) = w;
    let ibv = c.ibv.get();
    // SAFETY: plain stores into the C struct's fields, which C reads after
    // this call returns (verbs.h: cq->wr_id, cq->status).
    unsafe { (*ibv).wr_id = wr_id };
    // SAFETY: as above.
    unsafe { (*ibv).status = status };
    0
}

/// `ibv_end_poll`: nothing to release (each poll took its completion).
unsafe extern "C" fn end_poll(_cq: *mut IbvCqEx) {}

/// The current completion of `cq` (zeroes for a pointer not ours).
fn current(cq: *mut IbvCqEx) -> IbvWc {
    match from_c(cq.cast()) {
        Some(c) => *c.current.lock().unwrap_or_else(|p| p.into_inner()),
        // SAFETY: IbvWc is plain integers: all-zero is valid.
        None => unsafe { core::mem::zeroed() },
    }
}

unsafe extern "C" fn read_opcode(cq: *mut IbvCqEx) -> c_int {
    current(cq).opcode
}
unsafe extern "C" fn read_vendor_err(cq: *mut IbvCqEx) -> u32 {
    current(cq).vendor_err
}
unsafe extern "C" fn read_byte_len(cq: *mut IbvCqEx) -> u32 {
    current(cq).byte_len
}
/// In network byte order, as C's `__be32`.
unsafe extern "C" fn read_imm_data(cq: *mut IbvCqEx) -> u32 {
    current(cq).imm_data
}
unsafe extern "C" fn read_qp_num(cq: *mut IbvCqEx) -> u32 {
    current(cq).qp_num
}
unsafe extern "C" fn read_src_qp(cq: *mut IbvCqEx) -> u32 {
    current(cq).src_qp
}
unsafe extern "C" fn read_wc_flags(cq: *mut IbvCqEx) -> core::ffi::c_uint {
    current(cq).wc_flags
}
unsafe extern "C" fn read_slid(cq: *mut IbvCqEx) -> u32 {
    u32::from(current(cq).slid)
}
unsafe extern "C" fn read_sl(cq: *mut IbvCqEx) -> u8 {
    current(cq).sl
}
unsafe extern "C" fn read_dlid_path_bits(cq: *mut IbvCqEx) -> u8 {
    current(cq).dlid_path_bits
}

/// The CQ behind `ibv_create_cq` and `create_cq_ex` (`ex`: with the
/// extended polling API; `opts`: `mlx5dv_create_cq`'s choices).
fn create(
    context: *mut IbvContext,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut IbvCompChannel,
    comp_vector: c_int,
    ex: Option<Option<&'static CPd>>,
    opts: CqOptions,
) -> *mut IbvCq {
    let Some(c) = context::from_c(context) else { return fail_null(libc::EINVAL) };
    let ch: Option<&'static CCompChannel> = if channel.is_null() {
        None
    } else {
        match comp_channel::from_c(channel) {
            Some(ch) => Some(ch),
            None => return fail_null(libc::EINVAL),
        }
    };
    let (Ok(cqe), Ok(vector)) = (u32::try_from(cqe), u32::try_from(comp_vector)) else {
        return fail_null(libc::EINVAL);
    };
    let arc = Arc::clone(&c.ctx);
    // SAFETY: the Context lives in `arc`'s allocation, which the box built
    // below keeps (field `_ctx`, dropped after `cq`) for as long as `cq`.
    let ctx: &'static Context = unsafe { &*Arc::as_ptr(&arc) };
    if let Some(ch) = ch {
        ch.hold();
    }
    let domain = ex.flatten();
    if let Some(d) = domain {
        d.hold();
    }
    let cq = match Cq::create_with(ctx, cqe, ch.map(|ch| &ch.ch), vector, opts) {
        Ok(cq) => cq,
        Err(e) => {
            if let Some(ch) = ch {
                ch.release();
            }
            if let Some(d) = domain {
                d.release();
            }
            return fail_null(errno_of(&e));
        }
    };
    // SAFETY: IbvCqEx is plain C data (pointers, integers, Option fn
    // pointers, pthread objects) for which all-zero is valid: NULL, 0,
    // None and glibc's PTHREAD_{MUTEX,COND}_INITIALIZER.
    let mut ibv: IbvCqEx = unsafe { core::mem::zeroed() };
    ibv.context = c.as_c();
    ibv.channel = channel;
    ibv.cq_context = cq_context;
    ibv.handle = cq.handle();
    ibv.cqe = cq.cqe() as c_int;
    if ex.is_some() {
        set_poll_api(&mut ibv);
    }
    let user_handle = cq.user_handle();
    let names = Names::new(ibv.context, ibv.handle);
    let b = Box::new(CCq {
        ibv: UnsafeCell::new(ibv),
        magic: AtomicU64::new(MAGIC),
        cq: RwLock::new(Some(cq)),
        live: AtomicPtr::new(core::ptr::null_mut()),
        users: AtomicU32::new(0),
        channel: ch,
        domain,
        user_handle,
        // SAFETY: IbvWc is plain integers: all-zero is valid.
        current: Mutex::new(unsafe { core::mem::zeroed() }),
        names,
        _ctx: arc,
    });
    {
        let g = b.cq.read().unwrap_or_else(|p| p.into_inner());
        if let Some(inner) = g.as_ref() {
            b.live.store(core::ptr::from_ref(inner).cast_mut(), Ordering::Release);
        }
    }
    let p = Box::into_raw(b);
    registry::insert(user_handle, Kind::Cq, p as usize);
    p.cast()
}

/// `ibv_resize_cq`: 0 or the errno value. Works while QPs and SRQs use the
/// CQ, as in rdma-core (`Cq::resize` takes `&self`); siw has no resize
/// (`EOPNOTSUPP`, before the fields are looked at, as libsiw).
pub(crate) extern "C" fn ibv_resize_cq(cq: *mut IbvCq, cqe: c_int) -> c_int {
    let Some(c) = from_c(cq) else { return fail_errno(libc::EINVAL) };
    if !c._ctx.provider_caps().cq_resize {
        return fail_errno(libc::EOPNOTSUPP);
    }
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    let Ok(cqe) = u32::try_from(cqe) else { return fail_errno(libc::EINVAL) };
    // The write lock serialises resizes (and their update of `cqe`) with
    // destroy; the CQ itself is only borrowed shared, as QPs borrow it.
    let g = c.cq.write().unwrap_or_else(|p| p.into_inner());
    let Some(inner) = g.as_ref() else { return fail_errno(libc::EINVAL) };
    match inner.resize(cqe) {
        Ok(()) => {
            // SAFETY: `cqe` is written under the write lock (held); C reads
            // it as it would rdma-core's update.
            unsafe { (*c.ibv.get()).cqe = inner.cqe() as c_int };
            0
        }
        Err(e) => fail_errno(errno_of(&e)),
    }
}

/// `ibv_destroy_cq`: 0 or the errno value (`EBUSY` while QPs or SRQs use
/// it, `ENOENT` when its fields name no CQ: the CQ stays valid). Waits for
/// the acknowledgement of every event the kernel delivered for it, as
/// rdma-core does.
pub(crate) extern "C" fn ibv_destroy_cq(cq: *mut IbvCq) -> c_int {
    let Some(c) = from_c(cq) else { return fail_errno(libc::EINVAL) };
    if !c.named() {
        return fail_errno(UNKNOWN);
    }
    let mut g = c.cq.write().unwrap_or_else(|p| p.into_inner());
    if c.users.load(Ordering::Acquire) != 0 {
        return fail_errno(libc::EBUSY);
    }
    c.live.store(core::ptr::null_mut(), Ordering::Release);
    let Some(inner) = g.take() else { return fail_errno(libc::EINVAL) };
    let done = match inner.destroy() {
        Ok(d) => d,
        Err(e) => {
            *g = Some(e.object);
            if let Some(back) = g.as_ref() {
                c.live.store(core::ptr::from_ref(back).cast_mut(), Ordering::Release);
            }
            return fail_errno(errno_of(&e.error));
        }
    };
    drop(g);
    if let Some(ch) = c.channel {
        ch.release();
    }
    if let Some(d) = c.domain {
        d.release();
    }
    registry::remove(c.user_handle);
    c.wait_acks(done.comp_events_reported, done.async_events_reported);
    c.magic.store(0, Ordering::Relaxed);
    // SAFETY: `cq` is the pointer Box::into_raw gave C for this live box
    // (from_c checked); the magic is cleared and the registry entry gone,
    // so nothing reaches it after; freed once.
    drop(unsafe { Box::from_raw(cq.cast::<CCq>()) });
    0
}

/// `ibv_get_cq_event`: waits for (or, on a non-blocking channel, takes)
/// the next completion event; sets `*cq` and `*cq_context`. 0, or -1 with
/// errno (`EAGAIN` when a non-blocking channel is empty).
///
/// # Safety
///
/// `cq` and `cq_context` are NULL or point to writable pointers.
pub(crate) unsafe extern "C" fn ibv_get_cq_event(
    channel: *mut IbvCompChannel,
    cq: *mut *mut IbvCq,
    cq_context: *mut *mut c_void,
) -> c_int {
    let Some(ch) = comp_channel::from_c(channel) else { return fail_neg1(libc::EINVAL) };
    if cq.is_null() || cq_context.is_null() {
        return fail_neg1(libc::EINVAL);
    }
    let handle = match ch.ch.read_event() {
        Ok(h) => h,
        Err(e) => return fail_neg1(errno_of(&e)),
    };
    let found = registry::with(handle, Kind::Cq, |addr| {
        if addr == 0 {
            return None;
        }
        // SAFETY: registry entries are live CCq boxes while the lock is held.
        let c = unsafe { &*(addr as *const CCq) };
        // the provider's part of reading an event (mlx5: the arm sequence
        // number of the next ibv_req_notify_cq, as libmlx5's cq_event);
        // the read lock is never held while the registry lock is taken
        // (destroy drops it first), so this order cannot deadlock
        if let Some(q) = c.cq.read().unwrap_or_else(|p| p.into_inner()).as_ref() {
            q.provider_event();
        }
        Some((c.as_c(), c.cq_context()))
    });
    let Some((p, ctx)) = found else { return fail_neg1(libc::EINVAL) };
    // SAFETY: non-NULL, the caller promises writable pointers.
    unsafe { cq.write(p) };
    // SAFETY: as above.
    unsafe { cq_context.write(ctx) };
    0
}

/// `ibv_ack_cq_events`: acknowledges `nevents` completion events of `cq`.
pub(crate) extern "C" fn ibv_ack_cq_events(cq: *mut IbvCq, nevents: u32) {
    if let Some(c) = from_c(cq) {
        c.ack(nevents, 0);
    }
}

/// The C completion for a Rust one (same fields; `imm_data` stays in
/// network order, as C has it).
#[inline(always)]
fn c_wc(w: &verbs::Wc) -> IbvWc {
    let a = w.as_abi();
    IbvWc {
        wr_id: a.wr_id,
        status: a.status as c_int,
        opcode: a.opcode as c_int,
        vendor_err: a.vendor_err,
        byte_len: a.byte_len,
        imm_data: a.ex,
        qp_num: a.qp_num,
        src_qp: a.src_qp,
        wc_flags: a.wc_flags,
        pkey_index: a.pkey_index,
        slid: a.slid,
        sl: a.sl,
        dlid_path_bits: a.dlid_path_bits,
    }
}

// `verbs::Wc` has the layout of `struct ibv_wc` (the kernel's
// `ib_uverbs_wc`, which rxe writes): `poll_cq` polls into the caller's array.
const _: () = {
    use core::mem::{offset_of, size_of};
    use verbs::abi::uverbs::Wc as K;
    assert!(size_of::<IbvWc>() == size_of::<verbs::Wc>() && size_of::<K>() == size_of::<verbs::Wc>());
    assert!(core::mem::align_of::<IbvWc>() == core::mem::align_of::<verbs::Wc>());
    assert!(offset_of!(IbvWc, wr_id) == offset_of!(K, wr_id));
    assert!(offset_of!(IbvWc, status) == offset_of!(K, status));
    assert!(offset_of!(IbvWc, opcode) == offset_of!(K, opcode));
    assert!(offset_of!(IbvWc, vendor_err) == offset_of!(K, vendor_err));
    assert!(offset_of!(IbvWc, byte_len) == offset_of!(K, byte_len));
    assert!(offset_of!(IbvWc, imm_data) == offset_of!(K, ex));
    assert!(offset_of!(IbvWc, qp_num) == offset_of!(K, qp_num));
    assert!(offset_of!(IbvWc, src_qp) == offset_of!(K, src_qp));
    assert!(offset_of!(IbvWc, wc_flags) == offset_of!(K, wc_flags));
    assert!(offset_of!(IbvWc, pkey_index) == offset_of!(K, pkey_index));
    assert!(offset_of!(IbvWc, slid) == offset_of!(K, slid));
    assert!(offset_of!(IbvWc, sl) == offset_of!(K, sl));
    assert!(offset_of!(IbvWc, dlid_path_bits) == offset_of!(K, dlid_path_bits));
};

/// `ibv_context_ops.poll_cq` (behind the `ibv_poll_cq` inline): up to
/// `num_entries` completions into `wc`; their number, or -1 with errno.
/// The completions are copied from the ring straight into the caller's
/// array (`verbs::Wc` is `struct ibv_wc`, asserted above), which is looked
/// at only if the CQ is not empty: an empty CQ answers 0 whatever
/// `num_entries` and `wc` are (as rdma-core's providers, which never touch
/// the array then), with no call out of this function. The copy is one
/// jump to the provider's out-of-line part, which answers the count
/// itself. Pollers of one CQ on several threads wait for each other
/// (rdma-core takes a spinlock): a `Busy` claim is waited out, never
/// reported.
///
/// # Safety
///
/// `wc` points to `num_entries` writable `struct ibv_wc` (when > 0); the
/// CQ is not destroyed during the call (C's rule).
pub(crate) unsafe extern "C" fn poll_cq(cq: *mut IbvCq, num_entries: c_int, wc: *mut IbvWc) -> c_int {
    let Some(c) = from_c(cq) else { return einval() };
    // SAFETY: the caller's promise: no destroy during this call.
    let Some(inner) = (unsafe { c.live() }) else { return einval() };
    inner.poll_c(
        || 0,
        // SAFETY: forwarded caller contract.
        || unsafe { c_array(num_entries, wc) },
        // SAFETY: forwarded caller contract.
        |e| unsafe { poll_failed(inner, num_entries, wc, e) },
    )
}

/// The caller's array of [`poll_cq`] as the slots of a poll, or the
/// maker of the answer when there is none: 0 for `num_entries <= 0`, -1
/// with `EINVAL` for a NULL `wc`.
///
/// # Safety
///
/// As [`poll_cq`].
#[inline(always)]
unsafe fn c_array<'o>(num_entries: c_int, wc: *mut IbvWc) -> Result<&'o mut [MaybeUninit<verbs::Wc>], extern "C" fn() -> c_int> {
    if num_entries <= 0 {
        return Err(no_entries);
    }
    if wc.is_null() {
        return Err(einval);
    }
    // SAFETY: the caller promises `num_entries` (> 0) writable entries,
    // used by nothing else during the call; MaybeUninit: nothing is read,
    // and `verbs::Wc` has `ibv_wc`'s size, alignment and field offsets.
    Ok(unsafe { core::slice::from_raw_parts_mut(wc.cast::<MaybeUninit<verbs::Wc>>(), num_entries as usize) })
}

/// 0, [`poll_cq`]'s answer to `num_entries <= 0`.
extern "C" fn no_entries() -> c_int {
    0
}

/// -1 with `EINVAL` (a bad handle or array), out of line: the poll's own
/// code only jumps here. This and [`poll_failed`] are `extern "C"` (an
/// unwind would abort there, as in [`poll_cq`]): a call that may unwind
/// out of an `extern "C"` function cannot be a jump, and so needs a
/// stack frame.
#[cold]
#[inline(never)]
extern "C" fn einval() -> c_int {
    // Opaque: a known constant answer would keep the callers from
    // jumping here (they would return the constant themselves).
    core::hint::black_box(fail_neg1(libc::EINVAL))
}

/// [`poll_cq`] of a CQ that could not be looked at: being resized by
/// another thread (`Busy`: the general way, retried) or dead (-1 with
/// errno).
///
/// # Safety
///
/// As [`poll_cq`].
#[allow(improper_ctypes_definitions)]
#[cold]
#[inline(never)]
unsafe extern "C" fn poll_failed(inner: &Cq<'static>, num_entries: c_int, wc: *mut IbvWc, error: fn() -> verbs::Error) -> c_int {
    let e = error();
    if e.kind() != ErrorKind::Busy {
        return fail_neg1(errno_of(&e));
    }
    // SAFETY: forwarded caller contract.
    match unsafe { c_array(num_entries, wc) } {
        Ok(out) => poll_again(inner, out),
        Err(answer) => answer(),
    }
}

/// [`poll_cq`] when the straight poll could not: retries while another
/// thread holds the CQ or resizes it (`Busy`), else -1 with errno.
#[cold]
#[inline(never)]
fn poll_again(inner: &Cq<'static>, out: &mut [MaybeUninit<verbs::Wc>]) -> c_int {
    loop {
        match inner.poll_uninit(out) {
            Ok(n) => return n as c_int,
            Err(e) if e.kind() == ErrorKind::Busy => core::hint::spin_loop(),
            Err(e) => return fail_neg1(errno_of(&e)),
        }
    }
}

/// `ibv_context_ops.req_notify_cq` (behind `ibv_req_notify_cq`): 0 or the
/// errno value. On rxe this is a kernel command naming the CQ by its C
/// fields (`ENOENT` when they name none, see `names.rs`); siw arms the CQ
/// through its mapped control word, which reads neither.
pub(crate) extern "C" fn req_notify_cq(cq: *mut IbvCq, solicited_only: c_int) -> c_int {
    let Some(c) = from_c(cq) else { return fail_errno(libc::EINVAL) };
    if c._ctx.provider_caps().notify_names_cq && !c.named() {
        return fail_errno(UNKNOWN);
    }
    let g = c.cq.read().unwrap_or_else(|p| p.into_inner());
    let Some(inner) = g.as_ref() else { return fail_errno(libc::EINVAL) };
    match inner.req_notify(solicited_only != 0) {
        Ok(()) => 0,
        Err(e) => fail_errno(errno_of(&e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ptr::null_mut;

    #[test]
    fn null_handles_are_refused() {
        assert!(ibv_create_cq(null_mut(), 1, null_mut(), null_mut(), 0).is_null());
        assert_eq!(ibv_destroy_cq(null_mut()), libc::EINVAL);
        assert_eq!(ibv_resize_cq(null_mut(), 4), libc::EINVAL);
        assert_eq!(req_notify_cq(null_mut(), 0), libc::EINVAL);
        ibv_ack_cq_events(null_mut(), 1);
        let mut wc = IbvWc::default();
        // SAFETY: NULL CQ: refused before `wc` is used.
        assert_eq!(unsafe { poll_cq(null_mut(), 1, &mut wc) }, -1);
        let (mut cq, mut ctx) = (null_mut(), null_mut());
        // SAFETY: NULL channel: refused first.
        assert_eq!(unsafe { ibv_get_cq_event(null_mut(), &mut cq, &mut ctx) }, -1);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EINVAL));
    }
}
