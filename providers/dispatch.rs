//! Runtime dispatch over the compiled-in providers: the one place that
//! matches on which provider drives an object.
//!
//! [`registry!`] takes the registration list of `providers/mod.rs` (one
//! line per provider: its cargo feature, its [`ProviderKind`] variant and
//! its [`Provider`](super::seam::Provider) type) and generates
//!
//! * [`ProviderKind`] and the match table `PROVIDERS`;
//! * one enum per object with user-space state, a variant per provider
//!   holding that provider's associated type inline (no `Box`, no `dyn`):
//!   `AnyCtx`, `AnyCq` (plus `Dead`), `AnyQueues` (a QP's queues), `AnySrq`
//!   (plus `Dead`);
//! * their methods, each one `match` whose arms call the provider's
//!   methods directly. The data-path methods are `#[inline(always)]`, so
//!   a typed `QueuePair::post_send` compiles to the discriminant test and
//!   the provider's inlined code, as the hand-written matches did before.
//!
//! The object layer (`src/`) uses only these enums and never names a
//! provider.

/// Generates the dispatch enums from the registration list (see the
/// module docs).
macro_rules! registry {
    ($( $(#[doc = $doc:literal])* $feat:literal => $V:ident($P:ty) ),* $(,)?) => {
        /// A provider this build can drive, identified without any runtime state.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ProviderKind {
            $( $(#[doc = $doc])* #[cfg(feature = $feat)] $V, )*
        }

        /// Every provider compiled into this build, in match order.
        pub const PROVIDERS: &[MatchRule] = &[
            $(
                #[cfg(feature = $feat)]
                MatchRule {
                    kind: ProviderKind::$V,
                    driver_id: <$P as Provider>::DRIVER_ID,
                    name_prefix: <$P as Provider>::NAME_PREFIX,
                    pci_ids: <$P as Provider>::PCI_IDS,
                    min_abi: <$P as Provider>::MIN_ABI,
                    max_abi: <$P as Provider>::MAX_ABI,
                },
            )*
        ];

        impl ProviderKind {
            /// The provider's short name, as rdma-core names its provider library.
            pub const fn name(self) -> &'static str {
                match self { $( #[cfg(feature = $feat)] ProviderKind::$V => <$P as Provider>::NAME, )* }
            }

            /// What the provider can and cannot do.
            pub const fn caps(self) -> Caps {
                match self { $( #[cfg(feature = $feat)] ProviderKind::$V => <$P as Provider>::CAPS, )* }
            }
        }

        /// A context's provider state.
        #[derive(Debug)]
        pub(crate) enum AnyCtx {
            $( #[cfg(feature = $feat)] $V(<$P as Provider>::Context), )*
        }

        #[allow(unused_variables, unreachable_code)]
        impl AnyCtx {
            /// `alloc_context` of provider `kind` on `chan`.
            pub(crate) fn open(kind: ProviderKind, chan: &Channel) -> Result<(ContextReply, Self)> {
                match kind {
                    $( #[cfg(feature = $feat)] ProviderKind::$V =>
                        <<$P as Provider>::Context as ProviderContext>::open(chan).map(|(r, c)| (r, AnyCtx::$V(c))), )*
                }
            }

            /// Which provider.
            pub(crate) fn kind(&self) -> ProviderKind {
                match *self { $( #[cfg(feature = $feat)] AnyCtx::$V(_) => ProviderKind::$V, )* }
            }

            /// The provider's [`Caps`].
            pub(crate) fn caps(&self) -> Caps {
                match *self { $( #[cfg(feature = $feat)] AnyCtx::$V(_) => <$P as Provider>::CAPS, )* }
            }

            /// See [`ProviderContext::dev_id`].
            pub(crate) fn dev_id(&self) -> u32 {
                match *self { $( #[cfg(feature = $feat)] AnyCtx::$V(ref c) => ProviderContext::dev_id(c), )* }
            }

            /// See [`ProviderContext::alloc_pd`].
            pub(crate) fn alloc_pd(&self, dc: &mut DriverCmd<'_, AllocPd>) -> Result<AllocPdResp> {
                match *self { $( #[cfg(feature = $feat)] AnyCtx::$V(ref c) => ProviderContext::alloc_pd(c, dc), )* }
            }

            /// See [`ProviderContext::reg_mr`].
            pub(crate) fn reg_mr(&self, dc: &mut DriverCmd<'_, RegMr>) -> Result<RegMrResp> {
                match *self { $( #[cfg(feature = $feat)] AnyCtx::$V(ref c) => ProviderContext::reg_mr(c, dc), )* }
            }

            /// See [`ProviderContext::destroy_ah`].
            pub(crate) fn destroy_ah(&self, ah_num: u32) {
                match *self { $( #[cfg(feature = $feat)] AnyCtx::$V(ref c) => ProviderContext::destroy_ah(c, ah_num), )* }
            }

            /// See [`ProviderContext::create_ah`].
            pub(crate) fn create_ah(&self, dc: &mut DriverCmd<'_, CreateAh>) -> Result<(CreateAhResp, u32)> {
                match *self { $( #[cfg(feature = $feat)] AnyCtx::$V(ref c) => ProviderContext::create_ah(c, dc), )* }
            }
        }

        /// A CQ's provider state.
        #[derive(Debug)]
        pub(crate) enum AnyCq {
            $( #[cfg(feature = $feat)] $V(<$P as Provider>::Cq), )*
            /// The ring could not be mapped again after a resize (the
            /// kernel had already switched to the new one): every later
            /// call fails with [`ErrorKind::Dead`].
            Dead,
        }

        #[allow(unused_variables, unreachable_code, unreachable_patterns)]
        impl AnyCq {
            /// See [`ProviderCq::create`].
            pub(crate) fn create(ctx: &AnyCtx, dc: &mut DriverCmd<'_, CreateCq>) -> Result<Self> {
                match *ctx {
                    $( #[cfg(feature = $feat)] AnyCtx::$V(ref c) =>
                        <<$P as Provider>::Cq as ProviderCq>::create(c, dc).map(AnyCq::$V), )*
                }
            }

            /// See [`ProviderCq::resize`]; a dead CQ is `Dead`.
            pub(crate) fn resize(&mut self, ctx: &AnyCtx, dc: &mut DriverCmd<'_, ResizeCq>) -> core::result::Result<(), ResizeFailed> {
                match (self, ctx) {
                    $( #[cfg(feature = $feat)] (AnyCq::$V(q), AnyCtx::$V(c)) => ProviderCq::resize(q, c, dc), )*
                    (AnyCq::Dead, _) => Err(ResizeFailed::Unchanged(dead(dc.verb()))),
                    _ => Err(ResizeFailed::Unchanged(mismatch(dc.verb()))),
                }
            }

            /// See [`ProviderCq::req_notify`].
            pub(crate) fn req_notify(&self, ctx: &AnyCtx, chan: &Channel, handle: u32, solicited_only: bool) -> Result<()> {
                match (self, ctx) {
                    $( #[cfg(feature = $feat)] (AnyCq::$V(q), AnyCtx::$V(c)) => ProviderCq::req_notify(q, c, chan, handle, solicited_only), )*
                    (AnyCq::Dead, _) => Err(dead("ibv_req_notify_cq")),
                    _ => Err(mismatch("ibv_req_notify_cq")),
                }
            }

            /// `Cq::poll` with the CQ's resize guard `ring`: 0 if the CQ
            /// is empty, else its copy (see [`ProviderCq::poll_leave`];
            /// `out` may be empty). Each
            /// provider's is one jump to its own out-of-line copy, which
            /// writes the caller's `Result`, so `Cq::poll`'s own code keeps
            /// nothing across a call.
            #[inline(always)]
            pub(crate) fn poll_entered<S: WcOut>(ring: crate::swap_cell::Entered<'_, AnyCq>, out: &mut [S]) -> Result<usize> {
                $(
                    #[cfg(feature = $feat)]
                    if let AnyCq::$V(_) = *ring {
                        #[allow(unreachable_patterns)]
                        let held = ring.project(|c| match c { AnyCq::$V(q) => Some(q), _ => None });
                        return match held {
                            // The empty test after the projection: the
                            // driver tag is read once (no second read after
                            // the test's acquire load).
                            Some(q) if ProviderCq::is_empty(q.get()) => Ok(0),
                            Some(q) => ProviderCq::poll_leave(q, out),
                            None => crate::providers::dispatch::dead_poll(),
                        };
                    }
                )*
                // A dead CQ: the guard left first, so that the error is
                // one more jump.
                drop(ring);
                crate::providers::dispatch::dead_poll()
            }

            /// The C library's `ibv_poll_cq` with the CQ's resize guard
            /// `ring`: `empty()` if the CQ is empty; else `out()`, the
            /// caller's array (or the maker of the answer, called once
            /// the guard is left), and
            /// the provider's copy into it ([`ProviderCq::poll_leave_wait`],
            /// one jump: it takes the guard along and answers the count);
            /// `fail` with the maker of the error of a dead CQ (which it
            /// builds out of line). The driver tag is read once, as in
            /// [`AnyCq::poll_entered`].
            #[cfg(feature = "internals")]
            #[inline(always)]
            pub(crate) fn poll_entered_wait<'o>(
                ring: crate::swap_cell::Entered<'_, AnyCq>,
                empty: impl FnOnce() -> i32,
                out: impl FnOnce() -> core::result::Result<&'o mut [MaybeUninit<Wc>], extern "C" fn() -> i32>,
                fail: impl FnOnce(fn() -> crate::error::Error) -> i32,
            ) -> i32 {
                $(
                    #[cfg(feature = $feat)]
                    if let AnyCq::$V(_) = *ring {
                        #[allow(unreachable_patterns)]
                        let held = ring.project(|c| match c { AnyCq::$V(q) => Some(q), _ => None });
                        return match held {
                            Some(q) if ProviderCq::is_empty_c(q.get()) => {
                                drop(q);
                                empty()
                            }
                            Some(q) => match out() {
                                Ok(o) => ProviderCq::poll_leave_wait(q, o),
                                Err(answer) => {
                                    drop(q);
                                    answer()
                                }
                            },
                            None => fail(crate::providers::dispatch::dead_poll_error),
                        };
                    }
                )*
                drop(ring);
                fail(crate::providers::dispatch::dead_poll_error)
            }

            /// See [`ProviderCq::poll_with`]; `Err` with the claim's state
            /// (the CQ held by another poll, see [`busy`]), or `None` for a
            /// dead CQ ([`dead`]): the caller builds the error once it has
            /// let go of the CQ's guard ([`poll_with_error`]).
            #[inline(always)]
            pub(crate) fn poll_with(&self, max: usize, f: impl FnMut(&Wc)) -> core::result::Result<usize, Option<crate::providers::claim::Claim>> {
                match *self {
                    $( #[cfg(feature = $feat)] AnyCq::$V(ref q) => ProviderCq::poll_with(q, max, f).map_err(Some), )*
                    AnyCq::Dead => Err(None),
                }
            }

            /// See [`ProviderCq::event`].
            pub(crate) fn event(&self) {
                match *self {
                    $( #[cfg(feature = $feat)] AnyCq::$V(ref q) => ProviderCq::event(q), )*
                    AnyCq::Dead => {}
                }
            }

            /// See [`ProviderCq::discard_qp`].
            pub(crate) fn discard_qp(&self, qp_num: u32) {
                match *self {
                    $( #[cfg(feature = $feat)] AnyCq::$V(ref q) => ProviderCq::discard_qp(q, qp_num), )*
                    AnyCq::Dead => {}
                }
            }

            /// See [`ProviderCq::ring_slots`].
            pub(crate) fn ring_slots(&self) -> Option<u32> {
                match *self {
                    $( #[cfg(feature = $feat)] AnyCq::$V(ref q) => Some(ProviderCq::ring_slots(q)), )*
                    AnyCq::Dead => None,
                }
            }

            /// See [`ProviderCq::notify_flags`].
            pub(crate) fn notify_flags(&self) -> Option<u32> {
                match *self {
                    $( #[cfg(feature = $feat)] AnyCq::$V(ref q) => ProviderCq::notify_flags(q), )*
                    AnyCq::Dead => None,
                }
            }
        }

        /// A QP's provider state (its queues).
        #[derive(Debug)]
        pub(crate) enum AnyQueues {
            $( #[cfg(feature = $feat)] $V(<$P as Provider>::Qp), )*
        }

        #[allow(unused_variables, unreachable_code)]
        impl AnyQueues {
            /// See [`ProviderQp::create`].
            pub(crate) fn create<C: QpCreateCmd>(ctx: &AnyCtx, dc: &mut DriverCmd<'_, C>) -> Result<Self> {
                match *ctx {
                    $( #[cfg(feature = $feat)] AnyCtx::$V(ref c) =>
                        <<$P as Provider>::Qp as ProviderQp>::create(c, dc).map(AnyQueues::$V), )*
                }
            }

            /// The provider's [`Caps`].
            pub(crate) fn caps(&self) -> Caps {
                match *self { $( #[cfg(feature = $feat)] AnyQueues::$V(_) => <$P as Provider>::CAPS, )* }
            }

            /// See [`ProviderQp::post_send`]. In a build with mlx5, its
            /// queues are tested first and the software providers' arms
            /// are out of line ([`AnyQueues::post_send_cold`]): the inlined
            /// mlx5 path is one compare of the discriminant (not the
            /// switch over all three), and does not share its frame with
            /// the rxe and siw writers (their registers saved, their
            /// values spilled: -10 instructions per mlx5 post,
            /// scripts/sim-bench.sh). A build without mlx5 (the default,
            /// the rxe and siw benchmarks') compiles to the match alone,
            /// as before.
            #[inline(always)]
            pub(crate) fn post_send(&mut self, dev: BorrowedFd<'_>, qp_type: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
                #[cfg(feature = "mlx5")]
                if let AnyQueues::Mlx5(ref mut q) = *self {
                    return ProviderQp::post_send(q, dev, qp_type, wrs);
                }
                #[cfg(feature = "mlx5")]
                return self.post_send_cold(dev, qp_type, wrs);
                #[cfg(not(feature = "mlx5"))]
                self.post_send_arms(dev, qp_type, wrs)
            }

            /// [`AnyQueues::post_send`] on the providers other than mlx5,
            /// in a build with mlx5: out of line (see there).
            #[cfg(feature = "mlx5")]
            #[cold]
            #[inline(never)]
            fn post_send_cold(&mut self, dev: BorrowedFd<'_>, qp_type: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
                self.post_send_arms(dev, qp_type, wrs)
            }

            #[inline(always)]
            fn post_send_arms(&mut self, dev: BorrowedFd<'_>, qp_type: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
                match *self { $( #[cfg(feature = $feat)] AnyQueues::$V(ref mut q) => ProviderQp::post_send(q, dev, qp_type, wrs), )* }
            }

            /// See [`ProviderQp::post_raw_wqe`].
            pub(crate) fn post_raw_wqe(&mut self, wqe: &[u8], wr_id: u64) -> core::result::Result<(), PostError> {
                match *self { $( #[cfg(feature = $feat)] AnyQueues::$V(ref mut q) => ProviderQp::post_raw_wqe(q, wqe, wr_id), )* }
            }

            /// See [`ProviderQp::post_recv`]. (`max_sge` by reference: loaded
            /// in the arms of the providers that read it, not before the
            /// match for all.)
            #[inline(always)]
            pub(crate) fn post_recv(&mut self, max_sge: &u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
                match *self { $( #[cfg(feature = $feat)] AnyQueues::$V(ref mut q) => ProviderQp::post_recv(q, *max_sge, wrs), )* }
            }

            /// See [`ProviderQp::post_send_straight`].
            #[inline(always)]
            pub(crate) fn post_send_straight<W: StraightWr + ?Sized>(
                &mut self,
                dev: BorrowedFd<'_>,
                qp_type: QpType,
                s: &W,
            ) -> Option<core::result::Result<(), RingFailed>> {
                match *self { $( #[cfg(feature = $feat)] AnyQueues::$V(ref mut q) => ProviderQp::post_send_straight(q, dev, qp_type, s), )* }
            }

            /// See [`ProviderQp::post_recv_straight`].
            #[inline(always)]
            pub(crate) fn post_recv_straight(&mut self, max_sge: u32, wr_id: u64, sge: Option<&Sge>) -> bool {
                match *self { $( #[cfg(feature = $feat)] AnyQueues::$V(ref mut q) => ProviderQp::post_recv_straight(q, max_sge, wr_id, sge), )* }
            }

            /// See [`ProviderQp::state_changed`].
            pub(crate) fn state_changed(&mut self, to: QpStateKind) {
                match *self { $( #[cfg(feature = $feat)] AnyQueues::$V(ref mut q) => ProviderQp::state_changed(q, to), )* }
            }

            /// See [`ProviderQp::queue_slots`].
            pub(crate) fn queue_slots(&self) -> (u32, Option<u32>) {
                match *self { $( #[cfg(feature = $feat)] AnyQueues::$V(ref q) => ProviderQp::queue_slots(q), )* }
            }
        }

        /// An SRQ's provider state.
        #[derive(Debug)]
        pub(crate) enum AnySrq {
            $( #[cfg(feature = $feat)] $V(<$P as Provider>::Srq), )*
            /// The ring could not be mapped again after a resize: every
            /// later call fails with [`ErrorKind::Dead`].
            Dead,
        }

        #[allow(unused_variables, unreachable_code, unreachable_patterns)]
        impl AnySrq {
            /// See [`ProviderSrq::create`].
            pub(crate) fn create<C: SrqCreateCmd>(ctx: &AnyCtx, dc: &mut DriverCmd<'_, C>) -> Result<Self> {
                match *ctx {
                    $( #[cfg(feature = $feat)] AnyCtx::$V(ref c) =>
                        <<$P as Provider>::Srq as ProviderSrq>::create(c, dc).map(AnySrq::$V), )*
                }
            }

            /// See [`ProviderSrq::modify`].
            pub(crate) fn modify(&mut self, ctx: &AnyCtx, dc: &mut DriverCmd<'_, ModifySrq>, resize: bool) -> core::result::Result<(), ResizeFailed> {
                match (self, ctx) {
                    $( #[cfg(feature = $feat)] (AnySrq::$V(q), AnyCtx::$V(c)) => ProviderSrq::modify(q, c, dc, resize), )*
                    (AnySrq::Dead, _) => Err(ResizeFailed::Unchanged(dead(dc.verb()))),
                    _ => Err(ResizeFailed::Unchanged(mismatch(dc.verb()))),
                }
            }

            /// See [`ProviderSrq::set_limit`].
            pub(crate) fn set_limit(&self, ctx: &AnyCtx, dc: &mut DriverCmd<'_, ModifySrq>) -> Result<()> {
                match (self, ctx) {
                    $( #[cfg(feature = $feat)] (AnySrq::$V(q), AnyCtx::$V(c)) => ProviderSrq::set_limit(q, c, dc), )*
                    (AnySrq::Dead, _) => Err(dead(dc.verb())),
                    _ => Err(mismatch(dc.verb())),
                }
            }

            /// See [`ProviderSrq::post_recv`].
            #[inline(always)]
            pub(crate) fn post_recv(&self, max_sge: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
                match *self {
                    $( #[cfg(feature = $feat)] AnySrq::$V(ref q) => ProviderSrq::post_recv(q, max_sge, wrs), )*
                    AnySrq::Dead => Err(PostError::new("ibv_post_srq_recv", ErrorKind::Dead, 0)),
                }
            }

            /// See [`ProviderSrq::ring_slots`].
            pub(crate) fn ring_slots(&self) -> Option<u32> {
                match *self {
                    $( #[cfg(feature = $feat)] AnySrq::$V(ref q) => Some(ProviderSrq::ring_slots(q)), )*
                    AnySrq::Dead => None,
                }
            }

            /// See [`ProviderSrq::srq_num`].
            pub(crate) fn srq_num(&self) -> Option<u32> {
                match *self {
                    $( #[cfg(feature = $feat)] AnySrq::$V(ref q) => ProviderSrq::srq_num(q), )*
                    AnySrq::Dead => None,
                }
            }
        }
    };
}
pub(crate) use registry;

use crate::error::{Error, ErrorKind};

/// The error of every call on a dead CQ or SRQ.
#[cold]
#[inline(never)]
pub(crate) fn dead(verb: &'static str) -> Error {
    Error::new(verb, ErrorKind::Dead)
        .with_detail("the ring could not be mapped again after a resize; destroy the object")
}

/// An object and its context driven by different providers (cannot
/// happen: an object is created by its context's provider).
#[cold]
#[inline(never)]
pub(crate) fn mismatch(verb: &'static str) -> Error {
    Error::new(verb, ErrorKind::InvalidArgument).with_detail("object and context of different providers")
}

/// The error of a poll that found the CQ held by another caller.
#[cold]
#[inline(never)]
pub(crate) fn busy(claim: super::claim::Claim) -> Error {
    use super::claim::Claim;
    let e = Error::new("ibv_poll_cq", ErrorKind::Busy);
    match claim {
        Claim::Lent => e.with_detail("the CQ is being polled from inside a poll_with closure (here or on another thread)"),
        // Only `poll_with` sees this (a copying poll waits for another
        // copying poll: `wait_held`).
        _ => e.with_detail("the CQ is being polled by another thread"),
    }
}

/// The error of [`AnyCq::poll_with`]'s `Err`: [`busy`] with the claim's
/// state, or (`None`) [`dead`]. Out of line, built after the CQ's guard is
/// released, so that the successful poll's `Result` is made on its own
/// path (not merged with an error's before the guard's release).
#[cold]
#[inline(never)]
pub(crate) fn poll_with_error(e: Option<super::claim::Claim>) -> Error {
    match e {
        Some(claim) => busy(claim),
        None => dead("ibv_poll_cq"),
    }
}

/// The verb's `Result` of a [`Polled`](super::claim::Polled): the
/// count, or the error built out of line ([`poll_failed`]).
#[inline(always)]
pub(crate) fn poll_result(p: super::claim::Polled) -> crate::error::Result<usize> {
    if p >> 32 != 0 {
        return Err(poll_failed(p));
    }
    Ok(p as u32 as usize)
}

/// The error of `ibv_poll_cq` on a dead CQ (its ring was lost to a failed
/// resize).
#[cfg(feature = "internals")]
#[cold]
#[inline(never)]
pub(crate) fn dead_poll_error() -> Error {
    dead("ibv_poll_cq")
}

/// `Cq::poll` of a dead CQ (its ring was lost to a failed resize), out of
/// line: the error is built where the `Result` goes.
#[cold]
#[inline(never)]
pub(crate) fn dead_poll() -> crate::error::Result<usize> {
    Err(dead("ibv_poll_cq"))
}

/// The error of `Cq::poll` a [`Polled`](super::claim::Polled) that is no
/// count says: a CQ held by another caller. Out of line: the poll's own
/// code only tests the outcome.
#[cold]
#[inline(never)]
fn poll_failed(p: super::claim::Polled) -> Error {
    match super::claim::outcome(p) {
        Err(claim) => busy(claim),
        // Not reached: a count is not a failure.
        Ok(_) => busy(super::claim::Claim::Held),
    }
}
