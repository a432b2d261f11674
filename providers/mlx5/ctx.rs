//! The mlx5 side of a device context (libmlx5 `mlx5_alloc_context`,
//! `mlx5_set_context`, `mlx5_map_internal_uar`): the `alloc_ucontext`
//! driver data, what the response grants, and the UAR pages mapped for
//! it in legacy mode.
//!
//! Legacy UARs only: the request does not offer `MLX5_LIB_CAP_DYN_UAR`,
//! so the kernel hands out `total_num_bfregs` BlueFlame registers at
//! context creation (`tot_bfregs > 0`), on `tot_bfregs / 2` UAR pages
//! mapped at offsets `i * 4096` (`MLX5_IB_MMAP_REGULAR_PAGE`), and picks a
//! register for each QP (`bfreg_index` of the create response). Dynamic
//! UARs (`UAR_OBJ_ALLOC` ioctls) are not implemented; a kernel that answers
//! `tot_bfregs == 0` anyway is refused with a message saying so.
//!
//! Register numbering (libmlx5 `mlx5_map_internal_uar` with one UAR per
//! page): register `r` is on page `r / 4`, at `0x800 + (r % 4) *
//! bf_reg_size`; its half-size `bf_reg_size / 2` is what one BlueFlame
//! copy may fill. Register 0 is never used for BlueFlame (`uuarn == 0`).

use rustix::fd::BorrowedFd;
use zerocopy::FromBytes;

use super::abi::{Mlx5AllocUcontextReqV2, Mlx5AllocUcontextResp, LIB_CAP_4K_UAR, MMAP_REGULAR_PAGE};
use super::buf::{SqBlock, WqBuf};
use super::sizing::DeviceLimits;
use super::sq::{BlueFlame, Ring, SendQueue};
use super::uar::{mmap_offset, BfLine, BfReg, Uar, BF_OFFSET, CQ_DOORBELL, UAR_PAGE};
use crate::error::{Error, ErrorKind, Result};

const VERB: &str = "ibv_open_device";

/// BlueFlame registers asked for (libmlx5's default `MLX5_TOTAL_UUARS`).
pub const TOTAL_BFREGS: u32 = 16;
/// Of those, low-latency ones (libmlx5's default `MLX5_NUM_LOW_LAT_UUARS`).
pub const LOW_LAT_BFREGS: u32 = 4;
/// Registers per legacy UAR page (`MLX5_NUM_NON_FP_BFREGS_PER_UAR` + 2
/// fast-path ones: four indices per page, the first two BlueFlame).
const BFREGS_PER_PAGE: u32 = 4;
/// Most UAR pages this provider maps (`TOTAL_BFREGS / 2`).
pub const MAX_UAR_PAGES: usize = (TOTAL_BFREGS / 2) as usize;

/// The driver data of `GET_CONTEXT` (`mlx5_ib_alloc_ucontext_req_v2`).
pub fn request() -> Mlx5AllocUcontextReqV2 {
    Mlx5AllocUcontextReqV2 {
        total_num_bfregs: TOTAL_BFREGS,
        num_low_latency_bfregs: LOW_LAT_BFREGS,
        max_cqe_version: 1,
        lib_caps: LIB_CAP_4K_UAR,
        ..Default::default()
    }
}

/// What the context response grants, checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtxInfo {
    /// Queue size limits.
    pub limits: DeviceLimits,
    /// CQE version (0: CQEs name QPs by number; 1: by user index).
    pub cqe_version: u8,
    /// Doorbell record spacing.
    pub cache_line_size: u32,
    /// Bytes of a BlueFlame register (0: no BlueFlame at all).
    pub bf_reg_size: u32,
    /// BlueFlame registers granted.
    pub tot_bfregs: u32,
    /// `MLX5_USER_CMDS_SUPP_UHW_*`.
    pub cmds_supp_uhw: u8,
    /// Size of the QP number table.
    pub qp_tab_size: u32,
}

impl CtxInfo {
    /// Checks the response bytes (`mlx5_set_context`'s refusals).
    pub fn from_response(bytes: &[u8]) -> Result<Self> {
        let r = Mlx5AllocUcontextResp::read_from_prefix(bytes)
            .map(|(r, _)| r)
            .map_err(|_| Error::new(VERB, ErrorKind::Malformed).with_detail("mlx5: the context response is short"))?;
        let bad = |why| Err(Error::new(VERB, ErrorKind::Unsupported).with_detail(why));
        if r.cqe_version > 1 {
            return bad("mlx5: the kernel chose a CQE version above 1");
        }
        if r.cache_line_size == 0 || !r.cache_line_size.is_power_of_two() || r.cache_line_size > 4096 {
            return bad("mlx5: the kernel reported no usable cache line size");
        }
        if r.tot_bfregs == 0 {
            return bad("mlx5: the kernel granted no legacy UAR (dynamic UARs are not implemented)");
        }
        if r.tot_bfregs > TOTAL_BFREGS || !r.tot_bfregs.is_multiple_of(2) {
            return bad("mlx5: the kernel granted a UAR count this provider did not ask for");
        }
        if r.num_uars_per_page > 1 || (r.log_uar_size != 0 && r.log_uar_size != 12) {
            return bad("mlx5: UARs other than one 4 KiB UAR per page are not implemented");
        }
        if r.bf_reg_size != 0 && (r.bf_reg_size < 128 || BF_OFFSET + 2 * r.bf_reg_size as usize > UAR_PAGE) {
            return bad("mlx5: BlueFlame registers of a size this provider cannot place");
        }
        Ok(Self {
            limits: DeviceLimits {
                max_sq_desc_sz: u32::from(r.max_sq_desc_sz),
                max_rq_desc_sz: u32::from(r.max_rq_desc_sz),
                max_send_wqebb: r.max_send_wqebb,
                max_recv_wr: r.max_recv_wr,
                max_srq_recv_wr: r.max_srq_recv_wr,
            },
            cqe_version: r.cqe_version,
            cache_line_size: r.cache_line_size,
            bf_reg_size: r.bf_reg_size,
            tot_bfregs: r.tot_bfregs,
            cmds_supp_uhw: r.cmds_supp_uhw,
            qp_tab_size: r.qp_tab_size,
        })
    }

    /// UAR pages to map (`tot_bfregs / 2`).
    pub fn uar_pages(&self) -> usize {
        (self.tot_bfregs / 2) as usize
    }

    /// Where register `r` is: (page, byte offset in it); `None` past the
    /// granted ones or for the non-BlueFlame indices 2 and 3 of a page.
    pub fn bfreg_place(&self, r: u32) -> Option<(usize, usize)> {
        let (page, k) = ((r / BFREGS_PER_PAGE) as usize, r % BFREGS_PER_PAGE);
        (page < self.uar_pages() && k < 2).then(|| (page, BF_OFFSET + k as usize * self.bf_reg_size as usize))
    }
}

/// The UAR pages of a context and the state of their BlueFlame registers.
#[derive(Debug)]
pub struct Uars {
    pages: heapless::Vec<Uar, MAX_UAR_PAGES>,
    /// The state of BlueFlame register `k` of page `p` at `p * 2 + k`
    /// ([`Doorbell::state`]): every register `bfreg_place` names has one
    /// (register numbers run to `4 * pages`, the indices 2 and 3 of each
    /// page being no BlueFlame registers).
    regs: [BfReg; 2 * MAX_UAR_PAGES],
    info: CtxInfo,
}

/// A QP's doorbell: which register, and how it may be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Doorbell {
    /// UAR page.
    pub page: usize,
    /// Byte offset of the register in the page.
    pub offset: usize,
    /// Register number (the `bfreg_index` the kernel gave).
    pub reg: u32,
    /// Which of the context's register states (the lock and the
    /// alternating half) is this register's: `page * 2 + k` for register
    /// `k` of its page, below `2 * MAX_UAR_PAGES`.
    pub state: usize,
    /// Bytes one BlueFlame copy may fill (`bf->buf_size`); 0 for no
    /// BlueFlame (register 0, or `bf_reg_size` 0).
    pub buf_size: u32,
    /// A low-latency register: the kernel gives it to one QP at a time
    /// (mlx5_ib `alloc_high_class_bfreg`), so the QP rings it without the
    /// register lock ([`BfReg::ring_alone`]; libmlx5's `need_lock` 0).
    pub alone: bool,
}

impl Doorbell {
    /// The QP's BlueFlame settings (libmlx5's defaults: BlueFlame on for
    /// every register but 0, `MLX5_POST_SEND_PREFER_BF` on).
    pub fn blueflame(&self) -> BlueFlame {
        BlueFlame { enabled: self.buf_size != 0, prefer: true, buf_size: self.buf_size }
    }
}

impl Uars {
    /// Maps the context's UAR pages from the device file.
    pub fn map(fd: BorrowedFd<'_>, info: CtxInfo) -> Result<Self> {
        let mut pages = heapless::Vec::new();
        for i in 0..info.uar_pages() {
            let uar = Uar::map(VERB, fd, mmap_offset(MMAP_REGULAR_PAGE, i as u32), UAR_PAGE)?;
            // `uar_pages() <= MAX_UAR_PAGES` (checked in `from_response`).
            let _ = pages.push(uar);
        }
        Ok(Self { pages, regs: Default::default(), info })
    }

    /// What the response granted.
    pub fn info(&self) -> &CtxInfo {
        &self.info
    }

    /// The doorbell of register `reg` (the `bfreg_index` a QP was given);
    /// `None` if the context has no such register.
    pub fn doorbell(&self, reg: u32) -> Option<Doorbell> {
        let (page, offset) = self.info.bfreg_place(reg)?;
        let buf_size = if reg == 0 { 0 } else { self.info.bf_reg_size / 2 };
        let state = page * 2 + (reg % BFREGS_PER_PAGE) as usize;
        // The high class is the last `LOW_LAT_BFREGS` of the compact
        // numbering (`state`); register 0 is shared by any QP the kernel
        // has nothing else for (libmlx5's `need_uuar_lock`).
        let alone = reg != 0 && state >= self.info.tot_bfregs.saturating_sub(LOW_LAT_BFREGS) as usize;
        Some(Doorbell { page, offset, reg, state, buf_size, alone })
    }

    /// The BlueFlame register of `db` by address and its state, for the
    /// QP that rings it alone ([`Doorbell::alone`], BlueFlame on): what
    /// [`Uars::ring_block`] works out on each post, once
    /// ([`RegRef::made_bf`](super::registry::RegRef::made_bf)); `None` for
    /// any other register (those ring through [`Uars::ring`]).
    pub fn bf_line(&self, db: &Doorbell) -> Option<(BfLine, &BfReg)> {
        if !db.alone || db.buf_size == 0 {
            return None;
        }
        let line = self.pages.get(db.page)?.bf_line(db.offset, self.info.bf_reg_size / 2)?;
        Some((line, &self.regs[db.state & (self.regs.len() - 1)]))
    }

    /// Rings a send doorbell: `store` gets the UAR page and the byte
    /// offset (register + current half) and does the 64-bit store or the
    /// BlueFlame copy; fences and the half flip around it (`BfReg::ring`).
    #[inline(always)]
    pub fn ring<R>(&self, db: &Doorbell, store: impl FnOnce(&Uar, usize) -> R) -> Option<R> {
        let uar = self.pages.get(db.page)?;
        // (a mask, not a bounds check: every `Doorbell::state` is below
        // the length, a power of two; a forged one names another register
        // of this context, never memory outside it)
        let reg = &self.regs[db.state & (self.regs.len() - 1)];
        // The half flips by `bf_reg_size / 2` even for register 0, whose
        // doorbells are 8 bytes (libmlx5 flips every register).
        let half = self.info.bf_reg_size / 2;
        Some(match db.alone {
            true => reg.ring_alone(half, #[inline(always)] |off| store(uar, db.offset + off)),
            false => reg.ring(half, #[inline(always)] |off| store(uar, db.offset + off)),
        })
    }

    /// Rings the doorbell a post asked for ([`Ring`]): the 64-bit store
    /// of the control segment's first 8 bytes, or the BlueFlame copy of
    /// the one WQE from `sq`'s ring in `buf`. `false` if the register is
    /// not this context's (nothing stored).
    #[inline]
    pub fn ring_send(&self, db: &Doorbell, sq: &SendQueue, buf: &WqBuf, ring: Ring) -> bool {
        match ring {
            Ring::Nothing => true,
            Ring::Doorbell(bytes) => self.ring(db, |uar, off| uar.store(off, bytes)).unwrap_or(false),
            Ring::BlueFlame { first, chunks } => self
                .ring(db, |uar, off| uar.store_chunks(off, (0..chunks).map(|c| sq.block(buf, first.wrapping_add(c)))))
                .unwrap_or(false),
        }
    }

    /// Rings a BlueFlame copy of one basic block, `block` (the straight
    /// path's WQE, read from the ring word by word as it is copied): as
    /// [`Uars::ring_send`] does for `Ring::BlueFlame` of one chunk.
    #[inline(always)]
    pub fn ring_block(&self, db: &Doorbell, block: SqBlock<'_>) -> bool {
        self.ring(db, #[inline(always)] |uar, off| uar.store_block_with(off, #[inline(always)] |w| block.word(w))).unwrap_or(false)
    }

    /// Rings a CQ arm doorbell (`mlx5_arm_cq`): the 8 bytes at `+0x20` of
    /// the first UAR page (legacy mode has no NC UAR), between
    /// write-combining flushes.
    pub fn arm_cq(&self, word: [u8; 8]) -> bool {
        let Some(uar) = self.pages.first() else { return false };
        super::uar::wc_flush();
        let ok = uar.store(CQ_DOORBELL, word);
        super::uar::wc_flush();
        ok
    }
}

/// The ALLOC_UCONTEXT response the simulated ConnectX gives
/// (sim/src/server/device.rs): for the unit tests and the fuzz targets.
#[cfg(any(test, feature = "internals"))]
pub fn sim_response() -> Mlx5AllocUcontextResp {
    Mlx5AllocUcontextResp {
        qp_tab_size: 1 << 18,
        bf_reg_size: 512,
        tot_bfregs: 16,
        cache_line_size: 64,
        max_sq_desc_sz: 1024,
        max_rq_desc_sz: 512,
        max_send_wqebb: 1 << 15,
        max_recv_wr: 1 << 15,
        max_srq_recv_wr: 1 << 15,
        num_ports: 1,
        response_length: 72,
        cqe_version: 1,
        cmds_supp_uhw: 2,
        eth_min_inline: 1,
        log_uar_size: 12,
        num_uars_per_page: 1,
        ..Default::default()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use zerocopy::IntoBytes;

    /// The UARs of the simulator's context, over a memfd of 8 pages.
    pub(in super::super) fn sim_uars(fd: &rustix::fd::OwnedFd) -> Uars {
        Uars::map(rustix::fd::AsFd::as_fd(fd), CtxInfo::from_response(sim_response().as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn request_bytes() {
        let b = request();
        let b = b.as_bytes();
        assert_eq!(b.len(), 32);
        assert_eq!(&b[..16], &[16, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0], "no DEVX flag");
        assert_eq!(b[16], 1, "CQE version 1");
        assert_eq!(&b[24..], &[1, 0, 0, 0, 0, 0, 0, 0], "4K_UAR, not DYN_UAR: legacy UARs");
    }

    #[test]
    fn response_and_register_places() {
        let i = CtxInfo::from_response(sim_response().as_bytes()).unwrap();
        assert_eq!((i.cqe_version, i.cache_line_size, i.uar_pages()), (1, 64, 8));
        assert_eq!(i.limits.max_sq_desc_sz, 1024);
        assert_eq!(i.bfreg_place(0), Some((0, 0x800)));
        assert_eq!(i.bfreg_place(1), Some((0, 0xa00)));
        assert_eq!(i.bfreg_place(2), None, "not a BlueFlame index");
        assert_eq!(i.bfreg_place(29), Some((7, 0xa00)));
        assert_eq!(i.bfreg_place(32), None, "past the granted pages");
    }

    #[test]
    fn responses_the_provider_refuses() {
        let check = |f: fn(&mut Mlx5AllocUcontextResp)| {
            let mut r = sim_response();
            f(&mut r);
            CtxInfo::from_response(r.as_bytes()).unwrap_err().kind()
        };
        assert_eq!(check(|r| r.tot_bfregs = 0), ErrorKind::Unsupported, "dynamic UARs");
        assert_eq!(check(|r| r.cqe_version = 2), ErrorKind::Unsupported);
        assert_eq!(check(|r| r.cache_line_size = 0), ErrorKind::Unsupported);
        assert_eq!(check(|r| r.tot_bfregs = 32), ErrorKind::Unsupported);
        assert_eq!(check(|r| r.num_uars_per_page = 2), ErrorKind::Unsupported);
        assert_eq!(check(|r| r.bf_reg_size = 2048), ErrorKind::Unsupported);
        assert_eq!(CtxInfo::from_response(&[0; 16]).unwrap_err().kind(), ErrorKind::Malformed);
    }

    #[test]
    fn doorbells_ring_through_the_pages() {
        let fd = rustix::fs::memfd_create("verbs-uars-test", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, 8 * UAR_PAGE as u64).unwrap();
        let info = CtxInfo::from_response(sim_response().as_bytes()).unwrap();
        let u = Uars::map(rustix::fd::AsFd::as_fd(&fd), info).unwrap();
        let db = u.doorbell(5).unwrap();
        assert_eq!((db.page, db.offset, db.buf_size), (1, 0xa00, 256));
        assert_eq!(u.doorbell(0).unwrap().buf_size, 0, "register 0: no BlueFlame");
        for v in [1u8, 2] {
            assert_eq!(u.ring(&db, |uar, off| uar.store(off, [v; 8])), Some(true));
        }
        // The last register of the last page (the simulator hands out
        // register numbers up to 29) rings too, with a state of its own.
        let last = u.doorbell(29).unwrap();
        assert_eq!((last.page, last.offset, last.state), (7, 0xa00, 15));
        let states: Vec<usize> = [1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28, 29].iter().map(|&r| u.doorbell(r).unwrap().state).collect();
        assert_eq!(states, (1..16).collect::<Vec<_>>(), "one state per register");
        // Registers 24, 25, 28, 29 (compact 12..16) are the 4 low-latency
        // ones of 16: rung without the lock; the rest share theirs.
        let alone: Vec<u32> = (0..32).filter(|&r| u.doorbell(r).is_some_and(|d| d.alone)).collect();
        assert_eq!(alone, [24, 25, 28, 29]);
        for v in [7u8, 8] {
            assert_eq!(u.ring(&last, |uar, off| uar.store(off, [v; 8])), Some(true));
        }
        assert!(u.arm_cq([9; 8]));
        let mut page = [0u8; UAR_PAGE];
        rustix::io::pread(&fd, &mut page, UAR_PAGE as u64).unwrap();
        assert_eq!(&page[0xa00..0xa08], &[1; 8]);
        assert_eq!(&page[0xb00..0xb08], &[2; 8], "the second doorbell goes to the other half");
        rustix::io::pread(&fd, &mut page, 0).unwrap();
        assert_eq!(&page[0x20..0x28], &[9; 8]);
        rustix::io::pread(&fd, &mut page, 7 * UAR_PAGE as u64).unwrap();
        assert_eq!(&page[0xa00..0xa08], &[7; 8], "register 29 rang");
        assert_eq!(&page[0xb00..0xb08], &[8; 8], "alone, it alternates halves too");
    }

    /// A real post through `SendQueue`, then its doorbell: one RDMA WRITE
    /// is copied whole by BlueFlame (ds 3: 48 bytes, one 64-byte chunk)
    /// to the register's current half; with register 0 the same post is
    /// an 8-byte doorbell.
    #[test]
    fn send_doorbell_and_blueflame_copy() {
        use super::super::sizing::sq_size;
        use super::super::sq::SqConfig;
        use crate::qp::QpType;
        use crate::wr::{SendWr, Sge};
        let fd = rustix::fs::memfd_create("verbs-uars-bf", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fd, 8 * UAR_PAGE as u64).unwrap();
        let info = CtxInfo::from_response(sim_response().as_bytes()).unwrap();
        let u = Uars::map(rustix::fd::AsFd::as_fd(&fd), info).unwrap();
        for (reg, bf_expected) in [(1u32, true), (0, false)] {
            let db = u.doorbell(reg).unwrap();
            let size = sq_size(&info.limits, QpType::Rc, 4, 1, 0).unwrap().unwrap();
            let cfg = SqConfig { qpn: 0x123, qp_type: QpType::Rc, size, sq_offset: 0, dbrec_offset: 4096, sig_all: false, atomics: false, bf: db.blueflame() };
            let mut sq = SendQueue::new("test", cfg).unwrap();
            let mut buf = WqBuf::new("test", 8192).unwrap();
            let sge = [Sge { addr: 0x1000, length: 8, lkey: 5 }];
            let wr = SendWr::rdma_write(1, &sge, 0x2000, 6).signaled();
            let ring = sq.post(&mut buf, &[wr], |_| None).unwrap();
            assert_eq!(matches!(ring, Ring::BlueFlame { chunks: 1, .. }), bf_expected, "{ring:?}");
            assert!(u.ring_send(&db, &sq, &buf, ring));
            let mut page = [0u8; UAR_PAGE];
            rustix::io::pread(&fd, &mut page, 0).unwrap();
            let wqe: [u8; 64] = buf.get(0).unwrap();
            let at = db.offset;
            if bf_expected {
                assert_eq!(&page[at..at + 64], &wqe[..], "the whole WQE in the register");
            } else {
                assert_eq!(&page[at..at + 8], &wqe[..8], "the control segment's first 8 bytes");
                assert_eq!(&page[at + 8..at + 16], &[0; 8]);
            }
        }
    }
}
