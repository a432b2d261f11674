//! mlx5 through the provider seam ([`crate::providers::seam`]): its match
//! rule (driver id, or the ConnectX PCI ids of libmlx5's `hca_table` when
//! discovery found the device in sysfs only), its capabilities, and the
//! hooks that allocate each object's memory, send its create command with
//! the driver data, and keep its state in the context's slot table
//! ([`super::registry`]) where posts and polls meet.

use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU8, Ordering};

use rustix::fd::{AsFd, BorrowedFd};
use zerocopy::{FromZeros, IntoBytes};

use super::abi::{Mlx5CreateQpResp, Mlx5ResizeCq};
use super::ctx::{self, CtxInfo, Doorbell, Uars};
use super::cqe::stash::CHUNK;
use super::ops;
use super::reset;
use super::registry::{Entry, MadeBf, MadeSlot, RegRef};
use super::res::{cqe_size, CqMem, QpMem, SrqMem};
use super::abi::Mlx5CreateAhResp;
use super::av::{build_av, roce_v2_sport, Link};
use crate::abi::uverbs::{CreateAh, CreateAhResp, CreateCq, ModifySrq, ResizeCq};
use crate::ah::AhAttr;
use crate::cmd::device::query_gid_entry;
use crate::query::{GidEntry, GID_TYPE_ROCE_V2};
use crate::abi::RdmaDriverId;
use crate::cmd::device::{get_context, query_device_ex, ContextReply};
use crate::cmd::Channel;
use crate::error::{Error, ErrorKind, Result};
use crate::providers::claim::Claim;
use crate::cmd::channel::RingFailed;
use crate::providers::seam::{QpCreateCmd, SrqCreateCmd, no_recv_queue, Caps, StraightWr, DriverCmd, Provider, ProviderContext, ProviderCq, ProviderQp, ProviderSrq, ResizeFailed};
use crate::qp::{QpCap, QpStateKind, QpType};
use crate::wc::{Wc, WcOut};
use crate::wr::{PostError, RecvWr, SendWr, Sge};

/// The mlx5 provider (ConnectX-4 and later, `mlx5_ib`).
#[derive(Clone, Copy, Debug)]
pub struct Mlx5;

/// The PCI ids libmlx5 claims (`mlx5_hca_table`, rdma-core v44).
pub const PCI_IDS: &[(u16, u16)] = &[
    (0x15b3, 0x1011), (0x15b3, 0x1012), (0x15b3, 0x1013), (0x15b3, 0x1014), (0x15b3, 0x1015),
    (0x15b3, 0x1016), (0x15b3, 0x1017), (0x15b3, 0x1018), (0x15b3, 0x1019), (0x15b3, 0x101a),
    (0x15b3, 0x101b), (0x15b3, 0x101c), (0x15b3, 0x101d), (0x15b3, 0x101e), (0x15b3, 0x101f),
    (0x15b3, 0x1021), (0x15b3, 0x1023), (0x15b3, 0xa2d2), (0x15b3, 0xa2d3), (0x15b3, 0xa2d6),
    (0x15b3, 0xa2dc), (0x15b3, 0xa2df),
];

impl Provider for Mlx5 {
    const NAME: &'static str = "mlx5";
    const DRIVER_ID: RdmaDriverId = RdmaDriverId::MLX5;
    const NAME_PREFIX: Option<&'static str> = None;
    const PCI_IDS: &'static [(u16, u16)] = PCI_IDS;
    const MIN_ABI: u32 = super::abi::MLX5_IB_UVERBS_ABI_VERSION;
    const MAX_ABI: u32 = super::abi::MLX5_IB_UVERBS_ABI_VERSION;
    const CAPS: Caps = Caps {
        iwarp: false,
        // The simulated ConnectX is RoCE; an InfiniBand port is not handled
        // yet (its AVs need no GRH and no MAC).
        roce: true,
        addresses_regions_by_iova: true,
        cq_resize: true,
        cqe_size_choice: true,
        memory_windows: true,
        address_handles: true,
        query_srq: true,
        multicast: true,
        // everything but IBV_QP_EX_WITH_ATOMIC_WRITE (1 << 12): libmlx5 v44
        // refuses it at ibv_create_qp_ex (EOPNOTSUPP), and so does our
        // send queue (sq_check.rs)
        send_ops: !(1 << 12),
        // libmlx5's create_qp passes ibv_create_qp_ex's create_flags to the
        // kernel as they are (the extended CREATE_QP), and mlx5_ib judges
        // them: BLOCK_SELF_MCAST_LB, SCATTER_FCS, CVLAN_STRIPPING and
        // PCI_WRITE_END_PADDING (SOURCE_QPN, an IPoIB underlay QP, is not
        // implemented here).
        qp_create_flags: crate::qp::QpCreateFlags::all().bits(),
        // libmlx5 has thread and parent domains (src/domain.rs: a TD gives no
        // dedicated UAR here yet)
        parent_domains: true,
        query_qp_send_caps_from_library: true,
        doorbell_names_qp: false,
        notify_names_cq: false,
        refuses_posts_in_error: false,
    };
    type Context = Mlx5Context;
    type Cq = Mlx5Cq;
    type Qp = Mlx5Qp;
    type Srq = Mlx5Srq;
}

/// An mlx5 context: the slot table, which owns the UAR pages.
#[derive(Debug)]
pub struct Mlx5Context {
    reg: RegRef,
    /// The device does atomics (`atomic_cap != IBV_ATOMIC_NONE`).
    atomics: bool,
    /// The device's `max_cqe`, if the query answered.
    max_cqe: Option<u32>,
}

impl Mlx5Context {
    fn info(&self) -> &CtxInfo {
        self.reg.uars().info()
    }

    /// A free slot for a new object, or the error saying the table is full.
    fn reserve(&self, verb: &'static str) -> Result<Slot<'_>> {
        match self.reg.insert(Entry::Reserved) {
            Some(i) => Ok(Slot { reg: &self.reg, i, keep: false }),
            None => Err(Error::new(verb, ErrorKind::OutOfResources).with_detail("mlx5: more CQs, QPs and SRQs than the context's table holds")),
        }
    }
}

/// A reserved slot, freed again unless the create got through.
struct Slot<'r> {
    reg: &'r RegRef,
    i: u32,
    keep: bool,
}

impl Slot<'_> {
    fn fill(mut self, e: Entry) -> (RegRef, u32) {
        if let Some(mut g) = self.reg.lock(self.i) {
            g.put(e);
        }
        self.keep = true;
        (self.reg.share(), self.i)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.keep {
            self.reg.remove(self.i);
        }
    }
}

impl ProviderContext for Mlx5Context {
    fn open(chan: &Channel) -> Result<(ContextReply, Self)> {
        const VERB: &str = "ibv_open_device";
        let mut out = [0u8; 72];
        let reply = get_context(chan, ctx::request().as_bytes(), &mut out)?;
        let info = CtxInfo::from_response(&out)?;
        if info.cqe_version != 1 {
            return Err(Error::new(VERB, ErrorKind::Unsupported).with_detail("mlx5: CQE version 0 (CQEs naming QPs by number) is not implemented"));
        }
        let uars = Uars::map(chan.as_fd(), info)?;
        let reg = RegRef::new(VERB, uars)?;
        // libmlx5 enables atomics on a QP only if the device does them.
        let dev = query_device_ex(chan).ok();
        let atomics = dev.is_some_and(|d| d.base.atomic_cap != 0);
        let max_cqe = dev.map(|d| d.base.max_cqe);
        Ok((reply, Self { reg, atomics, max_cqe }))
    }

    /// `mlx5_create_ah`: the kernel resolves the destination MAC (RoCE,
    /// `MLX5_USER_CMDS_SUPP_UHW_CREATE_AH`); the vector is built here and
    /// kept in a slot, whose index is the AH's number.
    fn create_ah(&self, dc: &mut DriverCmd<'_, CreateAh>) -> Result<(CreateAhResp, u32)> {
        let verb = dc.verb();
        let attr = AhAttr::from_abi(&dc.core().attr);
        let Some(g) = attr.grh else {
            return Err(Error::new(verb, ErrorKind::InvalidArgument).with_detail("mlx5: a RoCE address must be global (it needs a GRH)"));
        };
        let v2 = query_gid_entry(dc.channel(), attr.port_num, u32::from(g.sgid_index))
            .is_ok_and(|e| GidEntry::from_kernel(e).gid_type == GID_TYPE_ROCE_V2);
        let slot = self.reserve(verb)?;
        let mut out = Mlx5CreateAhResp::new_zeroed();
        let resp = dc.send(&[], out.as_mut_bytes())?;
        // libmlx5 draws a random port when the flow label is 0; any value
        // in range does, this one varies per AH.
        let random = resp.ah_handle.wrapping_mul(0x9e37_79b9) >> 8;
        let link = Link::Roce { dmac: out.dmac, udp_sport: v2.then(|| roce_v2_sport(g.flow_label, random)) };
        let av = build_av(&attr, link).map_err(|why| Error::new(verb, ErrorKind::InvalidArgument).with_detail(why))?;
        let (_, i) = slot.fill(Entry::Ah { av });
        Ok((resp, i))
    }

    fn destroy_ah(&self, ah_num: u32) {
        if matches!(self.reg.lock(ah_num).as_deref(), Some(Entry::Ah { .. })) {
            self.reg.remove(ah_num);
        }
    }
}

/// An mlx5 CQ: its slot (ring state and buffer).
#[derive(Debug)]
pub struct Mlx5Cq {
    reg: RegRef,
    slot: u32,
    /// The slot by address, for `poll_with`'s chunks.
    made: MadeSlot,
    ncqe: u32,
    /// Bytes per CQE (64 or 128), kept by a resize.
    cqe_size: u32,
    /// [`Claim::Lent`] while a `poll_with` closure runs (caller code, which
    /// may poll this CQ again): every other poll is refused meanwhile, as
    /// on rxe and siw. The slot lock itself is never held across caller
    /// code.
    lent: AtomicU8,
    /// The owner bytes of its ring, for [`Mlx5Cq::peek_empty`].
    peek: Option<peek::Peek>,
}

#[path = "cq_peek.rs"]
mod peek;

#[path = "cq_chunk.rs"]
mod chunk;

/// Gives a lent CQ back when `poll_with` returns or its closure unwinds
/// (each chunk stored the doorbell record under its own lock).
struct Unlend<'a> {
    cq: &'a Mlx5Cq,
}

impl Drop for Unlend<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.cq.lent.store(Claim::Free as u8, Ordering::Release);
    }
}

/// Puts the completions of a `poll_with` chunk its closure was not handed
/// back into the CQ if the closure unwinds (nothing when all were handed:
/// the test is inlined, so a loop that handed all leaves none).
struct PutBack<'a> {
    cq: &'a Mlx5Cq,
    wcs: &'a [Wc],
    handed: usize,
}

impl Drop for PutBack<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if self.handed < self.wcs.len() {
            self.put_back();
        }
    }
}

impl PutBack<'_> {
    #[cold]
    #[inline(never)]
    fn put_back(&self) {
        if let Some(left) = self.wcs.get(self.handed..) {
            // (Not kept only if the stash's table cannot be made: lost,
            // as a chunk's completions would be.)
            let _ = ops::put_back(&self.cq.reg, self.cq.slot, left);
        }
    }
}

/// The C library's `ibv_poll_cq` on mlx5 (see
/// `ProviderCq::poll_leave_wait`): the copy inlined into the one
/// out-of-line function `ibv_poll_cq` jumps to, which answers the count
/// in a register (the default calls [`ProviderCq::poll_nonempty`] from a
/// frame of its own and gets a `Result` back through memory); a
/// `poll_with` closure holding the CQ is waited out by a tail call.
/// `extern "C"`: see `ProviderCq::poll_leave_wait`.
#[allow(improper_ctypes_definitions)]
#[inline(never)]
extern "C" fn poll_leave_wait(cq: crate::swap_cell::Held<'_, Mlx5Cq>, out: &mut [MaybeUninit<Wc>]) -> i32 {
    let q = cq.get();
    if q.not_lent().is_err() {
        return poll_leave_wait_slow(cq, out);
    }
    // (At most `c_int::MAX` slots: the count fits.)
    ops::poll(&q.reg, q.slot, out).unwrap_or_else(|n| n) as i32
}

/// [`poll_leave_wait`] while a `poll_with` closure holds the CQ: waits
/// until it is given back (C's callers wait on rdma-core's CQ lock), then
/// polls. Drops the guard last.
#[allow(improper_ctypes_definitions)]
#[cold]
#[inline(never)]
extern "C" fn poll_leave_wait_slow(cq: crate::swap_cell::Held<'_, Mlx5Cq>, out: &mut [MaybeUninit<Wc>]) -> i32 {
    loop {
        if let Ok(n) = cq.get().poll(out) {
            return n as i32;
        }
        core::hint::spin_loop();
    }
}

impl Drop for Mlx5Cq {
    fn drop(&mut self) {
        self.reg.remove(self.slot);
    }
}

impl Mlx5Cq {
    /// `Err(Claim::Lent)` while a `poll_with` closure runs.
    #[inline(always)]
    fn not_lent(&self) -> core::result::Result<(), Claim> {
        if self.lent.load(Ordering::Acquire) == Claim::Lent as u8 {
            return Err(Claim::Lent);
        }
        Ok(())
    }
}

impl ProviderCq for Mlx5Cq {
    type Ctx = Mlx5Context;

    fn create(ctx: &Mlx5Context, dc: &mut DriverCmd<'_, CreateCq>) -> Result<Self> {
        let verb = dc.verb();
        let info = *ctx.info();
        let cqe_size = cqe_size(verb, dc.cqe_size())?;
        let mem = CqMem::new(verb, dc.core().cqe, cqe_size, info.cache_line_size)?;
        // libmlx5 asks the kernel for the entries it allocated, minus one.
        dc.core_mut().cqe = mem.kernel_cqe();
        let slot = ctx.reserve(verb)?;
        let mut out = [0u8; 8];
        let resp = dc.send(mem.request().as_bytes(), &mut out)?;
        let cqn = u32::from_ne_bytes([out[0], out[1], out[2], out[3]]);
        let ring = mem.ring(verb, resp.cqe, cqn, info.cqe_version)?;
        let ncqe = mem.ncqe;
        let peek = peek::Peek::new(&ring, &mem.buf);
        let (reg, slot) = slot.fill(Entry::Cq { ring, buf: mem.buf });
        // A slot used before holds an old CQ's index: this CQ starts at 0.
        if let Some(g) = reg.lock(slot) {
            g.publish(0);
        }
        let made = reg.made(slot);
        Ok(Self { reg, slot, made, ncqe, cqe_size, lent: AtomicU8::new(Claim::Free as u8), peek })
    }

    /// `mlx5_resize_cq`: a new buffer (every entry invalid), `RESIZE_CQ`
    /// with its address, then the waiting CQEs copied over (see
    /// [`CqRing::move_to`](super::cqe::CqRing::move_to)). The same number
    /// of entries is no command at all, as in libmlx5.
    fn resize(&mut self, ctx: &Mlx5Context, dc: &mut DriverCmd<'_, ResizeCq>) -> core::result::Result<(), ResizeFailed> {
        let verb = dc.verb();
        let cqe = dc.core().cqe;
        // The kernel's EINVAL, before a buffer of up to 2^24 entries is
        // allocated and written for nothing.
        if ctx.max_cqe.is_some_and(|m| cqe > m) {
            return Err(ResizeFailed::Unchanged(Error::new(verb, ErrorKind::InvalidArgument).with_detail("mlx5: more CQEs than the device's max_cqe")));
        }
        let mem = CqMem::new(verb, cqe, self.cqe_size, ctx.info().cache_line_size)?;
        if mem.ncqe == self.ncqe {
            return Ok(());
        }
        dc.core_mut().cqe = mem.kernel_cqe();
        let req = Mlx5ResizeCq { buf_addr: mem.buf.addr(), cqe_size: self.cqe_size as u16, ..Default::default() };
        dc.send(req.as_bytes(), &mut [])?;
        // The kernel switched the CQ: the ring moves whatever happens (the
        // old buffer is no longer the device's). A CQ whose waiting
        // completions could not be carried over is dead rather than one
        // that silently lost them (libmlx5 prints a warning and goes on).
        let dead = |why| ResizeFailed::Dead(Error::new(verb, ErrorKind::Malformed).with_detail(why));
        let mut g = self.reg.lock(self.slot).ok_or_else(|| dead("mlx5: the CQ has no slot"))?;
        let Entry::Cq { ring, buf } = &mut *g else { return Err(dead("mlx5: the CQ's slot holds no CQ")) };
        let moved = ring.move_to(buf, mem.buf, mem.ncqe);
        // The old buffer may be gone: the peek follows the ring (P1 of
        // `cq_peek.rs`), whatever the outcome.
        self.peek = peek::Peek::new(ring, buf);
        let published = ring.published();
        g.publish(published);
        self.ncqe = mem.ncqe;
        moved.map_err(dead)
    }

    fn req_notify(&self, _: &Mlx5Context, _: &Channel, _: u32, solicited_only: bool) -> Result<()> {
        if ops::arm(&self.reg, self.slot, solicited_only) {
            Ok(())
        } else {
            Err(Error::new("ibv_req_notify_cq", ErrorKind::InvalidArgument).with_detail("mlx5: the CQ's slot holds no CQ"))
        }
    }

    fn event(&self) {
        ops::cq_event(&self.reg, self.slot);
    }

    fn discard_qp(&self, qp_num: u32) {
        reset::clean_cq(&self.reg, self.slot, qp_num);
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.peek_empty()
    }

    /// The ring and the stash only: a lent CQ with an empty ring answers
    /// 0 to `ibv_poll_cq` (the lending poll took its completions), a
    /// non-empty one is waited out by `poll_leave_wait`.
    #[inline(always)]
    fn is_empty_c(&self) -> bool {
        self.peek_ring_empty()
    }

    #[inline]
    fn poll<S: WcOut>(&self, out: &mut [S]) -> core::result::Result<usize, Claim> {
        self.not_lent()?;
        // Straight into `out` under the CQ's lock (storing runs no caller
        // code); a CQE this provider cannot complete is consumed and skipped.
        Ok(ops::poll(&self.reg, self.slot, out).unwrap_or_else(|n| n))
    }

    #[inline]
    fn poll_nonempty(&self, out: &mut [MaybeUninit<Wc>]) -> core::result::Result<usize, Claim> {
        self.poll(out)
    }

    #[inline(always)]
    fn poll_leave_wait(cq: crate::swap_cell::Held<'_, Self>, out: &mut [MaybeUninit<Wc>]) -> i32 {
        poll_leave_wait(cq, out)
    }

    /// Completions are taken from the CQ up to [`CHUNK`] at a time under
    /// its lock (their WQEs retired, the consumer index past them), then
    /// handed to `f` one by one with no lock held: the CQ is lent to `f`
    /// meanwhile (every other poll is refused). If `f` panics, the ones of
    /// the chunk it was not handed yet go back into the CQ (its stash),
    /// and the next polls hand them out first: a panic loses none but
    /// the one handed out. The doorbell record, which frees the entries
    /// for the device, is stored once per chunk, under its lock.
    fn poll_with(&self, max: usize, mut f: impl FnMut(&Wc)) -> core::result::Result<usize, Claim> {
        if self.lent.compare_exchange(Claim::Free as u8, Claim::Lent as u8, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return Err(Claim::Lent);
        }
        let _back = Unlend { cq: self };
        let mut done = 0;
        while done < max {
            let mut chunk = chunk::Chunk::new();
            let want = (max - done).min(CHUNK);
            let wcs = chunk.fill(&self.made, want);
            let got = wcs.len();
            if got == 0 {
                break;
            }
            let mut give = PutBack { cq: self, wcs, handed: 0 };
            while give.handed < wcs.len() {
                give.handed += 1;
                f(&wcs[give.handed - 1]);
            }
            done += got;
            if got < want {
                break;
            }
        }
        Ok(done)
    }

    fn ring_slots(&self) -> u32 {
        self.ncqe
    }
}

/// An mlx5 QP: its slot (queues and buffer) and its doorbell.
#[derive(Debug)]
pub struct Mlx5Qp {
    reg: RegRef,
    slot: u32,
    /// The slot by address, for the straight `post_send` and `post_recv`.
    made: MadeSlot,
    db: Doorbell,
    /// Its BlueFlame register by address, if it holds a low-latency one
    /// alone (`RegRef::made_bf`), for the straight post's one-block copy.
    bf: Option<MadeBf>,
    slots: (u32, Option<u32>),
}

impl Mlx5Qp {
    /// [`ProviderQp::post_send`] of what the straight path did not take:
    /// out of line, so the inlined straight path keeps its registers.
    #[inline(never)]
    fn post_send_general(&self, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        ops::post_send(&self.reg, self.slot, self.db, wrs)
    }

    /// [`ProviderQp::post_recv`] of what the straight path did not take
    /// (out of line, as `post_send_general`).
    #[cold]
    #[inline(never)]
    fn post_recv_general(&self, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        if self.slots.1.is_none() {
            return Err(no_recv_queue());
        }
        ops::post_recv(&self.reg, self.slot, wrs)
    }
}

#[cfg(feature = "internals")]
impl Mlx5Qp {
    /// Its slot and doorbell for posts that do not go through the
    /// `QueuePair` (the C library's, [`super::direct`]).
    pub(crate) fn direct(&self) -> super::direct::Direct {
        super::direct::Direct::new(self.reg.made(self.slot), self.db, self.reg.made_bf(&self.db))
    }
}

impl Drop for Mlx5Qp {
    fn drop(&mut self) {
        reset::forget_qp(&self.reg, self.slot);
    }
}

impl ProviderQp for Mlx5Qp {
    type Ctx = Mlx5Context;

    fn create<C: QpCreateCmd>(ctx: &Mlx5Context, dc: &mut DriverCmd<'_, C>) -> Result<Self> {
        let verb = dc.verb();
        let core = dc.core().request();
        let qp_type = match core.qp_type {
            2 => QpType::Rc,
            3 => QpType::Uc,
            4 => QpType::Ud,
            _ => return Err(Error::new(verb, ErrorKind::Unsupported).with_detail("mlx5: only RC, UC and UD QPs are implemented")),
        };
        let cap = QpCap {
            max_send_wr: core.max_send_wr,
            max_recv_wr: core.max_recv_wr,
            max_send_sge: core.max_send_sge,
            max_recv_sge: core.max_recv_sge,
            max_inline_data: core.max_inline_data,
        };
        let uses_srq = core.is_srq != 0;
        let srq_uidx = match uses_srq {
            true => Some(ctx.reg.find_srq(core.srq_handle).ok_or_else(|| Error::new(verb, ErrorKind::InvalidArgument).with_detail("mlx5: the QP's SRQ is not this context's"))?),
            false => None,
        };
        let info = *ctx.info();
        let mem = QpMem::new(verb, &info.limits, qp_type, &cap, uses_srq, info.cache_line_size)?;
        let slot = ctx.reserve(verb)?;
        let mut out = Mlx5CreateQpResp::new_zeroed();
        let resp = *C::base(&dc.send(mem.request(slot.i).as_bytes(), out.as_mut_bytes())?);
        let db = ctx.reg.uars().doorbell(out.bfreg_index).ok_or_else(|| {
            Error::new(verb, ErrorKind::Malformed).with_detail("mlx5: the kernel gave the QP a BlueFlame register the context does not have")
        })?;
        let (sq, rq) = mem.queues(verb, resp.qpn, qp_type, core.sq_sig_all != 0, ctx.atomics, db.blueflame())?;
        let granted = mem.granted();
        let slots = (sq.as_ref().map_or(0, |s| s.config().size.max_post), rq.as_ref().map(|_| granted.max_recv_wr));
        // mlx5_ib echoes the requested capacities for a user QP; libmlx5
        // reports what its queues hold (`create_qp`, `mlx5_calc_sq_size`),
        // and so does this provider: the posts check against these.
        if let Some(r) = dc.sent_mut().map(C::base_mut) {
            r.max_send_wr = granted.max_send_wr;
            r.max_recv_wr = granted.max_recv_wr;
            r.max_recv_sge = granted.max_recv_sge;
            r.max_inline_data = granted.max_inline_data;
        }
        let (reg, slot) = slot.fill(Entry::Qp { sq, rq, buf: mem.buf, srq_uidx });
        let made = reg.made(slot);
        let bf = reg.made_bf(&db);
        Ok(Self { reg, slot, made, db, bf, slots })
    }

    /// A list of one takes the straight path when it can (what it
    /// declines goes to the general path untouched, which judges it).
    #[inline(always)]
    fn post_send(&mut self, _: BorrowedFd<'_>, _: QpType, wrs: &[SendWr<'_>]) -> core::result::Result<(), PostError> {
        if let [one] = wrs {
            if ops::post_send_straight(&self.reg, &self.made, &self.db, &self.bf, one) {
                return Ok(());
            }
        }
        self.post_send_general(wrs)
    }

    #[inline(always)]
    fn post_send_straight<W: StraightWr + ?Sized>(
        &mut self,
        _: BorrowedFd<'_>,
        _: QpType,
        s: &W,
    ) -> Option<core::result::Result<(), RingFailed>> {
        ops::post_send_straight(&self.reg, &self.made, &self.db, &self.bf, s).then_some(Ok(()))
    }

    fn post_raw_wqe(&mut self, wqe: &[u8], wr_id: u64) -> core::result::Result<(), PostError> {
        ops::post_raw(&self.reg, self.slot, self.db, wqe, wr_id)
    }

    #[inline]
    fn post_recv(&mut self, _: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        // One request of at most one SGE, the common case: the straight
        // path (which finds no receive queue in the slot of a QP on an
        // SRQ); anything it does not take (no receive queue, a full
        // queue, no room for an SGE) goes the general way, which names
        // the error. (One test of the SGE count per case.)
        if let [wr] = wrs {
            let taken = match wr.sg_list {
                [s] => ops::post_recv_one(&self.made, wr.wr_id, Some(s)),
                [] => ops::post_recv_one(&self.made, wr.wr_id, None),
                _ => false,
            };
            if taken {
                return Ok(());
            }
        }
        self.post_recv_general(wrs)
    }

    #[inline(always)]
    fn post_recv_straight(&mut self, _: u32, wr_id: u64, sge: Option<&Sge>) -> bool {
        // (No receive queue in the slot, a QP on an SRQ: `false`.)
        ops::post_recv_one(&self.made, wr_id, sge)
    }

    fn queue_slots(&self) -> (u32, Option<u32>) {
        self.slots
    }

    fn state_changed(&mut self, to: QpStateKind) {
        if to == QpStateKind::Reset {
            reset::reset_qp(&self.reg, self.slot);
        }
    }
}

/// An mlx5 SRQ: its slot (free list and buffer).
#[derive(Debug)]
pub struct Mlx5Srq {
    reg: RegRef,
    slot: u32,
    wqe_cnt: u32,
}

impl Drop for Mlx5Srq {
    fn drop(&mut self) {
        self.reg.remove(self.slot);
    }
}

impl ProviderSrq for Mlx5Srq {
    type Ctx = Mlx5Context;

    fn create<C: SrqCreateCmd>(ctx: &Mlx5Context, dc: &mut DriverCmd<'_, C>) -> Result<Self> {
        let verb = dc.verb();
        let (max_wr, max_sge) = dc.core().srq_caps();
        let info = *ctx.info();
        let mut mem = SrqMem::new(verb, &info.limits, max_wr, max_sge, info.cache_line_size)?;
        let (kernel_max_wr, kernel_max_sge) = mem.kernel_attr();
        dc.core_mut().set_srq_caps(kernel_max_wr, kernel_max_sge);
        let slot = ctx.reserve(verb)?;
        let resp = dc.send(mem.request(slot.i).as_bytes(), &mut [0u8; 8])?;
        let srq = mem.srq(verb)?;
        let wqe_cnt = mem.size.wqe_cnt;
        let (reg, slot) = slot.fill(Entry::Srq { srq, buf: mem.buf, handle: resp.srq_handle });
        Ok(Self { reg, slot, wqe_cnt })
    }

    fn modify(&mut self, _: &Mlx5Context, dc: &mut DriverCmd<'_, ModifySrq>, resize: bool) -> core::result::Result<(), ResizeFailed> {
        if resize {
            return Err(ResizeFailed::Unchanged(Error::new(dc.verb(), ErrorKind::Unsupported).with_detail("mlx5 SRQs cannot be resized (as in libmlx5)")));
        }
        dc.send(&[], &mut []).map(|_| ()).map_err(ResizeFailed::Unchanged)
    }

    fn set_limit(&self, _: &Mlx5Context, dc: &mut DriverCmd<'_, ModifySrq>) -> Result<()> {
        dc.send(&[], &mut []).map(|_| ())
    }

    #[inline]
    fn post_recv(&self, _: u32, wrs: &[RecvWr<'_>]) -> core::result::Result<(), PostError> {
        ops::post_srq_recv(&self.reg, self.slot, wrs)
    }

    fn ring_slots(&self) -> u32 {
        self.wqe_cnt
    }
}
