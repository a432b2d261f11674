//! Arguments refused before the kernel sees them, each with an error that
//! names the field (issue 12, items 8 and 10): transition attributes out
//! of their range, addresses, P_Key and GID indices, unknown flag bits;
//! and errors that compose with `?` (issue 15).

use super::common::{empty_gid_index, gid_index};
use super::rig::{assert_quiet, init_attr, is_siw, open_dev, open_rxe, rc_pair_on, self_av, wait, ALL_ACCESS, CAP};
use verbs::qp::{
    AhAttr, ConnInitAttr, GlobalRoute, Init, Mtu, QpAccess, QpStateKind, RcQp, RcRtrAttr, RcRtsAttr, Reset,
    UdInitAttr, UdQp,
};
use verbs::wr::{RecvWr, SendFlags, SendWr, Sge};
use verbs::xrc::{Xrcd, XrcdFlags};
use verbs::{Ah, Cq, Error, ErrorKind, Mr, Pd};

const INIT: ConnInitAttr = ConnInitAttr { pkey_index: 0, port_num: 1, access: QpAccess::REMOTE_WRITE };

/// Asserts that `e` is an `InvalidArgument` of `verb` whose detail starts
/// with `field`, refused before the kernel (no errno) unless `kernel`.
#[track_caller]
fn names(e: &Error, verb: &str, field: &str, kernel: bool) {
    assert_eq!((e.verb(), e.kind()), (verb, ErrorKind::InvalidArgument), "{e}");
    let detail = e.detail().unwrap_or_else(|| panic!("no detail: {e}"));
    assert!(detail.contains(field), "detail of {e} does not name {field}");
    assert_eq!(e.errno().is_some(), kernel, "{e}");
    assert!(e.to_string().contains(detail), "{e}");
}

fn rtr(ctx: &verbs::Context, dest_qp_num: u32) -> RcRtrAttr {
    RcRtrAttr {
        path_mtu: Mtu::Mtu1024,
        dest_qp_num,
        rq_psn: 0x1234,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ah_attr: self_av(ctx),
    }
}

const RTS: RcRtsAttr = RcRtsAttr { sq_psn: 0x4321, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_transition_fields_are_checked_and_named() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let port = ctx.query_port(1).unwrap();
    let mut qp: RcQp<'_, Reset> = RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).unwrap();
    const M: &str = "ibv_modify_qp";

    // RESET -> INIT: port, P_Key index, access bits.
    for (bad, field, kernel) in [
        (ConnInitAttr { port_num: 0, ..INIT }, "port_num", false),
        (ConnInitAttr { port_num: 9, ..INIT }, "port_num", true),
        (ConnInitAttr { pkey_index: port.pkey_tbl_len, ..INIT }, "pkey_index", false),
        (ConnInitAttr { access: QpAccess::from_bits_retain(1 << 15), ..INIT }, "qp_access_flags", false),
    ] {
        let e = qp.into_init(bad).unwrap_err();
        names(&e.error, M, field, kernel);
        qp = e.qp;
        assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Reset));
    }
    let mut qp: RcQp<'_, Init> = qp.into_init(INIT).expect("INIT");

    // INIT -> RTR: widths, then the address against the port.
    let me = qp.qp_num();
    let good = rtr(&ctx, me);
    let grh = good.ah_attr.grh.unwrap();
    let av = |ah: AhAttr| RcRtrAttr { ah_attr: ah, ..good };
    let mut cases = vec![
        (RcRtrAttr { rq_psn: 1 << 24, ..good }, "rq_psn", false),
        (RcRtrAttr { dest_qp_num: 1 << 24, ..good }, "dest_qp_num", false),
        (RcRtrAttr { min_rnr_timer: 32, ..good }, "min_rnr_timer", false),
        (av(AhAttr { sl: 16, ..good.ah_attr }), "sl", false),
        (av(AhAttr { static_rate: 1, ..good.ah_attr }), "static_rate", false),
        (av(AhAttr { grh: Some(GlobalRoute { flow_label: 1 << 20, ..grh }), ..good.ah_attr }), "flow_label", false),
        (av(AhAttr { port_num: 0, ..good.ah_attr }), "port_num", false),
        (av(AhAttr { grh: None, ..good.ah_attr }), "global route", false),
        // An index inside the table whose entry is empty: the kernel's
        // ENODATA, explained.
        (av(AhAttr { grh: Some(GlobalRoute { sgid_index: empty_gid_index(&ctx), ..grh }), ..good.ah_attr }), "sgid_index", true),
    ];
    if port.gid_tbl_len <= 255 {
        let past = port.gid_tbl_len as u8;
        cases.push((av(AhAttr { grh: Some(GlobalRoute { sgid_index: past, ..grh }), ..good.ah_attr }), "sgid_index", false));
    }
    for (bad, field, kernel) in cases {
        let e = qp.into_rtr(bad).unwrap_err();
        if field == "sgid_index" && kernel {
            // Which errno the kernel gives for an empty entry varies by
            // version; it must not be a bare one.
            assert_eq!(e.error.kind(), ErrorKind::InvalidArgument, "{}", e.error);
            assert!(e.error.errno().is_some(), "{}", e.error);
            assert!(e.error.detail().is_some(), "a bare kernel error: {}", e.error);
        } else {
            names(&e.error, M, field, kernel);
        }
        qp = e.qp;
        let a = qp.query().unwrap();
        assert_eq!((a.qp_state, a.dest_qp_num), (Some(QpStateKind::Init), 0), "nothing applied");
    }
    let mut qp = qp.into_rtr(good).expect("RTR");

    // RTR -> RTS: widths.
    for (bad, field) in [
        (RcRtsAttr { sq_psn: 1 << 24, ..RTS }, "sq_psn"),
        (RcRtsAttr { timeout: 32, ..RTS }, "timeout"),
        (RcRtsAttr { retry_cnt: 8, ..RTS }, "retry_cnt"),
        (RcRtsAttr { rnr_retry: 8, ..RTS }, "rnr_retry"),
    ] {
        let e = qp.into_rts(bad).unwrap_err();
        names(&e.error, M, field, false);
        qp = e.qp;
        assert_eq!(qp.query().unwrap().qp_state, Some(QpStateKind::Rtr));
    }
    let qp = qp.into_rts(RTS).expect("RTS");
    let a = qp.query().unwrap();
    assert_eq!((a.sq_psn, a.rq_psn, a.retry_cnt, a.rnr_retry), (0x4321, 0x1234, 7, 7));

    // UD RESET -> INIT checks the same port and P_Key index.
    let ud = UdQp::create(&pd, init_attr(&cq, &cq, None, CAP)).unwrap();
    let e = ud.into_init(UdInitAttr { pkey_index: port.pkey_tbl_len, port_num: 1, qkey: 1 }).unwrap_err();
    names(&e.error, M, "pkey_index", false);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_ah_create_checks_the_address() {
    let ctx = open_rxe();
    let pd = Pd::alloc(&ctx).unwrap();
    let good = self_av(&ctx);
    let grh = good.grh.unwrap();
    const V: &str = "ibv_create_ah";
    for (bad, field, kernel) in [
        (AhAttr { sl: 16, ..good }, "sl", false),
        (AhAttr { static_rate: 30, ..good }, "static_rate", false),
        (AhAttr { grh: Some(GlobalRoute { flow_label: 1 << 20, ..grh }), ..good }, "flow_label", false),
        (AhAttr { port_num: 2, ..good }, "port_num", true),
        (AhAttr { grh: None, ..good }, "global route", false),
    ] {
        let e = Ah::create(&pd, &bad).unwrap_err();
        names(&e, V, field, kernel);
    }
    let e = Ah::create(&pd, &AhAttr { grh: Some(GlobalRoute { sgid_index: 250, ..grh }), ..good }).unwrap_err();
    assert_eq!((e.verb(), e.kind()), (V, ErrorKind::InvalidArgument), "{e}");
    assert!(e.detail().is_some_and(|d| d.contains("sgid_index")), "a bare kernel error: {e}");
    let ah = Ah::create(&pd, &good).expect("the good address");
    drop(ah);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_pkey_and_gid_indices_are_named() {
    let ctx = open_rxe();
    let port = ctx.query_port(1).unwrap();
    ctx.query_pkey(1, 0).expect("P_Key 0");
    // As C's: ENOENT (no such sysfs file), but saying which.
    let e = ctx.query_pkey(1, port.pkey_tbl_len).unwrap_err();
    names(&e, "ibv_query_pkey", "index is past", true);
    assert_eq!(e.raw_os_error(), libc::ENOENT, "{e}");
    let e = ctx.query_pkey(9, 0).unwrap_err();
    names(&e, "ibv_query_pkey", "port_num", true);
    assert_eq!(e.raw_os_error(), libc::ENOENT, "{e}");
    // An empty GID entry and one past the table.
    for index in [250, port.gid_tbl_len, port.gid_tbl_len + 5] {
        let e = ctx.query_gid_ex(1, index).unwrap_err();
        assert_eq!((e.verb(), e.kind()), ("ibv_query_gid_ex", ErrorKind::InvalidArgument), "{index}: {e}");
        if index >= port.gid_tbl_len {
            // rdma_get_gid_attr: an index past the table is EINVAL
            assert_eq!(e.errno(), Some(verbs::error::Errno::INVAL), "{index}: {e}");
        } else {
            // an empty slot is ENODATA, said in words
            assert_eq!(e.errno(), Some(verbs::error::Errno::NODATA), "{index}: {e}");
            assert!(e.detail().is_some_and(|d| d.contains("empty entry")), "bare ENODATA: {e}");
        }
    }
    ctx.query_gid_ex(1, gid_index()).expect("the test GID");
}

fn unknown_send_flags_are_refused_and_nothing_is_sent(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let abuf = vec![0x5au8; 256];
    let bbuf = vec![0u8; 256];
    let amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let rs = [Sge::from_mr(&bmr, 0, 256)];
    b.post_recv(&[RecvWr::new(0xb0, &rs), RecvWr::new(0xb1, &rs)]).unwrap();
    let ss = [Sge::from_mr(&amr, 0, 64)];
    let sig = SendFlags::SIGNALED;
    // Bit 3 is IBV_SEND_INLINE: on an SGE request rxe would send the WQE's
    // own bytes. Bit 4 and the top bit are unknown.
    for bit in [3, 4, 31] {
        let odd = SendFlags::from_bits_retain(1 << bit) | sig;
        let e = a.post_send(&[SendWr::send(1, &ss).flags(odd)]).unwrap_err();
        assert_eq!(e.index, 0);
        names(&e.error, "ibv_post_send", "send_flags", false);
        let e = a.post_send(&[SendWr::send(2, &[]).inline(b"inline").flags(odd)]).unwrap_err();
        names(&e.error, "ibv_post_send", "send_flags", false);
        // In a list: nothing of it is posted.
        let e = a.post_send(&[SendWr::send(3, &ss).flags(sig), SendWr::send(4, &ss).flags(odd)]).unwrap_err();
        assert_eq!(e.index, 1);
    }
    assert_quiet(&scq);
    assert_quiet(&rcq);
    // The queue is as it was: the next good request is the only one sent.
    a.post_send(&[SendWr::send(5, &ss).flags(sig)]).unwrap();
    let c = wait(&scq, 1);
    assert_eq!((c[0].wr_id(), c[0].is_success()), (5, true), "{c:?}");
    let r = wait(&rcq, 1);
    assert_eq!((r[0].wr_id(), r[0].byte_len()), (0xb0, 64), "{r:?}");
    assert_quiet(&scq);
    assert_quiet(&rcq);
}

fn unknown_access_and_xrcd_bits_are_refused(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let buf = vec![0u8; 64];
    let e = Mr::reg(&pd, buf, verbs::AccessFlags::from_bits_retain(1 << 12)).unwrap_err();
    names(&e.error, "ibv_reg_mr", "access", false);
    assert!(e.buf.is_some(), "a refused registration gives the buffer back");
    // rxe has no XRC (Unsupported from the kernel): the unknown bit is
    // refused before that.
    let e = Xrcd::open(&ctx, None, XrcdFlags::from_bits_retain(XrcdFlags::CREATE.bits() | 1 << 30)).unwrap_err();
    names(&e, "ibv_open_xrcd", "oflags", false);
}

/// A caller's bring-up that uses `?` on transitions.
fn bring_up<'a>(qp: RcQp<'a>, init: ConnInitAttr) -> verbs::Result<RcQp<'a, Init>> {
    Ok(qp.into_init(init)?)
}

fn transition_errors_compose(dev: &str) {
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let qp = RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).unwrap();
    let e = bring_up(qp, ConnInitAttr { port_num: 9, ..INIT }).unwrap_err();
    let text = e.to_string();
    assert_eq!((e.verb(), e.kind()), ("ibv_modify_qp", ErrorKind::InvalidArgument), "{text}");
    // Each thing said once: no "invalid argument: Invalid argument".
    assert!(!text.contains("Invalid argument"), "{text}");
    assert!(text.ends_with("(os error 22)"), "{text}");
    // An iWARP port has no P_Key table (its transitions ignore the index):
    // port 0 is the bad field there.
    let (bad, field) = if is_siw(&ctx) {
        (ConnInitAttr { port_num: 0, ..INIT }, "port_num")
    } else {
        (ConnInitAttr { pkey_index: u16::MAX, ..INIT }, "pkey_index")
    };
    let boxed = || -> Result<(), Box<dyn core::error::Error>> {
        let qp = RcQp::create(&pd, init_attr(&cq, &cq, None, CAP))?;
        let _qp = qp.into_init(bad).map_err(Error::from)?;
        Ok(())
    };
    let e = boxed().unwrap_err();
    assert!(e.to_string().contains(field), "{e}");
    let qp = RcQp::create(&pd, init_attr(&cq, &cq, None, CAP)).unwrap();
    assert!(bring_up(qp, INIT).is_ok());
}

fn poll_with_refuses_reentry_and_survives_a_panic(dev: &str) {
    use core::panic::AssertUnwindSafe;
    use std::panic::catch_unwind;
    let ctx = open_dev(dev);
    let pd = Pd::alloc(&ctx).unwrap();
    let (scq, rcq) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
    let (mut a, mut b, _conn) = rc_pair_on(&pd, init_attr(&scq, &scq, None, CAP), init_attr(&scq, &rcq, None, CAP));
    let abuf = vec![0u8; 64];
    let bbuf = vec![0u8; 256];
    let amr = Mr::reg(&pd, abuf, ALL_ACCESS).unwrap();
    let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
    let rs = [Sge::from_mr(&bmr, 0, 64)];
    b.post_recv(&[RecvWr::new(0, &rs), RecvWr::new(0, &rs), RecvWr::new(0, &rs)]).unwrap();
    let ss = [Sge::from_mr(&amr, 0, 8)];
    let sig = SendFlags::SIGNALED;
    a.post_send(&[SendWr::send(1, &ss).flags(sig), SendWr::send(2, &ss).flags(sig), SendWr::send(3, &ss).flags(sig)])
        .unwrap();

    // The closure polls the same CQ (here and from another thread), then
    // panics: both polls are Busy errors, the panic leaves the CQ usable.
    let (mut here, mut there) = (None, None);
    let start = std::time::Instant::now();
    let outcome = loop {
        let r = catch_unwind(AssertUnwindSafe(|| {
            scq.poll_with(8, |wc| {
                here = Some(scq.poll(&mut [verbs::Wc::ZERO; 1]));
                there = Some(std::thread::scope(|s| s.spawn(|| scq.poll(&mut [verbs::Wc::ZERO; 1]).map(|_| ())).join().unwrap()));
                panic!("caller code panics at wr_id {}", wc.wr_id());
            })
        }));
        match r {
            Ok(Ok(0)) => {
                assert!(start.elapsed().as_secs() < 30, "no completion after 30 s");
                std::thread::sleep(core::time::Duration::from_millis(1));
            }
            other => break other,
        }
    };
    assert!(outcome.is_err(), "the closure panicked: {outcome:?}");
    for e in [here.unwrap().map(|_| ()).unwrap_err(), there.unwrap().unwrap_err()] {
        assert_eq!((e.verb(), e.kind()), ("ibv_poll_cq", ErrorKind::Busy), "{e}");
        assert!(e.detail().is_some_and(|d| d.contains("poll_with")), "{e}");
    }
    // The completion handed to the closure was consumed; the rest arrive
    // once each, through both kinds of poll.
    let mut rest = Vec::new();
    while rest.len() < 2 {
        assert!(start.elapsed().as_secs() < 30, "only {rest:?} after 30 s");
        scq.poll_with(1, |wc| rest.push(wc.wr_id())).expect("the CQ is free again");
    }
    assert_eq!(rest, [2, 3]);
    assert_eq!(wait(&rcq, 3).len(), 3);
    assert_quiet(&scq);
}

twins!(unknown_send_flags_are_refused_and_nothing_is_sent: rxe_unknown_send_flags_are_refused_and_nothing_is_sent, siw_unknown_send_flags_are_refused_and_nothing_is_sent);

twins!(unknown_access_and_xrcd_bits_are_refused: rxe_unknown_access_and_xrcd_bits_are_refused, siw_unknown_access_and_xrcd_bits_are_refused);

twins!(transition_errors_compose: rxe_transition_errors_compose, siw_transition_errors_compose);

twins!(poll_with_refuses_reentry_and_survives_a_panic: rxe_poll_with_refuses_reentry_and_survives_a_panic, siw_poll_with_refuses_reentry_and_survives_a_panic);
