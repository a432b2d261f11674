//! `verbs-perf`'s command line: the test name, then the perftest options
//! the harness uses (`ib_send_lat -d rxe0 -x 1 -s 8 -n 1000 -F -p 18516
//! [server]` becomes `verbs-perf send_lat -d rxe0 -x 1 ...`). Short options
//! take their value separately or attached (`-s 8`, `-s8`), long ones with
//! `=` or separately (`--size=8`, `--size 8`). The last operand, if any,
//! is the server to connect to; without it we are the server.
//! Defaults are perftest 6.06's (Debian's 4.5+0.17).

/// Which perftest program we stand in for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Test {
    /// `ib_send_lat`: SEND/RECV ping-pong.
    SendLat,
    /// `ib_write_lat`: RDMA WRITE ping-pong, polling the last byte.
    WriteLat,
    /// `ib_send_bw`: SEND streaming to posted receives.
    SendBw,
    /// `ib_write_bw`: RDMA WRITE streaming.
    WriteBw,
    /// `ib_read_lat`: one RDMA READ at a time, the client only.
    ReadLat,
    /// `ib_read_bw`: RDMA READ streaming, the client only.
    ReadBw,
    /// `ib_atomic_lat`: one atomic at a time, the client only.
    AtomicLat,
}

/// perftest's `-A`: the atomic operation of `atomic_lat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Atomic {
    FetchAndAdd,
    CmpAndSwap,
}

impl Test {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Test::SendLat => "send_lat",
            Test::WriteLat => "write_lat",
            Test::SendBw => "send_bw",
            Test::WriteBw => "write_bw",
            Test::ReadLat => "read_lat",
            Test::ReadBw => "read_bw",
            Test::AtomicLat => "atomic_lat",
        }
    }

    const ALL: [Test; 7] =
        [Test::SendLat, Test::WriteLat, Test::SendBw, Test::WriteBw, Test::ReadLat, Test::ReadBw, Test::AtomicLat];

    pub(crate) fn is_lat(self) -> bool {
        matches!(self, Test::SendLat | Test::WriteLat | Test::ReadLat | Test::AtomicLat)
    }

    /// READ and atomics: the peer's outstanding-read limit matters, and
    /// latency is the whole round trip (perftest halves the others).
    pub(crate) fn is_read_or_atomic(self) -> bool {
        matches!(self, Test::ReadLat | Test::ReadBw | Test::AtomicLat)
    }

    pub(crate) fn is_send(self) -> bool {
        matches!(self, Test::SendLat | Test::SendBw)
    }
}

/// The parsed options, perftest's defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Opts {
    pub(crate) test: Test,
    /// `-d`: device name (default: the first device).
    pub(crate) dev: Option<String>,
    /// `-i`: port number (default 1).
    pub(crate) ib_port: u8,
    /// `-x`: source GID index (default: on Ethernet ports perftest's best
    /// GID, IPv4 RoCE v2 first; on InfiniBand none).
    pub(crate) gid_index: Option<u32>,
    /// `-s`: message size (default 2 for latency, 65536 for bandwidth).
    pub(crate) size: u32,
    /// `-n`: iterations per QP (default 1000; 5000 for write_bw).
    pub(crate) iters: u32,
    /// `-q`: number of QPs (bandwidth tests; default 1).
    pub(crate) qps: u32,
    /// `-l`: work requests per post_send call (default 1).
    pub(crate) post_list: u32,
    /// `-t`: send queue depth (default 1 latency, 128 bandwidth).
    pub(crate) tx_depth: u32,
    /// `-r`: receive queue depth (default 512, at most the iterations).
    pub(crate) rx_depth: u32,
    /// `-p`: TCP port of the out-of-band exchange (default 18515).
    pub(crate) port: u16,
    /// `-o`: outstanding READs/atomics (default 0: the device's maximum).
    pub(crate) outs: u32,
    /// `-A`: atomic_lat's operation (default FETCH_AND_ADD).
    pub(crate) atomic: Atomic,
    /// The server's address: we are the client. None: we are the server.
    pub(crate) server: Option<String>,
    /// `-R`: connect the QPs with rdma_cm, and exchange through an rdma_cm
    /// QP instead of TCP (perftest's `--rdma_cm`; iWARP needs it).
    pub(crate) rdma_cm: bool,
    /// `-I`: the largest message sent inline (`IBV_SEND_INLINE`; the QP is
    /// made with that `max_inline_data`). `None`: perftest's default, see
    /// [`Opts::inline_size`].
    pub(crate) inline: Option<u32>,
}

/// perftest's `DEF_INLINE_WRITE`, `DEF_INLINE_SEND_RC_UC` (perftest_parameters.h).
const DEF_INLINE_WRITE: u32 = 220;
const DEF_INLINE_SEND_RC_UC: u32 = 236;
/// perftest's `MAX_INLINE`: the largest `-I` it accepts.
const MAX_INLINE: u32 = 912;

impl Opts {
    /// The inline size perftest's `ctx_set_max_inline` settles on: none on
    /// a device perftest does not recognise (its `ib_dev_name` table of
    /// vendor part ids, which has no entry for rxe or siw: it prints
    /// "Device not recognized to implement inline feature. Disabling it" if
    /// `-I` was given), the `-I` value if given, else for latency tests
    /// 220 bytes (RDMA WRITE) or 236 (SEND on RC), and none for the rest.
    pub(crate) fn inline_size(&self, recognized: bool) -> u32 {
        match (recognized, self.inline) {
            (false, _) => 0,
            (true, Some(v)) => v,
            (true, None) => match self.test {
                Test::WriteLat => DEF_INLINE_WRITE,
                Test::SendLat => DEF_INLINE_SEND_RC_UC,
                _ => 0,
            },
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    Run(Opts),
    Help,
}

pub(crate) fn usage(prog: &str) -> String {
    format!(
        "usage: {prog} send_lat|write_lat|send_bw|write_bw|read_lat|read_bw|atomic_lat [options] [server]\n\
         \x20 -d, --ib-dev=<dev>       device (default: the first)\n\
         \x20 -i, --ib-port=<port>     port (default 1)\n\
         \x20 -x, --gid-index=<index>  source GID index (RoCE: the RoCE v2 IPv4 GID)\n\
         \x20 -s, --size=<size>        message size (default 2 latency, 65536 bandwidth)\n\
         \x20 -n, --iters=<iters>      iterations per QP (default 1000; write_bw 5000)\n\
         \x20 -q, --qp=<num>           QPs (default 1)\n\
         \x20 -l, --post_list=<n>      work requests per post_send (default 1)\n\
         \x20 -t, --tx-depth=<n>       send queue depth (default 1 latency, 128 bandwidth)\n\
         \x20 -r, --rx-depth=<n>       receive queue depth (default 512)\n\
         \x20 -p, --port=<port>        TCP port of the exchange (default 18515)\n\
         \x20 -o, --outs=<num>         outstanding READs/atomics (default: the device's maximum)\n\
         \x20 -A, --atomic_type=<type> CMP_AND_SWAP or FETCH_AND_ADD (default)\n\
         \x20 -R, --rdma_cm            connect QPs and exchange through rdma_cm (iWARP needs it)\n\
         \x20 -I, --inline_size=<size> largest message sent inline (perftest's default: 236 send_lat,\n\
         \x20                          220 write_lat, 0 others; 0 on devices perftest does not recognise)\n\
         \x20 -F, --CPU-freq           accepted and ignored (perftest compatibility)\n\
         The exchange is perftest's (version 6.06): either side may be perftest's ib_<test>.\n\
         Output: perftest's result table and a line `verbs-perf result key=value ...`.\n"
    )
}

/// (short letter, long name, takes a value)
const OPTS: [(char, &str, bool); 16] = [
    ('I', "inline_size", true),
    ('d', "ib-dev", true),
    ('i', "ib-port", true),
    ('x', "gid-index", true),
    ('s', "size", true),
    ('n', "iters", true),
    ('q', "qp", true),
    ('l', "post_list", true),
    ('t', "tx-depth", true),
    ('r', "rx-depth", true),
    ('p', "port", true),
    ('o', "outs", true),
    ('A', "atomic_type", true),
    ('F', "CPU-freq", false),
    ('R', "rdma_cm", false),
    ('h', "help", false),
];

fn num<T: core::str::FromStr>(opt: char, v: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("invalid value for -{opt}: '{v}'"))
}

/// Parses the arguments after the program name.
pub(crate) fn parse(args: &[String]) -> Result<Parsed, String> {
    let Some(first) = args.first() else { return Err("no test given".into()) };
    if matches!(first.as_str(), "-h" | "--help") {
        return Ok(Parsed::Help);
    }
    let Some(test) = Test::ALL.into_iter().find(|t| t.name() == first) else {
        let names: Vec<&str> = Test::ALL.iter().map(|t| t.name()).collect();
        return Err(format!("unknown test '{first}' ({})", names.join(", ")));
    };
    let lat = test.is_lat();
    let mut o = Opts {
        test,
        dev: None,
        ib_port: 1,
        gid_index: None,
        size: match test {
            Test::AtomicLat => 8,
            _ if lat => 2,
            _ => 65536,
        },
        iters: if test == Test::WriteBw { 5000 } else { 1000 },
        qps: 1,
        post_list: 1,
        tx_depth: if lat { 1 } else { 128 },
        rx_depth: 512,
        port: 18515,
        outs: 0,
        atomic: Atomic::FetchAndAdd,
        server: None,
        rdma_cm: false,
        inline: None,
    };
    let mut tx_given = false;
    let mut rx_given = false;
    let mut i = 1;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        let (letter, attached) = if let Some(long) = arg.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_owned())),
                None => (long, None),
            };
            let Some(o) = OPTS.iter().find(|o| o.1 == name) else {
                return Err(format!("unknown option --{name}"));
            };
            (o.0, value)
        } else if let Some(short) = arg.strip_prefix('-').filter(|s| !s.is_empty()) {
            let mut chars = short.chars();
            let c = chars.next().unwrap_or('?');
            let rest: String = chars.collect();
            (c, (!rest.is_empty()).then_some(rest))
        } else {
            if o.server.is_some() {
                return Err(format!("unexpected operand '{arg}'"));
            }
            o.server = Some(arg.clone());
            continue;
        };
        let Some(&(_, _, takes)) = OPTS.iter().find(|o| o.0 == letter) else {
            return Err(format!("unknown option -{letter}"));
        };
        let value = if takes {
            match attached {
                Some(v) => v,
                None if i < args.len() => {
                    i += 1;
                    args[i - 1].clone()
                }
                None => return Err(format!("option -{letter} needs a value")),
            }
        } else {
            if attached.is_some() {
                return Err(format!("option -{letter} takes no value"));
            }
            String::new()
        };
        match letter {
            'd' => o.dev = Some(value),
            'i' => o.ib_port = num(letter, &value)?,
            'x' => o.gid_index = Some(num(letter, &value)?),
            's' => o.size = num(letter, &value)?,
            'n' => o.iters = num(letter, &value)?,
            'q' => o.qps = num(letter, &value)?,
            'l' => o.post_list = num(letter, &value)?,
            't' => (o.tx_depth, tx_given) = (num(letter, &value)?, true),
            'r' => (o.rx_depth, rx_given) = (num(letter, &value)?, true),
            'p' => o.port = num(letter, &value)?,
            'o' => o.outs = num(letter, &value)?,
            'A' => {
                o.atomic = match value.as_str() {
                    "FETCH_AND_ADD" => Atomic::FetchAndAdd,
                    "CMP_AND_SWAP" => Atomic::CmpAndSwap,
                    v => return Err(format!("invalid value for -A: '{v}' (CMP_AND_SWAP, FETCH_AND_ADD)")),
                }
            }
            'F' => {}
            'R' => o.rdma_cm = true,
            'I' => {
                let v: u32 = num(letter, &value)?;
                if v > MAX_INLINE {
                    return Err(format!("-I {v}: perftest takes at most {MAX_INLINE}"));
                }
                if test.is_read_or_atomic() {
                    return Err("inline data is not available with READ or atomics".into());
                }
                o.inline = Some(v);
            }
            _ => return Ok(Parsed::Help),
        }
    }
    if o.iters < 5 {
        return Err("iterations must be at least 5".into());
    }
    if o.qps == 0 || o.post_list == 0 || o.tx_depth == 0 || o.rx_depth == 0 {
        return Err("-q, -l, -t and -r must be at least 1".into());
    }
    if lat && (o.qps != 1 || o.post_list != 1) {
        return Err("latency tests use one QP and no post list".into());
    }
    if test == Test::AtomicLat && o.size != 8 {
        return Err("atomic_lat moves 8 bytes (-s 8)".into());
    }
    if !tx_given && o.post_list > o.tx_depth {
        o.tx_depth = o.post_list;
    }
    if o.post_list > o.tx_depth {
        return Err(format!("post list {} is longer than the send queue ({})", o.post_list, o.tx_depth));
    }
    if !rx_given {
        o.rx_depth = o.rx_depth.min(o.iters);
    }
    Ok(Parsed::Run(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn run(s: &str) -> Opts {
        match parse(&args(s)) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn perftest_command_line_as_the_harness_writes_it() {
        let o = run("send_lat -d rxe0 -x 1 -s 64 -n 3000 -F -p 18530 127.0.0.1");
        assert_eq!(o.test, Test::SendLat);
        assert_eq!(o.dev.as_deref(), Some("rxe0"));
        assert_eq!((o.gid_index, o.size, o.iters, o.port), (Some(1), 64, 3000, 18530));
        assert_eq!(o.server.as_deref(), Some("127.0.0.1"));
        assert_eq!((o.qps, o.post_list, o.tx_depth, o.ib_port), (1, 1, 1, 1));
        let o = run("write_bw -d rxe0 -x 1 -s 8 -n 20000 -q 4 -l 8 -F -p 18600");
        assert_eq!((o.test, o.qps, o.post_list, o.size, o.iters), (Test::WriteBw, 4, 8, 8, 20000));
        assert_eq!(o.server, None, "no operand: server side");
        assert_eq!((o.tx_depth, o.rx_depth), (128, 512));
    }

    #[test]
    fn defaults_attached_and_long_forms() {
        let o = run("send_bw");
        assert_eq!((o.size, o.iters, o.port, o.gid_index), (65536, 1000, 18515, None));
        assert_eq!(run("write_bw").iters, 5000);
        let o = run("write_lat -s8 --iters=10 --ib-dev rxe1 --gid-index=3 host");
        assert_eq!((o.size, o.iters, o.gid_index), (8, 10, Some(3)));
        assert_eq!((o.dev.as_deref(), o.server.as_deref()), (Some("rxe1"), Some("host")));
        let o = run("atomic_lat -A CMP_AND_SWAP -o 4");
        assert_eq!((o.size, o.atomic, o.outs, o.tx_depth), (8, Atomic::CmpAndSwap, 4, 1));
        assert_eq!(run("read_lat").test, Test::ReadLat);
        assert_eq!((run("read_bw -q 2").size, run("read_bw").tx_depth), (65536, 128));
        // rx depth follows small iteration counts unless given
        assert_eq!(run("send_bw -n 100").rx_depth, 100);
        assert_eq!(run("send_bw -n 100 -r 50").rx_depth, 50);
        // a post list longer than the default SQ grows it
        assert_eq!(run("send_bw -l 256").tx_depth, 256);
    }

    #[test]
    fn inline_size_as_perftest_settles_it() {
        // perftest_parameters.c ctx_set_max_inline: latency defaults on a
        // device it recognises, none on one it does not, -I as given.
        let (send, write) = (run("send_lat"), run("write_lat"));
        assert_eq!((send.inline_size(true), write.inline_size(true)), (236, 220));
        assert_eq!((send.inline_size(false), write.inline_size(false)), (0, 0));
        assert_eq!((run("send_bw").inline_size(true), run("write_bw").inline_size(true)), (0, 0));
        assert_eq!(run("send_lat -I 64").inline_size(true), 64);
        assert_eq!(run("write_bw --inline_size=16").inline_size(true), 16);
        assert_eq!(run("send_lat -I 64").inline_size(false), 0);
        assert!(parse(&args("read_lat -I 8")).is_err());
        assert!(parse(&args("send_lat -I 913")).is_err());
    }

    #[test]
    fn bad_command_lines_are_refused() {
        for bad in [
            "",
            "read_latency",
            "atomic_lat -s 4",
            "atomic_lat -A ADD",
            "send_lat -s",
            "send_lat -s x",
            "send_lat -z 1",
            "send_lat --bogus=1",
            "send_lat -n 4",
            "send_lat -q 2",
            "send_bw -l 0",
            "send_bw -t 4 -l 8",
            "send_lat a b",
            "send_lat -Fx",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?} was accepted");
        }
        assert_eq!(parse(&args("send_lat -h")), Ok(Parsed::Help));
        assert_eq!(parse(&args("--help")), Ok(Parsed::Help));
    }
}
