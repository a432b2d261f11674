//! perftest's out-of-band exchange over TCP (`Data ex. method :
//! Ethernet`), so either side may be perftest's `ib_<test>` (6.06, Debian's
//! 4.5+0.17; it refuses peers older than 5.70).
//!
//! The client connects to the server's port. Every exchange is one
//! fixed-size message each way: the client writes first and then reads,
//! the server reads first and then writes. The messages, in the order
//! [`super::run`] sends them:
//!
//! 1. the version, 16 bytes (`"6.06"`, NUL padded);
//! 2. the page size, then the cache line size: 4-byte big-endian integers
//!    (each side uses the larger of the two);
//! 3. the port's active MTU as `enum ibv_mtu` in decimal, 2 bytes (`"3\0"`;
//!    each side uses the smaller);
//! 4. handshakes: one QP's address as text (see [`Dest`]), 108 bytes with a
//!    GID (Ethernet ports, or `-x` given) or 59 without. perftest uses them
//!    both to pass addresses and as barriers; which handshakes a test does
//!    and when is in `run::Script`;
//! 5. bandwidth tests whose server does no work: the client's result, five
//!    8-byte big-endian fields (size, iterations, peak MB/s, average MB/s,
//!    Mpps; the three rates as IEEE doubles);
//! 6. the close: a handshake, then `"done\0"` written (and never read).
//!
//! With `-R` the same messages travel as SENDs on an rdma_cm QP
//! ([`super::cm_link`]), handshakes in binary.

use core::time::Duration;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Instant;

use super::cm_link::CmLink;
use super::dest::Dest;

/// The version we announce: perftest's whose protocol we speak.
pub(crate) const VERSION: &str = "6.06";
/// The oldest version perftest 6.06 (and so we) accept.
const OLDEST: f64 = 5.70;

/// A bandwidth result as perftest sends it (`struct bw_report_data`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BwReport {
    pub(crate) size: u64,
    pub(crate) iters: u64,
    pub(crate) bw_peak: f64,
    pub(crate) bw_avg: f64,
    pub(crate) msg_rate: f64,
}

/// How the messages travel: TCP, or perftest's `-R` exchange QP.
enum Link {
    Tcp(TcpStream),
    Cm(Box<CmLink>),
}

/// The connected link and which side we are.
pub(crate) struct Oob {
    link: Link,
    client: bool,
    /// Handshakes carry a GID (108-byte messages) or not (59).
    pub(crate) with_gid: bool,
    /// Our GID index, in the binary handshakes of `-R`.
    pub(crate) gid_index: u32,
}

/// Server: binds the port (before the caller says it waits, so a client
/// started after that line finds it).
pub(crate) fn listen(port: u16) -> Result<TcpListener, String> {
    TcpListener::bind(("0.0.0.0", port)).map_err(|e| format!("listen on port {port}: {e}"))
}

impl Oob {
    /// Server: takes one client from `listener`.
    pub(crate) fn accept(listener: &TcpListener) -> Result<Self, String> {
        let (stream, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
        Ok(Self::new(stream, false))
    }

    /// Client: connects, retrying for up to 10 s while the server starts.
    pub(crate) fn connect(host: &str, port: u16) -> Result<Self, String> {
        let t0 = Instant::now();
        loop {
            match TcpStream::connect((host, port)) {
                Ok(s) => return Ok(Self::new(s, true)),
                Err(e) if t0.elapsed() > Duration::from_secs(10) => {
                    return Err(format!("couldn't connect to {host}:{port}: {e}"));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    fn new(stream: TcpStream, client: bool) -> Self {
        let _ = stream.set_nodelay(true);
        Oob { link: Link::Tcp(stream), client, with_gid: true, gid_index: 0 }
    }

    /// `-R`: the exchange over an rdma_cm QP (client when `server` is
    /// given).
    pub(crate) fn rdma_cm(server: Option<&str>, port: u16) -> Result<Self, String> {
        let link = match server {
            Some(host) => CmLink::connect(host, port)?,
            None => CmLink::accept(port)?,
        };
        let link = Box::new(link);
        Ok(Oob { link: Link::Cm(link), client: server.is_some(), with_gid: true, gid_index: 0 })
    }

    /// `-R`: the device the connection manager chose.
    pub(crate) fn cm_context(&self) -> Option<&'static verbs::Context> {
        match &self.link {
            Link::Cm(c) => Some(c.ctx),
            Link::Tcp(_) => None,
        }
    }

    /// One exchange of equal-sized messages; `what` names it in errors.
    fn xchg(&mut self, mine: &[u8], what: &str) -> Result<Vec<u8>, String> {
        let stream = match &mut self.link {
            Link::Tcp(s) => s,
            Link::Cm(c) => {
                if self.client {
                    c.send(mine, what)?;
                }
                let theirs = c.recv(mine.len(), what)?;
                if !self.client {
                    c.send(mine, what)?;
                }
                return Ok(theirs);
            }
        };
        let mut theirs = vec![0u8; mine.len()];
        let write = |s: &mut TcpStream| s.write_all(mine).map_err(|e| format!("sending the {what}: {e}"));
        if self.client {
            write(stream)?;
        }
        stream.read_exact(&mut theirs).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => format!("the peer closed the connection before sending the {what}"),
            _ => format!("reading the peer's {what}: {e}"),
        })?;
        if !self.client {
            write(stream)?;
        }
        Ok(theirs)
    }

    /// Exchanges versions; returns the peer's, refusing one older than
    /// 5.70 as perftest does (its later exchanges depend on it).
    pub(crate) fn versions(&mut self) -> Result<String, String> {
        let mut mine = [0u8; 16];
        mine[..VERSION.len()].copy_from_slice(VERSION.as_bytes());
        let theirs = self.xchg(&mine, "version")?;
        let text = c_string(&theirs);
        match leading_float(&text) {
            Some(v) if v >= OLDEST => Ok(text),
            _ => Err(format!("the peer's version '{text}' is older than perftest 5.70 (not compatible)")),
        }
    }

    /// Exchanges page and cache line sizes; returns the larger of each.
    pub(crate) fn sys_data(&mut self, page: u32, cache_line: u32) -> Result<(u32, u32), String> {
        let theirs = self.xchg(&page.to_be_bytes(), "page size")?;
        let p = u32::from_be_bytes([theirs[0], theirs[1], theirs[2], theirs[3]]);
        let theirs = self.xchg(&cache_line.to_be_bytes(), "cache line size")?;
        let c = u32::from_be_bytes([theirs[0], theirs[1], theirs[2], theirs[3]]);
        Ok((page.max(p), cache_line.max(c)))
    }

    /// Exchanges active MTUs (`enum ibv_mtu`, 1..=5); returns the smaller
    /// (ours when the peer's is not a valid MTU, as perftest).
    pub(crate) fn mtu(&mut self, ours: u8) -> Result<u8, String> {
        let mine = [b'0' + ours.min(9), 0];
        let theirs = self.xchg(&mine, "MTU")?;
        let rem = leading_int(&c_string(&theirs));
        Ok(match rem {
            Some(r @ 1..=5) if r < ours => r,
            _ => ours,
        })
    }

    /// Sends our QP address, returns the peer's.
    pub(crate) fn hand_shake(&mut self, mine: &Dest) -> Result<Dest, String> {
        if let Link::Cm(_) = self.link {
            let theirs = self.xchg(&mine.encode_bin(self.gid_index), "QP address")?;
            return Dest::decode_bin(&theirs);
        }
        let theirs = self.xchg(&mine.encode(self.with_gid), "QP address")?;
        Dest::decode(&theirs, self.with_gid)
    }

    /// Exchanges bandwidth results.
    pub(crate) fn bw_reports(&mut self, mine: &BwReport) -> Result<BwReport, String> {
        let mut field = |v: u64, what| -> Result<u64, String> {
            let t = self.xchg(&v.to_be_bytes(), what)?;
            Ok(u64::from_be_bytes(t.try_into().unwrap_or_default()))
        };
        Ok(BwReport {
            size: field(mine.size, "result size")?,
            iters: field(mine.iters, "result iterations")?,
            bw_peak: f64::from_bits(field(mine.bw_peak.to_bits(), "peak bandwidth")?),
            bw_avg: f64::from_bits(field(mine.bw_avg.to_bits(), "average bandwidth")?),
            msg_rate: f64::from_bits(field(mine.msg_rate.to_bits(), "message rate")?),
        })
    }

    /// perftest's close: a last handshake, then `done` and the socket
    /// closed (the peer does not read it).
    /// (`-R`: the handshake only.)
    pub(crate) fn close(mut self, mine: &Dest) -> Result<(), String> {
        if let Link::Cm(c) = &mut self.link {
            // the close handshake: a SEND failed by siw's check after the
            // peer closed is no error (see `CmLink::send_last`)
            let msg = mine.encode_bin(self.gid_index);
            if self.client {
                c.send_last(&msg, "QP address")?;
                Dest::decode_bin(&c.recv(msg.len(), "QP address")?)?;
            } else {
                Dest::decode_bin(&c.recv(msg.len(), "QP address")?)?;
                c.send_last(&msg, "QP address")?;
                c.await_peer_close(10_000);
            }
            return Ok(());
        }
        self.hand_shake(mine)?;
        match &mut self.link {
            Link::Tcp(s) => s.write_all(b"done\0").map_err(|e| format!("sending done: {e}")),
            Link::Cm(_) => Ok(()),
        }
    }
}

/// The text before the first NUL (perftest's strings are C strings).
fn c_string(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// `atof`'s reading of a version: the longest leading decimal number.
fn leading_float(s: &str) -> Option<f64> {
    let s = s.trim_start();
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || (c == '.' && !s[..i].contains('.'))))
        .map_or(s.len(), |(i, _)| i);
    s[..end].parse().ok()
}

/// `strtol(s, NULL, 10)`'s reading, None when no digits lead.
fn leading_int(s: &str) -> Option<u8> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    s[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_like_atof() {
        assert_eq!(leading_float("6.06"), Some(6.06));
        assert_eq!(leading_float("5.70beta"), Some(5.70));
        assert_eq!(leading_float("5.7.1"), Some(5.7));
        assert_eq!(leading_float("x"), None);
        assert_eq!(c_string(b"6.06\0\0\0garbage"), "6.06");
        assert_eq!(leading_int("3"), Some(3));
        assert_eq!(leading_int("5\u{1}"), Some(5));
        assert_eq!(leading_int(""), None);
    }

    /// A real pair of sockets: our client and server against each other,
    /// checking the byte counts perftest expects and the answers.
    #[test]
    fn both_sides_agree_over_tcp() {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let d = Dest { lid: 0, out_reads: 16, qpn: 0x11, psn: 0xabcdef, rkey: 0x5ed, vaddr: 0x5555_0000_1000, gid: [7; 16], srqn: 0 };
        let server = std::thread::spawn(move || {
            let mut o = Oob::accept(&l).unwrap();
            let v = o.versions().unwrap();
            let s = o.sys_data(4096, 64).unwrap();
            let m = o.mtu(3).unwrap();
            let peer = o.hand_shake(&Dest { qpn: 0x22, ..d }).unwrap();
            let r = o.bw_reports(&BwReport { size: 0, iters: 0, bw_peak: 0.0, bw_avg: 0.0, msg_rate: 0.0 }).unwrap();
            o.close(&d).unwrap();
            (v, s, m, peer, r)
        });
        let mut c = Oob::connect("127.0.0.1", port).unwrap();
        assert_eq!(c.versions().unwrap(), "6.06");
        assert_eq!(c.sys_data(65536, 32).unwrap(), (65536, 64));
        assert_eq!(c.mtu(5).unwrap(), 3);
        assert_eq!(c.hand_shake(&d).unwrap().qpn, 0x22);
        let mine = BwReport { size: 65536, iters: 1000, bw_peak: 1.5, bw_avg: 1.25, msg_rate: 0.02 };
        c.bw_reports(&mine).unwrap();
        c.close(&d).unwrap();
        let (v, s, m, peer, r) = server.join().unwrap();
        assert_eq!((v.as_str(), s, m, peer, r), ("6.06", (65536, 64), 3, d, mine));
    }

    #[test]
    fn old_peers_and_short_messages_are_refused() {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut v = [0u8; 16];
            s.read_exact(&mut v).unwrap();
            s.write_all(b"5.60\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
            s.write_all(b"short").unwrap();
        });
        let mut c = Oob::connect("127.0.0.1", port).unwrap();
        let e = c.versions().unwrap_err();
        assert!(e.contains("'5.60' is older than perftest 5.70"), "{e}");
        server.join().unwrap();
        let e = c.hand_shake(&Dest::default()).unwrap_err();
        assert!(e.contains("closed the connection before sending the QP address"), "{e}");
    }
}
