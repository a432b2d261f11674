//! `VERBS_LOG_LEVEL` / `VERBS_LOG_FILE` on our `libibverbs.so.1` (issue
//! 14 item 5), read as rdma-core's release build reads them
//! (`ibverbs_init`): a level with a file appends the log to that file; a
//! level without a usable file logs nothing, so an unmodified C program
//! prints the same as on rdma-core's library; level 0 does not create the
//! file. What our log holds that rdma-core's does not: every failure a C
//! caller sees as an errno value, with the verb and its cause.

use std::path::Path;
use std::process::{Command, Output};

use super::capi::{compile_c, library_dir};
use super::common::rxe_name;

fn run(prog: &Path, args: &[&str], lib: Option<&Path>, env: &[(&str, &Path)]) -> Output {
    let mut c = Command::new(prog);
    c.args(args);
    for v in ["LD_LIBRARY_PATH", "VERBS_LOG_LEVEL", "VERBS_LOG_FILE", "IBV_SHOW_WARNINGS"] {
        c.env_remove(v);
    }
    if let Some(d) = lib {
        c.env("LD_LIBRARY_PATH", d);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap_or_else(|e| panic!("cannot run {}: {e}", prog.display()))
}

fn shown(o: &Output) -> String {
    format!("{}\n--- stdout\n{}--- stderr\n{}", o.status, String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
#[ignore = "device test: needs rxe0 (run in the VM)"]
fn capi_verbs_log_level_and_file_as_rdma_core_release() {
    let dir = library_dir();
    let exe = compile_c("capi_log");
    let dev = rxe_name();
    let file = dir.join("verbs.log");
    let level4 = Path::new("4");

    let baseline = run(&exe, &[&dev], Some(&dir), &[]);
    assert!(baseline.status.success(), "{}", shown(&baseline));
    assert!(String::from_utf8_lossy(&baseline.stdout).contains("100000 send SGEs: refused"), "{}", shown(&baseline));
    // rdma-core's library answers the same.
    let theirs = run(&exe, &[&dev], None, &[]);
    assert_eq!(shown(&baseline), shown(&theirs), "left: ours, right: rdma-core's");

    // A level and a file: the program's output is unchanged, the file is
    // appended to with discovery's debug lines and the refused verb.
    std::fs::write(&file, "earlier line\n").unwrap();
    let logged = run(&exe, &[&dev], Some(&dir), &[("VERBS_LOG_LEVEL", level4), ("VERBS_LOG_FILE", &file)]);
    assert_eq!(shown(&logged), shown(&baseline), "the log must go to the file only");
    let log = std::fs::read_to_string(&file).unwrap();
    assert!(log.starts_with("earlier line\n"), "the file is appended to:\n{log}");
    assert!(log.lines().skip(1).all(|l| l.starts_with("libibverbs: ")), "{log}");
    let qp_line = log.lines().find(|l| l.starts_with("libibverbs: ibv_create_qp: ")).map(str::to_owned);
    let qp_line = qp_line.unwrap_or_else(|| panic!("no line for the refused ibv_create_qp in:\n{log}"));
    assert!(qp_line.contains("max_send_sge"), "the cause is not named: {qp_line}");
    assert!(log.lines().count() > 2, "discovery's debug lines are missing:\n{log}");

    // Level 1 (errors only): just the refusal.
    std::fs::remove_file(&file).unwrap();
    run(&exe, &[&dev], Some(&dir), &[("VERBS_LOG_LEVEL", Path::new("1")), ("VERBS_LOG_FILE", &file)]);
    let errors = std::fs::read_to_string(&file).unwrap();
    assert_eq!(errors.lines().collect::<Vec<_>>(), [qp_line.as_str()], "level 1:\n{errors}");

    // A level without a file, or with one that cannot be opened: nothing
    // anywhere (rdma-core's release build), for this program and for
    // ibv_devinfo, whose output stays identical to rdma-core's.
    let bad = dir.join("missing-dir/verbs.log");
    for env in [vec![("VERBS_LOG_LEVEL", level4)], vec![("VERBS_LOG_LEVEL", level4), ("VERBS_LOG_FILE", bad.as_path())]] {
        let o = run(&exe, &[&dev], Some(&dir), &env);
        assert_eq!(shown(&o), shown(&baseline), "{env:?}");
        let devinfo = Path::new("/usr/bin/ibv_devinfo");
        let ours = run(devinfo, &["-d", &dev], Some(&dir), &env);
        let theirs = run(devinfo, &["-d", &dev], None, &env);
        assert_eq!(shown(&ours), shown(&theirs), "ibv_devinfo with {env:?}: left ours, right rdma-core's");
    }
    assert!(!bad.exists());

    // Level 0 with a file: the file is not created.
    std::fs::remove_file(&file).unwrap();
    run(&exe, &[&dev], Some(&dir), &[("VERBS_LOG_LEVEL", Path::new("0")), ("VERBS_LOG_FILE", &file)]);
    assert!(!file.exists(), "level 0 must not create the log file");
    let _ = std::fs::remove_dir_all(&dir);
}
