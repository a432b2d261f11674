//! rdma-core's tools, perftest and rping load on our library with every
//! imported symbol bound at start-up (`LD_BIND_NOW=1`): their own imports,
//! and those of the C libraries they link (`libmlx5.so.1` and `libefa.so.1`
//! import ~60 IBVERBS_PRIVATE_34 names; `librdmacm.so.1` the
//! `ibv_copy_*`/sysfs helpers). Each prints its usage text the same on both
//! libraries (no device needed). Programs not installed here are skipped
//! by name; at least one must be present.

mod common;

use std::path::Path;
use std::process::Command;

const PROGRAMS: &[&str] = &[
    "ibv_devices", "ibv_devinfo", "ibv_rc_pingpong", "ibv_ud_pingpong", "ibv_srq_pingpong",
    "ib_send_lat", "ib_write_lat", "ib_read_lat", "ib_send_bw", "ib_write_bw", "ib_atomic_bw",
    "rping",
];

fn run(prog: &Path, lib_dir: Option<&Path>) -> (String, String) {
    let mut c = Command::new(prog);
    c.arg("-h").env("LD_BIND_NOW", "1").env_remove("LD_LIBRARY_PATH");
    if let Some(d) = lib_dir {
        c.env("LD_LIBRARY_PATH", d);
    }
    let o = c.output().unwrap();
    let head = |b: &[u8]| String::from_utf8_lossy(b).lines().take(5).collect::<Vec<_>>().join("\n");
    (format!("{} {}", o.status, head(&o.stdout)), head(&o.stderr))
}

#[test]
fn c_programs_bind_every_symbol_on_our_library() {
    let dir = common::library_dir("loaders");
    let mut ran = Vec::new();
    for name in PROGRAMS {
        let prog = Path::new("/usr/bin").join(name);
        if !prog.exists() {
            eprintln!("SKIP {name}: not installed");
            continue;
        }
        let trace = Command::new(&prog).env("LD_TRACE_LOADED_OBJECTS", "1").env("LD_LIBRARY_PATH", &dir).output().unwrap();
        let trace = String::from_utf8_lossy(&trace.stdout);
        assert!(
            trace.lines().any(|l| l.contains("libibverbs.so.1 =>") && l.contains(dir.to_str().unwrap())),
            "{name} does not load our library:\n{trace}"
        );
        let ours = run(&prog, Some(&dir));
        assert!(!ours.1.contains("symbol lookup error") && !ours.1.contains("version `"), "{name}: {}", ours.1);
        assert_eq!(ours, run(&prog, None), "{name} -h: left = our library, right = rdma-core's");
        ran.push(*name);
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!ran.is_empty(), "none of {PROGRAMS:?} is installed (apt install ibverbs-utils perftest rdmacm-utils)");
    eprintln!("bound on our library: {ran:?}");
}
