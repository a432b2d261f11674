//! Receive and SRQ WQEs on real bytes (MLX5.md §5: data segments
//! `{be32 byte_count, be32 lkey, be64 addr}`, terminator lkey 0x100; SRQ
//! next segment with the big-endian link at byte 2).

use super::*;
use crate::providers::mlx5::sizing::{rq_size, srq_size, DeviceLimits};

const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 512, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
const DB: usize = 4096;
const SGE: Sge = Sge { addr: 0x1122_3344_5566_7788, length: 0x100, lkey: 0x0a0b_0c0d };
const DSEG: [u8; 16] = [0, 0, 1, 0, 0x0a, 0x0b, 0x0c, 0x0d, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88];
const TERM: [u8; 16] = [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];

fn filled(len: usize) -> WqBuf {
    let mut b = WqBuf::new("test", DB + 64).unwrap();
    assert!(b.put_bytes(0, &vec![0xee; len]));
    b
}

fn seg(b: &WqBuf, off: usize) -> [u8; 16] {
    b.get(off).unwrap()
}

#[test]
fn receive_wqes_terminator_and_doorbell_record() {
    let size = rq_size(&LIM, 4, 2, false).unwrap().unwrap();
    assert_eq!((size.wqe_cnt, size.wqe_shift, size.max_gs), (4, 5, 2));
    let mut rq = RecvQueue::new("test", size, 0, DB).unwrap();
    let mut b = filled(128);
    let zero = Sge { length: 0, ..SGE };
    rq.post(&mut b, &[RecvWr::new(1, &[zero, SGE]), RecvWr::new(2, &[SGE, SGE])]).unwrap();
    // WQE 0: the zero-length SGE is skipped, then the terminator.
    assert_eq!((seg(&b, 0), seg(&b, 16)), (DSEG, TERM));
    // WQE 1: two SGEs fill it, no terminator.
    assert_eq!((seg(&b, 32), seg(&b, 48)), (DSEG, DSEG));
    assert_eq!(seg(&b, 64), [0xee; 16]);
    assert_eq!(b.get::<[u8; 8]>(DB), Some([0, 0, 0, 2, 0, 0, 0, 0]), "db[0] = head, db[1] untouched");
    rq.post(&mut b, &[RecvWr::new(3, &[])]).unwrap();
    assert_eq!(seg(&b, 64), TERM);
    assert_eq!((rq.complete(), rq.complete(), rq.indices()), (1, 2, (3, 2)));
}

#[test]
fn receive_refusals_change_nothing() {
    let size = rq_size(&LIM, 4, 1, false).unwrap().unwrap();
    let mut rq = RecvQueue::new("test", size, 0, DB).unwrap();
    let mut b = filled(64);
    let e = rq.post(&mut b, &[RecvWr::new(1, &[SGE]), RecvWr::new(2, &[SGE, SGE])]).unwrap_err();
    assert_eq!((e.kind(), e.index, rq.indices()), (ErrorKind::TooManySge, 1, (0, 0)));
    assert_eq!((seg(&b, 0), b.get::<u32>(DB)), ([0xee; 16], Some(0)));
    let four = [RecvWr::new(1, &[SGE]); 5];
    let e = rq.post(&mut b, &four).unwrap_err();
    assert_eq!((e.kind(), e.index), (ErrorKind::QueueFull, 4));
    rq.post(&mut b, &four[..4]).unwrap();
    assert_eq!(rq.post(&mut b, &four[..1]).unwrap_err().kind(), ErrorKind::QueueFull);
    rq.complete();
    rq.post(&mut b, &four[..1]).unwrap();
    let small = WqBuf::new("test", 1).unwrap();
    let mut small = small;
    let big = RecvQueue::new("test", rq_size(&LIM, 512, 1, false).unwrap().unwrap(), 0, 8192);
    assert_eq!(big.unwrap().post(&mut small, &[]).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn receive_counter_wraps_at_sixteen_bits() {
    let size = rq_size(&LIM, 1, 1, false).unwrap().unwrap();
    let mut rq = RecvQueue::new("test", size, 0, DB).unwrap();
    let mut b = filled(64);
    for k in 0..0x1_0001u64 {
        rq.post(&mut b, &[RecvWr::new(k, &[SGE])]).unwrap();
        assert_eq!(rq.complete(), k);
    }
    assert_eq!(b.get::<[u8; 4]>(DB), Some([0, 0, 0, 1]));
}

#[test]
fn srq_free_list_posts_and_completions() {
    let size = srq_size(&LIM, 3, 1).unwrap();
    assert_eq!((size.wqe_cnt, size.wqe_shift, size.tail, size.waitq), (8, 5, 3, true));
    let mut b = filled(256);
    let mut srq = Srq::new("test", size, &mut b, DB).unwrap();
    // Links as set_srq_buf_ll: 0->1->2->3 (tail), wait queue 4->5->6->7.
    let link = |b: &WqBuf, i: usize| b.get::<[u8; 4]>(i * 32).unwrap();
    assert_eq!((link(&b, 0), link(&b, 2), link(&b, 4), link(&b, 6)), ([0xee, 0xee, 0, 1], [0xee, 0xee, 0, 3], [0xee, 0xee, 0, 5], [0xee, 0xee, 0, 7]));
    assert_eq!((link(&b, 3), link(&b, 7)), ([0xee; 4], [0xee; 4]), "the ends are not linked");
    let e = srq.post(&mut b, &[RecvWr::new(1, &[SGE]); 4]).unwrap_err();
    assert_eq!((e.kind(), e.index, srq.indices()), (ErrorKind::QueueFull, 3, (0, 3, 0)));
    srq.post(&mut b, &[RecvWr::new(10, &[SGE]), RecvWr::new(11, &[]), RecvWr::new(12, &[SGE])]).unwrap();
    assert_eq!((seg(&b, 16), seg(&b, 48), seg(&b, 80)), (DSEG, TERM, DSEG));
    assert_eq!(b.get::<[u8; 4]>(DB), Some([0, 0, 0, 3]));
    assert_eq!(srq.indices(), (3, 3, 3));
    let e = srq.post(&mut b, &[RecvWr::new(1, &[SGE, SGE])]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TooManySge);
    // WQE 1 completes: linked after the tail (3 -> 1), the new tail.
    assert_eq!(srq.complete(&mut b, 1), Some(11));
    assert_eq!(link(&b, 3), [0xee, 0xee, 0, 1]);
    srq.post(&mut b, &[RecvWr::new(13, &[SGE])]).unwrap();
    assert_eq!(seg(&b, 3 * 32 + 16), DSEG);
    assert_eq!(srq.indices(), (1, 1, 4));
    assert_eq!(srq.complete(&mut b, 8), None, "outside the SRQ");
    assert_eq!(srq.complete(&mut b, 3), Some(13));
}

/// The straight path writes what the general one writes for a list of
/// one (bytes of the ring, doorbell record, indices, `wr_id`), for every
/// geometry up to 2 SGEs and every shape of request, until the queue is
/// full; where it declines, the general path refuses too (or the shape is
/// not one it takes).
#[test]
fn post_one_equals_post_of_a_list_of_one() {
    let zero = Sge { length: 0, ..SGE };
    for (wr, gs) in [(4, 0), (4, 1), (8, 2), (2, 1)] {
        let Ok(Some(size)) = rq_size(&LIM, wr, gs, false) else { continue };
        for sge in [None, Some(SGE), Some(zero)] {
            let (mut a, mut b) = (RecvQueue::new("t", size, 0, DB).unwrap(), RecvQueue::new("t", size, 0, DB).unwrap());
            let (mut ba, mut bb) = (filled(DB), filled(DB));
            for i in 0..size.wqe_cnt as u64 + 1 {
                let list: &[Sge] = match &sge {
                    Some(s) => core::slice::from_ref(s),
                    None => &[],
                };
                let straight = a.post_one(&mut ba, 10 + i, sge.as_ref());
                let general = b.post(&mut bb, &[RecvWr::new(10 + i, list)]);
                assert_eq!(straight, general.is_ok(), "geometry {wr}/{gs}, {sge:?}, request {i}");
                assert_eq!(ba.get::<[u8; DB + 8]>(0), bb.get::<[u8; DB + 8]>(0));
                assert_eq!(a.indices(), b.indices());
            }
            while a.indices().1 != a.indices().0 {
                assert_eq!(a.complete(), b.complete());
            }
        }
    }
}

#[test]
fn srq_of_max_wr_0_links_nothing_and_is_full() {
    let size = srq_size(&LIM, 0, 1).unwrap();
    let mut b = filled(32);
    let mut srq = Srq::new("test", size, &mut b, DB).unwrap();
    assert_eq!(b.get::<[u8; 4]>(0), Some([0xee; 4]), "one WQE, no link written");
    let e = srq.post(&mut b, &[RecvWr::new(1, &[SGE])]).unwrap_err();
    assert_eq!((e.kind(), e.index, srq.indices()), (ErrorKind::QueueFull, 0, (0, 0, 0)));
    assert_eq!(b.get::<[u8; 4]>(DB), Some([0; 4]), "no doorbell record written");
    assert_eq!(srq.complete(&mut b, 1), None, "outside the SRQ");
}
