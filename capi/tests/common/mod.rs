//! Shared by the host tests: where cargo put our `libibverbs.so`, and a
//! directory where it is also `libibverbs.so.1` (the SONAME the loader
//! looks for).

use std::path::PathBuf;

/// `target/<profile>/deps/libibverbs.so`: cargo builds the library (an
/// rlib as well as the cdylib) before the integration tests, into the
/// directory of the test executables; `target/<profile>/libibverbs.so` is
/// refreshed only by `cargo build`.
pub(crate) fn built_library() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let lib = exe.parent().expect("target/<profile>/deps").join("libibverbs.so");
    assert!(lib.exists(), "{} missing: build with `cargo build -p verbs-capi`", lib.display());
    lib
}

/// A fresh directory holding `libibverbs.so.1` -> our library, for `LD_LIBRARY_PATH`.
#[allow(dead_code)] // not every test binary uses it
pub(crate) fn library_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("verbs-capi-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(built_library(), dir.join("libibverbs.so.1")).unwrap();
    dir
}
