//! Results in perftest's format (so the harness parses both sides with one
//! parser) and as one `verbs-perf result key=value ...` line.

use super::args::{Atomic, Opts, Test};
use super::exchange::BwReport;

pub(crate) const RULE: &str =
    "---------------------------------------------------------------------------------------";

/// Latency statistics in microseconds, already divided by perftest's
/// round-trip factor (2 for SEND and WRITE ping-pong: the half round trip;
/// 1 for READ and atomics, whose one operation is the round trip).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct LatStats {
    pub(crate) min: f64,
    pub(crate) max: f64,
    pub(crate) typical: f64,
    pub(crate) avg: f64,
    pub(crate) stdev: f64,
    pub(crate) p99: f64,
    pub(crate) p999: f64,
}

/// Statistics of per-iteration round trips (as perftest: the differences
/// between successive post timestamps) in nanoseconds, divided by `factor`;
/// in other units `factor` carries the conversion too (ticks: perftest's
/// factor over the nanoseconds per tick). The order statistics (median, 99 % and 99.9 %) are selected, not sorted
/// for (`select_nth_unstable`: linear, where a sort is n log n); `rtt_ns`
/// is left reordered.
pub(crate) fn lat_stats(rtt_ns: &mut [u64], factor: f64) -> Option<LatStats> {
    let n = rtt_ns.len();
    if n == 0 {
        return None;
    }
    let (mut min, mut max, mut sum) = (u64::MAX, 0, 0u128);
    for &x in rtt_ns.iter() {
        (min, max, sum) = (min.min(x), max.max(x), sum + u128::from(x));
    }
    let us = |ns: f64| ns / 1000.0 / factor;
    let avg = sum as f64 / n as f64;
    let var = rtt_ns.iter().map(|&x| (x as f64 - avg).powi(2)).sum::<f64>() / n as f64;
    // the k-th smallest, 0-based, for k rising: each selection leaves
    // everything above its element to its right, where the next one looks
    let mut done = 0;
    let mut nth = |rtt_ns: &mut [u64], k: usize| -> u64 {
        let k = k.max(done);
        let (_, &mut x, _) = rtt_ns[done..].select_nth_unstable(k - done);
        done = k;
        x
    };
    let pct_index = |p: f64| ((n as f64 * p).ceil() as usize).clamp(1, n) - 1;
    let median = if n % 2 == 1 {
        nth(rtt_ns, n / 2) as f64
    } else {
        // the upper middle is the smallest of what the lower one's
        // selection left to its right: a scan, not a second selection
        let lo = nth(rtt_ns, n / 2 - 1);
        let hi = rtt_ns[n / 2..].iter().copied().min().unwrap_or(lo);
        (lo as f64 + hi as f64) / 2.0
    };
    let (p99, p999) = (nth(rtt_ns, pct_index(0.99)), nth(rtt_ns, pct_index(0.999)));
    Some(LatStats {
        min: us(min as f64),
        max: us(max as f64),
        typical: us(median),
        avg: us(avg),
        stdev: us(var.sqrt()),
        p99: us(p99 as f64),
        p999: us(p999 as f64),
    })
}

/// perftest's banner for the test.
pub(crate) fn banner(o: &Opts, dev: &str, gid_index: Option<u32>, mtu: u32, out_reads: u32) -> String {
    let title = match (o.test, o.atomic) {
        (Test::SendLat, _) => "Send Latency Test",
        (Test::WriteLat, _) => "RDMA_Write Latency Test",
        (Test::ReadLat, _) => "RDMA_Read Latency Test",
        (Test::AtomicLat, Atomic::FetchAndAdd) => "Atomic FETCH_AND_ADD Latency Test",
        (Test::AtomicLat, Atomic::CmpAndSwap) => "Atomic CMP_AND_SWAP Latency Test",
        (Test::SendBw, _) => "Send BW Test",
        (Test::WriteBw, _) => "RDMA_Write BW Test",
        (Test::ReadBw, _) => "RDMA_Read BW Test",
    };
    let gid = gid_index.map_or_else(|| "none".to_owned(), |g| g.to_string());
    format!(
        "{RULE}\n                    {title} (verbs-perf)\n Device         : {dev}\n Number of qps   : {}\n \
         Connection type : RC\n TX depth        : {}\n Post List       : {}\n Mtu             : {mtu}[B]\n \
         GID index       : {gid}\n Outstand reads  : {out_reads}\n rdma_cm QPs\t : {cm}\n Data ex. method : {ex}\n{RULE}\n",
        o.qps,
        o.tx_depth,
        o.post_list,
        cm = if o.rdma_cm { "ON" } else { "OFF" },
        ex = if o.rdma_cm { "rdma_cm" } else { "Ethernet" },
    )
}

pub(crate) fn lat_table(o: &Opts, s: &LatStats) -> String {
    format!(
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   \
         99% percentile[usec]   99.9% percentile[usec] \n \
         {:<7} {:<12} {:<14.2} {:<12.2} {:<12.2} {:<12.2} {:<12.2} {:<12.2} {:.2}\n{RULE}\n\
         verbs-perf result test={} bytes={} iters={} t_min_us={:.3} t_max_us={:.3} t_typical_us={:.3} \
         t_avg_us={:.3} t_stdev_us={:.3} p99_us={:.3} p999_us={:.3}\n",
        o.size, o.iters, s.min, s.max, s.typical, s.avg, s.stdev, s.p99, s.p999,
        o.test.name(), o.size, o.iters, s.min, s.max, s.typical, s.avg, s.stdev, s.p99, s.p999
    )
}

/// `msgs` messages of `o.size` bytes in `ns` nanoseconds as perftest's
/// result: BW in MB/s with perftest's MB (2^20 bytes); peak is reported as
/// the average (we do not keep per-completion timestamps).
pub(crate) fn bw_report(o: &Opts, msgs: u64, ns: u64) -> BwReport {
    let secs = ns.max(1) as f64 / 1e9;
    let mbs = msgs as f64 * f64::from(o.size) / secs / 1_048_576.0;
    BwReport { size: u64::from(o.size), iters: msgs, bw_peak: mbs, bw_avg: mbs, msg_rate: msgs as f64 / secs / 1e6 }
}

/// The result table and our key=value line; `ns` is 0 when the numbers
/// came from the peer (a perftest or verbs-perf client).
pub(crate) fn bw_table(o: &Opts, r: &BwReport, ns: u64) -> String {
    let (msgs, mbs, peak, mpps) = (r.iters, r.bw_avg, r.bw_peak, r.msg_rate);
    format!(
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n \
         {:<10} {:<16} {:<18.2} {:<16.2} {:.6}\n{RULE}\n\
         verbs-perf result test={} bytes={} iters={} qps={} post_list={} msgs={} ns={} bw_avg_mbs={:.3} \
         msg_rate_mpps={:.6}\n",
        r.size, msgs, peak, mbs, mpps,
        o.test.name(), r.size, o.iters, o.qps, o.post_list, msgs, ns, mbs, mpps
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{parse, Parsed};

    #[test]
    fn latency_statistics_are_half_round_trips() {
        // RTTs 10..=1000 us in 10 us steps (100 samples), shuffled
        let mut v: Vec<u64> = (1..=100).rev().map(|i| i * 10_000).collect();
        v.swap(3, 70);
        let s = lat_stats(&mut v, 2.0).unwrap();
        assert_eq!((s.min, s.max), (5.0, 500.0));
        assert_eq!(s.typical, (500.0 + 510.0) / 2.0 / 2.0);
        assert_eq!(s.avg, 505.0 / 2.0);
        assert_eq!((s.p99, s.p999), (495.0, 500.0));
        assert!((s.stdev - 144.3).abs() < 0.1, "{}", s.stdev);
        let mut odd = vec![30_000, 10_000, 20_000];
        assert_eq!(lat_stats(&mut odd, 2.0).unwrap().typical, 10.0);
        assert_eq!(lat_stats(&mut odd, 1.0).unwrap().typical, 20.0);
        assert_eq!(lat_stats(&mut [], 2.0), None);
    }

    #[test]
    fn selected_statistics_are_those_of_the_sorted_samples() {
        // a scrambled sequence with repeats, odd and even lengths
        for n in [1usize, 2, 5, 100, 601, 1000] {
            let mut v: Vec<u64> = (0..n as u64).map(|i| (i * 7919 + 13) % 251 * 1000).collect();
            let mut sorted = v.clone();
            sorted.sort_unstable();
            let s = lat_stats(&mut v, 1.0).unwrap();
            let at = |i: usize| sorted[i] as f64 / 1000.0;
            let median = if n % 2 == 1 { at(n / 2) } else { (at(n / 2 - 1) + at(n / 2)) / 2.0 };
            let pct = |p: f64| at(((n as f64 * p).ceil() as usize).clamp(1, n) - 1);
            assert_eq!((s.min, s.max, s.typical), (at(0), at(n - 1), median), "n={n}");
            assert_eq!((s.p99, s.p999), (pct(0.99), pct(0.999)), "n={n}");
        }
    }

    #[test]
    fn tables_look_like_perftest() {
        let Ok(Parsed::Run(o)) = parse(&["send_bw".into(), "-s".into(), "8".into(), "-q".into(), "2".into()]) else {
            panic!()
        };
        // 4000 messages in 50 ms = 0.08 Mpps
        let t = bw_table(&o, &bw_report(&o, 4000, 50_000_000), 50_000_000);
        let row: Vec<&str> = t.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(row, ["8", "4000", "0.61", "0.61", "0.080000"]);
        assert!(t.contains("msg_rate_mpps=0.080000"), "{t}");
        let s = LatStats { min: 1.0, max: 9.0, typical: 2.5, avg: 3.0, stdev: 0.5, p99: 8.0, p999: 9.0 };
        let t = lat_table(&o, &s);
        let row: Vec<&str> = t.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(&row[..6], ["8", "1000", "1.00", "9.00", "2.50", "3.00"]);
        assert!(t.contains("t_typical_us=2.500"), "{t}");
    }
}
