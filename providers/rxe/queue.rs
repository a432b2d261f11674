//! rxe's shared ring (`struct rxe_queue_buf` of `<rdma/rdma_user_rxe.h>`)
//! and the `struct mminfo` that tells user space where to map it.
//!
//! Every rxe CQ, SQ, RQ and SRQ is one such ring in kernel memory:
//!
//! ```text
//! off   0: u32 log2_elem_size; u32 index_mask; u32 pad_1[30]
//! off 128: u32 producer_index; u32 pad_2[31]
//! off 256: u32 consumer_index; u32 pad_3[31]
//! off 384: u8  data[]   // element i at data + (i << log2_elem_size)
//! ```
//!
//! This file maps a ring, checks that the header the kernel wrote is
//! consistent with the mapping length before anything else trusts it, and
//! gives the data path its two roles:
//!
//! * **producer** (send queue, receive queue, SRQ): write elements at the
//!   producer index, then publish the new index with a release store; the
//!   kernel consumes.
//! * **consumer** (CQ): read elements up to the producer index (acquire),
//!   then publish the new consumer index with a release store.
//!
//! Indices always lie in `0..=index_mask` (the kernel's convention), so
//! `(producer - consumer) & index_mask` is the fill level.
//!
//! # Safety
//!
//! * **Q1 — every slot is in bounds.** [`Queue::map`] checks
//!   `DATA + (index_mask + 1) << log2_elem_size <= mapping length`, so the
//!   slot of any index (`index & index_mask`) lies inside the mapping, and
//!   an access of `at + size <= elem_size()` bytes inside it does too. It
//!   also checks `MIN <= elem_size()` for a `Queue<MIN>`, so accesses
//!   whose end is checked against `MIN` at compile time are in bounds.
//! * **Q2 — slot ownership.** A producer slot at or after the producer
//!   index is not read by the kernel until a release store of the producer
//!   index covers it; a consumer slot in `[consumer, producer)` (producer
//!   loaded with acquire) is not written by the kernel until a release
//!   store of the consumer index frees it. So the owner may use plain
//!   (non-volatile) reads and writes on them: the index store/load pair
//!   orders them with the kernel's accesses, as io_uring rings do.
//! * **Q3 — one writer.** Only a [`Producer`] writes slots, and no other
//!   thread of the process touches them meanwhile: a `Producer` exists
//!   either as a borrow of `&mut Queue` (exclusive by the borrow rules) or
//!   while holding the queue's `claim` flag, which only one `Producer` at a
//!   time can hold (acquire compare-exchange on entry, release store in
//!   `Drop`, which also runs while unwinding). The same flag serialises
//!   consumers of a shared CQ: a copying poll that finds it held by
//!   another copying poll (library code, bounded) waits for it
//!   ([`Queue::consumer_contended`]); a poll that finds it lent to caller
//!   code (a `poll_with` closure, which may poll the same CQ), and a
//!   `poll_with` that finds it taken at all ([`Queue::try_consumer`]),
//!   get `Err` at once (the caller reports `Busy`), so a closure polling
//!   its own CQ cannot deadlock.
#![allow(unsafe_code)]

use core::marker::PhantomData;
use core::mem::size_of;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use rustix::fd::AsFd;
use static_assertions::const_assert_eq;

use super::abi::{RxeRecvWqe, RxeSendWqe, RxeSge};
use crate::abi::abi_struct;
use crate::abi::uverbs::Wc as AbiWc;
use crate::error::{Error, ErrorKind, Result};
use crate::mmap::Mapping;
use zerocopy::{FromBytes, Immutable, IntoBytes};

abi_struct! {
    /// `struct mminfo`: where and how much of the device file to map.
    #[repr(C)]
    pub struct Mminfo {
        /// The `mmap` offset (a cookie the kernel assigned).
        pub offset: u64,
        /// Bytes to map.
        pub size: u32,
        /// Padding.
        pub pad: u32,
    }
}
const_assert_eq!(size_of::<Mminfo>(), 16);

/// Offset of `log2_elem_size` in the ring header.
pub const LOG2_ELEM_SIZE: usize = 0;
/// Offset of `index_mask`.
pub const INDEX_MASK: usize = 4;
/// Offset of `producer_index`.
pub const PRODUCER_INDEX: usize = 128;
/// Offset of `consumer_index`.
pub const CONSUMER_INDEX: usize = 256;
/// Offset of `data[]`, the first element.
pub const DATA: usize = 384;

/// A send queue: an element holds at least the WQE header and one SGE
/// (rxe rounds its element size up to a power of two, at least 256).
pub type SendQueue = Queue<{ size_of::<RxeSendWqe>() + size_of::<RxeSge>() }>;
/// A receive queue or SRQ: an element holds at least the header and one
/// SGE (at least 64 bytes, by the same rounding).
pub type RecvQueue = Queue<{ size_of::<RxeRecvWqe>() + size_of::<RxeSge>() }>;
/// A completion queue: an element holds a `struct ib_uverbs_wc` (as
/// rdma-core's `rxe_create_cq` checks).
pub type CompletionQueue = Queue<{ size_of::<AbiWc>() }>;

/// A mapped rxe ring whose header has been checked, with elements of at
/// least `MIN` bytes (checked once, by [`Queue::map`]: the data path then
/// writes and reads the first `MIN` bytes of a slot with offsets checked
/// at compile time and no per-call length test).
#[derive(Debug)]
pub struct Queue<const MIN: usize = 0> {
    /// The ring's memory, kept for its `Drop` (the unmap, M1, M4): every
    /// access goes through `base`.
    _map: Mapping,
    mminfo: Mminfo,
    log2_elem_size: u32,
    index_mask: u32,
    /// `1 << log2_elem_size`.
    elem_size: usize,
    /// Start of the mapping (page aligned; valid while `map` lives, M1).
    base: NonNull<u8>,
    /// Held by the one [`Producer`] or [`Consumer`] working on a queue
    /// that is reached through `&Queue` (SRQ, CQ): [`Claim`] states.
    claim: AtomicU8,
}

pub use crate::providers::claim::Claim;

// SAFETY: `base` is a copy of the pointer `map` owns; a `Queue` is as
// thread-safe as its `Mapping` (which is `Send` and `Sync`, see
// `src/mmap.rs`): through `&Queue` only atomics and reads of owned slots
// happen, and slot writes need a `Producer` (exclusive by `&mut` or by the
// claim flag, Q3).
unsafe impl<const MIN: usize> Send for Queue<MIN> {}
// SAFETY: as above.
unsafe impl<const MIN: usize> Sync for Queue<MIN> {}

impl<const MIN: usize> Queue<MIN> {
    /// Maps the ring described by `mi` from the device file `fd` and checks
    /// its header: the element array `(index_mask + 1) << log2_elem_size`
    /// must fit in `mi.size`, the slot count must be a power of two and an
    /// element must be at least `MIN` bytes.
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, mi: Mminfo) -> Result<Self> {
        let bad = || Error::new(verb, ErrorKind::Malformed);
        let len = mi.size as usize;
        if len < DATA {
            return Err(bad());
        }
        let mut map = Mapping::new(verb, fd, mi.offset, len)?;
        let log2 = map.read::<u32>(LOG2_ELEM_SIZE).ok_or_else(bad)?;
        let mask = map.read::<u32>(INDEX_MASK).ok_or_else(bad)?;
        let slots = u64::from(mask) + 1;
        if log2 >= 16 || !slots.is_power_of_two() || (1usize << log2) < MIN {
            return Err(bad());
        }
        let need = (DATA as u64).checked_add(slots << log2).ok_or_else(bad)?;
        if need > len as u64 {
            return Err(bad());
        }
        Ok(Self {
            base: NonNull::new(map.as_ptr()).ok_or_else(bad)?,
            _map: map,
            mminfo: mi,
            log2_elem_size: log2,
            index_mask: mask,
            elem_size: 1 << log2,
            claim: AtomicU8::new(Claim::Free as u8),
        })
    }

    /// Bytes per element (`1 << log2_elem_size`).
    #[inline]
    pub fn elem_size(&self) -> usize {
        self.elem_size
    }

    /// Number of slots (`index_mask + 1`); one is always kept free, so the
    /// ring holds at most `slots() - 1` elements.
    pub fn slots(&self) -> u32 {
        self.index_mask.wrapping_add(1)
    }

    /// The `mminfo` this ring was mapped from.
    pub fn mminfo(&self) -> Mminfo {
        self.mminfo
    }

    /// `index_mask` of the ring.
    pub fn index_mask(&self) -> u32 {
        self.index_mask
    }

    /// Byte offset (in the mapping) of element `index`.
    #[inline]
    pub fn slot_offset(&self, index: u32) -> usize {
        slot_offset(self.index_mask, self.log2_elem_size, index)
    }

    #[inline]
    fn index(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off == PRODUCER_INDEX || off == CONSUMER_INDEX);
        // SAFETY: `off` is PRODUCER_INDEX or CONSUMER_INDEX, both below
        // DATA and 4-aligned, and `map` checked that the mapping is at least
        // DATA bytes (Q1) at a page-aligned base, so the word is in bounds
        // and aligned; the mapping lives as long as `self` (M1), which
        // bounds the returned borrow; an `AtomicU32` is the sanctioned way
        // to share a word with the kernel (M3).
        unsafe { &*self.base.as_ptr().wrapping_add(off).cast::<AtomicU32>() }
    }

    /// The producer index word.
    #[inline]
    pub fn producer_word(&self) -> &AtomicU32 {
        self.index(PRODUCER_INDEX)
    }

    /// The consumer index word.
    #[inline]
    pub fn consumer_word(&self) -> &AtomicU32 {
        self.index(CONSUMER_INDEX)
    }

    /// Exclusive producer access (send and receive queues, owned by a QP
    /// taken by `&mut`).
    #[inline]
    pub fn producer_mut(&mut self) -> Producer<'_, MIN> {
        Producer::new(self, false)
    }

    /// Shared producer access (SRQ, posted to through `&Srq`): waits for
    /// the claim flag; uncontended, one compare-exchange. The flag is
    /// released when the `Producer` is dropped, also during a panic.
    #[inline]
    pub fn producer_shared(&self) -> Producer<'_, MIN> {
        self.acquire_claim();
        Producer::new(self, true)
    }

    /// The only consumer of a queue reached through `&Queue` (a CQ shared
    /// by QPs and threads), or, without waiting, `Err` with the state of
    /// the claim if another consumer holds it ([`Claim::Held`]: another
    /// thread is copying completions; [`Claim::Lent`]: caller code runs
    /// inside a poll, on this thread or another). One compare-exchange.
    /// `poll_with` takes its claim so. The [`Consumer`] releases the claim
    /// when dropped, also while unwinding.
    #[inline]
    pub fn try_consumer(&self) -> core::result::Result<Consumer<'_, MIN>, Claim> {
        match self.claim.compare_exchange(Claim::Free as u8, Claim::Held as u8, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => Ok(Consumer { q: self }),
            Err(v) if v == Claim::Lent as u8 => Err(Claim::Lent),
            Err(_) => Err(Claim::Held),
        }
    }

    /// The uncontended claim of a copying poll: the consumer if one
    /// compare-exchange takes the free claim, else `None`, and the poll
    /// goes out of line whole to [`Self::consumer_contended`] (so that
    /// the uncontended poll keeps no register for the wait).
    #[inline(always)]
    pub fn consumer_now(&self) -> Option<Consumer<'_, MIN>> {
        self.claim
            .compare_exchange(Claim::Free as u8, Claim::Held as u8, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Consumer { q: self })
    }

    /// The claim of a copying poll that [`Self::consumer_now`] found
    /// taken: waits for another thread's copying poll ([`Claim::Held`]:
    /// library code, bounded), or is `Err(Claim::Lent)` at once while a
    /// `poll_with` closure runs ([`wait_held`](crate::providers::claim::wait_held)).
    #[cold]
    #[inline(never)]
    pub fn consumer_contended(&self) -> core::result::Result<Consumer<'_, MIN>, Claim> {
        crate::providers::claim::wait_held(&self.claim)?;
        Ok(Consumer { q: self })
    }

    /// Waits for the claim (producers only: they run no caller code while
    /// holding it, so a holder lets go after a bounded number of steps).
    #[inline]
    fn acquire_claim(&self) {
        while self
            .claim
            .compare_exchange_weak(Claim::Free as u8, Claim::Held as u8, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
    }

    /// Address of the slot of `index` (in bounds by Q1).
    #[inline]
    fn slot_ptr(&self, index: u32) -> *mut u8 {
        self.base.as_ptr().wrapping_add(self.slot_offset(index))
    }

}



/// Byte offset of element `index` in a ring of `mask + 1` slots of
/// `1 << log2` bytes.
#[inline(always)]
fn slot_offset(mask: u32, log2: u32, index: u32) -> usize {
    DATA + (((index & mask) as usize) << log2)
}

/// Reads `T`s at the start of a ring's slots: the ring's geometry copied
/// into locals once (so that a loop does not reload it after every store
/// it makes elsewhere), and `size_of::<T>() <= elem_size` checked once.
#[derive(Clone, Copy)]
pub struct SlotReader<'q, T> {
    base: *const u8,
    mask: u32,
    log2: u32,
    _q: PhantomData<(&'q (), T)>,
}

impl<T: FromBytes> SlotReader<'_, T> {
    /// The slots `start..start + n` (at most one lap: `n` is capped at the
    /// slot count) as at most two runs of consecutive addresses, before
    /// and after the end of the ring: `(first slot, count)` pairs, each
    /// with `first + count <= slots`.
    #[inline(always)]
    fn runs(&self, start: u32, n: usize) -> [(u32, usize); 2] {
        let slots = self.mask as usize + 1;
        let first = start & self.mask;
        let n = n.min(slots);
        let run1 = n.min(slots - first as usize);
        [(first, run1), (0, n - run1)]
    }

    /// Hands `f` the position and the `T` of each slot of one run from
    /// [`SlotReader::runs`], stepping a pointer by the element size
    /// instead of computing each slot's address. Private: only runs that
    /// `runs` made (`from + count <= slots`) reach it.
    #[inline(always)]
    fn walk(&self, (from, count): (u32, usize), mut f: impl FnMut(usize, T)) {
        let mut p = self.base.wrapping_add(slot_offset(self.mask, self.log2, from));
        for k in 0..count {
            // SAFETY: `p` is the address of slot `from + k`, and `from +
            // count <= slots` (`runs`: run 1 has `count <= slots - from`,
            // run 2 starts at 0 with `count <= slots`), so the slot is one
            // of the ring's, inside the mapping (Q1: the header was checked
            // by `Queue::map`). A `T` fits in it (`size_of::<T>() <= MIN`
            // at compile time when this reader was made, `MIN <= elem_size`
            // by `Queue::map`), `T: FromBytes` accepts any bytes, and the
            // read is unaligned-tolerant. The kernel does not write a slot
            // the consumer owns (Q2); for a slot it does not own, the
            // mapping is still live memory (M1) and the value is just
            // meaningless. The mapping outlives the `'q` borrow.
            f(k, unsafe { p.cast::<T>().read_unaligned() });
            p = p.wrapping_add(1 << self.log2);
        }
    }

    /// Hands `f` the `T` of each of the `n` slots from index `start`, in
    /// ring order (at most one lap).
    ///
    /// Only meaningful for slots the consumer owns (Q2: in `[consumer,
    /// producer)` after an acquire load of the producer index, inside
    /// [`Queue::try_consumer`]); other slots may be stale or changing,
    /// but the reads are still in bounds.
    #[inline(always)]
    pub fn for_each(&self, start: u32, n: usize, mut f: impl FnMut(T)) {
        for run in self.runs(start, n) {
            self.walk(run, |_, t| f(t));
        }
    }

    /// The `T` of the one slot of index `index` (masked into the ring):
    /// for a consumer that takes a single element (`poll_with` of one
    /// completion), without the two runs of [`SlotReader::for_each`].
    /// Only meaningful for a slot the consumer owns, as there.
    #[inline(always)]
    pub fn get(&self, index: u32) -> T {
        let p = self.base.wrapping_add(slot_offset(self.mask, self.log2, index));
        // SAFETY: `slot_offset` masks `index` into `0..slots`, so `p` is
        // the address of one of the ring's slots, inside the mapping (Q1:
        // the header was checked by `Queue::map`); a `T` fits in it
        // (`size_of::<T>() <= MIN` at compile time when this reader was
        // made, `MIN <= elem_size` by `Queue::map`), `T: FromBytes`
        // accepts any bytes, and the read is unaligned-tolerant. As in
        // `walk`: the kernel does not write a slot the consumer owns (Q2),
        // any other is still live memory (M1); the mapping outlives `'q`.
        unsafe { p.cast::<T>().read_unaligned() }
    }

    /// Fills `dst` with `map` of the `T`s of the `dst.len()` slots from
    /// index `start` when they lie before the end of the ring and its
    /// stride is `1 << LOG2` (rxe's CQ element of 128 bytes: the unrolled
    /// loop then addresses each record by a displacement), and returns
    /// the OR of the 32-bit words at byte `AT` of those slots, each read
    /// from the ring after `map` stored its element (one `or` from memory
    /// a slot: a caller that must look at one field of every record,
    /// rxe's CQ flags, tests the OR once instead of each field). `None`,
    /// nothing copied, for a batch that wraps around the end of the ring
    /// or another stride: [`SlotReader::copy_into_or`] copies those.
    #[inline(always)]
    pub fn copy_fast<const AT: usize, const LOG2: u32, U>(self, start: u32, dst: &mut [U], mut map: impl FnMut(&mut U, T)) -> Option<u32> {
        const { assert!(AT + size_of::<u32>() <= size_of::<T>(), "the word is past the record") };
        let first = start & self.mask;
        // The batch ends at the end of the ring or before it: `first +
        // dst.len() <= mask + 1` (no overflow in `usize`: both sides are
        // below 2^33).
        if self.log2 != LOG2 || first as usize + dst.len() > self.mask as usize + 1 {
            return None;
        }
        Some(Self::copy_run::<AT, U>(self.base, first, LOG2, dst, &mut map))
    }

    /// [`SlotReader::copy_fast`] of any batch (at most one lap: what lies
    /// past one lap of `dst` is left alone) at the ring's stride: the
    /// slots up to the end of the ring, then those from its start.
    #[inline]
    pub fn copy_into_or<const AT: usize, U>(self, start: u32, dst: &mut [U], mut map: impl FnMut(&mut U, T)) -> u32 {
        const { assert!(AT + size_of::<u32>() <= size_of::<T>(), "the word is past the record") };
        let first = start & self.mask;
        let room = (self.mask - first) as usize + 1;
        let slots = self.mask as usize + 1;
        let dst_len = dst.len().min(slots);
        let (part, rest) = dst[..dst_len].split_at_mut(dst_len.min(room));
        Self::copy_run::<AT, U>(self.base, first, self.log2, part, &mut map)
            | Self::copy_run::<AT, U>(self.base, 0, self.log2, rest, &mut map)
    }

    /// One run of [`SlotReader::copy_fast`]: `part` from slot `from`
    /// (`from` masked), `1 << log2` bytes apart. Private, with these
    /// callers only: `from + part.len() <= slots` (`copy_fast` checks
    /// `part.len() <= room`, `copy_into_or` cuts its two runs so) and
    /// `log2` is the ring's (`self.log2`, or `LOG2` after comparing it
    /// equal).
    #[inline(always)]
    fn copy_run<const AT: usize, U>(base: *const u8, from: u32, log2: u32, part: &mut [U], map: &mut impl FnMut(&mut U, T)) -> u32 {
        // Eight records a round (the loop's steps shared by them, each
        // record addressed by a displacement when the stride is a
        // constant), then the rest one by one; driven by the destination
        // (no bounds test), the source pointer stepping along. The rounds
        // split eight off the front while eight remain (one compare a
        // round, no count of rounds and remainder set up before: `chunks_exact`
        // took 11 instructions to start and 3 to end, this 5 and 3).
        let mut p = base.wrapping_add(DATA + ((from as usize) << log2));
        let mut or = 0;
        let mut one = |d: &mut U, p: &mut *const u8| {
            // SAFETY: as in `walk`: `*p` is the address of slot `from + k`
            // of the ring for the `k`-th element of `part` (`from +
            // part.len() <= slots`, the stride is the ring's), inside the
            // mapping (Q1), holding at least a `T` (`FromBytes`, read
            // unaligned), and so the word at `AT` (inside a `T`, asserted
            // at compile time).
            map(d, unsafe { p.cast::<T>().read_unaligned() });
            // SAFETY: as above.
            or |= unsafe { p.wrapping_add(AT).cast::<u32>().read_unaligned() };
            *p = p.wrapping_add(1 << log2);
        };
        let mut part = part;
        while part.len() >= 8 {
            let (round, rest) = core::mem::take(&mut part).split_at_mut(8);
            for d in round {
                one(d, &mut p);
            }
            part = rest;
        }
        // The rest, fewer than eight, as at most a group of four, one of
        // two and one of one: no loop (whose counter and unrolling would
        // take registers that the copy's function would then save).
        if !part.is_empty() {
            for k in [4, 2, 1] {
                if part.len() >= k {
                    let (group, rest) = core::mem::take(&mut part).split_at_mut(k);
                    for d in group {
                        one(d, &mut p);
                    }
                    part = rest;
                }
            }
        }
        or
    }
}

/// The right to write the free elements of a producer ring and publish
/// them. It reads the producer index (which only it moves, Q3) and the
/// consumer index (acquire) once, when it is made: the slots it hands
/// out are the `free` ones after the producer index, which the kernel
/// does not read (Q2); the kernel only ever frees more meanwhile.
pub struct Producer<'q, const MIN: usize> {
    q: &'q Queue<MIN>,
    claimed: bool,
    /// The producer index when this producer was made.
    head: u32,
    /// Free slots from `head` then (the ring keeps one empty).
    free: u32,
}

impl<'q, const MIN: usize> Producer<'q, MIN> {
    #[inline(always)]
    fn new(q: &'q Queue<MIN>, claimed: bool) -> Self {
        let head = q.producer_word().load(Ordering::Relaxed);
        let cons = q.consumer_word().load(Ordering::Acquire);
        let free = q.index_mask - (head.wrapping_sub(cons) & q.index_mask);
        Self { q, claimed, head, free }
    }

    /// How many elements can be written before the kernel consumes more
    /// (as of when this producer was made).
    #[inline(always)]
    pub fn free(&self) -> u32 {
        self.free
    }

    /// The `k`-th free slot after the producer index, to be written
    /// before [`Producer::publish`] covers it; `None` if `k >= free()`:
    /// a slot the kernel may be reading is never handed out. Its first
    /// `MIN` bytes are written with offsets checked at compile time
    /// ([`SlotMut::put`]), the rest with run-time checks.
    #[inline(always)]
    pub fn slot(&mut self, k: u32) -> Option<SlotMut<'_, MIN>> {
        if k >= self.free {
            return None;
        }
        Some(SlotMut {
            ptr: self.q.slot_ptr(self.head.wrapping_add(k)),
            len: self.q.elem_size,
            _producer: PhantomData,
        })
    }

    /// Publishes the first `n` free slots (release: the element stores
    /// become visible to the kernel first). `n` is capped at `free()`,
    /// so the producer index never passes the consumer's. Publishing
    /// ends this producer's use: it consumes it.
    #[inline(always)]
    pub fn publish(self, n: u32) {
        let n = n.min(self.free);
        self.q
            .producer_word()
            .store(self.head.wrapping_add(n) & self.q.index_mask, Ordering::Release);
    }
}

/// One slot of a producer ring, borrowed from the [`Producer`] (so from
/// the ring's only writer, Q3) and at least `MIN` bytes long. Its writes
/// are plain stores (Q2: the kernel does not read the slot until the
/// producer index is published past it).
pub struct SlotMut<'p, const MIN: usize> {
    /// Start of the slot: inside the mapping, `len` bytes (Q1).
    ptr: *mut u8,
    /// The element size; `MIN <= len` (checked by [`Queue::map`]).
    len: usize,
    _producer: PhantomData<&'p mut ()>,
}

impl<const MIN: usize> SlotMut<'_, MIN> {
    /// Stores `v` at byte `AT`, which with `T` must lie inside the first
    /// `MIN` bytes: checked at compile time, so the store is all that runs.
    #[inline(always)]
    pub fn put<const AT: usize, T: IntoBytes + Immutable>(&mut self, v: T) {
        const { assert!(AT + size_of::<T>() <= MIN, "store past the checked part of the slot") };
        // SAFETY: `AT + size_of::<T>() <= MIN <= len` (compile-time assert
        // above; `MIN <= len` checked by `Queue::map` for this queue type), and the slot's
        // `len` bytes are inside the mapping (Q1), live while the borrowed
        // `Producer`'s queue is (M1). The `Producer` is the process's only
        // writer (Q3) and the kernel does not read the slot before it is
        // published (Q2), so a plain, unaligned-tolerant store races with
        // nothing.
        unsafe { self.ptr.wrapping_add(AT).cast::<T>().write_unaligned(v) }
    }

    /// Stores the elements of `src` back to back from byte `at` (element
    /// by element: one or two, the common counts, take no `memcpy` call);
    /// `false`, and nothing written, if they would end past the element.
    #[inline(always)]
    pub fn put_all<T: IntoBytes + Immutable + Copy>(&mut self, at: usize, src: &[T]) -> bool {
        if at > self.len || (self.len - at) / size_of::<T>().max(1) < src.len() {
            return false;
        }
        let mut p = self.ptr.wrapping_add(at);
        if let [v] = src {
            // SAFETY: as below, for the one element.
            unsafe { p.cast::<T>().write_unaligned(*v) };
            return true;
        }
        for v in src {
            // SAFETY: as in `put`: the check above puts all
            // `src.len() * size_of::<T>()` bytes from `at` inside the
            // element, and `p` advances through them one `T` at a time.
            unsafe { p.cast::<T>().write_unaligned(*v) };
            p = p.wrapping_add(size_of::<T>());
        }
        true
    }

    /// Copies `src` to byte `at`; `false`, and nothing written, if it would
    /// end past the element.
    #[inline]
    pub fn put_bytes(&mut self, at: usize, src: &[u8]) -> bool {
        if at > self.len || self.len - at < src.len() {
            return false;
        }
        // SAFETY: in bounds as in `put_all`; `src` is ordinary memory that
        // cannot overlap the mapping (no `&[u8]` into a ring exists: the
        // rings hand out no references to their bytes, M3).
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.wrapping_add(at), src.len()) };
        true
    }
}

impl<const MIN: usize> Drop for Producer<'_, MIN> {
    #[inline]
    fn drop(&mut self) {
        if self.claimed {
            self.q.claim.store(Claim::Free as u8, Ordering::Release);
        }
    }
}

/// The right to read a consumer ring's elements and free them: holds the
/// queue's claim flag (Q3), released on drop (also while unwinding), so
/// no other thread of the process reads or frees slots meanwhile. Made by
/// [`Queue::try_consumer`].
pub struct Consumer<'q, const MIN: usize> {
    q: &'q Queue<MIN>,
}

impl<const MIN: usize> Consumer<'_, MIN> {
    /// The consumer index and how many elements (at most `max`) are ready
    /// after it (producer index loaded with acquire: their slots are then
    /// the consumer's to read, Q2).
    #[inline(always)]
    pub fn ready(&self, max: usize) -> (u32, u32) {
        let cons = self.q.consumer_word().load(Ordering::Relaxed);
        let prod = self.q.producer_word().load(Ordering::Acquire);
        let n = ((prod.wrapping_sub(cons) & self.q.index_mask) as usize).min(max);
        (cons, n as u32)
    }

    /// Frees the `n` slots after `cons` (release: the reads of them come
    /// first). `n == 0` stores the index the kernel already sees (no test
    /// for it on the poll's path: the store changes nothing).
    #[inline(always)]
    pub fn release(&self, cons: u32, n: u32) {
        self.q
            .consumer_word()
            .store(cons.wrapping_add(n) & self.q.index_mask, Ordering::Release);
    }

    /// A [`SlotReader`] of `T`s, which fit in the checked `MIN` bytes of
    /// an element (a compile-time check). It borrows this consumer, so it
    /// cannot outlive the claim.
    #[inline]
    pub fn reader<T: FromBytes>(&self) -> SlotReader<'_, T> {
        const { assert!(size_of::<T>() <= MIN, "reads past the checked part of the slot") };
        SlotReader {
            base: self.q.base.as_ptr(),
            mask: self.q.index_mask,
            log2: self.q.log2_elem_size,
            _q: PhantomData,
        }
    }

    /// Takes out of the `n` slots from `cons` (the consumer's, from
    /// [`Consumer::ready`]) the elements whose leading `T` `keep` refuses:
    /// the kept ones move, in order, to the end of that range (next to the
    /// producer index) and the freed slots at its start are given back to
    /// the kernel. Returns how many were taken out. (rxe's CQ when a QP
    /// goes to RESET: its completions are dropped, as rdma-core's hardware
    /// providers' `cq_clean` does.)
    pub fn discard<T: FromBytes>(&self, cons: u32, n: u32, keep: impl Fn(&T) -> bool) -> u32 {
        const { assert!(size_of::<T>() <= MIN, "reads past the checked part of the slot") };
        let size = self.q.elem_size();
        let mut removed = 0u32;
        for k in (0..n).rev() {
            let from = self.q.slot_ptr(cons.wrapping_add(k));
            // SAFETY: slot `cons + k` is one of the ring's (the index is
            // masked, Q1: inside the mapping, `MIN <= elem_size` bytes
            // long), `T` fits in `MIN` (checked at compile time) and
            // accepts any bytes, read unaligned; `k < n` and the caller's
            // `n` came from `ready`, so the consumer owns the slot (Q2)
            // and the kernel does not write it.
            let t = unsafe { from.cast::<T>().read_unaligned() };
            if !keep(&t) {
                removed += 1;
            } else if removed > 0 {
                let to = self.q.slot_ptr(cons.wrapping_add(k + removed));
                // SAFETY: `removed` counts slots after `k` (up to `n - 1`),
                // so `k + removed < n`: slot `cons + k + removed` is also
                // the consumer's, inside the mapping, and differs from
                // slot `cons + k` (`removed > 0`, and `n` is below the
                // slot count), so the `elem_size` bytes of the two do not
                // overlap. This process touches the ring's slots only
                // through the holder of the claim (Q3), which is `self`;
                // no reference to them exists (raw pointers only).
                unsafe { core::ptr::copy_nonoverlapping(from, to, size) };
            }
        }
        self.release(cons, removed);
        removed
    }

    /// Marks the claim as lent to caller code until this consumer is
    /// dropped: a consumer that comes meanwhile is told [`Claim::Lent`].
    /// (A relaxed store: only the holder writes the flag.)
    #[inline(always)]
    pub fn lend(&self) {
        self.q.claim.store(Claim::Lent as u8, Ordering::Relaxed);
    }
}

impl<const MIN: usize> Drop for Consumer<'_, MIN> {
    #[inline]
    fn drop(&mut self) {
        self.q.claim.store(Claim::Free as u8, Ordering::Release);
    }
}
