//! A QP's receive ring and receive doorbell word in a [`WqBuf`], checked
//! once when the queue is made (B7), so that the straight `post_recv`
//! stores its segments and the doorbell record with no check per store.
//!
//! # Safety
//!
//! **B7 — `RqRing`.** Made only by [`WqBuf::rq_ring`] from an [`RqGeom`],
//! whose constructor checked (once, when the queue was made) that the
//! ring of `mask + 1` (a power of two) WQEs of `1 << shift` bytes at
//! `base`, each with room for `segs` 16-byte segments (`segs << 4 <= 1 <<
//! shift`), and the 4-aligned doorbell word at `dbrec` both end at or
//! before `need` (checked arithmetic); `rq_ring` checks `need <= len` of
//! the live mapping (B1) and borrows the buffer mutably for the view's
//! lifetime (B3). A store masks the WQE index by `mask` and checks the
//! segment index against `segs`, so every address it forms is inside the
//! checked range; the doorbell word is a `DbWord` of `buf.rs` (its one
//! proof, B6/B7 there). Stores are unaligned (`write_unaligned`); nothing
//! is read.
#![allow(unsafe_code)]

use core::marker::PhantomData;
use core::mem::size_of;
use core::sync::atomic::AtomicU32;

use zerocopy::{Immutable, IntoBytes};

use super::{DbWord, WqBuf};

/// Bytes of one receive segment (a data segment or the terminator).
const SEG: usize = 16;

/// Where a QP's receive ring and doorbell word lie in its buffer, checked
/// once (B7); [`WqBuf::rq_ring`] then needs one comparison per post.
#[derive(Clone, Copy, Debug)]
pub struct RqGeom {
    base: usize,
    /// WQEs - 1 (WQEs a power of two).
    mask: u32,
    /// log2 of the WQE stride.
    shift: u32,
    /// Segments a WQE holds.
    segs: u32,
    /// Byte offset of the receive doorbell word (4-aligned).
    dbrec: usize,
    /// Bytes a buffer needs for both; `usize::MAX` if the geometry is
    /// unusable (no buffer is that long, so no view is ever made).
    need: usize,
}

impl RqGeom {
    /// `wqes` WQEs of `1 << shift` bytes at byte `base`, each holding
    /// `segs` segments, and the receive doorbell word at byte `dbrec`.
    pub fn new(base: usize, wqes: u32, shift: u32, segs: u32, dbrec: usize) -> Self {
        let ok = wqes.is_power_of_two() && (4..=16).contains(&shift) && (segs as usize) * SEG <= 1 << shift.min(16) && dbrec.is_multiple_of(4);
        let ring_end = (wqes as usize).checked_mul(1 << shift.min(16)).filter(|_| ok).and_then(|b| base.checked_add(b));
        let need = match (ring_end, dbrec.checked_add(4)) {
            (Some(r), Some(d)) => r.max(d),
            _ => usize::MAX,
        };
        Self { base, mask: wqes.wrapping_sub(1), shift: shift.min(16), segs, dbrec, need }
    }
}

/// A receive ring and its doorbell word in a [`WqBuf`], checked once (B7).
#[derive(Debug)]
pub struct RqRing<'b> {
    /// WQE 0: `(mask + 1) << shift` bytes of the live mapping from here.
    ring: *mut u8,
    mask: u32,
    shift: u32,
    segs: u32,
    db: DbWord<'b>,
    _b: PhantomData<&'b mut WqBuf>,
}

impl WqBuf {
    /// The receive ring `g` describes; `None` if the buffer is too short.
    #[inline(always)]
    pub fn rq_ring(&mut self, g: &RqGeom) -> Option<RqRing<'_>> {
        if g.need > self.0.len {
            return None;
        }
        let p = self.0.ptr.as_ptr();
        Some(RqRing { ring: p.wrapping_add(g.base), mask: g.mask, shift: g.shift, segs: g.segs, db: DbWord::at(p, g.dbrec), _b: PhantomData })
    }
}

impl RqRing<'_> {
    /// Stores `v` (at most 16 bytes) as segment `k` of WQE `idx & mask`;
    /// `false`, nothing stored, if the WQE has no segment `k`.
    #[inline(always)]
    pub fn put_seg<T: IntoBytes + Immutable>(&mut self, idx: u32, k: u32, v: T) -> bool {
        const { assert!(size_of::<T>() <= SEG, "a receive segment is 16 bytes") };
        if k >= self.segs {
            return false;
        }
        let off = (((idx & self.mask) as usize) << self.shift) + k as usize * SEG;
        // SAFETY: WQE `idx & mask` of the ring and its segment `k < segs`,
        // `segs * 16 <= 1 << shift`: inside the range `RqGeom::new` and
        // `rq_ring` checked in the live mapping (B7, B1); the view borrows
        // the buffer mutably (B3); an unaligned store.
        unsafe { self.ring.wrapping_add(off).cast::<T>().write_unaligned(v) };
        true
    }

    /// The receive doorbell word, for the release store of the counter.
    #[inline(always)]
    pub fn dbrec(&self) -> &AtomicU32 {
        self.db.word()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_ring_views_are_checked_once_and_stay_inside() {
        let mut b = WqBuf::new("test", 4096).unwrap();
        assert!(b.rq_ring(&RqGeom::new(64, 64, 6, 4, 0)).is_none(), "ring ends past the buffer");
        assert!(b.rq_ring(&RqGeom::new(0, 64, 4, 1, 4096 - 2)).is_none(), "doorbell word ends past the buffer");
        assert!(b.rq_ring(&RqGeom::new(0, 48, 4, 1, 4000)).is_none(), "not a power of two");
        assert!(b.rq_ring(&RqGeom::new(0, 8, 4, 2, 4000)).is_none(), "more segments than the stride holds");
        assert!(b.rq_ring(&RqGeom::new(0, 8, 3, 0, 4000)).is_none(), "stride below 16 bytes");
        assert!(b.rq_ring(&RqGeom::new(0, 8, 4, 1, 4001)).is_none(), "misaligned doorbell word");
        assert!(b.rq_ring(&RqGeom::new(usize::MAX - 8, 8, 4, 1, 4000)).is_none(), "overflowing offset");
        assert!(b.rq_ring(&RqGeom::new(0, 1 << 31, 16, 1, 4000)).is_none(), "a ring larger than the buffer");
        let mut r = b.rq_ring(&RqGeom::new(1024, 8, 5, 2, 4092)).unwrap();
        assert!(r.put_seg(8 + 3, 1, 0x1122u64), "index masked");
        assert!(!r.put_seg(2, 2, 7u64), "no third segment");
        assert!(r.put_seg(7, 1, [9u8; 16]), "the ring's last bytes");
        r.dbrec().store(0x1234, core::sync::atomic::Ordering::Release);
        assert_eq!(b.get::<u64>(1024 + 3 * 32 + 16), Some(0x1122));
        assert_eq!(b.get::<[u8; 16]>(1024 + 8 * 32 - 16), Some([9; 16]));
        assert_eq!(b.get::<u64>(1024 + 2 * 32 + 32), Some(0), "nothing past segment 1 of WQE 2");
        assert_eq!(b.get::<u32>(4092), Some(0x1234));
    }
}
