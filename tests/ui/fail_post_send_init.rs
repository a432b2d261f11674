// post_send exists only where CanPostSend holds (RTS, SQD): not in INIT.
use verbs::qp::{Init, RcQp, SendWr};

fn send(qp: &mut RcQp<'_, Init>) {
    let _ = qp.post_send(&SendWr { wr_id: 1, sg_list: &[] });
}

fn main() {
    let _ = send;
}
