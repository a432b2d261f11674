// Issue #12 item 4: the rxe ring types are private (no `Queue::reader()`,
// no `Producer::slot(any index)` for safe code to race with).
use verbs::providers::rxe::queue::{CompletionQueue, Producer, SendQueue};

fn main() {
    let _ = core::mem::size_of::<(CompletionQueue, SendQueue)>();
    let _ = core::mem::size_of::<Producer<'static, 0>>();
}
