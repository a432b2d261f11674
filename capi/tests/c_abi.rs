//! An unmodified C program (tests/c/smoke.c, built against rdma-core's
//! `<infiniband/verbs.h>` and linked with `-libverbs`) prints the same on
//! our `libibverbs.so.1` as on rdma-core's: the loader resolves its
//! versioned imports (`ibv_get_device_list@IBVERBS_1.1`, …) to us, and
//! the answers match (no device needed: strings, rates, the device list or
//! its error, NULL arguments).
//!
//! Skipped with a message only when no C compiler or no rdma-core
//! development files are installed (scripts/test.sh installs them).

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn c_program_prints_the_same_on_both_libraries() {
    if !Path::new("/usr/include/infiniband/verbs.h").exists() {
        eprintln!("SKIP: /usr/include/infiniband/verbs.h missing (apt install libibverbs-dev)");
        return;
    }
    let dir = common::library_dir("smoke");
    let exe = dir.join("smoke");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/smoke.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc).args(["-Wall", "-Werror", "-o"]).arg(&exe).arg(&src).arg("-libverbs").output().expect("running cc");
    assert!(out.status.success(), "{cc} failed: {}", String::from_utf8_lossy(&out.stderr));

    let run = |ld_path: Option<&Path>| {
        let mut c = Command::new(&exe);
        c.env_remove("LD_LIBRARY_PATH");
        if let Some(p) = ld_path {
            c.env("LD_LIBRARY_PATH", p);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "smoke failed: {}", String::from_utf8_lossy(&o.stderr));
        (String::from_utf8(o.stdout).unwrap(), String::from_utf8(o.stderr).unwrap())
    };
    // Which library each run loaded, from the loader's own trace.
    let which = |ld_path: Option<&Path>| {
        let mut c = Command::new(&exe);
        c.env("LD_TRACE_LOADED_OBJECTS", "1").env_remove("LD_LIBRARY_PATH");
        if let Some(p) = ld_path {
            c.env("LD_LIBRARY_PATH", p);
        }
        String::from_utf8(c.output().unwrap().stdout).unwrap()
    };
    assert!(which(Some(&dir)).contains(dir.to_str().unwrap()), "our library was not loaded");
    let theirs = run(None);
    let ours = run(Some(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(ours.0, theirs.0, "stdout differs (left: ours, right: rdma-core)");
    assert!(theirs.0.contains("wc_status 5: Work Request Flushed Error"), "{}", theirs.0);
}
