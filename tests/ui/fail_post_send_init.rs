// post_send exists only where CanPostSend holds (RTS, SQD): not in INIT.
use verbs::qp::{Init, RcQp, SendWr};

fn send(qp: &mut RcQp<'_, Init>) {
    let _ = qp.post_send(&[SendWr::send(1, &[])]);
}

fn main() {
    let _ = send;
}
