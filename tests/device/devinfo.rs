//! `verbs-devinfo` / `verbs-devices` against rdma-core's `ibv_devinfo` /
//! `ibv_devices` on the same devices: every field both print must be equal,
//! and ours must print nearly all of rdma-core's fields.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use super::common::{rxe_name, siw_name};

const DEVINFO: &str = env!("CARGO_BIN_EXE_verbs-devinfo");
const DEVICES: &str = env!("CARGO_BIN_EXE_verbs-devices");

/// Runs `prog args`, asserts it succeeded, returns its stdout.
fn run(prog: &str, args: &[&str]) -> String {
    let out = Command::new(prog).args(args).output().unwrap_or_else(|e| {
        panic!("cannot run {prog} (rdma-core's ibverbs-utils installed?): {e}")
    });
    assert!(
        out.status.success(),
        "{prog} {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("output is UTF-8")
}

/// Parses `ibv_devinfo` output into `key -> value`.
///
/// The key is the path of the field: `hca/<name>`, then `port <n>` for port
/// fields, then the enclosing heading for indented sub-fields
/// (`tso_caps/max_tso`), then the field name (`GID[  1]` included). Lines
/// of five tabs (flag names) are appended to the value of the field above.
/// Lines without `:<tab>` (`core clock not supported`) are keys with an
/// empty value.
fn parse(text: &str) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let (mut hca, mut port, mut heading) = (String::new(), String::new(), String::new());
    let mut last: Option<String> = None;
    for line in text.lines() {
        let tabs = line.len() - line.trim_start_matches('\t').len();
        let body = line.trim();
        if body.is_empty() {
            continue;
        }
        if tabs >= 5 {
            let key = last
                .clone()
                .unwrap_or_else(|| panic!("flag line {line:?} follows no field"));
            let v: &mut String = map.get_mut(&key).expect("last key present");
            v.push('|');
            v.push_str(body);
            continue;
        }
        // `name:<tabs>value`, `heading:`, or a sentence without a value.
        let (name, value) = match (body.split_once(":\t"), body.strip_suffix(':')) {
            (Some((n, v)), _) => (n.trim(), v.trim()),
            (None, Some(n)) => (n, ""),
            (None, None) => (body, ""),
        };
        if tabs == 0 && name == "hca_id" {
            (hca, port, heading) = (value.to_owned(), String::new(), String::new());
            continue;
        }
        if tabs == 2 && name == "port" {
            (port, heading) = (format!("port {value}"), String::new());
            continue;
        }
        let depth_base = if port.is_empty() { 1 } else { 3 };
        if tabs == depth_base {
            heading = if value.is_empty() {
                name.to_owned()
            } else {
                String::new()
            };
        }
        let mut key = format!("hca {hca}/");
        if !port.is_empty() {
            key += &port;
            key.push('/');
        }
        if tabs > depth_base && !heading.is_empty() {
            key += &heading;
            key.push('/');
        }
        key += name;
        assert!(
            map.insert(key.clone(), value.to_owned()).is_none(),
            "field {key} printed twice"
        );
        last = Some(key);
    }
    map
}

fn compare_devinfo(dev: &str) {
    let theirs = parse(&run("ibv_devinfo", &["-v", "-d", dev]));
    let ours = parse(&run(DEVINFO, &["-v", "-d", dev]));
    assert!(
        theirs.len() > 40,
        "ibv_devinfo -v -d {dev} printed only {} fields",
        theirs.len()
    );
    let mut differ = Vec::new();
    let mut both = 0;
    for (k, v) in &theirs {
        if let Some(o) = ours.get(k) {
            both += 1;
            if o != v {
                differ.push(format!("{k}: ibv_devinfo {v:?}, verbs-devinfo {o:?}"));
            }
        }
    }
    let only_theirs: Vec<_> = theirs.keys().filter(|k| !ours.contains_key(*k)).collect();
    let only_ours: Vec<_> = ours.keys().filter(|k| !theirs.contains_key(*k)).collect();
    println!(
        "{dev}: {both} fields in both, {} only in ibv_devinfo: {only_theirs:?}",
        only_theirs.len()
    );
    println!(
        "{dev}: {} only in verbs-devinfo: {only_ours:?}",
        only_ours.len()
    );
    assert!(
        differ.is_empty(),
        "{dev}: fields that differ:\n{}",
        differ.join("\n")
    );
    assert!(
        both * 10 >= theirs.len() * 9,
        "{dev}: only {both} of ibv_devinfo's {} fields printed by verbs-devinfo",
        theirs.len()
    );
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn devinfo_verbose_matches_rdma_core_rxe() {
    compare_devinfo(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn devinfo_verbose_matches_rdma_core_siw() {
    compare_devinfo(&siw_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn devinfo_port_selection_matches_rdma_core() {
    for dev in [rxe_name(), siw_name()] {
        let theirs = run("ibv_devinfo", &["-d", &dev, "-i", "1"]);
        let ours = run(DEVINFO, &["--ib-dev", &dev, "--ib-port=1"]);
        assert_eq!(parse(&ours), parse(&theirs), "{dev} port 1");
    }
}

fn line_set(text: &str) -> BTreeSet<String> {
    text.lines().map(str::to_owned).collect()
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn devices_and_list_match_rdma_core() {
    let theirs = run("ibv_devices", &[]);
    let ours = run(DEVICES, &[]);
    assert!(
        theirs.lines().count() >= 3,
        "ibv_devices lists no device:\n{theirs}"
    );
    assert_eq!(
        line_set(&ours),
        line_set(&theirs),
        "verbs-devices:\n{ours}\nibv_devices:\n{theirs}"
    );
    assert_eq!(ours.lines().count(), theirs.lines().count());

    let theirs = run("ibv_devinfo", &["-l"]);
    let ours = run(DEVINFO, &["-l"]);
    assert_eq!(
        ours.lines().next(),
        theirs.lines().next(),
        "the `N HCAs found:` line"
    );
    assert_eq!(line_set(&ours), line_set(&theirs));
    for dev in [rxe_name(), siw_name()] {
        assert!(
            ours.lines().any(|l| l == format!("\t{dev}")),
            "{dev} missing from -l:\n{ours}"
        );
    }
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn devinfo_errors_match_rdma_core() {
    let rxe = rxe_name();
    for args in [
        &["-d", "no-such-dev0"][..],
        &["-d", &rxe, "-i", "9"],
        &["-i", "0"],
        &["-z"],
    ] {
        let theirs = Command::new("ibv_devinfo")
            .args(args)
            .output()
            .expect("run ibv_devinfo");
        let ours = Command::new(DEVINFO)
            .args(args)
            .output()
            .expect("run verbs-devinfo");
        assert_eq!(
            ours.status.code(),
            theirs.status.code(),
            "exit status of {args:?}"
        );
        let msg = |o: &std::process::Output| {
            let s = String::from_utf8_lossy(&o.stderr).replace("ibv_devinfo", "PROG");
            s.replace(DEVINFO, "PROG")
        };
        assert_eq!(msg(&ours), msg(&theirs), "stderr of {args:?}");
    }
}

#[test]
fn parser_keys_fields_by_section() {
    let text = "hca_id:\trxe0\n\tfw_ver:\t\t\t\t0.0.0\n\tdevice_cap_flags:\t\t0x00000006\n\t\t\t\t\tBAD_PKEY_CNTR\n\
                \t\t\t\t\tBAD_QKEY_CNTR\n\ttso_caps:\n\t\tmax_tso:\t\t\t0\n\tcore clock not supported\n\
                \tcompletion timestamp_mask:\t\t\t0x0f\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tGID[  0]:\t\tfe80::1, RoCE v2\n\n";
    let m = parse(text);
    let get = |k: &str| m.get(k).map(String::as_str);
    assert_eq!(get("hca rxe0/fw_ver"), Some("0.0.0"));
    assert_eq!(
        get("hca rxe0/device_cap_flags"),
        Some("0x00000006|BAD_PKEY_CNTR|BAD_QKEY_CNTR")
    );
    assert_eq!(get("hca rxe0/tso_caps/max_tso"), Some("0"));
    assert_eq!(get("hca rxe0/core clock not supported"), Some(""));
    assert_eq!(get("hca rxe0/port 1/state"), Some("PORT_ACTIVE (4)"));
    assert_eq!(get("hca rxe0/port 1/GID[  0]"), Some("fe80::1, RoCE v2"));
    assert_eq!(get("hca rxe0/completion timestamp_mask"), Some("0x0f"));
    assert_eq!(m.len(), 8);
}
