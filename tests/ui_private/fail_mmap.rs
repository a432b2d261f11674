// Queue memory (`verbs::mmap::Mapping`) is private: no plain reads racing
// with the kernel's or another thread's writes.
use verbs::mmap::Mapping;

fn main() {
    let _ = core::mem::size_of::<Mapping>();
}
