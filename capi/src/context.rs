//! # Safety
//!
//! Contexts: `ibv_open_device`, `ibv_close_device` and the device queries
//! (`ibv_query_port` and `verbs_context.query_port`,
//! `ibv_query_gid`, `_ibv_query_gid_ex`, `_ibv_query_gid_table`,
//! `ibv_query_gid_type`, `ibv_query_pkey`, `ibv_get_pkey_index`).
//!
//! A context is a boxed [`CContext`] whose first field is the C
//! `struct verbs_context`; C gets `&vctx.context` (the `ibv_context`), and
//! [`from_c`] walks back by `offsetof(struct verbs_context, context)`, the
//! container_of the inline functions of verbs.h also do. [`from_c`]
//! accepts only non-NULL pointers whose [`CContext::magic`] is intact; the
//! magic is cleared before the box is freed. Children (PDs, channels) hold
//! an `Arc` of [`CContext::ctx`], so the `verbs::Context` they borrow
//! outlives them whatever order C frees things in.
#![allow(unsafe_code)]

use core::ffi::{c_int, c_uint, c_void};
use core::mem::{offset_of, size_of};
use std::os::fd::{AsFd, AsRawFd};
use std::sync::Arc;

use verbs::Context;

use crate::abi::device::{IbvContext, IbvDevice, IbvGid, IbvGidEntry, IbvPortAttr, VerbsContext};
use crate::device::{lookup, CDevice};
use crate::errno::{errno_of, fail_errno, fail_neg1, fail_null};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsCTX");

/// An open device: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CContext {
    vctx: VerbsContext,
    magic: u64,
    pub(crate) ctx: Arc<Context>,
    pub(crate) device: &'static CDevice,
}

/// The [`CContext`] behind a C `struct ibv_context *`, if it is a live one of ours.
pub(crate) fn from_c<'a>(p: *mut IbvContext) -> Option<&'a CContext> {
    if p.is_null() {
        return None;
    }
    let c = p.wrapping_byte_sub(offset_of!(VerbsContext, context)).cast::<CContext>();
    // SAFETY: every ibv_context we hand out is the `vctx.context` of a live
    // boxed CContext (repr(C), vctx first), so `c` is that box's address;
    // the magic check rejects closed contexts whose memory is still mapped.
    let c = unsafe { &*c };
    (c.magic == MAGIC).then_some(c)
}

impl CContext {
    /// The `struct ibv_context *` C sees.
    pub(crate) fn as_c(&self) -> *mut IbvContext {
        &self.vctx.context as *const IbvContext as *mut IbvContext
    }
}

/// `ibv_open_device`: opens the device and creates its kernel context.
pub(crate) extern "C" fn ibv_open_device(device: *mut IbvDevice) -> *mut IbvContext {
    let Some(dev) = lookup(device) else { return fail_null(libc::EINVAL) };
    let ctx = match Context::open(&dev.dev) {
        Ok(c) => Arc::new(c),
        Err(e) => return fail_null(errno_of(&e)),
    };
    // SAFETY: VerbsContext is plain C data: function pointers (Option, None
    // = all zeros), raw pointers, integers and a pthread_mutex_t, for which
    // all zeros is PTHREAD_MUTEX_INITIALIZER in glibc.
    let mut vctx: VerbsContext = unsafe { core::mem::zeroed() };
    vctx.query_port = Some(query_port_ex);
    vctx.query_device_ex = Some(crate::query_device::query_device_ex);
    type CreateCqEx = unsafe extern "C" fn(*mut IbvContext, *mut crate::abi::objects::IbvCqInitAttrEx) -> *mut crate::abi::objects::IbvCqEx;
    let create_cq_ex: CreateCqEx = crate::cq::create_cq_ex;
    // SAFETY: only the pointer's type is erased: verbs.h's ibv_create_cq_ex
    // calls verbs_context.create_cq_ex with exactly this signature.
    vctx.create_cq_ex = Some(unsafe { core::mem::transmute::<CreateCqEx, unsafe extern "C" fn()>(create_cq_ex) });
    type CreateQpEx = unsafe extern "C" fn(*mut IbvContext, *mut crate::abi::objects::IbvQpInitAttrEx) -> *mut crate::abi::objects::IbvQp;
    let create_qp_ex: CreateQpEx = crate::qp::create_qp_ex;
    // SAFETY: only the pointer's type is erased: verbs.h's ibv_create_qp_ex
    // calls verbs_context.create_qp_ex with exactly this signature.
    vctx.create_qp_ex = Some(unsafe { core::mem::transmute::<CreateQpEx, unsafe extern "C" fn()>(create_qp_ex) });
    type AllocTd = unsafe extern "C" fn(*mut IbvContext, *mut crate::abi::objects::IbvTdInitAttr) -> *mut crate::abi::objects::IbvTd;
    let alloc_td: AllocTd = crate::domain::alloc_td;
    // SAFETY: only the pointer's type is erased: verbs.h's ibv_alloc_td
    // calls verbs_context.alloc_td with exactly this signature.
    vctx.alloc_td = Some(unsafe { core::mem::transmute::<AllocTd, unsafe extern "C" fn()>(alloc_td) });
    type DeallocTd = extern "C" fn(*mut crate::abi::objects::IbvTd) -> c_int;
    let dealloc_td: DeallocTd = crate::domain::dealloc_td;
    // SAFETY: as above (ibv_dealloc_td, verbs_context.dealloc_td).
    vctx.dealloc_td = Some(unsafe { core::mem::transmute::<DeallocTd, unsafe extern "C" fn()>(dealloc_td) });
    type AllocParent = unsafe extern "C" fn(*mut IbvContext, *mut crate::abi::objects::IbvParentDomainInitAttr) -> *mut crate::abi::objects::IbvPd;
    let alloc_parent: AllocParent = crate::domain::alloc_parent_domain;
    // SAFETY: as above (ibv_alloc_parent_domain,
    // verbs_context.alloc_parent_domain).
    vctx.alloc_parent_domain = Some(unsafe { core::mem::transmute::<AllocParent, unsafe extern "C" fn()>(alloc_parent) });
    vctx.sz = size_of::<VerbsContext>();
    vctx.context.device = device;
    vctx.context.ops = crate::ops::context_ops();
    vctx.context.cmd_fd = ctx.channel().as_fd().as_raw_fd();
    vctx.context.async_fd = ctx.async_fd().as_raw_fd();
    vctx.context.num_comp_vectors = ctx.num_comp_vectors() as c_int;
    // __VERBS_ABI_IS_EXTENDED: tells verbs_get_ctx() this is a verbs_context.
    vctx.context.abi_compat = usize::MAX as *mut c_void;
    let b = Box::new(CContext { vctx, magic: MAGIC, ctx, device: dev });
    let p = Box::into_raw(b);
    // SAFETY: p is the box just leaked; taking a field's address.
    unsafe { &raw mut (*p).vctx.context }
}

/// `ibv_close_device`: frees the context (the device file closes when the
/// last object made from it is gone). 0, or -1 with `EINVAL` for a pointer
/// that is not an open context.
pub(crate) extern "C" fn ibv_close_device(context: *mut IbvContext) -> c_int {
    let Some(c) = from_c(context) else { return fail_neg1(libc::EINVAL) };
    let p = c as *const CContext as *mut CContext;
    // SAFETY: p is a live box from ibv_open_device (from_c checked the
    // magic); clearing the magic first makes later use of this pointer fail
    // from_c while the memory is still ours.
    unsafe { (*p).magic = 0 };
    // SAFETY: as above; the box is freed once, p is not used after.
    drop(unsafe { Box::from_raw(p) });
    0
}

fn port_attr(c: &CContext, port: u8) -> Result<IbvPortAttr, c_int> {
    let p = c.ctx.query_port(port).map_err(|e| errno_of(&e))?;
    Ok(IbvPortAttr {
        state: p.state.into(),
        max_mtu: (p.max_mtu as u8).into(),
        active_mtu: (p.active_mtu as u8).into(),
        gid_tbl_len: p.gid_tbl_len as c_int,
        port_cap_flags: p.port_cap_flags,
        max_msg_sz: p.max_msg_sz,
        bad_pkey_cntr: p.bad_pkey_cntr,
        qkey_viol_cntr: p.qkey_viol_cntr,
        pkey_tbl_len: p.pkey_tbl_len,
        lid: p.lid,
        sm_lid: p.sm_lid,
        lmc: p.lmc,
        max_vl_num: p.max_vl_num,
        sm_sl: p.sm_sl,
        subnet_timeout: p.subnet_timeout,
        init_type_reply: p.init_type_reply,
        active_width: p.active_width,
        active_speed: p.active_speed,
        phys_state: p.phys_state,
        link_layer: p.link_layer,
        flags: p.flags,
        port_cap_flags2: p.port_cap_flags2,
    })
}

/// `verbs_context.query_port` (what the `ibv_query_port` inline of verbs.h
/// calls): writes the first `attr_len` bytes of `struct ibv_port_attr`.
/// 0 or the errno value.
///
/// # Safety
///
/// `attr` is NULL or points to `attr_len` writable bytes.
pub(crate) unsafe extern "C" fn query_port_ex(
    context: *mut IbvContext,
    port_num: u8,
    attr: *mut IbvPortAttr,
    attr_len: usize,
) -> c_int {
    let Some(c) = from_c(context) else { return fail_errno(libc::EINVAL) };
    if attr.is_null() {
        return fail_errno(libc::EINVAL);
    }
    match port_attr(c, port_num) {
        Ok(a) => {
            let n = attr_len.min(size_of::<IbvPortAttr>());
            // SAFETY: `a` is a local of size_of::<IbvPortAttr>() >= n bytes;
            // the caller promises attr_len >= n writable bytes at attr.
            unsafe { core::ptr::copy_nonoverlapping((&raw const a).cast::<u8>(), attr.cast::<u8>(), n) };
            0
        }
        Err(e) => fail_errno(e),
    }
}

/// Size of rdma-core's `struct _compat_ibv_port_attr` (`ibv_port_attr` up
/// to `link_layer`, padded), what the exported `ibv_query_port` writes.
const COMPAT_PORT_ATTR_LEN: usize = offset_of!(IbvPortAttr, port_cap_flags2);

/// `ibv_query_port` (the exported symbol, `struct _compat_ibv_port_attr`).
///
/// # Safety
///
/// `attr` is NULL or points to a writable `struct _compat_ibv_port_attr`.
pub(crate) unsafe extern "C" fn ibv_query_port(context: *mut IbvContext, port_num: u8, attr: *mut IbvPortAttr) -> c_int {
    // SAFETY: forwarded caller contract; the compat struct is this long.
    unsafe { query_port_ex(context, port_num, attr, COMPAT_PORT_ATTR_LEN) }
}

/// `ibv_query_gid`: 0, or -1 with errno; an empty slot reads as zeros.
///
/// # Safety
///
/// `gid` is NULL or points to a writable `union ibv_gid`.
pub(crate) unsafe extern "C" fn ibv_query_gid(context: *mut IbvContext, port_num: u8, index: c_int, gid: *mut IbvGid) -> c_int {
    let Some(c) = from_c(context) else { return fail_neg1(libc::EINVAL) };
    if gid.is_null() || index < 0 {
        return fail_neg1(libc::EINVAL);
    }
    match c.ctx.query_gid(port_num, index as u32) {
        Ok(raw) => {
            // SAFETY: non-NULL, the caller promises a writable ibv_gid.
            unsafe { gid.write(IbvGid { raw }) };
            0
        }
        Err(e) => fail_neg1(errno_of(&e)),
    }
}

/// `ibv_query_gid_type` (IBVERBS_PRIVATE_34): 0 = IB/RoCE v1, 1 = RoCE v2;
/// an empty slot reads as IB/RoCE v1. 0, or -1 with errno.
///
/// # Safety
///
/// `ty` is NULL or points to a writable `int`-sized enum.
pub(crate) unsafe extern "C" fn ibv_query_gid_type(context: *mut IbvContext, port_num: u8, index: c_uint, ty: *mut c_int) -> c_int {
    let Some(c) = from_c(context) else { return fail_neg1(libc::EINVAL) };
    if ty.is_null() {
        return fail_neg1(libc::EINVAL);
    }
    let v = match c.ctx.query_gid_ex(port_num, index) {
        Ok(e) => c_int::from(e.gid_type == 2),
        Err(e) if e.errno() == Some(verbs::error::Errno::NODATA) => 0,
        Err(e) => return fail_neg1(errno_of(&e)),
    };
    // SAFETY: non-NULL, the caller promises a writable enum.
    unsafe { ty.write(v) };
    0
}

fn c_entry(e: &verbs::GidEntry) -> IbvGidEntry {
    IbvGidEntry {
        gid: IbvGid { raw: e.gid },
        gid_index: e.gid_index,
        port_num: e.port_num,
        gid_type: e.gid_type,
        ndev_ifindex: e.ndev_ifindex,
    }
}

/// `_ibv_query_gid_ex` (behind the `ibv_query_gid_ex` inline): one GID
/// entry; 0 or the errno value (`ENODATA` for an empty slot). `flags` must be 0.
///
/// # Safety
///
/// `entry` is NULL or points to `entry_size` writable bytes.
pub(crate) unsafe extern "C" fn _ibv_query_gid_ex(
    context: *mut IbvContext,
    port_num: u32,
    gid_index: u32,
    entry: *mut IbvGidEntry,
    flags: u32,
    entry_size: usize,
) -> c_int {
    let Some(c) = from_c(context) else { return fail_errno(libc::EINVAL) };
    if entry.is_null() || flags != 0 || entry_size < size_of::<IbvGidEntry>() {
        return fail_errno(libc::EINVAL);
    }
    let Ok(port) = u8::try_from(port_num) else { return fail_errno(libc::EINVAL) };
    match c.ctx.query_gid_ex(port, gid_index) {
        Ok(e) => {
            // SAFETY: non-NULL and at least size_of::<IbvGidEntry>() writable bytes.
            unsafe { entry.write_unaligned(c_entry(&e)) };
            0
        }
        Err(e) => fail_errno(errno_of(&e)),
    }
}

/// `_ibv_query_gid_table` (behind `ibv_query_gid_table`): the valid GIDs of
/// every port; their number, or a negative errno.
///
/// # Safety
///
/// `entries` is NULL or points to `max_entries` writable entries of `entry_size` bytes.
pub(crate) unsafe extern "C" fn _ibv_query_gid_table(
    context: *mut IbvContext,
    entries: *mut IbvGidEntry,
    max_entries: usize,
    flags: u32,
    entry_size: usize,
) -> isize {
    let Some(c) = from_c(context) else { return -(fail_errno(libc::EINVAL) as isize) };
    if (entries.is_null() && max_entries > 0) || flags != 0 || entry_size < size_of::<IbvGidEntry>() {
        return -(fail_errno(libc::EINVAL) as isize);
    }
    let mut buf = vec![verbs::GidEntry::default(); max_entries];
    match c.ctx.query_gid_table(&mut buf) {
        Ok(n) => {
            for (i, e) in buf[..n].iter().enumerate() {
                // SAFETY: i < n <= max_entries, each slot entry_size bytes,
                // at least an IbvGidEntry, writable per the caller.
                let slot = entries.wrapping_byte_add(i * entry_size);
                // SAFETY: (see above) slot is inside the caller's array.
                unsafe { slot.write_unaligned(c_entry(e)) };
            }
            n as isize
        }
        Err(e) => -(fail_errno(errno_of(&e)) as isize),
    }
}

/// `ibv_query_pkey`: the P_Key (big-endian) from sysfs; 0, or -1 with errno.
///
/// # Safety
///
/// `pkey` is NULL or points to a writable `__be16`.
pub(crate) unsafe extern "C" fn ibv_query_pkey(context: *mut IbvContext, port_num: u8, index: c_int, pkey: *mut u16) -> c_int {
    let Some(c) = from_c(context) else { return fail_neg1(libc::EINVAL) };
    let Ok(index) = u16::try_from(index) else { return fail_neg1(libc::EINVAL) };
    if pkey.is_null() {
        return fail_neg1(libc::EINVAL);
    }
    match c.ctx.query_pkey(port_num, index) {
        Ok(v) => {
            // SAFETY: non-NULL, the caller promises a writable __be16.
            unsafe { pkey.write_unaligned(v.to_be()) };
            0
        }
        Err(e) => fail_neg1(errno_of(&e)),
    }
}

/// `ibv_get_pkey_index`: the index of P_Key `pkey` (big-endian) in the
/// port's table, or -1 with errno once the table ends (`ENOENT` from sysfs).
pub(crate) extern "C" fn ibv_get_pkey_index(context: *mut IbvContext, port_num: u8, pkey: u16) -> c_int {
    let Some(c) = from_c(context) else { return fail_neg1(libc::EINVAL) };
    for i in 0..=u16::MAX {
        match c.ctx.query_pkey(port_num, i) {
            Ok(v) if v.to_be() == pkey => return c_int::from(i),
            Ok(_) => {}
            Err(e) => return fail_neg1(errno_of(&e)),
        }
    }
    fail_neg1(libc::ENOENT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ptr::{null, null_mut};

    fn errno() -> Option<i32> {
        std::io::Error::last_os_error().raw_os_error()
    }

    /// C callers passing NULL get EINVAL in the verb's failure convention,
    /// never a crash.
    #[test]
    fn null_handles_and_outputs_are_refused() {
        assert!(ibv_open_device(null_mut()).is_null());
        assert_eq!(errno(), Some(libc::EINVAL));
        assert_eq!(ibv_close_device(null_mut()), -1);
        let mut port = IbvPortAttr::default();
        // SAFETY: NULL context: refused before any pointer is used.
        assert_eq!(unsafe { query_port_ex(null_mut(), 1, &mut port, size_of::<IbvPortAttr>()) }, libc::EINVAL);
        // SAFETY: as above.
        assert_eq!(unsafe { ibv_query_port(null_mut(), 1, &mut port) }, libc::EINVAL);
        let mut gid = IbvGid::default();
        // SAFETY: as above.
        assert_eq!(unsafe { ibv_query_gid(null_mut(), 1, 0, &mut gid) }, -1);
        let mut ty = 0;
        // SAFETY: as above.
        assert_eq!(unsafe { ibv_query_gid_type(null_mut(), 1, 0, &mut ty) }, -1);
        let mut e = IbvGidEntry::default();
        // SAFETY: as above.
        assert_eq!(unsafe { _ibv_query_gid_ex(null_mut(), 1, 0, &mut e, 0, size_of::<IbvGidEntry>()) }, libc::EINVAL);
        // SAFETY: as above.
        assert_eq!(unsafe { _ibv_query_gid_table(null_mut(), &mut e, 1, 0, size_of::<IbvGidEntry>()) }, -(libc::EINVAL as isize));
        let mut pkey = 0u16;
        // SAFETY: as above.
        assert_eq!(unsafe { ibv_query_pkey(null_mut(), 1, 0, &mut pkey) }, -1);
        assert_eq!(ibv_get_pkey_index(null_mut(), 1, 0xffff), -1);
        assert_eq!(errno(), Some(libc::EINVAL));
        assert!(crate::pd::ibv_alloc_pd(null_mut()).is_null());
        assert_eq!(crate::pd::ibv_dealloc_pd(null_mut()), libc::EINVAL);
        assert!(crate::comp_channel::ibv_create_comp_channel(null_mut()).is_null());
        assert_eq!(crate::comp_channel::ibv_destroy_comp_channel(null_mut()), libc::EINVAL);
        // SAFETY: as above.
        assert_eq!(unsafe { crate::query_device::ibv_query_device(null_mut(), null_mut()) }, libc::EINVAL);
        // SAFETY: as above.
        assert_eq!(unsafe { crate::query_device::query_device_ex(null_mut(), null(), null_mut(), 0) }, libc::EINVAL);
    }
}
