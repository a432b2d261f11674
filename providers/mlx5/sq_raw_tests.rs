//! Raw WQEs on real bytes: copied as given but for the index, across the
//! ring's end, completed as `IBV_WC_DRIVER2`; refusals write nothing.

use super::*;

const QPN: u32 = 0x00ab_cdef;
const DB: usize = 8192;

/// RC, 4 requests of 2 SGEs: 256-byte WQEs, 16 basic blocks; the ring
/// filled with 0xee.
fn rc() -> (SendQueue, WqBuf) {
    let lim = super::super::super::sizing::DeviceLimits { max_sq_desc_sz: 512, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
    let size = super::super::super::sizing::sq_size(&lim, QpType::Rc, 4, 2, 0).unwrap().unwrap();
    let bf = BlueFlame { enabled: false, prefer: true, buf_size: 256 };
    let cfg = SqConfig { qpn: QPN, qp_type: QpType::Rc, size, sq_offset: 0, dbrec_offset: DB, sig_all: false, atomics: true, bf };
    let mut buf = WqBuf::new("test", DB + 64).unwrap();
    assert!(buf.put_bytes(0, &vec![0xee; size.bytes() as usize]));
    (SendQueue::new("test", cfg).unwrap(), buf)
}

/// A SEND with `ds - 1` data segments, as pyverbs' `Wqe` lays it out
/// (index field left 0 by the caller), each byte of the segments distinct.
fn send_wqe(ds: u32, qpn: u32) -> Vec<u8> {
    let mut w = vec![0u8; ds as usize * 16];
    w[..4].copy_from_slice(&u32::from(OPCODE_SEND).to_be_bytes());
    w[4..8].copy_from_slice(&(qpn << 8 | ds).to_be_bytes());
    w[11] = 0x08; // CQ_UPDATE
    for (i, b) in w[16..].iter_mut().enumerate() {
        *b = (i as u8).wrapping_add(1);
    }
    w
}

#[test]
fn copied_with_the_index_and_completed_as_driver2() {
    let (mut sq, mut buf) = rc();
    let wqe = send_wqe(3, QPN);
    let ring = sq.post_raw(&mut buf, &wqe, 0x77).unwrap();
    let b: [u8; 64] = buf.get(0).unwrap();
    assert_eq!(&b[..48], &wqe[..], "index 0: the bytes as given");
    assert_eq!(&b[48..], &[0xee; 16], "past ds: untouched");
    assert_eq!(ring, Ring::Doorbell([0, 0, 0, OPCODE_SEND, 0xab, 0xcd, 0xef, 3]));
    assert_eq!(buf.get::<[u8; 4]>(DB + 4), Some([0, 0, 0, 1]), "cur_post 1 in the doorbell record");
    // The second lands in block 1 and carries index 1, whatever the caller wrote there.
    let mut second = send_wqe(2, QPN);
    second[1] = 0x55;
    sq.post_raw(&mut buf, &second, 0x88).unwrap();
    let b: [u8; 64] = buf.get(64).unwrap();
    assert_eq!(&b[..4], &[0, 0, 1, OPCODE_SEND]);
    assert_eq!(&b[4..32], &second[4..]);
    assert_eq!(sq.complete(0), SqEntry { wr_id: 0x77, wqe_head: 0, wr_data: WC_DRIVER2 });
    assert_eq!(sq.complete(1), SqEntry { wr_id: 0x88, wqe_head: 1, wr_data: WC_DRIVER2 });
    assert_eq!(sq.indices(), (2, 2, 2));
}

#[test]
fn a_wqe_at_the_end_of_the_ring_wraps_to_its_start() {
    let (mut sq, mut buf) = rc();
    for i in 0..15 {
        sq.post_raw(&mut buf, &send_wqe(4, QPN), i).unwrap();
        sq.complete(i as u16);
    }
    // Block 15 is the last: 128 bytes go to blocks 15 and 0.
    let wqe = send_wqe(8, QPN);
    sq.post_raw(&mut buf, &wqe, 99).unwrap();
    let last: [u8; 64] = buf.get(15 * 64).unwrap();
    let first: [u8; 64] = buf.get(0).unwrap();
    assert_eq!(&last[..4], &[0, 0, 15, OPCODE_SEND]);
    assert_eq!(&last[4..], &wqe[4..64]);
    assert_eq!(&first[..], &wqe[64..128]);
    assert_eq!(sq.indices().0, 17);
    assert_eq!(sq.complete(15).wr_id, 99);
}

#[test]
fn refusals_write_nothing() {
    let (mut sq, mut buf) = rc();
    let check = |sq: &mut SendQueue, buf: &mut WqBuf, wqe: &[u8], kind: ErrorKind| {
        assert_eq!(sq.post_raw(buf, wqe, 1).unwrap_err().kind(), kind);
        assert_eq!(buf.get::<[u8; 64]>(0), Some([0xee; 64]));
        assert_eq!(sq.indices(), (0, 0, 0));
    };
    let mut umr = send_wqe(2, QPN);
    umr[3] = OPCODE_UMR;
    check(&mut sq, &mut buf, &umr, ErrorKind::Unsupported);
    let mut opmod = send_wqe(2, QPN);
    opmod[0] = 1;
    check(&mut sq, &mut buf, &opmod, ErrorKind::Unsupported);
    check(&mut sq, &mut buf, &send_wqe(2, QPN + 1), ErrorKind::InvalidArgument);
    check(&mut sq, &mut buf, &send_wqe(2, QPN)[..20], ErrorKind::InvalidArgument);
    check(&mut sq, &mut buf, &send_wqe(2, QPN)[..8], ErrorKind::InvalidArgument);
    let mut none = send_wqe(1, QPN);
    none[7] = 0;
    check(&mut sq, &mut buf, &none, ErrorKind::InvalidArgument);
    check(&mut sq, &mut buf, &send_wqe(17, QPN), ErrorKind::InvalidArgument);
    // A full queue: 4 outstanding.
    for i in 0..4 {
        sq.post_raw(&mut buf, &send_wqe(2, QPN), i).unwrap();
    }
    assert_eq!(sq.post_raw(&mut buf, &send_wqe(2, QPN), 5).unwrap_err().kind(), ErrorKind::QueueFull);
}
