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

use crate::access::KEY_INDEX;

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
    /// The upper 24 bits of every key of this window: the kernel's index
    /// of the window (rxe finds the window a bind names by `mw_rkey >> 8`
    /// and keeps these bits across binds). Fixed at allocation.
    index: u32,
    /// Changes when a bind is posted (`ibv_bind_mw` updates `mw->rkey`);
    /// always `index | tag` ([`Mw::set_rkey`] refuses other indexes).
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
        let index = resp.rkey & KEY_INDEX;
        Ok(Self { pd, handle: resp.mw_handle, index, rkey: resp.rkey.into(), mw_type, _bound: PhantomData })
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
    ///
    /// Only the key's low 8 bits (its tag) change between binds: the upper
    /// 24 bits are the window's index, which the kernel keeps for the
    /// window's life and by which a bind names the window. A key with
    /// another index (another window's key) is refused with
    /// [`ErrorKind::InvalidArgument`] and the window keeps its key: it
    /// would make the next bind of this window name the other one.
    pub fn set_rkey(&self, rkey: u32) -> Result<()> {
        if rkey & KEY_INDEX != self.index {
            return Err(Error::new("ibv_mw.rkey", ErrorKind::InvalidArgument)
                .with_detail("the key's upper 24 bits are another window's index: only the low 8 bits (the tag) of a window's rkey change"));
        }
        self.rkey.store(rkey, core::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// The window's index (the upper 24 bits of its keys) and the rkey
    /// word a posted bind updates.
    pub(crate) fn rkey_parts(&self) -> (u32, &core::sync::atomic::AtomicU32) {
        (self.index, &self.rkey)
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

impl<'w> crate::wr::MwBind<'w> {
    /// Binds `mw` over `length` bytes at `addr` of `mr`, granting
    /// `access` (`IBV_ACCESS_REMOTE_*`); the window's new rkey is
    /// [`Mw::next_rkey`] (change it with [`MwBind::with_rkey`](crate::wr::MwBind::with_rkey)).
    ///
    /// `'m` is the window's own lifetime parameter, which is invariant: the
    /// region stays borrowed until the window is dropped.
    pub fn new<'m, B: crate::mr::MrBuffer>(mw: &'w Mw<'m>, mr: &'m crate::mr::Mr<'_, B>, addr: u64, length: u64, access: crate::access::AccessFlags) -> Self {
        let (mw_index, mw_rkey) = mw.rkey_parts();
        Self::from_parts(mw_index, mw_rkey, mw.next_rkey(), mr.lkey(), addr, length, access)
            .with_type1(mw.mw_type == MwType::Type1)
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
