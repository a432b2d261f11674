//! UMR WQEs: binding a type 2 memory window (`IBV_WR_BIND_MW`) and local
//! invalidation (`IBV_WR_LOCAL_INV`), as libmlx5's `set_bind_wr` writes
//! them (rdma-core v44 `qp.c`: `set_umr_control_seg`, `set_umr_mkey_seg`,
//! `set_umr_data_seg`). After the control segment: the UMR control
//! segment (48 bytes, so the WQE's first basic block is full), the mkey
//! context (64 bytes: only the fields libmlx5 sets are written, the rest
//! keep the ring's bytes as with libmlx5), and for a bind one KLM entry
//! padded with zeros to 64 bytes. The WQE after a UMR WQE gets the small
//! initiator fence.
//!
//! A type 1 window (`ibv_bind_mw`, bound to no QP) differs as libmlx5's
//! `set_umr_control_seg`/`set_umr_mkey_seg` make it: no QPN in the mkey
//! mask, no CHECK_FREE / CHECK_QPN flag, and an owner of all ones.

use core::mem::offset_of;

use zerocopy::byteorder::network_endian::{U16, U32, U64};

use super::SendQueue;
use crate::mr::AccessFlags;
use crate::providers::mlx5::buf::WqBuf;
use crate::providers::mlx5::wqe::*;

/// `IBV_WC_BIND_MW`, the completion opcode recorded for a bind WQE.
pub(super) const WC_BIND_MW: u32 = 5;
/// `IBV_WC_LOCAL_INV`.
pub(super) const WC_LOCAL_INV: u32 = 6;

/// What a bind sets (all from `MwBind`), or nothing for an invalidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BindParams {
    /// The window's new key (only its low 8 bits, the tag, reach the WQE).
    pub rkey: u32,
    /// The region's local key.
    pub mr_lkey: u32,
    /// Start of the window.
    pub addr: u64,
    /// Length (at most 2^31, checked before).
    pub length: u64,
    /// `IBV_ACCESS_*` granted.
    pub access: AccessFlags,
    /// A type 1 window (`ibv_bind_mw`).
    pub type1: bool,
}

impl SendQueue {
    /// Writes the UMR segments at ring byte `pos` (the end of the control
    /// segment); returns the position after them.
    pub(super) fn write_umr(&self, buf: &mut WqBuf, mut pos: u32, bind: Option<BindParams>) -> u32 {
        let len = bind.map_or(0, |b| b.length);
        // a local invalidate is written as a type 2 unbind, as libmlx5 does
        let type2 = !bind.is_some_and(|b| b.type1);
        let mut flags = WQE_UMR_CTRL_FLAG_TRNSLATION_OFFSET | WQE_UMR_CTRL_FLAG_INLINE;
        let mut mask = WQE_UMR_CTRL_MKEY_MASK_FREE | WQE_UMR_CTRL_MKEY_MASK_MKEY;
        if type2 {
            mask |= WQE_UMR_CTRL_MKEY_MASK_QPN;
        }
        let klm = if len != 0 {
            if type2 {
                flags |= WQE_UMR_CTRL_FLAG_CHECK_FREE;
            }
            mask |= WQE_UMR_CTRL_MKEY_MASK_LEN
                | WQE_UMR_CTRL_MKEY_MASK_START_ADDR
                | WQE_UMR_CTRL_MKEY_MASK_ACCESS_LOCAL_WRITE
                | WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_READ
                | WQE_UMR_CTRL_MKEY_MASK_ACCESS_REMOTE_WRITE
                | WQE_UMR_CTRL_MKEY_MASK_ACCESS_ATOMIC;
            // libmlx5's get_klm_octo(1): ALIGN(1, 3) / 2.
            4
        } else {
            if type2 {
                flags |= WQE_UMR_CTRL_FLAG_CHECK_QPN;
            }
            0
        };
        let ctrl = UmrCtrlSeg { flags, klm_octowords: U16::new(klm), mkey_mask: U64::new(mask), ..Default::default() };
        self.put(buf, pos, ctrl);
        pos += UMR_CTRL_SEG as u32;
        let m = pos;
        let tag = bind.map_or(0, |b| b.rkey & 0xff);
        let owner = if len == 0 || !type2 { 0xffff_ff00 } else { self.cfg.qpn << 8 };
        self.put(buf, m + offset_of!(MkeyContextSeg, qpn_mkey) as u32, U32::new(tag | owner));
        match bind {
            Some(b) if len != 0 => {
                let a = b.access;
                let mut access = 0;
                for (f, bit) in [
                    (AccessFlags::LOCAL_WRITE, WQE_MKEY_CONTEXT_ACCESS_FLAGS_LOCAL_WRITE),
                    (AccessFlags::REMOTE_WRITE, WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_WRITE),
                    (AccessFlags::REMOTE_READ, WQE_MKEY_CONTEXT_ACCESS_FLAGS_REMOTE_READ),
                    (AccessFlags::REMOTE_ATOMIC, WQE_MKEY_CONTEXT_ACCESS_FLAGS_ATOMIC),
                ] {
                    if a.contains(f) {
                        access |= bit;
                    }
                }
                self.put(buf, m + offset_of!(MkeyContextSeg, free) as u32, 0u8);
                self.put(buf, m + offset_of!(MkeyContextSeg, access_flags) as u32, access);
                let start = if a.contains(AccessFlags::ZERO_BASED) { 0 } else { b.addr };
                self.put(buf, m + offset_of!(MkeyContextSeg, start_addr) as u32, U64::new(start));
                self.put(buf, m + offset_of!(MkeyContextSeg, len) as u32, U64::new(len));
                pos += MKEY_CONTEXT_SEG as u32;
                let k = UmrKlmSeg { byte_count: U32::new(len as u32), mkey: U32::new(b.mr_lkey), address: U64::new(b.addr) };
                self.put(buf, pos, k);
                self.put(buf, pos + 16, [0u8; 48]);
                pos + UMR_KLM_AREA as u32
            }
            _ => {
                self.put(buf, m + offset_of!(MkeyContextSeg, free) as u32, WQE_MKEY_CONTEXT_FREE);
                pos + MKEY_CONTEXT_SEG as u32
            }
        }
    }
}
