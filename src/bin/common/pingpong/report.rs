//! What the pingpong programs print, with their `printf` formats, and the
//! C library pieces they rely on (`lrand48` for the PSN, `%.2f` of C).

use super::super::strings::ntop6;
use super::exchange::Dest;

/// `"  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s"`.
/// `ud_pingpong.c` has a colon instead of the comma before `GID` in this
/// one line (`ud_colon`).
pub(crate) fn local_line(d: &Dest, ud_colon: bool) -> String {
    let sep = if ud_colon { ':' } else { ',' };
    format!(
        "  local address:  LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}{sep} GID {}",
        d.lid,
        d.qpn,
        d.psn,
        ntop6(&d.gid)
    )
}

/// `"  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s"`.
pub(crate) fn remote_line(d: &Dest) -> String {
    format!(
        "  remote address: LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
        d.lid,
        d.qpn,
        d.psn,
        ntop6(&d.gid)
    )
}

/// C's `%.2f` of a double: as Rust's `{:.2}` for finite values; `inf`,
/// `-inf`, `nan` / `-nan` (glibc prints the sign of a NaN) otherwise.
pub(crate) fn c_2f(v: f64) -> String {
    if v.is_nan() {
        if v.is_sign_negative() { "-nan" } else { "nan" }.to_owned()
    } else if v.is_infinite() {
        if v < 0.0 { "-inf" } else { "inf" }.to_owned()
    } else {
        format!("{v:.2}")
    }
}

/// The two result lines, computed as C does: the elapsed microseconds in a
/// `float`, `bytes = (long long) size * iters * 2`, Mbit/s in `double`,
/// and `usec / iters` in `float`.
pub(crate) fn result_lines(size: u32, iters: u32, elapsed_usec: i64) -> [String; 2] {
    let usec = elapsed_usec as f32;
    let bytes = i64::from(size) * i64::from(iters) * 2;
    let secs = f64::from(usec) / 1_000_000.0;
    [
        format!(
            "{bytes} bytes in {} seconds = {} Mbit/sec",
            c_2f(secs),
            c_2f(bytes as f64 * 8.0 / f64::from(usec))
        ),
        format!(
            "{} iters in {} seconds = {} usec/iter",
            iters as i32,
            c_2f(secs),
            c_2f(f64::from(usec / iters as f32))
        ),
    ]
}

/// `"invalid data in page %d"`, what `-c` prints for each page whose first
/// byte is not what the sender wrote.
pub(crate) fn invalid_page_line(page: usize) -> String {
    format!("invalid data in page {page}")
}

/// The byte `-c` puts at the start of every page of the sent buffer and
/// expects there in the received one: `i / page_size % sizeof(char)`,
/// which is always 0.
pub(crate) fn chk_byte(page: usize) -> u8 {
    (page % core::mem::size_of::<u8>()) as u8
}

/// The pages whose first byte is wrong after a `-c` run: `buf` is the
/// received data (the `size` bytes the programs check).
pub(crate) fn invalid_pages(buf: &[u8], page_size: usize) -> Vec<usize> {
    (0..buf.len())
        .step_by(page_size)
        .filter(|&i| buf[i] != chk_byte(i / page_size))
        .map(|i| i / page_size)
        .collect()
}

/// `srand48` / `lrand48`: the 48-bit linear congruential generator
/// (a = 0x5DEECE66D, c = 0xB) the programs draw their PSNs from.
pub(crate) struct Rand48(u64);

impl Rand48 {
    /// `srand48(seed)`: the high 32 bits of the state are the seed's low
    /// 32 bits, the low 16 are 0x330E.
    pub(crate) fn new(seed: i64) -> Self {
        Self(((seed as u64 & 0xffff_ffff) << 16) | 0x330e)
    }

    /// The programs' seed: `getpid() * time(NULL)`.
    pub(crate) fn from_pid_and_time() -> Self {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        Self::new(i64::from(std::process::id()).wrapping_mul(now))
    }

    /// `lrand48()`: the next state's top 31 bits.
    pub(crate) fn lrand48(&mut self) -> u32 {
        self.0 = (self.0.wrapping_mul(0x5_deec_e66d).wrapping_add(0xb)) & ((1 << 48) - 1);
        (self.0 >> 17) as u32
    }

    /// A PSN: `lrand48() & 0xffffff`.
    pub(crate) fn psn(&mut self) -> u32 {
        self.lrand48() & 0xff_ffff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_lines() {
        let gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 2, 15];
        let d = Dest {
            lid: 0,
            qpn: 0x11,
            psn: 0x9abcd,
            gid,
        };
        assert_eq!(
            local_line(&d, false),
            "  local address:  LID 0x0000, QPN 0x000011, PSN 0x09abcd, GID ::ffff:10.0.2.15"
        );
        assert_eq!(
            local_line(&d, true),
            "  local address:  LID 0x0000, QPN 0x000011, PSN 0x09abcd: GID ::ffff:10.0.2.15"
        );
        assert_eq!(
            remote_line(&Dest {
                lid: 0x1a,
                ..Dest::default()
            }),
            "  remote address: LID 0x001a, QPN 0x000000, PSN 0x000000, GID ::"
        );
    }

    #[test]
    fn result_lines_as_printf() {
        // 20 iterations of 4096 bytes in 1.5 s
        let [a, b] = result_lines(4096, 20, 1_500_000);
        assert_eq!(a, "163840 bytes in 1.50 seconds = 0.87 Mbit/sec");
        assert_eq!(b, "20 iters in 1.50 seconds = 75000.00 usec/iter");
        // float precision: 123456789 µs is 123456792 as a float
        let [_, b] = result_lines(1, 1, 123_456_789);
        assert_eq!(b, "1 iters in 123.46 seconds = 123456792.00 usec/iter");
        // zero iterations: C divides by zero
        let [a, b] = result_lines(4096, 0, 10);
        assert_eq!(a, "0 bytes in 0.00 seconds = 0.00 Mbit/sec");
        assert_eq!(b, "0 iters in 0.00 seconds = inf usec/iter");
    }

    #[test]
    fn chk_pattern_and_validation() {
        assert!((0..10).all(|p| chk_byte(p) == 0));
        let mut buf = vec![0x7bu8; 3 * 4096 + 10];
        buf[4096] = 0;
        assert_eq!(invalid_pages(&buf, 4096), [0, 2, 3]);
        assert_eq!(invalid_page_line(2), "invalid data in page 2");
        buf.iter_mut().step_by(4096).for_each(|b| *b = 0);
        assert!(invalid_pages(&buf, 4096).is_empty());
    }

    #[test]
    fn lrand48_matches_glibc() {
        // glibc 2.36: srand48(0); lrand48() x3 -> 366850414, 1610402240, 206956554
        // (state 0x330E; x' = 0x5DEECE66D * x + 0xB mod 2^48, top 31 bits)
        let mut r = Rand48::new(0);
        let x1 = (0x5_deec_e66d_u64 * 0x330e + 0xb) & ((1 << 48) - 1);
        assert_eq!(r.lrand48(), (x1 >> 17) as u32);
        let mut r = Rand48::new(0);
        let got: Vec<u32> = (0..3).map(|_| r.lrand48()).collect();
        assert_eq!(got, [366850414, 1610402240, 206956554]);
        assert!(Rand48::new(12345).psn() <= 0xff_ffff);
    }
}
