//! Atomics: one RC QP adds to and compare-and-swaps a 64-bit counter in
//! its peer's memory; the old values come back into local memory.
//!
//! Run: `cargo run --example atomics` (device `rxe0`, or `VERBS_DEVICE`).

use verbs::discovery::devices;
use verbs::qp::{ConnectOpts, Endpoint, QpCap, QpInitAttr, RcQp};
use verbs::wr::{SendWr, Sge};
use verbs::{AccessFlags, Context, Cq, Mr, Pd, Wc};

pub(crate) fn main() -> Result<(), Box<dyn core::error::Error>> {
    let name = std::env::var("VERBS_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let list = devices()?;
    let ctx = Context::open(list.by_name(&name)?)?;
    let pd = Pd::alloc(&ctx)?;
    let cq = Cq::create(&ctx, 16, None, 0)?;
    let cap = QpCap { max_send_wr: 8, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let attr = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false };
    let (a, b) = (RcQp::create(&pd, attr)?, RcQp::create(&pd, attr)?);
    let (ea, eb) = (Endpoint::local(&a, 1, None, 0)?, Endpoint::local(&b, 1, None, 0)?);
    // The target QP must allow remote atomics; the defaults allow one
    // outstanding atomic each way (max_rd_atomic, max_dest_rd_atomic).
    let opts = ConnectOpts { access: AccessFlags::REMOTE_ATOMIC, ..ConnectOpts::default() };
    let mut a = a.connect(&ea, &eb, &opts)?; // a failed transition hands the QP back in e.qp; ? keeps only the error
    let _b = b.connect(&eb, &ea, &opts)?; // a failed transition hands the QP back in e.qp; ? keeps only the error

    // The counter (8-byte aligned) in b's memory, starting at 40.
    let counter = vec![0u8; 64];
    let mut counter_mr = Mr::reg(&pd, counter, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_ATOMIC)?;
    counter_mr.write_at(0, &40u64.to_ne_bytes())?;
    // Where the old values land in a's memory.
    let results = vec![0u8; 64];
    let results_mr = Mr::reg(&pd, results, AccessFlags::LOCAL_WRITE)?;
    let (old1, old2) = ([Sge::from_mr(&results_mr, 0, 8)], [Sge::from_mr(&results_mr, 8, 8)]);
    let (addr, rkey) = (counter_mr.addr(), counter_mr.rkey());

    // fetch-and-add 2 (40 -> 42), then compare 42 and swap in 1000.
    a.post_send(&[
        SendWr::fetch_add(1, &old1, addr, rkey, 2).signaled(),
        SendWr::compare_swap(2, &old2, addr, rkey, 42, 1000).signaled(),
    ])?;
    let mut wc = [Wc::ZERO; 2];
    let (mut done, start) = (0, std::time::Instant::now());
    while done < 2 {
        let n = cq.poll(&mut wc[done..])?;
        done += n;
        if start.elapsed().as_secs() > 30 {
            return Err("no completion within 30 s".into());
        }
    }
    if let Some(w) = wc.iter().find(|w| !w.status().is_success()) {
        return Err(format!("atomic {} failed: {:?}", w.wr_id(), w.status()).into());
    }

    let mut bytes = [0u8; 16];
    results_mr.read_at(0, &mut bytes)?;
    let fetched = u64::from_ne_bytes(bytes[..8].try_into()?);
    let compared = u64::from_ne_bytes(bytes[8..].try_into()?);
    let mut now = [0u8; 8];
    counter_mr.read_at(0, &mut now)?;
    let now = u64::from_ne_bytes(now);
    println!("fetch_add saw {fetched}, compare_swap saw {compared}, counter is {now}");
    if (fetched, compared, now) != (40, 42, 1000) {
        return Err("unexpected atomic results".into());
    }
    Ok(())
}
