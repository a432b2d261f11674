//! Send-queue slots are reused by requests of other opcodes, and the
//! in-place poll.
//!
//! A send WQE is written field by field: only what its opcode uses, plus
//! the fields the kernel would otherwise read stale (`status`, `state`,
//! `iova`, `has_rd_atomic`, the DMA state). These tests make every slot of
//! a small send ring carry each opcode in turn, many times round, and
//! check every result, so a field left over from the slot's previous
//! request would show.

use super::rig::{init_attr, is_siw, open_dev, rc_pair_on, wait, ALL_ACCESS};
use verbs::qp::QpCap;
use verbs::wr::{RecvWr, SendFlags, SendOp, SendWr, Sge};
use verbs::{Cq, Mr, Pd, WcOpcode, WcStatus};

const SIG: SendFlags = SendFlags::SIGNALED;

fn every_opcode_reuses_every_send_slot(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    // A small send queue, so that 7 opcodes x 6 rounds wrap it many times.
    let cap = QpCap { max_send_wr: 3, max_recv_wr: 16, max_send_sge: 2, max_recv_sge: 2, max_inline_data: 64 };
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, cap), init_attr(&scq, &rcq, None, cap));
    let slots = a.mapped_queue_slots().0;
    // siw (iWARP) has neither immediate data nor atomics: SEND with one
    // SGE, an inline RDMA WRITE and a second RDMA READ take their turns.
    let siw = is_siw(&ctx);
    let abuf = vec![0u8; 4096];
    let bbuf = vec![0u8; 4096];
    let mut amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let mut bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let (raddr, rkey) = (bmr.addr(), bmr.rkey());
    let mut counter = 1000u64; // the remote atomic's value, tracked here
    bmr.write_at(0, &counter.to_ne_bytes()).unwrap();
    let rounds = 6 * 7;
    for i in 0..rounds as u64 {
        let tag = (i as u8).wrapping_mul(31).wrapping_add(7);
        amr.fill(512, 64, tag).unwrap();
        let src = [Sge::from_mr(&amr, 512, 40), Sge::from_mr(&amr, 552, 24)];
        let land = [Sge::from_mr(&amr, 1024, 64)];
        let old = [Sge::from_mr(&amr, 2048, 8)];
        let rbuf = [Sge::from_mr(&bmr, 1024, 64)];
        let inline = [tag; 64];
        let one = [Sge::from_mr(&amr, 512, 64)];
        let (wr, expect_recv, opcode) = match i % 7 {
            0 => (SendWr::send(i, &src), true, WcOpcode::Send),
            1 if siw => (SendWr::send(i, &one), true, WcOpcode::Send),
            1 => (SendWr::new(i, SendOp::SendWithImm { imm: i as u32 }, &src), true, WcOpcode::Send),
            2 => (SendWr::rdma_write(i, &src, raddr + 1024, rkey), false, WcOpcode::RdmaWrite),
            3 => (SendWr::rdma_read(i, &land, raddr + 1024, rkey), false, WcOpcode::RdmaRead),
            4 if siw => (SendWr::rdma_write(i, &[], raddr + 1024, rkey).inline(&inline), false, WcOpcode::RdmaWrite),
            4 => (SendWr::new(i, SendOp::AtomicFetchAdd { remote_addr: raddr, rkey, add: i }, &old), false, WcOpcode::FetchAdd),
            5 if siw => (SendWr::rdma_read(i, &land, raddr + 1024, rkey), false, WcOpcode::RdmaRead),
            5 => (
                SendWr::new(i, SendOp::AtomicCmpSwp { remote_addr: raddr, rkey, compare: counter, swap: counter + 1 }, &old),
                false,
                WcOpcode::CompSwap,
            ),
            _ => (SendWr::send(i, &[]).inline(&inline), true, WcOpcode::Send),
        };
        if expect_recv {
            b.post_recv(&[RecvWr::new(0x1000 + i, &rbuf)]).expect("ibv_post_recv");
        }
        a.post_send(&[wr.flags(SIG)]).unwrap_or_else(|e| panic!("request {i}: {e}"));
        let c = wait(&scq, 1);
        assert_eq!((c[0].wr_id(), c[0].status(), c[0].opcode()), (i, WcStatus::Success, opcode), "request {i}");
        if expect_recv {
            let r = wait(&rcq, 1);
            assert_eq!((r[0].wr_id(), r[0].status(), r[0].byte_len()), (0x1000 + i, WcStatus::Success, 64));
            assert_eq!(r[0].imm_data(), (i % 7 == 1 && !siw).then_some(i as u32), "request {i}");
        }
        let mut got = [0u8; 64];
        match i % 7 {
            0 | 1 | 6 => {
                bmr.read_at(1024, &mut got).unwrap();
                assert_eq!(got, [tag; 64], "request {i}: the peer holds the 64 bytes sent");
            }
            2 => assert_eq!(landed(&bmr, siw, [tag; 64]), [tag; 64], "request {i}: the peer holds the 64 bytes written"),
            4 if siw => assert_eq!(landed(&bmr, siw, [tag; 64]), [tag; 64], "request {i}: the peer holds the 64 bytes written"),
            3 | 5 if siw || i % 7 == 3 => {
                amr.read_at(1024, &mut got).unwrap();
                let mut want = [0u8; 64];
                bmr.read_at(1024, &mut want).unwrap();
                assert_eq!(got, want, "request {i}: READ brought the peer's bytes");
            }
            _ => {
                assert_eq!(amr.read_u64(2048).unwrap(), counter, "request {i}: the old value came back");
                counter += if i % 7 == 4 { i } else { 1 };
                assert_eq!(bmr.read_u64(0).unwrap(), counter, "request {i}: the peer's value changed");
            }
        }
    }
    assert!(rounds as u32 > 3 * slots, "{rounds} requests went round a {slots}-slot ring at least 3 times");
}

/// The 64 bytes at offset 1024 of the peer's region after an RDMA WRITE
/// of `want` completed. rxe completes a WRITE when the peer acknowledged
/// it, so the bytes are there; siw (iWARP does not acknowledge writes)
/// completes it once handed to TCP, so they may land a little later: on
/// siw, read again until they are `want`, for up to 10 s.
fn landed(bmr: &Mr<'_, Vec<u8>>, siw: bool, want: [u8; 64]) -> [u8; 64] {
    let mut got = [0u8; 64];
    bmr.read_at(1024, &mut got).unwrap();
    let t0 = std::time::Instant::now();
    while siw && got != want && t0.elapsed().as_secs() < 10 {
        std::thread::sleep(core::time::Duration::from_millis(5));
        bmr.read_at(1024, &mut got).unwrap();
    }
    got
}

fn poll_with_hands_out_completions_in_place(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 64, None, 0).unwrap();
    let cap = QpCap { max_send_wr: 16, max_recv_wr: 16, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let (mut a, _b, _conn) = rc_pair_on(&pd, init_attr(&cq, &cq, None, cap), init_attr(&cq, &cq, None, cap));
    let abuf = vec![0u8; 256];
    let bbuf = vec![0u8; 256];
    let amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    assert_eq!(cq.poll_with(8, |_| panic!("an empty CQ has nothing to hand out")).unwrap(), 0);

    let s = [Sge::from_mr(&amr, 0, 8)];
    let mut seen = Vec::new();
    // 1: the single-slot path of rxe's poll_with (a constant `max` of 1,
    // as in a latency loop, is the same code once inlined).
    for max in [3usize, 2, 1] {
        // Five completions, taken at most `max` per call.
        let wrs: Vec<_> =
            (0..5).map(|i| SendWr::rdma_write(100 + i, &s, bmr.addr(), bmr.rkey()).flags(SIG)).collect();
        a.post_send(&wrs).expect("ibv_post_send");
        let (t0, start) = (std::time::Instant::now(), seen.len());
        while seen.len() < start + 5 {
            let before = seen.len();
            let n = cq.poll_with(max, |wc| seen.push((wc.wr_id(), wc.status(), wc.opcode(), wc.qp_num()))).unwrap();
            assert!(n <= max, "{n} completions for max {max}");
            assert_eq!(seen.len() - before, n, "one call of f per completion");
            assert!(t0.elapsed().as_secs() < 30, "completions did not arrive: {seen:?}");
        }
    }
    let want: Vec<_> =
        [100, 101, 102, 103, 104].repeat(3).into_iter().map(|id| (id, WcStatus::Success, WcOpcode::RdmaWrite, a.qp_num())).collect();
    assert_eq!(seen, want, "in order, each once");
    assert_eq!(cq.poll_with(8, |_| panic!("taken twice")).unwrap(), 0, "the slots were freed");
    assert_eq!(cq.poll_with(0, |_| panic!("max 0")).unwrap(), 0);
}

/// Zero-length requests (no SGE) take the straight path of `post_send`;
/// a two-SGE request, the general path; alternating them through a small
/// send ring checks that each leaves its slot as the other expects.
fn zero_length_and_two_sge_requests_share_slots(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let cap = QpCap { max_send_wr: 3, max_recv_wr: 16, max_send_sge: 2, max_recv_sge: 1, max_inline_data: 0 };
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, cap), init_attr(&scq, &rcq, None, cap));
    let abuf = vec![0u8; 256];
    let bbuf = vec![0u8; 256];
    let mut amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    // siw has no immediate data: zero-length SEND, zero-length RDMA WRITE
    // (no receive consumed) and two-SGE SEND.
    let siw = is_siw(&ctx);
    for i in 0..24u64 {
        let rbuf = [Sge::from_mr(&bmr, 0, 64)];
        let consumes = !(siw && i % 3 == 1);
        if consumes {
            b.post_recv(&[RecvWr::new(0x100 + i, &rbuf)]).expect("ibv_post_recv");
        }
        let imm = 0xa000 + i as u32;
        let tag = i as u8 + 1;
        amr.fill(0, 64, tag).unwrap();
        let two = [Sge::from_mr(&amr, 0, 16), Sge::from_mr(&amr, 16, 8)];
        let (wr, len, opcode) = match i % 3 {
            0 if siw => (SendWr::send(i, &[]), 0, verbs::WcOpcode::Recv),
            0 => (SendWr::new(i, SendOp::SendWithImm { imm }, &[]), 0, verbs::WcOpcode::Recv),
            1 if siw => (SendWr::rdma_write(i, &[], bmr.addr() + 128, bmr.rkey()), 0, verbs::WcOpcode::RecvRdmaWithImm),
            1 => (
                SendWr::new(i, SendOp::RdmaWriteWithImm { remote_addr: bmr.addr() + 128, rkey: bmr.rkey(), imm }, &[]),
                0,
                verbs::WcOpcode::RecvRdmaWithImm,
            ),
            _ if siw => (SendWr::send(i, &two), 24, verbs::WcOpcode::Recv),
            _ => (SendWr::new(i, SendOp::SendWithImm { imm }, &two), 24, verbs::WcOpcode::Recv),
        };
        a.post_send(&[wr.flags(SIG)]).unwrap_or_else(|e| panic!("request {i}: {e}"));
        let c = wait(&scq, 1);
        assert_eq!((c[0].wr_id(), c[0].status()), (i, WcStatus::Success), "request {i}");
        if !consumes {
            continue;
        }
        let r = wait(&rcq, 1);
        assert_eq!((r[0].wr_id(), r[0].status(), r[0].opcode()), (0x100 + i, WcStatus::Success, opcode), "request {i}");
        assert_eq!((r[0].byte_len(), r[0].imm_data()), (len, (!siw).then_some(imm)), "request {i}");
        if len > 0 {
            let mut got = [0u8; 24];
            bmr.read_at(0, &mut got).unwrap();
            assert_eq!(got, [tag; 24], "request {i}: both SGEs arrived");
        }
    }
}

/// The copying poll takes batches that run past the end of a small CQ
/// ring (its two-run copy), in order, each completion once.
fn copying_poll_wraps_the_cq_ring(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 7, None, 0).unwrap();
    let slots = cq.ring_slots().expect("a live CQ");
    let cap = QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let (mut a, _b, _conn) = rc_pair_on(&pd, init_attr(&cq, &cq, None, cap), init_attr(&cq, &cq, None, cap));
    let abuf = vec![0u8; 64];
    let bbuf = vec![0u8; 64];
    let amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let s = [Sge::from_mr(&amr, 0, 8)];
    let mut next = 0u64;
    let rounds = 4 * slots as u64;
    let mut wc = [verbs::Wc::ZERO; 5];
    for round in 0..rounds / 5 {
        let wrs: Vec<_> = (0..5).map(|k| SendWr::rdma_write(round * 5 + k, &s, bmr.addr(), bmr.rkey()).flags(SIG)).collect();
        a.post_send(&wrs).expect("ibv_post_send");
        let (t0, mut got) = (std::time::Instant::now(), 0);
        while got < 5 {
            let n = cq.poll(&mut wc[got..]).unwrap();
            for w in &wc[got..got + n] {
                assert_eq!((w.wr_id(), w.status(), w.opcode()), (next, WcStatus::Success, verbs::WcOpcode::RdmaWrite));
                next += 1;
            }
            got += n;
            assert!(t0.elapsed().as_secs() < 30, "completions did not arrive");
        }
    }
    assert!(next > 3 * slots as u64, "{next} completions went round a {slots}-slot ring at least 3 times");
    assert_eq!(cq.poll(&mut wc).unwrap(), 0);
}

twins!(every_opcode_reuses_every_send_slot: rxe_every_opcode_reuses_every_send_slot, siw_every_opcode_reuses_every_send_slot);
twins!(poll_with_hands_out_completions_in_place: rxe_poll_with_hands_out_completions_in_place, siw_poll_with_hands_out_completions_in_place);
twins!(zero_length_and_two_sge_requests_share_slots: rxe_zero_length_and_two_sge_requests_share_slots, siw_zero_length_and_two_sge_requests_share_slots);
twins!(copying_poll_wraps_the_cq_ring: rxe_copying_poll_wraps_the_cq_ring, siw_copying_poll_wraps_the_cq_ring);
