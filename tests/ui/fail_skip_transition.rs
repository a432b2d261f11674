// RESET -> RTR skips INIT: into_rtr exists only on an INIT queue pair.
use verbs::qp::{RcQp, RcRtrAttr, Reset};

fn skip<'a>(qp: RcQp<'a, Reset>, attr: RcRtrAttr) {
    let _ = qp.into_rtr(attr);
}

fn main() {
    let _ = skip;
}
