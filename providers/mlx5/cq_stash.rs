//! Completions a `poll_with` took from a CQ and could not hand out
//! because its closure panicked first: kept in the CQ's slot (beside its
//! ring, under the same lock) and handed out, oldest first, by the next
//! polls before they read the ring again, so a panic loses none but the
//! completion it was handed.
//!
//! `poll_with` takes completions from the ring [`CHUNK`] at a time under
//! the CQ's lock and hands them to its closure with no lock held; the
//! stash never holds more than [`CHUNK`] (a chunk drains the stash first,
//! and puts back at most what it took).

use crate::providers::mlx5::buf::Table;
use crate::wc::{Wc, WcOut};

/// The most completions a `poll_with` takes from the CQ at once (and so
/// the most a stash holds).
pub const CHUNK: usize = 16;

/// The completions put back, oldest first: `wcs[start..start + len]`.
/// The table is made at the first put-back (a panic), never on a poll.
#[derive(Debug, Default)]
pub struct Stash {
    wcs: Option<Table<Wc>>,
    start: usize,
    len: usize,
}

impl Stash {
    /// Whether nothing waits here.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Moves the oldest stashed completions into `out` (as many as fit);
    /// how many.
    #[cold]
    #[inline(never)]
    pub fn drain<S: WcOut>(&mut self, out: &mut [S]) -> usize {
        let Some(t) = &self.wcs else {
            self.len = 0;
            return 0;
        };
        let Some(waiting) = t.get(self.start..self.start + self.len) else {
            self.len = 0;
            return 0;
        };
        let k = waiting.len().min(out.len());
        for (o, w) in out.iter_mut().zip(waiting) {
            o.set(*w);
        }
        self.start += k;
        self.len -= k;
        if self.len == 0 {
            self.start = 0;
        }
        k
    }

    /// Puts `wcs` back before the stashed completions (they are older);
    /// `false`, nothing kept, if they do not fit in [`CHUNK`] or its
    /// table cannot be made.
    #[cold]
    pub fn put_back(&mut self, wcs: &[Wc]) -> bool {
        if wcs.is_empty() {
            return true;
        }
        let total = self.len + wcs.len();
        if total > CHUNK {
            return false;
        }
        if self.wcs.is_none() {
            self.wcs = Table::new("ibv_poll_cq", CHUNK).ok();
        }
        let Some(t) = &mut self.wcs else { return false };
        if t.len() < CHUNK {
            return false;
        }
        // The stashed ones to the end of the table, the older ones
        // right before them.
        t.copy_within(self.start..self.start + self.len, CHUNK - self.len);
        t[CHUNK - total..CHUNK - self.len].copy_from_slice(wcs);
        (self.start, self.len) = (CHUNK - total, total);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::uverbs::Wc as AbiWc;

    fn wc(id: u64) -> Wc {
        Wc::from_abi(AbiWc { wr_id: id, ..AbiWc::default() })
    }

    fn ids(s: &mut Stash, n: usize) -> Vec<u64> {
        let mut out = vec![Wc::ZERO; n];
        let k = s.drain(&mut out);
        out[..k].iter().map(Wc::wr_id).collect()
    }

    #[test]
    fn put_back_goes_before_what_waits_and_drains_in_order() {
        let mut s = Stash::default();
        assert!(s.is_empty() && ids(&mut s, 4).is_empty());
        assert!(s.put_back(&[wc(5), wc(6), wc(7)]));
        assert_eq!(ids(&mut s, 1), [5]);
        assert!(s.put_back(&[wc(3), wc(4)]));
        assert_eq!(ids(&mut s, 3), [3, 4, 6]);
        assert!(!s.is_empty());
        assert_eq!(ids(&mut s, 8), [7]);
        assert!(s.is_empty());
        let full: Vec<Wc> = (0..CHUNK as u64).map(wc).collect();
        assert!(s.put_back(&full));
        assert!(!s.put_back(&[wc(99)]), "over CHUNK: refused, nothing changed");
        assert_eq!(ids(&mut s, CHUNK), (0..CHUNK as u64).collect::<Vec<_>>());
    }
}
