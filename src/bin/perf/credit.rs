//! perftest's receive credits, which `ib_send_bw` adds on iWARP
//! (perftest 4.5: `send_rcredit`, set when the device's transport is
//! iWARP; only send_bw). iWARP has no RNR retry: a SEND that finds no
//! receive posted breaks the connection, so the sender must not run ahead
//! of the receiver's posted receives. perftest's scheme, which a perftest
//! peer expects on the wire:
//!
//! * each side registers a small region for credits and, in every address
//!   handshake from then on, announces `rkey` and `vaddr` of one 32-bit
//!   word per QP there (instead of its data buffer's; a SEND test never
//!   reads or writes the data buffer remotely);
//! * the receiver counts receive completions per QP (`rcnt`) and, whenever
//!   `(rcnt % rx_depth) % (rx_depth / 3) == 0`, RDMA WRITEs `rcnt`
//!   (4 bytes, host order, signaled, `wr_id` = the QP's index) into the
//!   sender's word for that QP; it keeps at most a send queue's worth of
//!   those writes outstanding and reaps them all before it reports;
//! * the sender posts a list of `n` SENDs on a QP only while
//!   `sent + n - credit < rx_depth` (its own `rx_depth`), reading the word
//!   the receiver writes.
//!
//! Layout of our region: the peer's words (`credit`, one per QP) first,
//! then per QP a ring of `ring` words the receiver writes from. Each
//! credit WRITE has a slot of its own, not reused before its completion,
//! so the device never reads a word while we store into it.

use verbs::qp::{RcQp, Rts};
use verbs::wr::{Payload, SendFlags, SendOp, SendWr, Sge};
use verbs::{AccessFlags, Cq, Mr, Pd, Wc};

use super::dest::Dest;
use super::lat::check;
use super::run::s;

const WORD: usize = 4;

pub(crate) struct Credits<'a> {
    mr: Mr<'a>,
    nq: usize,
    /// Ring slots per QP: the most credit WRITEs outstanding on one QP.
    ring: usize,
    rx_depth: u64,
    /// perftest's `credit_cnt`: a credit every this many receives.
    every: u64,
    /// Sender: the highest credit seen per QP.
    seen: Vec<u64>,
    /// Receiver: credit WRITEs posted and completed per QP.
    posted: Vec<u64>,
    done: Vec<u64>,
}

impl<'a> Credits<'a> {
    pub(crate) fn new(pd: &'a Pd<'a>, nq: usize, ring: u32, rx_depth: u32) -> Result<Self, String> {
        let ring = ring.max(1) as usize;
        let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE;
        let mr = Mr::alloc(pd, nq * (1 + ring) * WORD, access).map_err(s("ibv_reg_mr (credits)"))?;
        Ok(Credits {
            mr,
            nq,
            ring,
            rx_depth: u64::from(rx_depth),
            // perftest divides by rx_depth / 3 (0 below 3: it would trap)
            every: u64::from(rx_depth / 3).max(1),
            seen: vec![0; nq],
            posted: vec![0; nq],
            done: vec![0; nq],
        })
    }

    /// What the handshakes announce for QP `q`: the word the peer writes.
    pub(crate) fn announce(&self, q: usize, d: &mut Dest) {
        d.rkey = self.mr.rkey();
        d.vaddr = self.mr.addr() + (q * WORD) as u64;
    }

    // ---- the sender (client)

    /// The credit for QP `q`: the peer's count of SENDs received. The word
    /// is read bytewise while the peer's device may write it, so a read
    /// counts only when two in a row agree; it never goes down and never
    /// passes `sent` (a torn or stale read is at worst too low).
    fn credit(&mut self, q: usize, sent: u64) -> Result<u64, String> {
        let read = |mr: &Mr<'_>| -> Result<u32, String> {
            let mut b = [0u8; WORD];
            mr.read_at(q * WORD, &mut b).map_err(s("read credit"))?;
            Ok(u32::from_ne_bytes(b))
        };
        let mut v = read(&self.mr)?;
        loop {
            let again = read(&self.mr)?;
            if again == v {
                break;
            }
            v = again;
        }
        let v = u64::from(v).min(sent);
        if v > self.seen[q] {
            self.seen[q] = v;
        }
        Ok(self.seen[q])
    }

    /// May QP `q`, with `sent` SENDs posted, post `n` more? perftest's
    /// window: `sent + n - credit < rx_depth`.
    pub(crate) fn may_send(&mut self, q: usize, sent: u64, n: u64) -> Result<bool, String> {
        if sent + n - self.seen[q] < self.rx_depth {
            return Ok(true);
        }
        Ok(sent + n - self.credit(q, sent)? < self.rx_depth)
    }

    // ---- the receiver (server)

    /// After the `rcnt`-th receive completion on QP `q` (its receive
    /// already reposted): perftest's rule for when to return a credit,
    /// and the RDMA WRITE of `rcnt` if it is time.
    pub(crate) fn received(
        &mut self,
        q: usize,
        rcnt: u64,
        qp: &mut RcQp<'_, Rts>,
        send_cq: &Cq<'_>,
        peer: &Dest,
    ) -> Result<(), String> {
        if !(rcnt % self.rx_depth).is_multiple_of(self.every) {
            return Ok(());
        }
        while self.posted[q] - self.done[q] >= self.ring as u64 {
            self.reap(send_cq)?;
        }
        let slot = self.nq + q * self.ring + (self.posted[q] % self.ring as u64) as usize;
        // the count as perftest stores it: a host-order uint32_t
        self.mr.write_at(slot * WORD, &(rcnt as u32).to_ne_bytes()).map_err(s("write credit"))?;
        let sge = [Sge { addr: self.mr.addr() + (slot * WORD) as u64, length: WORD as u32, lkey: self.mr.lkey() }];
        let wr = SendWr {
            wr_id: q as u64,
            payload: Payload::Sges(&sge),
            op: SendOp::RdmaWrite { remote_addr: peer.vaddr, rkey: peer.rkey },
            flags: SendFlags::SIGNALED,
            ud: None,
        };
        qp.post_send(&[wr]).map_err(|e| format!("ibv_post_send (credit): {}", e.error))?;
        self.posted[q] += 1;
        Ok(())
    }

    /// Polls the send CQ once (it holds only credit WRITEs); returns how
    /// many completed.
    pub(crate) fn reap(&mut self, send_cq: &Cq<'_>) -> Result<usize, String> {
        let mut wc = [Wc::ZERO; 16];
        let n = send_cq.poll(&mut wc).map_err(s("ibv_poll_cq (credits)"))?;
        for w in &wc[..n] {
            check(w)?;
            let q = w.wr_id() as usize;
            if q >= self.nq || self.done[q] == self.posted[q] {
                return Err(format!("unexpected send completion (wr_id {})", w.wr_id()));
            }
            self.done[q] += 1;
        }
        Ok(n)
    }

    /// True once every credit WRITE has completed.
    pub(crate) fn all_done(&self) -> bool {
        self.posted == self.done
    }
}
