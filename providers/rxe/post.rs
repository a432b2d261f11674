//! The rxe data path: send WQEs and receive WQEs written in place into
//! the kernel-mapped rings (`struct rxe_send_wqe` / `struct rxe_recv_wqe`
//! of `<rdma/rdma_user_rxe.h>`), and completions read from the CQ ring.
//!
//! Facts from rdma-core's `providers/rxe/rxe.c` and the kernel's
//! `rxe_req.c` this follows:
//! * a send WQE is the header (`rxe_send_wr` + state + `rxe_dma_info`,
//!   208 bytes) followed by the SGEs (`struct rxe_sge`, same layout as
//!   `ibv_sge`) or by the inline bytes; the kernel computes `mask`,
//!   `ssn`, PSNs itself and expects `state == 0` (posted);
//! * `iova` is the atomic or RDMA remote address;
//! * UD sends carry the kernel AH index (`wr.ud.ah_num`, kernels ≥ 5.12);
//! * the kernel processes the send queue when it gets a `POST_SEND`
//!   command of zero work requests (the doorbell); receive queues need no
//!   doorbell, the kernel looks at them when a packet arrives.
//!
//! Every request of a list is checked before the first is written, and
//! the queue must have room for all of them: a refused list leaves the
//! ring untouched (the producer index is published only at the end).

use core::mem::size_of;
use core::sync::atomic::Ordering;

use zerocopy::FromZeros;

use super::abi::{
    RxeDmaInfo, RxeRecvWqe, RxeSendWqe, RxeSendWrAtomic, RxeSendWrMw, RxeSendWrRdma, RxeSendWrUd,
    RxeSge,
};
use super::queue::{Producer, Queue};
use crate::abi::uverbs::Wc as AbiWc;
use crate::error::ErrorKind;
use crate::qp::QpType;
use crate::wc::Wc;
use crate::wr::{check_recv, check_send, sge_len, Payload, PostError, RecvWr, SendOp, SendWr, SEND_INLINE};

const SEND_HDR: usize = size_of::<RxeSendWqe>();
const RECV_HDR: usize = size_of::<RxeRecvWqe>();
const SGE: usize = size_of::<RxeSge>();

/// What a send queue accepts (the capacities the kernel granted).
#[derive(Clone, Copy, Debug)]
pub struct SendLimits {
    /// The QP's transport.
    pub qp_type: QpType,
    /// `max_send_sge`.
    pub max_sge: u32,
    /// `max_inline_data`.
    pub max_inline: u32,
}

/// Checks a whole list against `lim` and the ring's element size, then
/// checks that the ring has room for all of it.
fn check_send_list(
    verb: &'static str,
    prod: &Producer<'_>,
    lim: SendLimits,
    wrs: &[SendWr<'_>],
) -> Result<(), PostError> {
    // What fits in an element bounds the SGE count and inline size too.
    let room = prod.queue().elem_size().saturating_sub(SEND_HDR);
    let max_sge = lim.max_sge.min((room / SGE) as u32);
    let max_inline = lim.max_inline.min(room as u32);
    for (i, wr) in wrs.iter().enumerate() {
        check_send(wr, lim.qp_type, max_sge, max_inline).map_err(|k| PostError::new(verb, k, i))?;
        if let Some(ud) = wr.ud {
            // Kernels before 5.12 return no AH index and want the whole
            // address vector in each WQE; that form is not implemented.
            if ud.ah.ah_num() == 0 {
                return Err(PostError::new(verb, ErrorKind::Unsupported, i));
            }
        }
    }
    let free = prod.free() as usize;
    if wrs.len() > free {
        return Err(PostError::new(verb, ErrorKind::QueueFull, free));
    }
    Ok(())
}

/// Builds the 208-byte WQE header of `wr` (whose payload is `len` bytes).
#[inline]
fn send_header(wr: &SendWr<'_>, len: u32) -> RxeSendWqe {
    let mut wqe = RxeSendWqe::new_zeroed();
    let w = &mut wqe.wr;
    w.wr_id = wr.wr_id;
    w.opcode = wr.op.opcode();
    let inline = matches!(wr.payload, Payload::Inline(_));
    w.send_flags = wr.flags.bits() | if inline { SEND_INLINE } else { 0 };
    match wr.op {
        SendOp::Send => {}
        SendOp::SendWithImm { imm } => w.ex = imm.to_be(),
        SendOp::SendWithInv { invalidate_rkey } => w.ex = invalidate_rkey,
        SendOp::LocalInv { rkey } => w.ex = rkey,
        SendOp::RdmaWrite { remote_addr, rkey } | SendOp::RdmaRead { remote_addr, rkey } => {
            w.set_rdma(RxeSendWrRdma { remote_addr, rkey, reserved: 0 });
            wqe.iova = remote_addr;
        }
        SendOp::RdmaWriteWithImm { remote_addr, rkey, imm } => {
            w.ex = imm.to_be();
            w.set_rdma(RxeSendWrRdma { remote_addr, rkey, reserved: 0 });
            wqe.iova = remote_addr;
        }
        SendOp::AtomicCmpSwp { remote_addr, rkey, compare, swap } => {
            w.set_atomic(RxeSendWrAtomic { remote_addr, compare_add: compare, swap, rkey, reserved: 0 });
            wqe.iova = remote_addr;
        }
        SendOp::AtomicFetchAdd { remote_addr, rkey, add } => {
            w.set_atomic(RxeSendWrAtomic { remote_addr, compare_add: add, swap: 0, rkey, reserved: 0 });
            wqe.iova = remote_addr;
        }
        SendOp::BindMw(b) => w.set_mw(RxeSendWrMw {
            addr: b.addr,
            length: b.length,
            mr_lkey: b.mr.lkey(),
            mw_rkey: b.mw.rkey(),
            rkey: b.rkey,
            access: b.access.bits(),
        }),
    }
    if let Some(ud) = wr.ud {
        let mut u = RxeSendWrUd::new_zeroed();
        u.remote_qpn = ud.remote_qpn;
        u.remote_qkey = ud.remote_qkey;
        u.ah_num = ud.ah.ah_num();
        w.set_ud(&u);
    }
    let num_sge = match wr.payload {
        Payload::Sges(s) => s.len() as u32,
        Payload::Inline(_) => 0,
    };
    wqe.dma = RxeDmaInfo { length: len, resid: len, cur_sge: 0, num_sge, sge_offset: 0, reserved: 0 };
    wqe
}

/// `ibv_post_send` on rxe: writes every WQE of `wrs` into the send ring,
/// publishes them with one release store, and returns; the caller rings
/// the doorbell. Nothing is written if any request is refused.
pub fn post_send(
    sq: &mut Queue,
    lim: SendLimits,
    wrs: &[SendWr<'_>],
) -> Result<(), PostError> {
    const VERB: &str = "ibv_post_send";
    let mut prod = sq.producer_mut();
    check_send_list(VERB, &prod, lim, wrs)?;
    let mut head = prod.head();
    for (i, wr) in wrs.iter().enumerate() {
        // The list was checked: lengths fit in u32 and in the element.
        let len = match wr.payload {
            Payload::Sges(s) => sge_len(s) as u32,
            Payload::Inline(d) => d.len() as u32,
        };
        let ok = prod.write_slot(head, 0, send_header(wr, len))
            && match wr.payload {
                Payload::Sges(s) => s.iter().enumerate().all(|(j, s)| {
                    prod.write_slot(head, SEND_HDR + j * SGE, RxeSge { addr: s.addr, length: s.length, lkey: s.lkey })
                }),
                Payload::Inline(d) => prod.write_slot_bytes(head, SEND_HDR, d),
            };
        if !ok {
            // Unreachable after the checks (slot offsets come from the
            // validated header); refuse rather than publish a torn WQE.
            return Err(PostError::new(VERB, ErrorKind::Malformed, i));
        }
        head = head.wrapping_add(1);
    }
    prod.publish(head);
    for wr in wrs {
        if let SendOp::BindMw(b) = wr.op {
            b.mw.set_rkey(b.rkey);
        }
    }
    Ok(())
}

/// `ibv_post_recv` / `ibv_post_srq_recv` on rxe: writes every receive WQE
/// of `wrs` and publishes them. No doorbell. Nothing is written if any
/// request is refused.
pub fn post_recv(
    verb: &'static str,
    mut prod: Producer<'_>,
    max_sge: u32,
    wrs: &[RecvWr<'_>],
) -> Result<(), PostError> {
    // What fits in an element bounds the SGE count too.
    let fit = (prod.queue().elem_size().saturating_sub(RECV_HDR) / SGE) as u32;
    let max_sge = max_sge.min(fit);
    for (i, wr) in wrs.iter().enumerate() {
        check_recv(wr, max_sge).map_err(|k| PostError::new(verb, k, i))?;
    }
    let free = prod.free() as usize;
    if wrs.len() > free {
        return Err(PostError::new(verb, ErrorKind::QueueFull, free));
    }
    let mut head = prod.head();
    for (i, wr) in wrs.iter().enumerate() {
        // SGEs first, adding up the length, then the header.
        let mut len = 0u32;
        let mut ok = true;
        for (j, s) in wr.sg_list.iter().enumerate() {
            len = len.wrapping_add(s.length);
            ok &= prod.write_slot(head, RECV_HDR + j * SGE, RxeSge { addr: s.addr, length: s.length, lkey: s.lkey });
        }
        let wqe = RxeRecvWqe {
            wr_id: wr.wr_id,
            reserved: 0,
            padding: 0,
            dma: RxeDmaInfo {
                length: len,
                resid: len,
                cur_sge: 0,
                num_sge: wr.sg_list.len() as u32,
                sge_offset: 0,
                reserved: 0,
            },
        };
        if !(ok && prod.write_slot(head, 0, wqe)) {
            // Unreachable after the checks; refuse rather than publish.
            return Err(PostError::new(verb, ErrorKind::Malformed, i));
        }
        head = head.wrapping_add(1);
    }
    prod.publish(head);
    Ok(())
}

/// `ibv_poll_cq` on rxe: copies up to `out.len()` completions from the
/// ring and frees their slots. Returns how many.
pub fn poll(cq: &Queue, out: &mut [Wc]) -> usize {
    // Empty (or nothing asked for): answer without taking the claim.
    let prod = cq.producer_word().load(Ordering::Acquire);
    if prod == cq.consumer_word().load(Ordering::Relaxed) || out.is_empty() {
        return 0;
    }
    cq.with_consumer(|q| {
        let mask = q.index_mask();
        let cons = q.consumer_word().load(Ordering::Relaxed);
        let prod = q.producer_word().load(Ordering::Acquire);
        let n = ((prod.wrapping_sub(cons) & mask) as usize).min(out.len());
        let mut i = 0;
        while i < n {
            // `RxeCq::map` checked that an element holds a `Wc`, so this
            // is `Some`; a `None` would stop short, never tear.
            match q.read_slot::<AbiWc>(cons.wrapping_add(i as u32)) {
                Some(mut wc) => {
                    wc.wc_flags = kernel_wc_flags_to_ibv(wc.wc_flags);
                    out[i] = Wc::from_abi(wc);
                }
                None => break,
            }
            i += 1;
        }
        if i > 0 {
            q.consumer_word()
                .store(cons.wrapping_add(i as u32) & mask, Ordering::Release);
        }
        i
    })
}

/// rxe writes the kernel's `enum ib_wc_flags` into the ring, whose bits
/// 2 and 3 are swapped relative to `enum ibv_wc_flags`:
/// `IB_WC_WITH_INVALIDATE` is bit 2 (libibverbs' `IBV_WC_IP_CSUM_OK`) and
/// `IB_WC_IP_CSUM_OK` is bit 3 (`IBV_WC_WITH_INV`). rdma-core copies the
/// record unchanged, so its users see a send-with-invalidate as
/// "checksum ok"; we translate.
#[inline]
pub const fn kernel_wc_flags_to_ibv(k: u32) -> u32 {
    let b2 = (k >> 2) & 1;
    let b3 = (k >> 3) & 1;
    (k & !0b1100) | (b2 << 3) | (b3 << 2)
}

/// How many completions are waiting in the ring.
pub fn pending(cq: &Queue) -> u32 {
    let cons = cq.consumer_word().load(Ordering::Acquire);
    let prod = cq.producer_word().load(Ordering::Acquire);
    prod.wrapping_sub(cons) & cq.index_mask()
}
