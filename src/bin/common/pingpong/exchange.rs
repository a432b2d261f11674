//! The pingpong programs' out-of-band exchange over TCP: each side's
//! address as the text `LLLL:QQQQQQ:PPPPPP:GGGG…` (LID, QPN, PSN in hex,
//! the GID as 32 hex digits) in a fixed 52-byte message (51 characters and
//! a NUL), then a `"done"` (5 bytes with its NUL) from the client.
//!
//! Order, as in rdma-core's `pp_client_exch_dest` / `pp_server_exch_dest`:
//! the client connects and sends its message(s); the server reads them,
//! connects its QP(s) to the client (the caller does that between
//! [`Server::read_dests`] and [`Server::finish`]), sends its own
//! message(s) and waits for `"done"`; the client reads the server's
//! message(s), sends `"done"` and only then connects its QP(s).
//! `ibv_srq_pingpong` exchanges `MAX_QP` (256) messages each way, the
//! unused ones all zeros.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};

/// Size of one address message: `sizeof "0000:000000:000000:" + 32 hex`.
pub(crate) const MSG_LEN: usize = 52;
/// The client's final message, `sizeof "done"` bytes.
const DONE: &[u8; 5] = b"done\0";

/// `struct pingpong_dest`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dest {
    /// LID (0 on RoCE); an `int` in C.
    pub(crate) lid: u32,
    /// QP number.
    pub(crate) qpn: u32,
    /// Initial packet sequence number (24 bits).
    pub(crate) psn: u32,
    /// GID in network order (zeros without `-g`).
    pub(crate) gid: [u8; 16],
}

/// `gid_to_wire_gid`: the 16 GID bytes as 32 lower-case hex digits, in
/// order (C prints each 32-bit word converted to big-endian with `%08x`,
/// which is the same on any host).
pub(crate) fn gid_to_wire(gid: &[u8; 16]) -> String {
    gid.iter().map(|b| format!("{b:02x}")).collect()
}

/// `wire_gid_to_gid`: four 8-character pieces, each read with `%x` and
/// stored big-endian. A piece without hex digits gives 0 (C leaves the
/// word undefined).
pub(crate) fn wire_to_gid(wire: &str) -> [u8; 16] {
    let b = wire.as_bytes();
    let mut gid = [0u8; 16];
    for i in 0..4 {
        let piece: Vec<u8> = (0..8)
            .map(|j| b.get(i * 8 + j).copied().unwrap_or(0))
            .take_while(|&c| c != 0)
            .collect();
        let v = scan_hex(&String::from_utf8_lossy(&piece)).map_or(0, |(v, _)| v as u32);
        gid[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
    }
    gid
}

/// One `sscanf` `%x`: blanks, a sign, an optional `0x`, hex digits (at
/// least one). Returns the value (modulo 2^64, negated for `-`) and the rest.
fn scan_hex(s: &str) -> Option<(u64, &str)> {
    let s = s.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let s = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(r) if r.starts_with(|c: char| c.is_ascii_hexdigit()) => r,
        _ => s,
    };
    let end = s.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let v = s[..end].chars().fold(0u64, |v, c| {
        (v << 4) | u64::from(c.to_digit(16).unwrap_or(0))
    });
    Some((if neg { v.wrapping_neg() } else { v }, &s[end..]))
}

/// The message for `d`: `sprintf(msg, "%04x:%06x:%06x:%s", …)` in a
/// zero-filled 52-byte buffer.
pub(crate) fn encode(d: &Dest) -> [u8; MSG_LEN] {
    let text = format!(
        "{:04x}:{:06x}:{:06x}:{}",
        d.lid,
        d.qpn,
        d.psn,
        gid_to_wire(&d.gid)
    );
    let mut msg = [0u8; MSG_LEN];
    let n = text.len().min(MSG_LEN - 1);
    msg[..n].copy_from_slice(&text.as_bytes()[..n]);
    msg
}

/// Reads a message as `sscanf(msg, "%x:%x:%x:%s", …)` and
/// `wire_gid_to_gid` do; fields after a mismatch stay zero.
pub(crate) fn decode(msg: &[u8]) -> Dest {
    let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    let text = String::from_utf8_lossy(&msg[..end]);
    let mut d = Dest::default();
    let mut rest: &str = &text;
    let mut fields = [&mut d.lid, &mut d.qpn, &mut d.psn];
    for (i, f) in fields.iter_mut().enumerate() {
        let Some((v, r)) = scan_hex(rest) else {
            return d;
        };
        **f = v as u32;
        rest = r;
        if i < 2 || !rest.is_empty() {
            match rest.strip_prefix(':') {
                Some(r) => rest = r,
                None => return d,
            }
        }
    }
    let word = rest
        .trim_start()
        .split(|c: char| c.is_ascii_whitespace())
        .next()
        .unwrap_or("");
    if !word.is_empty() {
        d.gid = wire_to_gid(word);
    }
    d
}

/// `perror(what)`: the message with the OS error text (or `Success`).
fn perror(what: &str, e: Option<&std::io::Error>) {
    let text = match e.and_then(std::io::Error::raw_os_error) {
        Some(n) => super::super::devlist::strerror(n),
        None => e.map_or("Success".to_owned(), ToString::to_string),
    };
    eprintln!("{what}: {text}");
}

/// Reads up to `buf.len()` bytes, as many `read`s as it takes, until the
/// buffer is full or the peer closed; returns how many arrived.
fn read_full(s: &mut TcpStream, buf: &mut [u8]) -> Result<usize, (usize, std::io::Error)> {
    let mut n = 0;
    while n < buf.len() {
        match s.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(r) => n += r,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err((n, e)),
        }
    }
    Ok(n)
}

/// The client side: connects to `host:port`, sends `mine`, reads as many
/// messages back, sends `"done"`. Errors are reported on stderr with the
/// C programs' words; `None` then.
pub(crate) fn client(host: &str, port: u16, mine: &[Dest]) -> Option<Vec<Dest>> {
    let addrs = match (host, port).to_socket_addrs() {
        Ok(a) => a,
        Err(e) => {
            let text = e.to_string();
            let gai = text
                .strip_prefix("failed to lookup address information: ")
                .unwrap_or(&text);
            eprintln!("{gai} for {host}:{port}");
            return None;
        }
    };
    let Some(mut s) = addrs.into_iter().find_map(|a| TcpStream::connect(a).ok()) else {
        eprintln!("Couldn't connect to {host}:{port}");
        return None;
    };
    let multi = mine.len() > 1;
    for d in mine {
        if s.write_all(&encode(d)).is_err() {
            eprintln!("Couldn't send local address");
            return None;
        }
    }
    let mut rem = Vec::with_capacity(mine.len());
    for i in 0..mine.len() {
        let mut msg = [0u8; MSG_LEN];
        match read_full(&mut s, &mut msg) {
            Ok(MSG_LEN) => rem.push(decode(&msg)),
            Ok(n) | Err((n, _)) if multi => {
                perror("client read", None);
                eprintln!("{n}/{MSG_LEN}: Couldn't read remote address [{i}]");
                return None;
            }
            r => {
                perror("client read/write", r.as_ref().err().map(|e| &e.1));
                eprintln!("Couldn't read/write remote address");
                return None;
            }
        }
    }
    if let Err(e) = s.write_all(DONE) {
        if multi {
            perror("client write", Some(&e));
        } else {
            perror("client read/write", Some(&e));
            eprintln!("Couldn't read/write remote address");
        }
        return None;
    }
    Some(rem)
}

/// The server side, between accepting and the final `"done"`.
pub(crate) struct Server {
    conn: TcpStream,
}

impl Server {
    /// Listens on `port` (any address, `SO_REUSEADDR`) and accepts one
    /// connection; errors on stderr as in C.
    pub(crate) fn accept(port: u16) -> Option<Self> {
        let listener =
            TcpListener::bind(("0.0.0.0", port)).or_else(|_| TcpListener::bind(("::", port)));
        let Ok(listener) = listener else {
            eprintln!("Couldn't listen to port {port}");
            return None;
        };
        match listener.accept() {
            Ok((conn, _)) => Some(Self { conn }),
            Err(_) => {
                eprintln!("accept() failed");
                None
            }
        }
    }

    /// Reads `n` address messages from the client.
    pub(crate) fn read_dests(&mut self, n: usize) -> Option<Vec<Dest>> {
        let mut rem = Vec::with_capacity(n);
        for i in 0..n {
            let mut msg = [0u8; MSG_LEN];
            match read_full(&mut self.conn, &mut msg) {
                Ok(MSG_LEN) => rem.push(decode(&msg)),
                r => {
                    let (got, e) = match &r {
                        Ok(got) => (*got, None),
                        Err((got, e)) => (*got, Some(e)),
                    };
                    perror("server read", e);
                    if n > 1 {
                        eprintln!("{got}/{MSG_LEN}: Couldn't read remote address [{i}]");
                    } else {
                        eprintln!("{got}/{MSG_LEN}: Couldn't read remote address");
                    }
                    return None;
                }
            }
        }
        Some(rem)
    }

    /// Sends `mine` and waits for the client's `"done"`.
    pub(crate) fn finish(mut self, mine: &[Dest]) -> Option<()> {
        for d in mine {
            if self.conn.write_all(&encode(d)).is_err() {
                if mine.len() > 1 {
                    eprintln!("Couldn't send local address");
                } else {
                    eprintln!("Couldn't send/recv local address");
                }
                return None;
            }
        }
        let mut msg = [0u8; MSG_LEN];
        match read_full(&mut self.conn, &mut msg) {
            Ok(n) if n == DONE.len() => Some(()),
            r => {
                if mine.len() > 1 {
                    perror("client write", r.as_ref().err().map(|e| &e.1));
                } else {
                    eprintln!("Couldn't send/recv local address");
                }
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A RoCE v2 GID of 10.0.2.15 (`::ffff:10.0.2.15`).
    const GID: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 2, 15];

    #[test]
    fn message_bytes_match_the_c_format() {
        let d = Dest {
            lid: 0,
            qpn: 0x11,
            psn: 0xabcdef,
            gid: GID,
        };
        let msg = encode(&d);
        // sprintf("%04x:%06x:%06x:%s") with gid_to_wire_gid's 32 digits,
        // checked by hand; then the NUL filling sizeof msg = 52.
        let want = b"0000:000011:abcdef:00000000000000000000ffff0a00020f\0";
        assert_eq!(want.len(), MSG_LEN);
        assert_eq!(&msg, want);
        assert_eq!(decode(&msg), d);
    }

    #[test]
    fn round_trip_and_ib_lid() {
        let gid: [u8; 16] = core::array::from_fn(|i| (i as u8) * 17);
        let d = Dest {
            lid: 0xbeef,
            qpn: 0xffffff,
            psn: 1,
            gid,
        };
        let msg = encode(&d);
        assert_eq!(&msg[..19], b"beef:ffffff:000001:");
        assert_eq!(&msg[19..51], b"00112233445566778899aabbccddeeff");
        assert_eq!(decode(&msg), d);
        assert_eq!(decode(&encode(&Dest::default())), Dest::default());
    }

    #[test]
    fn wire_gid_pieces() {
        assert_eq!(gid_to_wire(&GID), "00000000000000000000ffff0a00020f");
        assert_eq!(wire_to_gid("00000000000000000000ffff0a00020f"), GID);
        // upper case is read too; a short string reads what is there
        assert_eq!(wire_to_gid("FE800000")[..4], [0xfe, 0x80, 0, 0]);
        assert_eq!(
            wire_to_gid("fe80"),
            [0, 0, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn sscanf_like_decoding() {
        // whitespace and 0x prefixes are what %x accepts
        let d = decode(b" 0x1: 2:3:0000000000000000000000000000000a\0junk");
        assert_eq!((d.lid, d.qpn, d.psn, d.gid[15]), (1, 2, 3, 10));
        // stops at the first mismatch, later fields stay zero
        let d = decode(b"0001;000002:000003:ff\0");
        assert_eq!((d.lid, d.qpn, d.psn), (1, 0, 0));
        let d = decode(b"zz");
        assert_eq!(d, Dest::default());
    }

    #[test]
    fn tcp_exchange_in_the_c_order() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let server = std::thread::spawn(move || {
            let mut s = Server::accept(port).expect("accept");
            let rem = s.read_dests(2).expect("read");
            let mine = [
                Dest {
                    qpn: 7,
                    ..Dest::default()
                },
                Dest {
                    qpn: 8,
                    ..Dest::default()
                },
            ];
            s.finish(&mine).expect("finish");
            rem
        });
        let mine = [
            Dest {
                qpn: 1,
                psn: 2,
                ..Dest::default()
            },
            Dest {
                lid: 3,
                ..Dest::default()
            },
        ];
        let mut rem = None;
        for _ in 0..100 {
            rem = client("127.0.0.1", port, &mine);
            if rem.is_some() {
                break;
            }
            std::thread::sleep(core::time::Duration::from_millis(20));
        }
        let rem = rem.expect("client exchange");
        assert_eq!(rem.iter().map(|d| d.qpn).collect::<Vec<_>>(), [7, 8]);
        assert_eq!(server.join().unwrap(), mine);
    }
}
