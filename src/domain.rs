//! Thread domains and parent domains (`ibv_alloc_td`,
//! `ibv_alloc_parent_domain`).
//!
//! A thread domain ([`Td`]) is the application's promise that the objects
//! made in it are used by one thread at a time, which lets a provider
//! drop its locks and give them a doorbell register of their own: libmlx5
//! attaches a dedicated UAR to each TD (`mlx5_attach_dedicated_uar`) and
//! its QPs ring that UAR unlocked. Our mlx5 provider does neither yet: a
//! TD is a user-space object only, and QPs made through a parent domain
//! that holds one ring the context's shared UAR under the same lock as
//! every other QP (correct with one thread as with several; only the
//! contention libmlx5 saves is not saved). rxe and siw have no thread or
//! parent domains in rdma-core, and none here (`Unsupported`).
//!
//! A parent domain ([`ParentDomain`]) extends a PD with a TD; as
//! `ibv_alloc_parent_domain(3)` says, it is interchangeable with that PD
//! wherever a PD is taken: it dereferences to it, so QPs, CQs, SRQs, MRs,
//! memory windows and address handles made through it are made in the PD
//! (libmlx5's parent domain likewise carries the PD's kernel handle).
//! While a parent domain lives, its PD and TD cannot be freed (the borrow
//! checker says so here; the C library answers `EBUSY`, as libmlx5).

use core::ops::Deref;

use crate::context::Context;
use crate::error::{Error, ErrorKind, Result};
use crate::pd::Pd;

fn check(ctx: &Context, verb: &'static str) -> Result<()> {
    if ctx.provider_caps().parent_domains {
        Ok(())
    } else {
        Err(Error::new(verb, ErrorKind::Unsupported).with_detail("the provider has no thread or parent domains (as in rdma-core)"))
    }
}

/// A thread domain (`struct ibv_td`).
#[doc(alias = "ibv_td")]
#[derive(Debug)]
pub struct Td<'ctx> {
    ctx: &'ctx Context,
}

impl<'ctx> Td<'ctx> {
    /// `ibv_alloc_td`: a thread domain of `ctx` (see the module docs for
    /// what it changes: nothing in our providers' locking yet).
    /// `Unsupported` on rxe and siw.
    #[doc(alias = "ibv_alloc_td")]
    pub fn alloc(ctx: &'ctx Context) -> Result<Self> {
        check(ctx, "ibv_alloc_td")?;
        Ok(Self { ctx })
    }

    /// The context this TD belongs to.
    pub fn context(&self) -> &'ctx Context {
        self.ctx
    }

    /// `ibv_dealloc_td`: frees the TD (nothing to refuse: no parent domain
    /// can still hold it, it borrows the TD).
    #[doc(alias = "ibv_dealloc_td")]
    pub fn destroy(self) {}
}

/// A parent domain (an `ibv_pd` made by `ibv_alloc_parent_domain`): a PD
/// with a thread domain, usable wherever the PD is.
#[derive(Debug)]
pub struct ParentDomain<'a> {
    pd: &'a Pd<'a>,
    td: Option<&'a Td<'a>>,
}

impl<'a> ParentDomain<'a> {
    /// `ibv_alloc_parent_domain`: a parent domain of `pd` with thread
    /// domain `td` (which must be of the same context: else
    /// `InvalidArgument`, as libmlx5). `Unsupported` on rxe and siw.
    #[doc(alias = "ibv_alloc_parent_domain")]
    pub fn alloc(pd: &'a Pd<'a>, td: Option<&'a Td<'a>>) -> Result<Self> {
        const VERB: &str = "ibv_alloc_parent_domain";
        check(pd.context(), VERB)?;
        if td.is_some_and(|t| !core::ptr::eq(t.context(), pd.context())) {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument).with_detail("the thread domain is of another context"));
        }
        Ok(Self { pd, td })
    }

    /// The protection domain.
    pub fn pd(&self) -> &'a Pd<'a> {
        self.pd
    }

    /// The thread domain, if any.
    pub fn td(&self) -> Option<&'a Td<'a>> {
        self.td
    }

    /// `ibv_dealloc_pd` of a parent domain: frees it (its PD and TD stay).
    #[doc(alias = "ibv_dealloc_pd")]
    pub fn destroy(self) {}
}

impl<'a> Deref for ParentDomain<'a> {
    type Target = Pd<'a>;

    /// The PD: objects made through the parent domain are made in it.
    fn deref(&self) -> &Pd<'a> {
        self.pd
    }
}
