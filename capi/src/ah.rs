//! # Safety
//!
//! Address handles: `ibv_create_ah`, `ibv_destroy_ah`,
//! `ibv_init_ah_from_wc`, `ibv_create_ah_from_wc`.
//!
//! An AH is a boxed [`CAh`] whose first field is the C `struct ibv_ah`;
//! its `Ah<'static>` borrows the `Pd` of a [`CPd`] counted in its
//! `users`. The `Ah` never changes after creation, so UD posts read it
//! through a shared reference; `ibv_destroy_ah` takes the box back
//! (`Box::from_raw`), and gives it back unchanged (`Box::into_raw`, same
//! address) if the kernel refuses. As in C, the caller must not destroy
//! an AH that another thread is posting with.
#![allow(unsafe_code)]

use core::ffi::c_int;
use core::sync::atomic::{AtomicU64, Ordering};

use verbs::ah::{GlobalRoute, WcInfo, GRH_LEN};
use verbs::{Ah, AhAttr};

use crate::abi::device::{IbvContext, IbvGid};
use crate::abi::objects::{IbvAh, IbvAhAttr, IbvGlobalRoute, IbvPd};
use crate::abi::wr::IbvWc;
use crate::context;
use crate::errno::{errno_of, fail_errno, fail_neg1, fail_null};
use crate::names::{Names, UNKNOWN};
use crate::pd::{self, CPd};

const MAGIC: u64 = u64::from_be_bytes(*b"verbsAH\0");

/// An address handle: the C view first, then the Rust one.
#[repr(C)]
pub(crate) struct CAh {
    ibv: IbvAh,
    magic: AtomicU64,
    /// `None` only transiently inside `ibv_destroy_ah`.
    pub(crate) ah: Option<Ah<'static>>,
    pd: &'static CPd,
}

/// The [`CAh`] behind a C `struct ibv_ah *`, if it is a live one of ours.
#[inline]
pub(crate) fn from_c<'a>(p: *mut IbvAh) -> Option<&'a CAh> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every ibv_ah we hand out is the first field of a live boxed
    // CAh (repr(C)); the magic check rejects destroyed ones still mapped.
    let c = unsafe { &*p.cast::<CAh>() };
    (c.magic.load(Ordering::Relaxed) == MAGIC).then_some(c)
}

fn attr_of(a: &IbvAhAttr) -> AhAttr {
    AhAttr {
        grh: (a.is_global != 0).then_some(GlobalRoute {
            dgid: a.grh.dgid.raw,
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
        }),
        dlid: a.dlid,
        sl: a.sl,
        src_path_bits: a.src_path_bits,
        static_rate: a.static_rate,
        port_num: a.port_num,
    }
}

fn c_attr(a: &AhAttr) -> IbvAhAttr {
    let g = a.grh.unwrap_or_default();
    IbvAhAttr {
        grh: IbvGlobalRoute {
            dgid: IbvGid { raw: g.dgid },
            flow_label: g.flow_label,
            sgid_index: g.sgid_index,
            hop_limit: g.hop_limit,
            traffic_class: g.traffic_class,
        },
        dlid: a.dlid,
        sl: a.sl,
        src_path_bits: a.src_path_bits,
        static_rate: a.static_rate,
        is_global: u8::from(a.grh.is_some()),
        port_num: a.port_num,
    }
}

fn create(pd: *mut IbvPd, attr: &AhAttr) -> *mut IbvAh {
    let Some(cpd) = pd::from_c(pd) else { return fail_null(libc::EINVAL) };
    let cpd: &'static CPd = cpd;
    if !cpd.provider().caps().address_handles {
        // libsiw has no create_ah: rdma-core answers before the kernel.
        return fail_null(libc::EOPNOTSUPP);
    }
    if !cpd.named() {
        return fail_null(UNKNOWN);
    }
    let Some(rpd) = cpd.pd() else { return fail_null(libc::EINVAL) };
    cpd.hold();
    let ah = match Ah::create(rpd, attr) {
        Ok(a) => a,
        Err(e) => {
            cpd.release();
            return fail_null(errno_of(&e));
        }
    };
    let ibv = IbvAh { context: cpd.context(), pd, handle: ah.handle() };
    Box::into_raw(Box::new(CAh { ibv, magic: AtomicU64::new(MAGIC), ah: Some(ah), pd: cpd })).cast()
}

/// `ibv_create_ah`: NULL with errno on failure.
///
/// # Safety
///
/// `attr` is NULL or points to a readable `struct ibv_ah_attr`.
pub(crate) unsafe extern "C" fn ibv_create_ah(pd: *mut IbvPd, attr: *mut IbvAhAttr) -> *mut IbvAh {
    if attr.is_null() {
        return fail_null(libc::EINVAL);
    }
    // SAFETY: non-NULL, the caller promises a readable attr.
    let a = attr_of(unsafe { &*attr });
    create(pd, &a)
}

/// `ibv_destroy_ah`: 0 or the errno value (the AH then stays valid).
pub(crate) extern "C" fn ibv_destroy_ah(ah: *mut IbvAh) -> c_int {
    let Some(c) = from_c(ah) else { return fail_errno(libc::EINVAL) };
    if c.ah.as_ref().is_some_and(|a| !Names::new(c.pd.context(), a.handle()).said_by(c.ibv.context, c.ibv.handle)) {
        // The C view names another AH (see `names.rs`): the kernel's answer.
        return fail_errno(UNKNOWN);
    }
    // SAFETY: `ah` is the pointer Box::into_raw gave C for this live box
    // (from_c checked); C must not use it concurrently (module docs).
    let mut b = unsafe { Box::from_raw(ah.cast::<CAh>()) };
    let Some(inner) = b.ah.take() else {
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
            b.ah = Some(e.object);
            // Same address: C keeps using its pointer.
            let _ = Box::into_raw(b);
            fail_errno(errno_of(&e.error))
        }
    }
}

fn wc_info(wc: &IbvWc) -> WcInfo {
    WcInfo {
        src_qp: wc.src_qp,
        slid: wc.slid,
        sl: wc.sl,
        dlid_path_bits: wc.dlid_path_bits,
        wc_flags: wc.wc_flags,
        pkey_index: wc.pkey_index,
    }
}

/// The attributes answering the sender of `wc` (with its GRH, if `grh`
/// is not NULL and the completion had one).
///
/// # Safety
///
/// `wc` points to a readable `struct ibv_wc`; `grh` is NULL or points to
/// 40 readable bytes.
unsafe fn from_wc(ctx: &verbs::Context, port_num: u8, wc: *const IbvWc, grh: *const u8) -> verbs::Result<AhAttr> {
    // SAFETY: the caller's promise.
    let info = wc_info(unsafe { &*wc });
    // SAFETY: the caller's promise: NULL or GRH_LEN readable bytes.
    let g = unsafe { grh.cast::<[u8; GRH_LEN]>().as_ref() };
    ctx.init_ah_from_wc(port_num, &info, g)
}

/// `ibv_init_ah_from_wc`: 0, or -1 with errno.
///
/// # Safety
///
/// `wc`, `ah_attr` NULL or valid; `grh` NULL or 40 readable bytes.
pub(crate) unsafe extern "C" fn ibv_init_ah_from_wc(
    context: *mut IbvContext,
    port_num: u8,
    wc: *mut IbvWc,
    grh: *mut u8,
    ah_attr: *mut IbvAhAttr,
) -> c_int {
    let Some(c) = context::from_c(context) else { return fail_neg1(libc::EINVAL) };
    if wc.is_null() || ah_attr.is_null() {
        return fail_neg1(libc::EINVAL);
    }
    // SAFETY: forwarded caller contract.
    match unsafe { from_wc(&c.ctx, port_num, wc, grh) } {
        Ok(a) => {
            // SAFETY: non-NULL, the caller promises a writable attr.
            unsafe { ah_attr.write(c_attr(&a)) };
            0
        }
        Err(e) => fail_neg1(errno_of(&e)),
    }
}

/// `ibv_create_ah_from_wc`: NULL with errno on failure.
///
/// # Safety
///
/// As [`ibv_init_ah_from_wc`].
pub(crate) unsafe extern "C" fn ibv_create_ah_from_wc(pd: *mut IbvPd, wc: *mut IbvWc, grh: *mut u8, port_num: u8) -> *mut IbvAh {
    let Some(cpd) = pd::from_c(pd) else { return fail_null(libc::EINVAL) };
    let Some(rpd) = cpd.pd() else { return fail_null(libc::EINVAL) };
    if wc.is_null() {
        return fail_null(libc::EINVAL);
    }
    // SAFETY: forwarded caller contract.
    match unsafe { from_wc(rpd.context(), port_num, wc, grh) } {
        Ok(a) => create(pd, &a),
        Err(e) => fail_null(errno_of(&e)),
    }
}
