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
//! A [`Producer`] writes slots through [`Mapping::write_unsync`], whose
//! contract (M5 of `src/mmap.rs`) is that no other thread of the process
//! touches the same bytes meanwhile. A `Producer` exists either as a
//! borrow of `&mut Queue` (exclusive by the borrow rules) or while holding
//! the queue's `claim` flag, which only one `Producer` at a time can hold
//! (acquire compare-exchange on entry, release store in `Drop`). The same
//! flag serialises consumers of a shared CQ ([`Queue::claim`]).
#![allow(unsafe_code)]

use core::mem::size_of;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use rustix::fd::AsFd;
use static_assertions::const_assert_eq;

use crate::abi::abi_struct;
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

/// A mapped rxe ring whose header has been checked.
#[derive(Debug)]
pub struct Queue {
    map: Mapping,
    mminfo: Mminfo,
    log2_elem_size: u32,
    index_mask: u32,
    /// Held by the one [`Producer`] or consumer working on a queue that is
    /// reached through `&Queue` (SRQ, CQ).
    claim: AtomicBool,
}

impl Queue {
    /// Maps the ring described by `mi` from the device file `fd` and checks
    /// its header: the element array `(index_mask + 1) << log2_elem_size`
    /// must fit in `mi.size` and the slot count must be a power of two.
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, mi: Mminfo) -> Result<Self> {
        let bad = || Error::new(verb, ErrorKind::Malformed);
        let len = mi.size as usize;
        if len < DATA {
            return Err(bad());
        }
        let map = Mapping::new(verb, fd, mi.offset, len)?;
        let log2 = map.read::<u32>(LOG2_ELEM_SIZE).ok_or_else(bad)?;
        let mask = map.read::<u32>(INDEX_MASK).ok_or_else(bad)?;
        let slots = u64::from(mask) + 1;
        if log2 >= 16 || !slots.is_power_of_two() {
            return Err(bad());
        }
        let need = (DATA as u64).checked_add(slots << log2).ok_or_else(bad)?;
        if need > len as u64 {
            return Err(bad());
        }
        Ok(Self {
            map,
            mminfo: mi,
            log2_elem_size: log2,
            index_mask: mask,
            claim: AtomicBool::new(false),
        })
    }

    /// Bytes per element (`1 << log2_elem_size`).
    pub fn elem_size(&self) -> usize {
        1 << self.log2_elem_size
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

    /// The producer index as the other side last published it (acquire).
    pub fn producer(&self) -> u32 {
        self.map
            .atomic_u32(PRODUCER_INDEX)
            .map_or(0, |a| a.load(Ordering::Acquire))
    }

    /// The consumer index as the other side last published it (acquire).
    pub fn consumer(&self) -> u32 {
        self.map
            .atomic_u32(CONSUMER_INDEX)
            .map_or(0, |a| a.load(Ordering::Acquire))
    }

    /// The underlying mapping (for the data path).
    pub fn mapping(&self) -> &Mapping {
        &self.map
    }

    /// `index_mask` of the ring.
    pub fn index_mask(&self) -> u32 {
        self.index_mask
    }

    /// Byte offset (in the mapping) of element `index`.
    #[inline]
    pub fn slot_offset(&self, index: u32) -> usize {
        DATA + (((index & self.index_mask) as usize) << self.log2_elem_size)
    }

    #[inline]
    fn index(&self, off: usize) -> &AtomicU32 {
        // Both offsets are checked in bounds and 4-aligned by `map` (the
        // mapping is at least DATA bytes), so this never falls back.
        match self.map.atomic_u32(off) {
            Some(a) => a,
            None => unreachable_index(),
        }
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
    pub fn producer_mut(&mut self) -> Producer<'_> {
        Producer {
            q: self,
            claimed: false,
        }
    }

    /// Shared producer access (SRQ, posted to through `&Srq`): waits for
    /// the claim flag; uncontended, one compare-exchange.
    #[inline]
    pub fn producer_shared(&self) -> Producer<'_> {
        self.acquire_claim();
        Producer {
            q: self,
            claimed: true,
        }
    }

    /// Runs `f` as the only consumer of a queue reached through `&Queue`
    /// (a CQ shared by QPs and threads).
    #[inline]
    pub fn with_consumer<R>(&self, f: impl FnOnce(&Self) -> R) -> R {
        self.acquire_claim();
        let r = f(self);
        self.claim.store(false, Ordering::Release);
        r
    }

    #[inline]
    fn acquire_claim(&self) {
        while self
            .claim
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
    }

    /// A volatile copy of the element part at `off` (bounds-checked).
    #[inline]
    pub fn read<T: FromBytes>(&self, off: usize) -> Option<T> {
        self.map.read(off)
    }
}

#[cold]
fn unreachable_index() -> ! {
    // `Queue::map` checked that the mapping covers the header, so the
    // index words are always in bounds; reaching this is a bug here.
    panic!("rxe queue header outside its mapping")
}

/// The right to write elements of a producer ring and publish them.
pub struct Producer<'q> {
    q: &'q Queue,
    claimed: bool,
}

impl Producer<'_> {
    /// The ring.
    #[inline]
    pub fn queue(&self) -> &Queue {
        self.q
    }

    /// Free slots (the ring keeps one empty): how many elements can be
    /// written before the kernel consumes more.
    #[inline]
    pub fn free(&self) -> u32 {
        let prod = self.q.producer_word().load(Ordering::Relaxed);
        let cons = self.q.consumer_word().load(Ordering::Acquire);
        self.q.index_mask - (prod.wrapping_sub(cons) & self.q.index_mask)
    }

    /// The producer index (only this producer moves it).
    #[inline]
    pub fn head(&self) -> u32 {
        self.q.producer_word().load(Ordering::Relaxed)
    }

    /// Stores `v` at byte offset `off` of the mapping; `false` if out of
    /// bounds or misaligned.
    #[inline]
    pub fn write<T: IntoBytes + Immutable>(&mut self, off: usize, v: T) -> bool {
        // SAFETY: this `Producer` is the only writer of the ring's slots in
        // the process: it borrows `&mut Queue` or holds the claim flag
        // (module docs), which is `write_unsync`'s contract.
        unsafe { self.q.map.write_unsync(off, v) }
    }

    /// Copies `src` to byte offset `off`; `false` if out of bounds.
    #[inline]
    pub fn write_bytes(&mut self, off: usize, src: &[u8]) -> bool {
        // SAFETY: as in `write`.
        unsafe { self.q.map.write_bytes_unsync(off, src) }
    }

    /// Publishes every element written up to index `new_head` (release:
    /// the element stores become visible to the kernel first).
    #[inline]
    pub fn publish(&mut self, new_head: u32) {
        self.q
            .producer_word()
            .store(new_head & self.q.index_mask, Ordering::Release);
    }
}

impl Drop for Producer<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.claimed {
            self.q.claim.store(false, Ordering::Release);
        }
    }
}
