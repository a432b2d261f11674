//! `verbs-simd`: the simulated ConnectX daemon (see the crate docs).

fn main() {
    eprintln!("verbs-simd: not yet serving (skeleton)");
    std::process::exit(2);
}
