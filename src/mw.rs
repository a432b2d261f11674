//! Memory windows (`struct ibv_mw`): `ibv_alloc_mw`, `ibv_dealloc_mw`.
//!
//! A memory window grants remote access to part of a memory region once
//! it is bound (type 1 with `ibv_bind_mw`, type 2 with a bind work
//! request on a QP — both data-path operations). rxe implements both
//! types; siw has no memory windows and the kernel refuses the command
//! ([`ErrorKind::Unsupported`]).

use core::marker::PhantomData;

use zerocopy::FromZeros;

use crate::abi::uverbs::{AllocMw, DeallocMw};
use crate::error::{Error, ErrorKind, Result};
use crate::pd::{DestroyError, Pd};

/// `enum ibv_mw_type`.
#[doc(alias = "ibv_mw_type")]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MwType {
    /// `IBV_MW_TYPE_1`: bound with `ibv_bind_mw`, rkey chosen at bind time.
    Type1 = 1,
    /// `IBV_MW_TYPE_2`: bound with a bind work request, tied to one QP.
    Type2 = 2,
}

impl TryFrom<u32> for MwType {
    type Error = Error;

    /// From the C value; anything but 1 or 2 is refused as the kernel
    /// would (`EINVAL`).
    fn try_from(raw: u32) -> Result<Self> {
        match raw {
            1 => Ok(MwType::Type1),
            2 => Ok(MwType::Type2),
            _ => Err(Error::new("ibv_alloc_mw", ErrorKind::InvalidArgument)),
        }
    }
}

/// A memory window (`struct ibv_mw`).
///
/// `'a` is invariant: a [`MwBind`](crate::wr::MwBind) borrows the bound
/// region for `'a`, so every region this window was bound to stays
/// borrowed (cannot be dropped, destroyed or changed) until the window is
/// dropped. Deallocating a window unbinds it.
#[doc(alias = "ibv_mw")]
#[derive(Debug)]
pub struct Mw<'a> {
    pd: &'a Pd<'a>,
    handle: u32,
    /// Changes when a bind is posted (`ibv_bind_mw` updates `mw->rkey`).
    rkey: core::sync::atomic::AtomicU32,
    mw_type: MwType,
    /// Makes `'a` invariant, so a bind cannot shorten it.
    _bound: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl<'a> Mw<'a> {
    /// `ibv_alloc_mw`: allocates an (unbound) memory window in `pd`.
    #[doc(alias = "ibv_alloc_mw")]
    pub fn alloc(pd: &'a Pd<'a>, mw_type: MwType) -> Result<Self> {
        let mut cmd = AllocMw::new_zeroed();
        cmd.pd_handle = pd.handle();
        cmd.mw_type = mw_type as u8;
        let resp = pd.context().channel().exec("ibv_alloc_mw", &cmd, &[], &mut [])?;
        Ok(Self { pd, handle: resp.mw_handle, rkey: resp.rkey.into(), mw_type, _bound: PhantomData })
    }

    /// The window's current remote key: the one of the last bind posted
    /// for it (if that bind fails with an error completion, the window
    /// keeps its old key, as in C the caller must undo it with
    /// [`Mw::set_rkey`]).
    pub fn rkey(&self) -> u32 {
        self.rkey.load(core::sync::atomic::Ordering::Relaxed)
    }

    /// `ibv_inc_rkey(mw->rkey)`: the key the next bind should give the
    /// window (same index, next 8-bit tag).
    #[doc(alias = "ibv_inc_rkey")]
    pub fn next_rkey(&self) -> u32 {
        let k = self.rkey();
        (k & 0xffff_ff00) | (k.wrapping_add(1) & 0xff)
    }

    /// Records the window's remote key (after a posted bind; or to undo
    /// one that completed in error).
    pub fn set_rkey(&self, rkey: u32) {
        self.rkey.store(rkey, core::sync::atomic::Ordering::Relaxed);
    }

    /// The rkey word a posted bind updates.
    pub(crate) fn rkey_cell(&self) -> &core::sync::atomic::AtomicU32 {
        &self.rkey
    }

    /// The kernel's handle for this window.
    pub fn handle(&self) -> u32 {
        self.handle
    }

    /// Type 1 or 2.
    pub fn mw_type(&self) -> MwType {
        self.mw_type
    }

    /// The protection domain the window belongs to.
    pub fn pd(&self) -> &'a Pd<'a> {
        self.pd
    }

    /// `ibv_dealloc_mw`: frees the window, returning it with the error if
    /// the kernel refuses.
    #[doc(alias = "ibv_dealloc_mw")]
    pub fn destroy(self) -> core::result::Result<(), DestroyError<Self>> {
        match self.dealloc() {
            Ok(()) => {
                core::mem::forget(self);
                Ok(())
            }
            Err(error) => Err(DestroyError { error, object: self }),
        }
    }

    fn dealloc(&self) -> Result<()> {
        let mut cmd = DeallocMw::new_zeroed();
        cmd.mw_handle = self.handle;
        self.pd.context().channel().exec("ibv_dealloc_mw", &cmd, &[], &mut [])
    }
}

impl Drop for Mw<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.dealloc() {
            crate::error::report_drop_failure(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_types_one_and_two_exist() {
        assert_eq!(MwType::try_from(1).unwrap(), MwType::Type1);
        assert_eq!(MwType::try_from(2).unwrap() as u8, 2);
        for bad in [0, 3, u32::MAX] {
            let e = MwType::try_from(bad).unwrap_err();
            assert_eq!((e.verb(), e.kind()), ("ibv_alloc_mw", ErrorKind::InvalidArgument));
        }
    }
}
