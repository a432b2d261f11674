//! siw's mapped queues (`<rdma/siw-abi.h>`): plain arrays of fixed-size
//! elements in kernel memory (`vmalloc_user`), mapped into the process:
//! `struct siw_sqe` (120 bytes) for a send queue, `struct siw_rqe` (112)
//! for a receive queue or SRQ, `struct siw_cqe` (32) for a CQ, whose array
//! is followed by the `struct siw_cq_ctrl` arming word.
//!
//! Unlike rxe's rings there are no shared indices: each side keeps its own
//! position (user space: `sq_put`, `rq_put`, `cq_get`; the kernel: the
//! opposite ones) and an element changes hands through its `flags` word
//! (byte 8; `u16` in work queue elements, `u8` in CQEs):
//!
//! * work queues: user space writes an element whose flags lack
//!   `SIW_WQE_VALID`, then stores its flags with `VALID` set (release). The
//!   kernel (`sq_get_next` / `siw_rqe_get`) copies the element out and
//!   clears the flags (`smp_store_mb`), handing it back.
//! * CQ: the kernel writes a CQE into an element whose flags are 0, then
//!   sets `VALID`; user space reads it and stores 0 (release), handing it
//!   back. A CQE whose flags are still set when the kernel comes round
//!   again is a CQ overrun (the kernel drops the completion and raises
//!   `IBV_EVENT_CQ_ERR`).
//!
//! # Safety
//!
//! * **S1 — bounds.** [`Ring::map`] maps `n * ELEM + tail` bytes (checked
//!   arithmetic) with `n >= 1`; an element index is always taken modulo
//!   `n` (the positions stay in `0..n`: every store of the position is of
//!   a value below `n`, [`Ring::map`]'s 0 and the wrapped ones of
//!   [`Producer::advance`], [`Consumer::take_each`] and [`Consumer::drain`],
//!   which [`Ring::next_flags8`] and [`Producer`] rely on without reducing it again), so element `i` occupies
//!   `base + i * ELEM .. + ELEM`, inside the mapping. Accesses within an
//!   element are checked against `ELEM`: at compile time for
//!   [`SlotMut::put`] and [`Consumer::take`], at run time for
//!   [`SlotMut::put_all`] / [`SlotMut::put_bytes`]. The mapping is page
//!   aligned and `ELEM` is a multiple of 8, so the flags word at byte 8 of
//!   every element is aligned for `u16`.
//! * **S2 — ownership by the flags word.** User space touches the bytes of
//!   an element other than its flags only while the flags say the element
//!   is its own (work queues: `VALID` clear, CQ: `VALID` set, as loaded
//!   with acquire), and gives it away with a release store of the flags
//!   after its last access. The kernel's side of that (it does not read a
//!   work element before `VALID`, nor write a CQE while `VALID`) is the
//!   kernel's contract; a kernel that broke it would change the values
//!   read (every type read is `FromBytes`), never the addresses touched.
//!   The flags words themselves are only ever accessed as atomics: element
//!   stores never cover bytes 8..10 ([`SlotMut`] checks it).
//! * **S3 — one accessor in the process.** Elements are written only
//!   through a [`Producer`] and read only through a [`Consumer`]; a
//!   producer is a borrow of `&mut Ring` (a QP's own queues) or holds the
//!   ring's claim flag (an SRQ), a consumer always holds the claim flag (a
//!   CQ), taken by an acquire compare-exchange and released by a release
//!   store in `Drop` (also while unwinding). A copying poll waits for
//!   another copying poll (library code, bounded: [`Ring::consumer`]) but
//!   not for a claim lent to caller code, and `poll_with` waits for none
//!   ([`Ring::try_consumer`]), so a poll run from inside a `poll_with`
//!   closure gets `Busy`, not a deadlock.
#![allow(unsafe_code)]

use core::marker::PhantomData;
use core::num::NonZeroU32;
use core::mem::size_of;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU8, Ordering};

use rustix::fd::AsFd;
use zerocopy::{Immutable, IntoBytes};

use super::abi::{SiwCqe, SiwRqe, SiwSqe, SIW_INVAL_UOBJ_KEY, SIW_WQE_VALID};
use crate::error::{Error, ErrorKind, Result};
use crate::mmap::Mapping;
use crate::providers::claim::Claim;

/// Byte offset of the flags word in every siw queue element.
pub const FLAGS: usize = 8;
/// End of a work queue element's (`u16`) flags word.
const FLAGS_END: usize = FLAGS + 2;

/// A send queue: an array of `struct siw_sqe`.
pub type SendRing = Ring<{ size_of::<SiwSqe>() }>;
/// A receive queue or SRQ: an array of `struct siw_rqe`.
pub type RecvRing = Ring<{ size_of::<SiwRqe>() }>;
/// A completion queue: an array of `struct siw_cqe`.
pub type CqRing = Ring<{ size_of::<SiwCqe>() }>;

/// A mapped array of `n` siw queue elements of `ELEM` bytes each.
#[derive(Debug)]
pub struct Ring<const ELEM: usize> {
    /// The memory, kept for its `Drop` (the unmap); every element access
    /// goes through `base`.
    map: Mapping,
    /// Start of the mapping (page aligned; valid while `map` lives).
    base: NonNull<u8>,
    /// Elements in the array (at least one: the type tells the compiler
    /// so, which spares the polls a test of an empty array).
    n: NonZeroU32,
    /// User space's position: the next element to fill (work queues) or
    /// to read (CQ), always in `0..n`. Moved only by the one producer or
    /// consumer (S3), so relaxed accesses suffice.
    next: AtomicU32,
    /// [`Claim`] states: held by the producer of a shared ring (SRQ) or by
    /// the consumer (CQ).
    claim: AtomicU8,
}

// SAFETY: `base` is a copy of the pointer `map` owns; through `&Ring` only
// atomics are touched, and element bytes only by the one producer or
// consumer (S3), so the ring is as thread-safe as its `Mapping`.
unsafe impl<const ELEM: usize> Send for Ring<ELEM> {}
// SAFETY: as above.
unsafe impl<const ELEM: usize> Sync for Ring<ELEM> {}

impl<const ELEM: usize> Ring<ELEM> {
    /// Maps the array of `n` elements at mmap key `key` from the device
    /// file, plus `tail` bytes after it (the CQ's control word). siw's
    /// invalid key and an empty array are refused (`Malformed`).
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, key: u64, n: u32, tail: usize) -> Result<Self> {
        const { assert!(ELEM.is_multiple_of(8) && ELEM >= 16, "siw elements are 8-byte multiples with flags at byte 8") };
        let bad = || Error::new(verb, ErrorKind::Malformed);
        let Some(n) = NonZeroU32::new(n).filter(|_| key != u64::from(SIW_INVAL_UOBJ_KEY)) else {
            return Err(bad());
        };
        let len = (n.get() as usize).checked_mul(ELEM).and_then(|l| l.checked_add(tail)).ok_or_else(bad)?;
        let map = Mapping::new(verb, fd, key, len)?;
        Ok(Self {
            base: NonNull::new(map.as_ptr()).ok_or_else(bad)?,
            map,
            n,
            next: AtomicU32::new(0),
            claim: AtomicU8::new(Claim::Free as u8),
        })
    }

    /// Elements in the array.
    pub fn len(&self) -> u32 {
        self.n.get()
    }

    /// Always `false`: an empty array is refused by [`Ring::map`].
    pub fn is_empty(&self) -> bool {
        self.n.get() == 0
    }

    /// User space's position (`0..len()`).
    pub fn next(&self) -> u32 {
        self.next.load(Ordering::Relaxed)
    }

    /// The mapping (for the CQ's control word after the array).
    pub fn mapping(&self) -> &Mapping {
        &self.map
    }

    /// `i + k` wrapped into `0..n`.
    #[inline(always)]
    pub fn wrap(&self, i: u32, k: u32) -> u32 {
        // `i < n` and `k <= n` in every use: one subtraction; the
        // division only for anything else.
        let (n, mut s) = (u64::from(self.n.get()), u64::from(i) + u64::from(k));
        if s >= n {
            s -= n;
            if s >= n {
                s %= n;
            }
        }
        s as u32
    }

    /// Address of element `i % n` (in bounds by S1).
    #[inline(always)]
    fn elem_ptr(&self, i: u32) -> *mut u8 {
        // Positions are kept in `0..n`: the division is for anything else.
        let i = if i < self.n.get() { i } else { i % self.n };
        self.base.as_ptr().wrapping_add(i as usize * ELEM)
    }

    /// The `u16` flags word of work queue element `i` (`% n`).
    #[inline(always)]
    pub fn flags16(&self, i: u32) -> &AtomicU16 {
        const { assert!(ELEM >= FLAGS_END) };
        // SAFETY: element `i % n` lies inside the live mapping and its byte
        // 8 is 2-aligned (S1); the borrow is bounded by `&self`, which
        // keeps the mapping alive. The flags word is only ever accessed as
        // an atomic (S2), the sanctioned way to share it with the kernel.
        unsafe { &*self.elem_ptr(i).wrapping_add(FLAGS).cast::<AtomicU16>() }
    }

    /// The `u8` flags byte of the CQE at the position, loaded relaxed:
    /// the CQ's empty test, which reads nothing else of the element.
    #[inline(always)]
    pub fn next_flags8(&self) -> u8 {
        let i = self.next.load(Ordering::Relaxed);
        debug_assert!(i < self.n.get());
        // SAFETY: the position is below `n` (S1: every store of it is), so
        // byte 8 of its element is inside the live mapping, which `&self`
        // keeps alive; the flags byte is only ever accessed as an atomic
        // (S2).
        unsafe { &*self.base.as_ptr().wrapping_add(i as usize * ELEM + FLAGS).cast::<AtomicU8>() }.load(Ordering::Relaxed)
    }

    /// The `u8` flags byte of CQE `i` (`% n`).
    #[inline(always)]
    pub fn flags8(&self, i: u32) -> &AtomicU8 {
        // SAFETY: as in `flags16`, for one byte.
        unsafe { &*self.elem_ptr(i).wrapping_add(FLAGS).cast::<AtomicU8>() }
    }

    /// Exclusive producer access (a QP's own send or receive queue,
    /// posted to through `&mut QueuePair`).
    #[inline(always)]
    pub fn producer_mut(&mut self) -> Producer<'_, ELEM> {
        Producer::new(self, false)
    }

    /// Shared producer access (an SRQ, posted to through `&Srq`): waits
    /// for the claim flag (its holders run no caller code, so they let go
    /// after a bounded number of steps); released when the producer is
    /// dropped, also during a panic.
    #[inline]
    pub fn producer_shared(&self) -> Producer<'_, ELEM> {
        while self
            .claim
            .compare_exchange_weak(Claim::Free as u8, Claim::Held as u8, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        Producer::new(self, true)
    }

    /// The only consumer (a CQ shared by QPs and threads), or, without
    /// waiting, `Err` with the state of the claim if another holds it
    /// (how `poll_with` takes it).
    #[inline]
    pub fn try_consumer(&self) -> core::result::Result<Consumer<'_, ELEM>, Claim> {
        match self.claim.compare_exchange(Claim::Free as u8, Claim::Held as u8, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => Ok(Consumer { q: self }),
            Err(v) if v == Claim::Lent as u8 => Err(Claim::Lent),
            Err(_) => Err(Claim::Held),
        }
    }

    /// The only consumer, for a copying poll: waits, out of line, for
    /// another thread's copying poll ([`Claim::Held`]: library code,
    /// bounded), and is `Err(Claim::Lent)` at once while a `poll_with`
    /// closure runs ([`wait_held`](crate::providers::claim::wait_held)).
    #[inline]
    pub fn consumer(&self) -> core::result::Result<Consumer<'_, ELEM>, Claim> {
        match self.claim.compare_exchange(Claim::Free as u8, Claim::Held as u8, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => Ok(Consumer { q: self }),
            Err(_) => self.consumer_contended(),
        }
    }

    /// [`Self::consumer`] once the claim was found taken.
    #[cold]
    #[inline(never)]
    fn consumer_contended(&self) -> core::result::Result<Consumer<'_, ELEM>, Claim> {
        crate::providers::claim::wait_held(&self.claim)?;
        Ok(Consumer { q: self })
    }
}

/// The right to fill a work queue's free elements and hand them to the
/// kernel (S3). It reads user space's position once, when it is made.
pub struct Producer<'q, const ELEM: usize> {
    q: &'q Ring<ELEM>,
    /// `q`'s array and length, read once: kept in this local value, they
    /// are not loaded again after every store into an element (which the
    /// compiler cannot tell apart from a store into the ring's fields).
    base: *mut u8,
    n: u32,
    claimed: bool,
    /// The position when this producer was made, in `0..n`.
    head: u32,
    /// Elements from `head` on found free by [`Producer::reserve`]
    /// (at most `n`).
    ready: u32,
}

impl<'q, const ELEM: usize> Producer<'q, ELEM> {
    #[inline(always)]
    fn new(q: &'q Ring<ELEM>, claimed: bool) -> Self {
        // The position is below `n` (S1: every store of it is), as
        // `Ring::next_flags8` relies on too: not reduced again.
        let (head, n) = (q.next.load(Ordering::Relaxed), q.n.get());
        debug_assert!(head < n);
        Self { q, base: q.base.as_ptr(), n, claimed, head, ready: 0 }
    }

    /// Index of the `k`-th element from the position, for `k <= n`: one
    /// add and one conditional subtraction (`head < n`, so the sum is
    /// below `2n`), in 64 bits (no overflow for any `n`); for `k == 1`
    /// the sum is at most `n` and the wrap a compare with it.
    #[inline(always)]
    fn index(&self, k: u32) -> u32 {
        if k == 0 {
            return self.head;
        }
        if k == 1 {
            // `head < n <= u32::MAX`: no overflow. The ring's `n`, read
            // here (the same value as `self.n`): after the element's
            // stores the compiler reads it again, where it can compare
            // with memory, instead of keeping a register for it.
            let i = self.head + 1;
            return if i == self.q.n.get() { 0 } else { i };
        }
        let (i, n) = (u64::from(self.head) + u64::from(k), u64::from(self.n));
        (if i >= n { i - n } else { i }) as u32
    }

    /// Start of the `k`-th element from the position (`k < n`: inside
    /// the mapping, S1).
    #[inline(always)]
    fn elem(&self, k: u32) -> *mut u8 {
        self.base.wrapping_add(self.index(k) as usize * ELEM)
    }

    /// The flags word of the `k`-th element from the position (`k < n`).
    #[inline(always)]
    fn flags(&self, k: u32) -> &'q AtomicU16 {
        const { assert!(ELEM >= FLAGS_END) };
        // SAFETY: `k < n` in every caller, so the element is inside the
        // live mapping (S1) and its byte 8 is 2-aligned; `'q` borrows the
        // ring, which keeps the mapping alive. The flags word is only ever
        // accessed as an atomic (S2).
        unsafe { &*self.elem(k).wrapping_add(FLAGS).cast::<AtomicU16>() }
    }

    /// How many of the `want` elements from the position on are free
    /// (flags without `VALID`, loaded with acquire: the kernel's last
    /// reads of them happened before), stopping at the first that is
    /// not; at most the array's length. Those become writable
    /// ([`Producer::slot`]).
    #[inline(always)]
    pub fn reserve(&mut self, want: u32) -> u32 {
        let want = want.min(self.n);
        let mut k = 0;
        while k < want && self.flags(k).load(Ordering::Acquire) & SIW_WQE_VALID == 0 {
            k += 1;
        }
        self.ready = k;
        k
    }

    /// [`Producer::reserve`] of the element at the position alone, and
    /// [`Producer::slot`] of it: `None` if it is not free.
    #[inline(always)]
    pub fn first(&mut self) -> Option<SlotMut<'_, ELEM>> {
        if self.flags(0).load(Ordering::Acquire) & SIW_WQE_VALID != 0 {
            return None;
        }
        self.ready = 1;
        Some(SlotMut { ptr: self.elem(0), _p: PhantomData })
    }

    /// The `k`-th element from the position, if [`Producer::reserve`]
    /// found it free; `None` otherwise.
    #[inline(always)]
    pub fn slot(&mut self, k: u32) -> Option<SlotMut<'_, ELEM>> {
        if k >= self.ready {
            return None;
        }
        // `k < ready <= n`.
        Some(SlotMut { ptr: self.elem(k), _p: PhantomData })
    }

    /// Hands the `k`-th reserved element to the kernel: a release store
    /// of `flags` (which should contain `SIW_WQE_VALID`), after every
    /// store into it. `false` (nothing stored) if `k` was not reserved.
    #[inline(always)]
    pub fn give(&mut self, k: u32, flags: u16) -> bool {
        if k >= self.ready {
            return false;
        }
        // `k < ready <= n`.
        self.flags(k).store(flags, Ordering::Release);
        true
    }

    /// Moves the position past the first `n` reserved elements (capped at
    /// what was reserved). Consumes the producer.
    #[inline(always)]
    pub fn advance(self, n: u32) {
        let n = n.min(self.ready);
        self.q.next.store(self.index(n), Ordering::Relaxed);
    }

    /// Whether the element just before the position (the last one handed
    /// over before this producer) is still the kernel's: loaded after a
    /// sequentially consistent fence, so that with the kernel's
    /// `smp_store_mb` when it takes an element, either the kernel sees
    /// the elements just given or this sees it has not yet taken the one
    /// before (then it will go on to them: it takes elements in order).
    #[inline(always)]
    pub fn previous_pending(&self) -> bool {
        core::sync::atomic::fence(Ordering::SeqCst);
        // The element before the position: `head - 1`, or the last one
        // (`head < n`, so either is in `0..n`).
        let prev = if self.head == 0 { self.n - 1 } else { self.head - 1 };
        // SAFETY: element `prev < n` is inside the live mapping (S1) and
        // its byte 8 is 2-aligned; `&self` borrows the ring, which keeps
        // the mapping alive. The flags word is only ever accessed as an
        // atomic (S2).
        let flags = unsafe { &*self.base.wrapping_add(prev as usize * ELEM + FLAGS).cast::<AtomicU16>() };
        flags.load(Ordering::SeqCst) & SIW_WQE_VALID != 0
    }

    /// Elements in the array.
    #[inline(always)]
    pub fn capacity(&self) -> u32 {
        self.n
    }
}

impl<const ELEM: usize> Drop for Producer<'_, ELEM> {
    #[inline]
    fn drop(&mut self) {
        if self.claimed {
            self.q.claim.store(Claim::Free as u8, Ordering::Release);
        }
    }
}

/// One free work queue element, borrowed from the [`Producer`]. Its
/// stores are plain (S2: the kernel does not read it before its flags
/// are given) and never cover the flags word.
pub struct SlotMut<'p, const ELEM: usize> {
    /// Start of the element: `ELEM` bytes inside the mapping (S1).
    ptr: *mut u8,
    _p: PhantomData<&'p mut ()>,
}

impl<const ELEM: usize> SlotMut<'_, ELEM> {
    /// Stores `v` at byte `AT`: inside the element and clear of the flags
    /// word, checked at compile time.
    #[inline(always)]
    pub fn put<const AT: usize, T: IntoBytes + Immutable>(&mut self, v: T) {
        const {
            assert!(AT + size_of::<T>() <= ELEM, "store past the element");
            assert!(AT + size_of::<T>() <= FLAGS || AT >= FLAGS_END, "store over the flags word");
        };
        // SAFETY: `AT..AT + size_of::<T>()` is inside the element (compile
        // time above), which is inside the live mapping (S1); the element
        // is the producer's (S2, S3) and the bytes are not the flags word,
        // so a plain unaligned store races with nothing.
        unsafe { self.ptr.wrapping_add(AT).cast::<T>().write_unaligned(v) }
    }

    /// Stores the elements of `src` back to back from byte `at`; `false`,
    /// nothing written, if they would reach past the element or `at` is
    /// not past the flags word.
    #[inline(always)]
    pub fn put_all<T: IntoBytes + Immutable + Copy>(&mut self, at: usize, src: &[T]) -> bool {
        if at < FLAGS_END || at > ELEM || (ELEM - at) / size_of::<T>().max(1) < src.len() {
            return false;
        }
        let mut p = self.ptr.wrapping_add(at);
        for v in src {
            // SAFETY: as in `put`: the check above puts all
            // `src.len() * size_of::<T>()` bytes from `at` (past the flags
            // word) inside the element; `p` steps through them.
            unsafe { p.cast::<T>().write_unaligned(*v) };
            p = p.wrapping_add(size_of::<T>());
        }
        true
    }

    /// Copies `src` to byte `at`; `false`, nothing written, if it would
    /// reach past the element or `at` is not past the flags word.
    #[inline]
    pub fn put_bytes(&mut self, at: usize, src: &[u8]) -> bool {
        if at < FLAGS_END || at > ELEM || ELEM - at < src.len() {
            return false;
        }
        // SAFETY: in bounds as in `put_all`; `src` is ordinary memory, not
        // the mapping (no reference into a ring exists, S2).
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.wrapping_add(at), src.len()) };
        true
    }
}

/// The right to read a CQ's completions and hand their elements back:
/// holds the claim flag (S3), released on drop (also while unwinding).
pub struct Consumer<'q, const ELEM: usize> {
    q: &'q Ring<ELEM>,
}

impl<'q, const ELEM: usize> Consumer<'q, ELEM> {
    /// Takes up to `max` completions from the position on, oldest first,
    /// stopping at the first element whose flags lack `VALID` (acquire),
    /// at most once round the array. Each is copied out and given to
    /// `read` (library code: what it returns, typically the completion
    /// translated or stored into the caller's array, is made while the
    /// element is still user space's, so its stores need not wait for the
    /// hand-back), then its element is handed back to the kernel (release
    /// store of 0), and only then is `read`'s result given to `then`
    /// (caller code), the position moved past the element first: a panic
    /// in `then` leaves the completions already given consumed, and none
    /// given twice, and a poll from inside `then` sees the next element
    /// (and is refused the claim, not told the CQ is empty). Returns how
    /// many.
    ///
    /// A run that ends before the array's last element (`position + max
    /// < n`, the common case: no wrap) is one pointer stepping by `ELEM`;
    /// any other goes element by element, each successor wrapped. Both
    /// inline: `then` is caller code (a closure whose state an out-of-line
    /// path would force into memory).
    #[inline(always)]
    pub fn take_each<T>(&self, max: usize, mut read: impl FnMut(&SiwCqe) -> T, mut then: impl FnMut(T)) -> usize {
        let (base, n) = (self.q.base.as_ptr(), self.q.n.get());
        let start = self.q.next.load(Ordering::Relaxed);
        if max == 0 {
            // (Folded away where the caller tested it already.)
            return 0;
        }
        // `max` clamped to `n` first, so that the sum cannot overflow (a
        // `max` of `n` or more never passes the test).
        let end = u64::from(start) + max.min(n as usize) as u64;
        if end >= u64::from(n) {
            return self.take_each_round(max, &mut read, &mut then);
        }
        // `start < start + max < n`: the elements `start..start + max` are
        // inside the array (S1), at least one, and each one's successor
        // `pos + 1 <= start + max` is in `0..n` with no wrap.
        let end = end as u32;
        let (mut elem, mut pos) = (base.wrapping_add(start as usize * ELEM), start);
        while self.take_one(elem, pos + 1, &mut read, &mut then) {
            pos += 1;
            if pos == end {
                break;
            }
            elem = elem.wrapping_add(ELEM);
        }
        (pos - start) as usize
    }

    /// [`Consumer::take_each`] of a run that may reach the array's end:
    /// element by element from the position (reduced into `0..n`), each
    /// successor wrapped, at most once round the array.
    #[inline(always)]
    fn take_each_round<T>(&self, max: usize, read: &mut impl FnMut(&SiwCqe) -> T, then: &mut impl FnMut(T)) -> usize {
        let (base, n) = (self.q.base.as_ptr(), self.q.n.get());
        let limit = max.min(n as usize);
        let (mut i, mut got) = (self.start(), 0);
        // `i` stays in `0..n` (S1): `start()` is, and so is each `after`.
        while got < limit {
            let after = if i + 1 == n { 0 } else { i + 1 };
            if !self.take_one(base.wrapping_add(i as usize * ELEM), after, read, then) {
                break;
            }
            i = after;
            got += 1;
        }
        got
    }

    /// Takes the element at `elem` (inside the array: the caller's bounds)
    /// if it is `VALID`, as [`Consumer::take_each`] describes, the position
    /// set to `after` (in `0..n`) before `then` runs: `false`, nothing
    /// done, if it is not.
    #[inline(always)]
    fn take_one<T>(&self, elem: *mut u8, after: u32, read: &mut impl FnMut(&SiwCqe) -> T, then: &mut impl FnMut(T)) -> bool {
        const { assert!(size_of::<SiwCqe>() <= ELEM) };
        // SAFETY: byte 8 of an element inside the live mapping (S1: the
        // callers keep `elem` inside the array) is its flags byte, only
        // ever accessed as an atomic (S2); the borrow ends with this call.
        let flags = unsafe { &*elem.wrapping_add(FLAGS).cast::<AtomicU8>() };
        if flags.load(Ordering::Acquire) & (SIW_WQE_VALID as u8) == 0 {
            return false;
        }
        // SAFETY: the element is inside the mapping (S1) and holds a
        // `SiwCqe` (compile time above; `FromBytes`, any bytes valid, read
        // unaligned-tolerant). Its flags say it is user space's (S2): the
        // kernel does not write it until the store below, and this
        // consumer is the process's only reader (S3).
        let cqe = unsafe { elem.cast::<SiwCqe>().read_unaligned() };
        let t = read(&cqe);
        flags.store(0, Ordering::Release);
        self.q.next.store(after, Ordering::Relaxed);
        then(t);
        true
    }

    /// Copies the ready completions at the position into `out`, oldest
    /// first, handing each element back to the kernel (a release store of
    /// 0 into its flags byte) right after its copy, and moves the position
    /// past them. Returns how many (at most the array's length: once
    /// round it).
    ///
    /// The walk takes each element whose flags byte (loaded with acquire)
    /// is exactly `VALID` and of which `common` holds: `copy` gets the
    /// slot and the completion read out. It stops at the first other
    /// element; if that one is `VALID` all the same (a completion the
    /// caller translates the general way), the rest is taken by
    /// [`Consumer::take_each`] with `rare` (out of line, the caller's
    /// general translation), from the position on.
    ///
    /// The walk is at most two contiguous stretches of the array (from the
    /// position to the array's end, then from its start), each with a
    /// pointer stepping by `ELEM` and no index arithmetic. `straight`
    /// (`Some`): only if `out` does not reach past the array's end (one
    /// stretch, walked by `drain_straight`), else `None`, nothing read.
    /// Nothing in it runs caller code (`common`, `copy` and `rare` are
    /// library code that does not panic), and the position is stored
    /// before it returns.
    #[inline(always)]
    pub fn drain<S>(
        &self,
        out: &mut [S],
        straight: bool,
        common: impl Fn(&SiwCqe) -> bool,
        mut copy: impl FnMut(&mut S, &SiwCqe),
        rare: impl FnOnce(&Self, &mut [S]) -> usize,
    ) -> Option<usize> {
        if straight {
            return self.drain_straight(out, common, copy, rare);
        }
        let (base, n) = (self.q.base.as_ptr(), self.q.n.get() as usize);
        let start = self.start() as usize;
        let got = {
            // At most once round the array.
            let max = out.len().min(n);
            // `start < n`: the first stretch is elements `start..start +
            // first`, inside the array (S1).
            let first = (n - start).min(max);
            let (head, tail) = out[..max].split_at_mut(first);
            let mut g = Self::stretch(base.wrapping_add(start * ELEM), head, &common, &mut copy);
            if g == first && !tail.is_empty() {
                // The second stretch: elements `0..max - first`, where
                // `max - first <= n - first = start` (it wrapped): inside
                // the array and short of the first stretch.
                g += Self::stretch(base, tail, &common, &mut copy);
            }
            g
        };
        let next = start + got;
        self.q.next.store((if next >= n { next - n } else { next }) as u32, Ordering::Relaxed);
        // At most once round the array in all (`got <= n`).
        let end = out.len().min(n);
        if got < end && self.ready() {
            // Stopped at a completion that is not common.
            return Some(got + rare(self, &mut out[got..end]));
        }
        Some(got)
    }

    /// [`Consumer::drain`] of a batch that does not reach past the array's
    /// end (`None`, nothing read, for any other): one pointer over the
    /// elements stepping a round of eight at a time (each element of a
    /// round addressed by a constant displacement), the slots alike. A
    /// batch taken whole moves the position by `out.len()`; only a walk
    /// that stops early counts what it took (from the element it stopped
    /// at), and only it looks for a completion that is not common.
    /// Values that only the end needs (the position, the array's start
    /// and length) are loaded again there, so that the walk keeps its
    /// registers to itself.
    #[inline(always)]
    fn drain_straight<S>(
        &self,
        out: &mut [S],
        common: impl Fn(&SiwCqe) -> bool,
        mut copy: impl FnMut(&mut S, &SiwCqe),
        rare: impl FnOnce(&Self, &mut [S]) -> usize,
    ) -> Option<usize> {
        const { assert!(size_of::<SiwCqe>() <= ELEM && size_of::<S>() > 0, "slots take room: a slice of them is at most isize::MAX long") };
        let (base, n) = (self.q.base.as_ptr(), u64::from(self.q.n.get()));
        let start = self.q.next.load(Ordering::Relaxed);
        let len = out.len();
        // No overflow: `start < 2^32`, `len <= isize::MAX` (slots of at
        // least one byte, compile time above). With `start <
        // n` (a position out of range, `start >= n`, fails it unless `out`
        // is empty, when nothing is read), the elements `start..start +
        // len` are inside the array (S1).
        if u64::from(start) + len as u64 > n {
            return None;
        }
        let mut elem = base.wrapping_add(start as usize * ELEM);
        // Whether the element at `at` is a common completion: if so, it is
        // copied into `slot` and handed back.
        let mut one = |slot: &mut S, at: *mut u8| -> bool {
            // SAFETY: byte 8 of an element inside the live mapping (`at`
            // is one of the elements `start..start + len`, one per slot of
            // `out`, see above; S1) is its flags byte, only ever accessed
            // as an atomic (S2); the borrow ends with this call.
            let flags = unsafe { &*at.wrapping_add(FLAGS).cast::<AtomicU8>() };
            if flags.load(Ordering::Acquire) != SIW_WQE_VALID as u8 {
                return false;
            }
            // SAFETY: as in `take_each`: inside the mapping, a `SiwCqe`,
            // user space's by its flags (`VALID`, loaded above with
            // acquire) until the store below.
            let cqe = unsafe { at.cast::<SiwCqe>().read_unaligned() };
            if !common(&cqe) {
                return false;
            }
            copy(slot, &cqe);
            // Handed back after its last read (S2).
            flags.store(0, Ordering::Release);
            true
        };
        // `rest`: the slots from `elem`'s on. A walk that stops in a round
        // leaves by a call of its own for each place in the round
        // (`stopped_at::<K>`, out of line), so that no register has to
        // say where in the round the walk is.
        let mut rest = out;
        while rest.len() >= 8 {
            macro_rules! round {
                ($($k:literal)*) => {$(
                    if !one(&mut rest[$k], elem.wrapping_add($k * ELEM)) {
                        return Some(self.stopped_at::<$k, S>(rest, elem, rare));
                    }
                )*};
            }
            round!(0 1 2 3 4 5 6 7);
            rest = &mut core::mem::take(&mut rest)[8..];
            elem = elem.wrapping_add(8 * ELEM);
        }
        for k in 0..rest.len() {
            if !one(&mut rest[k], elem) {
                return Some(self.stopped_at::<0, S>(&mut rest[k..], elem, rare));
            }
            elem = elem.wrapping_add(ELEM);
        }
        // All taken: `start + len <= n`, wrapped to 0 at `n`.
        let next = self.q.next.load(Ordering::Relaxed) as usize + len;
        self.q.next.store(if next as u64 == u64::from(self.q.n.get()) { 0 } else { next as u32 }, Ordering::Relaxed);
        Some(len)
    }

    /// [`Consumer::drain_straight`] of a walk that stopped at element `K`
    /// of the round at `round` (whose slots `rest` starts with; the
    /// element is before the array's end): the position moved there,
    /// then the rest by `rare` if the element is a completion all the
    /// same. Returns how many in all, from the position on.
    #[cold]
    #[inline(never)]
    fn stopped_at<const K: usize, S>(&self, rest: &mut [S], round: *mut u8, rare: impl FnOnce(&Self, &mut [S]) -> usize) -> usize {
        let at = (round as usize - self.q.base.as_ptr() as usize) / ELEM + K;
        let got = at - self.q.next.load(Ordering::Relaxed) as usize;
        self.q.next.store(at as u32, Ordering::Relaxed);
        if self.ready() {
            return got + rare(self, rest.get_mut(K..).unwrap_or_default());
        }
        got
    }

    /// [`Consumer::drain`] of a batch that may wrap, over the contiguous
    /// elements from `elem` on, one
    /// per slot of `out` (the caller keeps them inside the array),
    /// stopping at the first not common. Returns how many. Eight
    /// elements a round (the loop's steps shared by them, each element
    /// addressed by a constant displacement), then the rest one by one.
    #[inline(always)]
    fn stretch<S>(mut elem: *mut u8, out: &mut [S], common: &impl Fn(&SiwCqe) -> bool, copy: &mut impl FnMut(&mut S, &SiwCqe)) -> usize {
        const { assert!(size_of::<SiwCqe>() <= ELEM) };
        let first = elem;
        let mut one = |slot: &mut S, elem: &mut *mut u8| -> bool {
            // SAFETY: byte 8 of an element inside the live mapping (the
            // caller's bounds, S1: `*elem` steps one element per slot of
            // `out`) is its flags byte, only ever accessed as an atomic
            // (S2); the borrow ends with this call.
            let flags = unsafe { &*elem.wrapping_add(FLAGS).cast::<AtomicU8>() };
            if flags.load(Ordering::Acquire) != SIW_WQE_VALID as u8 {
                return false;
            }
            // SAFETY: as in `take_each`: inside the mapping, a `SiwCqe`,
            // user space's by its flags (`VALID`, loaded above with
            // acquire) until the store below.
            let cqe = unsafe { elem.cast::<SiwCqe>().read_unaligned() };
            if !common(&cqe) {
                return false;
            }
            copy(slot, &cqe);
            // Handed back after its last read (S2).
            flags.store(0, Ordering::Release);
            *elem = elem.wrapping_add(ELEM);
            true
        };
        let mut rounds = out.chunks_exact_mut(8);
        'all: {
            for round in &mut rounds {
                for slot in round {
                    if !one(slot, &mut elem) {
                        break 'all;
                    }
                }
            }
            for slot in rounds.into_remainder() {
                if !one(slot, &mut elem) {
                    break;
                }
            }
        }
        // How many: the elements stepped over (no counter in the loop).
        (elem as usize - first as usize) / ELEM
    }

    /// The position, in `0..n` (S1; reduced all the same, once a call).
    #[inline(always)]
    fn start(&self) -> u32 {
        let (i, n) = (self.q.next.load(Ordering::Relaxed), self.q.n);
        if i < n.get() {
            i
        } else {
            i % n
        }
    }

    /// The completion at the position, if its flags say it is valid,
    /// taken as [`Consumer::take_each`] takes one. `None`, nothing
    /// changed, if the CQ is empty.
    #[inline(always)]
    pub fn take(&self) -> Option<SiwCqe> {
        let mut out = None;
        self.take_each(1, |c| *c, |c| out = Some(c));
        out
    }

    /// Whether a completion is ready at the position (acquire).
    #[inline(always)]
    pub fn ready(&self) -> bool {
        self.q.flags8(self.q.next.load(Ordering::Relaxed)).load(Ordering::Acquire) & (SIW_WQE_VALID as u8) != 0
    }

    /// Marks the claim as lent to caller code until this consumer is
    /// dropped: a consumer that comes meanwhile is told [`Claim::Lent`].
    #[inline(always)]
    pub fn lend(&self) {
        self.q.claim.store(Claim::Lent as u8, Ordering::Relaxed);
    }
}

impl<const ELEM: usize> Drop for Consumer<'_, ELEM> {
    #[inline]
    fn drop(&mut self) {
        self.q.claim.store(Claim::Free as u8, Ordering::Release);
    }
}
