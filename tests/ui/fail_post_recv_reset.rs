// post_recv exists only where CanPostRecv holds (INIT and later): not in RESET.
use verbs::qp::{RecvWr, Reset, UdQp};

fn recv(qp: &mut UdQp<'_, Reset>) {
    let _ = qp.post_recv(&[RecvWr::new(1, &[])]);
}

fn main() {
    let _ = recv;
}
