//! The library does not allocate: with the context open (discovery, which
//! allocates, is done), PD → MR → CQ → SRQ → RC QP to RTS → destroy all
//! runs with a counting global allocator seeing zero allocations on this
//! thread.
// The counting allocator implements the unsafe `GlobalAlloc` trait.
#![allow(unsafe_code)]

use core::alloc::{GlobalAlloc, Layout};
use std::alloc::System;
use core::cell::Cell;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::common::{gid_index, rxe_name};
use verbs::qp::{
    AhAttr, ConnInitAttr, GlobalRoute, Mtu, QpAccess, QpCap, QpInitAttr, RcQp, RcRtrAttr,
    RcRtsAttr,
};
use verbs::srq::{Srq, SrqInitAttr};
use verbs::{discovery::devices, AccessFlags, Context, Cq, Mr, Pd, Wc};

/// Passes everything to the system allocator, counting the allocations
/// made on a thread while that thread's `COUNTING` flag is set.
struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

fn note() {
    if COUNTING.with(Cell::get) {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the same arguments, so
// `System`'s guarantees hold; the counting has no effect on the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded unchanged (caller's contract is `System`'s).
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: forwarded unchanged.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs the whole control path; returns the allocation count.
fn control_path(ctx: &Context, buf: Vec<u8>, sgid_index: u8) -> usize {
    ALLOCS.store(0, Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    {
        let pd = Pd::alloc(ctx).unwrap();
        let mr = Mr::reg(&pd, buf, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE).unwrap();
        let cq = Cq::create(ctx, 32, None, 0).unwrap();
        let srq = Srq::create(&pd, SrqInitAttr { max_wr: 16, max_sge: 1, srq_limit: 0 }).unwrap();
        let cap =
            QpCap { max_send_wr: 8, max_recv_wr: 8, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
        let init = QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: Some(&srq), cap, sq_sig_all: false };
        let qp = RcQp::create(&pd, init).unwrap();
        let me = qp.qp_num();
        let qp = qp
            .into_init(ConnInitAttr { pkey_index: 0, port_num: 1, access: QpAccess::REMOTE_WRITE })
            .unwrap();
        let dgid = ctx.query_gid(1, u32::from(sgid_index)).unwrap();
        let grh = GlobalRoute { dgid, flow_label: 0, sgid_index, hop_limit: 1, traffic_class: 0 };
        let rtr = RcRtrAttr {
            path_mtu: Mtu::Mtu1024,
            dest_qp_num: me,
            rq_psn: 0,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ah_attr: AhAttr { grh: Some(grh), port_num: 1, ..Default::default() },
        };
        let qp = qp.into_rtr(rtr).unwrap();
        let rts = RcRtsAttr { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
        let qp = qp.into_rts(rts).unwrap();
        let _ = qp.query().unwrap();
        qp.destroy().unwrap();
        srq.destroy().unwrap();
        cq.destroy().unwrap();
        let _buf = mr.destroy().unwrap();
        pd.destroy().unwrap();
    }
    COUNTING.with(|c| c.set(false));
    ALLOCS.load(Ordering::Relaxed)
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_control_path_allocates_nothing() {
    let list = devices().expect("ibv_get_device_list");
    let ctx = Context::open(list.by_name(&rxe_name()).unwrap()).unwrap();
    let buf = vec![0u8; 8192];
    let sgid = gid_index() as u8;
    // The counter works: a Vec made while counting is seen.
    COUNTING.with(|c| c.set(true));
    ALLOCS.store(0, Ordering::Relaxed);
    drop(core::hint::black_box(vec![1u8; 10]));
    COUNTING.with(|c| c.set(false));
    assert_eq!(ALLOCS.load(Ordering::Relaxed), 1, "the counting allocator counts");
    let n = control_path(&ctx, buf, sgid);
    assert_eq!(n, 0, "allocations in open -> PD -> MR -> CQ -> SRQ -> QP(RTS) -> destroy");
}

/// Polls until `n` completions arrived into `out` (no allocation: a
/// fixed array); returns how many were successful.
fn drain(cq: &Cq<'_>, n: usize) -> usize {
    let mut wc = [Wc::ZERO; 8];
    let (mut got, mut ok) = (0, 0);
    let mut idle = 0u32;
    while got < n {
        let k = cq.poll(&mut wc[..(n - got).min(8)]).unwrap();
        ok += wc[..k].iter().filter(|w| w.is_success()).count();
        got += k;
        if k == 0 {
            idle += 1;
            assert!(idle < 3_000_000, "completions stopped after {got} of {n}");
            core::hint::spin_loop();
            if idle.is_multiple_of(1024) {
                std::thread::yield_now();
            }
        } else {
            idle = 0;
        }
    }
    ok
}

/// 1000 rounds of receive lists, SRQ receives, send lists (SGE, inline,
/// RDMA WRITE) and polls allocate nothing, on rxe0 and on siw0 (whose
/// pairs the connection manager connects before counting starts).
fn data_path_allocates_nothing(dev: &str) {
    use super::rig::{init_attr, open_dev, rc_pair_on, ALL_ACCESS, CAP};
    use verbs::wr::{RecvWr, SendFlags, SendWr, Sge};
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 256, None, 0).unwrap(), Cq::create(&ctx, 256, None, 0).unwrap());
    let srq = Srq::create(&pd, SrqInitAttr { max_wr: 64, max_sge: 1, srq_limit: 0 }).unwrap();
    let (mut a, mut b, _ab) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let (mut c, _d, _cd) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, Some(&srq), CAP));
    let abuf = vec![0u8; 4096];
    let bbuf = vec![0u8; 4096];
    let amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    const ROUNDS: usize = 1000;

    ALLOCS.store(0, Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let mut ok = 0;
    for round in 0..ROUNDS {
        let rs = [Sge::from_mr(&bmr, (round % 8) * 256, 256)];
        let recvs = [RecvWr::new(round as u64, &rs); 3];
        b.post_recv(&recvs[..3]).unwrap();
        srq.post_recv(&recvs[..1]).unwrap();
        let ss = [Sge::from_mr(&amr, 0, 64)];
        let w = SendWr::send(round as u64, &ss);
        // A list of four: SGE, inline, RDMA WRITE; only the last signaled.
        let sends = [
            w,
            SendWr::send(1, &[]).inline(b"inline"),
            w,
            SendWr::rdma_write(2, &ss, bmr.addr() + 2048, bmr.rkey()).flags(SendFlags::SIGNALED),
        ];
        a.post_send(&sends).unwrap();
        b.post_recv(&recvs[..1]).unwrap();
        a.post_send(&[SendWr::send(3, &[]).inline(b"x").flags(SendFlags::SIGNALED)]).unwrap();
        c.post_send(&[SendWr::send(4, &[]).inline(b"srq").flags(SendFlags::SIGNALED)]).unwrap();
        ok += drain(&scq, 3);
        ok += drain(&rcq, 5);
    }
    COUNTING.with(|c| c.set(false));
    let n = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(ok, ROUNDS * 8, "every operation succeeded");
    assert_eq!(n, 0, "{dev}: allocations in {ROUNDS} rounds of post_recv/post_srq_recv/post_send lists/poll_cq");
}

twins!(data_path_allocates_nothing: rxe_data_path_allocates_nothing, siw_data_path_allocates_nothing);
