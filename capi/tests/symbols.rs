//! The dynamic symbol table of our `libibverbs.so` is rdma-core 44's: every
//! name, in every version, default (`@@`) or not (`@`), function or object,
//! with the SONAME `libibverbs.so.1` (read with binutils' `objdump`/`readelf`).

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const FIXTURE: &str = include_str!("fixtures/rdma-core-44.symbols");
/// With feature mlx5 the library is libmlx5.so.1 too (src/mlx5dv/).
#[cfg(feature = "mlx5")]
const MLX5_FIXTURE: &str = include_str!("fixtures/libmlx5-44.symbols");
const SYSTEM_LIB: &str = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.44.0";

fn tool(name: &str, args: &[&str], file: &Path) -> String {
    let out = Command::new(name)
        .args(args)
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("{name} (binutils) is needed for this test: {e}"));
    assert!(out.status.success(), "{name} failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `VERSION NAME default|compat func|object` lines of a library's exports.
fn exports(lib: &Path) -> BTreeSet<String> {
    tool("objdump", &["-T"], lib)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() < 7 || !(f[2] == "DF" || f[2] == "DO") || f[3] == "*UND*" || f[3] == "*ABS*" {
                return None;
            }
            let (ver, name) = (f[f.len() - 2], f[f.len() - 1]);
            let (ver, kind) = match ver.strip_prefix('(').and_then(|v| v.strip_suffix(')')) {
                Some(v) => (v, "compat"),
                None => (ver, "default"),
            };
            let ty = if f[2] == "DF" { "func" } else { "object" };
            Some(format!("{ver} {name} {kind} {ty}"))
        })
        .collect()
}

fn lines(text: &str) -> impl Iterator<Item = String> + '_ {
    text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()).map(str::to_owned)
}

fn fixture() -> BTreeSet<String> {
    lines(FIXTURE).collect()
}

/// What the library must export: libibverbs' table, and libmlx5's with feature mlx5.
fn wanted() -> BTreeSet<String> {
    #[cfg(feature = "mlx5")]
    return fixture().into_iter().chain(lines(MLX5_FIXTURE)).collect();
    #[cfg(not(feature = "mlx5"))]
    return fixture();
}

fn diff(a: &BTreeSet<String>, b: &BTreeSet<String>) -> String {
    let missing: Vec<_> = a.difference(b).collect();
    let extra: Vec<_> = b.difference(a).collect();
    format!("missing: {missing:#?}\nextra: {extra:#?}")
}

#[test]
fn exports_every_rdma_core_44_symbol_and_nothing_else() {
    let ours = exports(&common::built_library());
    assert_eq!(fixture().len(), 180, "fixture lines");
    #[cfg(feature = "mlx5")]
    assert_eq!(lines(MLX5_FIXTURE).count(), 129, "libmlx5 fixture lines");
    let want = wanted();
    assert!(ours == want, "symbol table differs from rdma-core 44's:\n{}", diff(&want, &ours));
}

#[test]
fn soname_and_version_nodes() {
    let lib = common::built_library();
    let d = tool("readelf", &["-d"], &lib);
    assert!(d.contains("Library soname: [libibverbs.so.1]"), "{d}");
    let v = tool("readelf", &["-V"], &lib);
    let mut nodes = vec!["IBVERBS_1.0".to_owned(), "IBVERBS_1.1".to_owned()];
    nodes.extend((5..=14).map(|i| format!("IBVERBS_1.{i}")));
    nodes.push("IBVERBS_PRIVATE_34".to_owned());
    for n in &nodes {
        assert!(v.contains(&format!("Name: {n}\n")), "version node {n} missing:\n{v}");
    }
}

/// The fixture is what rdma-core 44 really exports (when it is installed here).
#[test]
fn fixture_matches_the_installed_rdma_core_44() {
    let sys = Path::new(SYSTEM_LIB);
    if !sys.exists() {
        eprintln!("SKIP: {SYSTEM_LIB} not installed (libibverbs1 44.0)");
        return;
    }
    let theirs = exports(sys);
    assert!(theirs == fixture(), "fixture differs from {SYSTEM_LIB}:\n{}", diff(&fixture(), &theirs));
}
