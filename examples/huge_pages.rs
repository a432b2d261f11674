//! Huge pages: a 16 MiB buffer on 2 MiB pages (`HugePageBuf`) registered
//! as a memory region, its registration time next to that of a 4 KiB-page
//! buffer of the same size, then an RDMA WRITE of 2 MiB out of it between
//! two loopback RC queue pairs.
//!
//! Needs 8 free huge pages: `sysctl vm.nr_hugepages=8` (the test VM
//! reserves them at boot). Run: `cargo run --release --example huge_pages`
//! (device `rxe0`, or the one named in `VERBS_DEVICE`).

use core::time::Duration;
use std::time::Instant;

use verbs::discovery::devices;
use verbs::qp::{ConnectOpts, Endpoint, QpCap, QpInitAttr, RcQp};
use verbs::wr::{SendWr, Sge};
use verbs::{AccessFlags, Context, Cq, HugePageBuf, Mr, PageBuf, Pd, Wc};

const LEN: usize = 16 << 20;
const ROUNDS: usize = 21;

/// One registration (`ibv_reg_mr`) of `buf`, timed, then its
/// deregistration (not timed); returns the time and the buffer.
fn reg_once<B: verbs::MrBuffer + core::fmt::Debug + Send + Sync + 'static>(
    pd: &Pd<'_>,
    buf: B,
) -> Result<(Duration, B), Box<dyn core::error::Error>> {
    let t = Instant::now();
    let mr = Mr::reg(pd, buf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)?;
    let spent = t.elapsed();
    Ok((spent, mr.destroy()?))
}

pub(crate) fn main() -> Result<(), Box<dyn core::error::Error>> {
    let name = std::env::var("VERBS_DEVICE").unwrap_or_else(|_| "rxe0".to_owned());
    let list = devices()?;
    let ctx = Context::open(list.by_name(&name)?)?;
    let pd = Pd::alloc(&ctx)?;

    // Both buffers written once first, so that the times below are the
    // registration's (pinning, translation), not first-touch page faults.
    let mut huge = HugePageBuf::new(LEN)?; // the error names vm.nr_hugepages if none are free
    let mut small = PageBuf::new(LEN)?;
    huge.fill(0x5a);
    small.fill(0xa5);
    // Alternating, so that a busy moment of the host hits both alike.
    let (mut t_huge, mut t_small) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let t;
        (t, huge) = reg_once(&pd, huge)?;
        t_huge.push(t);
        let t;
        (t, small) = reg_once(&pd, small)?;
        t_small.push(t);
    }
    t_huge.sort();
    t_small.sort();
    let (h, s) = (t_huge[ROUNDS / 2], t_small[ROUNDS / 2]);
    println!(
        "ibv_reg_mr of {} MiB, median of {ROUNDS} (min..max): 2 MiB pages {h:?} ({:?}..{:?}), 4 KiB pages {s:?} ({:?}..{:?}): {:.1}x",
        LEN >> 20,
        t_huge[0],
        t_huge[ROUNDS - 1],
        t_small[0],
        t_small[ROUNDS - 1],
        s.as_secs_f64() / h.as_secs_f64().max(1e-9)
    );

    // The huge-page region in use: a writes 2 MiB of it into b's region.
    let src = Mr::reg(&pd, huge, AccessFlags::LOCAL_WRITE)?;
    let mut dst = Mr::reg(&pd, small, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)?;
    dst.write_at(0, &vec![0u8; 2 << 20])?;
    let cq = Cq::create(&ctx, 4, None, 0)?;
    let cap = QpCap { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let attr = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false };
    let (a, b) = (RcQp::create(&pd, attr)?, RcQp::create(&pd, attr)?);
    let (ea, eb) = (Endpoint::local(&a, 1, None, 0)?, Endpoint::local(&b, 1, None, 0)?);
    let opts = ConnectOpts { access: AccessFlags::REMOTE_WRITE, ..ConnectOpts::default() };
    let mut a = a.connect(&ea, &eb, &opts)?;
    let _b = b.connect(&eb, &ea, &opts)?;
    let sge = [Sge::from_mr(&src, 0, 2 << 20)];
    a.post_send(&[SendWr::rdma_write(1, &sge, dst.addr(), dst.rkey()).signaled()])?;
    let mut wc = [Wc::ZERO; 1];
    let n = cq.wait(&mut wc, Some(Duration::from_secs(30)))?;
    if n != 1 || !wc[0].status().is_success() {
        return Err(format!("RDMA WRITE failed: {:?}", &wc[..n]).into());
    }
    let mut got = vec![0u8; 2 << 20];
    dst.read_at(0, &mut got)?;
    if got.iter().any(|&x| x != 0x5a) {
        return Err("the huge-page bytes did not arrive".into());
    }
    println!("RDMA WRITE of 2 MiB out of huge pages: ok");
    Ok(())
}
