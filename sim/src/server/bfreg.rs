//! Which BlueFlame register a new QP gets, in legacy UAR mode, by the
//! classes of the kernel's mlx5_ib (`alloc_bfreg` in
//! drivers/infiniband/hw/mlx5/qp.c):
//!
//! Registers are counted in the compact numbering of GET_CONTEXT (two per
//! UAR page: `0 .. tot_bfregs`). Register 0 is no BlueFlame register (plain
//! 64-bit doorbells) and is the fallback of last resort. The last
//! `num_low_latency_bfregs` are the high class: each goes to one QP at a
//! time (that QP may ring it without a lock, as libmlx5 does for them).
//! Those between (`1 .. tot - low_lat`) are the medium class, shared: a new
//! QP gets the least used one. A high-class register is tried first, then
//! a medium one, then register 0; a context made with the version-0
//! request (8 bytes of driver data) gets register 0 for every QP.
//!
//! The create response names the register in the per-page numbering
//! (`adjust_bfregn`: four indices per page, the first two BlueFlame).

/// Per-context register use.
#[derive(Debug, Default, Clone)]
pub struct Bfregs {
    /// QPs holding each register, in compact numbering (`tot_bfregs` long).
    count: Vec<u32>,
    /// Of those, the high (low-latency, exclusive) class.
    low_lat: u32,
    /// The request was the v2 one (the kernel's `bfregi->ver >= 2`).
    ver2: bool,
}

impl Bfregs {
    /// The registers GET_CONTEXT granted: `total` (even, at least 2) of
    /// which `low_lat` (below `total`) are low-latency.
    pub fn new(total: u32, low_lat: u32, ver2: bool) -> Self {
        Self { count: vec![0; total as usize], low_lat, ver2 }
    }

    fn first_high(&self) -> usize {
        // Medium registers: total - low_lat - 1 (register 0 is neither).
        (self.count.len() as u32).saturating_sub(self.low_lat + 1) as usize + 1
    }

    /// Takes a register for a new QP; its compact number.
    pub fn alloc(&mut self) -> u32 {
        let n = self.count.len();
        let hi = self.first_high().min(n);
        let pick = if !self.ver2 || n == 0 {
            None
        } else if let Some(i) = (hi..n).find(|&i| self.count[i] == 0) {
            Some(i)
        } else if hi > 1 {
            // Least used medium register, the lowest of equals.
            (1..hi).min_by_key(|&i| (self.count[i], i))
        } else {
            None
        };
        let i = pick.unwrap_or(0);
        if let Some(c) = self.count.get_mut(i) {
            *c += 1;
        }
        i as u32
    }

    /// Gives back register `compact` (the QP is gone).
    pub fn free(&mut self, compact: u32) {
        if let Some(c) = self.count.get_mut(compact as usize) {
            *c = c.saturating_sub(1);
        }
    }

    /// The per-page number the create response carries.
    pub fn index(compact: u32) -> u32 {
        compact / 2 * 4 + compact % 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn high_class_first_and_exclusive_then_least_used_medium() {
        // libmlx5's request: 16 registers, 4 low-latency (12..16).
        let mut b = Bfregs::new(16, 4, true);
        let got: Vec<u32> = (0..4).map(|_| b.alloc()).collect();
        assert_eq!(got, [12, 13, 14, 15], "the high class, one QP each");
        assert_eq!(b.alloc(), 1, "then the medium class from its start");
        assert_eq!(b.alloc(), 2);
        b.free(13);
        assert_eq!(b.alloc(), 13, "a freed high register goes to the next QP alone");
        let more: Vec<u32> = (0..10).map(|_| b.alloc()).collect();
        assert_eq!(more, [3, 4, 5, 6, 7, 8, 9, 10, 11, 1], "medium registers are shared, least used first");
        assert_eq!(b.count[0], 0, "register 0 only when nothing else is left");
        assert_eq!((Bfregs::index(12), Bfregs::index(13), Bfregs::index(1)), (24, 25, 1));
    }

    #[test]
    fn fallbacks() {
        let mut old = Bfregs::new(16, 4, false);
        assert_eq!((old.alloc(), old.alloc()), (0, 0), "version-0 contexts share register 0");
        // All low-latency: no medium class; once the high ones are held, 0.
        let mut b = Bfregs::new(2, 1, true);
        assert_eq!((b.alloc(), b.alloc(), b.alloc()), (1, 0, 0));
        b.free(1);
        assert_eq!(b.alloc(), 1);
        // No low-latency registers: all shared.
        let mut m = Bfregs::new(4, 0, true);
        assert_eq!((m.alloc(), m.alloc(), m.alloc(), m.alloc()), (1, 2, 3, 1));
    }
}
