//! `rdma_getaddrinfo` in the spirit of librdmacm: host and service
//! strings to the socket addresses an id binds to (passive) or resolves
//! (active). Name lookup is the system resolver's (`std`).

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::net::ToSocketAddrs;

use crate::error::{Error, ErrorKind, Result};

const VERB: &str = "rdma_getaddrinfo";

/// `RAI_PASSIVE` and the address family preference of `struct rdma_addrinfo`
/// hints.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddrHints {
    /// `RAI_PASSIVE`: the address is for `rdma_bind_addr` + `rdma_listen`;
    /// no host means the wildcard address.
    pub passive: bool,
    /// Only IPv4 (`AF_INET`) results.
    pub ipv4_only: bool,
    /// Only IPv6 (`AF_INET6`) results.
    pub ipv6_only: bool,
}

/// `rdma_getaddrinfo`: the addresses for `host` (a name or a literal; `None`
/// with `passive` = the wildcard) and `service` (a port number). At most 8
/// results, in the resolver's order. Errors name the call and say what did
/// not resolve.
#[doc(alias = "rdma_getaddrinfo")]
pub fn getaddrinfo(host: Option<&str>, service: &str, hints: AddrHints) -> Result<heapless::Vec<SocketAddr, 8>> {
    let port: u16 = service
        .parse()
        .map_err(|_| Error::invalid(VERB, "the service must be a port number (0..=65535)"))?;
    let mut out = heapless::Vec::new();
    let keep = |a: &SocketAddr| !(hints.ipv4_only && a.is_ipv6() || hints.ipv6_only && a.is_ipv4());
    match host {
        None if hints.passive => {
            let ip = if hints.ipv6_only { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) };
            let _ = out.push(SocketAddr::new(ip, port));
        }
        None => return Err(Error::invalid(VERB, "an active lookup needs a host")),
        Some(h) => {
            let found = (h, port)
                .to_socket_addrs()
                .map_err(|_| Error::new(VERB, ErrorKind::NotFound).with_detail("the host name did not resolve"))?;
            for a in found.filter(keep) {
                if !out.contains(&a) && out.push(a).is_err() {
                    break;
                }
            }
        }
    }
    if out.is_empty() {
        return Err(Error::new(VERB, ErrorKind::NotFound).with_detail("no address of the requested family"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_wildcards_and_errors() {
        let v = getaddrinfo(Some("10.77.0.1"), "7471", AddrHints::default()).unwrap();
        assert_eq!(v.as_slice(), &["10.77.0.1:7471".parse::<SocketAddr>().unwrap()]);
        let v = getaddrinfo(None, "7174", AddrHints { passive: true, ..AddrHints::default() }).unwrap();
        assert_eq!(v[0], "0.0.0.0:7174".parse::<SocketAddr>().unwrap());
        let v = getaddrinfo(Some("::1"), "1", AddrHints::default()).unwrap();
        assert!(v[0].is_ipv6());
        let e = getaddrinfo(Some("::1"), "1", AddrHints { ipv4_only: true, ..AddrHints::default() }).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(getaddrinfo(Some("x"), "http", AddrHints::default()).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(getaddrinfo(None, "1", AddrHints::default()).unwrap_err().verb(), "rdma_getaddrinfo");
        let e = getaddrinfo(Some("no-such-host.invalid"), "1", AddrHints::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound);
    }
}
