// post_send exists only where CanPostSend holds (RTS, SQD): not in RTR.
use verbs::qp::{RcQp, Rtr, SendWr};

fn send(qp: &mut RcQp<'_, Rtr>) {
    let _ = qp.post_send(&SendWr { wr_id: 1, sg_list: &[] });
}

fn main() {
    let _ = send;
}
