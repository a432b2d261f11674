//! CQEs on real bytes (MLX5.md §4 offsets, big-endian), through the
//! owner bit, parsing, retirement and the doorbell record.

use super::*;
use super::ring::Step;
use crate::providers::mlx5::sizing::{rq_size, sq_size, srq_size, DeviceLimits};
use crate::providers::mlx5::sq::{BlueFlame, SqConfig};
use crate::qp::QpType;
use crate::wc::{WcOpcode, WcStatus};
use crate::wr::{RecvWr, SendWr, Sge};
use zerocopy::byteorder::network_endian::{U16, U32};

const LIM: DeviceLimits = DeviceLimits { max_sq_desc_sz: 512, max_rq_desc_sz: 512, max_send_wqebb: 1 << 15, max_recv_wr: 1 << 15, max_srq_recv_wr: 1 << 15 };
const SGE: Sge = Sge { addr: 0x1000, length: 8, lkey: 1 };
const DB: usize = 8192;

/// A QP (user index 7) with send and receive queues, and an SRQ (8).
struct Qs {
    sq: SendQueue,
    rq: RecvQueue,
    qbuf: WqBuf,
    srq: Srq,
    sbuf: WqBuf,
}

impl Queues for Qs {
    fn find(&mut self, s: Source) -> Option<Target<'_>> {
        match s {
            Source::Send { rsn: 7, .. } => Some(Target::Send(&mut self.sq)),
            Source::Recv { rsn: 7, .. } => Some(Target::Recv(&mut self.rq)),
            Source::Recv { rsn: 8, .. } => Some(Target::Srq(&mut self.srq, &mut self.sbuf)),
            _ => None,
        }
    }
}

fn qs() -> Qs {
    let size = sq_size(&LIM, QpType::Rc, 8, 1, 0).unwrap().unwrap();
    let bf = BlueFlame { enabled: false, prefer: true, buf_size: 0 };
    let cfg = SqConfig { qpn: 0x42, qp_type: QpType::Rc, size, sq_offset: 4096, dbrec_offset: DB, sig_all: false, atomics: true, bf };
    let mut sbuf = WqBuf::new("t", 4096).unwrap();
    let srq = Srq::new("t", srq_size(&LIM, 4, 1).unwrap(), &mut sbuf, 2048).unwrap();
    let rq = RecvQueue::new("t", rq_size(&LIM, 8, 1, false).unwrap().unwrap(), 0, DB).unwrap();
    Qs { sq: SendQueue::new("t", cfg).unwrap(), rq, qbuf: WqBuf::new("t", DB + 8).unwrap(), srq, sbuf }
}

/// A CQ of 4 entries of `size` bytes, initialised.
fn cq(size: u32, version: u8) -> (CqRing, WqBuf) {
    let r = CqRing::new("t", 4, size, 1024, 0x77, version).unwrap();
    let mut b = WqBuf::new("t", 2048).unwrap();
    r.init(&mut b).unwrap();
    (r, b)
}

/// A CQE of `opcode` for user index 7 / QP 0x42, owner bit for pass `pass`.
fn cqe(opcode: u8, pass: u32) -> Cqe64 {
    Cqe64 { srqn_uidx: U32::new(7), sop_drop_qpn: U32::new(0x42), op_own: opcode << 4 | (pass & 1) as u8, ..Default::default() }
}

fn put(b: &mut WqBuf, size: u32, slot: u32, c: Cqe64) {
    assert!(b.put((slot * size + size - 64) as usize, c));
}

/// The general path's answer for the CQEs at `cis`, as the poll reports it: the completions in `out`,
/// or the first failure if it came before any completion (the reference the fast paths are held to).
fn general_path(r: &CqRing, b: &WqBuf, q: &mut Qs, cis: impl IntoIterator<Item = u32>, out: &mut [Wc]) -> Result<usize, &'static str> {
    let mut n = 0;
    for ci in cis {
        match r.complete_one(b, ci, q) {
            Step::Done(wc) => {
                out[n] = wc;
                n += 1;
            }
            Step::Skip => {}
            Step::Fail(why) if n == 0 => return Err(why),
            Step::Fail(_) => break,
        }
    }
    Ok(n)
}

#[test]
fn owner_bit_and_invalid_opcode() {
    let (mut r, mut b) = cq(64, 1);
    assert_eq!(b.get::<u8>(63), Some(0xf0), "init marks entries invalid");
    assert!(r.peek(&b).is_none());
    put(&mut b, 64, 0, cqe(CQE_REQ, 1));
    assert!(r.peek(&b).is_none(), "owner 1 is the second pass");
    put(&mut b, 64, 0, cqe(CQE_REQ, 0));
    assert!(r.peek(&b).is_some());
    r.ci = 4;
    assert!(r.peek(&b).is_none(), "slot 0 again, second pass wants owner 1");
    put(&mut b, 64, 0, cqe(CQE_REQ, 1));
    assert!(r.peek(&b).is_some());
    put(&mut b, 64, 0, Cqe64 { op_own: 0xf1, ..Default::default() });
    assert!(r.peek(&b).is_none(), "INVALID is never software's");
}

#[test]
fn requester_opcodes() {
    let cases = [
        (OPCODE_RDMA_WRITE, WcOpcode::RdmaWrite, 0, false),
        (OPCODE_RDMA_WRITE_IMM, WcOpcode::RdmaWrite, 0, true),
        (OPCODE_SEND, WcOpcode::Send, 0, false),
        (OPCODE_SEND_IMM, WcOpcode::Send, 0, true),
        (OPCODE_SEND_INVAL, WcOpcode::Send, 0, false),
        (OPCODE_RDMA_READ, WcOpcode::RdmaRead, 0x1234, false),
        (OPCODE_ATOMIC_CS, WcOpcode::CompSwap, 8, false),
        (OPCODE_ATOMIC_FA, WcOpcode::FetchAdd, 8, false),
    ];
    for (op, wc_op, len, imm) in cases {
        let mut c = cqe(CQE_REQ, 0);
        c.sop_drop_qpn = U32::new(u32::from(op) << 24 | 0x42);
        c.byte_cnt = U32::new(0x1234);
        c.slid = U16::new(9);
        let p = parse(&c, 1).unwrap().unwrap();
        assert_eq!(p.source, Source::Send { rsn: 7, wqe_counter: 0 });
        let w = p.wc;
        assert_eq!((w.opcode(), w.byte_len(), w.qp_num(), w.is_success()), (wc_op, len, 0x42, true), "{op:#x}");
        assert_eq!(w.wc_flags().contains(WcFlags::WITH_IMM), imm);
        assert_eq!((w.slid(), w.src_qp()), (0, 0), "responder fields stay 0");
    }
    let p = parse(&cqe(CQE_REQ, 0), 0).unwrap().unwrap();
    assert_eq!(p.source, Source::Send { rsn: 0x42, wqe_counter: 0 }, "CQE version 0 names the QP");
}

#[test]
fn responder_fields() {
    let mut c = cqe(CQE_RESP_SEND_IMM, 0);
    c.byte_cnt = U32::new(100);
    c.imm_inval_pkey = U32::new(0x0102_0304);
    c.flags_rqpn = U32::new(0x15 << 24 | 0x12_3456); // GRH 1, SL 5
    c.slid = U16::new(0xbeef);
    c.ml_path = 0xff;
    c.wqe_counter = U16::new(3);
    let w = parse(&c, 1).unwrap().unwrap().wc;
    assert_eq!((w.opcode(), w.byte_len(), w.imm_data(), w.invalidated_rkey()), (WcOpcode::Recv, 100, Some(0x0102_0304), None));
    assert_eq!((w.sl(), w.src_qp(), w.slid(), w.dlid_path_bits(), w.pkey_index()), (5, 0x12_3456, 0xbeef, 0x7f, 0x0304));
    assert!(w.wc_flags().contains(WcFlags::GRH | WcFlags::WITH_IMM));
    c.op_own = CQE_RESP_SEND_INV << 4;
    c.flags_rqpn = U32::new(0x05 << 24);
    let w = parse(&c, 1).unwrap().unwrap().wc;
    assert_eq!((w.invalidated_rkey(), w.imm_data(), w.wc_flags()), (Some(0x0102_0304), None, WcFlags::WITH_INV));
    c.op_own = CQE_RESP_WR_IMM << 4;
    assert_eq!(parse(&c, 1).unwrap().unwrap().wc.opcode(), WcOpcode::RecvRdmaWithImm);
    c.op_own = CQE_RESP_SEND << 4;
    let p = parse(&c, 1).unwrap().unwrap();
    assert_eq!((p.wc.opcode(), p.wc.wc_flags()), (WcOpcode::Recv, WcFlags::empty()));
    assert_eq!(p.source, Source::Recv { rsn: 7, srqn: 0, wqe_counter: 3 });
    assert_eq!(parse(&c, 0).unwrap().unwrap().source, Source::Recv { rsn: 0x42, srqn: 7, wqe_counter: 3 });
}

#[test]
fn error_syndromes() {
    let table = [
        (0x01, WcStatus::LocLenErr),
        (0x02, WcStatus::LocQpOpErr),
        (0x04, WcStatus::LocProtErr),
        (0x05, WcStatus::WrFlushErr),
        (0x06, WcStatus::MwBindErr),
        (0x10, WcStatus::BadRespErr),
        (0x11, WcStatus::LocAccessErr),
        (0x12, WcStatus::RemInvReqErr),
        (0x13, WcStatus::RemAccessErr),
        (0x14, WcStatus::RemOpErr),
        (0x15, WcStatus::RetryExcErr),
        (0x16, WcStatus::RnrRetryExcErr),
        (0x22, WcStatus::RemAbortErr),
        (0x03, WcStatus::GeneralErr),
        (0xff, WcStatus::GeneralErr),
    ];
    for (syn, st) in table {
        for op in [CQE_REQ_ERR, CQE_RESP_ERR] {
            let mut e = ErrCqe { srqn: U32::new(7), s_wqe_opcode_qpn: U32::new(0x0a00_0042), syndrome: syn, vendor_err_synd: 0x99, op_own: op << 4, ..Default::default() };
            e.wqe_counter = U16::new(5);
            let c: Cqe64 = zerocopy::transmute!(e);
            let p = parse(&c, 1).unwrap().unwrap();
            assert_eq!((p.wc.status(), p.wc.vendor_err(), p.wc.qp_num(), p.wc.opcode()), (st, 0x99, 0x42, WcOpcode::Send), "{syn:#x}");
        }
    }
}

#[test]
fn unsupported_kinds_and_scatter_to_cqe() {
    for op in [6, 7, 8, 11, CQE_SIG_ERR] {
        assert!(parse(&cqe(op, 0), 1).is_err(), "{op}");
    }
    assert_eq!(parse(&cqe(CQE_RESIZE_CQ, 0), 1), Ok(None));
    let mut c = cqe(CQE_RESP_SEND, 0);
    c.op_own |= INLINE_SCATTER_32;
    assert_eq!(parse(&c, 1).unwrap().unwrap().wc.status(), WcStatus::GeneralErr);
}

#[test]
fn poll_retires_unsignaled_sends_receives_and_srq_wqes() {
    let mut q = qs();
    let one = [SGE];
    // Three unsignaled sends and a signaled one: cur_post 0..3.
    let wrs: Vec<SendWr<'_>> = (0..4).map(|i| SendWr::send(10 + i, &one)).collect();
    q.sq.post(&mut q.qbuf, &wrs, |_| None).unwrap();
    q.rq.post(&mut q.qbuf, &[RecvWr::new(20, &one), RecvWr::new(21, &one)]).unwrap();
    q.srq.post(&mut q.sbuf, &[RecvWr::new(30, &one), RecvWr::new(31, &one)]).unwrap();
    let (mut r, mut b) = cq(128, 1);
    let mut send = cqe(CQE_REQ, 0);
    send.sop_drop_qpn = U32::new(u32::from(OPCODE_SEND) << 24 | 0x42);
    send.wqe_counter = U16::new(3);
    put(&mut b, 128, 0, send);
    put(&mut b, 128, 1, cqe(CQE_RESP_SEND, 0));
    let mut flush: Cqe64 = zerocopy::transmute!(ErrCqe { srqn: U32::new(7), syndrome: 5, op_own: CQE_RESP_ERR << 4, ..Default::default() });
    flush.sop_drop_qpn = U32::new(0x42);
    put(&mut b, 128, 2, flush);
    let mut s = cqe(CQE_RESP_SEND, 0);
    s.srqn_uidx = U32::new(8);
    s.wqe_counter = U16::new(1);
    put(&mut b, 128, 3, s);
    let mut out = [Wc::ZERO; 8];
    assert_eq!(q.sq.outstanding(), 4);
    assert_eq!(r.poll(&b, &mut out, &mut q).unwrap(), 4);
    assert_eq!(q.sq.outstanding(), 0, "the signaled WQE retires the three before it");
    let ids: Vec<u64> = out[..4].iter().map(|w| w.wr_id()).collect();
    assert_eq!(ids, [13, 20, 21, 31]);
    assert_eq!(out[2].status(), WcStatus::WrFlushErr);
    assert_eq!((r.ci(), b.get::<[u8; 4]>(1024)), (4, Some([0, 0, 0, 4])), "consumer index in db[0]");
    assert_eq!(q.srq.indices().1, 1, "SRQ WQE 1 is the new free-list tail");
    // Second pass: owner 1.
    put(&mut b, 128, 0, Cqe64 { wqe_counter: U16::new(0), ..cqe(CQE_RESP_SEND, 1) });
    q.rq.post(&mut q.qbuf, &[RecvWr::new(22, &one)]).unwrap();
    assert_eq!(r.poll(&b, &mut out, &mut q).unwrap(), 1);
    assert_eq!(out[0].wr_id(), 22);
    assert_eq!(r.poll(&b, &mut out, &mut q).unwrap(), 0);
}

#[test]
fn bad_cqes_are_reported_once_and_never_lose_earlier_completions() {
    let mut q = qs();
    q.rq.post(&mut q.qbuf, &[RecvWr::new(20, &[SGE])]).unwrap();
    let (mut r, mut b) = cq(64, 1);
    put(&mut b, 64, 0, cqe(CQE_RESP_SEND, 0));
    put(&mut b, 64, 1, Cqe64 { srqn_uidx: U32::new(99), ..cqe(CQE_RESP_SEND, 0) });
    put(&mut b, 64, 2, cqe(CQE_RESIZE_CQ, 0));
    put(&mut b, 64, 3, cqe(CQE_NO_PACKET, 0));
    let mut out = [Wc::ZERO; 4];
    assert_eq!(r.poll(&b, &mut out, &mut q).unwrap(), 1, "stops before the unknown user index");
    let e = r.poll(&b, &mut out, &mut q).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Malformed);
    // The resize CQE is skipped, the tag-matching one refused.
    assert_eq!(r.poll(&b, &mut out, &mut q).unwrap_err().kind(), ErrorKind::Malformed);
    assert_eq!((r.ci(), r.poll(&b, &mut out, &mut q).unwrap()), (4, 0));
    let mut s = cqe(CQE_RESP_SEND, 1);
    s.srqn_uidx = U32::new(8);
    s.wqe_counter = U16::new(200);
    put(&mut b, 64, 0, s);
    assert!(r.poll(&b, &mut out, &mut q).unwrap_err().detail().unwrap().contains("outside the SRQ"));
}

#[test]
fn arm_word_and_doorbell_bytes() {
    let (mut r, b) = cq(64, 1);
    r.ci = 0x0123_4567;
    // sn 0, NOT (0), ci & 0xffffff; then (v << 32 | cqn) big-endian.
    assert_eq!(r.arm(&b, false), [0x00, 0x23, 0x45, 0x67, 0, 0, 0, 0x77]);
    assert_eq!(b.get::<[u8; 4]>(1028), Some([0x00, 0x23, 0x45, 0x67]));
    r.event();
    r.event();
    r.event();
    r.event();
    r.event();
    // sn 5 & 3 = 1 at bit 28; SOLICITED 1 << 24.
    assert_eq!(r.arm(&b, true), [0x11, 0x23, 0x45, 0x67, 0, 0, 0, 0x77]);
    assert!(CqRing::new("t", 3, 64, 0, 0, 1).is_err());
    assert!(CqRing::new("t", 4, 96, 0, 0, 1).is_err());
    assert!(CqRing::new("t", 4, 64, 0, 0, 2).is_err());
}

#[test]
fn umr_completions_take_their_opcode_from_the_wqe_record() {
    let mut q = qs();
    let li = SendWr::new(5, crate::wr::SendOp::LocalInv { rkey: 9 }, &[]).signaled();
    q.sq.post(&mut q.qbuf, &[li], |_| None).unwrap();
    let (mut r, mut b) = cq(64, 1);
    let mut c = cqe(CQE_REQ, 0);
    c.sop_drop_qpn = U32::new(u32::from(OPCODE_UMR) << 24 | 0x42);
    put(&mut b, 64, 0, c);
    let mut out = [Wc::ZERO; 1];
    assert_eq!(r.poll(&b, &mut out, &mut q).unwrap(), 1);
    assert_eq!((out[0].wr_id(), out[0].opcode()), (5, WcOpcode::LocalInv));
}

/// The poll loop's own reading of requester CQEs (word by word, straight
/// into `out`) against [`parse`] and the general path ([`CqRing::complete_one`],
/// which `tests/mlx5diff.rs` holds to libmlx5): every WQE opcode byte,
/// every low `op_own` bit pattern, both CQE sizes and versions, a QP the
/// CQE names and one it does not, followed by one of the same queue or of
/// none, polled into one slot (the inline path) or two (the run,
/// `req_run`); the same completions, the same error, the same retirement.
#[test]
fn fast_requester_path_equals_the_general_one() {
    let mut compared = 0;
    for (size, version) in [(64, 1), (128, 1), (64, 0), (128, 0)] {
        for sop in 0..=255u32 {
            for low in 0..4u8 {
                // The second CQE: the same queue's (the poll's run goes on),
                // or one naming no queue (the run stops before it).
                for (named, next_named) in [(true, true), (true, false), (false, true)] {
                    let mk = |named: bool| {
                        let mut c = cqe(CQE_REQ, 0);
                        c.op_own |= low << 1;
                        let qpn = if named && version == 0 { 7 } else { 0x42 };
                        c.srqn_uidx = U32::new(0xab00_0000 | if named { 7 } else { 9 });
                        c.sop_drop_qpn = U32::new(sop << 24 | qpn);
                        c.byte_cnt = U32::new(0x1234_5678);
                        c.wqe_counter = U16::new(3);
                        c.imm_inval_pkey = U32::new(0x5566_7788);
                        c.slid = U16::new(9);
                        c
                    };
                    let run = |general: bool, slots: usize| {
                        let mut q = qs();
                        for i in 0..4 {
                            let wr = SendWr::new(100 + i, crate::wr::SendOp::Send, &[SGE]).signaled();
                            q.sq.post(&mut q.qbuf, &[wr], |_| None).unwrap();
                        }
                        let (mut r, mut b) = cq(size, version);
                        put(&mut b, size, 0, mk(named));
                        put(&mut b, size, 1, mk(next_named));
                        let mut out = [Wc::ZERO; 2];
                        let got = if general {
                            general_path(&r, &b, &mut q, 0..slots as u32, &mut out)
                        } else {
                            r.poll(&b, &mut out[..slots], &mut q).map_err(|e| e.detail().unwrap_or_default())
                        };
                        (got, out, q.sq.indices())
                    };
                    // One slot: the poll's inline path; two: its run.
                    for slots in [1, 2] {
                        let (fast, general) = (run(false, slots), run(true, slots));
                        assert_eq!(fast, general, "sop {sop:#x} op_own low {low} size {size} version {version} named {named} {next_named} slots {slots}");
                        compared += 1;
                    }
                }
            }
        }
    }
    assert_eq!(compared, 4 * 256 * 4 * 3 * 2);
}

/// The poll's run (`req_run`) over mixed requester CQEs against the
/// general path: three CQEs in a row, each of one of five opcodes (the
/// run goes on across a change of opcode, READ's byte count is the
/// CQE's, UMR is the general path's), of the run's QP, of another QP
/// number with the same user index (version 1), or naming no queue; the
/// second names a raw WQE (`IBV_WC_DRIVER2`: the general path's); from
/// index 0 and from index 3 of a ring of 4 (across its end: the run stops
/// there, the poll goes on). The same completions, the same error, the
/// same retirement.
#[test]
fn mixed_runs_equal_the_general_path() {
    let ops = [OPCODE_SEND, OPCODE_RDMA_WRITE_IMM, OPCODE_RDMA_READ, OPCODE_ATOMIC_FA, OPCODE_UMR];
    let mut raw = [0u8; 32];
    raw[3] = OPCODE_SEND;
    raw[4..8].copy_from_slice(&(0x42u32 << 8 | 2).to_be_bytes());
    raw[11] = 0x08;
    let mut compared = 0;
    for version in [1, 0] {
        for start in [0u32, 3] {
            for seq in 0..(ops.len() * 3).pow(3) {
                let kinds: Vec<(u8, usize)> = (0..3).map(|k| {
                    let x = seq / (ops.len() * 3).pow(k) % (ops.len() * 3);
                    (ops[x % ops.len()], x / ops.len())
                }).collect();
                let run = |general: bool| {
                    let mut q = qs();
                    for i in 0..4u64 {
                        if i == 1 {
                            q.sq.post_raw(&mut q.qbuf, &raw, 100 + i).unwrap();
                        } else {
                            let wr = SendWr::new(100 + i, crate::wr::SendOp::Send, &[SGE]).signaled();
                            q.sq.post(&mut q.qbuf, &[wr], |_| None).unwrap();
                        }
                    }
                    let (mut r, mut b) = cq(64, version);
                    let mut out = [Wc::ZERO; 3];
                    // To `start`: CQEs naming no queue, each an error.
                    for i in 0..start {
                        let mut c = cqe(CQE_REQ, 0);
                        c.srqn_uidx = U32::new(9);
                        c.sop_drop_qpn = U32::new(u32::from(OPCODE_SEND) << 24 | 0x99);
                        put(&mut b, 64, i, c);
                        assert!(r.poll(&b, &mut out[..1], &mut q).is_err());
                    }
                    for (k, &(op, who)) in kinds.iter().enumerate() {
                        let i = start + k as u32;
                        let mut c = cqe(CQE_REQ, i >> 2);
                        let (uidx, qpn) = match (who, version) {
                            (0, 1) => (7, 0x42),
                            (0, _) => (7, 7),
                            (1, 1) => (7, 0x43),
                            _ => (9, 9),
                        };
                        c.srqn_uidx = U32::new(0xab00_0000 | uidx);
                        c.sop_drop_qpn = U32::new(u32::from(op) << 24 | qpn);
                        c.byte_cnt = U32::new(0x1000 + i);
                        c.wqe_counter = U16::new(k as u16);
                        put(&mut b, 64, i & 3, c);
                    }
                    let got = if general {
                        general_path(&r, &b, &mut q, (0..3).map(|k| start + k), &mut out)
                    } else {
                        r.poll(&b, &mut out, &mut q).map_err(|e| e.detail().unwrap_or_default())
                    };
                    (got, out, q.sq.indices())
                };
                let (fast, general) = (run(false), run(true));
                assert_eq!(fast, general, "version {version} start {start} kinds {kinds:?}");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 2 * 2 * 15 * 15 * 15);
}
