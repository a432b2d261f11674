//! Malformed input never panics the engine: pseudo-random WQEs (known
//! and unknown opcodes, any ds, bogus keys and lengths) on RC, UC and UD
//! QPs, random receive WQEs, with the clock moving; every posted WQE is
//! consumed and completed one way or another.

use super::*;
use crate::engine::op;

/// xorshift64: deterministic, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn random_wqes_complete_without_panics() {
    let ops = [op::NOP, op::SEND, op::SEND_IMM, op::SEND_INVAL, op::RDMA_WRITE, op::RDMA_WRITE_IMM,
        op::RDMA_READ, op::ATOMIC_CS, op::ATOMIC_FA, op::LOCAL_INVAL, op::UMR, 0x3f];
    for (seed, ty) in [(1u64, QpType::Rc), (2, QpType::Uc), (3, QpType::Ud)] {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ seed);
        let mut r = Rig::new();
        let (ca, cb) = (r.cq(A, 1024, 64), r.cq(B, 1024, 64));
        let (qa, qb) = (r.qp(A, ty, ca, 64, None), r.qp(B, ty, cb, 64, None));
        r.connect(qa, qb);
        let mut seen = [0u32; 2];
        let (ka, xa) = r.mr(A, 4096, access::LOCAL_WRITE);
        let (kb, xb) = r.mr(B, 4096, access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ);
        for i in 0..300u64 {
            let opcode = ops[(rng.next() % ops.len() as u64) as usize];
            let nseg = (rng.next() % 5) as usize;
            let mut segs: Vec<Vec<u8>> = (0..nseg).map(|_| rng.bytes(16)).collect();
            // Sometimes plausible segments, so deeper paths run too.
            if rng.next().is_multiple_of(2) {
                segs = vec![raddr(xb + rng.next() % 4200, kb), dseg((rng.next() % 300) as u32, ka, xa + rng.next() % 4000)];
                if ty == QpType::Ud {
                    segs.insert(0, datagram(qb, 0x1111_1111));
                }
            }
            if rng.next().is_multiple_of(3) {
                r.recv(qb, &[((rng.next() % 200) as u32, kb, xb + rng.next() % 4000)]);
            }
            let flags = (rng.next() as u8) & 0xaa;
            r.post(qa, opcode, flags, rng.next() as u32, &segs);
            r.eng().sq_doorbell(qa);
            r.dev.engine.fake_now_ns = Some(i * 100_000_000);
            r.eng().progress();
            let polled = r.poll(ca).len();
            r.poll(cb);
            let consumed = r.dev.qps[&qa].sq.ci == r.user_pi(qa).0;
            assert!(consumed || r.dev.engine.stalls.contains_key(&qa), "seed {seed} step {i}: WQE left behind");
            seen[usize::from(polled > 0)] += 1;
            if r.dev.qps[&qa].state != QpState::Rts {
                // Start over, queues empty, as after a reset by the command half.
                let pis = [r.user_pi(qa), r.user_pi(qb)];
                for q in [qa, qb] {
                    let qp = r.dev.qps.get_mut(&q).unwrap();
                    qp.state = QpState::Rts;
                    (qp.sq.ci, qp.rq.ci) = pis[usize::from(q == qb)];
                }
            }
        }
        assert!(seen[0] > 0 && seen[1] > 0, "seed {seed}: both silent and completed steps ({seen:?})");
    }
}
