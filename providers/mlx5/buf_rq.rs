//! A QP's receive ring and receive doorbell word in a [`WqBuf`], checked
//! once when the queue is made (B7), so that the straight `post_recv`
//! stores its segments and the doorbell record with no check per store.
//!
//! # Safety
//!
//! **B7 — `RqRing`.** Made only by [`WqBuf::rq_ring`] (or
//! [`WqBuf::rq_ring_unchecked`], whose caller promises that `rq_ring`'s
//! one comparison, [`RqGeom::fits`], is true: B8 of `direct.rs`) from an
//! [`RqGeom`], whose constructor checked (once, when the queue was made)
//! that the ring of `mask + 1` (a power of two) WQEs of `1 << shift` bytes at
//! byte 0, each with room for `segs >= 1` 16-byte segments (`segs << 4 <=
//! 1 << shift`), and the 4-aligned doorbell word at `dbrec` both end at or
//! before `need` (checked arithmetic); `rq_ring` checks `need <= len` of
//! the live mapping (B1) and borrows the buffer mutably for the view's
//! lifetime (B3), and the geometry mutably too (so it cannot change under
//! the view; `RqGeom`'s fields are private and set only by its
//! constructor). A store masks the WQE index by `mask` and checks the
//! segment index against `segs`, so every address it forms is inside the
//! checked range; the doorbell word is a `DbWord` of `buf.rs` (its one
//! proof, B6/B7 there). Stores are unaligned (`write_unaligned`); nothing
//! is read. The geometry owns the queue's `wr_id` table, made by the same
//! constructor with `mask + 1` entries (B4): a view exists only for a
//! usable geometry, whose WQE count is a power of two, so the WQE index
//! masked by `mask` is an entry of the table too, and one masked index
//! serves both stores ([`RqRing::put_first`]).
#![allow(unsafe_code)]

use core::marker::PhantomData;
use core::mem::size_of;
use core::sync::atomic::Ordering;

use zerocopy::{Immutable, IntoBytes};

use super::{DbWord, Table, WqBuf};
use crate::error::Result;

/// Bytes of one receive segment (a data segment or the terminator).
const SEG: usize = 16;

/// Where a QP's receive ring and doorbell word lie in its buffer, checked
/// once (B7); [`WqBuf::rq_ring`] then needs one comparison per post. The
/// ring is at byte 0 of the buffer, where libmlx5 puts it (a geometry
/// with the ring elsewhere is unusable: its queue posts the general way).
/// It owns the queue's `wr_id` table (one entry per WQE), so that the
/// straight post masks its index once for the WQE and the entry.
#[derive(Debug)]
pub struct RqGeom {
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
    /// The `wr_id`s, `wqes` entries (B4; `wqes - 1 == mask` whenever a
    /// view exists).
    wrid: Table<u64>,
}

impl RqGeom {
    /// `wqes` WQEs of `1 << shift` bytes at byte `base` (unusable unless
    /// 0), each holding `segs` segments (unusable if none: sizing gives
    /// at least one, `rq_size`), and the receive doorbell word at byte
    /// `dbrec`; with a zeroed `wr_id` table of `wqes` entries (an error
    /// naming `verb` if it cannot be mapped).
    pub fn new(verb: &'static str, base: usize, wqes: u32, shift: u32, segs: u32, dbrec: usize) -> Result<Self> {
        let ok = base == 0 && segs >= 1 && wqes.is_power_of_two() && (4..=16).contains(&shift) && (segs as usize) * SEG <= 1 << shift.min(16) && dbrec.is_multiple_of(4);
        let ring_end = (wqes as usize).checked_mul(1 << shift.min(16)).filter(|_| ok);
        let need = match (ring_end, dbrec.checked_add(4)) {
            (Some(r), Some(d)) => r.max(d),
            _ => usize::MAX,
        };
        let wrid = Table::new(verb, wqes as usize)?;
        Ok(Self { mask: wqes.wrapping_sub(1), shift: shift.min(16), segs, dbrec, need, wrid })
    }

    /// The `wr_id` table (`wqes` entries).
    #[inline(always)]
    pub fn wrid(&self) -> &Table<u64> {
        &self.wrid
    }

    /// The `wr_id` table, to write.
    #[inline(always)]
    pub fn wrid_mut(&mut self) -> &mut Table<u64> {
        &mut self.wrid
    }
}

/// A receive ring and its doorbell word in a [`WqBuf`], checked once (B7).
/// It keeps the geometry by reference, so that each field is loaded
/// where a store needs it (copied up front they took registers the whole
/// post long, and the post a bigger frame).
#[derive(Debug)]
pub struct RqRing<'b> {
    /// Byte 0 of the live mapping; the checked range is `[0, g.need)`.
    p: *mut u8,
    g: &'b mut RqGeom,
    _b: PhantomData<&'b mut WqBuf>,
}

impl RqGeom {
    /// Whether `buf` holds the ring and the doorbell word (B7's one
    /// comparison): then [`WqBuf::rq_ring`] of it is `Some`.
    #[inline(always)]
    pub fn fits(&self, buf: &WqBuf) -> bool {
        self.need <= buf.0.len
    }
}

impl WqBuf {
    /// The receive ring `g` describes; `None` if the buffer is too short.
    #[inline(always)]
    pub fn rq_ring<'b>(&'b mut self, g: &'b mut RqGeom) -> Option<RqRing<'b>> {
        if !g.fits(self) {
            return None;
        }
        Some(RqRing { p: self.0.ptr.as_ptr(), g, _b: PhantomData })
    }

    /// [`WqBuf::rq_ring`] without its comparison (B8: the direct
    /// `post_recv` of a QP whose buffer was found to hold its ring when
    /// its handle was made, `direct.rs`).
    ///
    /// # Safety
    ///
    /// `g.fits(self)`: a geometry's fields never change after it is made
    /// and a buffer's length never changes, so an earlier `true` for
    /// this same geometry and buffer stands.
    #[inline(always)]
    pub unsafe fn rq_ring_unchecked<'b>(&'b mut self, g: &'b mut RqGeom) -> RqRing<'b> {
        // SAFETY: the caller's promise: `g.need <= len`, B7's one check,
        // which is all `rq_ring` adds to this.
        unsafe { core::hint::assert_unchecked(g.fits(self)) };
        RqRing { p: self.0.ptr.as_ptr(), g, _b: PhantomData }
    }
}

impl RqRing<'_> {
    /// Stores `v` (at most 16 bytes) as segment `k` of WQE `idx & mask`;
    /// `false`, nothing stored, if the WQE has no segment `k`.
    #[inline(always)]
    pub fn put_seg<T: IntoBytes + Immutable>(&mut self, idx: u32, k: u32, v: T) -> bool {
        const { assert!(size_of::<T>() <= SEG, "a receive segment is 16 bytes") };
        let g = &*self.g;
        if k >= g.segs {
            return false;
        }
        let off = (((idx & g.mask) as usize) << g.shift) + k as usize * SEG;
        // SAFETY: WQE `idx & mask` of the ring and its segment `k < segs`,
        // `segs * 16 <= 1 << shift`: inside the range `RqGeom::new` and
        // `rq_ring` checked in the live mapping (B7, B1); the view borrows
        // the buffer mutably (B3); an unaligned store.
        unsafe { self.p.wrapping_add(off).cast::<T>().write_unaligned(v) };
        true
    }

    /// Writes `wr_id` into entry `idx & mask` of the `wr_id` table, then
    /// WQE `idx & mask` of a receive as libmlx5 does: with `first()` (the
    /// data segment of one non-empty SGE), it as segment 0 (every WQE of
    /// the view has one, B7), then the terminator `end` if the WQE has
    /// room for it; with none, `end` as segment 0. The index masked once
    /// for the entry and the WQE, one test of the segment count. (`first`
    /// is asked after the `wr_id` is stored, which frees its register for
    /// the segment's.)
    #[inline(always)]
    pub fn put_first<T: IntoBytes + Immutable>(&mut self, idx: u32, wr_id: u64, first: impl FnOnce() -> Option<T>, end: T) {
        const { assert!(size_of::<T>() <= SEG, "a receive segment is 16 bytes") };
        let g = &mut *self.g;
        let ind = (idx & g.mask) as usize;
        // SAFETY: a view exists only for a usable geometry (B7), whose
        // `wqes = mask + 1` is a power of two; the table was made with
        // `wqes` entries by the same constructor and is a private field
        // (never replaced), so `ind <= mask` is one of its entries (B4),
        // aligned, reached only through the `&mut` the view holds.
        unsafe { g.wrid.pages.ptr.as_ptr().cast::<u64>().wrapping_add(ind).write(wr_id) };
        let wqe = self.p.wrapping_add(ind << g.shift);
        match first() {
            Some(first) => {
                // SAFETY: segment 0 (`segs >= 1`, B7) of WQE `idx & mask`,
                // inside the range `RqGeom::new` and `rq_ring` checked in
                // the live mapping (B7, B1), as in `put_seg`; an unaligned
                // store.
                unsafe { wqe.cast::<T>().write_unaligned(first) };
                if g.segs > 1 {
                    // SAFETY: segment 1 (`1 < segs`) of the same WQE, as above.
                    unsafe { wqe.wrapping_add(SEG).cast::<T>().write_unaligned(end) };
                }
            }
            // SAFETY: segment 0 of the same WQE, as above.
            None => unsafe { wqe.cast::<T>().write_unaligned(end) },
        }
    }

    /// Stores `v` (the counter, already big-endian) into the receive
    /// doorbell word with release ordering: after every store of the view.
    /// (The word is made here, from the geometry `rq_ring` checked, rather
    /// than kept: one register fewer across the post.)
    #[inline(always)]
    pub fn store_db(&self, v: u32) {
        DbWord::at(self.p, self.g.dbrec).word().store(v, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geom(base: usize, wqes: u32, shift: u32, segs: u32, dbrec: usize) -> RqGeom {
        RqGeom::new("test", base, wqes, shift, segs, dbrec).unwrap()
    }

    #[test]
    fn receive_ring_views_are_checked_once_and_stay_inside() {
        let mut b = WqBuf::new("test", 4096).unwrap();
        assert!(b.rq_ring(&mut geom(64, 64, 6, 4, 0)).is_none(), "ring ends past the buffer");
        assert!(b.rq_ring(&mut geom(0, 64, 4, 1, 4096 - 2)).is_none(), "doorbell word ends past the buffer");
        assert!(b.rq_ring(&mut geom(0, 48, 4, 1, 4000)).is_none(), "not a power of two");
        assert!(b.rq_ring(&mut geom(0, 8, 4, 2, 4000)).is_none(), "more segments than the stride holds");
        assert!(b.rq_ring(&mut geom(0, 8, 3, 1, 4000)).is_none(), "stride below 16 bytes");
        assert!(b.rq_ring(&mut geom(0, 8, 4, 1, 4001)).is_none(), "misaligned doorbell word");
        assert!(b.rq_ring(&mut geom(usize::MAX - 8, 8, 4, 1, 4000)).is_none(), "overflowing offset");
        assert!(b.rq_ring(&mut geom(0, 1 << 20, 16, 1, 4000)).is_none(), "a ring larger than the buffer");
        assert!(b.rq_ring(&mut geom(1024, 8, 5, 2, 4092)).is_none(), "a ring not at byte 0");
        let mut g = geom(0, 8, 5, 2, 4092);
        let mut r = b.rq_ring(&mut g).unwrap();
        assert!(r.put_seg(8 + 3, 1, 0x1122u64), "index masked");
        assert!(!r.put_seg(2, 2, 7u64), "no third segment");
        assert!(r.put_seg(7, 1, [9u8; 16]), "the ring's last bytes");
        r.store_db(0x1234);
        r.put_first(8 + 5, 77, || Some([1u8; 16]), [2u8; 16]);
        r.put_first(8 + 6, 78, || None, [3u8; 16]);
        b.rq_ring(&mut geom(0, 8, 4, 1, 4000)).unwrap().put_first(1, 9, || Some([4u8; 16]), [5u8; 16]);
        assert!(b.rq_ring(&mut geom(0, 8, 4, 0, 4000)).is_none(), "WQEs of no segment");
        assert_eq!(b.get::<[u8; 16]>(5 * 32), Some([1; 16]));
        assert_eq!(b.get::<[u8; 16]>(5 * 32 + 16), Some([2; 16]));
        assert_eq!(b.get::<[u8; 16]>(16), Some([4; 16]), "WQE 1 of a 16-byte stride");
        assert_eq!(b.get::<[u8; 16]>(32), Some([0; 16]), "no terminator past it (max_gs 1)");
        assert_eq!(b.get::<u64>(3 * 32 + 16), Some(0x1122));
        assert_eq!(b.get::<[u8; 16]>(8 * 32 - 16), Some([9; 16]));
        assert_eq!(b.get::<u64>(2 * 32 + 32), Some(0), "nothing past segment 1 of WQE 2");
        assert_eq!(b.get::<u32>(4092), Some(0x1234));
        assert_eq!(b.get::<[u8; 16]>(6 * 32), Some([3; 16]), "no SGE: the terminator as segment 0");
        assert_eq!(b.get::<[u8; 16]>(6 * 32 + 16), Some([0; 16]), "and nothing after it");
        assert_eq!((g.wrid()[5], g.wrid()[6], g.wrid().len()), (77, 78, 8), "wr_ids at the masked index");
    }
}
