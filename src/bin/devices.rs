//! `verbs-devices`: lists RDMA devices and their node GUIDs, with the
//! output of rdma-core's `ibv_devices`.

#[path = "common/devlist.rs"]
mod devlist;

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    let list = match verbs::discovery::devices() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("{}", devlist::list_error_message(&e));
            return ExitCode::from(1);
        }
    };
    let mut out = String::new();
    out.push_str(&format!("    {:<16}\t   node GUID\n", "device"));
    out.push_str(&format!("    {:<16}\t----------------\n", "------"));
    for dev in &list {
        out.push_str(&format!("    {:<16}\t{:016x}\n", dev.name(), dev.guid()));
    }
    // A closed stdout (`| head`) is not an error worth reporting.
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    ExitCode::SUCCESS
}
