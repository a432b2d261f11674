//! Memory the mlx5 provider allocates for itself: the work queue and CQ
//! buffers and doorbell records the device reaches by DMA ([`WqBuf`]),
//! and the per-WQE bookkeeping only the library reads ([`Table`]).
//!
//! Both are anonymous page-aligned mappings (no heap: the core never
//! allocates), zero-filled by the kernel, unmapped in `Drop`. A `WqBuf`
//! is device-visible: it hands out no `&`/`&mut` to its bytes, only
//! bounds-checked stores and loads of plain data through raw pointers and
//! `&AtomicU32` for doorbell record words.
//!
//! # Safety
//!
//! * **B1 — ownership.** `ptr..ptr+len` is a private anonymous mapping
//!   made by `Pages::new` or `Pages::huge` (NULL hint, no `MAP_FIXED`, so
//!   it replaces nothing; `huge`: of 2 MiB pages, `len` whole ones) and
//!   unmapped only by `Pages`' `Drop`; the pointer is private,
//!   so every in-bounds address stays valid for reads and writes while
//!   the owner lives.
//! * **B2 — bounds and alignment.** Every access checks
//!   `off + size <= len` (checked arithmetic; a [`Window`] checks its
//!   whole run once, then each store against the window: at compile time
//!   inside its first 64 bytes, or at run time); `ptr` is page aligned, so
//!   `off % align == 0` makes an aligned address, which the volatile
//!   loads and the atomics check before use; stores are unaligned-tolerant.
//! * **B3 — no references to device-visible bytes.** Plain data moves by
//!   `write_unaligned` (stores into WQE slots the device does not read
//!   before their doorbell record covers them) and `read_volatile` of
//!   `FromBytes` types (CQEs the device may be writing: any bytes are a
//!   valid value; a torn read is caught by the owner-bit protocol of
//!   `cqe.rs`, never by the types). The one plain load,
//!   [`Window::block`], reads back a send WQE the window just wrote,
//!   bytes the device only reads. Stores take `&mut WqBuf`, so no
//!   `&AtomicU32` borrowed from the same buffer is alive meanwhile.
//! * **B5 — `CqeRing`.** Made only by `WqBuf::cqe_ring_of` from a
//!   [`CqGeom`], whose constructor checked once (when the CQ is made or a
//!   resize sets its entry count: the `CqRing` keeps it beside `ncqe`, set
//!   under the same `&mut` as the buffer swap) that `ncqe` is a power of
//!   two and the size 64 or 128, and computed `need = ncqe * cqe_size`
//!   (checked; `usize::MAX` if unusable); `cqe_ring_of` checks `need <=
//!   len` of the buffer it is given, and borrows it for the view's
//!   lifetime; each load masks the
//!   entry index by `ncqe - 1` and the word index by 7 and shifts it by
//!   the ring's own entry size, so every address
//!   it forms is inside that checked range (no per-load check needed) and
//!   8-aligned. `run64` (the poll's tight loop) hands out `Cqe64At`s,
//!   only after testing the ring's entries 64 bytes: the entries from
//!   `start = i & mask` on, at most `mask - start + 1` of them (never
//!   past the last), each a pointer `64 * k` past entry `start`'s, and
//!   returns the last one it handed again (if it handed any: the pointer
//!   one entry before where it stopped); a `Cqe64At` (private field, made
//!   only there, borrowing the ring's buffer) masks its word index by 7.
//! * **B6 — `SqRing`.** Made only by `WqBuf::sq_ring` from an [`SqGeom`],
//!   whose constructor checked (once, when the queue was made) that the
//!   ring of `mask + 1` (a power of two) 64-byte blocks at the 8-aligned
//!   `base` and the 4-aligned doorbell word at `dbrec` both end at or
//!   before `need` (checked arithmetic); `sq_ring` checks `need <= len`
//!   and borrows the buffer mutably for the view's lifetime, and the
//!   geometry shared (so it cannot change under the view; `SqGeom`'s
//!   fields are private and set only by its constructor). A one-block
//!   window masks its index by `mask` (the current block, `sq_ring_at`,
//!   is masked once when the view is made); a longer one checks `idx + nbb <=
//!   mask + 1`: every address formed is inside the checked range, without
//!   a check per store. The doorbell word of both ring views (this one
//!   and B7's `RqRing`) is a `DbWord`, made only by `sq_ring`/`rq_ring`
//!   (or `SqRing::store_db`, `RqRing::store_db` from the geometry their view checked)
//!   at the offset their geometry checked (4 bytes, 4-aligned) and lent
//!   as `&AtomicU32` only through the view's `&self`, while the view's
//!   stores take `&mut self` (B3); its one `from_ptr` carries the proof.
//! * **B4 — `Table`.** Library-private memory no device is told about:
//!   ordinary `&[T]`/`&mut [T]` over it are sound, because all-zero bytes
//!   are a valid `T` (`FromZeros`) and the length is `n * size_of::<T>()`
//!   bytes of the mapping (at least one entry is mapped: `at_mut`'s
//!   masked index, below `n` for a power-of-two `n`, else 0).
//!
//! What the device does to a `WqBuf` whose address it was given is its
//! contract, not the types': a device breaking it changes the values
//! read, never the addresses touched.
#![allow(unsafe_code)]

use core::ffi::c_void;
use core::marker::PhantomData;
use core::mem::{align_of, size_of};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use rustix::mm::{MapFlags, ProtFlags};
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes};

use crate::error::{Error, ErrorKind, Result};

#[path = "buf_rq.rs"]
mod rq_view;
pub use rq_view::{RqGeom, RqRing};

const PAGE: usize = 4096;

/// An anonymous mapping of whole pages (B1).
#[derive(Debug)]
struct Pages {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: `Pages` owns its mapping (B1); moving it moves a pointer, and
// munmap may run on any thread.
unsafe impl Send for Pages {}
// SAFETY: shared access (`&WqBuf`, `&Table`) only reads or uses atomics.
unsafe impl Sync for Pages {}

impl Pages {
    fn new(verb: &'static str, bytes: usize) -> Result<Self> {
        let len = bytes.max(1).checked_next_multiple_of(PAGE).ok_or(Error::new(verb, ErrorKind::InvalidArgument))?;
        // SAFETY: a fresh mapping where the kernel chooses (NULL hint, no
        // MAP_FIXED): nothing existing is replaced; `Self` owns it (B1).
        let p = unsafe {
            rustix::mm::mmap_anonymous(core::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE)
        }
        .map_err(|e| Error::from_errno(verb, e))?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Error::new(verb, ErrorKind::OutOfResources))?;
        Ok(Self { ptr, len })
    }

    /// As [`Pages::new`], of 2 MiB huge pages (`MAP_HUGETLB`): fails
    /// (`ENOMEM`) where the system has none free.
    fn huge(verb: &'static str, bytes: usize) -> Result<Self> {
        let len = bytes.max(1).checked_next_multiple_of(crate::HUGE_PAGE_SIZE).ok_or(Error::new(verb, ErrorKind::InvalidArgument))?;
        // SAFETY: as in `new`: a fresh mapping, nothing replaced (B1).
        let p = unsafe {
            rustix::mm::mmap_anonymous(core::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE | MapFlags::HUGETLB)
        }
        .map_err(|e| Error::from_errno(verb, e).with_detail("mlx5: no huge pages for the buffer (MLX_*_ALLOC_TYPE)"))?;
        let ptr = NonNull::new(p.cast::<u8>()).ok_or(Error::new(verb, ErrorKind::OutOfResources))?;
        Ok(Self { ptr, len })
    }

    /// The address of `off` if `size` bytes from it are inside (B2).
    #[inline(always)]
    fn at(&self, off: usize, size: usize) -> Option<*mut u8> {
        match off.checked_add(size) {
            Some(end) if end <= self.len => Some(self.ptr.as_ptr().wrapping_add(off)),
            _ => None,
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping `new` made (B1); its owner is going
        // away, so no borrow of it outlives the unmap.
        let r = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast::<c_void>(), self.len) };
        if let Err(e) = r {
            crate::error::report_drop_failure(Error::from_errno("munmap", e));
        }
    }
}

/// Where a queue's buffer comes from: libmlx5's `mlx5_get_alloc_type`,
/// from the environment variable `<component>_ALLOC_TYPE` (`MLX_CQ`,
/// `MLX_QP`, `MLX_SRQ`; the value case-insensitive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocType {
    /// Anonymous pages (the default; also `ANON`, and `CONTIG` /
    /// `PREFER_CONTIG`: the device's contiguous-pages mapping is not
    /// implemented here).
    Anon,
    /// `HUGE`: huge pages, or the create fails (`ENOMEM`).
    Huge,
    /// `PREFER_HUGE` (and `ALL`, whose contiguous step is skipped): huge
    /// pages if there are, else anonymous ones.
    PreferHuge,
}

impl AllocType {
    /// `<component>_ALLOC_TYPE` as libmlx5 reads it.
    pub fn from_env(component: &str) -> Self {
        let mut name = heapless::String::<32>::new();
        if name.push_str(component).and_then(|()| name.push_str("_ALLOC_TYPE")).is_err() {
            return Self::Anon;
        }
        match std::env::var(name.as_str()) {
            Ok(v) if v.eq_ignore_ascii_case("HUGE") => Self::Huge,
            Ok(v) if v.eq_ignore_ascii_case("PREFER_HUGE") || v.eq_ignore_ascii_case("ALL") => Self::PreferHuge,
            _ => Self::Anon,
        }
    }
}

/// Device-visible memory: a queue buffer, a CQ buffer, doorbell records.
#[derive(Debug)]
pub struct WqBuf(Pages);

impl WqBuf {
    /// Maps at least `bytes` zeroed bytes, page aligned (whole pages).
    pub fn new(verb: &'static str, bytes: usize) -> Result<Self> {
        Pages::new(verb, bytes).map(Self)
    }

    /// As [`WqBuf::new`], from where `alloc` says (libmlx5's
    /// `mlx5_alloc_prefered_buf`: huge pages first for `Huge` and
    /// `PreferHuge`, the fallback only for the latter).
    pub fn alloc(verb: &'static str, bytes: usize, alloc: AllocType) -> Result<Self> {
        match alloc {
            AllocType::Anon => Pages::new(verb, bytes),
            AllocType::Huge => Pages::huge(verb, bytes),
            AllocType::PreferHuge => Pages::huge(verb, bytes).or_else(|_| Pages::new(verb, bytes)),
        }
        .map(Self)
    }

    /// The address the device is given (`buf_addr`, `db_addr`).
    pub fn addr(&self) -> u64 {
        self.0.ptr.as_ptr() as u64
    }

    /// Length in bytes (whole pages).
    pub fn len(&self) -> usize {
        self.0.len
    }

    /// Never empty (at least one page); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Stores `v` at byte `off`; `false`, and nothing stored, if it would
    /// end past the buffer.
    #[inline(always)]
    pub fn put<T: IntoBytes + Immutable>(&mut self, off: usize, v: T) -> bool {
        let Some(p) = self.0.at(off, size_of::<T>()) else { return false };
        // SAFETY: in bounds (B2) of a live mapping (B1); `&mut self`
        // excludes every other access from this process (B3).
        unsafe { p.cast::<T>().write_unaligned(v) };
        true
    }

    /// Copies `src` to byte `off`; `false`, and nothing stored, if it
    /// would end past the buffer.
    #[inline]
    pub fn put_bytes(&mut self, off: usize, src: &[u8]) -> bool {
        let Some(p) = self.0.at(off, src.len()) else { return false };
        // SAFETY: as in `put`; `src` cannot overlap the mapping (no
        // reference into a `WqBuf` exists, B3).
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len()) };
        true
    }

    /// Loads a `T` from byte `off` with volatile reads; `None` if it
    /// would end past the buffer or `off` is not aligned for `T`. A `T`
    /// of whole 8-byte words at an 8-byte aligned `off` is read word by
    /// word (a CQE: 8 loads, where one volatile read of a byte-aligned
    /// 64-byte struct compiles to 64 byte loads).
    #[inline(always)]
    pub fn get<T: FromBytes>(&self, off: usize) -> Option<T> {
        let p = self.0.at(off, size_of::<T>())?;
        if !off.is_multiple_of(align_of::<T>()) {
            return None;
        }
        if size_of::<T>().is_multiple_of(8) && off.is_multiple_of(8) {
            let mut v = core::mem::MaybeUninit::<T>::uninit();
            let dst = v.as_mut_ptr().cast::<u64>();
            for i in 0..size_of::<T>() / 8 {
                let src = p.cast::<u64>().wrapping_add(i);
                // SAFETY: word `i` lies inside the `size_of::<T>()` bytes
                // checked in bounds (B2), 8-aligned (page-aligned base,
                // `off % 8 == 0`), in a live mapping (B1), no reference
                // to it exists (B3).
                let w = unsafe { src.read_volatile() };
                // SAFETY: word `i` of `v`, `i < size_of::<T>() / 8`
                // (unaligned-tolerant store into our own local).
                unsafe { dst.wrapping_add(i).write_unaligned(w) };
            }
            // SAFETY: every byte of `v` was written above, and any bytes
            // are a valid `T` (`FromBytes`).
            return Some(unsafe { v.assume_init() });
        }
        // SAFETY: in bounds and aligned (B2, page-aligned base) in a live
        // mapping (B1); any bytes are a valid `T` (`FromBytes`), and no
        // reference to them exists (B3).
        Some(unsafe { p.cast::<T>().read_volatile() })
    }

    /// The `len` bytes from `off` as one [`Window`] for the stores of one
    /// WQE, checked in bounds here once; `None` if they would end past
    /// the buffer or `len` is less than a basic block (64 bytes).
    #[inline(always)]
    pub fn window(&mut self, off: usize, len: usize) -> Option<Window<'_>> {
        if len < WINDOW_MIN {
            return None;
        }
        let ptr = self.0.at(off, len)?;
        Some(Window { ptr, len, _b: PhantomData })
    }

    /// The 32-bit word at byte `off` as an atomic (doorbell records);
    /// `None` if outside or misaligned.
    pub fn atomic_u32(&self, off: usize) -> Option<&AtomicU32> {
        let p = self.0.at(off, 4)?;
        if !off.is_multiple_of(4) {
            return None;
        }
        // SAFETY: in bounds, 4-aligned (B2), valid while `self` is borrowed
        // (B1); plain stores need `&mut self`, so none overlaps the
        // borrow (B3); atomics may share memory with the device.
        Some(unsafe { AtomicU32::from_ptr(p.cast::<u32>()) })
    }
}

/// A CQ's entries in a [`WqBuf`], checked once (B5): the last 64 bytes of
/// each of `mask + 1` entries of `1 << shift` bytes, read a word at a time
/// with no further bounds check (the entry index is masked, the word index
/// is below 8).
#[derive(Clone, Copy, Debug)]
pub struct CqeRing<'a> {
    /// The last 64 bytes of entry 0.
    base: *mut u8,
    mask: u32,
    shift: u32,
    _buf: PhantomData<&'a WqBuf>,
}

/// A CQ ring's geometry, checked once when the CQ is made and again
/// whenever a resize changes it (B5): [`WqBuf::cqe_ring_of`] then needs
/// one comparison per poll. The CQ keeps it beside its entry count, and
/// a resize replaces both under the CQ's lock, with the buffer.
#[derive(Clone, Copy, Debug)]
pub struct CqGeom {
    /// Entries - 1 (entries a power of two).
    mask: u32,
    /// log2 of the entry size: 6 or 7.
    shift: u32,
    /// log2 of the entries.
    log: u32,
    /// Bytes of the ring; `usize::MAX` if the geometry is unusable (no
    /// buffer is that long, so no view is ever made).
    need: usize,
}

impl CqGeom {
    /// `ncqe` entries of `cqe_size` bytes (64 or 128) at offset 0.
    pub fn new(ncqe: u32, cqe_size: u32) -> Self {
        let ok = ncqe.is_power_of_two() && matches!(cqe_size, 64 | 128);
        let need = (ncqe as usize).checked_mul(cqe_size as usize).filter(|_| ok).unwrap_or(usize::MAX);
        Self { mask: ncqe.wrapping_sub(1), shift: if ok { cqe_size.trailing_zeros() } else { 6 }, log: ncqe.trailing_zeros(), need }
    }

    /// `log2(ncqe)`: the consumer index bit the owner bit follows.
    #[inline(always)]
    pub fn log(&self) -> u32 {
        self.log
    }
}

impl WqBuf {
    /// The ring of `ncqe` entries of `cqe_size` bytes (64 or 128) at
    /// offset 0; `None` if `ncqe` is not a power of two, the size is not
    /// one of those, or the ring does not fit.
    #[inline(always)]
    pub fn cqe_ring(&self, ncqe: u32, cqe_size: u32) -> Option<CqeRing<'_>> {
        self.cqe_ring_of(&CqGeom::new(ncqe, cqe_size))
    }

    /// The ring `g` describes (checked when `g` was made); `None` if it
    /// does not fit this buffer.
    #[inline(always)]
    pub fn cqe_ring_of(&self, g: &CqGeom) -> Option<CqeRing<'_>> {
        if g.need > self.0.len {
            return None;
        }
        let base = self.0.ptr.as_ptr().wrapping_add((1usize << g.shift) - 64);
        Some(CqeRing { base, mask: g.mask, shift: g.shift, _buf: PhantomData })
    }
}

impl CqeRing<'_> {
    /// Word `w & 7` (bytes `8w..8w + 8`, as they are in memory: byte 0 is
    /// the low byte) of the 64 bytes that matter of entry `i & mask`,
    /// by a volatile load.
    #[inline(always)]
    pub fn word(&self, i: u32, w: usize) -> u64 {
        let off = (((i & self.mask) as usize) << self.shift) | ((w & 7) * 8);
        let p = self.base.wrapping_add(off).cast::<u64>();
        // SAFETY: B5: `(i & mask) << shift` is the start of an entry below
        // `mask + 1`, `base` its last 64 bytes, `8 * (w & 7) + 8 <= 64`:
        // inside the ring `cqe_ring` checked against the buffer, which the
        // borrow keeps mapped (B1); 8-aligned (page-aligned base, sizes and
        // offsets multiples of 8); no reference to it exists (B3).
        u64::from_le(unsafe { p.read_volatile() })
    }

    /// `log2` of the entry size: 6 or 7.
    #[inline(always)]
    pub fn shift(&self) -> u32 {
        self.shift
    }

    /// Hands `f` the 64-byte entries from `i & mask` on, each with the
    /// next slot of `out`, until `f` returns `false`, `out` ends, or the
    /// ring's last entry was handed (a run never wraps: every entry it
    /// hands has the same owner bit). Returns how many `f` took, and the
    /// last of them (`None` if none): the caller reads it after the loop
    /// without keeping the ring's index, mask and shift live across it.
    /// Nothing from a ring of 128-byte entries. One pointer moves along
    /// the run: no index is masked and shifted per entry.
    #[inline(always)]
    pub fn run64<S>(&self, i: u32, out: &mut [S], mut f: impl FnMut(Cqe64At<'_>, &mut S) -> bool) -> (usize, Option<Cqe64At<'_>>) {
        if self.shift != 6 {
            return (0, None);
        }
        let start = i & self.mask;
        // Entries from `start` to the ring's end: `mask - start + 1 >= 1`.
        let n = out.len().min((self.mask - start) as usize + 1);
        let p0 = self.base.wrapping_add((start as usize) << 6);
        let mut p = p0;
        for slot in &mut out[..n] {
            if !f(Cqe64At { p, _ring: PhantomData }, slot) {
                break;
            }
            p = p.wrapping_add(64);
        }
        // (`p` moved one entry past each taken one: the last taken is the
        // entry before `p`, start `+ n - 1 <= mask`, as handed to `f`.)
        let last = (p != p0).then(|| Cqe64At { p: p.wrapping_sub(64), _ring: PhantomData });
        ((p as usize - p0 as usize) >> 6, last)
    }

    /// Byte 63 of entry `i & mask` (`op_own`), by a volatile load.
    #[inline(always)]
    pub fn op_own(&self, i: u32) -> u8 {
        let off = (((i & self.mask) as usize) << self.shift) | 63;
        // SAFETY: as in `word`: the last byte of an entry inside the ring.
        unsafe { self.base.wrapping_add(off).read_volatile() }
    }
}

/// One entry of a [`CqeRing`] of 64-byte entries, handed out by
/// [`CqeRing::run64`] (B5): its words by volatile loads.
#[derive(Clone, Copy, Debug)]
pub struct Cqe64At<'a> {
    /// The entry's first byte.
    p: *mut u8,
    _ring: PhantomData<&'a WqBuf>,
}

impl Cqe64At<'_> {
    /// Word `w & 7` of the entry (bytes `8w..8w + 8` as they are in
    /// memory: byte 0 is the low byte), by a volatile load.
    #[inline(always)]
    pub fn word(&self, w: usize) -> u64 {
        let p = self.p.wrapping_add((w & 7) * 8).cast::<u64>();
        // SAFETY: B5: `run64` made `p` the start of entry `start + k` of a
        // ring of 64-byte entries (its shift tested equal to 6) with
        // `start + k <= mask` (it hands at most `mask - start + 1`
        // entries, and returns as the last one of those it handed): inside the ring `cqe_ring_of` checked against the
        // buffer, which the borrow `'a` keeps mapped (B1); `8 * (w & 7) +
        // 8 <= 64`; 8-aligned (page-aligned base, offsets multiples of
        // 8); no reference to it exists (B3).
        u64::from_le(unsafe { p.read_volatile() })
    }
}

impl WqBuf {
    /// The byte at `off` as an atomic (a CQE's owner byte, which a poller
    /// may read without the CQ's lock); `None` if outside.
    pub fn atomic_u8(&self, off: usize) -> Option<&AtomicU8> {
        let p = self.0.at(off, 1)?;
        // SAFETY: in bounds (B2), valid while `self` is borrowed (B1);
        // plain stores need `&mut self`, so none overlaps the borrow (B3);
        // atomics may share memory with the device.
        Some(unsafe { AtomicU8::from_ptr(p) })
    }
}

/// Where a send queue's ring and doorbell record lie in its buffer,
/// checked once when the queue is made (B6); [`WqBuf::sq_ring`] then
/// needs one comparison per post.
#[derive(Clone, Copy, Debug)]
pub struct SqGeom {
    /// Byte offset of block 0 (8-aligned).
    base: usize,
    /// Blocks - 1 (blocks a power of two).
    mask: u32,
    /// Byte offset of the send doorbell word (4-aligned).
    dbrec: usize,
    /// Bytes a buffer needs for both; `usize::MAX` if the geometry is
    /// unusable (no buffer is that long, so no view is ever made).
    need: usize,
}

impl SqGeom {
    /// Whether `buf` holds the ring and the send doorbell word (B6's one
    /// comparison): then [`WqBuf::sq_ring_at`] of it is `Some`.
    #[inline(always)]
    pub fn fits(&self, buf: &WqBuf) -> bool {
        self.need <= buf.0.len
    }

    /// The ring of `blocks` 64-byte blocks at byte `base` and the send
    /// doorbell word at byte `dbrec`.
    pub fn new(base: usize, blocks: u32, dbrec: usize) -> Self {
        let ok = blocks.is_power_of_two() && base.is_multiple_of(8) && dbrec.is_multiple_of(4);
        let ring_end = (blocks as usize).checked_mul(WINDOW_MIN).and_then(|b| base.checked_add(b));
        let db_end = dbrec.checked_add(4);
        let need = match (ok, ring_end, db_end) {
            (true, Some(r), Some(d)) => r.max(d),
            _ => usize::MAX,
        };
        Self { base, mask: blocks.wrapping_sub(1), dbrec, need }
    }
}

/// A send queue's ring and doorbell word in a [`WqBuf`], checked once
/// (B6): its windows and the doorbell store need no further check. It
/// keeps the geometry by reference, so that each field is loaded where a
/// store needs it (copied up front, the ring, its mask and the doorbell
/// word took registers, or stack slots, across the whole WQE build).
#[derive(Debug)]
pub struct SqRing<'b, 'g> {
    /// Byte 0 of the live mapping; the checked range is `[0, g.need)`.
    p: *mut u8,
    /// The current block: block `idx & mask` of the ring (`sq_ring_at`).
    blk: *mut u8,
    g: &'g SqGeom,
    _b: PhantomData<&'b mut WqBuf>,
}

/// The doorbell word of a ring view ([`SqRing`], [`RqRing`]): 4 bytes of
/// the live mapping, 4-aligned, inside the range the view's geometry and
/// `sq_ring`/`rq_ring` checked once (B6, B7). The view holds it privately
/// and lends it only through `&self`, while its plain stores take
/// `&mut self`.
#[derive(Debug)]
struct DbWord<'b> {
    ptr: *mut u8,
    _b: PhantomData<&'b WqBuf>,
}

impl DbWord<'_> {
    /// The word at `base + off`, as `sq_ring`/`rq_ring` checked it.
    #[inline(always)]
    fn at(base: *mut u8, off: usize) -> Self {
        DbWord { ptr: base.wrapping_add(off), _b: PhantomData }
    }

    /// The word, for the release store of a ring's new counter.
    #[inline(always)]
    fn word(&self) -> &AtomicU32 {
        // SAFETY: `at` is called only by `sq_ring`/`rq_ring` (and
        // `SqRing::store_db`, `RqRing::store_db`, from the geometry its view checked and the
        // view borrows) with the doorbell offset their geometry checked: 4 bytes inside the
        // checked range of the live mapping, 4-aligned from the page
        // aligned base (B6, B7), valid while the buffer is borrowed (B1).
        // The view holding this word lends it only through `&self` and
        // stores plain bytes only through `&mut self` (its windows borrow
        // it mutably), so no plain store overlaps the atomic while the
        // reference lives (B3).
        unsafe { AtomicU32::from_ptr(self.ptr.cast::<u32>()) }
    }
}

impl WqBuf {
    /// The send ring `g` describes; `None` if the buffer is too short.
    #[inline(always)]
    pub fn sq_ring<'g>(&mut self, g: &'g SqGeom) -> Option<SqRing<'_, 'g>> {
        self.sq_ring_at(g, 0)
    }

    /// [`WqBuf::sq_ring`] with block `idx & mask` as its current block
    /// ([`SqRing::cur`], [`SqRing::into_cur_block`]): its address formed
    /// once for every store and the BlueFlame copy of a one-block WQE.
    #[inline(always)]
    pub fn sq_ring_at<'g>(&mut self, g: &'g SqGeom, idx: u32) -> Option<SqRing<'_, 'g>> {
        if !g.fits(self) {
            return None;
        }
        let p = self.0.ptr.as_ptr();
        let blk = p.wrapping_add(g.base + (idx & g.mask) as usize * WINDOW_MIN);
        Some(SqRing { p, blk, g, _b: PhantomData })
    }
}

impl<'b> SqRing<'b, '_> {
    /// The one block `idx & mask` as a window.
    #[inline(always)]
    pub fn wqe(&mut self, idx: u32) -> Window<'_> {
        let ptr = self.block_at(idx & self.g.mask);
        Window { ptr, len: WINDOW_MIN, _b: PhantomData }
    }

    /// The current block as a window.
    #[inline(always)]
    pub fn cur(&mut self) -> Window<'_> {
        Window { ptr: self.blk, len: WINDOW_MIN, _b: PhantomData }
    }

    /// Blocks `idx..idx + nbb` as a window; `None` if they would pass the
    /// ring's end or `nbb` is 0.
    #[inline(always)]
    pub fn wqes(&mut self, idx: u32, nbb: u32) -> Option<Window<'_>> {
        let end = idx.checked_add(nbb)?;
        // (`mask + 1` is a power of two of `u32`: no overflow)
        if nbb == 0 || end > self.g.mask + 1 {
            return None;
        }
        let ptr = self.block_at(idx);
        Some(Window { ptr, len: nbb as usize * WINDOW_MIN, _b: PhantomData })
    }

    /// Byte `base + idx * 64` (block `idx` for `idx <= mask`; the
    /// callers check or mask `idx`).
    #[inline(always)]
    fn block_at(&self, idx: u32) -> *mut u8 {
        self.p.wrapping_add(self.g.base + idx as usize * WINDOW_MIN)
    }

    /// Stores `v` (the counter, already big-endian) into the send
    /// doorbell word with release ordering: after every store of the view.
    /// (The word is made here, from the geometry `sq_ring` checked, rather
    /// than kept: one register fewer across the post.)
    #[inline(always)]
    pub fn store_db(&self, v: u32) {
        DbWord::at(self.p, self.g.dbrec).word().store(v, Ordering::Release);
    }

    /// Block `idx & mask`, for reading back after the view is done with
    /// (the BlueFlame copy).
    #[inline(always)]
    pub fn into_block(self, idx: u32) -> SqBlock<'b> {
        SqBlock { ptr: self.block_at(idx & self.g.mask).cast::<u64>(), _b: PhantomData }
    }

    /// The current block, for reading back after the view is done with.
    #[inline(always)]
    pub fn into_cur_block(self) -> SqBlock<'b> {
        SqBlock { ptr: self.blk.cast::<u64>(), _b: PhantomData }
    }
}

/// One 64-byte block of a send ring (B6), read word by word.
#[derive(Clone, Copy, Debug)]
pub struct SqBlock<'b> {
    /// 64 bytes of the live mapping, 8-aligned (8-aligned ring base).
    ptr: *const u64,
    _b: PhantomData<&'b WqBuf>,
}

impl SqBlock<'_> {
    /// Word `i & 7`.
    #[inline(always)]
    pub fn word(&self, i: usize) -> u64 {
        // SAFETY: word `i & 7` of the block, inside the checked range and
        // 8-aligned (B6) in the live mapping the view borrowed (B1); no
        // reference to it exists (B3): a plain load of WQE bytes this
        // library wrote, which the device only reads.
        unsafe { self.ptr.wrapping_add(i & 7).read() }
    }
}

/// Bytes a [`Window`] has at least: one send WQE basic block.
pub const WINDOW_MIN: usize = 64;

/// `len >= 64` bytes of a [`WqBuf`], checked in bounds once by
/// [`WqBuf::window`] (B2): the stores of one WQE, each inside the window
/// by a compile-time check (the first 64 bytes) or one runtime check
/// (inline bytes). It borrows the buffer mutably, so no `&AtomicU32`
/// into it is alive meanwhile (B3).
#[derive(Debug)]
pub struct Window<'b> {
    /// Start: `len` bytes of the live mapping from here (B1, B2).
    ptr: *mut u8,
    len: usize,
    _b: PhantomData<&'b mut WqBuf>,
}

impl Window<'_> {
    /// Stores `v` at byte `AT`, inside the first 64 bytes (compile time).
    #[inline(always)]
    pub fn put<const AT: usize, T: IntoBytes + Immutable>(&mut self, v: T) {
        const { assert!(AT + size_of::<T>() <= WINDOW_MIN, "store past the window's first block") };
        // SAFETY: `AT + size_of::<T>() <= 64 <= len` (above and
        // `WqBuf::window`), so inside the `len` bytes checked in bounds of
        // the live mapping (B1, B2); the window borrows the buffer
        // mutably (B3); an unaligned store.
        unsafe { self.ptr.wrapping_add(AT).cast::<T>().write_unaligned(v) }
    }

    /// The first 64 bytes as eight 64-bit words, read back (unaligned
    /// loads of what this window stored or the buffer held).
    #[inline(always)]
    pub fn block(&self) -> [u64; 8] {
        // SAFETY: the first 64 bytes are inside the window (`len >= 64`),
        // so inside the live mapping (B1, B2); no reference to them exists
        // (B3); any bytes are a valid `[u64; 8]`.
        unsafe { self.ptr.cast::<[u64; 8]>().read_unaligned() }
    }

    /// Copies `src` to byte `at`; `false`, nothing stored, if it would end
    /// past the window.
    #[inline(always)]
    pub fn put_bytes(&mut self, at: usize, src: &[u8]) -> bool {
        match at.checked_add(src.len()) {
            Some(end) if end <= self.len => {
                let dst = self.ptr.wrapping_add(at);
                // 8 to 16 bytes (the common inline sizes): two 8-byte
                // stores, the second ending at `end`, instead of a call.
                if let (Some(head), Some(tail), true) = (src.first_chunk::<8>(), src.last_chunk::<8>(), src.len() <= 16) {
                    // SAFETY: `at..at + 8` lies inside `at..end` (8 <=
                    // len), inside the window and the live mapping (B1,
                    // B2); an unaligned store, no reference (B3).
                    unsafe { dst.cast::<[u8; 8]>().write_unaligned(*head) };
                    // SAFETY: as above for `end - 8..end`.
                    unsafe { dst.wrapping_add(src.len() - 8).cast::<[u8; 8]>().write_unaligned(*tail) };
                    return true;
                }
                // SAFETY: `at..end` is inside the window, so inside the
                // live mapping (B1, B2); `src` cannot overlap it (no
                // reference into a `WqBuf` exists, B3).
                unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
                true
            }
            _ => false,
        }
    }
}

/// `n` library-private `T`s, zero-initialised (B4): the wr_id and
/// WQE-head tables of a queue.
#[derive(Debug)]
pub struct Table<T> {
    pages: Pages,
    n: usize,
    /// `n - 1` if `n` is a power of two, else 0: [`Self::at_mut`]'s mask
    /// (entry 0 is mapped whatever `n`, B4).
    mask: usize,
    _t: PhantomData<T>,
}

impl<T: FromZeros + IntoBytes> Table<T> {
    /// `n` zeroed entries.
    pub fn new(verb: &'static str, n: usize) -> Result<Self> {
        // (At least one entry mapped, for `at_mut` of an empty table.)
        let bytes = n.max(1).checked_mul(size_of::<T>()).ok_or(Error::new(verb, ErrorKind::InvalidArgument))?;
        const { assert!(align_of::<T>() <= PAGE) };
        let mask = if n.is_power_of_two() { n - 1 } else { 0 };
        Ok(Self { pages: Pages::new(verb, bytes)?, n, mask, _t: PhantomData })
    }
}

impl<T: FromZeros> Table<T> {
    /// Entry `i & (n - 1)` of a table of a power-of-two `n` (a ring's
    /// `wr_id`s, indexed by the free-running counter), entry 0 of any
    /// other: masked, so no bound check and no failure.
    #[inline(always)]
    pub fn at_mut(&mut self, i: u32) -> &mut T {
        // `i & mask` is below `n` (`mask = n - 1`, `n` a power of two) or
        // 0, and entry 0 is mapped even if `n` is 0 (`new` maps at least
        // one entry): inside the live, zero-initialised mapping only this
        // table reaches (B1, B4), exclusive through `&mut self`.
        let p = self.pages.ptr.as_ptr().cast::<T>().wrapping_add(i as usize & self.mask);
        // SAFETY: as above: `p` is an entry of the mapping, aligned (page-
        // aligned base), initialised, reached only through `&mut self`.
        unsafe { &mut *p }
    }
}

impl<T: FromZeros> core::ops::Deref for Table<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `n * size_of::<T>()` bytes of a live, page-aligned
        // mapping (B1) that only this table reaches; zero bytes are a
        // valid `T` and every later write went through `&mut [T]` (B4).
        unsafe { core::slice::from_raw_parts(self.pages.ptr.as_ptr().cast::<T>(), self.n) }
    }
}

impl<T: FromZeros> core::ops::DerefMut for Table<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, exclusive through `&mut self` (B4).
        unsafe { core::slice::from_raw_parts_mut(self.pages.ptr.as_ptr().cast::<T>(), self.n) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::sync::atomic::Ordering;

    #[test]
    fn alloc_type_from_the_environment_as_libmlx5() {
        // A component no other test reads (libmlx5's are MLX_CQ/QP/SRQ).
        let name = "VERBS_BUF_TEST_ALLOC_TYPE";
        for (v, t) in [("huge", AllocType::Huge), ("PREFER_HUGE", AllocType::PreferHuge), ("All", AllocType::PreferHuge), ("ANON", AllocType::Anon), ("CONTIG", AllocType::Anon), ("bogus", AllocType::Anon)] {
            std::env::set_var(name, v);
            assert_eq!(AllocType::from_env("VERBS_BUF_TEST"), t, "{v}");
        }
        std::env::remove_var(name);
        assert_eq!(AllocType::from_env("VERBS_BUF_TEST"), AllocType::Anon);
    }

    #[test]
    fn huge_pages_or_a_refusal() {
        let free = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| m.lines().find_map(|l| l.strip_prefix("HugePages_Free:").map(|v| v.trim().parse::<u64>().unwrap_or(0))))
            .unwrap_or(0);
        let b = WqBuf::alloc("test", 100, AllocType::PreferHuge).expect("huge pages or the fallback");
        assert_eq!(b.get::<u64>(0), Some(0), "zeroed");
        match WqBuf::alloc("test", 100, AllocType::Huge) {
            Ok(b) => {
                assert!(free > 0, "huge pages without any free");
                assert_eq!((b.len(), b.addr() % crate::HUGE_PAGE_SIZE as u64), (crate::HUGE_PAGE_SIZE, 0));
            }
            Err(e) => {
                assert_eq!(free, 0, "refused with {free} huge pages free: {e}");
                assert_eq!((e.verb(), e.errno()), ("test", Some(rustix::io::Errno::NOMEM)), "{e}");
            }
        }
    }

    #[test]
    fn bounds_alignment_and_round_trips() {
        let mut b = WqBuf::new("test", 100).unwrap();
        assert_eq!(b.len(), 4096);
        assert_eq!(b.addr() % 4096, 0);
        assert_eq!(b.get::<u64>(4088), Some(0), "zeroed");
        assert!(b.put(4092, 0x0102_0304u32));
        assert!(!b.put(4093, 0u32), "ends past the buffer");
        assert!(!b.put(usize::MAX, 0u8), "overflowing offset");
        assert_eq!(b.get::<u32>(4092), Some(0x0102_0304));
        assert_eq!(b.get::<u32>(4094), None, "misaligned");
        assert_eq!(b.get::<u32>(4096), None);
        assert!(b.put(1, 0xaabbu16), "stores need no alignment");
        assert_eq!(b.get::<[u8; 4]>(0), Some([0, 0xbb, 0xaa, 0]));
        assert!(b.put_bytes(4090, &[9; 6]));
        assert!(!b.put_bytes(4091, &[9; 6]));
        b.atomic_u32(8).unwrap().store(0x1122_3344u32.to_be(), Ordering::Release);
        assert_eq!(b.get::<[u8; 4]>(8), Some([0x11, 0x22, 0x33, 0x44]));
        assert!(b.atomic_u32(6).is_none() && b.atomic_u32(4096).is_none());
    }

    #[test]
    fn cqe_ring_checks_once_and_masks_every_load() {
        let mut b = WqBuf::new("test", 4096).unwrap();
        assert!(b.cqe_ring(64, 64).is_some(), "exactly the buffer");
        assert!(b.cqe_ring(64, 128).is_none(), "past the end");
        assert!(b.cqe_ring(3, 64).is_none() && b.cqe_ring(4, 96).is_none() && b.cqe_ring(0, 64).is_none());
        assert!(b.put(2 * 128 + 64 + 56, 0x1122_3344_5566_7788u64.to_le()));
        assert!(b.put(2 * 128 + 127, 0xa5u8));
        let r = b.cqe_ring(4, 128).unwrap();
        assert_eq!(r.word(2, 7), 0xa522_3344_5566_7788);
        assert_eq!(r.word(6, 15), 0xa522_3344_5566_7788, "entry and word indices wrap");
        assert_eq!((r.op_own(2), r.op_own(3)), (0xa5, 0));
    }

    #[test]
    fn cqe_runs_stop_at_the_ring_end_and_take_64_byte_entries_only() {
        let mut b = WqBuf::new("test", 4096).unwrap();
        for i in 0..8u64 {
            assert!(b.put(i as usize * 64 + 56, (0x100 + i).to_le()));
        }
        let r = b.cqe_ring(8, 64).unwrap();
        let mut out = [0u64; 5];
        let seen = |out: &mut [u64; 5], from: u32, stop: u64| {
            *out = [0; 5];
            let (n, last) = r.run64(from, out, |c, s| {
                *s = c.word(15);
                *s != stop
            });
            // The last entry taken, read again after the run.
            assert_eq!(last.map(|c| c.word(7)), n.checked_sub(1).map(|k| out[k]));
            n
        };
        assert_eq!((seen(&mut out, 13, 0), out), (3, [0x105, 0x106, 0x107, 0, 0]), "from 13 & 7 = 5 to the last entry, words masked");
        assert_eq!((seen(&mut out, 1, 0), out), (5, [0x101, 0x102, 0x103, 0x104, 0x105]), "as many as `out` holds");
        assert_eq!((seen(&mut out, 1, 0x103), out), (2, [0x101, 0x102, 0x103, 0, 0]), "until `f` says no");
        let r = b.cqe_ring(4, 128).unwrap();
        assert!(matches!(r.run64(0, &mut out, |_, _| true), (0, None)), "128-byte entries: none");
    }

    #[test]
    fn cq_geometry_is_checked_once_and_against_each_buffer() {
        let small = WqBuf::new("test", 4096).unwrap();
        let big = WqBuf::new("test", 8192).unwrap();
        let g = CqGeom::new(64, 128);
        assert!(small.cqe_ring_of(&g).is_none() && big.cqe_ring_of(&g).is_some(), "8 KiB: refused by the buffer too short");
        assert_eq!(g.log(), 6);
        for bad in [CqGeom::new(48, 64), CqGeom::new(0, 64), CqGeom::new(4, 96), CqGeom::new(1 << 31, 128)] {
            assert!(big.cqe_ring_of(&bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn send_ring_views_are_checked_once_and_stay_inside() {
        let mut b = WqBuf::new("test", 4096).unwrap();
        assert!(b.sq_ring(&SqGeom::new(64, 64, 0)).is_none(), "ring ends past the buffer");
        assert!(b.sq_ring(&SqGeom::new(0, 64, 4096 - 2)).is_none(), "doorbell word ends past the buffer");
        assert!(b.sq_ring(&SqGeom::new(0, 48, 4000)).is_none(), "not a power of two");
        assert!(b.sq_ring(&SqGeom::new(4, 8, 4000)).is_none(), "misaligned ring");
        assert!(b.sq_ring(&SqGeom::new(0, 8, 4001)).is_none(), "misaligned doorbell word");
        assert!(b.sq_ring(&SqGeom::new(usize::MAX - 8, 8, 4000)).is_none(), "overflowing offset");
        let g = SqGeom::new(1024, 8, 4092);
        let mut r = b.sq_ring(&g).unwrap();
        assert!(r.wqes(6, 3).is_none(), "past the ring's end");
        assert!(r.wqes(6, 0).is_none(), "no blocks");
        assert!(r.wqes(u32::MAX, 2).is_none(), "overflowing index");
        r.wqes(6, 2).unwrap().put::<0, u64>(1);
        r.wqe(8 + 3).put::<8, u64>(2);
        r.store_db(0x1234);
        let blk = r.into_block(3);
        let words: [u64; 8] = core::array::from_fn(|w| blk.word(w));
        assert_eq!(words, [0, 2, 0, 0, 0, 0, 0, 0], "block 11 masked to 3");
        assert_eq!(b.get::<u64>(1024 + 6 * 64), Some(1));
        assert_eq!(b.get::<u64>(1024 + 3 * 64 + 8), Some(2));
        assert_eq!(b.get::<u32>(4092), Some(0x1234));
        // The current block (`sq_ring_at`): its index masked once, when
        // the view is made; stores and the read back stay in that block.
        let mut r = b.sq_ring_at(&g, 8 * 1000 + 5).unwrap();
        r.cur().put::<16, u64>(3);
        let blk = r.into_cur_block();
        let words: [u64; 8] = core::array::from_fn(|w| blk.word(w));
        assert_eq!(words, [0, 0, 3, 0, 0, 0, 0, 0], "block 8005 masked to 5");
        assert_eq!(b.get::<u64>(1024 + 5 * 64 + 16), Some(3));
    }

    #[test]
    fn windows_are_checked_once_and_store_inside() {
        let mut b = WqBuf::new("test", 4096).unwrap();
        assert!(b.window(4096 - 63, 64).is_none(), "ends past the buffer");
        assert!(b.window(0, 63).is_none(), "less than a basic block");
        assert!(b.window(usize::MAX - 10, 64).is_none(), "overflowing offset");
        let mut w = b.window(4096 - 128, 128).unwrap();
        w.put::<0, u64>(0x0102_0304_0506_0708);
        w.put::<56, u64>(9);
        assert!(w.put_bytes(100, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]), "12 bytes: two overlapping words");
        assert!(w.put_bytes(120, &[7; 8]), "the window's last bytes");
        assert!(!w.put_bytes(121, &[7; 8]), "past the window");
        assert_eq!(b.get::<u64>(4096 - 128), Some(0x0102_0304_0506_0708));
        assert_eq!(b.get::<u64>(4096 - 72), Some(9));
        assert_eq!(b.get::<[u8; 8]>(4088), Some([7; 8]));
        assert_eq!(b.get::<[u8; 16]>(4096 - 32), Some([0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]));
        assert_eq!(b.get::<u64>(4096 - 64), Some(0), "nothing else stored");
    }

    #[test]
    fn table_is_zeroed_and_writable() {
        let mut t = Table::<u64>::new("test", 1000).unwrap();
        assert_eq!(t.len(), 1000);
        assert!(t.iter().all(|&x| x == 0));
        t[999] = 7;
        assert_eq!(t[999], 7);
        assert!(Table::<u64>::new("test", usize::MAX).is_err());
    }
}
