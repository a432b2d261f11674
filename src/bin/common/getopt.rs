//! glibc's `getopt_long` as the rdma-core example programs use it, one
//! option at a time (the programs act on each option as it comes, so an
//! early bad value wins over a later unknown option), and C's `strtol` /
//! `strtoul` with base 0.
//!
//! Covered: clustered short options (`-ec`), attached or separate
//! arguments (`-p18515`, `-p 18515`, `--port=18515`, `--port 18515`),
//! unambiguous long-option prefixes (`--iter`), operands anywhere (glibc
//! permutes them to the end), `--` ending the options, and glibc's error
//! messages.

/// One `struct option` entry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LongOpt {
    /// The name without `--`.
    pub(crate) name: &'static str,
    /// `has_arg = 1` (required argument).
    pub(crate) has_arg: bool,
    /// The short option letter it stands for.
    pub(crate) val: char,
}

/// An iterator over the options of `args` (`args[0]` is the program name
/// used in messages). Each item is `Ok((letter, argument))` or `Err(msg)`
/// with glibc's complaint (without newline); after the last option,
/// [`Getopt::operands`] has the operands in order.
pub(crate) struct Getopt<'a> {
    args: &'a [String],
    short: &'static str,
    long: &'static [LongOpt],
    /// Next `args` index to look at.
    next: usize,
    /// Rest of a short-option cluster being walked.
    cluster: Option<(usize, usize)>,
    operands: Vec<String>,
    done: bool,
}

impl<'a> Getopt<'a> {
    /// `getopt_long(argc, argv, short, long, NULL)` over `args`.
    pub(crate) fn new(args: &'a [String], short: &'static str, long: &'static [LongOpt]) -> Self {
        Self {
            args,
            short,
            long,
            next: 1,
            cluster: None,
            operands: Vec::new(),
            done: false,
        }
    }

    fn prog(&self) -> &str {
        self.args.first().map_or("", String::as_str)
    }

    /// Whether short option `c` exists, and whether it takes an argument.
    fn short_spec(&self, c: char) -> Option<bool> {
        if c == ':' {
            return None;
        }
        let at = self.short.find(c)?;
        Some(self.short[at + c.len_utf8()..].starts_with(':'))
    }

    /// The operands (after the iterator returned `None`).
    pub(crate) fn operands(&self) -> &[String] {
        &self.operands
    }

    fn long_opt(&mut self, arg: &str, body: &str) -> Result<(char, Option<String>), String> {
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n, Some(v.to_owned())),
            None => (body, None),
        };
        let exact = self.long.iter().find(|o| o.name == name);
        let matches: Vec<&LongOpt> = self
            .long
            .iter()
            .filter(|o| o.name.starts_with(name))
            .collect();
        let o = match (exact, matches.as_slice()) {
            (Some(&o), _) | (None, [&o]) => o,
            (None, []) => return Err(format!("{}: unrecognized option '{arg}'", self.prog())),
            (None, many) => {
                // glibc: not ambiguous if all candidates mean the same.
                let first = many[0];
                if many
                    .iter()
                    .all(|o| o.val == first.val && o.has_arg == first.has_arg)
                {
                    *first
                } else {
                    let names: String = many.iter().map(|o| format!(" '--{}'", o.name)).collect();
                    return Err(format!(
                        "{}: option '--{name}' is ambiguous; possibilities:{names}",
                        self.prog()
                    ));
                }
            }
        };
        match (o.has_arg, value) {
            (true, Some(v)) => Ok((o.val, Some(v))),
            (true, None) if self.next < self.args.len() => {
                self.next += 1;
                Ok((o.val, Some(self.args[self.next - 1].clone())))
            }
            (true, None) => Err(format!(
                "{}: option '--{}' requires an argument",
                self.prog(),
                o.name
            )),
            (false, Some(_)) => Err(format!(
                "{}: option '--{}' doesn't allow an argument",
                self.prog(),
                o.name
            )),
            (false, None) => Ok((o.val, None)),
        }
    }
}

impl Iterator for Getopt<'_> {
    type Item = Result<(char, Option<String>), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        loop {
            if let Some((idx, pos)) = self.cluster.take() {
                let arg = &self.args[idx];
                let Some(c) = arg[pos..].chars().next() else {
                    continue;
                };
                let after = pos + c.len_utf8();
                return Some(match self.short_spec(c) {
                    None => {
                        if after < arg.len() {
                            self.cluster = Some((idx, after));
                        }
                        Err(format!("{}: invalid option -- '{c}'", self.prog()))
                    }
                    Some(false) => {
                        if after < arg.len() {
                            self.cluster = Some((idx, after));
                        }
                        Ok((c, None))
                    }
                    Some(true) if after < arg.len() => Ok((c, Some(arg[after..].to_owned()))),
                    Some(true) if self.next < self.args.len() => {
                        self.next += 1;
                        Ok((c, Some(self.args[self.next - 1].clone())))
                    }
                    Some(true) => Err(format!(
                        "{}: option requires an argument -- '{c}'",
                        self.prog()
                    )),
                });
            }
            let Some(arg) = self.args.get(self.next) else {
                self.done = true;
                return None;
            };
            self.next += 1;
            if arg == "--" {
                self.operands.extend(self.args[self.next..].iter().cloned());
                self.next = self.args.len();
                self.done = true;
                return None;
            } else if let Some(body) = arg.strip_prefix("--") {
                return Some(self.long_opt(arg, body));
            } else if arg.len() > 1 && arg.starts_with('-') {
                self.cluster = Some((self.next - 1, 1));
            } else {
                self.operands.push(arg.clone());
            }
        }
    }
}

/// C `strtol(s, NULL, 0)`: leading blanks, a sign, `0x` for hex or `0` for
/// octal, digits up to the first invalid one, saturating at the `long`
/// limits; 0 if there are no digits.
pub(crate) fn strtol(s: &str) -> i64 {
    let (neg, mag) = parse_magnitude(s);
    let v = i64::try_from(mag);
    match (neg, v) {
        (false, Ok(v)) => v,
        (false, Err(_)) => i64::MAX,
        (true, _) if mag > i64::MAX as u64 + 1 => i64::MIN,
        (true, _) => (mag as i64).wrapping_neg(),
    }
}

/// C `strtoul(s, NULL, 0)`: as [`strtol`] but unsigned, saturating at
/// `ULONG_MAX`, and a minus sign negates modulo 2^64 (`"-1"` is
/// `ULONG_MAX`).
pub(crate) fn strtoul(s: &str) -> u64 {
    let (neg, mag) = parse_magnitude(s);
    if neg {
        mag.wrapping_neg()
    } else {
        mag
    }
}

/// (sign, magnitude saturated at u64::MAX) of a C integer in base 0.
fn parse_magnitude(s: &str) -> (bool, u64) {
    let s = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let hex = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .filter(|r| r.starts_with(|c: char| c.is_ascii_hexdigit()));
    let (radix, digits) = match hex {
        Some(r) => (16, r),
        None if s.starts_with('0') => (8, s),
        None => (10, s),
    };
    let mut v: u64 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        v = v.saturating_mul(radix.into()).saturating_add(d.into());
    }
    (neg, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: &[LongOpt] = &[
        LongOpt {
            name: "port",
            has_arg: true,
            val: 'p',
        },
        LongOpt {
            name: "ib-dev",
            has_arg: true,
            val: 'd',
        },
        LongOpt {
            name: "ib-port",
            has_arg: true,
            val: 'i',
        },
        LongOpt {
            name: "events",
            has_arg: false,
            val: 'e',
        },
        LongOpt {
            name: "chk",
            has_arg: false,
            val: 'c',
        },
    ];

    type Item = Result<(char, Option<String>), String>;

    fn run(args: &[&str]) -> (Vec<Item>, Vec<String>) {
        let v: Vec<String> = core::iter::once("prog")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        let mut g = Getopt::new(&v, "p:d:i:ec", LONG);
        let items: Vec<_> = g.by_ref().collect();
        (items, g.operands().to_vec())
    }

    fn ok(c: char, v: Option<&str>) -> Item {
        Ok((c, v.map(String::from)))
    }

    #[test]
    fn forms_and_permutation() {
        let (items, ops) = run(&[
            "-ecp18515",
            "host",
            "--ib-dev=rxe0",
            "--ib-p",
            "2",
            "-d",
            "x",
        ]);
        assert_eq!(
            items,
            [
                ok('e', None),
                ok('c', None),
                ok('p', Some("18515")),
                ok('d', Some("rxe0")),
                ok('i', Some("2")),
                ok('d', Some("x"))
            ]
        );
        assert_eq!(ops, ["host"]);
        let (items, ops) = run(&["a", "--", "-e", "b"]);
        assert!(items.is_empty());
        assert_eq!(ops, ["a", "-e", "b"]);
        // A lone "-" is an operand.
        assert_eq!(run(&["-"]).1, ["-"]);
    }

    #[test]
    fn glibc_messages() {
        assert_eq!(run(&["-x"]).0, [Err("prog: invalid option -- 'x'".into())]);
        assert_eq!(
            run(&["-p"]).0,
            [Err("prog: option requires an argument -- 'p'".into())]
        );
        assert_eq!(
            run(&["--ib"]).0,
            [Err(
                "prog: option '--ib' is ambiguous; possibilities: '--ib-dev' '--ib-port'".into()
            )]
        );
        assert_eq!(
            run(&["--nope"]).0,
            [Err("prog: unrecognized option '--nope'".into())]
        );
        assert_eq!(
            run(&["--events=1"]).0,
            [Err(
                "prog: option '--events' doesn't allow an argument".into()
            )]
        );
        assert_eq!(
            run(&["--port"]).0,
            [Err("prog: option '--port' requires an argument".into())]
        );
        // getopt goes on after an invalid letter in a cluster
        assert_eq!(
            run(&["-xe"]).0,
            [Err("prog: invalid option -- 'x'".into()), ok('e', None)]
        );
    }

    #[test]
    fn c_integer_conversions() {
        assert_eq!(strtol("  42xyz"), 42);
        assert_eq!(strtol("0x1f"), 31);
        assert_eq!(strtol("010"), 8);
        assert_eq!(strtol("-3"), -3);
        assert_eq!(strtol("abc"), 0);
        assert_eq!(strtol("0x"), 0);
        assert_eq!(strtol("99999999999999999999"), i64::MAX);
        assert_eq!(strtol("-99999999999999999999"), i64::MIN);
        assert_eq!(strtoul("-1"), u64::MAX);
        assert_eq!(strtoul("4096"), 4096);
        assert_eq!(strtoul("99999999999999999999"), u64::MAX);
    }
}
