//! Send WQEs on real bytes, checked against the PRM field positions of
//! MLX5.md §5 (every multi-byte field big-endian). The ring is filled
//! with 0xee first, so that bytes libmlx5 leaves alone are seen to stay.

use super::*;
use crate::mr::AccessFlags;
use crate::wr::Sge;

const QPN: u32 = 0x00ab_cdef;
const DB: usize = 8192;

fn sq_with(qp_type: QpType, wr: u32, sge: u32, inl: u32, bf: BlueFlame) -> (SendQueue, WqBuf) {
    let lim = super::super::sizing::DeviceLimits { max_sq_desc_sz: 512, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
    let size = super::super::sizing::sq_size(&lim, qp_type, wr, sge, inl).unwrap().unwrap();
    let cfg = SqConfig { qpn: QPN, qp_type, size, sq_offset: 0, dbrec_offset: DB, sig_all: false, atomics: true, bf };
    let mut buf = WqBuf::new("test", DB + 64).unwrap();
    assert!(size.bytes() as usize <= DB);
    assert!(buf.put_bytes(0, &vec![0xee; size.bytes() as usize]));
    (SendQueue::new("test", cfg).unwrap(), buf)
}

const NO_BF: BlueFlame = BlueFlame { enabled: false, prefer: true, buf_size: 256 };
const BF: BlueFlame = BlueFlame { enabled: true, prefer: true, buf_size: 256 };

/// RC, 4 requests of 2 SGEs or 60 inline bytes: 256-byte WQEs, 16 basic blocks.
fn rc() -> (SendQueue, WqBuf) {
    sq_with(QpType::Rc, 4, 2, 0, NO_BF)
}

fn bb(buf: &WqBuf, i: usize) -> [u8; 64] {
    buf.get(i * 64).unwrap()
}

fn dbrec(buf: &WqBuf) -> [u8; 4] {
    buf.get(DB + 4).unwrap()
}

fn no_av(_: &Ah<'_>) -> Option<Av> {
    None
}

const SGE: Sge = Sge { addr: 0x1122_3344_5566_7788, length: 0x100, lkey: 0x0a0b_0c0d };
const DSEG: [u8; 16] = [0, 0, 1, 0, 0x0a, 0x0b, 0x0c, 0x0d, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88];

#[test]
fn rdma_write_bytes_and_doorbell() {
    let (mut sq, mut buf) = rc();
    assert_eq!(sq.config().size.wqe_cnt, 16);
    let wr = SendWr::rdma_write(7, &[SGE], 0xdead_beef_0000_1000, 0x4321).signaled();
    let ring = sq.post(&mut buf, &[wr], no_av).unwrap();
    let b = bb(&buf, 0);
    // ctrl: idx 0, opcode 0x08; qpn << 8 | ds 3; bytes 8..10 zero; CQ_UPDATE; imm 0.
    assert_eq!(&b[..16], &[0, 0, 0, 0x08, 0xab, 0xcd, 0xef, 3, 0, 0, 0, 0x08, 0, 0, 0, 0]);
    // raddr seg: address, rkey, reserved 0.
    assert_eq!(&b[16..32], &[0xde, 0xad, 0xbe, 0xef, 0, 0, 0x10, 0, 0, 0, 0x43, 0x21, 0, 0, 0, 0]);
    assert_eq!(&b[32..48], &DSEG);
    assert_eq!(&b[48..], &[0xee; 16], "past ds: untouched");
    assert_eq!(ring, Ring::Doorbell([0, 0, 0, 0x08, 0xab, 0xcd, 0xef, 3]));
    assert_eq!(dbrec(&buf), [0, 0, 0, 1], "cur_post 1, big-endian, at db[1]");
    assert_eq!(buf.get::<[u8; 4]>(DB), Some([0; 4]), "db[0] (receive) untouched");
    assert_eq!(sq.indices(), (1, 1, 0));
}

#[test]
fn sends_imm_inv_read_and_zero_length_sges() {
    let (mut sq, mut buf) = rc();
    let two = [Sge { length: 0, ..SGE }, SGE];
    let wrs = [
        SendWr::send_with_imm(1, &two, 0x0102_0304).flags(SendFlags::SOLICITED | SendFlags::FENCE),
        SendWr::new(2, SendOp::SendWithInv { invalidate_rkey: 0x5566_7788 }, &[]),
        SendWr::rdma_read(3, &[SGE, SGE], 0x10, 0x20),
    ];
    assert!(matches!(sq.post(&mut buf, &wrs, no_av), Ok(Ring::Doorbell(_))));
    let b = bb(&buf, 0);
    // The zero-length SGE is skipped: ds 2. Fence 0x80 | solicited 0x02; imm as sent.
    assert_eq!(&b[..16], &[0, 0, 0, 0x0b, 0xab, 0xcd, 0xef, 2, 0, 0, 0, 0x82, 1, 2, 3, 4]);
    assert_eq!(&b[16..32], &DSEG);
    assert_eq!(&b[32..], &[0xee; 32]);
    // Each WQE takes one basic block: index 1, no SGE (ds 1), rkey in imm.
    let b = bb(&buf, 1);
    assert_eq!(&b[..16], &[0, 0, 1, 0x01, 0xab, 0xcd, 0xef, 1, 0, 0, 0, 0, 0x55, 0x66, 0x77, 0x88]);
    assert_eq!(&b[16..], &[0xee; 48]);
    let b = bb(&buf, 2);
    assert_eq!(&b[..16], &[0, 0, 2, 0x10, 0xab, 0xcd, 0xef, 4, 0, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!((&b[32..48], &b[48..64]), (&DSEG[..], &DSEG[..]));
    assert_eq!(dbrec(&buf), [0, 0, 0, 3]);
}

#[test]
fn atomics_write_eight_byte_data_segments() {
    let (mut sq, mut buf) = rc();
    let wrs = [
        SendWr::compare_swap(1, &[SGE], 0x1000, 9, 0xaaaa, 0xbbbb),
        SendWr::fetch_add(2, &[SGE], 0x2000, 9, 0x0102_0304_0506_0708),
    ];
    sq.post(&mut buf, &wrs, no_av).unwrap();
    let b = bb(&buf, 0);
    assert_eq!(&b[..8], &[0, 0, 0, 0x11, 0xab, 0xcd, 0xef, 4]);
    assert_eq!(&b[32..48], &[0, 0, 0, 0, 0, 0, 0xbb, 0xbb, 0, 0, 0, 0, 0, 0, 0xaa, 0xaa], "swap, then compare");
    assert_eq!(&b[48..52], &[0, 0, 0, 8], "byte_count 8, not the SGE's 0x100");
    let b = bb(&buf, 1);
    assert_eq!(&b[..8], &[0, 0, 1, 0x12, 0xab, 0xcd, 0xef, 4]);
    assert_eq!(&b[32..48], &[1, 2, 3, 4, 5, 6, 7, 8, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee], "FA leaves compare");
    let off = SqConfig { atomics: false, ..*sq.config() };
    let mut no = SendQueue::new("test", off).unwrap();
    let e = no.post(&mut buf, &wrs[..1], no_av).unwrap_err();
    assert_eq!((e.kind(), e.index), (ErrorKind::Unsupported, 0));
}

#[test]
fn inline_pads_to_sixteen_and_wraps_at_the_ring_end() {
    let (mut sq, mut buf) = sq_with(QpType::Rc, 1, 0, 60, NO_BF);
    let size = sq.config().size;
    // 192+align16(64)=256: 4 blocks of ring, one request at a time.
    assert_eq!((size.wqe_cnt, size.max_post, size.max_inline), (4, 1, 60));
    let data: Vec<u8> = (1..=20).collect();
    sq.post(&mut buf, &[SendWr::send(1, &[]).inline(&data)], no_av).unwrap();
    let b = bb(&buf, 0);
    // ds = 1 + align16(4+20)/16 = 3; header 0x80000014.
    assert_eq!(&b[..8], &[0, 0, 0, 0x0a, 0xab, 0xcd, 0xef, 3]);
    assert_eq!(&b[16..20], &[0x80, 0, 0, 20]);
    assert_eq!(&b[20..40], &data[..]);
    assert_eq!(&b[40..], &[0xee; 24], "padding untouched");
    sq.complete(0);
    // Two more one-block WQEs put cur_post at the last block.
    for k in 1..3u16 {
        sq.post(&mut buf, &[SendWr::send(9, &[])], no_av).unwrap();
        sq.complete(k);
    }
    let data: Vec<u8> = (100..160).collect();
    let wr = SendWr::rdma_write(2, &[], 0x40, 1).inline(&data);
    sq.post(&mut buf, &[wr], no_av).unwrap();
    let b = bb(&buf, 3);
    // ctrl + raddr + header = 36 bytes; 28 bytes to the end, 32 at the start.
    assert_eq!(&b[..8], &[0, 0, 3, 0x08, 0xab, 0xcd, 0xef, 6]);
    assert_eq!(&b[32..36], &[0x80, 0, 0, 60]);
    assert_eq!(&b[36..], &data[..28]);
    assert_eq!(&bb(&buf, 0)[..32], &data[28..]);
    // 6 ds = 96 bytes: two blocks; cur_post 5.
    assert_eq!(sq.indices().0, 5);
    assert_eq!(dbrec(&buf), [0, 0, 0, 5]);
}

#[test]
fn ud_datagram_segment_and_wrapped_data_segment() {
    let (mut sq, mut buf) = sq_with(QpType::Ud, 2, 1, 0, NO_BF);
    assert_eq!(sq.config().size.wqe_cnt, 4);
    let mut av = Av { stat_rate_sl: 0x8a, rgid: [0xfe; 16], ..Default::default() };
    av.rmac = [1, 2, 3, 4, 5, 6];
    let req = |id| Req { wr_id: id, op: SendOp::Send, flags: SendFlags::SIGNALED, payload: Payload::Sges(&[SGE]), ud: Some(UdAv { av, remote_qpn: 0x12_3456, remote_qkey: 0x1111_2222 }) };
    for k in 0..3u16 {
        sq.post_with(&mut buf, 1, |_| req(u64::from(k))).unwrap();
        sq.complete(k * 2);
    }
    // Each WQE takes 2 blocks (ds 5): the third (cur_post 4) is back at
    // block 0, the fourth goes to block 2.
    sq.post_with(&mut buf, 1, |_| req(3)).unwrap();
    sq.complete(6);
    let b = bb(&buf, 0);
    assert_eq!(&b[..16], &[0, 0, 4, 0x0a, 0xab, 0xcd, 0xef, 5, 0, 0, 0, 0x08, 0, 0, 0, 0]);
    // qkey, reserved, dqp | 0x80000000, then the AH's bytes.
    assert_eq!(&b[16..32], &[0x11, 0x11, 0x22, 0x22, 0, 0, 0, 0, 0x80, 0x12, 0x34, 0x56, 0x8a, 0, 0, 0]);
    assert_eq!(&b[36..42], &[1, 2, 3, 4, 5, 6]);
    assert_eq!(&b[48..64], &[0xfe; 16]);
    assert_eq!(&bb(&buf, 1)[..16], &DSEG);
    // A UD WQE that starts at the last block: its data segment wraps to
    // the ring start (libmlx5: `if (dpseg == qend)`). Only a 1-block WQE
    // of another QP type could leave cur_post odd, so set it directly.
    let (mut sq, mut buf) = sq_with(QpType::Ud, 2, 1, 0, NO_BF);
    sq.cur_post = 3;
    sq.post_with(&mut buf, 1, |_| req(9)).unwrap();
    let b = bb(&buf, 3);
    assert_eq!(&b[..8], &[0, 0, 3, 0x0a, 0xab, 0xcd, 0xef, 5]);
    assert_eq!(&bb(&buf, 0)[..16], &DSEG, "data segment wrapped to the ring start");
    assert_eq!(&bb(&buf, 0)[16..], &[0xee; 48]);
}

#[test]
fn refused_lists_leave_everything_as_it_was() {
    let (mut sq, mut buf) = rc();
    sq.post(&mut buf, &[SendWr::send(1, &[SGE])], no_av).unwrap();
    let before: Vec<[u8; 64]> = (0..17).map(|i| bb(&buf, i)).collect();
    let idx = sq.indices();
    let three = [SGE; 3];
    let bad = [
        (SendWr::send(2, &[SGE]), SendWr::send(3, &three), ErrorKind::TooManySge),
        (SendWr::send(2, &[]), SendWr::send(3, &[]).inline(&[0; 61]), ErrorKind::InlineTooLarge),
        (SendWr::send(2, &[]), SendWr::rdma_read(3, &[], 0, 0).inline(b"x"), ErrorKind::InvalidArgument),
        (SendWr::send(2, &[]), SendWr::new(3, SendOp::LocalInv { rkey: 1 }, &[SGE]), ErrorKind::InvalidArgument),
        (SendWr::send(2, &[]), SendWr::atomic_write(3, 8, 1, [0; 8]), ErrorKind::UnsupportedOpcode),
        (SendWr::send(2, &[]), SendWr::fetch_add(3, &[SGE], 4, 1, 1), ErrorKind::InvalidArgument),
        (SendWr::send(2, &[]), SendWr::send(3, &[]).flags(SendFlags::from_bits_retain(8)), ErrorKind::InvalidArgument),
    ];
    for (ok, bad, kind) in bad {
        let e = sq.post(&mut buf, &[ok, ok, bad, ok], no_av).unwrap_err();
        assert_eq!((e.kind(), e.index), (kind, 2), "{e}");
        assert_eq!(sq.indices(), idx);
        assert!((0..17).all(|i| bb(&buf, i) == before[i]), "nothing stored ({kind:?})");
    }
}

#[test]
fn full_queue_and_retirement_by_wqe_counter() {
    let (mut sq, mut buf) = rc();
    assert_eq!(sq.config().size.max_post, 4);
    let wrs: Vec<SendWr<'_>> = (0..5).map(|i| SendWr::send(100 + i, &[SGE])).collect();
    let e = sq.post(&mut buf, &wrs, no_av).unwrap_err();
    assert_eq!((e.kind(), e.index, sq.indices()), (ErrorKind::QueueFull, 4, (0, 0, 0)));
    sq.post(&mut buf, &wrs[..3], no_av).unwrap();
    assert_eq!(sq.post(&mut buf, &wrs[..2], no_av).unwrap_err().index, 1);
    sq.post(&mut buf, &wrs[3..4], no_av).unwrap();
    assert_eq!(sq.outstanding(), 4);
    // A completion for the WQE at index 2 retires 0, 1 and 2.
    assert_eq!(sq.complete(2), SqEntry { wr_id: 102, wqe_head: 2, wr_data: 0 });
    assert_eq!(sq.outstanding(), 1);
    sq.post(&mut buf, &wrs[..3], no_av).unwrap();
    assert_eq!(sq.complete(6).wr_id, 102);
    assert_eq!(sq.outstanding(), 0);
}

#[test]
fn index_field_and_doorbell_record_wrap_at_sixteen_bits() {
    let (mut sq, mut buf) = sq_with(QpType::Rc, 1, 1, 0, NO_BF);
    for k in 0..0x1_0002u32 {
        sq.post(&mut buf, &[SendWr::send(u64::from(k), &[SGE])], no_av).unwrap();
        assert_eq!(sq.complete(k as u16).wr_id, u64::from(k));
    }
    // The last WQE had cur_post 0x10001: index field 0x0001, block 1.
    assert_eq!(&bb(&buf, 1)[..4], &[0, 0, 1, 0x0a]);
    assert_eq!(dbrec(&buf), [0, 0, 0, 2]);
}

#[test]
fn blueflame_decision_as_post_send_db() {
    let one = [SendWr::send(1, &[SGE])];
    let post = |bf: BlueFlame, wrs: &[SendWr<'_>]| {
        let (mut sq, mut buf) = sq_with(QpType::Rc, 4, 2, 60, bf);
        sq.post(&mut buf, wrs, no_av).unwrap()
    };
    assert_eq!(post(BF, &one), Ring::BlueFlame { first: 0, chunks: 1 });
    assert!(matches!(post(NO_BF, &one), Ring::Doorbell(_)), "register 0 / MLX5_SHUT_UP_BF");
    assert!(matches!(post(BF, &[one[0], one[0]]), Ring::Doorbell(_)), "two requests");
    assert!(matches!(post(BF, &[SendWr::send(1, &[])]), Ring::Doorbell(_)), "ds 1");
    let no_pref = BlueFlame { prefer: false, ..BF };
    assert!(matches!(post(no_pref, &one), Ring::Doorbell(_)), "not inline, not preferred");
    assert_eq!(post(no_pref, &[SendWr::send(1, &[]).inline(&[5; 60])]), Ring::BlueFlame { first: 0, chunks: 2 }, "ds 5");
    let small = BlueFlame { buf_size: 64, ..BF };
    assert!(matches!(post(small, &[SendWr::send(1, &[]).inline(&[5; 60])]), Ring::Doorbell(_)), "80 bytes > 64");
    assert_eq!(post(BF, &[]), Ring::Nothing);
    let (mut sq, mut buf) = sq_with(QpType::Rc, 4, 2, 60, BF);
    sq.post(&mut buf, &[SendWr::send(1, &[]).inline(&[5; 60])], no_av).unwrap();
    let w = sq.block(&buf, 16);
    assert_eq!(w[0].to_ne_bytes(), [0, 0, 0, 0x0a, 0xab, 0xcd, 0xef, 5], "block 16 is block 0");
}

#[test]
fn connected_qps_refuse_destinations_and_ud_needs_one() {
    let (mut sq, mut buf) = sq_with(QpType::Ud, 2, 1, 0, NO_BF);
    let e = sq.post(&mut buf, &[SendWr::send(1, &[SGE])], no_av).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = sq.post_with(&mut buf, 1, |_| Req { wr_id: 0, op: SendOp::RdmaWrite { remote_addr: 0, rkey: 0 }, flags: SendFlags::empty(), payload: Payload::Sges(&[]), ud: None }).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnsupportedOpcode);
    let small = WqBuf::new("test", 64).unwrap();
    let (mut sq, _) = rc();
    let mut small = small;
    assert_eq!(sq.post(&mut small, &[], no_av).unwrap_err().kind(), ErrorKind::InvalidArgument, "buffer too small");
}

#[test]
fn checks_agree_with_the_provider_independent_ones() {
    // `check` restates wr::check_send on the lowered request; for
    // connected QPs and the opcodes mlx5 writes, both must judge alike.
    use crate::wr::check_send;
    let one = [SGE];
    let short = [Sge { length: 4, ..SGE }];
    let big = [Sge { length: u32::MAX, ..SGE }, Sge { length: u32::MAX, ..SGE }];
    let wrs = [
        SendWr::send(1, &one),
        SendWr::send(1, &[SGE; 3]),
        SendWr::send(1, &[]).inline(&[1; 60]),
        SendWr::send(1, &[]).inline(&[1; 61]),
        SendWr::send(1, &big),
        SendWr::rdma_read(1, &one, 8, 1),
        SendWr::rdma_read(1, &[], 8, 1).inline(b"ab"),
        SendWr::compare_swap(1, &one, 16, 1, 2, 3),
        SendWr::compare_swap(1, &one, 12, 1, 2, 3),
        SendWr::fetch_add(1, &short, 16, 1, 2),
        SendWr::fetch_add(1, &[], 16, 1, 2).inline(&[0; 8]),
        SendWr::rdma_write_with_imm(1, &one, 0, 0, 5).flags(SendFlags::all()),
        SendWr::send(1, &one).flags(SendFlags::from_bits_retain(1 << 4)),
        SendWr::new(1, SendOp::SendWithInv { invalidate_rkey: 3 }, &one),
    ];
    for t in [QpType::Rc, QpType::Uc] {
        for wr in &wrs {
            let (mut sq, mut buf) = sq_with(t, 4, 2, 60, NO_BF);
            let ours = sq.post(&mut buf, core::slice::from_ref(wr), no_av).map(|_| ()).map_err(|e| e.kind());
            let common = check_send(wr, t, 2, 60).map(|_| ()).map_err(|r| r.0);
            assert_eq!(ours, common, "{t:?} {wr:?}");
        }
    }
}

#[test]
fn local_invalidate_is_a_umr_wqe_and_fences_the_next() {
    let (mut sq, mut buf) = rc();
    let wrs = [SendWr::new(1, SendOp::LocalInv { rkey: 0x1122_3344 }, &[]), SendWr::send(2, &[SGE])];
    sq.post(&mut buf, &wrs, no_av).unwrap();
    let b = bb(&buf, 0);
    // opcode UMR 0x25, ds 1 + 3 + 4 = 8; the rkey in imm.
    assert_eq!(&b[..16], &[0, 0, 0, 0x25, 0xab, 0xcd, 0xef, 8, 0, 0, 0, 0, 0x11, 0x22, 0x33, 0x44]);
    // UMR control: INLINE | TRANSLATION_OFFSET | CHECK_QPN, no KLM, mask FREE | MKEY | QPN.
    assert_eq!(&b[16..32], &[0x98, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0x60, 0]);
    assert_eq!(&b[32..64], &[0; 32]);
    // mkey context: FREE, key 0xffffff00; every other byte as the ring had it.
    let m = bb(&buf, 1);
    assert_eq!(&m[..8], &[0x40, 0xee, 0xee, 0xee, 0xff, 0xff, 0xff, 0x00]);
    assert_eq!(&m[8..], &[0xee; 56]);
    // The next WQE starts two blocks on and carries the small initiator fence.
    assert_eq!(&bb(&buf, 2)[..12], &[0, 0, 2, 0x0a, 0xab, 0xcd, 0xef, 2, 0, 0, 0, 0x20]);
    assert_eq!(sq.complete(0), SqEntry { wr_id: 1, wqe_head: 0, wr_data: 6 }, "IBV_WC_LOCAL_INV for the CQE");
    let e = sq.post(&mut buf, &[SendWr::new(1, SendOp::LocalInv { rkey: 1 }, &[SGE])], no_av).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "carries no data");
    let (mut uc, mut ubuf) = sq_with(QpType::Uc, 4, 2, 0, NO_BF);
    let e = uc.post(&mut ubuf, &wrs[..1], no_av).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnsupportedOpcode, "RC only");
}

#[test]
fn bind_segments() {
    use super::umr::BindParams;
    let (sq, mut buf) = rc();
    let p = BindParams { rkey: 0xabcd_ef12, mr_lkey: 0x55, addr: 0x1000, length: 0x2000, access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ, type1: false };
    assert_eq!(sq.write_umr(&mut buf, 16, Some(p)), 192);
    let b = bb(&buf, 0);
    // CHECK_FREE added; 4 octowords of KLM; LEN | START_ADDR | the four access bits too.
    assert_eq!(&b[16..32], &[0xb0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0x20, 0x3c, 0x60, 0x41]);
    let m = bb(&buf, 1);
    // free 0, access REMOTE_WRITE 0x20 | REMOTE_READ 0x10, tag 0x12 of the new key, QP 0xabcdef.
    assert_eq!(&m[..8], &[0, 0xee, 0x30, 0xee, 0xab, 0xcd, 0xef, 0x12]);
    assert_eq!(&m[8..16], &[0xee; 8]);
    assert_eq!(&m[16..32], &[0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x20, 0]);
    let k = bb(&buf, 2);
    assert_eq!(&k[..16], &[0, 0, 0x20, 0, 0, 0, 0, 0x55, 0, 0, 0, 0, 0, 0, 0x10, 0]);
    assert_eq!(&k[16..], &[0; 48]);
    let zb = BindParams { access: AccessFlags::ZERO_BASED | AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC, ..p };
    sq.write_umr(&mut buf, 16, Some(zb));
    let m = bb(&buf, 1);
    assert_eq!((m[2], &m[16..24]), (0x48, &[0u8; 8][..]), "LOCAL_WRITE 0x08 | ATOMIC 0x40; zero-based start");
}

#[test]
fn type1_bind_and_unbind_segments() {
    use super::umr::BindParams;
    let (sq, mut buf) = rc();
    let p = BindParams { rkey: 0xabcd_ef12, mr_lkey: 0x55, addr: 0x1000, length: 0x2000, access: AccessFlags::REMOTE_READ, type1: true };
    assert_eq!(sq.write_umr(&mut buf, 16, Some(p)), 192);
    let b = bb(&buf, 0);
    // no CHECK_FREE (0x90 = INLINE | TRANSLATION_OFFSET); mask without QPN (1 << 14): 0x20 0x3c 0x20 0x41
    assert_eq!(&b[16..32], &[0x90, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0x20, 0x3c, 0x20, 0x41]);
    let m = bb(&buf, 1);
    // owner all ones (bound to no QP), tag 0x12
    assert_eq!(&m[4..8], &[0xff, 0xff, 0xff, 0x12]);
    // the unbind (length 0): no CHECK_QPN either (libmlx5 sets it for type 2 only), FREE | MKEY
    let (sq, mut buf) = rc();
    let u = BindParams { length: 0, access: AccessFlags::empty(), ..p };
    sq.write_umr(&mut buf, 16, Some(u));
    let b = bb(&buf, 0);
    assert_eq!(&b[16..32], &[0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0x20, 0]);
    // the type 2 unbind (a local invalidate) keeps CHECK_QPN (0x08) and the QPN mask bit
    let (sq, mut buf) = rc();
    sq.write_umr(&mut buf, 16, None);
    let b = bb(&buf, 0);
    assert_eq!(&b[16..32], &[0x98, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x20, 0, 0x60, 0]);
}

/// The table's "driver data" mark (`plain_entries`, which lets a poll's
/// run skip the per-completion `wr_data` test) is set by the first WQE
/// with driver data, whichever way it was posted, and never cleared:
/// plain WQEs (general or straight), a refused list and a reset leave it
/// as it was.
#[test]
fn plain_entries_until_a_wqe_with_driver_data() {
    let plain = |sq: &SendQueue| sq.plain_entries().map(|(e, m)| (e.len(), m));
    let (mut sq, mut buf) = rc();
    let wqes = sq.config().size.wqe_cnt as usize;
    assert_eq!(plain(&sq), Some((wqes, wqes - 1)), "a new queue: all entries, masked by wqe_cnt - 1");
    sq.post(&mut buf, &[SendWr::send(1, &[SGE]), SendWr::rdma_write(2, &[SGE], 0x2000, 5)], no_av).unwrap();
    assert!(sq.post_straight(&mut buf, &SendWr::send(3, &[SGE])).is_some());
    // Refused whole (the second carries data it may not): nothing written.
    let bad = [SendWr::new(4, SendOp::LocalInv { rkey: 1 }, &[]), SendWr::new(5, SendOp::LocalInv { rkey: 1 }, &[SGE])];
    assert!(sq.post(&mut buf, &bad, no_av).is_err());
    assert_eq!(plain(&sq), Some((wqes, wqes - 1)), "plain WQEs and a refused list leave it");
    sq.complete(2);
    // After a plain WQE in the same list, as the poll sees a mixed queue.
    sq.post(&mut buf, &[SendWr::send(6, &[SGE]), SendWr::new(7, SendOp::LocalInv { rkey: 1 }, &[])], no_av).unwrap();
    assert_eq!(plain(&sq), None, "a local invalidate's IBV_WC_LOCAL_INV");
    // (The next WQE inherits the fence: the general path's.)
    sq.post(&mut buf, &[SendWr::send(8, &[SGE])], no_av).unwrap();
    assert!(sq.post_straight(&mut buf, &SendWr::send(9, &[SGE])).is_some());
    sq.reset();
    assert_eq!(plain(&sq), None, "kept by plain posts and a reset");
    let (mut raw, mut rbuf) = rc();
    let mut wqe = [0u8; 32];
    wqe[3] = OPCODE_SEND;
    wqe[4..8].copy_from_slice(&(0xabcdef_u32 << 8 | 2).to_be_bytes());
    raw.post_raw(&mut rbuf, &wqe, 9).unwrap();
    assert_eq!(plain(&raw), None, "a raw WQE's IBV_WC_DRIVER2");
}
