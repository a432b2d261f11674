// post_send exists only where CanPostSend holds (RTS, SQD): not in RESET.
use verbs::qp::{RcQp, Reset, SendWr};

fn send(qp: &mut RcQp<'_, Reset>) {
    let _ = qp.post_send(&[SendWr::send(1, &[])]);
}

fn main() {
    let _ = send;
}
