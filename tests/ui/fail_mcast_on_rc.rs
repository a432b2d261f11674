// Multicast is for UD queue pairs only: attach_mcast does not exist on RC.
use verbs::qp::{Init, RcQp};

fn join(qp: &RcQp<'_, Init>) {
    let _ = qp.attach_mcast(&[0xff; 16], 0);
}

fn main() {
    let _ = join;
}
