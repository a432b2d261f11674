//! Links `libibverbs.so` with rdma-core's SONAME and symbol versions
//! (`libibverbs.map`). Only linker arguments: no C is compiled.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=libibverbs.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={dir}/libibverbs.map");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libibverbs.so.1");
}
