// Issue #12 item 5: `Context::from_fd` adopts the fd numbers in the
// device's answers; on a file that is not a uverbs device that can be fd 0.
// It is `unsafe`: calling it from safe code does not compile.
use std::os::fd::OwnedFd;
use verbs::{Context, ProviderKind};

fn adopt(fd: OwnedFd) {
    let _ = Context::from_fd(fd, ProviderKind::Rxe, "rxe0");
}

fn main() {
    let _ = adopt;
}
