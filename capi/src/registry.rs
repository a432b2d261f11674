//! The C objects the kernel names by `user_handle` in completion and
//! async events (CQs, QPs, SRQs): handle -> address of the C struct.
//!
//! The `verbs` crate picks each object's `user_handle`; events carry it
//! back, and C wants the object's pointer. An entry is added when the
//! object is created (the only allocation: creation is not the data
//! path) and removed before its box is freed, both under the lock; a
//! caller that finds an entry reads what it needs from the object while
//! still holding the lock ([`with`]), so it never sees a freed one.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// What kind of object an entry is (events say which kind they name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Cq,
    Qp,
    Srq,
}

static OBJECTS: Mutex<BTreeMap<u64, (Kind, usize)>> = Mutex::new(BTreeMap::new());

fn lock() -> MutexGuard<'static, BTreeMap<u64, (Kind, usize)>> {
    OBJECTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Records the C object at `addr` for `user_handle`.
pub(crate) fn insert(user_handle: u64, kind: Kind, addr: usize) {
    lock().insert(user_handle, (kind, addr));
}

/// Forgets `user_handle` (before the object is freed).
pub(crate) fn remove(user_handle: u64) {
    lock().remove(&user_handle);
}

/// Runs `f` with the address of the live object of `kind` named
/// `user_handle` (0 if there is none), holding the lock.
pub(crate) fn with<R>(user_handle: u64, kind: Kind, f: impl FnOnce(usize) -> R) -> R {
    let g = lock();
    let addr = match g.get(&user_handle) {
        Some(&(k, a)) if k == kind => a,
        _ => 0,
    };
    f(addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_by_kind_until_removed() {
        insert(u64::MAX - 7, Kind::Qp, 0x1000);
        assert_eq!(with(u64::MAX - 7, Kind::Qp, |a| a), 0x1000);
        assert_eq!(with(u64::MAX - 7, Kind::Cq, |a| a), 0);
        remove(u64::MAX - 7);
        assert_eq!(with(u64::MAX - 7, Kind::Qp, |a| a), 0);
    }
}
