//! The objects of the simulated device, shared by the command half
//! (`server/`, which creates, modifies and destroys them as `mlx5_ib`
//! would) and the NIC half (`engine/`, which executes work on them).
//!
//! Numbers are the device's: `pdn`, `cqn`, `qpn`, `srqn` and memory keys
//! are what the kernel hands userspace. Addresses are virtual addresses in
//! the owning process (`pid`), reached through [`crate::mem::HostMem`].
//! Everything lives in one [`Device`] behind one lock in the daemon.

use std::collections::HashMap;

use crate::mem::Pid;

/// What CREATE_CQ stores in the doorbell record's arm word: no arm word
/// can have it (bits 30-31 are always clear), so the first arm is seen
/// even when it is 0 (sn 0, "next completion", ci 0).
pub const ARM_UNSET: u32 = u32::MAX;

/// A context: one `ibv_open_device` of one process.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// Context id (daemon-local).
    pub id: u32,
    /// The process that opened it.
    pub pid: Pid,
    /// Completion channels of this context: channel id -> event sink id
    /// (the daemon's end of the fd it gave the process).
    pub comp_channels: Vec<u32>,
}

/// IB access flags (`enum ib_access_flags` / `IBV_ACCESS_*`).
pub mod access {
    /// IBV_ACCESS_LOCAL_WRITE
    pub const LOCAL_WRITE: u32 = 1;
    /// IBV_ACCESS_REMOTE_WRITE
    pub const REMOTE_WRITE: u32 = 2;
    /// IBV_ACCESS_REMOTE_READ
    pub const REMOTE_READ: u32 = 4;
    /// IBV_ACCESS_REMOTE_ATOMIC
    pub const REMOTE_ATOMIC: u32 = 8;
    /// IBV_ACCESS_MW_BIND
    pub const MW_BIND: u32 = 16;
    /// IBV_ACCESS_ZERO_BASED
    pub const ZERO_BASED: u32 = 32;
}

/// A protection domain.
#[derive(Debug, Clone)]
pub struct Pd {
    /// PD number (mlx5_ib_alloc_pd_resp.pdn).
    pub pdn: u32,
    /// Owning context.
    pub ctx: u32,
}

/// A memory region (REG_MR). mlx5 gives one key: lkey == rkey.
#[derive(Debug, Clone)]
pub struct Mr {
    /// lkey == rkey.
    pub key: u32,
    /// Protection domain number.
    pub pdn: u32,
    /// Owning context.
    pub ctx: u32,
    /// Process whose memory it maps.
    pub pid: Pid,
    /// Host virtual address of the first byte (`start`).
    pub addr: u64,
    /// The I/O virtual address that SGEs and rkeys use (`hca_va`; equals
    /// `addr` unless registered with an iova).
    pub iova: u64,
    /// Length in bytes.
    pub length: u64,
    /// IBV_ACCESS_* bits.
    pub access: u32,
    /// Invalidated by LOCAL_INV / SEND_WITH_INV (only for keys that can be).
    pub valid: bool,
}

/// A memory window (ALLOC_MW), bound by a BIND_MW (UMR) WQE.
#[derive(Debug, Clone)]
pub struct Mw {
    /// rkey as handed out at ALLOC_MW (type 2 binds change its low byte).
    pub rkey: u32,
    /// Protection domain number.
    pub pdn: u32,
    /// Owning context.
    pub ctx: u32,
    /// 1 or 2 (IBV_MW_TYPE_1/2).
    pub mw_type: u8,
    /// The binding, if bound.
    pub bound: Option<MwBinding>,
}

/// Where a bound window points.
#[derive(Debug, Clone, Copy)]
pub struct MwBinding {
    /// The MR key it was bound over.
    pub mr_key: u32,
    /// First address (iova space of the MR).
    pub addr: u64,
    /// Length.
    pub length: u64,
    /// Remote access bits granted.
    pub access: u32,
    /// Type 2: the QP it is bound to.
    pub qpn: Option<u32>,
}

/// A completion queue.
#[derive(Debug, Clone)]
pub struct Cq {
    /// CQ number.
    pub cqn: u32,
    /// Owning context.
    pub ctx: u32,
    /// Process owning the buffer.
    pub pid: Pid,
    /// The `cq_handle` userspace gave at create (returned in completion events).
    pub user_handle: u64,
    /// CQE buffer (mlx5_ib_create_cq.buf_addr).
    pub buf: u64,
    /// Doorbell record: word 0 the consumer index (set_ci), word 1 the arm word.
    pub dbrec: u64,
    /// Number of entries (power of two; the kernel's `cqe` + 1).
    pub ncqe: u32,
    /// 64 or 128.
    pub cqe_size: u32,
    /// Producer index: CQEs the device has written so far (owner bit =
    /// (pi / ncqe) & 1 for the entry at pi % ncqe).
    pub pi: u32,
    /// Armed by the UAR doorbell at +0x20: next completion (`Some(false)`)
    /// or next solicited (`Some(true)`); cleared when the event fires.
    pub armed: Option<bool>,
    /// Last arm sequence number seen (bits 28-29 of the arm word).
    pub arm_sn: u32,
    /// The last arm word taken (from the UAR doorbell or the CQ's doorbell
    /// record), [`ARM_UNSET`] before the first: an arm word is taken once,
    /// whichever of the two shows it first.
    pub arm_taken: u32,
    /// Completion channel id, if created with one.
    pub channel: Option<u32>,
    /// A CQ overrun happened (async event IBV_EVENT_CQ_ERR was raised).
    pub overrun: bool,
}

/// IB QP types (`enum ib_qp_type` values as the kernel uses them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpType {
    /// IB_QPT_RC = 2
    Rc,
    /// IB_QPT_UC = 3
    Uc,
    /// IB_QPT_UD = 4
    Ud,
}

impl QpType {
    /// The type of an `enum ib_qp_type` value (2, 3, 4); `None` for the
    /// types the sim does not model.
    pub fn from_ib(v: u8) -> Option<Self> {
        match v {
            2 => Some(QpType::Rc),
            3 => Some(QpType::Uc),
            4 => Some(QpType::Ud),
            _ => None,
        }
    }

    /// The `enum ib_qp_type` value.
    pub fn ib(self) -> u8 {
        match self {
            QpType::Rc => 2,
            QpType::Uc => 3,
            QpType::Ud => 4,
        }
    }
}

/// IB QP states (`enum ib_qp_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QpState {
    /// 0
    Reset,
    /// 1
    Init,
    /// 2
    Rtr,
    /// 3
    Rts,
    /// 4
    Sqd,
    /// 5
    Sqe,
    /// 6
    Err,
}

/// One work queue in a user buffer.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wq {
    /// First byte of the queue (host virtual address).
    pub buf: u64,
    /// Number of WQEs (send: WQEBBs of 64 bytes), a power of two.
    pub wqe_cnt: u32,
    /// log2 of the stride (send: 6).
    pub wqe_shift: u32,
    /// Device's consumer counter (16-bit wrapping in the doorbell record;
    /// kept wide here). Send queue: next WQEBB index to execute.
    pub ci: u32,
}

/// Connection and addressing attributes set by MODIFY_QP.
#[derive(Debug, Clone, Copy, Default)]
pub struct QpAttrs {
    /// Remote QPN (RC/UC, from RTR).
    pub dest_qpn: u32,
    /// Q_Key (UD).
    pub qkey: u32,
    /// IBV_ACCESS_REMOTE_* bits accepted as responder.
    pub access: u32,
    /// Port number.
    pub port: u8,
    /// P_Key index.
    pub pkey_index: u16,
    /// Path MTU (enum: 1=256 … 5=4096).
    pub path_mtu: u8,
    /// Send PSN / expected receive PSN.
    pub sq_psn: u32,
    /// Expected receive PSN.
    pub rq_psn: u32,
    /// Transport retry count (0-7).
    pub retry_cnt: u8,
    /// RNR retry count (7 = infinite).
    pub rnr_retry: u8,
    /// Minimal RNR NAK timer (enum as in ibv_modify_qp).
    pub min_rnr_timer: u8,
    /// Local ACK timeout (4.096 µs * 2^timeout; 0 = infinite).
    pub timeout: u8,
    /// Outstanding RDMA READ/atomic as initiator / responder.
    pub max_rd_atomic: u8,
    /// As responder.
    pub max_dest_rd_atomic: u8,
    /// Destination GID (RoCE: the peer's address; the engine routes by QPN).
    pub dgid: [u8; 16],
    /// Service level.
    pub sl: u8,
}

/// A queue pair.
#[derive(Debug, Clone)]
pub struct Qp {
    /// QP number.
    pub qpn: u32,
    /// Owning context.
    pub ctx: u32,
    /// Process owning the buffers.
    pub pid: Pid,
    /// The `qp_handle` userspace gave at create (async events).
    pub user_handle: u64,
    /// Protection domain number.
    pub pdn: u32,
    /// Transport.
    pub qp_type: QpType,
    /// Current state.
    pub state: QpState,
    /// Send queue (WQEBBs of 64 bytes: wqe_shift 6).
    pub sq: Wq,
    /// Receive queue (unused when `srqn` is set).
    pub rq: Wq,
    /// Doorbell record: word 0 the receive counter, word 1 the send counter (BE u32, low 16 bits).
    pub dbrec: u64,
    /// Send CQ number.
    pub send_cqn: u32,
    /// Receive CQ number.
    pub recv_cqn: u32,
    /// SRQ number, if attached to one.
    pub srqn: Option<u32>,
    /// User index written into CQEs (cqe_version 1: srqn_uidx low 24 bits).
    pub uidx: u32,
    /// Every WQE generates a CQE (IBV_QP sq_sig_all).
    pub sq_sig_all: bool,
    /// Receive scatter-to-CQE requested (MLX5_QP_FLAG_SCATTER_CQE); the
    /// device may always decline it.
    pub scatter_cqe: bool,
    /// Attributes from MODIFY_QP.
    pub attrs: QpAttrs,
    /// Largest inline data the QP was created with.
    pub max_inline: u32,
    /// Max SGEs of a receive WQE (a shorter list ends with lkey 0x100).
    pub max_recv_sge: u32,
    /// Multicast groups attached (GID, LID), in order (ATTACH_MCAST); UD
    /// datagrams sent to a group reach every QP attached to it.
    pub mcast: Vec<([u8; 16], u16)>,
    /// Created with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (mlx5_ib sets the
    /// QP context's `block_lb_mc`): its own multicast datagrams do not
    /// loop back to it.
    pub block_self_mcast_lb: bool,
}

/// A shared receive queue (linked list of WQEs, mlx5 style).
#[derive(Debug, Clone)]
pub struct Srq {
    /// SRQ number.
    pub srqn: u32,
    /// Owning context.
    pub ctx: u32,
    /// Process owning the buffer.
    pub pid: Pid,
    /// The `srq_handle` userspace gave at create (async events).
    pub user_handle: u64,
    /// Protection domain number.
    pub pdn: u32,
    /// WQE buffer; the WQE at index i is at buf + (i << wqe_shift).
    pub wqe_shift: u32,
    /// Queue.
    pub wq: Wq,
    /// Doorbell record: word 0 = BE u32 count of WQEs posted (low 16 bits).
    pub dbrec: u64,
    /// Next WQE index the device takes (follows next_wqe_index links).
    pub head: u32,
    /// WQEs consumed so far (compared with the doorbell counter).
    pub consumed: u32,
    /// Limit for IBV_EVENT_SRQ_LIMIT_REACHED (0 = disarmed).
    pub limit: u32,
    /// User index (cqe_version 1).
    pub uidx: u32,
    /// Max SGEs per WQE.
    pub max_sge: u32,
}

/// An address handle made by the kernel (CREATE_AH, for Ethernet the dmac
/// resolution); the data path carries the address vector itself.
#[derive(Debug, Clone)]
pub struct Ah {
    /// Handle.
    pub handle: u32,
    /// Owning context.
    pub ctx: u32,
    /// Destination GID.
    pub dgid: [u8; 16],
}

/// The whole device state. The daemon keeps it behind one `Mutex`; the
/// engine is called with `&mut Device`.
#[derive(Debug, Default)]
pub struct Device {
    /// Contexts by id.
    pub ctxs: HashMap<u32, Ctx>,
    /// PDs by pdn.
    pub pds: HashMap<u32, Pd>,
    /// MRs by key.
    pub mrs: HashMap<u32, Mr>,
    /// MWs by rkey index (rkey >> 8).
    pub mws: HashMap<u32, Mw>,
    /// CQs by cqn.
    pub cqs: HashMap<u32, Cq>,
    /// QPs by qpn.
    pub qps: HashMap<u32, Qp>,
    /// SRQs by srqn.
    pub srqs: HashMap<u32, Srq>,
    /// AHs by handle.
    pub ahs: HashMap<u32, Ah>,
    /// What the engine remembers between calls (retry timers, clock).
    pub engine: crate::engine::EngineState,
    /// The port's GID table by index (the fixture's), for the source
    /// address of a multicast datagram's GRH; empty in engine unit tests.
    pub gids: Vec<[u8; 16]>,
}
