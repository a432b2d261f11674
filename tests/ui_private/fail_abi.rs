// The kernel ABI (`verbs::abi`) is private: e.g. rxe's MODIFY_SRQ, whose
// `mmap_info_addr` makes the kernel write to any address, cannot be named.
use verbs::abi::uverbs::ModifySrq;

fn main() {
    let _ = ModifySrq::default();
}
