//! The driver data as the kernel reads it, for the sizes libmlx5 gives
//! (MLX5.md §9: a 16-entry CQ is created as 31; an RC QP of 16 receives
//! of one SGE has `rq_wqe_count` 16, `rq_wqe_shift` 4).

use super::*;
use zerocopy::IntoBytes;

const LIM: DeviceLimits =
    DeviceLimits { max_sq_desc_sz: 1024, max_rq_desc_sz: 512, max_send_wqebb: 32768, max_recv_wr: 32768, max_srq_recv_wr: 32768 };

fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_ne_bytes(b[off..off + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_ne_bytes(b[off..off + 8].try_into().unwrap())
}

#[test]
fn cq_buffer_and_request() {
    let m = CqMem::new("test", 16, 64, 64).unwrap();
    assert_eq!((m.ncqe, m.kernel_cqe(), m.dbrec_offset), (32, 31, 2048));
    assert_eq!(m.buf.len(), 4096);
    // Every entry invalid (op_own 0xf0), the record zero.
    for i in 0..32 {
        assert_eq!(m.buf.get::<u8>(i * 64 + 63), Some(0xf0));
    }
    assert_eq!(m.buf.get::<u64>(2048), Some(0));
    let r = m.request();
    let b = r.as_bytes();
    assert_eq!(u64_at(b, 0), m.buf.addr());
    assert_eq!(u64_at(b, 8), m.buf.addr() + 2048);
    assert_eq!(u32_at(b, 16), 64, "cqe_size");
    assert_eq!(&b[20..], &[0; 12], "no compression, no flags, UAR page 0");
    assert!(m.ring("test", 31, 7, 1).is_ok());
    assert_eq!(m.ring("test", 63, 7, 1).unwrap_err().kind(), ErrorKind::Malformed);
    // A ring of whole pages puts the record on the next page.
    let big = CqMem::new("test", 63, 64, 64).unwrap();
    assert_eq!((big.ncqe, big.dbrec_offset, big.buf.len()), (64, 4096, 8192));
    assert!(CqMem::new("test", 1 << 24, 64, 64).is_err(), "2^24 entries hold only 2^24 - 1");
    assert!(CqMem::new("test", u32::MAX, 64, 64).is_err());
}

#[test]
fn cq_of_128_byte_entries() {
    let m = CqMem::new("test", 16, 128, 64).unwrap();
    assert_eq!((m.ncqe, m.kernel_cqe(), m.dbrec_offset, m.buf.len()), (32, 31, 4096, 8192));
    // The owner byte of each entry is the last of its 128 bytes.
    for i in 0..32 {
        assert_eq!(m.buf.get::<u8>(i * 128 + 127), Some(0xf0));
        assert_eq!(m.buf.get::<u8>(i * 128 + 63), Some(0), "first half untouched");
    }
    assert_eq!(u32_at(m.request().as_bytes(), 16), 128, "cqe_size");
    assert_eq!(m.ring("test", 31, 7, 1).unwrap().geometry(), (32, 128));
    for bad in [0, 32, 65, 100, 256] {
        assert_eq!(CqMem::new("test", 16, bad, 64).unwrap_err().kind(), ErrorKind::InvalidArgument, "{bad}");
    }
}

#[test]
fn cqe_size_choice_and_atoi() {
    assert_eq!(cqe_size("test", Some(128)).unwrap(), 128);
    assert_eq!(cqe_size("test", Some(64)).unwrap(), 64);
    assert_eq!(cqe_size("test", Some(100)).unwrap_err().kind(), ErrorKind::InvalidArgument);
    assert_eq!([atoi(b"128"), atoi(b" 64"), atoi(b"+64x"), atoi(b"-64"), atoi(b"abc"), atoi(b"")], [128, 64, 64, 0, 0, 0]);
}

#[test]
fn qp_buffer_and_request() {
    let cap = QpCap { max_send_wr: 1, max_recv_wr: 16, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let m = QpMem::new("test", &LIM, QpType::Rc, &cap, false, 64).unwrap();
    let rq = m.layout.rq.unwrap();
    let sq = m.layout.sq.unwrap();
    assert_eq!((rq.wqe_cnt, rq.wqe_shift), (16, 4));
    assert_eq!((sq.wqe_size, sq.wqe_cnt), (256, 4));
    assert_eq!(m.layout.sq_offset, 256, "send queue after the 16 x 16 B receive queue");
    assert_eq!(m.dbrec_offset, 256 + 256);
    let r = m.request(3);
    let b = r.as_bytes();
    assert_eq!((u64_at(b, 0), u64_at(b, 8)), (m.buf.addr(), m.buf.addr() + 512));
    assert_eq!((u32_at(b, 16), u32_at(b, 20), u32_at(b, 24)), (4, 16, 4), "sq_wqe_count, rq_wqe_count, rq_wqe_shift");
    assert_eq!(u32_at(b, 28), 0, "flags: never SCATTER_CQE");
    assert_eq!((u32_at(b, 32), u32_at(b, 36)), (3, 0), "uidx, bfreg_index");
    assert_eq!(&b[40..], &[0; 16]);
    let g = m.granted();
    assert_eq!((g.max_send_wr, g.max_recv_wr, g.max_send_sge, g.max_recv_sge, g.max_inline_data), (1, 16, 1, 1, 60));
    let bf = BlueFlame { enabled: true, prefer: true, buf_size: 256 };
    let (s, r) = m.queues("test", 0x100, QpType::Rc, false, false, bf).unwrap();
    assert!(s.is_some() && r.is_some());
    // With an SRQ: no receive queue, rq fields zero.
    let m = QpMem::new("test", &LIM, QpType::Ud, &cap, true, 64).unwrap();
    let b = m.request(0);
    assert_eq!((m.layout.sq_offset, b.rq_wqe_count, b.rq_wqe_shift), (0, 0, 0));
    assert!(m.queues("test", 1, QpType::Ud, false, false, bf).unwrap().1.is_none());
    let e = QpMem::new("test", &LIM, QpType::XrcSend, &cap, false, 64).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    let too_many = QpCap { max_send_sge: 100, ..cap };
    assert_eq!(QpMem::new("test", &LIM, QpType::Rc, &too_many, false, 64).unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[test]
fn srq_buffer_and_request() {
    let mut m = SrqMem::new("test", &LIM, 100, 1, 64).unwrap();
    // stride 16 + 16 -> 32; 2*100+1 = 201 -> 256 WQEs (with the wait queue).
    assert_eq!((m.size.wqe_shift, m.size.wqe_cnt, m.size.tail), (5, 256, 127));
    assert_eq!(m.kernel_attr(), (255, 1));
    assert_eq!(m.dbrec_offset, 256 * 32);
    let b = m.request(9);
    let b = b.as_bytes();
    assert_eq!((u64_at(b, 0), u64_at(b, 8)), (m.buf.addr(), m.buf.addr() + 8192));
    assert_eq!((u32_at(b, 16), u32_at(b, 24)), (0, 9), "flags, uidx");
    let srq = m.srq("test").unwrap();
    assert_eq!(srq.indices(), (0, 127, 0));
    // The free list: WQE 0 links to 1 (next_wqe_index at byte 2, big endian).
    assert_eq!(m.buf.get::<[u8; 2]>(2), Some([0, 1]));
}
