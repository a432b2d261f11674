//! The command lines of rdma-core's `ibv_rc_pingpong`, `ibv_ud_pingpong`
//! and `ibv_srq_pingpong` (libibverbs/examples): the same short and long
//! options, defaults, value checks, messages, usage text and exit status 1.

use super::super::getopt::{strtol, strtoul, Getopt, LongOpt};
use verbs::qp::Mtu;

/// Which of the three programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tool {
    /// `ibv_rc_pingpong`.
    Rc,
    /// `ibv_ud_pingpong`.
    Ud,
    /// `ibv_srq_pingpong`.
    Srq,
}

/// `MAX_QP` of `srq_pingpong.c`: the number of addresses always exchanged.
pub(crate) const MAX_QP: usize = 256;

/// The parsed command line (C's variables after the `getopt_long` loop).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Opts {
    /// `-p`: TCP port (default 18515).
    pub(crate) port: u16,
    /// `-d`: device name (default: the first device).
    pub(crate) ib_dev: Option<String>,
    /// `-i`: device port (default 1); C keeps an `int` >= 1 and passes it
    /// on as `uint8_t`.
    pub(crate) ib_port: u8,
    /// `-s`: message size (rc, srq 4096; ud 1024 although its usage says 2048).
    pub(crate) size: u32,
    /// `-m`: path MTU (rc, srq; default 1024).
    pub(crate) mtu: Mtu,
    /// `-r`: receives posted at a time (default 500).
    pub(crate) rx_depth: u32,
    /// `-n`: exchanges (default 1000).
    pub(crate) iters: u32,
    /// `-l`: service level (default 0), an `int` in C.
    pub(crate) sl: i32,
    /// `-e`: sleep on CQ events.
    pub(crate) events: bool,
    /// `-g`: local GID index (default -1: no GID, zeros on the wire).
    pub(crate) gid_idx: i32,
    /// `-q` (srq): number of QPs (default 16).
    pub(crate) num_qp: u32,
    /// `-c`: validate the received buffer.
    pub(crate) chk: bool,
    /// `-o` (rc, srq): on-demand paging.
    pub(crate) odp: bool,
    /// `-O` (rc): implicit on-demand paging.
    pub(crate) implicit_odp: bool,
    /// `-P` (rc): prefetch the ODP MR.
    pub(crate) prefetch: bool,
    /// `-t` (rc): completion timestamps.
    pub(crate) ts: bool,
    /// `-j` (rc): device memory.
    pub(crate) dm: bool,
    /// `-N` (rc): the `ibv_wr_*` send API.
    pub(crate) new_send: bool,
    /// `-U` (rc): CoCo unprotected memory.
    pub(crate) cc_unprotected: bool,
    /// The operand: connect to this server; `None`: be the server.
    pub(crate) server: Option<String>,
}

/// Why the program stops before doing anything: exit status 1 after
/// `stderr` (if any) and, if `usage`, the usage text on stdout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stop {
    /// The message for stderr (without newline).
    pub(crate) stderr: Option<String>,
    /// Print the usage text on stdout.
    pub(crate) usage: bool,
}

const fn lo(name: &'static str, has_arg: bool, val: char) -> LongOpt {
    LongOpt { name, has_arg, val }
}

const RC_LONG: &[LongOpt] = &[
    lo("port", true, 'p'),
    lo("ib-dev", true, 'd'),
    lo("ib-port", true, 'i'),
    lo("size", true, 's'),
    lo("mtu", true, 'm'),
    lo("rx-depth", true, 'r'),
    lo("iters", true, 'n'),
    lo("sl", true, 'l'),
    lo("events", false, 'e'),
    lo("gid-idx", true, 'g'),
    lo("odp", false, 'o'),
    lo("iodp", false, 'O'),
    lo("prefetch", false, 'P'),
    lo("ts", false, 't'),
    lo("chk", false, 'c'),
    lo("dm", false, 'j'),
    lo("new_send", false, 'N'),
    lo("allow-cc-unprotected", false, 'U'),
];

const UD_LONG: &[LongOpt] = &[
    lo("port", true, 'p'),
    lo("ib-dev", true, 'd'),
    lo("ib-port", true, 'i'),
    lo("size", true, 's'),
    lo("rx-depth", true, 'r'),
    lo("iters", true, 'n'),
    lo("sl", true, 'l'),
    lo("events", false, 'e'),
    lo("gid-idx", true, 'g'),
    lo("chk", false, 'c'),
];

const SRQ_LONG: &[LongOpt] = &[
    lo("port", true, 'p'),
    lo("ib-dev", true, 'd'),
    lo("ib-port", true, 'i'),
    lo("size", true, 's'),
    lo("mtu", true, 'm'),
    lo("num-qp", true, 'q'),
    lo("rx-depth", true, 'r'),
    lo("iters", true, 'n'),
    lo("sl", true, 'l'),
    lo("events", false, 'e'),
    lo("odp", false, 'o'),
    lo("gid-idx", true, 'g'),
    lo("chk", false, 'c'),
];

/// `pp_mtu_to_enum`.
pub(crate) fn mtu_from_bytes(mtu: i64) -> Option<Mtu> {
    Some(match mtu {
        256 => Mtu::Mtu256,
        512 => Mtu::Mtu512,
        1024 => Mtu::Mtu1024,
        2048 => Mtu::Mtu2048,
        4096 => Mtu::Mtu4096,
        _ => return None,
    })
}

/// Parses `args` (with `args[0]`) as `tool`'s `main` does, including the
/// checks it makes before opening a device.
pub(crate) fn parse(tool: Tool, args: &[String]) -> Result<Opts, Stop> {
    let (short, long) = match tool {
        Tool::Rc => ("p:d:i:s:m:r:n:l:eg:oOPtcjNU", RC_LONG),
        Tool::Ud => ("p:d:i:s:r:n:l:eg:c", UD_LONG),
        Tool::Srq => ("p:d:i:s:m:q:r:n:l:eog:c", SRQ_LONG),
    };
    let usage = |stderr: Option<String>| Stop {
        stderr,
        usage: true,
    };
    let fail = |msg: String| Stop {
        stderr: Some(msg),
        usage: false,
    };
    let mut o = Opts {
        port: 18515,
        ib_dev: None,
        ib_port: 1,
        size: if tool == Tool::Ud { 1024 } else { 4096 },
        mtu: Mtu::Mtu1024,
        rx_depth: 500,
        iters: 1000,
        sl: 0,
        events: false,
        gid_idx: -1,
        num_qp: 16,
        chk: false,
        odp: false,
        implicit_odp: false,
        prefetch: false,
        ts: false,
        dm: false,
        new_send: false,
        cc_unprotected: false,
        server: None,
    };
    let mut g = Getopt::new(args, short, long);
    for item in g.by_ref() {
        let (c, arg) = item.map_err(|e| usage(Some(e)))?;
        let arg = arg.unwrap_or_default();
        match c {
            'p' => {
                // ud parses with strtol into an unsigned int; the same bits.
                let port = strtoul(&arg) as u32;
                if port > 65535 {
                    return Err(usage(None));
                }
                o.port = port as u16;
            }
            'd' => o.ib_dev = Some(arg),
            'i' => {
                let p = strtol(&arg) as i32;
                if p < 1 {
                    return Err(usage(None));
                }
                o.ib_port = p as u8;
            }
            's' => {
                o.size = strtoul(&arg) as u32;
                if tool == Tool::Srq && o.size < 1 {
                    return Err(usage(None));
                }
            }
            'm' => o.mtu = mtu_from_bytes(strtol(&arg) as i32 as i64).ok_or(usage(None))?,
            'q' => o.num_qp = strtoul(&arg) as u32,
            'r' => o.rx_depth = strtoul(&arg) as u32,
            'n' => o.iters = strtoul(&arg) as u32,
            'l' => o.sl = strtol(&arg) as i32,
            'e' => o.events = true,
            'g' => o.gid_idx = strtol(&arg) as i32,
            'c' => o.chk = true,
            'o' => o.odp = true,
            'O' => {
                o.odp = true;
                o.implicit_odp = true;
            }
            'P' => o.prefetch = true,
            't' => o.ts = true,
            'j' => o.dm = true,
            'N' => o.new_send = true,
            'U' => o.cc_unprotected = true,
            _ => return Err(usage(None)),
        }
    }
    match g.operands() {
        [] => {}
        [host] => o.server = Some(host.clone()),
        _ => return Err(usage(None)),
    }
    match tool {
        Tool::Rc => {
            if o.odp && o.dm {
                return Err(fail("DM memory region can't be on demand".into()));
            }
            if o.cc_unprotected && o.odp {
                return Err(fail(
                    "CoCo unprotected memory cannot be used with ODP".into(),
                ));
            }
            if o.cc_unprotected && o.dm {
                return Err(fail(
                    "CoCo unprotected memory cannot be used with device memory".into(),
                ));
            }
            if !o.odp && o.prefetch {
                return Err(fail(
                    "prefetch is valid only with on-demand memory region".into(),
                ));
            }
        }
        Tool::Srq => {
            if o.num_qp > o.rx_depth {
                return Err(fail(format!(
                    "rx_depth {} is too small for {} QPs -- must have at least one receive per QP.",
                    o.rx_depth as i32, o.num_qp as i32
                )));
            }
            if o.num_qp as usize >= MAX_QP {
                return Err(fail(format!(
                    "num_qp {} must be less than {}",
                    o.num_qp as i32,
                    MAX_QP - 1
                )));
            }
        }
        Tool::Ud => {}
    }
    Ok(o)
}

/// The usage text, word for word (tabs included) as the C programs print it.
pub(crate) fn usage(tool: Tool, prog: &str) -> String {
    let mut s = format!(
        "Usage:\n  {prog}            start a server and wait for connection\n  \
         {prog} <host>     connect to server at <host>\n\nOptions:\n  \
         -p, --port=<port>      listen on/connect to port <port> (default 18515)\n  \
         -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n  \
         -i, --ib-port=<port>   use port <port> of IB device (default 1)\n"
    );
    let rest: &[&str] = match tool {
        Tool::Rc => &[
            "  -s, --size=<size>      size of message to exchange (default 4096)\n",
            "  -m, --mtu=<size>       path MTU (default 1024)\n",
            "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n",
            "  -n, --iters=<iters>    number of exchanges (default 1000)\n",
            "  -l, --sl=<sl>          service level value\n",
            "  -e, --events           sleep on CQ events (default poll)\n",
            "  -g, --gid-idx=<gid index> local port gid index\n",
            "  -o, --odp\t\t    use on demand paging\n",
            "  -O, --iodp\t\t    use implicit on demand paging\n",
            "  -P, --prefetch\t    prefetch an ODP MR\n",
            "  -t, --ts\t            get CQE with timestamp\n",
            "  -c, --chk\t            validate received buffer\n",
            "  -j, --dm\t            use device memory\n",
            "  -N, --new_send            use new post send WR API\n",
            "  -U, --allow-cc-unprotected  allow allocation of unprotected/shared\n",
            "                            memory on CoCo guests\n",
        ],
        Tool::Ud => &[
            "  -s, --size=<size>      size of message to exchange (default 2048)\n",
            "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n",
            "  -n, --iters=<iters>    number of exchanges (default 1000)\n",
            "  -l, --sl=<SL>          send messages with service level <SL> (default 0)\n",
            "  -e, --events           sleep on CQ events (default poll)\n",
            "  -g, --gid-idx=<gid index> local port gid index\n",
            "  -c, --chk              validate received buffer\n",
        ],
        Tool::Srq => &[
            "  -s, --size=<size>      size of message to exchange (default 4096)\n",
            "  -m, --mtu=<size>       path MTU (default 1024)\n",
            "  -q, --num-qp=<num>     number of QPs to use (default 16)\n",
            "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n",
            "  -n, --iters=<iters>    number of exchanges per QP(default 1000)\n",
            "  -l, --sl=<sl>          service level value\n",
            "  -e, --events           sleep on CQ events (default poll)\n",
            "  -g, --gid-idx=<gid index> local port gid index\n",
            "  -o, --odp\t\t    use on demand paging\n",
            "  -c, --chk              validate received buffer\n",
        ],
    };
    rest.iter().for_each(|l| s.push_str(l));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(tool: Tool, args: &[&str]) -> Result<Opts, Stop> {
        let v: Vec<String> = core::iter::once("prog")
            .chain(args.iter().copied())
            .map(String::from)
            .collect();
        parse(tool, &v)
    }

    fn usage_only() -> Stop {
        Stop {
            stderr: None,
            usage: true,
        }
    }

    #[test]
    fn defaults_as_in_the_c_programs() {
        let rc = p(Tool::Rc, &[]).unwrap();
        assert_eq!(
            (rc.port, rc.ib_dev.as_deref(), rc.ib_port, rc.size, rc.mtu),
            (18515, None, 1, 4096, Mtu::Mtu1024)
        );
        assert_eq!(
            (rc.rx_depth, rc.iters, rc.sl, rc.events, rc.gid_idx),
            (500, 1000, 0, false, -1)
        );
        assert_eq!((rc.chk, rc.server.as_deref()), (false, None));
        let ud = p(Tool::Ud, &[]).unwrap();
        // ud_pingpong.c: `size = 1024` (its usage text claims 2048)
        assert_eq!(ud.size, 1024);
        let srq = p(Tool::Srq, &[]).unwrap();
        assert_eq!((srq.size, srq.num_qp, srq.rx_depth), (4096, 16, 500));
    }

    #[test]
    fn every_required_option_short_and_long() {
        let o = p(
            Tool::Srq,
            &[
                "-p", "0x4000", "-d", "rxe0", "-i2", "-s", "64", "-m", "2048", "-q", "4", "-r", "8",
            ],
        )
        .unwrap();
        assert_eq!(
            (o.port, o.ib_dev.as_deref(), o.ib_port, o.size),
            (0x4000, Some("rxe0"), 2, 64)
        );
        assert_eq!((o.mtu, o.num_qp, o.rx_depth), (Mtu::Mtu2048, 4, 8));
        let o = p(
            Tool::Rc,
            &[
                "--iters=20",
                "--sl",
                "3",
                "--events",
                "--gid-idx=1",
                "--chk",
                "127.0.0.1",
                "-e",
            ],
        )
        .unwrap();
        assert_eq!(
            (o.iters, o.sl, o.events, o.gid_idx, o.chk),
            (20, 3, true, 1, true)
        );
        assert_eq!(o.server.as_deref(), Some("127.0.0.1"));
        let o = p(Tool::Rc, &["-oPtjNU"]);
        // the C program's checks, in its order: -o with -j first
        assert_eq!(
            o.unwrap_err().stderr.as_deref(),
            Some("DM memory region can't be on demand")
        );
        let o = p(Tool::Rc, &["-oU"]);
        assert_eq!(
            o.unwrap_err().stderr.as_deref(),
            Some("CoCo unprotected memory cannot be used with ODP")
        );
        let o = p(Tool::Rc, &["-tjN"]).unwrap();
        assert!(o.ts && o.dm && o.new_send && !o.odp);
        let o = p(Tool::Rc, &["-O", "-P"]).unwrap();
        assert!(o.odp && o.implicit_odp && o.prefetch);
    }

    #[test]
    fn value_checks_give_usage() {
        assert_eq!(p(Tool::Rc, &["-p", "65536"]), Err(usage_only()));
        assert_eq!(p(Tool::Rc, &["-p", "65535"]).unwrap().port, 65535);
        assert_eq!(p(Tool::Ud, &["-p", "-1"]), Err(usage_only()));
        assert_eq!(p(Tool::Rc, &["-i", "0"]), Err(usage_only()));
        assert_eq!(p(Tool::Rc, &["-m", "1000"]), Err(usage_only()));
        assert_eq!(p(Tool::Srq, &["-s", "0"]), Err(usage_only()));
        assert_eq!(p(Tool::Rc, &["-s", "0"]).unwrap().size, 0);
        assert_eq!(p(Tool::Rc, &["a", "b"]), Err(usage_only()));
        // an early bad value stops before a later unknown option is seen
        assert_eq!(p(Tool::Rc, &["-i", "0", "-x"]), Err(usage_only()));
    }

    #[test]
    fn options_of_other_tools_are_invalid() {
        let e = p(Tool::Ud, &["-m", "1024"]).unwrap_err();
        assert_eq!(
            e,
            Stop {
                stderr: Some("prog: invalid option -- 'm'".into()),
                usage: true
            }
        );
        let e = p(Tool::Rc, &["-q", "2"]).unwrap_err();
        assert_eq!(e.stderr.as_deref(), Some("prog: invalid option -- 'q'"));
        let e = p(Tool::Ud, &["--odp"]).unwrap_err();
        assert_eq!(
            e.stderr.as_deref(),
            Some("prog: unrecognized option '--odp'")
        );
        let e = p(Tool::Srq, &["--num"]).unwrap_err();
        assert_eq!(
            e.stderr.as_deref(),
            Some("prog: option '--num-qp' requires an argument")
        );
    }

    #[test]
    fn c_consistency_checks() {
        let msg = |t, a: &[&str]| p(t, a).unwrap_err().stderr.unwrap();
        assert_eq!(
            msg(Tool::Rc, &["-o", "-j"]),
            "DM memory region can't be on demand"
        );
        assert_eq!(
            msg(Tool::Rc, &["-U", "-j"]),
            "CoCo unprotected memory cannot be used with device memory"
        );
        assert_eq!(
            msg(Tool::Rc, &["-P"]),
            "prefetch is valid only with on-demand memory region"
        );
        assert_eq!(
            msg(Tool::Srq, &["-q", "8", "-r", "4"]),
            "rx_depth 4 is too small for 8 QPs -- must have at least one receive per QP."
        );
        assert_eq!(
            msg(Tool::Srq, &["-q", "256", "-r", "1000"]),
            "num_qp 256 must be less than 255"
        );
        assert!(p(Tool::Srq, &["-q", "255", "-r", "1000"]).is_ok());
    }

    #[test]
    fn usage_text() {
        let u = usage(Tool::Ud, "ibv_ud_pingpong");
        assert!(u.starts_with(
            "Usage:\n  ibv_ud_pingpong            start a server and wait for connection\n  \
             ibv_ud_pingpong <host>     connect to server at <host>\n\nOptions:\n"
        ));
        assert!(u.ends_with("  -c, --chk              validate received buffer\n"));
        assert_eq!(u.lines().count(), 15);
        let rc = usage(Tool::Rc, "x");
        assert!(rc.contains("  -t, --ts\t            get CQE with timestamp\n"));
        assert_eq!(rc.lines().count(), 24);
        assert!(usage(Tool::Srq, "x")
            .contains("  -q, --num-qp=<num>     number of QPs to use (default 16)\n"));
    }
}
