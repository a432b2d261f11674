//! A region owns its buffer (issue 12, items 1 and 2): forgetting a region
//! with a posted receive, or dropping one whose deregistration the kernel
//! refuses (a type 2 window still bound), leaks the buffer — the device
//! and peers keep writing memory that Rust never hands out again. A buffer
//! type that counts its drops shows what was released.
#![allow(unsafe_code)]

use core::mem::ManuallyDrop;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::rig::{init_attr, open_dev, open_rxe, rc_pair_on, wait, ALL_ACCESS, CAP};
use verbs::wr::{MwBind, RecvWr, SendFlags, SendOp, SendWr, Sge};
use verbs::{AccessFlags, Cq, Mr, MrBuffer, Mw, MwType, Pd, WcStatus};

const SIG: SendFlags = SendFlags::SIGNALED;

/// A `Vec<u8>` that counts how often it was dropped (released).
#[derive(Debug)]
struct Counted {
    v: Vec<u8>,
    drops: &'static AtomicUsize,
}

impl Counted {
    fn new(len: usize, fill: u8) -> (Self, &'static AtomicUsize) {
        let drops: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
        (Self { v: vec![fill; len], drops }, drops)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.drops.fetch_add(1, Ordering::SeqCst);
    }
}

// SAFETY: the vector's allocation is given up through `Vec`'s own
// `MrBuffer` parts (which uphold the contract) and rebuilt only in
// `from_raw`; the counter is `'static`. `into_raw` takes the vector out of a
// `ManuallyDrop`, so no drop is counted for giving the memory up.
unsafe impl MrBuffer for Counted {
    type Raw = (usize, &'static AtomicUsize);
    fn into_raw(self) -> (*mut u8, usize, Self::Raw) {
        let mut this = ManuallyDrop::new(self);
        let (p, n, cap) = core::mem::take(&mut this.v).into_raw();
        (p, n, (cap, this.drops))
    }
    unsafe fn from_raw(ptr: *mut u8, len: usize, (cap, drops): Self::Raw) -> Self {
        // SAFETY: the parts `Vec::into_raw` gave in `into_raw` (caller
        // contract: used once).
        Self { v: unsafe { Vec::from_raw_parts(ptr, len, cap) }, drops }
    }
}

/// Reads `n` bytes at `addr` of a leaked buffer (never freed: reading it is
/// reading memory the process still owns and nothing else references).
fn leaked_bytes(addr: u64, n: usize) -> Vec<u8> {
    (0..n)
        // SAFETY: `addr..addr+n` is inside a leaked, still-allocated buffer
        // (the test's drop count proves it was not released); volatile byte
        // reads form no reference.
        .map(|i| unsafe { (addr as *const u8).wrapping_add(i).read_volatile() })
        .collect()
}

fn owned_buffer_comes_back_only_after_dereg(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (buf, drops) = Counted::new(4096, 3);
    let addr = buf.v.as_ptr() as u64;
    let mr = Mr::reg(&pd, buf, ALL_ACCESS).unwrap();
    assert_eq!((mr.addr(), drops.load(Ordering::SeqCst)), (addr, 0));
    let buf = mr.destroy().expect("ibv_dereg_mr");
    assert_eq!((buf.v.as_ptr() as u64, buf.v[4095], drops.load(Ordering::SeqCst)), (addr, 3, 0));
    drop(buf);
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    // Dropping a region deregisters and then releases the buffer.
    let (buf, drops) = Counted::new(4096, 0);
    drop(Mr::reg(&pd, buf, ALL_ACCESS).unwrap());
    assert_eq!(drops.load(Ordering::SeqCst), 1, "a dropped region releases its buffer");
}

fn forgotten_mr_with_posted_recv_leaks_its_buffer(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 16, None, 0).unwrap(), Cq::create(&ctx, 16, None, 0).unwrap());
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    const N: usize = 1024;
    let mut amr = Mr::alloc(&pd, N, ALL_ACCESS).unwrap();
    amr.fill(0, N, 0xee).unwrap();

    let (buf, drops) = Counted::new(N, 0);
    let mr = Mr::reg(&pd, buf, ALL_ACCESS).unwrap();
    let addr = mr.addr();
    let rs = [Sge::from_mr(&mr, 0, N as u32)];
    b.post_recv(&[RecvWr::new(1, &rs)]).unwrap();
    // Safe code forgets the region while the receive is posted: the
    // registration stays, and so must the memory.
    core::mem::forget(mr);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "forgetting a region must not release its buffer");
    // Memory Rust hands out from now on (a released buffer of this size
    // would be among the first reused).
    let victims: Vec<Vec<u8>> = (0..64).map(|_| vec![0x11u8; N]).collect();
    for v in &victims {
        let p = v.as_ptr() as u64;
        assert!(p + N as u64 <= addr || p >= addr + N as u64, "new allocation {p:#x} overlaps the registered buffer");
    }
    let ss = [Sge::from_mr(&amr, 0, N as u32)];
    a.post_send(&[SendWr::send(2, &ss).flags(SIG)]).unwrap();
    let s = wait(&scq, 1);
    assert_eq!(s[0].status(), WcStatus::Success, "{s:?}");
    let r = wait(&rcq, 1);
    assert_eq!((r[0].wr_id(), r[0].status(), r[0].byte_len()), (1, WcStatus::Success, N as u32), "{r:?}");
    assert!(victims.iter().all(|v| v.iter().all(|&x| x == 0x11)), "the receive overwrote Rust-owned memory");
    assert!(leaked_bytes(addr, N).iter().all(|&x| x == 0xee), "the data landed in the leaked buffer");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_refused_dereg_under_a_bound_window_leaks_the_buffer() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 16, None, 0).unwrap(), Cq::create(&ctx, 16, None, 0).unwrap());
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let (buf, drops) = Counted::new(4096, 0);
    let mr = Mr::reg(&pd, buf, ALL_ACCESS | AccessFlags::MW_BIND).unwrap();
    let addr = mr.addr();
    let mw = Mw::alloc(&pd, MwType::Type2).expect("ibv_alloc_mw");
    let bind = MwBind::new(&mw, &mr, addr, 1024, AccessFlags::REMOTE_WRITE);
    b.post_send(&[SendWr::new(1, SendOp::BindMw(bind), &[]).flags(SIG)]).expect("post bind");
    let c = wait(&scq, 1);
    assert_eq!(c[0].status(), WcStatus::Success, "{c:?}");
    let rkey = mw.rkey();
    // The window keeps `mr` borrowed (dropping `mr` here does not compile,
    // tests/ui/fail_mr_drop_while_mw_bound.rs); safe code can still leak
    // the window, which stays bound in the kernel.
    core::mem::forget(mw);

    // rxe refuses to deregister a region with a bound type 2 window
    // (EINVAL): destroy gives the region back, still registered...
    let e = mr.destroy().unwrap_err();
    assert_eq!((e.error.verb(), e.error.raw_os_error()), ("ibv_dereg_mr", libc::EINVAL), "{:?}", e.error);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    // ...and dropping it (the deregistration fails again) leaks the buffer.
    drop(e.object);
    assert_eq!(drops.load(Ordering::SeqCst), 0, "a region the kernel still holds released its buffer");

    // The window is still live: a peer's write through it lands in the
    // leaked buffer, never in memory Rust reuses.
    a.post_send(&[SendWr::rdma_write(2, &[], addr + 8, rkey).inline(b"still-bound").flags(SIG)]).unwrap();
    let c = wait(&scq, 1);
    assert_eq!(c[0].status(), WcStatus::Success, "{c:?}");
    assert_eq!(leaked_bytes(addr + 8, 11), b"still-bound");
    assert_eq!(drops.load(Ordering::SeqCst), 0);
}

twins!(owned_buffer_comes_back_only_after_dereg: rxe_owned_buffer_comes_back_only_after_dereg, siw_owned_buffer_comes_back_only_after_dereg);

twins!(forgotten_mr_with_posted_recv_leaks_its_buffer: rxe_forgotten_mr_with_posted_recv_leaks_its_buffer, siw_forgotten_mr_with_posted_recv_leaks_its_buffer);
