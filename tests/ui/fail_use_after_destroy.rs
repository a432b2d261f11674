// destroy() consumes the queue pair: using it afterwards is a move error.
use verbs::qp::{Rts, UcQp};

fn after(qp: UcQp<'_, Rts>) {
    let _ = qp.destroy();
    let _ = qp.qp_num();
}

fn main() {
    let _ = after;
}
