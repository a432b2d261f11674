//! Compares `verbs::strings` with the C library: a small C program linked
//! with `-libverbs` prints every helper's result over a range of inputs,
//! and each line must equal what the Rust functions give.
//!
//! Needs a C compiler and rdma-core's development files
//! (`libibverbs-dev`: `<infiniband/verbs.h>`, `libibverbs.so`); without
//! them the test fails with a message saying so (the VM/CI setup installs
//! them).
//!
//! The host library can be older than the rdma-core release the Rust
//! tables follow. The only such difference is listed in [`NEWER`], with
//! the rdma-core change it comes from; every other line must be identical.

use core::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

use verbs::strings::*;
use verbs::EventType;

const C_PROGRAM: &str = r#"
#include <stdio.h>
#include <infiniband/verbs.h>
int main(void) {
    int i, d;
    for (i = -2; i <= 30; i++) printf("rate_to_mult %d %d\n", i, ibv_rate_to_mult((enum ibv_rate)i));
    for (i = -2; i <= 30; i++) printf("rate_to_mbps %d %d\n", i, ibv_rate_to_mbps((enum ibv_rate)i));
    for (i = -2; i <= 500; i++) printf("mult_to_rate %d %d\n", i, (int)mult_to_ibv_rate(i));
    for (i = -2; i <= 30; i++)
        for (d = -1; d <= 1; d++) {
            int m = ibv_rate_to_mbps((enum ibv_rate)i) + d;
            printf("mbps_to_rate %d %d\n", m, (int)mbps_to_ibv_rate(m));
        }
    for (i = -3; i <= 12; i++) printf("node_type_str %d %s\n", i, ibv_node_type_str((enum ibv_node_type)i));
    for (i = -1; i <= 10; i++) printf("port_state_str %d %s\n", i, ibv_port_state_str((enum ibv_port_state)i));
    for (i = -1; i <= 25; i++) printf("event_type_str %d %s\n", i, ibv_event_type_str((enum ibv_event_type)i));
    for (i = -1; i <= 30; i++) printf("wc_status_str %d %s\n", i, ibv_wc_status_str((enum ibv_wc_status)i));
    return 0;
}
"#;

/// Lines where rdma-core's current tables (which we follow) know a value
/// the host's older libibverbs prints as "unknown":
/// `IBV_EVENT_DEVICE_SPEED_CHANGE` (rdma-core v55, 2024).
const NEWER: &[&str] = &["event_type_str 20 Device link speed change"];

fn rate(raw: i32) -> Option<Rate> {
    u32::try_from(raw).ok().and_then(Rate::from_raw)
}

fn rust_lines() -> Vec<String> {
    let mut out = Vec::new();
    let mut line = |args: core::fmt::Arguments<'_>| {
        let mut s = String::new();
        s.write_fmt(args).unwrap();
        out.push(s);
    };
    for i in -2..=30 {
        line(format_args!("rate_to_mult {i} {}", rate(i).map_or(-1, rate_to_mult)));
    }
    for i in -2..=30 {
        line(format_args!("rate_to_mbps {i} {}", rate(i).map_or(-1, rate_to_mbps)));
    }
    for i in -2..=500 {
        line(format_args!("mult_to_rate {i} {}", mult_to_rate(i) as u8));
    }
    for i in -2..=30 {
        for d in -1..=1 {
            let m = rate(i).map_or(-1, rate_to_mbps) + d;
            line(format_args!("mbps_to_rate {m} {}", mbps_to_rate(m) as u8));
        }
    }
    for i in -3..=12 {
        line(format_args!("node_type_str {i} {}", node_type_str(i)));
    }
    for i in -1i32..=10 {
        line(format_args!("port_state_str {i} {}", port_state_str(i as u32)));
    }
    for i in -1i32..=25 {
        line(format_args!("event_type_str {i} {}", event_type_str(EventType::from_raw(i as u32))));
    }
    for i in -1i32..=30 {
        line(format_args!("wc_status_str {i} {}", wc_status_str(i as u32)));
    }
    out
}

fn c_lines() -> Vec<String> {
    assert!(
        std::path::Path::new("/usr/include/infiniband/verbs.h").exists(),
        "<infiniband/verbs.h> not found: install rdma-core's development files (Debian/Ubuntu: \
         apt-get install libibverbs-dev) to compare with the C library"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("strings_vs_libibverbs");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("strs.c");
    let exe = dir.join("strs");
    std::fs::write(&src, C_PROGRAM).unwrap();
    let cc = Command::new("cc").arg("-o").arg(&exe).arg(&src).arg("-libverbs").output();
    let cc = cc.unwrap_or_else(|e| panic!("running cc: {e} (a C compiler is needed for this test)"));
    assert!(
        cc.status.success(),
        "cc -libverbs failed (is libibverbs-dev installed?):\n{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    String::from_utf8(run.stdout).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn every_helper_matches_libibverbs() {
    let c = c_lines();
    let rust = rust_lines();
    assert_eq!(c.len(), rust.len(), "the C program and the Rust side print the same inputs");
    let mut diffs = Vec::new();
    for (c, r) in c.iter().zip(&rust) {
        if c == r {
            continue;
        }
        // The older C library says "unknown" where we know the newer value.
        let older = c.strip_suffix(" unknown").is_some_and(|input| r.starts_with(&format!("{input} ")));
        if older && NEWER.contains(&r.as_str()) {
            continue;
        }
        diffs.push(format!("C: {c:?}\n   Rust: {r:?}"));
    }
    assert!(diffs.is_empty(), "{} differences:\n{}", diffs.len(), diffs.join("\n"));
}
