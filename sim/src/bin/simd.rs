//! `verbs-simd`: the simulated ConnectX daemon (see the crate docs).
//!
//! ```text
//! verbs-simd --socket PATH --sysfs DIR [--trace FILE]
//! ```
//! Writes the device's sysfs tree under DIR (export it as `SYSFS_PATH`),
//! then serves the uverbs commands of every process that opens
//! `/dev/infiniband/uverbs0` through the shim (`LD_PRELOAD` of
//! `libverbs_sim_shim.so`, `VERBS_SIM_SOCKET=PATH`). `--sysfs-only` writes
//! the tree and exits. The trace is also taken from `VERBS_SIM_TRACE`.

use std::path::PathBuf;
use std::process::ExitCode;

use verbs_sim::fixture::{self, Identity};
use verbs_sim::server::{self, Config};

fn usage() -> ExitCode {
    eprintln!("usage: verbs-simd --socket PATH --sysfs DIR [--trace FILE] [--sysfs-only]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut socket = None;
    let mut sysfs = None;
    let mut trace = std::env::var_os("VERBS_SIM_TRACE").map(PathBuf::from);
    let mut only_sysfs = false;
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--socket") => socket = args.next().map(PathBuf::from),
            Some("--sysfs") => sysfs = args.next().map(PathBuf::from),
            Some("--trace") => trace = args.next().map(PathBuf::from),
            Some("--sysfs-only") => only_sysfs = true,
            _ => return usage(),
        }
    }
    let identity = Identity::default();
    if let Some(dir) = &sysfs {
        if let Err(e) = fixture::write(dir, &identity) {
            eprintln!("verbs-simd: writing the sysfs tree in {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    }
    if only_sysfs {
        return if sysfs.is_some() { ExitCode::SUCCESS } else { usage() };
    }
    let Some(socket) = socket else { return usage() };
    let cfg = Config { socket, trace, identity, sysfs };
    match server::run(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("verbs-simd: {e}");
            ExitCode::FAILURE
        }
    }
}
