// post_send exists only where CanPostSend holds (RTS, SQD): not in RTR.
use verbs::qp::{RcQp, Rtr, SendWr};

fn send(qp: &mut RcQp<'_, Rtr>) {
    let _ = qp.post_send(&[SendWr::send(1, &[])]);
}

fn main() {
    let _ = send;
}
