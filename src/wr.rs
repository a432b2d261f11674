//! Work requests (`struct ibv_send_wr`, `struct ibv_recv_wr`) and the
//! checks every provider applies before it writes one into a ring.
//!
//! A list of requests is a slice, not a linked list, and posting is
//! all-or-nothing: every request of the list is validated first, and if
//! one is bad nothing of the list is written and [`PostError::index`]
//! names it (C's `bad_wr`). rdma-core posts the requests before the bad
//! one; here the queue is left exactly as it was.
//!
//! Inline data is given as bytes ([`Payload::Inline`]), not as SGEs
//! pointing at memory, so the library never dereferences an address the
//! caller typed in.

use core::fmt;
use core::sync::atomic::{AtomicU32, Ordering};

use bitflags::bitflags;

use crate::abi::uverbs as op;
use crate::ah::Ah;
use crate::error::{Error, ErrorKind};
use crate::access::AccessFlags;
use crate::qp::kind::QpType;

/// A scatter/gather element (`struct ibv_sge`): `length` bytes at `addr`
/// inside a region registered with local key `lkey`.
#[doc(alias = "ibv_sge")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, zerocopy::IntoBytes, zerocopy::Immutable)]
#[repr(C)]
pub struct Sge {
    /// Start address in a registered region.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// The region's local key.
    pub lkey: u32,
}

// `struct ibv_sge` and `struct rxe_sge`: the rxe provider copies these
// into its WQEs as they are.
static_assertions::const_assert_eq!(core::mem::size_of::<Sge>(), 16);
static_assertions::const_assert_eq!(core::mem::offset_of!(Sge, length), 8);
static_assertions::const_assert_eq!(core::mem::offset_of!(Sge, lkey), 12);


bitflags! {
    /// `enum ibv_send_flags` (`IBV_SEND_INLINE` is implied by
    /// [`Payload::Inline`]).
    #[doc(alias = "ibv_send_flags")]
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct SendFlags: u32 {
        /// `IBV_SEND_FENCE`: wait for earlier RDMA READs and atomics.
        const FENCE = 1 << 0;
        /// `IBV_SEND_SIGNALED`: generate a completion for this request.
        const SIGNALED = 1 << 1;
        /// `IBV_SEND_SOLICITED`: set the solicited-event bit.
        const SOLICITED = 1 << 2;
    }
}

/// `IBV_SEND_INLINE`, as written into the WQE for [`Payload::Inline`].
pub const SEND_INLINE: u32 = 1 << 3;

/// Whether `flags` has a bit this crate does not know (one made with
/// `SendFlags::from_bits_retain`): such a request is refused, since the
/// bit would be written into the WQE as it is (bit 3 is `IBV_SEND_INLINE`,
/// which would make the device send the WQE's own bytes). One test.
#[inline(always)]
pub(crate) const fn unknown_send_flags(flags: SendFlags) -> bool {
    flags.bits() & !SendFlags::all().bits() != 0
}

/// Why one request of a list was refused: the kind, and what about the
/// request (the detail of the [`PostError`]'s error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Refusal(pub ErrorKind, pub &'static str);

impl Refusal {
    /// The error of `verb` this refusal is.
    #[cfg_attr(not(feature = "rxe"), allow(dead_code))]
    #[inline]
    pub(crate) const fn error(self, verb: &'static str) -> Error {
        Error::new(verb, self.0).with_detail(self.1)
    }
}


/// What a send request carries: a gather list of registered memory, or
/// bytes copied into the work queue entry itself (`IBV_SEND_INLINE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload<'w> {
    /// Gather from registered memory.
    Sges(&'w [Sge]),
    /// Copied into the WQE at post time; needs no memory registration and
    /// may be reused as soon as `post_send` returns. At most
    /// `max_inline_data` bytes.
    Inline(&'w [u8]),
}

/// Binding a memory window with a send request (`ibv_send_wr.bind_mw`),
/// made by [`MwBind::new`].
///
/// The bind keeps the region borrowed for the *window's* whole life, not
/// just for the post: a bound window is a live rkey over the region's
/// memory, so the region must not be dropped or destroyed while the
/// window exists (drop or destroy the window first; rxe refuses to
/// deregister a region with a bound type 2 window). Should the window be
/// leaked, the region's deregistration fails and its buffer is leaked
/// with it, never freed.
#[derive(Clone, Copy, Debug)]
pub struct MwBind<'w> {
    /// The bound window's index (its keys' upper 24 bits), taken from the
    /// `&Mw` whose lifetime borrows the region: the bind names exactly
    /// that window, whatever its rkey cell holds.
    mw_index: u32,
    /// The window's rkey cell (`ibv_mw.rkey`), updated when the bind is
    /// posted; only its tag (low 8 bits) is read.
    mw_rkey: &'w AtomicU32,
    rkey: u32,
    mr_lkey: u32,
    addr: u64,
    length: u64,
    access: AccessFlags,
    /// The window is type 1 (bound by `ibv_bind_mw`, to no QP).
    type1: bool,
}

impl<'w> MwBind<'w> {
    /// The bind of window `mw_index` (rkey cell `mw_rkey`) to new key
    /// `rkey` over a region of lkey `mr_lkey` ([`MwBind::new`], in
    /// `mw.rs`, takes the handles).
    pub(crate) fn from_parts(mw_index: u32, mw_rkey: &'w AtomicU32, rkey: u32, mr_lkey: u32, addr: u64, length: u64, access: AccessFlags) -> Self {
        Self { mw_index, mw_rkey, rkey, mr_lkey, addr, length, access, type1: false }
    }

    /// Marks the window as type 1 (or not).
    pub(crate) fn with_type1(mut self, type1: bool) -> Self {
        self.type1 = type1;
        self
    }

    /// Whether the window is type 1 (`IBV_MW_TYPE_1`: bound by
    /// `ibv_bind_mw`, to no QP); mlx5 writes its bind and unbind
    /// differently from a type 2 window's.
    pub fn is_type1(&self) -> bool {
        self.type1
    }

    /// Uses `rkey` as the window's new key instead of
    /// `ibv_inc_rkey(mw.rkey())`. A key is the window's index (upper 24
    /// bits, fixed for the window's life) and a tag (low 8 bits): only the
    /// tag is chosen by a bind, so a key with another index is refused by
    /// `post_send` (`InvalidArgument`).
    pub fn with_rkey(mut self, rkey: u32) -> Self {
        self.rkey = rkey;
        self
    }

    /// Whether the new key keeps the window's index (what `post_send`
    /// checks before writing the bind).
    pub(crate) fn keeps_index(&self) -> bool {
        self.rkey & crate::access::KEY_INDEX == self.mw_index
    }

    /// The window's key after the bind.
    pub fn rkey(&self) -> u32 {
        self.rkey
    }

    /// The window's key before the bind (`ibv_mw.rkey`), which names the
    /// window to the kernel: the index of the window this bind was made
    /// for, with the tag its rkey cell holds now.
    pub fn mw_rkey(&self) -> u32 {
        self.mw_index | (self.mw_rkey.load(Ordering::Relaxed) & !crate::access::KEY_INDEX)
    }

    /// Records the new key in the window (after the bind was posted).
    #[cfg_attr(not(feature = "rxe"), allow(dead_code))]
    pub(crate) fn commit(&self) {
        self.mw_rkey.store(self.rkey, Ordering::Relaxed);
    }

    /// The region's local key.
    pub fn mr_lkey(&self) -> u32 {
        self.mr_lkey
    }

    /// Start of the window.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Length of the window.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// Rights granted through the window.
    pub fn access(&self) -> AccessFlags {
        self.access
    }
}

/// The operation of a send request (`ibv_wr_opcode` with its part of the
/// `wr` union). Immediate data is in host order here and in
/// [`Wc::imm_data`](crate::Wc::imm_data); it travels big-endian, like the
/// `htonl`'d value a C program puts in `imm_data`.
///
/// Each variant's discriminant is its `IBV_WR_*` value, so
/// [`SendOp::opcode`] is the tag itself, not a table lookup.
#[derive(Clone, Copy, Debug)]
#[repr(u32)]
pub enum SendOp<'w> {
    /// `IBV_WR_SEND`.
    Send = op::WR_SEND,
    /// `IBV_WR_SEND_WITH_IMM`.
    SendWithImm {
        /// Immediate data (host order).
        imm: u32,
    } = op::WR_SEND_WITH_IMM,
    /// `IBV_WR_SEND_WITH_INV`: the receiver invalidates `invalidate_rkey`.
    SendWithInv {
        /// The remote rkey to invalidate.
        invalidate_rkey: u32,
    } = op::WR_SEND_WITH_INV,
    /// `IBV_WR_RDMA_WRITE`.
    RdmaWrite {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    } = op::WR_RDMA_WRITE,
    /// `IBV_WR_RDMA_WRITE_WITH_IMM`.
    RdmaWriteWithImm {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data (host order).
        imm: u32,
    } = op::WR_RDMA_WRITE_WITH_IMM,
    /// `IBV_WR_RDMA_READ`.
    RdmaRead {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    } = op::WR_RDMA_READ,
    /// `IBV_WR_ATOMIC_CMP_AND_SWP`: the old value lands in the first 8
    /// bytes of the gather list.
    AtomicCmpSwp {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Compared with the remote value.
        compare: u64,
        /// Stored if equal.
        swap: u64,
    } = op::WR_ATOMIC_CMP_AND_SWP,
    /// `IBV_WR_ATOMIC_FETCH_AND_ADD`: the old value lands in the first 8
    /// bytes of the gather list.
    AtomicFetchAdd {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Added to the remote value.
        add: u64,
    } = op::WR_ATOMIC_FETCH_AND_ADD,
    /// `IBV_WR_ATOMIC_WRITE` (rxe, Linux 6.2+): writes the 8 bytes of
    /// `value` to `remote_addr` (8-byte aligned) as one atomic store; the
    /// request carries them itself, so its gather list is empty. Only
    /// through [`SendWr::atomic_write`] or with an empty SGE list.
    AtomicWrite {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// The bytes stored, in memory order.
        value: [u8; 8],
    } = op::WR_ATOMIC_WRITE,
    /// `IBV_WR_LOCAL_INV`: invalidate a local rkey.
    LocalInv {
        /// The rkey to invalidate.
        rkey: u32,
    } = op::WR_LOCAL_INV,
    /// `IBV_WR_BIND_MW`.
    BindMw(MwBind<'w>) = op::WR_BIND_MW,
}

impl SendOp<'_> {
    /// The `IBV_WR_*` opcode.
    pub const fn opcode(&self) -> u32 {
        match self {
            SendOp::Send => op::WR_SEND,
            SendOp::SendWithImm { .. } => op::WR_SEND_WITH_IMM,
            SendOp::SendWithInv { .. } => op::WR_SEND_WITH_INV,
            SendOp::RdmaWrite { .. } => op::WR_RDMA_WRITE,
            SendOp::RdmaWriteWithImm { .. } => op::WR_RDMA_WRITE_WITH_IMM,
            SendOp::RdmaRead { .. } => op::WR_RDMA_READ,
            SendOp::AtomicCmpSwp { .. } => op::WR_ATOMIC_CMP_AND_SWP,
            SendOp::AtomicFetchAdd { .. } => op::WR_ATOMIC_FETCH_AND_ADD,
            SendOp::AtomicWrite { .. } => op::WR_ATOMIC_WRITE,
            SendOp::LocalInv { .. } => op::WR_LOCAL_INV,
            SendOp::BindMw(_) => op::WR_BIND_MW,
        }
    }

    /// Whether this is an atomic operation.
    pub const fn is_atomic(&self) -> bool {
        matches!(self, SendOp::AtomicCmpSwp { .. } | SendOp::AtomicFetchAdd { .. })
    }

    /// Whether the transport `qp_type` can carry this operation (IB spec
    /// tables 9-3/9-4: RDMA READ, atomics and local invalidate need RC;
    /// RDMA WRITE and binds need RC or UC; UD sends only).
    ///
    /// A post of an operation the transport cannot carry is refused before
    /// the kernel sees it (`ErrorKind::UnsupportedOpcode`, `EOPNOTSUPP` in
    /// the C library), in every QP state: the spec's local QP operation
    /// error, given at post time. rdma-core's librxe hands such a request
    /// to the kernel, which moves the QP to ERROR and flushes it; refusing
    /// it instead is a deliberate difference (issue 29) that keeps a
    /// programming error from taking the QP down.
    #[inline]
    pub const fn valid_for(&self, qp_type: QpType) -> bool {
        const fn bits(ops: &[u32]) -> u32 {
            let mut m = 0;
            let mut i = 0;
            while i < ops.len() {
                m |= 1 << ops[i];
                i += 1;
            }
            m
        }
        const SENDS: [u32; 3] = [op::WR_SEND, op::WR_SEND_WITH_IMM, op::WR_SEND_WITH_INV];
        const UD: u32 = bits(&SENDS);
        const UC: u32 = UD | bits(&[op::WR_RDMA_WRITE, op::WR_RDMA_WRITE_WITH_IMM, op::WR_BIND_MW]);
        // One bit per `ibv_wr_opcode` the transport takes: a table lookup
        // and a shift instead of a match per post.
        let allowed = match qp_type {
            QpType::Rc | QpType::XrcSend => u32::MAX,
            QpType::Uc => UC,
            QpType::Ud => UD,
            QpType::XrcRecv => 0,
        };
        (allowed >> self.opcode()) & 1 != 0
    }
}

/// Where a UD send goes (`ibv_send_wr.wr.ud`).
#[derive(Clone, Copy, Debug)]
pub struct UdDest<'w> {
    /// Address handle of the destination.
    pub ah: &'w Ah<'w>,
    /// Destination QP number (`0xffffff` for multicast).
    pub remote_qpn: u32,
    /// Q_Key of the destination QP.
    pub remote_qkey: u32,
}

/// A send work request (`struct ibv_send_wr`).
#[doc(alias = "ibv_send_wr")]
#[derive(Clone, Copy, Debug)]
pub struct SendWr<'w> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// What is sent (or where RDMA READ / atomic results land).
    pub payload: Payload<'w>,
    /// The operation.
    pub op: SendOp<'w>,
    /// Signaled, fenced, solicited.
    pub flags: SendFlags,
    /// The destination, for UD QPs (required there, refused elsewhere).
    pub ud: Option<UdDest<'w>>,
}

impl<'w> SendWr<'w> {
    /// A request of operation `op` gathering from `sg_list`, unsignaled.
    pub const fn new(wr_id: u64, op: SendOp<'w>, sg_list: &'w [Sge]) -> Self {
        Self {
            wr_id,
            payload: Payload::Sges(sg_list),
            op,
            flags: SendFlags::empty(),
            ud: None,
        }
    }

    /// `IBV_WR_SEND` of `sg_list`.
    pub const fn send(wr_id: u64, sg_list: &'w [Sge]) -> Self {
        Self::new(wr_id, SendOp::Send, sg_list)
    }

    /// `IBV_WR_SEND_WITH_IMM` of `sg_list` with immediate data `imm`
    /// (host order; the receiver reads it back with
    /// [`Wc::imm_data`](crate::Wc::imm_data)).
    pub const fn send_with_imm(wr_id: u64, sg_list: &'w [Sge], imm: u32) -> Self {
        Self::new(wr_id, SendOp::SendWithImm { imm }, sg_list)
    }

    /// `IBV_WR_RDMA_WRITE_WITH_IMM` of `sg_list` to `remote_addr`/`rkey`,
    /// consuming a receive at the peer that completes with `imm`.
    pub const fn rdma_write_with_imm(
        wr_id: u64,
        sg_list: &'w [Sge],
        remote_addr: u64,
        rkey: u32,
        imm: u32,
    ) -> Self {
        Self::new(wr_id, SendOp::RdmaWriteWithImm { remote_addr, rkey, imm }, sg_list)
    }

    /// `IBV_WR_ATOMIC_CMP_AND_SWP` on the 8 bytes at `remote_addr`/`rkey`
    /// (8-byte aligned): stores `swap` if they equal `compare`; the old
    /// value lands in `result` (one 8-byte SGE).
    pub const fn compare_swap(
        wr_id: u64,
        result: &'w [Sge],
        remote_addr: u64,
        rkey: u32,
        compare: u64,
        swap: u64,
    ) -> Self {
        Self::new(wr_id, SendOp::AtomicCmpSwp { remote_addr, rkey, compare, swap }, result)
    }

    /// `IBV_WR_ATOMIC_FETCH_AND_ADD` on the 8 bytes at `remote_addr`/`rkey`
    /// (8-byte aligned): adds `add`; the old value lands in `result` (one
    /// 8-byte SGE).
    pub const fn fetch_add(wr_id: u64, result: &'w [Sge], remote_addr: u64, rkey: u32, add: u64) -> Self {
        Self::new(wr_id, SendOp::AtomicFetchAdd { remote_addr, rkey, add }, result)
    }

    /// `IBV_WR_ATOMIC_WRITE` (`ibv_wr_atomic_write`; rxe on Linux 6.2+):
    /// stores the 8 bytes of `value` at `remote_addr`/`rkey` (8-byte
    /// aligned) as one atomic write. The target region needs remote write
    /// access.
    #[doc(alias = "ibv_wr_atomic_write")]
    pub const fn atomic_write(wr_id: u64, remote_addr: u64, rkey: u32, value: [u8; 8]) -> Self {
        Self::new(wr_id, SendOp::AtomicWrite { remote_addr, rkey, value }, &[])
    }

    /// `IBV_WR_RDMA_WRITE` of `sg_list` to `remote_addr`/`rkey`.
    pub const fn rdma_write(wr_id: u64, sg_list: &'w [Sge], remote_addr: u64, rkey: u32) -> Self {
        Self::new(wr_id, SendOp::RdmaWrite { remote_addr, rkey }, sg_list)
    }

    /// `IBV_WR_RDMA_READ` from `remote_addr`/`rkey` into `sg_list`.
    pub const fn rdma_read(wr_id: u64, sg_list: &'w [Sge], remote_addr: u64, rkey: u32) -> Self {
        Self::new(wr_id, SendOp::RdmaRead { remote_addr, rkey }, sg_list)
    }

    /// Adds `IBV_SEND_SIGNALED`: the request gets a completion.
    pub const fn signaled(mut self) -> Self {
        self.flags = self.flags.union(SendFlags::SIGNALED);
        self
    }

    /// Replaces the flags.
    pub const fn flags(mut self, flags: SendFlags) -> Self {
        self.flags = flags;
        self
    }

    /// Sends `data` inline instead of gathering (`IBV_SEND_INLINE`).
    pub const fn inline(mut self, data: &'w [u8]) -> Self {
        self.payload = Payload::Inline(data);
        self
    }

    /// Sets the UD destination.
    pub const fn ud(mut self, dest: UdDest<'w>) -> Self {
        self.ud = Some(dest);
        self
    }
}

/// A receive work request (`struct ibv_recv_wr`).
#[doc(alias = "ibv_recv_wr")]
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'w> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Where received bytes are scattered.
    pub sg_list: &'w [Sge],
}

impl<'w> RecvWr<'w> {
    /// A receive into `sg_list`.
    pub const fn new(wr_id: u64, sg_list: &'w [Sge]) -> Self {
        Self { wr_id, sg_list }
    }
}

/// A list that could not be posted. Nothing of the list was written: the
/// queue is exactly as before the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostError {
    /// Why (the verb is `ibv_post_send`, `ibv_post_recv` or
    /// `ibv_post_srq_recv`).
    pub error: Error,
    /// Index in the list of the request that was refused (C's `bad_wr`);
    /// for a queue that cannot take the whole list, the first request
    /// that does not fit.
    pub index: usize,
}

impl PostError {
    /// A refusal of request `index` with `kind`.
    pub const fn new(verb: &'static str, kind: ErrorKind, index: usize) -> Self {
        Self {
            error: Error::new(verb, kind),
            index,
        }
    }

    /// A refusal of request `index` for `why`.
    #[cfg_attr(not(feature = "rxe"), allow(dead_code))]
    pub(crate) const fn refused(verb: &'static str, why: Refusal, index: usize) -> Self {
        Self { error: why.error(verb), index }
    }

    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        self.error.kind()
    }
}

impl From<PostError> for Error {
    fn from(e: PostError) -> Self {
        e.error
    }
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (work request {} of the list)", self.error, self.index)
    }
}

impl core::error::Error for PostError {}

/// Total bytes of a gather/scatter list. Lists are short (usually one
/// entry), so the common lengths are answered without a loop that the
/// compiler would vectorise for long slices.
#[inline(always)]
pub(crate) fn sge_len(s: &[Sge]) -> u64 {
    match s {
        [] => 0,
        [a] => u64::from(a.length),
        [a, b] => u64::from(a.length) + u64::from(b.length),
        _ => {
            let mut n = 0u64;
            for x in s {
                n += u64::from(x.length);
            }
            n
        }
    }
}

/// The provider-independent checks of one send request for a QP of
/// `qp_type` with send capacities `max_sge` / `max_inline`; returns the
/// byte length of the payload.
#[cfg_attr(not(feature = "rxe"), allow(dead_code))]
#[inline(always)]
pub(crate) fn check_send(
    wr: &SendWr<'_>,
    qp_type: QpType,
    max_sge: u32,
    max_inline: u32,
) -> Result<u32, Refusal> {
    use ErrorKind::InvalidArgument as Inval;
    if unknown_send_flags(wr.flags) {
        return Err(Refusal(Inval, "send_flags has bits this library does not know (only FENCE, SIGNALED, SOLICITED; inline is Payload::Inline)"));
    }
    if !wr.op.valid_for(qp_type) {
        return Err(Refusal(ErrorKind::UnsupportedOpcode, "the QP's transport cannot carry this opcode"));
    }
    if (qp_type == QpType::Ud) != wr.ud.is_some() {
        // A UD send needs a destination; a connected QP has one already.
        return Err(Refusal(Inval, "a UD send needs a destination (SendWr::ud), a connected QP's send must have none"));
    }
    let len: u64 = match wr.payload {
        Payload::Sges(sges) => {
            if sges.len() > max_sge as usize {
                return Err(Refusal(ErrorKind::TooManySge, "num_sge is above the QP's max_send_sge"));
            }
            sge_len(sges)
        }
        Payload::Inline(data) => {
            if data.len() > max_inline as usize {
                return Err(Refusal(ErrorKind::InlineTooLarge, "inline data is longer than the QP's max_inline_data"));
            }
            // Inline data goes out; nothing can land in it.
            if matches!(wr.op, SendOp::RdmaRead { .. }) || wr.op.is_atomic() {
                return Err(Refusal(Inval, "an RDMA READ or atomic needs an SGE to land its result in, not inline data"));
            }
            data.len() as u64
        }
    };
    // A message is at most 2^31 bytes (IB: max_msg_sz; rxe: 2^31).
    if len > 1 << 31 {
        return Err(Refusal(Inval, "the message is longer than 2^31 bytes"));
    }
    match wr.op {
        SendOp::AtomicCmpSwp { remote_addr, .. } | SendOp::AtomicFetchAdd { remote_addr, .. }
            if len < 8 || remote_addr % 8 != 0 =>
        {
            Err(Refusal(Inval, "an atomic needs an 8-byte aligned remote_addr and at least 8 bytes of SGE"))
        }
        SendOp::AtomicWrite { remote_addr, .. }
            if len != 0 || matches!(wr.payload, Payload::Inline(_)) || remote_addr % 8 != 0 =>
        {
            Err(Refusal(
                Inval,
                "an ATOMIC_WRITE carries its 8 bytes itself (no SGEs, no inline data) to an 8-byte aligned remote_addr",
            ))
        }
        SendOp::BindMw(_) | SendOp::LocalInv { .. } if len != 0 => {
            Err(Refusal(Inval, "a bind or local invalidate carries no data"))
        }
        // Written into the WQE as they are: no unknown bits.
        SendOp::BindMw(b) if crate::access::unknown_access(b.access) => {
            Err(Refusal(Inval, "the bind's access has bits this library does not know"))
        }
        SendOp::BindMw(b) if !b.keeps_index() => Err(Refusal(
            Inval,
            "the bind's new rkey has another window's index: only its low 8 bits (the tag) may differ from the window's key",
        )),
        _ => Ok(len as u32),
    }
}

/// The provider-independent checks of one receive request. (A scatter
/// list may add up to more than the largest message: the receive just has
/// room to spare, so its total is not limited.)
#[cfg_attr(not(feature = "rxe"), allow(dead_code))]
#[inline]
pub(crate) fn check_recv(wr: &RecvWr<'_>, max_sge: u32) -> Result<(), Refusal> {
    if wr.sg_list.len() > max_sge as usize {
        return Err(Refusal(ErrorKind::TooManySge, "num_sge is above the queue's max_recv_sge"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind<T>(r: Result<T, Refusal>) -> Result<T, ErrorKind> {
        r.map_err(|r| r.0)
    }

    fn sge(len: u32) -> Sge {
        Sge { addr: 0x1000, length: len, lkey: 1 }
    }

    #[test]
    fn opcodes_match_ibv_wr_opcode() {
        // enum ibv_wr_opcode (verbs.h) = enum ib_uverbs_wr_opcode.
        assert_eq!(SendOp::RdmaWrite { remote_addr: 0, rkey: 0 }.opcode(), 0);
        assert_eq!(SendOp::Send.opcode(), 2);
        assert_eq!(SendOp::RdmaRead { remote_addr: 0, rkey: 0 }.opcode(), 4);
        assert_eq!(SendOp::LocalInv { rkey: 0 }.opcode(), 7);
        assert_eq!(SendOp::SendWithInv { invalidate_rkey: 0 }.opcode(), 9);
        assert_eq!(SendOp::AtomicWrite { remote_addr: 0, rkey: 0, value: [0; 8] }.opcode(), 15);
        assert_eq!(SendFlags::all().bits() | SEND_INLINE, 0xf);
    }

    #[test]
    fn atomic_write_checks() {
        let c = |wr: &SendWr<'_>, t| kind(check_send(wr, t, 4, 64));
        assert_eq!(c(&SendWr::atomic_write(1, 64, 7, [1; 8]), QpType::Rc), Ok(0));
        // RC only (IB spec: an RC operation; rxe refuses it elsewhere).
        assert_eq!(c(&SendWr::atomic_write(1, 64, 7, [1; 8]), QpType::Uc), Err(ErrorKind::UnsupportedOpcode));
        let inval = Err(ErrorKind::InvalidArgument);
        assert_eq!(c(&SendWr::atomic_write(1, 68, 7, [1; 8]), QpType::Rc), inval, "misaligned");
        let one = [sge(8)];
        let with_sge = SendWr::new(1, SendOp::AtomicWrite { remote_addr: 64, rkey: 7, value: [1; 8] }, &one);
        assert_eq!(c(&with_sge, QpType::Rc), inval, "the value travels in the request, not an SGE");
        assert_eq!(c(&SendWr::atomic_write(1, 64, 7, [1; 8]).inline(b""), QpType::Rc), inval);
    }

    #[test]
    fn send_checks() {
        let one = [sge(8)];
        let three = [sge(8), sge(8), sge(8)];
        let ok = SendWr::send(1, &one);
        assert_eq!(kind(check_send(&ok, QpType::Rc, 2, 0)), Ok(8));
        assert_eq!(kind(check_send(&SendWr::send(1, &three), QpType::Rc, 2, 0)), Err(ErrorKind::TooManySge));
        let inl = SendWr::send(1, &[]).inline(&[0u8; 65]);
        assert_eq!(kind(check_send(&inl, QpType::Rc, 1, 64)), Err(ErrorKind::InlineTooLarge));
        assert_eq!(kind(check_send(&SendWr::send(1, &[]).inline(&[1; 64]), QpType::Rc, 1, 64)), Ok(64));
        let read = SendWr::rdma_read(1, &one, 0x10, 5);
        assert_eq!(kind(check_send(&read, QpType::Uc, 1, 0)), Err(ErrorKind::UnsupportedOpcode));
        assert_eq!(kind(check_send(&read, QpType::Ud, 1, 0)), Err(ErrorKind::UnsupportedOpcode));
        assert_eq!(kind(check_send(&ok, QpType::Ud, 1, 0)), Err(ErrorKind::InvalidArgument), "no AH");
        let faa = |addr| SendWr::new(1, SendOp::AtomicFetchAdd { remote_addr: addr, rkey: 1, add: 1 }, &one);
        assert_eq!(kind(check_send(&faa(0x1004), QpType::Rc, 1, 0)), Err(ErrorKind::InvalidArgument));
        assert_eq!(kind(check_send(&faa(0x1008), QpType::Rc, 1, 0)), Ok(8));
        let short = [sge(4)];
        let faa4 = SendWr::new(1, SendOp::AtomicFetchAdd { remote_addr: 8, rkey: 1, add: 1 }, &short);
        assert_eq!(kind(check_send(&faa4, QpType::Rc, 1, 0)), Err(ErrorKind::InvalidArgument));
        let inv = SendWr::new(1, SendOp::LocalInv { rkey: 3 }, &one);
        assert_eq!(kind(check_send(&inv, QpType::Rc, 1, 0)), Err(ErrorKind::InvalidArgument));
        assert_eq!(kind(check_send(&SendWr::new(1, SendOp::LocalInv { rkey: 3 }, &[]), QpType::Rc, 1, 0)), Ok(0));
    }

    #[test]
    fn unknown_flag_bits_are_refused_first() {
        let one = [sge(8)];
        for bit in 3..32 {
            let wr = SendWr::send(1, &one).flags(SendFlags::from_bits_retain(1 << bit) | SendFlags::SIGNALED);
            assert!(unknown_send_flags(wr.flags), "bit {bit}");
            let r = check_send(&wr, QpType::Rc, 1, 0).unwrap_err();
            assert_eq!(r.0, ErrorKind::InvalidArgument, "bit {bit}");
            let e = PostError::refused("ibv_post_send", r, 0).error;
            assert!(e.detail().unwrap().contains("send_flags"), "{e}");
        }
        assert!(!unknown_send_flags(SendFlags::all()));
        let ok = SendWr::send(1, &one).flags(SendFlags::all());
        assert_eq!(check_send(&ok, QpType::Rc, 1, 0), Ok(8));
    }

    #[test]
    fn unknown_access_bits_are_refused() {
        use crate::mr::{check_access, AccessFlags};
        let e = check_access("ibv_reg_mr", AccessFlags::from_bits_retain(1 << 12)).unwrap_err();
        assert_eq!((e.verb(), e.kind()), ("ibv_reg_mr", ErrorKind::InvalidArgument));
        assert!(e.detail().is_some_and(|d| d.contains("does not know")), "{e}");
        check_access("ibv_reg_mr", AccessFlags::all()).unwrap();
        assert!(crate::access::unknown_access(AccessFlags::from_bits_retain(1 << 31)));
    }

    #[test]
    fn recv_checks() {
        assert_eq!(check_recv(&RecvWr::new(1, &[sge(10), sge(20)]), 2), Ok(()));
        assert_eq!(kind(check_recv(&RecvWr::new(1, &[sge(10), sge(20)]), 1)), Err(ErrorKind::TooManySge));
        let big = [sge(u32::MAX), sge(u32::MAX)];
        assert_eq!(check_recv(&RecvWr::new(1, &big), 2), Ok(()), "room to spare is fine");
        assert_eq!(sge_len(&[sge(1), sge(2), sge(3)]), 6);
        assert_eq!(sge_len(&big), 2 * u64::from(u32::MAX));
    }
}
