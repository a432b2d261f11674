//! # Safety
//!
//! The event acknowledgement counters of the C structs (`ibv_cq`'s
//! `comp_events_completed`/`async_events_completed`, `ibv_qp`'s and
//! `ibv_srq`'s `events_completed`) and the wait of `ibv_destroy_*` for
//! them, with the struct's own pthread mutex and condition, as rdma-core
//! does. [`Counters`] holds raw pointers to those fields of a live boxed
//! C struct (made with [`Counters::of`] from the box's address and the
//! field offsets, no reference taken); the struct's mutex and condition
//! are all-zero (glibc's static initializers) and only ever used here or
//! by C, and the counters are only read or written with the mutex held.
#![allow(unsafe_code)]

use libc::{pthread_cond_t, pthread_mutex_t};

/// Raw pointers to a C object's mutex, condition and up to two counters.
pub(crate) struct Counters {
    mutex: *mut pthread_mutex_t,
    cond: *mut pthread_cond_t,
    counters: [*mut u32; 2],
}

impl Counters {
    /// The fields at these byte offsets of the struct at `base` (`c2`:
    /// the same as `c1` when the struct has one counter).
    pub(crate) fn of<T>(base: *mut T, mutex: usize, cond: usize, c1: usize, c2: usize) -> Self {
        let at = |off: usize| base.wrapping_byte_add(off);
        Self { mutex: at(mutex).cast(), cond: at(cond).cast(), counters: [at(c1).cast(), at(c2).cast()] }
    }

    fn lock(&self) {
        // SAFETY: the mutex of a live C struct (module docs).
        unsafe { libc::pthread_mutex_lock(self.mutex) };
    }

    fn unlock(&self) {
        // SAFETY: as for `lock`; held by this thread.
        unsafe { libc::pthread_mutex_unlock(self.mutex) };
    }

    fn get(&self, i: usize) -> u32 {
        // SAFETY: an aligned u32 field of a live struct, read with the mutex held.
        unsafe { self.counters[i].read() }
    }

    /// Adds `n[i]` to counter `i` and wakes a waiting destroy.
    pub(crate) fn add(&self, n: [u32; 2]) {
        self.lock();
        for (i, k) in n.into_iter().enumerate() {
            if k != 0 {
                let v = self.get(i).wrapping_add(k);
                // SAFETY: as in `get`, written with the mutex held.
                unsafe { self.counters[i].write(v) };
            }
        }
        // SAFETY: the condition of a live struct (module docs).
        unsafe { libc::pthread_cond_broadcast(self.cond) };
        self.unlock();
    }

    /// Waits until the counters reach `want`.
    pub(crate) fn wait(&self, want: [u32; 2]) {
        self.lock();
        while self.get(0) != want[0] || self.get(1) != want[1] {
            // SAFETY: condition and mutex of a live struct; the mutex is held.
            unsafe { libc::pthread_cond_wait(self.cond, self.mutex) };
        }
        self.unlock();
    }
}
