//! Issue 15 item 4 on rxe0 and siw0: completion events for a CQ the caller did not
//! list are kept on the channel instead of lost.

use std::os::fd::AsFd;

use super::comp_channel::poll_in;
use super::rig::{init_attr, open_dev, rc_pair_on, wait, CAP};
use verbs::cq::get_cq_event;
use verbs::wr::SendWr;
use verbs::{CompChannel, Cq, ErrorKind, Pd};

fn event_for_an_unlisted_cq_is_kept_not_lost(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let ch = CompChannel::create(&ctx).unwrap();
    let scq = Cq::create(&ctx, 16, Some(&ch), 0).unwrap();
    let other = Cq::create(&ctx, 16, Some(&ch), 0).unwrap();
    let (mut a, _b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &scq, None, CAP));
    scq.req_notify(false).unwrap();
    a.post_send(&[SendWr::rdma_write(1, &[], 0, 0).signaled()]).unwrap();
    assert_ne!(poll_in(ch.as_fd(), 30_000) & libc::POLLIN, 0, "completion event within 30 s");

    // Asked with only the other CQ: the event is read, kept, and the
    // error says what happened.
    let e = get_cq_event(&ch, &[&other]).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_get_cq_event", ErrorKind::CqNotListed));
    assert!(e.to_string().contains("kept on the channel"), "{e}");
    assert_eq!(ch.pending_cq_events().collect::<Vec<_>>(), [scq.user_handle()]);
    assert_eq!(other.unacked_events(), 0);
    // The next call that lists its CQ gets it, without reading the fd.
    ch.set_nonblocking(true).unwrap();
    let cq = get_cq_event(&ch, &[&other, &scq]).expect("the kept event");
    assert!(core::ptr::eq(cq, &scq));
    assert_eq!(ch.pending_cq_events().count(), 0);
    scq.ack_events(1).unwrap();
    let e = get_cq_event(&ch, &[&other, &scq]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WouldBlock, "exactly one event: {e}");
    assert_eq!(wait(&scq, 1)[0].wr_id(), 1);
}

twins!(event_for_an_unlisted_cq_is_kept_not_lost: rxe_event_for_an_unlisted_cq_is_kept_not_lost, siw_event_for_an_unlisted_cq_is_kept_not_lost);
