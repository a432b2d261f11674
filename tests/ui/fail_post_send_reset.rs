// post_send exists only where CanPostSend holds (RTS, SQD): not in RESET.
use verbs::qp::{RcQp, Reset, SendWr};

fn send(qp: &mut RcQp<'_, Reset>) {
    let _ = qp.post_send(&SendWr { wr_id: 1, sg_list: &[] });
}

fn main() {
    let _ = send;
}
