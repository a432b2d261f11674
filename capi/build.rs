//! Links `libibverbs.so` with rdma-core's SONAME and symbol versions
//! (`libibverbs.map`; with feature mlx5 also libmlx5's, `mlx5dv.map`,
//! appended into one script in `OUT_DIR`). Only linker arguments: no C is
//! compiled.

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    println!("cargo:rerun-if-changed=libibverbs.map");
    println!("cargo:rerun-if-changed=mlx5dv.map");
    let mut script = format!("{dir}/libibverbs.map");
    if std::env::var_os("CARGO_FEATURE_MLX5").is_some() {
        let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).unwrap_or_else(|e| panic!("{f}: {e}"));
        script = format!("{out}/libibverbs-mlx5.map");
        std::fs::write(&script, read("libibverbs.map") + "\n" + &read("mlx5dv.map")).expect("write the version script");
    }
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={script}");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libibverbs.so.1");
}
