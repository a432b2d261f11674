// The command layer (`verbs::cmd`) is private: no `Channel`, no `IoctlBuf`.
use verbs::cmd::Channel;

fn main() {
    let _ = core::mem::size_of::<Channel>();
}
