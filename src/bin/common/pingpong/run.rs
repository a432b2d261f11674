//! The pingpong programs' completion loop, shared by the three tools and
//! independent of the device so that its logic is tested on the host.
//!
//! The scheme of rdma-core's examples: every receive has `wr_id`
//! `PINGPONG_RECV_WRID` (1) and every send `PINGPONG_SEND_WRID` (2); a QP's
//! `pending` mask holds the kinds still outstanding and the next send goes
//! out when both the previous send and a receive completed. The receive
//! queue is refilled to `rx_depth` when the posted receives drop to
//! `refill_at` (1, or the number of QPs sharing the SRQ). With events, each
//! round first waits for a CQ event, re-arms the CQ and polls once.

/// `PINGPONG_RECV_WRID`.
pub(crate) const RECV_WRID: u64 = 1;
/// `PINGPONG_SEND_WRID`.
pub(crate) const SEND_WRID: u64 = 2;

/// One polled completion, the fields the loop looks at.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Completion {
    /// `wc.wr_id`.
    pub(crate) wr_id: u64,
    /// `wc.status` (0 = success).
    pub(crate) status: u32,
    /// `wc.qp_num`.
    pub(crate) qp_num: u32,
}

/// What the loop needs from the device side.
pub(crate) trait Endpoint {
    /// `ibv_poll_cq`: up to `out.len()` completions; `Err(errno)`.
    fn poll(&mut self, out: &mut [Completion]) -> Result<usize, i32>;
    /// `ibv_get_cq_event` (then re-arm with `ibv_req_notify_cq`); `Err` is
    /// the message to print.
    fn wait_event(&mut self) -> Result<(), String>;
    /// `pp_post_recv`: posts up to `n` receives one by one, returns how
    /// many were posted.
    fn post_recv(&mut self, n: u32) -> u32;
    /// `pp_post_send` on QP `qp` (an index); false if it failed.
    fn post_send(&mut self, qp: usize) -> bool;
    /// `find_qp` (srq): the index of the QP with this number. Programs with
    /// one QP do not look and say `Some(0)`.
    fn qp_index(&self, qp_num: u32) -> Option<usize>;
}

/// The loop's settings.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Params {
    /// `iters`: sends and receives to complete (in total, for srq).
    pub(crate) iters: u32,
    /// `rx_depth`.
    pub(crate) rx_depth: u32,
    /// Refill when the posted receives are at most this many.
    pub(crate) refill_at: u32,
    /// Completions polled at a time (2, or `num_qp + rx_depth` for srq).
    pub(crate) batch: usize,
    /// `-e`.
    pub(crate) events: bool,
    /// rc_pingpong adds `"parse WC failed %d"` after a bad completion.
    pub(crate) rc_messages: bool,
}

/// After the loop: the counters the program needs afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Done {
    /// CQ events received (to acknowledge).
    pub(crate) cq_events: u32,
    /// Sends completed.
    pub(crate) scnt: u32,
    /// Receives completed.
    pub(crate) rcnt: u32,
}

/// Runs until `iters` sends and receives completed. `routs` is the number
/// of receives posted, `pending` the per-QP masks as the program set them
/// up. `Err` carries the stderr text (the program then exits with 1).
pub(crate) fn run(
    ep: &mut impl Endpoint,
    p: Params,
    routs: &mut u32,
    pending: &mut [u64],
) -> Result<Done, String> {
    let mut wc = vec![Completion::default(); p.batch.max(1)];
    let (mut scnt, mut rcnt, mut cq_events) = (0u32, 0u32, 0u32);
    while rcnt < p.iters || scnt < p.iters {
        if p.events {
            ep.wait_event()?;
            cq_events += 1;
        }
        let ne = loop {
            let ne = ep
                .poll(&mut wc)
                .map_err(|e| format!("poll CQ failed {}", -e))?;
            if p.events || ne >= 1 {
                break ne;
            }
        };
        for c in &wc[..ne] {
            let parse_failed = |msg: String| {
                if p.rc_messages {
                    format!("{msg}\nparse WC failed {ne}")
                } else {
                    msg
                }
            };
            if c.status != 0 {
                return Err(parse_failed(format!(
                    "Failed status {} ({}) for wr_id {}",
                    verbs::strings::wc_status_str(c.status),
                    c.status,
                    c.wr_id as i32
                )));
            }
            let Some(qi) = ep.qp_index(c.qp_num) else {
                return Err(format!("Couldn't find QPN {:06x}", c.qp_num));
            };
            match c.wr_id {
                SEND_WRID => scnt += 1,
                RECV_WRID => {
                    *routs = routs.saturating_sub(1);
                    if *routs <= p.refill_at {
                        *routs += ep.post_recv(p.rx_depth.saturating_sub(*routs));
                        if *routs < p.rx_depth {
                            return Err(parse_failed(format!(
                                "Couldn't post receive ({})",
                                *routs
                            )));
                        }
                    }
                    rcnt += 1;
                }
                other => {
                    return Err(parse_failed(format!(
                        "Completion for unknown wr_id {}",
                        other as i32
                    )))
                }
            }
            pending[qi] &= !c.wr_id;
            if scnt < p.iters && pending[qi] == 0 {
                if !ep.post_send(qi) {
                    return Err(parse_failed("Couldn't post send".to_owned()));
                }
                pending[qi] = RECV_WRID | SEND_WRID;
            }
        }
    }
    Ok(Done {
        cq_events,
        scnt,
        rcnt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A peer that answers every send at once: a send completes and the
    /// peer's reply arrives as a receive completion, if a receive is posted.
    #[derive(Default)]
    struct Echo {
        cq: VecDeque<Completion>,
        posted_recvs: u32,
        recv_capacity: u32,
        sends: Vec<usize>,
        recv_posts: Vec<u32>,
        events_waited: u32,
        fail_status_at_send: Option<usize>,
    }

    impl Endpoint for Echo {
        fn poll(&mut self, out: &mut [Completion]) -> Result<usize, i32> {
            let n = out.len().min(self.cq.len());
            for o in out.iter_mut().take(n) {
                *o = self.cq.pop_front().unwrap();
            }
            Ok(n)
        }
        fn wait_event(&mut self) -> Result<(), String> {
            self.events_waited += 1;
            if self.cq.is_empty() {
                return Err("Failed to get cq_event".into());
            }
            Ok(())
        }
        fn post_recv(&mut self, n: u32) -> u32 {
            let room = self.recv_capacity - self.posted_recvs;
            let k = n.min(room);
            self.posted_recvs += k;
            self.recv_posts.push(k);
            k
        }
        fn post_send(&mut self, qp: usize) -> bool {
            self.sends.push(qp);
            let status = if self.fail_status_at_send == Some(self.sends.len()) {
                5
            } else {
                0
            };
            self.cq.push_back(Completion {
                wr_id: SEND_WRID,
                status,
                qp_num: 0x10 + qp as u32,
            });
            assert!(
                self.posted_recvs > 0,
                "the reply would meet no receive (RNR)"
            );
            self.posted_recvs -= 1;
            self.cq.push_back(Completion {
                wr_id: RECV_WRID,
                status: 0,
                qp_num: 0x10 + qp as u32,
            });
            true
        }
        fn qp_index(&self, qp_num: u32) -> Option<usize> {
            qp_num
                .checked_sub(0x10)
                .map(|i| i as usize)
                .filter(|&i| i < 4)
        }
    }

    fn params(iters: u32, rx_depth: u32, events: bool) -> Params {
        Params {
            iters,
            rx_depth,
            refill_at: 1,
            batch: 2,
            events,
            rc_messages: true,
        }
    }

    /// The client side: receives posted, first send out, pending = both.
    fn client(rx_depth: u32) -> (Echo, u32) {
        let mut ep = Echo {
            recv_capacity: rx_depth,
            ..Echo::default()
        };
        let routs = ep.post_recv(rx_depth);
        assert!(ep.post_send(0));
        (ep, routs)
    }

    #[test]
    fn client_round_trips_and_refills() {
        let (mut ep, mut routs) = client(4);
        let mut pending = [RECV_WRID | SEND_WRID];
        let done = run(&mut ep, params(10, 4, false), &mut routs, &mut pending).unwrap();
        assert_eq!(
            done,
            Done {
                cq_events: 0,
                scnt: 10,
                rcnt: 10
            }
        );
        // 1 first send + 9 in the loop: no send beyond iters
        assert_eq!(ep.sends.len(), 10);
        // refilled each time the posted receives fell to 1: 4 - 1 = 3 more
        assert_eq!(ep.recv_posts[0], 4);
        assert!(
            ep.recv_posts[1..].iter().all(|&k| k == 3),
            "{:?}",
            ep.recv_posts
        );
        assert_eq!(ep.recv_posts.len(), 1 + 10 / 3);
        assert_eq!(pending[0], 0, "nothing outstanding, no send after the last");
    }

    #[test]
    fn events_mode_counts_events() {
        let (mut ep, mut routs) = client(8);
        let mut pending = [RECV_WRID | SEND_WRID];
        let done = run(&mut ep, params(3, 8, true), &mut routs, &mut pending).unwrap();
        assert_eq!((done.scnt, done.rcnt), (3, 3));
        assert_eq!(done.cq_events, ep.events_waited);
        assert_eq!(done.cq_events, 3, "one event per poll of 2 completions");
    }

    #[test]
    fn errors_read_like_c() {
        let (mut ep, mut routs) = client(8);
        ep.fail_status_at_send = Some(2);
        let e = run(
            &mut ep,
            params(5, 8, false),
            &mut routs,
            &mut [RECV_WRID | SEND_WRID],
        )
        .unwrap_err();
        assert_eq!(
            e,
            "Failed status Work Request Flushed Error (5) for wr_id 2\nparse WC failed 2"
        );
        let (mut ep, mut routs) = client(8);
        ep.cq.push_front(Completion {
            wr_id: 7,
            status: 0,
            qp_num: 0x10,
        });
        let p = Params {
            rc_messages: false,
            ..params(5, 8, false)
        };
        let e = run(&mut ep, p, &mut routs, &mut [RECV_WRID | SEND_WRID]).unwrap_err();
        assert_eq!(e, "Completion for unknown wr_id 7");
        let (mut ep, mut routs) = client(8);
        ep.cq.push_front(Completion {
            wr_id: 1,
            status: 0,
            qp_num: 0x99,
        });
        let e = run(&mut ep, p, &mut routs, &mut [3]).unwrap_err();
        assert_eq!(e, "Couldn't find QPN 000099");
        // a refill that cannot fill the queue
        let (mut ep, mut routs) = client(2);
        ep.recv_capacity = 1;
        let e = run(&mut ep, p, &mut routs, &mut [3]).unwrap_err();
        assert_eq!(e, "Couldn't post receive (1)");
    }

    #[test]
    fn server_waits_for_the_first_receive() {
        // The server posts no send before its first receive completed.
        let mut ep = Echo {
            recv_capacity: 4,
            ..Echo::default()
        };
        let mut routs = ep.post_recv(4);
        ep.posted_recvs -= 1;
        ep.cq.push_back(Completion {
            wr_id: RECV_WRID,
            status: 0,
            qp_num: 0x10,
        });
        let mut pending = [RECV_WRID];
        let done = run(&mut ep, params(4, 4, false), &mut routs, &mut pending).unwrap();
        assert_eq!(
            (done.scnt, done.rcnt),
            (4, 5),
            "the echo peer also answers the last send"
        );
        assert_eq!(ep.sends.len(), 4);
    }

    #[test]
    fn srq_pending_per_qp() {
        // Two QPs on a shared receive queue, both clients.
        let mut ep = Echo {
            recv_capacity: 8,
            ..Echo::default()
        };
        let mut routs = ep.post_recv(8);
        assert!(ep.post_send(0) && ep.post_send(1));
        let mut pending = [3, 3];
        let p = Params {
            refill_at: 2,
            batch: 10,
            ..params(6, 8, false)
        };
        let done = run(&mut ep, p, &mut routs, &mut pending).unwrap();
        assert!(done.scnt >= 6 && done.rcnt >= 6, "{done:?}");
        let per_qp = |q| ep.sends.iter().filter(|&&s| s == q).count();
        assert_eq!(per_qp(0) + per_qp(1), ep.sends.len());
        assert!(per_qp(0) >= 3 && per_qp(1) >= 3);
    }
}
