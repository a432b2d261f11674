//! The sizes libmlx5 v44 gives, worked out by hand from its formulas (the
//! arithmetic is in each row's comment) for a device with 512-byte send
//! and receive descriptors, 32768 basic blocks, 32768 receive WRs and
//! 32767 SRQ WRs.

use super::*;

const LIM: DeviceLimits =
    DeviceLimits { max_sq_desc_sz: 512, max_rq_desc_sz: 512, max_send_wqebb: 32768, max_recv_wr: 32768, max_srq_recv_wr: 32767 };

fn sq(t: QpType, wr: u32, sge: u32, inl: u32) -> (u32, u32, u32, u32) {
    let s = sq_size(&LIM, t, wr, sge, inl).unwrap().unwrap();
    assert_eq!(s.max_gs, sge, "max_send_sge is reported as requested");
    (s.wqe_size, s.wqe_cnt, s.max_post, s.max_inline)
}

#[test]
fn overheads() {
    // ctrl 16 + UMR ctrl 48 + mkey context 64 + KLM area 64 (BIND_MW and
    // LOCAL_INV are on by default for connected QPs); UD: ctrl + datagram.
    assert_eq!(sq_overhead(QpType::Rc), 192);
    assert_eq!(sq_overhead(QpType::Uc), 192);
    assert_eq!(sq_overhead(QpType::XrcSend), 208);
    assert_eq!(sq_overhead(QpType::Ud), 64);
}

#[test]
fn send_queue_table() {
    // (wqe_size, wqe_cnt, max_post, max_inline)
    // 192+16=208 -> 256; inline 256-192-4; 1*256 -> 256 B = 4 BB.
    assert_eq!(sq(QpType::Rc, 1, 1, 0), (256, 4, 1, 60));
    assert_eq!(sq(QpType::Uc, 1, 1, 0), (256, 4, 1, 60));
    // 100*256 = 25600 -> 32768 B = 512 BB, 32768/256 = 128.
    assert_eq!(sq(QpType::Rc, 100, 1, 0), (256, 512, 128, 60));
    // sge: 192+64=256; inline: 192+align16(4+64)=272 -> 320; 64*320=20480 -> 32768; 32768/320=102.
    assert_eq!(sq(QpType::Rc, 64, 4, 64), (320, 512, 102, 124));
    // inline 192+align16(224)=416 -> 448; 16*448=7168 -> 8192 = 128 BB; 8192/448=18.
    assert_eq!(sq(QpType::Rc, 16, 0, 220), (448, 128, 18, 252));
    // 20 SGEs fill 512 exactly: (512-192)/16 = 20; 10*512 -> 8192.
    assert_eq!(sq(QpType::Rc, 10, 20, 0), (512, 128, 16, 316));
    // largest inline: 192+align16(4+316)=512.
    assert_eq!(sq(QpType::Rc, 1, 0, 316), (512, 8, 1, 316));
    // UD: 64+16=80 -> 128; inline 128-64-4; 128 B = 2 BB.
    assert_eq!(sq(QpType::Ud, 1, 1, 0), (128, 2, 1, 60));
    // UD: sge 64+32=96, inline 64+align16(104)=176 -> 192; 500*192=96000 -> 131072 = 2048 BB; /192 = 682.
    assert_eq!(sq(QpType::Ud, 500, 2, 100), (192, 2048, 682, 124));
    // XRC: 208+16=224 -> 256; inline 256-208-4.
    assert_eq!(sq(QpType::XrcSend, 1, 1, 0), (256, 4, 1, 44));
    assert_eq!(sq_size(&LIM, QpType::Rc, 0, 4, 64), Ok(None), "no send queue");
    // No SGE, no inline: the WQE is the overhead alone (libmlx5: inline -4).
    assert_eq!(sq(QpType::Ud, 1, 0, 0), (64, 1, 1, 0));
    assert_eq!(sq(QpType::Rc, 3, 0, 0), (192, 16, 5, 0));
}

#[test]
fn send_queue_refusals() {
    assert!(sq_size(&LIM, QpType::Rc, 1, 21, 0).is_err(), "21 SGEs: 192+336 > 512");
    assert!(sq_size(&LIM, QpType::Rc, 1, 0, 317).is_err(), "inline 192+align16(321)=528 > 512");
    assert!(sq_size(&LIM, QpType::Rc, 1, 0, u32::MAX).is_err(), "inline length overflow");
    assert!(sq_size(&LIM, QpType::Rc, 32768, 1, 0).is_err(), "32768*256 B = 131072 BB > 32768");
    assert_eq!(sq(QpType::Rc, 8192, 1, 0), (256, 32768, 8192, 60), "exactly the device's limit");
    assert!(sq_size(&LIM, QpType::Rc, 0x7fff_ffff / 512 + 1, 1, 0).is_err(), "the int overflow guard");
    let tiny = DeviceLimits { max_sq_desc_sz: 128, ..LIM };
    assert!(sq_size(&tiny, QpType::Rc, 1, 0, 0).is_err(), "overhead above the descriptor size");
}

#[test]
fn receive_queue_table() {
    let rq = |wr, sge| {
        let r = rq_size(&LIM, wr, sge, false).unwrap().unwrap();
        (r.wqe_cnt, r.wqe_shift, r.max_gs, r.max_post(), r.bytes())
    };
    // 16 B WQEs; 512 of them.
    assert_eq!(rq(500, 1), (512, 4, 1, 512, 8192));
    // 1*16 = 16 B, raised to one basic block of 64 B: 4 WQEs.
    assert_eq!(rq(1, 1), (4, 4, 1, 4, 64));
    // 0 SGEs count as 1.
    assert_eq!(rq(4, 0), (4, 4, 1, 4, 64));
    // 3*16 = 48 -> 64 B stride, room for 4 entries; 16*64 = 1024.
    assert_eq!(rq(10, 3), (16, 6, 4, 16, 1024));
    // The observed rdma-core request of MLX5.md §9: 16 WQEs of 16 B.
    assert_eq!(rq(16, 1), (16, 4, 1, 16, 256));
    assert_eq!(rq(2, 32), (2, 9, 32, 2, 1024));
    assert!(rq_size(&LIM, 2, 33, false).is_err(), "33*16 > 512");
    assert!(rq_size(&LIM, 32769, 1, false).is_err(), "above max_recv_wr");
    assert_eq!(rq_size(&LIM, 16, 1, true), Ok(None), "an SRQ takes the receives");
    assert_eq!(rq_size(&LIM, 0, 1, false), Ok(None));
}

#[test]
fn qp_buffer_puts_the_send_queue_after_the_receive_queue() {
    let cap = crate::qp::QpCap { max_send_wr: 100, max_recv_wr: 500, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let l = qp_layout(&LIM, QpType::Rc, &cap, false).unwrap();
    assert_eq!((l.sq_offset, l.bytes), (8192, 8192 + 32768));
    let l = qp_layout(&LIM, QpType::Rc, &cap, true).unwrap();
    assert_eq!((l.sq_offset, l.bytes, l.rq), (0, 32768, None));
}

#[test]
fn srq_table() {
    let s = |wr, sge| {
        let s = srq_size(&LIM, wr, sge).unwrap();
        (s.wqe_shift, s.max_gs, s.wqe_cnt, s.tail, s.waitq, s.kernel_max_wr())
    };
    // 2*100+1 = 201 <= 32767: wait queue; stride max(16+16, 32) = 32;
    // 256 WQEs; tail roundup(101)-1 = 127.
    assert_eq!(s(100, 1), (5, 1, 256, 127, true, 255));
    // 40001 > 32767: no wait queue, 20001 -> 32768; 16+32 = 48 -> 64 holds 3.
    assert_eq!(s(20000, 2), (6, 3, 32768, 32767, false, 32767));
    // 3 -> 4 WQEs, tail roundup(2)-1 = 1.
    assert_eq!(s(1, 0), (5, 1, 4, 1, true, 3));
    // 16+64 = 80 -> 128 holds 7.
    assert_eq!(s(8, 4), (7, 7, 32, 15, true, 31));
    // max_wr 0 (taken, as libmlx5 does): 2*0+1 = 1 WQE, tail roundup(1)-1 =
    // 0, the kernel asked for 0.
    assert_eq!(s(0, 1), (5, 1, 1, 0, true, 0));
    assert!(srq_size(&LIM, 32768, 1).is_err());
    assert!(srq_size(&LIM, 8, 33).is_err());
}

#[test]
fn what_libmlx5_sent_to_the_simulated_device() {
    // Observed: rdma-core 44's libmlx5 over verbs-simd (scripts/sim.sh
    // --trace, 2026-11-26), whose context reports 1024-byte send and
    // 512-byte receive descriptors and 2^15 WRs everywhere. The requests
    // are the pingpongs' own: max_send_wr 1, one SGE each way, no inline,
    // rx_depth 500 receives (or an SRQ of 500).
    let sim = DeviceLimits { max_sq_desc_sz: 1024, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
    let qp = |t, srq| {
        let cap = crate::qp::QpCap { max_send_wr: 1, max_recv_wr: 500, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
        let l = qp_layout(&sim, t, &cap, srq).unwrap();
        (l.sq.unwrap().wqe_cnt, l.rq.map_or((0, 0), |r| (r.wqe_cnt, r.wqe_shift)))
    };
    // ibv_rc_pingpong / ibv_uc_pingpong: CREATE_QP sq=4 rq=512<<4.
    assert_eq!(qp(QpType::Rc, false), (4, (512, 4)));
    assert_eq!(qp(QpType::Uc, false), (4, (512, 4)));
    // ibv_ud_pingpong: sq=2 rq=512<<4.
    assert_eq!(qp(QpType::Ud, false), (2, (512, 4)));
    // ibv_srq_pingpong: sq=4 rq=0<<0, and CREATE_SRQ wqes=1024 stride=32.
    assert_eq!(qp(QpType::Rc, true), (4, (0, 0)));
    let s = srq_size(&sim, 500, 1).unwrap();
    assert_eq!((s.wqe_cnt, 1 << s.wqe_shift), (1024, 32));
}
