//! `verbs-perf`: our twin of perftest's `ib_send_lat`, `ib_write_lat`,
//! `ib_send_bw` and `ib_write_bw`, on this crate's verbs, for
//! scripts/bench.sh. Same options as perftest (the subset the harness uses,
//! see `args`), same result table; the out-of-band exchange is our own TCP
//! protocol, so it talks to another `verbs-perf` (not to perftest).
//!
//! ```text
//! verbs-perf send_lat -d rxe0 -x 1 -s 8 -n 1000 &          # server
//! verbs-perf send_lat -d rxe0 -x 1 -s 8 -n 1000 127.0.0.1  # client
//! ```

mod args;
mod exchange;
mod report;
mod run;

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let prog = argv.first().map_or("verbs-perf", String::as_str);
    let opts = match args::parse(argv.get(1..).unwrap_or(&[])) {
        Ok(args::Parsed::Run(o)) => o,
        Ok(args::Parsed::Help) => {
            print!("{}", args::usage(prog));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{prog}: {e}");
            eprint!("{}", args::usage(prog));
            return ExitCode::from(2);
        }
    };
    match run::run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{prog}: {e}");
            ExitCode::FAILURE
        }
    }
}
