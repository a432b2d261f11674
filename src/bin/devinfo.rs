//! `verbs-devinfo`: prints RDMA devices' attributes with the output,
//! options (`-d`, `-i`, `-l`, `-v`), messages and exit codes of rdma-core's
//! `ibv_devinfo`.

mod common;

use std::io::Write as _;
use std::process::ExitCode;

use common::args::{self, Command};
use common::devlist;
use common::hca::{self, HcaId};
use verbs::discovery::{self, Device};
use verbs::Context;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let prog = argv.first().map_or("verbs-devinfo", String::as_str);
    let code = match args::parse(&argv) {
        Command::Usage { error, code } => {
            if let Some(e) = error {
                eprintln!("{e}");
            }
            out(&args::usage(prog));
            i32::from(code)
        }
        Command::List => list(),
        Command::Show { dev, port, verbose } => show(dev.as_deref(), port, verbose),
    };
    ExitCode::from((code & 0xff) as u8)
}

/// Writes to stdout; a closed stdout (`| head`) is not worth a panic.
fn out(s: &str) {
    let _ = std::io::stdout().lock().write_all(s.as_bytes());
}

/// `-l`: `N HCAs found:` and a name per line.
fn list() -> i32 {
    let devs = match discovery::devices() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{}", devlist::list_error_message(&e));
            return -1;
        }
    };
    let n = devs.len();
    let mut s = format!("{n} HCA{} found:\n", if n == 1 { "" } else { "s" });
    for d in &devs {
        s.push_str(&format!("\t{}\n", d.name()));
    }
    s.push('\n');
    out(&s);
    0
}

/// The attributes of one device (`-d`) or all; returns the exit status.
fn show(name: Option<&str>, port: u8, verbose: bool) -> i32 {
    let devs = match discovery::devices() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("{}", devlist::list_error_message(&e));
            return -1;
        }
    };
    let chosen: Vec<&Device> = match name {
        Some(n) => match devs.iter().find(|d| d.name() == n) {
            Some(d) => vec![d],
            None => {
                eprintln!("IB device '{n}' wasn't found");
                return -1;
            }
        },
        None if devs.is_empty() => {
            eprintln!("No IB devices found");
            return -1;
        }
        None => devs.iter().collect(),
    };
    let mut ret = 0;
    for dev in chosen {
        ret |= show_one(dev, port, verbose);
    }
    ret
}

fn show_one(dev: &Device, port: u8, verbose: bool) -> i32 {
    let Ok(ctx) = Context::open(dev) else {
        eprintln!("Failed to open device");
        return 1;
    };
    let id = HcaId {
        name: dev.name(),
        transport: dev.transport().as_raw(),
        board_id: dev.sysfs_attr("board_id"),
    };
    let mut text = String::new();
    let res = hca::print_hca_cap(&mut text, &id, &ctx, port, verbose);
    out(&text);
    match res {
        Ok(()) => 0,
        Err(f) => {
            eprintln!("{}", f.msg);
            f.rc
        }
    }
}
