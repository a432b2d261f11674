//! The out-of-band exchange over TCP (like perftest's `Data ex. method :
//! Ethernet`, but our own line format, so `verbs-perf` talks to itself):
//! the client connects to the server's port; each side sends a header line
//! with the test parameters, then one line per QP with what the peer needs
//! to connect to it and write into its memory; `sync` is a barrier.
//!
//! ```text
//! VERBSPERF1 <test> <size> <iters> <qps> <post_list>
//! <qpn> <psn> <rkey> <vaddr> <gid as 32 hex digits>
//! ```

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use core::time::Duration;
use std::time::Instant;

use super::args::Opts;

/// One QP's connection data (what perftest prints as `local address:`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QpInfo {
    pub(crate) qpn: u32,
    pub(crate) psn: u32,
    pub(crate) rkey: u32,
    pub(crate) vaddr: u64,
    pub(crate) gid: [u8; 16],
}

impl QpInfo {
    pub(crate) fn to_line(self) -> String {
        let gid: String = self.gid.iter().map(|b| format!("{b:02x}")).collect();
        format!("{} {} {} {} {}\n", self.qpn, self.psn, self.rkey, self.vaddr, gid)
    }

    pub(crate) fn from_line(line: &str) -> Result<Self, String> {
        let f: Vec<&str> = line.split_whitespace().collect();
        let bad = || format!("bad QP line from the peer: '{}'", line.trim_end());
        if f.len() != 5 || f[4].len() != 32 {
            return Err(bad());
        }
        let mut gid = [0u8; 16];
        for (i, g) in gid.iter_mut().enumerate() {
            *g = u8::from_str_radix(f[4].get(2 * i..2 * i + 2).ok_or_else(bad)?, 16).map_err(|_| bad())?;
        }
        Ok(QpInfo {
            qpn: f[0].parse().map_err(|_| bad())?,
            psn: f[1].parse().map_err(|_| bad())?,
            rkey: f[2].parse().map_err(|_| bad())?,
            vaddr: f[3].parse().map_err(|_| bad())?,
            gid,
        })
    }

    /// perftest's two lines for a QP.
    pub(crate) fn describe(&self, which: &str) -> String {
        let gid: Vec<String> = self.gid.iter().map(|b| format!("{b:02}")).collect();
        format!(
            " {which} address: LID 0000 QPN {:#06x} PSN {:#x} RKey {:#08x} VAddr {:#016x}\n GID: {}\n",
            self.qpn,
            self.psn,
            self.rkey,
            self.vaddr,
            gid.join(":")
        )
    }
}

fn header(o: &Opts) -> String {
    format!("VERBSPERF1 {} {} {} {} {}\n", o.test.name(), o.size, o.iters, o.qps, o.post_list)
}

/// The connected TCP stream, buffered for reading lines.
pub(crate) struct Oob {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Oob {
    /// Server: listen on the port and take one client. Client: connect,
    /// retrying for up to 10 s while the server starts.
    pub(crate) fn connect(o: &Opts) -> Result<Self, String> {
        let stream = match &o.server {
            None => {
                let l = TcpListener::bind(("0.0.0.0", o.port)).map_err(|e| format!("listen on port {}: {e}", o.port))?;
                l.accept().map_err(|e| format!("accept: {e}"))?.0
            }
            Some(host) => {
                let t0 = Instant::now();
                loop {
                    match TcpStream::connect((host.as_str(), o.port)) {
                        Ok(s) => break s,
                        Err(e) if t0.elapsed() > Duration::from_secs(10) => {
                            return Err(format!("couldn't connect to {host}:{}: {e}", o.port));
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(50)),
                    }
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let writer = stream.try_clone().map_err(|e| format!("tcp: {e}"))?;
        Ok(Oob { reader: BufReader::new(stream), writer })
    }

    fn line(&mut self) -> Result<String, String> {
        let mut s = String::new();
        match self.reader.read_line(&mut s) {
            Ok(0) => Err("the peer closed the connection".into()),
            Ok(_) => Ok(s),
            Err(e) => Err(format!("tcp read: {e}")),
        }
    }

    /// Sends our parameters and QPs, reads the peer's; the parameters
    /// must match (both sides run the same test).
    pub(crate) fn exchange(&mut self, o: &Opts, local: &[QpInfo]) -> Result<Vec<QpInfo>, String> {
        let mut msg = header(o);
        for q in local {
            msg.push_str(&q.to_line());
        }
        self.writer.write_all(msg.as_bytes()).map_err(|e| format!("tcp write: {e}"))?;
        let theirs = self.line()?;
        if theirs != header(o) {
            return Err(format!("the peer runs another test: '{}' vs '{}'", theirs.trim_end(), header(o).trim_end()));
        }
        (0..local.len()).map(|_| QpInfo::from_line(&self.line()?)).collect()
    }

    /// A barrier: both sides send a line and wait for the other's.
    pub(crate) fn sync(&mut self) -> Result<(), String> {
        self.writer.write_all(b"SYNC\n").map_err(|e| format!("tcp write: {e}"))?;
        match self.line()?.as_str() {
            "SYNC\n" => Ok(()),
            other => Err(format!("expected SYNC from the peer, got '{}'", other.trim_end())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qp_line_round_trips_and_rejects_garbage() {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[10, 77, 0, 1]);
        let q = QpInfo { qpn: 0x11, psn: 0xc2cb8, rkey: 0x5ed, vaddr: 0x55c1_061e_f000, gid };
        let line = q.to_line();
        assert_eq!(line, "17 797880 1517 94287519739904 00000000000000000000ffff0a4d0001\n");
        assert_eq!(QpInfo::from_line(&line), Ok(q));
        for bad in ["", "1 2 3 4", "1 2 3 4 00", "x 2 3 4 00000000000000000000ffff0a4d0001",
                    "1 2 3 4 0000000000000000000gffff0a4d0001"] {
            assert!(QpInfo::from_line(bad).is_err(), "{bad:?}");
        }
        assert!(q.describe("local").contains("QPN 0x0011 PSN 0xc2cb8"));
        assert!(q.describe("local").contains("GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:01"));
    }
}
