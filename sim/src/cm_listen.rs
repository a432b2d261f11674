//! The daemon's listener file (`<socket>.cm_listen`, written by the
//! daemon's ucma model on every LISTEN, DESTROY_ID and file close) as its
//! readers see it, and the shim's wait for a listener before a client
//! resolves its destination ([`AWAIT_ENV`]).
//!
//! Why the wait: a test harness starts a client once the server's listener
//! is in this file, but some programs listen more than once. perftest's
//! `-R` (`ib_send_lat -R`, `ib_write_bw -R`) connects twice to the same
//! port: first a control connection, whose listener the server destroys
//! once accepted; then, after a handshake over that connection, the test
//! connection, for which the server only then creates a new listener,
//! while the client connects at once. Nothing orders the server's second
//! `rdma_listen` before the client's REQ, so a server that is scheduled a
//! few milliseconds late has its client rejected (no listener:
//! IB_CM_REJ_INVALID_SERVICE_ID, as the kernel's CM answers), and perftest
//! 4.5's retry then crashes (fixed upstream in 2025, perftest 3d9d8d0 and
//! e2b3dcf). A harness cannot see that second listener from outside the
//! process, so the client's shim waits for it: with [`AWAIT_ENV`] set, a
//! RESOLVE_IP / RESOLVE_ADDR to a port no listener is on is held (up to
//! the given milliseconds) until the daemon lists one there, then sent as
//! it was.
//! The REQ still goes once; a listener that never comes, or one the
//! daemon does not match, still ends in the rejection.

use std::path::{Path, PathBuf};

/// Environment variable (milliseconds, the longest wait): when set in a
/// process, its shim holds each rdma_cm address resolution until the daemon
/// lists a listener on the destination port.
pub const AWAIT_ENV: &str = "VERBS_SIM_CM_AWAIT_LISTENER";

/// The listener file of the daemon serving `socket`: one line per
/// listening id, in the words of `rdma res show cm_id` (`cm-idn 3 state
/// LISTEN ps TCP src-addr 10.251.0.1:7471 `).
pub fn path(socket: &Path) -> PathBuf {
    let mut p = socket.as_os_str().to_owned();
    p.push(".cm_listen");
    PathBuf::from(p)
}

/// `RDMA_USER_CM_CMD_RESOLVE_IP` (struct rdma_ucm_resolve_ip: src and dst
/// as `sockaddr_in6`, id, timeout).
const RESOLVE_IP: u32 = 3;
/// `RDMA_USER_CM_CMD_RESOLVE_ADDR` (struct rdma_ucm_resolve_addr: id,
/// timeout, src_size, dst_size, reserved, src and dst as
/// `sockaddr_storage`).
const RESOLVE_ADDR: u32 = 21;

/// The destination port of an rdma_cm write `w` (the 8-byte
/// `rdma_ucm_cmd_hdr` and its command) if it is a RESOLVE_IP or
/// RESOLVE_ADDR to an IPv4 or IPv6 address; `None` for anything else.
pub fn resolve_dst_port(w: &[u8]) -> Option<u16> {
    let cmd = u32::from_le_bytes(w.get(0..4)?.try_into().ok()?);
    let dst = match cmd {
        RESOLVE_IP => 8 + 28,
        RESOLVE_ADDR => 8 + 16 + 128,
        _ => return None,
    };
    let sa = w.get(dst..dst + 4)?;
    let family = i32::from(u16::from_le_bytes([sa[0], sa[1]]));
    (family == libc::AF_INET || family == libc::AF_INET6).then(|| u16::from_be_bytes([sa[2], sa[3]]))
}

/// Whether the listener file's `text` lists a listener on `port` (a line
/// `... state LISTEN ps PS src-addr ADDR:PORT `).
pub fn lists_port(text: &str, port: u16) -> bool {
    let tail = format!(":{port} ");
    text.lines().any(|l| l.contains(" state LISTEN ") && l.ends_with(&tail))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sin(port: u16, ip: [u8; 4]) -> [u8; 16] {
        let mut s = [0u8; 16];
        s[0..2].copy_from_slice(&(libc::AF_INET as u16).to_le_bytes());
        s[2..4].copy_from_slice(&port.to_be_bytes());
        s[4..8].copy_from_slice(&ip);
        s
    }

    #[test]
    fn resolve_addr_port_in_both_layouts() {
        // RESOLVE_IP: hdr, src sockaddr_in6 (here: zero, no source), dst
        let mut w = vec![0u8; 8 + 64];
        w[0..4].copy_from_slice(&RESOLVE_IP.to_le_bytes());
        w[8 + 28..8 + 44].copy_from_slice(&sin(18515, [10, 251, 0, 1]));
        assert_eq!(resolve_dst_port(&w), Some(18515));
        // RESOLVE_ADDR: hdr, id, timeout, src_size, dst_size, reserved, src, dst
        let mut w = vec![0u8; 8 + 272];
        w[0..4].copy_from_slice(&RESOLVE_ADDR.to_le_bytes());
        w[8 + 16..8 + 32].copy_from_slice(&sin(7174, [0, 0, 0, 0])); // a source: not the dst
        w[8 + 144..8 + 160].copy_from_slice(&sin(20001, [10, 251, 0, 1]));
        assert_eq!(resolve_dst_port(&w), Some(20001));
        // an AF_IB destination, another command, a short write: not a wait
        w[8 + 144..8 + 146].copy_from_slice(&27u16.to_le_bytes());
        assert_eq!(resolve_dst_port(&w), None);
        let mut c = w.clone();
        c[0..4].copy_from_slice(&6u32.to_le_bytes());
        assert_eq!(resolve_dst_port(&c), None);
        assert_eq!(resolve_dst_port(&w[..100]), None);
    }

    #[test]
    fn lists_port_only_a_listener_on_that_port() {
        let t = "cm-idn 3 state LISTEN ps TCP src-addr 0.0.0.0:20001 \ncm-idn 9 state LISTEN ps UDP src-addr 10.251.0.1:7174 \n";
        assert!(lists_port(t, 20001));
        assert!(lists_port(t, 7174));
        assert!(!lists_port(t, 2000));
        assert!(!lists_port(t, 1));
        assert!(!lists_port("", 20001));
    }
}
