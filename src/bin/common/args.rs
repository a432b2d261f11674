//! `ibv_devinfo`'s command line, parsed as glibc's `getopt_long` with
//! `"d:i:lv"` does: clustered short options (`-lv`), attached or separate
//! arguments (`-drxe0`, `-d rxe0`, `--ib-dev=rxe0`, `--ib-dev rxe0`),
//! unambiguous long-option prefixes (`--verb`), operands ignored wherever
//! they are, `--` ending the options, and the same error messages.
//!
//! `-l` acts as soon as it is seen, like in rdma-core: options after it
//! are not looked at. One addition: `-h`/`--help` prints the usage and
//! succeeds (rdma-core rejects `-h` as an invalid option).

use super::getopt::strtol;

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// Print the devices' attributes.
    Show {
        /// `-d`: only this device.
        dev: Option<String>,
        /// `-i`: only this port (0: all), already cut to 8 bits as C does.
        port: u8,
        /// `-v`.
        verbose: bool,
    },
    /// `-l`: print the device names.
    List,
    /// Print the usage; `error` (for stderr) is getopt's complaint, if
    /// any, and `code` the exit status.
    Usage { error: Option<String>, code: u8 },
}

const LONG: [(&str, char, bool); 5] = [
    ("ib-dev", 'd', true),
    ("ib-port", 'i', true),
    ("list", 'l', false),
    ("verbose", 'v', false),
    ("help", 'h', false),
];

/// Parses `args` (including `args[0]`, the program name used in messages).
pub(crate) fn parse(args: &[String]) -> Command {
    let prog = args.first().map_or("verbs-devinfo", String::as_str);
    let bad = |msg: String| Command::Usage {
        error: Some(format!("{prog}: {msg}")),
        code: 255,
    };
    let (mut dev, mut port, mut verbose) = (None, 0u8, false);
    let mut i = 1;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        // (option letter, its argument if it takes one)
        let mut opts: Vec<(char, Option<String>)> = Vec::new();
        if arg == "--" {
            break;
        } else if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let exact = LONG.iter().find(|o| o.0 == name);
            let matches: Vec<_> = LONG.iter().filter(|o| o.0.starts_with(name)).collect();
            let (full, c, has_arg) = match (exact, matches.as_slice()) {
                (Some(&o), _) | (None, [&o]) => o,
                (None, []) => return bad(format!("unrecognized option '{arg}'")),
                (None, many) => {
                    let names: Vec<String> = many.iter().map(|o| format!(" '--{}'", o.0)).collect();
                    return bad(format!(
                        "option '--{name}' is ambiguous; possibilities:{}",
                        names.concat()
                    ));
                }
            };
            match (has_arg, value) {
                (true, Some(v)) => opts.push((c, Some(v))),
                (true, None) if i < args.len() => {
                    opts.push((c, Some(args[i].clone())));
                    i += 1;
                }
                (true, None) => return bad(format!("option '--{full}' requires an argument")),
                (false, Some(_)) => {
                    return bad(format!("option '--{full}' doesn't allow an argument"))
                }
                (false, None) => opts.push((c, None)),
            }
        } else if let Some(cluster) = arg.strip_prefix('-').filter(|s| !s.is_empty()) {
            for (at, c) in cluster.char_indices() {
                match c {
                    'd' | 'i' => {
                        let rest = &cluster[at + 1..];
                        let value = if !rest.is_empty() {
                            rest.to_owned()
                        } else if i < args.len() {
                            i += 1;
                            args[i - 1].clone()
                        } else {
                            return bad(format!("option requires an argument -- '{c}'"));
                        };
                        opts.push((c, Some(value)));
                        break;
                    }
                    'l' | 'v' | 'h' => opts.push((c, None)),
                    _ => return bad(format!("invalid option -- '{c}'")),
                }
            }
        }
        for (c, value) in opts {
            match c {
                'd' => dev = value,
                'i' => {
                    let p = strtol(value.as_deref().unwrap_or("")) as i32;
                    if p <= 0 {
                        return Command::Usage {
                            error: None,
                            code: 1,
                        };
                    }
                    port = p as u8;
                }
                'v' => verbose = true,
                'l' => return Command::List,
                _ => {
                    return Command::Usage {
                        error: None,
                        code: 0,
                    }
                }
            }
        }
    }
    Command::Show { dev, port, verbose }
}

/// `ibv_devinfo`'s usage text.
pub(crate) fn usage(prog: &str) -> String {
    format!(
        "Usage: {prog}             print the ca attributes\n\nOptions:\n  \
         -d, --ib-dev=<dev>     use IB device <dev> (default all devices)\n  \
         -i, --ib-port=<port>   use port <port> of IB device (default all ports)\n  \
         -l, --list             print only the IB devices names\n  \
         -v, --verbose          print all the attributes of the IB device(s)\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Command {
        let v: Vec<String> = core::iter::once("prog")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        parse(&v)
    }

    fn show(dev: Option<&str>, port: u8, verbose: bool) -> Command {
        Command::Show {
            dev: dev.map(String::from),
            port,
            verbose,
        }
    }

    #[test]
    fn getopt_forms() {
        assert_eq!(p(&[]), show(None, 0, false));
        assert_eq!(p(&["-v", "-d", "rxe0"]), show(Some("rxe0"), 0, true));
        assert_eq!(p(&["-vdrxe0", "-i2"]), show(Some("rxe0"), 2, true));
        assert_eq!(
            p(&["--ib-dev=siw0", "--ib-port", "0x1", "--verb"]),
            show(Some("siw0"), 1, true)
        );
        assert_eq!(
            p(&["operand", "--ib-d", "x", "--", "-v"]),
            show(Some("x"), 0, false)
        );
        assert_eq!(p(&["-d", "x", "-l", "-z"]), Command::List);
        assert_eq!(p(&["-i", "257"]), show(None, 1, false));
        assert_eq!(p(&["-i", "010"]), show(None, 8, false));
    }

    #[test]
    fn getopt_errors() {
        let err = |a: &[&str]| match p(a) {
            Command::Usage { error, code } => (error, code),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            err(&["-x"]),
            (Some("prog: invalid option -- 'x'".into()), 255)
        );
        assert_eq!(
            err(&["-d"]),
            (Some("prog: option requires an argument -- 'd'".into()), 255)
        );
        assert_eq!(
            err(&["--ib"]).0.unwrap(),
            "prog: option '--ib' is ambiguous; possibilities: '--ib-dev' '--ib-port'"
        );
        assert_eq!(
            err(&["--nope"]).0.unwrap(),
            "prog: unrecognized option '--nope'"
        );
        assert_eq!(
            err(&["--list=1"]).0.unwrap(),
            "prog: option '--list' doesn't allow an argument"
        );
        assert_eq!(
            err(&["--ib-port"]).0.unwrap(),
            "prog: option '--ib-port' requires an argument"
        );
        assert_eq!(err(&["-i", "0"]), (None, 1));
        assert_eq!(err(&["-i", "-3"]), (None, 1));
        assert_eq!(err(&["-i", "abc"]), (None, 1));
        assert_eq!(err(&["-h"]), (None, 0));
    }
}
