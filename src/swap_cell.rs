//! A value that many threads use through `&` and that one of them may
//! replace, also through `&`: the mapped ring of a CQ or SRQ, which
//! `ibv_resize_cq` / `ibv_modify_srq` move while QPs (and other threads)
//! hold shared references to the queue.
//!
//! Users enter with [`SwapCell::enter`] (one atomic add on entry, one
//! atomic subtract on exit, also while unwinding) and get a shared
//! reference for as long as their [`Entered`] guard lives. A replacer takes
//! [`SwapCell::exclusive`]: it raises the `SWAPPING` bit, which turns every
//! later `enter` away, and waits (a bounded number of spins) until the
//! users already inside have left; if they do not leave in time (a
//! `poll_with` closure that runs long, or that resizes its own CQ) it
//! lowers the bit again and reports failure. It never blocks forever.
//!
//! # Safety
//!
//! * **S1 — no `&T` outlives a swap.** An [`Exclusive`] (which hands out
//!   `&mut T`) exists only while its holder has the `SWAPPING` bit set and
//!   has seen the user count at 0 *after* setting it (acquire load). Every
//!   [`Entered`] (which hands out `&T`) was counted before its holder
//!   checked that `SWAPPING` was clear (the check and the count are one
//!   `fetch_add`), and is uncounted (release) only after its last use of
//!   the `&T`. So a user counted before the bit went up is waited for, and
//!   a user that comes after sees the bit, uncounts itself and never forms
//!   a reference. The `&T` and the `&mut T` therefore never overlap, and
//!   the release/acquire pairs order the accesses on either side.
//! * **S2 — one replacer.** Setting `SWAPPING` is a `fetch_or`; only the
//!   caller that saw it clear proceeds, so two `Exclusive`s never coexist.
//! * A forgotten guard (`mem::forget`) only leaves the count raised or the
//!   bit set: later swaps (or entries) are refused, never unsound.
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU32, Ordering};

/// The replacer's bit in `state`; the low bits count users inside.
const SWAPPING: u32 = 1 << 31;

/// How many times [`SwapCell::exclusive`] checks for users to leave before
/// it gives up (each check after a spin hint: well under a millisecond
/// when nobody is inside, a bounded wait when somebody is).
const DRAIN_SPINS: u32 = 1 << 16;

/// See the module docs.
pub(crate) struct SwapCell<T> {
    state: AtomicU32,
    value: UnsafeCell<T>,
}

// SAFETY: shared access hands out `&T` to several threads at once (needs
// `T: Sync`) and `Exclusive` moves `&mut T` to whichever thread swaps
// (needs `T: Send`); S1/S2 keep the two apart.
unsafe impl<T: Send + Sync> Sync for SwapCell<T> {}

impl<T: core::fmt::Debug> core::fmt::Debug for SwapCell<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.enter() {
            Some(v) => f.debug_tuple("SwapCell").field(&*v).finish(),
            None => f.write_str("SwapCell(<being replaced>)"),
        }
    }
}

impl<T> SwapCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self { state: AtomicU32::new(0), value: UnsafeCell::new(value) }
    }

    /// Shared access, or `None` while a replacer holds the cell.
    #[inline(always)]
    pub(crate) fn enter(&self) -> Option<Entered<'_, T>> {
        let prev = self.state.fetch_add(1, Ordering::Acquire);
        if prev & SWAPPING != 0 {
            self.state.fetch_sub(1, Ordering::Release);
            return None;
        }
        Some(Entered { cell: self })
    }

    /// Shared access, waiting (spinning) while a replacer holds the cell.
    /// A replacer holds it for a bounded time (it runs no caller code: a
    /// system call and a mapping), so this never waits forever.
    #[inline]
    pub(crate) fn enter_wait(&self) -> Entered<'_, T> {
        loop {
            if let Some(e) = self.enter() {
                return e;
            }
            core::hint::spin_loop();
        }
    }

    /// Exclusive access through `&self`: waits a bounded time for users
    /// inside to leave; `None` if another replacer holds the cell or the
    /// users did not leave in time (nothing was changed).
    pub(crate) fn exclusive(&self) -> Option<Exclusive<'_, T>> {
        if self.state.fetch_or(SWAPPING, Ordering::Acquire) & SWAPPING != 0 {
            return None;
        }
        for _ in 0..DRAIN_SPINS {
            if self.state.load(Ordering::Acquire) & !SWAPPING == 0 {
                return Some(Exclusive { cell: self });
            }
            core::hint::spin_loop();
        }
        self.state.fetch_and(!SWAPPING, Ordering::Release);
        None
    }
}

/// A user inside a [`SwapCell`]: derefs to the value.
pub(crate) struct Entered<'c, T> {
    cell: &'c SwapCell<T>,
}

impl<T> Deref for Entered<'_, T> {
    type Target = T;
    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: this guard is counted in `state` and was admitted with
        // `SWAPPING` clear, so no `Exclusive` exists or can be made until
        // it is dropped (S1); the borrow is bounded by the guard's.
        unsafe { &*self.cell.value.get() }
    }
}

impl<T> Drop for Entered<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        self.cell.state.fetch_sub(1, Ordering::Release);
    }
}

impl<'c, T> Entered<'c, T> {
    /// This guard as a [`Held`] of the part of the value `f` picks (a
    /// CQ's provider ring out of the dispatch enum), or `None` (the guard
    /// dropped) if `f` picks nothing. A poll passes the `Held` by value
    /// to its out-of-line parts, so that each can be a tail call that
    /// finishes the poll and leaves the cell last.
    // Used by the providers' dispatch: nothing calls it in a build without providers.
    #[allow(dead_code)]
    #[inline(always)]
    pub(crate) fn project<U: ?Sized>(self, f: impl for<'a> FnOnce(&'a T) -> Option<&'a U>) -> Option<Held<'c, U>> {
        let cell = self.cell;
        // The count moves to the `Leave` (the guard is forgotten, so it is
        // uncounted once, by the `Leave`'s drop).
        core::mem::forget(self);
        let leave = Leave { state: &cell.state };
        // SAFETY: the cell is entered (the count the `Leave` now holds)
        // and was admitted with `SWAPPING` clear, so no `Exclusive` exists
        // until the `Leave` is dropped (S1). The reference is kept inside
        // the `Held` with the `Leave` and handed out only borrowed from
        // it (`Held::get`), so it is not used after the `Leave` drops.
        let value = unsafe { &*cell.value.get() };
        Some(Held { value: f(value)?, _leave: leave })
    }
}

/// An [`Entered`] projected onto a part of the value
/// ([`Entered::project`]): derefs to that part; dropping it leaves the
/// cell (release, also while unwinding).
// `pub`: named by `ProviderCq::poll_leave`, which feature `internals`
// makes public (the type itself stays unnameable outside the crate).
#[allow(unreachable_pub)]
pub struct Held<'c, U: ?Sized> {
    /// Only handed out borrowed from the `Held` (`get`), so never used
    /// after `_leave` is dropped with it.
    value: &'c U,
    _leave: Leave<'c>,
}

impl<U: ?Sized> Held<'_, U> {
    /// The part of the value.
    #[inline(always)]
    pub(crate) fn get(&self) -> &U {
        self.value
    }
}

/// The count of a [`Held`].
struct Leave<'c> {
    state: &'c AtomicU32,
}

impl Drop for Leave<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.state.fetch_sub(1, Ordering::Release);
    }
}

/// The one replacer of a [`SwapCell`]: derefs mutably to the value.
pub(crate) struct Exclusive<'c, T> {
    cell: &'c SwapCell<T>,
}

impl<T> Deref for Exclusive<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: as in `deref_mut` (S1, S2).
        unsafe { &*self.cell.value.get() }
    }
}

impl<T> DerefMut for Exclusive<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: this guard holds `SWAPPING` (S2) and saw no user inside
        // after raising it; users coming later are turned away without
        // forming a reference (S1). So this is the only reference, for as
        // long as the guard's borrow.
        unsafe { &mut *self.cell.value.get() }
    }
}

impl<T> Drop for Exclusive<'_, T> {
    fn drop(&mut self) {
        self.cell.state.fetch_and(!SWAPPING, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::SwapCell;

    #[test]
    fn users_share_and_a_replacer_excludes_them() {
        let c = SwapCell::new(1u32);
        let a = c.enter().unwrap();
        let b = c.enter().unwrap();
        assert_eq!((*a, *b), (1, 1));
        // Users inside: the replacer gives up and leaves the cell usable.
        assert!(c.exclusive().is_none());
        drop((a, b));
        let mut x = c.exclusive().unwrap();
        *x = 2;
        // While it is held: no entry, no second replacer.
        assert!(c.enter().is_none());
        assert!(c.exclusive().is_none());
        drop(x);
        assert_eq!(*c.enter().unwrap(), 2);
    }

    #[test]
    fn a_forgotten_guard_blocks_swaps_but_nothing_else() {
        let c = SwapCell::new(0u8);
        core::mem::forget(c.enter().unwrap());
        assert!(c.exclusive().is_none());
        assert!(c.enter().is_some());
    }

    #[test]
    fn threads_never_see_a_value_being_replaced() {
        use core::sync::atomic::{AtomicBool, Ordering};
        // The value is a pair that a replacer rewrites in two steps: a user
        // who saw it mid-way would see the halves differ.
        let c = SwapCell::new((0u64, 0u64));
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        if let Some(v) = c.enter() {
                            let (x, y) = *v;
                            assert_eq!(x, y);
                        }
                    }
                });
            }
            let mut swaps = 0;
            while swaps < 2000 {
                if let Some(mut v) = c.exclusive() {
                    v.0 += 1;
                    core::hint::black_box(&mut *v);
                    v.1 += 1;
                    swaps += 1;
                }
            }
            stop.store(true, Ordering::Relaxed);
        });
        assert_eq!(*c.enter().unwrap(), (2000, 2000));
    }
}
