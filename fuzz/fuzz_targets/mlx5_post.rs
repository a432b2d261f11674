//! Arbitrary request lists into mlx5's send queue, receive queue and SRQ,
//! on plain memory (no device): posting never panics; a refused list
//! changes no byte of the buffers and no index (all-or-nothing); an
//! accepted one advances the indices by exactly its WQEs, each control
//! segment names its own index, QP and a length inside the WQE size, the
//! doorbell record holds the new counter, and the doorbell decision is
//! libmlx5's. Completions retire what the harness expects.
#![no_main]

mod common;

use std::collections::VecDeque;

use common::Bytes;
use libfuzzer_sys::fuzz_target;
use verbs::providers::mlx5::buf::WqBuf;
use verbs::providers::mlx5::rq::{RecvQueue, Srq};
use verbs::providers::mlx5::sizing::{rq_size, sq_size, srq_size, DeviceLimits};
use verbs::providers::mlx5::sq::{BlueFlame, Req, Ring, SendQueue, SqConfig, StraightRing, UdAv};
use verbs::providers::mlx5::wqe::Av;
use verbs::qp::QpType;
use verbs::wr::{Payload, RecvWr, SendFlags, SendOp, SendWr, Sge};

const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 512, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 64 };
const QPN: u32 = 0x12_3456;

fn bytes(b: &WqBuf) -> Vec<u8> {
    (0..b.len() / 8).flat_map(|i| b.get::<[u8; 8]>(i * 8).unwrap()).collect()
}

fn sges(b: &mut Bytes<'_>, store: &mut [Sge; 6]) -> usize {
    let n = usize::from(b.u8() % 7);
    for s in store.iter_mut().take(n) {
        *s = Sge { addr: b.u64(), length: if b.u8() & 3 == 0 { 0 } else { b.u32() }, lkey: b.u32() };
    }
    n
}

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let cfg = b.u8();
    let qp_type = [QpType::Rc, QpType::Uc, QpType::Ud][usize::from(cfg % 3)];
    let Ok(Some(size)) = sq_size(&LIM, qp_type, 1 + u32::from(b.u8() % 16), u32::from(b.u8() % 8), u32::from(b.u8())) else { return };
    let Ok(Some(rsize)) = rq_size(&LIM, 1 + u32::from(b.u8() % 16), u32::from(b.u8() % 5), false) else { return };
    let sq_offset = rsize.bytes() as usize;
    let db = sq_offset + size.bytes() as usize;
    let bf = BlueFlame { enabled: cfg & 8 != 0, prefer: cfg & 16 != 0, buf_size: [64, 128, 256, 2048][usize::from(cfg >> 5 & 3)] };
    let sqc = SqConfig { qpn: QPN, qp_type, size, sq_offset, dbrec_offset: db, sig_all: cfg & 128 != 0, atomics: b.u8() & 1 != 0, bf };
    let mut sq = SendQueue::new("fuzz", sqc).unwrap();
    let mut rq = RecvQueue::new("fuzz", rsize, 0, db).unwrap();
    let mut buf = WqBuf::new("fuzz", db + 8).unwrap();
    let Ok(ssize) = srq_size(&LIM, 1 + u32::from(b.u8() % 8), u32::from(b.u8() % 4)) else { return };
    let mut sbuf = WqBuf::new("fuzz", ssize.bytes() as usize + 4).unwrap();
    let mut srq = Srq::new("fuzz", ssize, &mut sbuf, ssize.bytes() as usize).unwrap();
    let payload = [0x5au8; 600];
    // (wqe_counter, wr_id) of each send posted and not retired; receive wr_ids.
    let mut sends: VecDeque<(u16, u64)> = VecDeque::new();
    let mut recvs: VecDeque<u64> = VecDeque::new();
    let mut next_id = 0u64;
    while !b.is_empty() {
        let before = bytes(&buf);
        match b.u8() % 6 {
            0 | 1 => {
                let n = usize::from(b.u8() % 6);
                let mut sg = [[Sge::default(); 6]; 6];
                let mut reqs = Vec::new();
                for store in sg.iter_mut().take(n) {
                    let k = sges(&mut b, store);
                    let (op, flags, addr, key, val, inl, ud) = (b.u8(), b.u8(), b.u64(), b.u32(), b.u64(), b.u8(), b.u8());
                    reqs.push((k, op, flags, addr, key, val, inl, ud));
                }
                let made: Vec<Req<'_>> = reqs
                    .iter()
                    .zip(sg.iter())
                    .map(|(&(k, op, flags, addr, key, val, inl, ud), store)| {
                        let op = match op % 10 {
                            0 => SendOp::Send,
                            1 => SendOp::SendWithImm { imm: key },
                            2 => SendOp::SendWithInv { invalidate_rkey: key },
                            3 => SendOp::RdmaWrite { remote_addr: addr, rkey: key },
                            4 => SendOp::RdmaWriteWithImm { remote_addr: addr, rkey: key, imm: !key },
                            5 => SendOp::RdmaRead { remote_addr: addr, rkey: key },
                            6 => SendOp::AtomicCmpSwp { remote_addr: addr, rkey: key, compare: val, swap: !val },
                            7 => SendOp::AtomicFetchAdd { remote_addr: addr, rkey: key, add: val },
                            8 => SendOp::AtomicWrite { remote_addr: addr, rkey: key, value: val.to_ne_bytes() },
                            _ => SendOp::LocalInv { rkey: key },
                        };
                        let payload = if inl & 0x80 != 0 { Payload::Inline(&payload[..usize::from(inl & 0x7f) * 4]) } else { Payload::Sges(&store[..k]) };
                        let has_ud = (qp_type == QpType::Ud) != (ud & 0x80 != 0 && ud & 0x40 != 0);
                        let av = Av { stat_rate_sl: ud, rgid: [ud; 16], ..Default::default() };
                        let ud = has_ud.then_some(UdAv { av, remote_qpn: key, remote_qkey: !key });
                        Req { wr_id: val, op, flags: SendFlags::from_bits_retain(u32::from(flags & 0x1f)), payload, ud }
                    })
                    .collect();
                let (cp0, head0, tail0) = sq.indices();
                // A list of one without a destination goes the straight way
                // first (as `Mlx5Qp::post_send` posts it): what it declines
                // must be untouched, what it takes must pass the same checks.
                let straight = match made.as_slice() {
                    [r] if r.ud.is_none() => {
                        let wr = SendWr { wr_id: r.wr_id, payload: r.payload, op: r.op, flags: r.flags, ud: None };
                        let got = sq.post_straight(&mut buf, &wr).map(|r| match r {
                            StraightRing::Block { first, block } => Ok((first, core::array::from_fn::<u64, 8, _>(|i| block.word(i)))),
                            StraightRing::Ring(r) => Err(r),
                        });
                        if got.is_none() {
                            assert_eq!(sq.indices(), (cp0, head0, tail0), "declined: indices as they were");
                            assert!(bytes(&buf) == before, "declined: no byte changed");
                        }
                        got
                    }
                    _ => None,
                };
                let res = match straight {
                    Some(Ok((first, copied))) => {
                        assert_eq!(copied, sq.block(&buf, first), "the BlueFlame block as the ring holds it");
                        Ok(Ring::BlueFlame { first, chunks: 1 })
                    }
                    Some(Err(r)) => Ok(r),
                    None => sq.post_with(&mut buf, made.len(), |i| made[i]),
                };
                match res {
                    Err(e) => {
                        assert!(e.index < made.len().max(1));
                        assert_eq!(sq.indices(), (cp0, head0, tail0), "refused: indices as they were");
                        assert!(bytes(&buf) == before, "refused: no byte changed");
                    }
                    Ok(ring) => {
                        let (cp, head, _) = sq.indices();
                        assert_eq!(head, head0.wrapping_add(made.len() as u32));
                        assert!(sq.outstanding() <= size.max_post);
                        let mut at = cp0;
                        let mut last = (0, 0);
                        for r in &made {
                            let blk = sq.block(&buf, at);
                            let c = blk[0].to_ne_bytes();
                            let w0 = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                            let w1 = u32::from_be_bytes([c[4], c[5], c[6], c[7]]);
                            assert_eq!(w0 >> 8 & 0xffff, at & 0xffff, "ctrl names its own index");
                            assert_eq!(w1 >> 8, QPN);
                            let ds = w1 & 0xff;
                            assert!(ds >= 1 && ds * 16 <= size.wqe_size, "ds {ds} within the WQE size");
                            sends.push_back((at as u16, r.wr_id));
                            last = (at, ds);
                            at = at.wrapping_add((ds * 16).div_ceil(64));
                        }
                        assert_eq!(at, cp, "indices consistent with the WQEs written");
                        assert_eq!(buf.get::<[u8; 4]>(db + 4).unwrap(), (cp & 0xffff).to_be_bytes());
                        match ring {
                            Ring::Nothing => assert!(made.is_empty()),
                            Ring::BlueFlame { first, chunks } => {
                                assert!(made.len() == 1 && bf.enabled && last.1 > 1 && chunks * 64 <= bf.buf_size.next_multiple_of(64));
                                assert_eq!(first, last.0 & (size.wqe_cnt - 1));
                            }
                            Ring::Doorbell(ctrl) => {
                                assert!(!made.is_empty());
                                assert_eq!(ctrl, sq.block(&buf, last.0)[0].to_ne_bytes());
                            }
                        }
                        assert!(bytes(&buf)[..sq_offset] == before[..sq_offset], "the receive queue is untouched");
                    }
                }
            }
            2 => {
                let n = usize::from(b.u8() % 6);
                let mut sg = [[Sge::default(); 6]; 6];
                let ks: Vec<usize> = sg.iter_mut().take(n).map(|s| sges(&mut b, s)).collect();
                let wrs: Vec<RecvWr<'_>> = ks.iter().zip(sg.iter()).map(|(&k, s)| RecvWr::new({ next_id += 1; next_id }, &s[..k])).collect();
                let h0 = rq.indices();
                match rq.post(&mut buf, &wrs) {
                    Err(_) => assert!(rq.indices() == h0 && bytes(&buf) == before),
                    Ok(()) => {
                        assert_eq!(rq.indices().0, h0.0.wrapping_add(wrs.len() as u32));
                        recvs.extend(wrs.iter().map(|w| w.wr_id));
                        assert!(bytes(&buf)[sq_offset..db] == before[sq_offset..db], "the send queue is untouched");
                    }
                }
            }
            3 => {
                let n = usize::from(b.u8() % 6);
                let mut sg = [[Sge::default(); 6]; 6];
                let ks: Vec<usize> = sg.iter_mut().take(n).map(|s| sges(&mut b, s)).collect();
                let wrs: Vec<RecvWr<'_>> = ks.iter().zip(sg.iter()).map(|(&k, s)| RecvWr::new(0, &s[..k])).collect();
                let (sb, i0) = (bytes(&sbuf), srq.indices());
                if srq.post(&mut sbuf, &wrs).is_err() {
                    assert!(srq.indices() == i0 && bytes(&sbuf) == sb);
                }
            }
            4 => {
                // A send completion for the k-th outstanding WQE retires it and those before.
                if !sends.is_empty() {
                    let k = usize::from(b.u8()) % sends.len();
                    let (ctr, id) = sends[k];
                    assert_eq!(sq.complete(ctr).wr_id, id);
                    sends.drain(..=k);
                    assert_eq!(sq.outstanding() as usize, sends.len());
                }
                if let Some(id) = recvs.pop_front() {
                    assert_eq!(rq.complete(), id);
                }
            }
            _ => {
                let _ = srq.complete(&mut sbuf, b.u8().into());
            }
        }
    }
});
