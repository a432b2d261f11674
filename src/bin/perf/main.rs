//! `verbs-perf`: our twin of perftest's `ib_send_lat`, `ib_write_lat`,
//! `ib_read_lat`, `ib_atomic_lat`, `ib_send_bw`, `ib_write_bw` and
//! `ib_read_bw` (RC), on this crate's verbs, for scripts/bench.sh and
//! scripts/main.sh. Same options as perftest (the subset the harness uses,
//! see `args`), same result table, and perftest's out-of-band exchange
//! (`exchange`), so either side can be perftest's program:
//!
//! ```text
//! verbs-perf send_lat -d rxe0 -x 1 -s 8 -n 1000 &          # server
//! ib_send_lat -d rxe0 -x 1 -s 8 -n 1000 127.0.0.1          # perftest's client
//! ```

mod args;
mod bw;
mod clock;
mod credit;
mod cm_link;
mod dest;
mod exchange;
mod lat;
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
