//! Socket addresses in the kernel's `struct __kernel_sockaddr_storage`
//! form (`sockaddr_in` / `sockaddr_in6`), built from and read back into
//! [`core::net::SocketAddr`].

use core::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::abi::ucma::SOCKADDR_STORAGE;

/// `AF_INET`.
const AF_INET: u16 = 2;
/// `AF_INET6`.
const AF_INET6: u16 = 10;

/// `addr` as a `sockaddr_in` (16 bytes) or `sockaddr_in6` (28 bytes) at the
/// start of a zeroed storage buffer, and the length in use.
pub(crate) fn encode(addr: &SocketAddr) -> ([u8; SOCKADDR_STORAGE], u16) {
    let mut s = [0u8; SOCKADDR_STORAGE];
    match addr {
        SocketAddr::V4(a) => {
            s[0..2].copy_from_slice(&AF_INET.to_ne_bytes());
            s[2..4].copy_from_slice(&a.port().to_be_bytes());
            s[4..8].copy_from_slice(&a.ip().octets());
            (s, 16)
        }
        SocketAddr::V6(a) => {
            s[0..2].copy_from_slice(&AF_INET6.to_ne_bytes());
            s[2..4].copy_from_slice(&a.port().to_be_bytes());
            s[4..8].copy_from_slice(&a.flowinfo().to_be_bytes());
            s[8..24].copy_from_slice(&a.ip().octets());
            s[24..28].copy_from_slice(&a.scope_id().to_ne_bytes());
            (s, 28)
        }
    }
}

/// The address in a storage buffer, `None` for a family other than
/// `AF_INET`/`AF_INET6` (e.g. an unbound id's zeroed storage, or `AF_IB`).
pub(crate) fn decode(s: &[u8; SOCKADDR_STORAGE]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes([s[0], s[1]]);
    let port = u16::from_be_bytes([s[2], s[3]]);
    match family {
        AF_INET => Some(SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(s[4], s[5], s[6], s[7]), port))),
        AF_INET6 => {
            let mut ip = [0u8; 16];
            ip.copy_from_slice(&s[8..24]);
            let flow = u32::from_be_bytes([s[4], s[5], s[6], s[7]]);
            let scope = u32::from_ne_bytes([s[24], s[25], s[26], s[27]]);
            Some(SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(ip), port, flow, scope)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_round_trip_and_bytes() {
        let a: SocketAddr = "10.77.0.1:7471".parse().unwrap();
        let (s, len) = encode(&a);
        assert_eq!(len, 16);
        assert_eq!(&s[..8], &[2, 0, 0x1d, 0x2f, 10, 77, 0, 1]);
        assert_eq!(decode(&s), Some(a));
    }

    #[test]
    fn v6_round_trip() {
        let a: SocketAddr = "[fe80::1%3]:18515".parse().unwrap();
        let (s, len) = encode(&a);
        assert_eq!(len, 28);
        assert_eq!(decode(&s), Some(a));
        assert_eq!(decode(&[0u8; SOCKADDR_STORAGE]), None);
    }
}
