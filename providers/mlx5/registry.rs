//! The table through which a CQ poll reaches the queues its completions
//! name (libmlx5's `uidx` table, `mlx5_find_uidx`).
//!
//! A requester CQE retires WQEs of a QP's send queue (its `wr_id` and
//! the requests before it), a responder CQE one of its receive queue or
//! a WQE of an SRQ (which goes back on the SRQ's free list). With CQE
//! version 1 the CQE carries the user index (`uidx`) the QP or SRQ was
//! created with: here that index is a slot of this table, and the slot
//! holds the queues themselves, so that the poster (`ibv_post_send` /
//! `ibv_post_recv` / `ibv_post_srq_recv`, through the QP's or SRQ's
//! handle) and the poller (through the CQ's) reach the same state.
//!
//! Each slot has a lock (a spin flag): the poster holds it while it
//! writes WQEs, the poller while it retires them, so the queue state is
//! only ever reached through `&mut` by one of them. Neither runs caller
//! code under it, so a holder lets go after a bounded number of steps.
//!
//! The table is one anonymous mapping, shared by the context and every
//! object made from it through [`RegRef`] handles that count references
//! (like an `Arc` over the mapping, with no heap): the last handle
//! dropped drops the entries and unmaps it. So no handle depends on the
//! order the owners go away in.
//!
//! # Safety
//!
//! * **G1 — the mapping.** Made by `RegRef::new` (NULL hint, no
//!   `MAP_FIXED`), large enough for a [`Region`], initialised in place
//!   field by field before the first `RegRef` exists, and unmapped only
//!   by the `RegRef` whose `Drop` took the count from 1 to 0 (acquire on
//!   that last decrement, release on every other), after which no handle
//!   exists. Every `RegRef` holds one count, so the region is alive while
//!   any handle is.
//! * **G2 — the entries.** A slot's `UnsafeCell<Entry>` is reached only
//!   through a [`SlotGuard`], which exists only while its creator holds
//!   the slot's lock (taken by an acquire compare-exchange from 0 to 1,
//!   released by a release store of 0 in the guard's `Drop`, also while
//!   unwinding): one `&mut Entry` at a time, and every access ordered
//!   after the previous holder's. `Drop` of the region runs with no handle
//!   left, so nobody holds a lock then.
//! * **G4 — `MadeSlot`.** Made only by `RegRef::made`, from a reference
//!   to a slot of the region (index masked below `SLOTS`), together with
//!   a `RegRef` of its own (G1): the region, and so the slot, stays
//!   mapped while the `MadeSlot` lives; its fields are private and never
//!   changed. Its `lock` is `lock_made`'s spin on that slot, so the guard
//!   it returns is G2's.
//! * **G5 — `MadeBf`.** Made only by `RegRef::made_bf`, from the
//!   `BfLine` and the `&BfReg` of the region's own `Uars`
//!   (`Uars::bf_line`), together with a `RegRef` of its own (G1): the
//!   UAR pages (dropped only with the region) stay mapped, and the
//!   register's state stays in place, while the `MadeBf` lives; its
//!   fields are private and never changed.
//! * **G3 — `Send`/`Sync`.** The entries move between threads through
//!   the locks (they are `Send`: plain data, `WqBuf`s and `Table`s are
//!   `Send`).
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::ffi::c_void;
use core::mem::{offset_of, size_of};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use rustix::mm::{MapFlags, ProtFlags};

use super::buf::WqBuf;
use super::cqe::CqRing;
use super::wqe::Av;
use super::buf::SqBlock;
use super::ctx::{Doorbell, Uars};
use super::uar::{BfLine, BfReg};
use super::rq::{RecvQueue, Srq};
use super::sq::SendQueue;
use crate::error::{Error, ErrorKind, Result};

/// Slots per context: QPs and SRQs that may exist at once.
pub const SLOTS: usize = 1024;

/// What a slot holds.
#[derive(Debug, Default)]
pub enum Entry {
    /// Nobody.
    #[default]
    Free,
    /// A CQ's ring state and buffer (its pollers take turns here).
    Cq {
        /// Consumer index, arm sequence, geometry.
        ring: CqRing,
        /// CQEs and doorbell record.
        buf: WqBuf,
    },
    /// A QP's queues (and its buffer, which the poster writes).
    Qp {
        /// The send queue, if the QP has one.
        sq: Option<SendQueue>,
        /// The receive queue (none with an SRQ).
        rq: Option<RecvQueue>,
        /// The QP's buffer: queues and doorbell record.
        buf: WqBuf,
        /// The slot of its SRQ, if it has one (its receives complete there).
        srq_uidx: Option<u32>,
    },
    /// An SRQ and its buffer (the poller relinks freed WQEs in it).
    Srq {
        /// The free list and indices.
        srq: Srq,
        /// WQEs and doorbell record.
        buf: WqBuf,
        /// The kernel's handle of the SRQ (how a QP created on it finds it).
        handle: u32,
    },
    /// An address handle's vector (copied into each UD send WQE).
    Ah {
        /// The vector as `mlx5_create_ah` builds it.
        av: Av,
    },
    /// Taken by an insert in progress.
    Reserved,
}

struct Slot {
    lock: AtomicU32,
    /// A CQ's consumer index as its last holder left it, for the test
    /// for a waiting completion that takes no lock (stored only under the
    /// lock, read by anyone: an atomic outside the entry, so not G2's).
    published: AtomicU32,
    /// Whether the slot holds a CQ: set when one is put in (under the
    /// lock, before any poll of it can hold the slot), cleared when it is
    /// taken out; read without the lock by [`RegRef::lock_queue`].
    cq: AtomicBool,
    entry: UnsafeCell<Entry>,
}

/// The shared mapping (G1).
#[repr(C)]
struct Region {
    refs: AtomicUsize,
    /// Where the next insert starts looking.
    hint: AtomicU32,
    /// The context's UAR pages: doorbells of the QPs, arming of the CQs.
    uars: Uars,
    slots: [Slot; SLOTS],
}

const BYTES: usize = size_of::<Region>().next_multiple_of(4096);

/// The address of the `T` at byte `off` of the region (computed with
/// `wrapping_add`: no dereference, so no unsafe).
fn field<T>(r: *mut Region, off: usize) -> *mut T {
    r.cast::<u8>().wrapping_add(off).cast::<T>()
}

/// A counted handle on a context's table (G1).
#[derive(Debug)]
pub struct RegRef {
    region: NonNull<Region>,
}

// SAFETY: G3: the region is shared by atomics and slot locks only; the
// entries are `Send`.
unsafe impl Send for RegRef {}
// SAFETY: as for `Send`: `&RegRef` only takes locks and counts.
unsafe impl Sync for RegRef {}

impl RegRef {
    /// A new, empty table (one handle) that owns the context's `uars`.
    pub fn new(verb: &'static str, uars: Uars) -> Result<Self> {
        // SAFETY: a fresh private mapping where the kernel chooses (NULL
        // hint, no MAP_FIXED): nothing existing is replaced (G1).
        let p = unsafe { rustix::mm::mmap_anonymous(core::ptr::null_mut(), BYTES, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE) }
            .map_err(|e| Error::from_errno(verb, e))?;
        let region = NonNull::new(p.cast::<Region>()).ok_or(Error::new(verb, ErrorKind::OutOfResources))?;
        let r = region.as_ptr();
        // SAFETY: `r` is page aligned (so aligned for
        // `Region`) and `BYTES >= size_of::<Region>()` bytes are ours
        // (G1); every field is written in place, through raw pointers
        // computed from `offset_of!`, before any reference to the region
        // exists.
        unsafe { field::<AtomicUsize>(r, offset_of!(Region, refs)).write(AtomicUsize::new(1)) };
        // SAFETY: as above.
        unsafe { field::<AtomicU32>(r, offset_of!(Region, hint)).write(AtomicU32::new(1)) };
        // SAFETY: as above.
        unsafe { field::<Uars>(r, offset_of!(Region, uars)).write(uars) };
        for i in 0..SLOTS {
            // Slot 0 is never handed out: an AH's number is its slot, and
            // 0 is the "no number" of `Ah::ah_num` on every provider.
            let entry = if i == 0 { Entry::Reserved } else { Entry::Free };
            let slot = Slot { lock: AtomicU32::new(0), published: AtomicU32::new(0), cq: AtomicBool::new(false), entry: UnsafeCell::new(entry) };
            // SAFETY: as above; slot `i < SLOTS` of the array.
            unsafe { field::<Slot>(r, offset_of!(Region, slots) + i * size_of::<Slot>()).write(slot) };
        }
        Ok(Self { region })
    }

    #[inline(always)]
    fn region(&self) -> &Region {
        // SAFETY: alive and initialised while this handle counts (G1);
        // shared access reaches only atomics and `UnsafeCell`s.
        unsafe { self.region.as_ref() }
    }

    /// The context's UAR pages.
    pub fn uars(&self) -> &Uars {
        &self.region().uars
    }

    /// The slot of the SRQ whose kernel handle is `handle`.
    pub fn find_srq(&self, handle: u32) -> Option<u32> {
        (0..SLOTS as u32).find(|&i| matches!(self.lock(i).as_deref(), Some(Entry::Srq { handle: h, .. }) if *h == handle))
    }

    /// Another handle on the same table.
    pub fn share(&self) -> Self {
        self.region().refs.fetch_add(1, Ordering::Relaxed);
        Self { region: self.region }
    }

    /// Locks slot `uidx` (spinning while its holder works), or `None` if
    /// there is no such slot.
    #[inline]
    pub fn lock(&self, uidx: u32) -> Option<SlotGuard<'_>> {
        self.acquire(uidx, |_| false)
    }

    /// Locks slot `uidx` of an object this context made, whose index
    /// [`insert`](Self::insert) handed out (below [`SLOTS`]): the index is
    /// masked rather than compared (a wrong one still names some slot of
    /// this table, whose entry the caller matches like any other), so a
    /// post pays no bound check and no `None` branch.
    #[inline(always)]
    pub fn lock_made(&self, uidx: u32) -> SlotGuard<'_> {
        const { assert!(SLOTS.is_power_of_two()) };
        let slot = &self.region().slots[uidx as usize & (SLOTS - 1)];
        while slot.lock.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            core::hint::spin_loop();
        }
        SlotGuard { slot }
    }

    /// Slot `uidx` of an object this context made (masked as in
    /// [`lock_made`](Self::lock_made)) by address, for a poster that locks
    /// it on every post: [`MadeSlot::lock`] then loads one pointer instead
    /// of forming the address from the index. It keeps a handle on the
    /// table, so the address stays valid for as long as it lives (G4).
    pub fn made(&self, uidx: u32) -> MadeSlot {
        let slot = NonNull::from(&self.region().slots[uidx as usize & (SLOTS - 1)]);
        MadeSlot { _reg: self.share(), slot }
    }

    /// Locks slot `uidx` for a poll, which already holds its CQ's slot:
    /// `None` if there is no such slot or it holds a CQ. A CQE naming a
    /// CQ is bogus (only QPs and SRQs are created with a user index), and
    /// waiting for a CQ's slot while holding one could wait forever (the
    /// poll's own CQ; or two pollers, each holding the CQ the other's CQE
    /// names). A CQ's slot is marked before anyone can poll it, so a
    /// waiter on it sees the mark and gives up; every other holder (a
    /// poster, a poll holding a QP's or SRQ's slot) lets go without
    /// waiting for a CQ's slot, so this wait ends.
    #[inline]
    pub fn lock_queue(&self, uidx: u32) -> Option<SlotGuard<'_>> {
        self.acquire(uidx, |slot| slot.cq.load(Ordering::Relaxed))
    }

    /// The one spin of [`lock`](Self::lock) and
    /// [`lock_queue`](Self::lock_queue): takes slot `uidx`'s lock (acquire
    /// compare-exchange 0 → 1), or `None` if there is no such slot or
    /// `give_up` says so, asked before each try.
    #[inline(always)]
    fn acquire(&self, uidx: u32, give_up: impl Fn(&Slot) -> bool) -> Option<SlotGuard<'_>> {
        let slot = self.region().slots.get(uidx as usize)?;
        loop {
            if give_up(slot) {
                return None;
            }
            if slot.lock.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return Some(SlotGuard { slot });
            }
            core::hint::spin_loop();
        }
    }

    /// The consumer index the last holder of slot `uidx` published
    /// ([`SlotGuard::publish`]), read without its lock (acquire).
    #[inline(always)]
    pub fn published(&self, uidx: u32) -> Option<u32> {
        Some(self.region().slots.get(uidx as usize)?.published.load(Ordering::Acquire))
    }

    /// Puts `entry` in a free slot and returns its index (the `uidx` to
    /// create the object with); `None` (the entry dropped) if every slot
    /// is taken.
    pub fn insert(&self, entry: Entry) -> Option<u32> {
        let start = self.region().hint.load(Ordering::Relaxed) as usize;
        for k in 0..SLOTS {
            let i = ((start + k) % SLOTS) as u32;
            let Some(mut g) = self.lock(i) else { continue };
            if matches!(*g, Entry::Free) {
                g.put(entry);
                self.region().hint.store((i + 1) % SLOTS as u32, Ordering::Relaxed);
                return Some(i);
            }
        }
        None
    }

    /// Takes slot `uidx`'s entry out, leaving it free.
    pub fn remove(&self, uidx: u32) -> Entry {
        match self.lock(uidx) {
            Some(mut g) => g.take(),
            None => Entry::Free,
        }
    }
}

impl Drop for RegRef {
    fn drop(&mut self) {
        if self.region().refs.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        core::sync::atomic::fence(Ordering::Acquire);
        let r = self.region.as_ptr();
        // SAFETY: the last handle (G1): nobody else reaches
        // the region or holds a slot lock (G2); every field was
        // initialised in `new`; each is dropped once, then the mapping is
        // unmapped once.
        for i in 0..SLOTS {
            // SAFETY: as above; slot `i < SLOTS` of the array.
            unsafe { field::<Slot>(r, offset_of!(Region, slots) + i * size_of::<Slot>()).drop_in_place() };
        }
        // SAFETY: as above.
        unsafe { field::<Uars>(r, offset_of!(Region, uars)).drop_in_place() };
        // SAFETY: as above: the mapping `new` made, nothing points into it.
        if let Err(e) = unsafe { rustix::mm::munmap(r.cast::<c_void>(), BYTES) } {
            crate::error::report_drop_failure(Error::from_errno("munmap", e));
        }
    }
}

/// A slot by address ([`RegRef::made`]), with the handle that keeps its
/// table mapped (G4).
#[derive(Debug)]
pub struct MadeSlot {
    _reg: RegRef,
    /// A slot of `_reg`'s region.
    slot: NonNull<Slot>,
}

// SAFETY: G3/G4: as `RegRef`; the pointer names a slot of the region the
// handle keeps alive, reached only through the slot's lock.
unsafe impl Send for MadeSlot {}
// SAFETY: as for `Send`: `&MadeSlot` only takes the slot's lock.
unsafe impl Sync for MadeSlot {}

impl MadeSlot {
    /// The table the slot is in.
    #[inline(always)]
    pub fn reg(&self) -> &RegRef {
        &self._reg
    }

    /// Locks the slot, spinning while its holder works
    /// ([`RegRef::lock_made`]'s wait).
    #[inline(always)]
    pub fn lock(&self) -> SlotGuard<'_> {
        // SAFETY: a slot of the region `_reg` keeps mapped (G1, G4);
        // shared access reaches only atomics and the `UnsafeCell`.
        let slot = unsafe { self.slot.as_ref() };
        while slot.lock.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
            core::hint::spin_loop();
        }
        SlotGuard { slot }
    }
}

/// A QP's low-latency BlueFlame register by address
/// ([`RegRef::made_bf`]), with the handle that keeps its UAR page mapped
/// (G5).
#[derive(Debug)]
pub struct MadeBf {
    _reg: RegRef,
    line: BfLine,
    /// The register's state in the region's `Uars`.
    reg: NonNull<BfReg>,
}

// SAFETY: G3/G5: as `RegRef`; the pointers name the region's UAR pages
// and a register state (an atomic) the handle keeps alive.
unsafe impl Send for MadeBf {}
// SAFETY: as for `Send`: `&MadeBf` only rings (MMIO stores and the
// atomic state).
unsafe impl Sync for MadeBf {}

impl RegRef {
    /// The BlueFlame register of `db` by address, for the QP the kernel
    /// gave it alone ([`Uars::bf_line`]): `None` for any other register.
    pub fn made_bf(&self, db: &Doorbell) -> Option<MadeBf> {
        let (line, reg) = self.uars().bf_line(db)?;
        Some(MadeBf { _reg: self.share(), line, reg: NonNull::from(reg) })
    }
}

impl MadeBf {
    /// [`Uars::ring_block`] of `block` on this register, from what was
    /// worked out when the QP was made: the caller holds the QP's slot
    /// lock, which serialises its rings ([`BfReg::ring_alone`]'s rule).
    #[inline(always)]
    pub fn ring_block(&self, block: SqBlock<'_>) {
        // SAFETY: the register state lives in the region `_reg` keeps
        // (G1, G5); shared access reaches only its atomic.
        let reg = unsafe { self.reg.as_ref() };
        // SAFETY: the line is of a UAR page of the region's `Uars`, which
        // stay mapped while `_reg` counts (G1, G5; U4).
        unsafe { self.line.ring_alone(reg, #[inline(always)] |w| block.word(w)) };
    }
}

/// A locked slot: `&mut` access to its entry (G2).
pub struct SlotGuard<'a> {
    slot: &'a Slot,
}

impl core::ops::Deref for SlotGuard<'_> {
    type Target = Entry;
    #[inline(always)]
    fn deref(&self) -> &Entry {
        // SAFETY: the lock is held by this guard (G2).
        unsafe { &*self.slot.entry.get() }
    }
}

impl core::ops::DerefMut for SlotGuard<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Entry {
        // SAFETY: the lock is held by this guard, borrowed mutably (G2).
        unsafe { &mut *self.slot.entry.get() }
    }
}

impl SlotGuard<'_> {
    /// Puts `e` in the slot (dropping what was there), marking the slot
    /// as a CQ's if `e` is one (for [`RegRef::lock_queue`]).
    pub fn put(&mut self, e: Entry) {
        self.slot.cq.store(matches!(e, Entry::Cq { .. }), Ordering::Relaxed);
        **self = e;
    }

    /// Takes the entry out, leaving the slot free and unmarked.
    pub fn take(&mut self) -> Entry {
        self.slot.cq.store(false, Ordering::Relaxed);
        core::mem::take(&mut **self)
    }

    /// Publishes a CQ's consumer index for [`RegRef::published`] (release).
    #[inline(always)]
    pub fn publish(&self, ci: u32) {
        self.slot.published.store(ci, Ordering::Release);
    }
}

impl Drop for SlotGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.slot.lock.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn srq_entry() -> Entry {
        let lim = super::super::sizing::DeviceLimits { max_sq_desc_sz: 512, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
        let mut m = super::super::res::SrqMem::new("test", &lim, 4, 1, 64).unwrap();
        let srq = m.srq("test").unwrap();
        Entry::Srq { srq, buf: m.buf, handle: 5 }
    }

    fn table() -> RegRef {
        let fd = rustix::fs::memfd_create("verbs-reg-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, 8 * 4096).unwrap();
        RegRef::new("test", super::super::ctx::tests::sim_uars(&fd)).unwrap()
    }

    /// Only the low-latency registers (rung alone, with BlueFlame) have a
    /// handle by address; it keeps the table (and so the UAR pages) alive.
    #[test]
    fn made_bf_only_for_registers_rung_alone() {
        let a = table();
        let with: Vec<u32> = (0..32).filter(|&r| a.uars().doorbell(r).is_some_and(|db| a.made_bf(&db).is_some())).collect();
        assert_eq!(with, [24, 25, 28, 29]);
        let bf = a.made_bf(&a.uars().doorbell(29).unwrap()).unwrap();
        assert_eq!(a.region().refs.load(Ordering::Relaxed), 2, "the handle counts");
        drop(bf);
        assert_eq!(a.region().refs.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn insert_lock_remove_and_last_handle_frees() {
        let a = table();
        let b = a.share();
        let i = a.insert(srq_entry()).unwrap();
        assert_eq!(a.find_srq(5), Some(i));
        assert_eq!(a.find_srq(6), None);
        let j = b.insert(srq_entry()).unwrap();
        assert_ne!(i, j);
        assert!(matches!(*b.lock(i).unwrap(), Entry::Srq { .. }));
        assert!(a.lock(SLOTS as u32).is_none());
        assert!(matches!(a.remove(i), Entry::Srq { .. }));
        assert!(matches!(*a.lock(i).unwrap(), Entry::Free));
        drop(a);
        // `b` still reaches the table; its drop frees the SRQ left in `j`.
        assert!(matches!(*b.lock(j).unwrap(), Entry::Srq { .. }));
    }

    #[test]
    fn full_table_gives_the_entry_back() {
        let a = table();
        // Slot 0 is kept back: SLOTS - 1 entries fit, none in slot 0.
        for _ in 1..SLOTS {
            assert_ne!(a.insert(Entry::Reserved).unwrap(), 0);
        }
        assert_eq!(a.insert(Entry::Reserved), None);
        a.remove(7);
        assert_eq!(a.insert(Entry::Reserved).unwrap(), 7);
    }

    #[test]
    fn two_threads_take_turns_on_a_slot() {
        let a = table();
        let i = a.insert(Entry::Reserved).unwrap();
        let b = a.share();
        let t = std::thread::spawn(move || {
            for _ in 0..10_000 {
                let mut g = b.lock(i).unwrap();
                *g = Entry::Free;
                *g = Entry::Reserved;
            }
        });
        for _ in 0..10_000 {
            assert!(matches!(*a.lock(i).unwrap(), Entry::Reserved), "never seen between the two stores");
        }
        t.join().unwrap();
    }
}
