//! The straight path against the general writer: the same requests on
//! two identical queues, one posted straight (falling back to the general
//! path where it declines, as `Mlx5Qp::post_send` does), the other the
//! general way only, must leave the same bytes, indices, wr_id table and
//! doorbell decision; a declined request must leave its queue untouched.

use super::super::*;
use crate::ah::Ah;
use crate::providers::mlx5::sizing::{sq_size, DeviceLimits};
use crate::providers::seam::{Plain, StraightWr};
use crate::wr::Sge;

const QPN: u32 = 0x00ab_cdef;
const DB: usize = 4096;
const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 512, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };

fn queue(qp_type: QpType, sge: u32, inl: u32, sig_all: bool, bf: BlueFlame) -> (SendQueue, WqBuf) {
    queue_capped(qp_type, sge, inl, sig_all, bf, u32::MAX)
}

/// [`queue`] with `max_inline` at most `cap` (sizing grants at least 60
/// bytes: a smaller capacity caps the straight path's one-block fit).
fn queue_capped(qp_type: QpType, sge: u32, inl: u32, sig_all: bool, bf: BlueFlame, cap: u32) -> (SendQueue, WqBuf) {
    let mut size = sq_size(&LIM, qp_type, 6, sge, inl).unwrap().unwrap();
    size.max_inline = size.max_inline.min(cap);
    let cfg = SqConfig { qpn: QPN, qp_type, size, sq_offset: 0, dbrec_offset: DB, sig_all, atomics: true, bf };
    let mut buf = WqBuf::new("test", DB + 64).unwrap();
    assert!(size.bytes() as usize <= DB);
    assert!(buf.put_bytes(0, &vec![0xee; size.bytes() as usize]));
    (SendQueue::new("test", cfg).unwrap(), buf)
}

fn bytes(b: &WqBuf) -> Vec<u8> {
    (0..b.len() / 8).flat_map(|i| b.get::<[u8; 8]>(i * 8).unwrap()).collect()
}

fn state(q: &SendQueue, b: &WqBuf) -> (Vec<u8>, (u32, u32, u32), u8, Vec<SqEntry>) {
    (bytes(b), q.indices(), q.fm_cache, q.table.to_vec())
}

fn no_av(_: &Ah<'_>) -> Option<Av> {
    None
}

/// Posts `wr` straight on `a` (the general way where declined) and the
/// general way on `b`; checks they agree. Returns whether it went straight.
fn both(a: &mut (SendQueue, WqBuf), b: &mut (SendQueue, WqBuf), wr: &SendWr<'_>) -> bool {
    let before = state(&a.0, &a.1);
    let straight = a.0.post_straight(&mut a.1, wr);
    let (ra, taken) = match straight {
        Some(r) => {
            let ring = r.ring();
            let read = match r {
                StraightRing::Block { first, block } => Some((first, core::array::from_fn::<u64, 8, _>(|w| block.word(w)))),
                StraightRing::Ring(_) => None,
            };
            if let Some((first, words)) = read {
                assert_eq!(words, a.0.block(&a.1, first), "the block as the ring holds it");
            }
            (Ok(ring), true)
        }
        None => {
            assert!(state(&a.0, &a.1) == before, "a declined request stored nothing: {wr:?}");
            (a.0.post(&mut a.1, core::slice::from_ref(wr), no_av).map_err(|e| e.error.kind()), false)
        }
    };
    let rb = b.0.post(&mut b.1, core::slice::from_ref(wr), no_av).map_err(|e| e.error.kind());
    assert_eq!(ra, rb, "{wr:?} (straight: {taken})");
    assert!(state(&a.0, &a.1) == state(&b.0, &b.1), "same bytes, indices, fence and table: {wr:?} (straight: {taken})");
    taken
}

#[test]
fn straight_writes_what_the_general_path_writes() {
    let sg8 = [Sge { addr: 0x1122_3344_5566_7788, length: 8, lkey: 0xa1b2_c3d4 }];
    let sg0 = [Sge { addr: 0x1000, length: 0, lkey: 7 }];
    let sg_big = [Sge { addr: 0x1000, length: (1 << 31) + 1, lkey: 7 }];
    let sg_max = [Sge { addr: 0x1000, length: 1 << 31, lkey: 7 }];
    let sg2 = [sg8[0], Sge { addr: 0x2000, length: 16, lkey: 9 }];
    let data: [u8; 300] = core::array::from_fn(|i| i as u8 ^ 0x5a);
    let payloads: [Payload<'_>; 17] = [
        Payload::Inline(&data[..1]),
        Payload::Inline(&data[..12]),
        Payload::Inline(&data[..16]),
        Payload::Sges(&[]),
        Payload::Sges(&sg8),
        Payload::Sges(&sg0),
        Payload::Sges(&sg_big),
        Payload::Sges(&sg_max),
        Payload::Sges(&sg2),
        Payload::Inline(&[]),
        Payload::Inline(&data[..8]),
        Payload::Inline(&data[..28]),
        Payload::Inline(&data[..29]),
        // The last size a SEND's first block holds, and the first it does not.
        Payload::Inline(&data[..44]),
        Payload::Inline(&data[..45]),
        Payload::Inline(&data[..100]),
        Payload::Inline(&data[..200]),
    ];
    let ops = [
        SendOp::Send,
        SendOp::SendWithImm { imm: 0x0102_0304 },
        SendOp::SendWithInv { invalidate_rkey: 0x55 },
        SendOp::RdmaWrite { remote_addr: 0x8877_6655_4433_2211, rkey: 0xdead_beef },
        SendOp::RdmaWriteWithImm { remote_addr: 0x10, rkey: 3, imm: 0xcafe_f00d },
        SendOp::RdmaRead { remote_addr: 0x20, rkey: 4 },
        SendOp::AtomicFetchAdd { remote_addr: 0x40, rkey: 5, add: 1 },
        SendOp::LocalInv { rkey: 0x77 },
    ];
    let bfs = [
        BlueFlame { enabled: false, prefer: true, buf_size: 256 },
        BlueFlame { enabled: true, prefer: true, buf_size: 256 },
        BlueFlame { enabled: true, prefer: false, buf_size: 64 },
    ];
    let (mut taken, mut declined) = (0, 0);
    for qp_type in [QpType::Rc, QpType::Uc, QpType::Ud] {
        // (`cap`: capacities below the one-block fits, 44 bytes without a
        // remote address segment, 28 with)
        for (sge, inl, cap) in [(1, 64, u32::MAX), (2, 0, u32::MAX), (0, 8, u32::MAX), (1, 120, u32::MAX), (1, 8, 20), (1, 8, 36)] {
            for (k, bf) in bfs.iter().enumerate() {
                let sig_all = k == 1;
                let mut a = queue_capped(qp_type, sge, inl, sig_all, *bf, cap);
                let mut b = queue_capped(qp_type, sge, inl, sig_all, *bf, cap);
                let mut n = 0u64;
                // The queue's inline capacity and the sizes around it (the
                // one-block fit is capped by it).
                let max = a.0.cfg.size.max_inline as usize;
                let edge = [max.saturating_sub(1), max, max + 1].map(|m| Payload::Inline(&data[..m]));
                for op in ops {
                    for payload in payloads.into_iter().chain(edge) {
                        // Every flag combination, and an unknown bit.
                        for flags in [0u32, 1, 2, 6, 7, 8] {
                            n += 1;
                            let wr = SendWr { wr_id: n, payload, op, flags: SendFlags::from_bits_retain(flags), ud: None };
                            if both(&mut a, &mut b, &wr) {
                                taken += 1;
                            } else {
                                declined += 1;
                            }
                            // Keep room: retire everything posted, as a
                            // completion for the last WQE would.
                            let (cp, _, _) = a.0.indices();
                            if a.0.outstanding() > 2 && cp % 3 == 0 {
                                a.0.tail = a.0.head;
                                b.0.tail = b.0.head;
                            }
                        }
                    }
                }
            }
        }
    }
    assert!(taken > 500 && declined > 500, "both paths exercised: {taken} straight, {declined} declined");
}

/// The shapes the benches post go straight; a full queue, a WQE that
/// would wrap, an inherited fence, a UD queue are declined untouched.
#[test]
fn plain_shapes_go_straight_and_the_rest_is_declined() {
    let sg8 = [Sge { addr: 0x1000, length: 8, lkey: 5 }];
    let write = SendWr::rdma_write(1, &sg8, 0x2000, 6).signaled();
    let inline = SendWr { payload: Payload::Inline(&[7u8; 8]), ..write };
    let bf = BlueFlame { enabled: true, prefer: true, buf_size: 256 };
    let mut a = queue(QpType::Rc, 1, 64, false, bf);
    let mut b = queue(QpType::Rc, 1, 64, false, bf);
    assert!(both(&mut a, &mut b, &write));
    assert!(both(&mut a, &mut b, &inline));
    // The WQE: ctrl (index 0, RDMA WRITE; QPN, ds 3; CQ update), raddr, data.
    let w: [u8; 48] = a.1.get(0).unwrap();
    assert_eq!(&w[..16], &[0, 0, 0, 0x08, 0xab, 0xcd, 0xef, 3, 0, 0, 0, 0x08, 0, 0, 0, 0]);
    assert_eq!(&w[16..32], &[0, 0, 0, 0, 0, 0, 0x20, 0, 0, 0, 0, 6, 0, 0, 0, 0]);
    assert_eq!(&w[32..48], &[0, 0, 0, 8, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0x10, 0]);
    assert_eq!(a.0.table[0], SqEntry { wr_id: 1, wqe_head: 0, wr_data: 0 });
    // Fill the queue: the next is declined, and the general path says full.
    while a.0.outstanding() < a.0.cfg.size.max_post {
        assert!(both(&mut a, &mut b, &write));
    }
    assert!(!both(&mut a, &mut b, &write));
    // A local invalidate leaves a fence for the next WQE: declined once.
    (a.0.tail, b.0.tail) = (a.0.head, b.0.head);
    let inv = SendWr { payload: Payload::Sges(&[]), op: SendOp::LocalInv { rkey: 9 }, ..write };
    assert!(!both(&mut a, &mut b, &inv));
    assert!(!both(&mut a, &mut b, &write), "inherits the bind fence");
    assert!(both(&mut a, &mut b, &write));
    // A 2-block WQE at the last block would wrap: declined.
    let long = SendWr { payload: Payload::Inline(&[3u8; 60]), ..write };
    while a.0.cur_post % a.0.cfg.size.wqe_cnt != a.0.cfg.size.wqe_cnt - 1 {
        (a.0.tail, b.0.tail) = (a.0.head, b.0.head);
        assert!(both(&mut a, &mut b, &write));
    }
    (a.0.tail, b.0.tail) = (a.0.head, b.0.head);
    assert!(!both(&mut a, &mut b, &long), "would wrap the ring's end");
    assert!(both(&mut a, &mut b, &long), "from block 0 it goes straight");
    let mut u = queue(QpType::Ud, 1, 0, false, bf);
    assert!(u.0.post_straight(&mut u.1, &write).is_none(), "UD is never straight");
    // A buffer that does not hold the ring and record: declined.
    let mut small = WqBuf::new("test", 4096).unwrap();
    let mut q = queue(QpType::Rc, 1, 0, false, bf).0;
    assert!(q.post_straight(&mut small, &write).is_none());
    assert_eq!(q.indices(), (0, 0, 0));
}

/// The native request's fields as the straight path reads them.
#[test]
fn send_wr_as_a_straight_request() {
    let sg = [Sge { addr: 1, length: 2, lkey: 3 }, Sge { addr: 4, length: 5, lkey: 6 }];
    let w = SendWr::rdma_write(9, &sg[..1], 0x77, 8);
    assert_eq!((w.opcode(), w.wr_id(), w.remote(), w.ex()), (crate::abi::uverbs::WR_RDMA_WRITE, 9, (0x77, 8), 0));
    assert!(matches!(w.data(), Some(Plain::Sge(g)) if g.addr == 1));
    assert!(SendWr::rdma_write(9, &sg, 0x77, 8).data().is_none(), "two SGEs");
    let imm = SendWr { op: SendOp::SendWithImm { imm: 0x0102_0304 }, ..w };
    assert_eq!(imm.ex().to_ne_bytes(), [1, 2, 3, 4], "big-endian as on the wire");
    assert_eq!(imm.remote(), (0, 0));
}
