//! Memory windows through UMR WQEs as libmlx5 writes them for
//! ibv_bind_mw / IBV_WR_BIND_MW / IBV_WR_LOCAL_INV, and SEND_WITH_INV.

use super::basic::pair;
use super::*;
use crate::engine::{cqe_op, op, syn};

const MR_ACC: u32 = access::LOCAL_WRITE | access::MW_BIND;
const MW_REMOTE_WRITE: u8 = 1 << 5;

/// A UMR WQE's segments: bind (`len` > 0) or free.
fn umr(mw_type: u8, new_rkey: u32, qpn: u32, mr: u32, addr: u64, len: u64, acc: u8) -> Vec<Vec<u8>> {
    let mut uctrl = vec![0u8; 48];
    uctrl[0] = 0x80 | 0x10 | if len > 0 && mw_type == 2 { 0x20 } else if mw_type == 2 { 0x08 } else { 0 };
    let mut mkc = vec![0u8; 64];
    let hi = if mw_type == 1 || len == 0 { 0xFFFF_FF00 } else { qpn << 8 };
    mkc[4..8].copy_from_slice(&(hi | (new_rkey & 0xff)).to_be_bytes());
    if len == 0 {
        mkc[0] = 0x40;
        return vec![uctrl, mkc];
    }
    mkc[2] = acc;
    mkc[16..24].copy_from_slice(&addr.to_be_bytes());
    mkc[24..32].copy_from_slice(&len.to_be_bytes());
    let mut klm = dseg(len as u32, mr, addr);
    klm.resize(64, 0);
    vec![uctrl, mkc, klm]
}

fn mw(r: &mut Rig, mw_type: u8) -> u32 {
    let rkey = 0x3300 | 0x05;
    r.dev.mws.insert(rkey >> 8, Mw { rkey, pdn: 2, ctx: 2, mw_type, bound: None });
    rkey
}

#[test]
fn bound_type1_window_grants_its_range_only_and_unbinds() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, access::LOCAL_WRITE);
    let (kb, xb) = r.mr(B, 8192, MR_ACC);
    let rkey = mw(&mut r, 1);
    let new = (rkey & !0xff) | 0x06;
    r.post(qb, op::UMR, ctrl::CQ_UPDATE, rkey, &umr(1, new, qb, kb, xb + 4096, 100, MW_REMOTE_WRITE));
    r.eng().sq_doorbell(qb);
    assert_eq!(r.poll(cb)[0].opcode, cqe_op::REQ);
    assert_eq!(r.dev.mws[&(rkey >> 8)].rkey, new);
    r.write(A, xa, b"through the window");
    r.send(qa, op::RDMA_WRITE, &[raddr(xb + 4096, new), dseg(18, ka, xa)]);
    assert_eq!(r.read(B, xb + 4096, 18), b"through the window");
    assert_eq!(r.poll(ca)[0].opcode, cqe_op::REQ);
    // Unbind (length 0): the key stops working.
    let newer = (rkey & !0xff) | 0x07;
    r.post(qb, op::UMR, ctrl::CQ_UPDATE, new, &umr(1, newer, qb, 0, 0, 0, 0));
    r.eng().sq_doorbell(qb);
    assert!(r.dev.mws[&(rkey >> 8)].bound.is_none());
    r.send(qa, op::RDMA_WRITE, &[raddr(xb + 4096, newer), dseg(1, ka, xa)]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::REM_ACCESS);
}

#[test]
fn window_outside_range_or_without_access_is_refused() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (ka, xa) = r.mr(A, 4096, access::LOCAL_WRITE);
    let (kb, xb) = r.mr(B, 4096, MR_ACC);
    let rkey = mw(&mut r, 2);
    r.post(qb, op::UMR, ctrl::CQ_UPDATE, rkey, &umr(2, rkey + 1, qb, kb, xb, 64, MW_REMOTE_WRITE));
    r.eng().sq_doorbell(qb);
    assert_eq!(r.poll(cb)[0].opcode, cqe_op::REQ);
    r.send(qa, op::RDMA_WRITE, &[raddr(xb + 60, rkey + 1), dseg(8, ka, xa)]);
    assert_eq!(r.poll(ca)[0].syndrome, syn::REM_ACCESS);

    let (mut r, _qa, qb, _ca, cb) = pair(QpType::Rc);
    let (kb, xb) = r.mr(B, 4096, access::LOCAL_WRITE);
    let rkey = mw(&mut r, 2);
    r.post(qb, op::UMR, ctrl::CQ_UPDATE, rkey, &umr(2, rkey + 1, qb, kb, xb, 64, MW_REMOTE_WRITE));
    r.eng().sq_doorbell(qb);
    assert_eq!(r.poll(cb)[0].syndrome, syn::MW_BIND, "the MR lacks MW_BIND");
}

#[test]
fn type2_window_is_invalidated_locally_and_by_send_with_invalidate() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    let (kb, xb) = r.mr(B, 4096, MR_ACC);
    let rkey = mw(&mut r, 2);
    let bound = rkey + 1;
    r.post(qb, op::UMR, ctrl::CQ_UPDATE, rkey, &umr(2, bound, qb, kb, xb, 64, MW_REMOTE_WRITE));
    r.eng().sq_doorbell(qb);
    // LOCAL_INV: imm = the bound key; rebinding names the window by its
    // original key (libmlx5 passes ibv_mw.rkey, which type 2 never updates).
    r.post(qb, op::UMR, ctrl::CQ_UPDATE, bound, &umr(2, 0, qb, 0, 0, 0, 0));
    r.eng().sq_doorbell(qb);
    assert!(r.dev.mws[&(rkey >> 8)].bound.is_none());
    r.post(qb, op::UMR, ctrl::CQ_UPDATE, rkey, &umr(2, bound + 1, qb, kb, xb, 64, MW_REMOTE_WRITE));
    r.eng().sq_doorbell(qb);
    assert_eq!(r.poll(cb).iter().map(|c| c.opcode).collect::<Vec<_>>(), [cqe_op::REQ; 3]);
    r.recv(qb, &[]);
    r.post(qa, op::SEND_INVAL, ctrl::CQ_UPDATE, bound + 1, &[]);
    r.eng().sq_doorbell(qa);
    let c = r.poll(cb)[0];
    assert_eq!((c.opcode, c.imm), (cqe_op::RESP_SEND_INV, bound + 1));
    assert!(r.dev.mws[&(rkey >> 8)].bound.is_none());
    assert_eq!(r.poll(ca)[0].opcode, cqe_op::REQ);
}

#[test]
fn send_with_invalidate_of_an_unknown_key_fails_both_sides() {
    let (mut r, qa, qb, ca, cb) = pair(QpType::Rc);
    r.recv(qb, &[]);
    r.post(qa, op::SEND_INVAL, ctrl::CQ_UPDATE, 0xabcd_ef01, &[]);
    r.eng().sq_doorbell(qa);
    assert_eq!(r.poll(ca)[0].syndrome, syn::REM_INV_REQ);
    assert_eq!(r.poll(cb)[0].opcode, cqe_op::RESP_ERR);
}

#[test]
fn local_inval_opcode_invalidates_a_bound_type2_window() {
    let (mut r, _qa, qb, _ca, cb) = pair(QpType::Rc);
    let (kb, xb) = r.mr(B, 4096, MR_ACC);
    let rkey = mw(&mut r, 2);
    r.post(qb, op::UMR, 0, rkey, &umr(2, rkey + 1, qb, kb, xb, 64, MW_REMOTE_WRITE));
    r.post(qb, op::LOCAL_INVAL, ctrl::CQ_UPDATE, rkey + 1, &[]);
    r.eng().sq_doorbell(qb);
    assert_eq!(r.poll(cb)[0].opcode, cqe_op::REQ);
    assert!(r.dev.mws[&(rkey >> 8)].bound.is_none());
}
