//! Fault scenario, CQ overrun (issue #12): a CQ overrun by more
//! completions than it holds raises `IBV_EVENT_CQ_ERR` on the context's
//! async event file (rxe's `rxe_cq_post` reports a full ring through the
//! CQ's event handler and drops the completion), and the ring keeps
//! exactly the completions that fit (siw's `siw_cqe_complete` does the
//! same on siw0). Every wait has a deadline.

use core::time::Duration;
use std::time::Instant;

use super::comp_channel::poll_in;
use super::rig::{init_attr, open_dev, rc_pair_on, ALL_ACCESS, CAP};
use verbs::wr::{SendFlags, SendWr};
use verbs::{AsyncElement, AsyncEvent, Cq, EventType, Mr, Pd, Wc, WcStatus};

const SIG: SendFlags = SendFlags::SIGNALED;

/// Reads async events until a `CqErr` arrives (10 s at most); returns it
/// and the events read before it.
fn wait_cq_err(ctx: &verbs::Context) -> (AsyncEvent, Vec<AsyncEvent>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no IBV_EVENT_CQ_ERR within 10 s; got {seen:?}");
        if poll_in(ctx.async_fd(), left.as_millis().max(1) as i32) & libc::POLLIN == 0 {
            continue;
        }
        let ev = ctx.get_async_event().expect("ibv_get_async_event");
        ctx.ack_async_event(ev);
        if ev.event_type == EventType::CqErr {
            return (ev, seen);
        }
        seen.push(ev);
    }
}

fn cq_overrun_raises_cq_err(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let small = Cq::create(&ctx, 4, None, 0).unwrap();
    let other = Cq::create(&ctx, 64, None, 0).unwrap();
    let (mut a, _b, _conn) = rc_pair_on(&pd, init_attr(&small, &small, None, CAP), init_attr(&other, &other, None, CAP));
    let bbuf = vec![0u8; 4096];
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    // What the ring holds: `cqe` entries on rxe and siw; on mlx5 the
    // device fills every entry of the 2^k ring, one more than the `cqe`
    // libmlx5 reports (it asks for cqe + 1 rounded up, and answers
    // ncqe - 1).
    #[cfg(feature = "mlx5")]
    let fills_every_entry = ctx.provider() == verbs::ProviderKind::Mlx5;
    #[cfg(not(feature = "mlx5"))]
    let fills_every_entry = false;
    let n = u64::from(small.cqe()) + u64::from(fills_every_entry);
    assert!(n + 4 <= u64::from(a.cap().max_send_wr), "CQ of {n} vs {:?}", a.cap());
    // n + 4 signaled requests, nobody polling: the last four find the ring full.
    let data = [0x5au8; 8];
    let wrs: Vec<_> = (0..n + 4)
        .map(|id| SendWr::rdma_write(id, &[], bmr.addr() + id * 8, bmr.rkey()).inline(&data).flags(SIG))
        .collect();
    a.post_send(&wrs).expect("ibv_post_send");
    let (ev, before) = wait_cq_err(&ctx);
    assert_eq!(ev.element(), AsyncElement::Cq(small.user_handle()), "{ev:?} (events before: {before:?})");
    // The ring holds exactly its capacity: the first n completions, in order.
    let mut wc = vec![Wc::ZERO; n as usize + 8];
    let k = small.poll(&mut wc).expect("ibv_poll_cq");
    let got: Vec<_> = wc[..k].iter().map(|w| (w.wr_id(), w.status())).collect();
    assert_eq!(got, (0..n).map(|id| (id, WcStatus::Success)).collect::<Vec<_>>());
    // Whatever the overrun did with the last four (rxe may drop them or
    // deliver some once room is made, depending on timing), nothing is
    // doubled or reordered: any later completion continues the sequence.
    let k = small.poll(&mut wc).expect("ibv_poll_cq");
    let later: Vec<_> = wc[..k].iter().map(|w| w.wr_id()).collect();
    assert_eq!(later, (n..n + k as u64).collect::<Vec<_>>(), "later completions continue the sequence");
    assert!(k <= 4, "at most the four overflowing requests: {later:?}");
    // What follows on the requester is rxe's business (its QP may or may
    // not have been failed by the dropped completions, depending on timing),
    // so no request is posted after the overrun.
    eprintln!("CQ of {n}: requester now {:?}", a.query().map(|q| q.qp_state));
}

twins!(cq_overrun_raises_cq_err: rxe_cq_overrun_raises_cq_err, siw_cq_overrun_raises_cq_err);
