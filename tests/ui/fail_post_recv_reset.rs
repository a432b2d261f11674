// post_recv exists only where CanPostRecv holds (INIT and later): not in RESET.
use verbs::qp::{RecvWr, Reset, UdQp};

fn recv(qp: &mut UdQp<'_, Reset>) {
    let _ = qp.post_recv(&RecvWr { wr_id: 1, sg_list: &[] });
}

fn main() {
    let _ = recv;
}
