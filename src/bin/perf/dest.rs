//! One QP's address as perftest exchanges it (`struct pingpong_dest`):
//! what the peer needs to connect to the QP and to read, write or do
//! atomics in its buffer. On the wire it is colon-separated hex in a
//! NUL-padded message of fixed size:
//!
//! ```text
//! lid(4):out_reads(4):qpn(6):psn(6):rkey(8):vaddr(16):<16 GID bytes (2 each):>srqn(8):   108 bytes
//! lid(4):out_reads(4):qpn(6):psn(6):rkey(8):vaddr(16):srqn(8)                            59 bytes
//! ```

use super::args::Test;

/// The message sizes with and without a GID (NUL included).
pub(crate) const MSG_GID: usize = 108;
pub(crate) const MSG_NO_GID: usize = 59;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dest {
    pub(crate) lid: u16,
    /// Outstanding READs/atomics this side accepts (its
    /// `max_dest_rd_atomic`; the peer's `max_rd_atomic`).
    pub(crate) out_reads: u32,
    pub(crate) qpn: u32,
    pub(crate) psn: u32,
    pub(crate) rkey: u32,
    /// Where the peer may write, read or do atomics.
    pub(crate) vaddr: u64,
    pub(crate) gid: [u8; 16],
    /// XRC/DC only; 0 here.
    pub(crate) srqn: u32,
}

impl Dest {
    pub(crate) fn encode(&self, with_gid: bool) -> Vec<u8> {
        let mut s = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid, self.out_reads, self.qpn, self.psn, self.rkey, self.vaddr
        );
        if with_gid {
            for b in self.gid {
                s.push_str(&format!("{b:02x}:"));
            }
            s.push_str(&format!("{:08x}:", self.srqn));
        } else {
            s.push_str(&format!("{:08x}", self.srqn));
        }
        let mut msg = s.into_bytes();
        msg.resize(if with_gid { MSG_GID } else { MSG_NO_GID }, 0);
        msg
    }

    /// perftest's binary form over rdma_cm (`rdma_write_keys`): `struct
    /// pingpong_dest` (56 bytes) with its integers big-endian: lid,
    /// out_reads, qpn, psn, rkey at 0..20, vaddr at 24, the GID at 32,
    /// srqn at 48, gid_index at 52.
    pub(crate) fn encode_bin(&self, gid_index: u32) -> Vec<u8> {
        let mut m = vec![0u8; 56];
        for (i, v) in [u32::from(self.lid), self.out_reads, self.qpn, self.psn, self.rkey].into_iter().enumerate() {
            m[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
        }
        m[24..32].copy_from_slice(&self.vaddr.to_be_bytes());
        m[32..48].copy_from_slice(&self.gid);
        m[48..52].copy_from_slice(&self.srqn.to_be_bytes());
        m[52..56].copy_from_slice(&gid_index.to_be_bytes());
        m
    }

    /// Reads [`Dest::encode_bin`]'s form (what `rdma_read_keys` reads:
    /// everything but srqn and gid_index).
    pub(crate) fn decode_bin(m: &[u8]) -> Result<Self, String> {
        if m.len() < 48 {
            return Err(format!("the peer's QP address is {} bytes, not 56", m.len()));
        }
        let u = |i: usize| u32::from_be_bytes([m[i], m[i + 1], m[i + 2], m[i + 3]]);
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&m[32..48]);
        Ok(Dest {
            lid: u(0) as u16,
            out_reads: u(4),
            qpn: u(8),
            psn: u(12),
            rkey: u(16),
            vaddr: u64::from_be_bytes(m[24..32].try_into().unwrap_or_default()),
            gid,
            srqn: 0,
        })
    }

    pub(crate) fn decode(msg: &[u8], with_gid: bool) -> Result<Self, String> {
        let end = msg.iter().position(|&c| c == 0).unwrap_or(msg.len());
        let text = String::from_utf8_lossy(&msg[..end]);
        let bad = || format!("the peer's QP address is malformed: '{text}'");
        let f: Vec<u64> = text
            .split(':')
            .filter(|f| !f.is_empty())
            .map(|f| u64::from_str_radix(f, 16).map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        let want = if with_gid { 23 } else { 7 };
        if f.len() != want {
            return Err(format!("{} ({} fields, expected {want}: does one side use a GID and the other not?)", bad(), f.len()));
        }
        let n32 = |v: u64| u32::try_from(v).map_err(|_| bad());
        let mut gid = [0u8; 16];
        if with_gid {
            for (g, v) in gid.iter_mut().zip(&f[6..22]) {
                *g = u8::try_from(*v).map_err(|_| bad())?;
            }
        }
        Ok(Dest {
            lid: u16::try_from(f[0]).map_err(|_| bad())?,
            out_reads: n32(f[1])?,
            qpn: n32(f[2])?,
            psn: n32(f[3])?,
            rkey: n32(f[4])?,
            vaddr: f[5],
            gid,
            srqn: n32(f[want - 1])?,
        })
    }

    /// perftest's lines for a QP (`which` is `local` or `remote`).
    pub(crate) fn describe(&self, which: &str, test: Test, with_gid: bool) -> String {
        let mut s = format!(
            " {which} address: LID {} QPN {} PSN {}",
            c_alt_hex(u64::from(self.lid), 4),
            c_alt_hex(u64::from(self.qpn), 6),
            c_alt_hex(u64::from(self.psn), 6)
        );
        if matches!(test, Test::ReadLat | Test::ReadBw) {
            s.push_str(&format!(" OUT {}", c_alt_hex(u64::from(self.out_reads), 4)));
        }
        if !matches!(test, Test::SendLat | Test::SendBw | Test::AtomicLat) {
            s.push_str(&format!(" RKey {} VAddr {}", c_alt_hex(u64::from(self.rkey), 8), c_alt_hex(self.vaddr, 16)));
        }
        s.push('\n');
        if with_gid {
            let gid: Vec<String> = self.gid.iter().map(|b| format!("{b:02}")).collect();
            s.push_str(&format!(" GID: {}\n", gid.join(":")));
        }
        s
    }
}

/// C's `%#0<width>x`: `0x` and hex digits padded to `width` in all, or
/// only zeros for 0 (C prints no prefix for 0).
fn c_alt_hex(v: u64, width: usize) -> String {
    if v == 0 {
        format!("{:0width$}", 0)
    } else {
        format!("{v:#0width$x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Dest {
        let mut gid = [0u8; 16];
        gid[10] = 0xff;
        gid[11] = 0xff;
        gid[12..].copy_from_slice(&[10, 77, 0, 1]);
        Dest { lid: 0, out_reads: 0x80, qpn: 0x11, psn: 0xc2cb8, rkey: 0x5ed, vaddr: 0x55c1_061e_f000, gid, srqn: 0 }
    }

    #[test]
    fn messages_are_perftests_text_at_its_sizes() {
        let d = sample();
        let m = d.encode(true);
        assert_eq!(m.len(), MSG_GID);
        let text = String::from_utf8(m[..107].to_vec()).unwrap();
        assert_eq!(
            text,
            "0000:0080:000011:0c2cb8:000005ed:000055c1061ef000:\
             00:00:00:00:00:00:00:00:00:00:ff:ff:0a:4d:00:01:00000000:"
        );
        assert_eq!(m[107], 0);
        assert_eq!(Dest::decode(&m, true), Ok(d));
        let m = d.encode(false);
        assert_eq!(m.len(), MSG_NO_GID);
        assert_eq!(&m[..58], b"0000:0080:000011:0c2cb8:000005ed:000055c1061ef000:00000000");
        assert_eq!(Dest::decode(&m, false), Ok(Dest { gid: [0; 16], ..d }));
    }

    #[test]
    fn binary_form_is_pingpong_dest_big_endian() {
        let d = sample();
        let m = d.encode_bin(3);
        assert_eq!(m.len(), 56);
        assert_eq!(&m[8..12], &d.qpn.to_be_bytes());
        assert_eq!(&m[24..32], &d.vaddr.to_be_bytes());
        assert_eq!(&m[52..56], &3u32.to_be_bytes());
        assert_eq!(Dest::decode_bin(&m).unwrap(), Dest { srqn: 0, ..d });
        assert!(Dest::decode_bin(&m[..40]).is_err());
    }

    #[test]
    fn malformed_or_mismatched_messages_are_refused() {
        let d = sample();
        let e = Dest::decode(&d.encode(false), true).unwrap_err();
        assert!(e.contains("7 fields, expected 23"), "{e}");
        assert!(Dest::decode(&d.encode(true), false).is_err());
        let mut m = d.encode(true);
        m[3] = b'g';
        assert!(Dest::decode(&m, true).unwrap_err().contains("malformed"));
        let mut m = d.encode(true);
        m[50] = b'1'; // the first GID byte becomes 0x100
        m[51] = b'0';
        m.insert(50, b'1');
        m.truncate(MSG_GID);
        assert!(Dest::decode(&m, true).is_err());
        assert!(Dest::decode(b"", true).is_err());
    }

    #[test]
    fn described_like_perftest() {
        let d = sample();
        let w = d.describe("local", Test::WriteLat, true);
        assert_eq!(
            w,
            " local address: LID 0000 QPN 0x0011 PSN 0xc2cb8 RKey 0x0005ed VAddr 0x0055c1061ef000\n \
             GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:77:00:01\n"
        );
        assert!(d.describe("remote", Test::ReadBw, false).contains("PSN 0xc2cb8 OUT 0x80 RKey"));
        assert_eq!(d.describe("local", Test::SendLat, false), " local address: LID 0000 QPN 0x0011 PSN 0xc2cb8\n");
    }
}
