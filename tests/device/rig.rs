//! Shared set-up for the data-path tests: RC/UC/UD QPs on rxe0 connected
//! to each other on the one device (rxe loops packets for its own address
//! back through its receive path), RC pairs on either device
//! ([`rc_pair_on`]: siw0's through the connection manager), and waiting
//! for completions.

use std::time::Instant;

use super::cm_rig::{channels, cm_rc_pair, ip_of, open};
use super::common::{gid_index, rxe_name, siw_name};
use verbs::cm::CmId;
use verbs::qp::{
    AhAttr, ConnInitAttr, GlobalRoute, Mtu, QpAccess, QpCap, QpInitAttr, RcQp, RcRtrAttr,
    RcRtsAttr, Reset, Rts, SqPsnAttr, UcQp, UcRtrAttr, UdInitAttr, UdQp, UdRtrAttr,
};
use verbs::{discovery::devices, AccessFlags, Context, Cq, Pd, Srq, Wc};

/// Everything the tests may do to each other's memory.
pub(crate) const ALL_ACCESS: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC);

/// Opens the RoCE test device.
pub(crate) fn open_rxe() -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(&rxe_name()).expect("rxe device")).expect("ibv_open_device")
}

/// Queue sizes used unless a test needs others.
pub(crate) const CAP: QpCap =
    QpCap { max_send_wr: 32, max_recv_wr: 32, max_send_sge: 2, max_recv_sge: 2, max_inline_data: 64 };

/// QP init attributes with separate send and receive CQs.
pub(crate) fn init_attr<'a>(scq: &'a Cq<'a>, rcq: &'a Cq<'a>, srq: Option<&'a Srq<'a>>, cap: QpCap) -> QpInitAttr<'a> {
    QpInitAttr { send_cq: scq, recv_cq: rcq, srq, cap, sq_sig_all: false }
}

/// The address of this device's RoCE v2 GID (both ends of every pair).
pub(crate) fn self_av(ctx: &Context) -> AhAttr {
    let dgid = ctx.query_gid(1, gid_index()).expect("ibv_query_gid");
    let grh = GlobalRoute { dgid, flow_label: 0, sgid_index: gid_index() as u8, hop_limit: 64, traffic_class: 0 };
    AhAttr { grh: Some(grh), port_num: 1, ..Default::default() }
}

const CONN_INIT: ConnInitAttr = ConnInitAttr {
    pkey_index: 0,
    port_num: 1,
    access: QpAccess::REMOTE_WRITE.union(QpAccess::REMOTE_READ).union(QpAccess::REMOTE_ATOMIC),
};

/// The RC connection settings a test may vary ([`rc_pair_with`],
/// [`rc_connect`]); [`RcSettings::DEFAULT`] is what [`rc_pair`] uses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RcSettings {
    /// What the remote side may do (INIT's `qp_access_flags`).
    pub access: QpAccess,
    /// Minimum RNR NAK timer code (RTR).
    pub min_rnr_timer: u8,
    /// Local ACK timeout exponent (RTS; 0 = infinite).
    pub timeout: u8,
    /// Retries on timeout (RTS).
    pub retry_cnt: u8,
    /// Retries on RNR NAK (RTS; 7 = infinite).
    pub rnr_retry: u8,
}

impl RcSettings {
    /// Every remote access, generous retries.
    pub(crate) const DEFAULT: RcSettings =
        RcSettings { access: CONN_INIT.access, min_rnr_timer: 1, timeout: 14, retry_cnt: 7, rnr_retry: 7 };
}

/// Brings an RC QP in RESET up to RTS, connected to `dest` on this device.
pub(crate) fn rc_connect<'a>(qp: RcQp<'a, Reset>, dest: u32, s: RcSettings) -> RcQp<'a, Rts> {
    let ctx = qp.pd().context();
    let rtr = RcRtrAttr {
        path_mtu: Mtu::Mtu1024,
        dest_qp_num: dest,
        rq_psn: 0,
        max_dest_rd_atomic: 4,
        min_rnr_timer: s.min_rnr_timer,
        ah_attr: self_av(ctx),
    };
    let rts = RcRtsAttr { sq_psn: 0, timeout: s.timeout, retry_cnt: s.retry_cnt, rnr_retry: s.rnr_retry, max_rd_atomic: 4 };
    qp.into_init(ConnInitAttr { access: s.access, ..CONN_INIT })
        .expect("RC INIT")
        .into_rtr(rtr)
        .expect("RC RTR")
        .into_rts(rts)
        .expect("RC RTS")
}

/// Two RC QPs in RTS connected to each other, each side with its own
/// settings (`a` with `sa`, `b` with `sb`).
pub(crate) fn rc_pair_with<'a>(
    pd: &'a Pd<'a>,
    a_attr: QpInitAttr<'a>,
    b_attr: QpInitAttr<'a>,
    sa: RcSettings,
    sb: RcSettings,
) -> (RcQp<'a, Rts>, RcQp<'a, Rts>) {
    let a = RcQp::create(pd, a_attr).expect("create QP a");
    let b = RcQp::create(pd, b_attr).expect("create QP b");
    let (an, bn) = (a.qp_num(), b.qp_num());
    (rc_connect(a, bn, sa), rc_connect(b, an, sb))
}

/// Two RC QPs in RTS connected to each other.
pub(crate) fn rc_pair<'a>(
    pd: &'a Pd<'a>,
    a_attr: QpInitAttr<'a>,
    b_attr: QpInitAttr<'a>,
) -> (RcQp<'a, Rts>, RcQp<'a, Rts>) {
    rc_pair_with(pd, a_attr, b_attr, RcSettings::DEFAULT, RcSettings::DEFAULT)
}

/// The devices a test written with [`rc_pair_on`] runs on.
pub(crate) fn rc_devices() -> [String; 2] {
    [rxe_name(), siw_name()]
}

/// Opens the device named `dev`.
pub(crate) fn open_dev(dev: &str) -> Context {
    open(dev)
}

/// Whether `ctx` is the iWARP test device (siw0): no immediate data, no
/// atomics, no memory windows, no UC/UD, connections only through the
/// connection manager.
pub(crate) fn is_siw(ctx: &Context) -> bool {
    ctx.name() == siw_name()
}

/// What keeps an [`rc_pair_on`] connection up: on siw0 the connection
/// manager ids (client, server, listener), whose channels live for the
/// process; on rxe0 nothing. Drop it after the test's last operation.
pub(crate) struct Conn {
    #[allow(dead_code)]
    ids: Option<[CmId<'static>; 3]>,
}

/// Two RC QPs in RTS connected to each other on `pd`'s device: on rxe0 by
/// the transitions of [`rc_pair`], on siw0 through the connection manager
/// (iWARP QPs reach RTS no other way), `a` being the client.
pub(crate) fn rc_pair_on<'a>(
    pd: &'a Pd<'a>,
    a_attr: QpInitAttr<'a>,
    b_attr: QpInitAttr<'a>,
) -> (RcQp<'a, Rts>, RcQp<'a, Rts>, Conn) {
    let ctx = pd.context();
    if !is_siw(ctx) {
        let (a, b) = rc_pair(pd, a_attr, b_attr);
        return (a, b, Conn { ids: None });
    }
    // The channels must outlive the ids, which the caller keeps for as
    // long as it likes: two file descriptors per pair for the process.
    let ch: &'static [verbs::cm::EventChannel; 2] = Box::leak(Box::new(channels()));
    let p = cm_rc_pair(ch, &ip_of(ctx.name()), pd, a_attr, b_attr);
    (p.client, p.server, Conn { ids: Some([p.client_id, p.server_id, p.listener]) })
}

/// Two UC QPs in RTS connected to each other.
pub(crate) fn uc_pair<'a>(
    pd: &'a Pd<'a>,
    a_attr: QpInitAttr<'a>,
    b_attr: QpInitAttr<'a>,
) -> (UcQp<'a, Rts>, UcQp<'a, Rts>) {
    let ctx = pd.context();
    let init = ConnInitAttr { access: QpAccess::REMOTE_WRITE, ..CONN_INIT };
    let a = UcQp::create(pd, a_attr).expect("create UC a").into_init(init).expect("a INIT");
    let b = UcQp::create(pd, b_attr).expect("create UC b").into_init(init).expect("b INIT");
    let rtr = |dest| UcRtrAttr { path_mtu: Mtu::Mtu1024, dest_qp_num: dest, rq_psn: 0, ah_attr: self_av(ctx) };
    let (an, bn) = (a.qp_num(), b.qp_num());
    let a = a.into_rtr(rtr(bn)).expect("a RTR").into_rts(SqPsnAttr { sq_psn: 0 }).expect("a RTS");
    let b = b.into_rtr(rtr(an)).expect("b RTR").into_rts(SqPsnAttr { sq_psn: 0 }).expect("b RTS");
    (a, b)
}

/// The Q_Key the UD tests use.
pub(crate) const QKEY: u32 = 0x1111_2222;

/// A UD QP in RTS.
pub(crate) fn ud_qp<'a>(pd: &'a Pd<'a>, attr: QpInitAttr<'a>) -> UdQp<'a, Rts> {
    UdQp::create(pd, attr)
        .expect("create UD QP")
        .into_init(UdInitAttr { pkey_index: 0, port_num: 1, qkey: QKEY })
        .expect("UD INIT")
        .into_rtr(UdRtrAttr)
        .expect("UD RTR")
        .into_rts(SqPsnAttr { sq_psn: 0 })
        .expect("UD RTS")
}

/// Polls `cq` until `n` completions arrived (the VM is slow: up to 30 s),
/// in batches of up to 16.
pub(crate) fn wait(cq: &Cq<'_>, n: usize) -> Vec<Wc> {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut batch = [Wc::ZERO; 16];
    while got.len() < n {
        let want = (n - got.len()).min(batch.len());
        let k = cq.poll(&mut batch[..want]).expect("ibv_poll_cq");
        got.extend_from_slice(&batch[..k]);
        if k == 0 {
            assert!(
                start.elapsed().as_secs() < 30,
                "only {} of {n} completions after 30 s: {got:?}",
                got.len()
            );
            std::thread::sleep(core::time::Duration::from_millis(1));
        }
    }
    got
}

/// Asserts that `cq` stays empty for a while (nothing more arrives).
pub(crate) fn assert_quiet(cq: &Cq<'_>) {
    std::thread::sleep(core::time::Duration::from_millis(300));
    let mut wc = [Wc::ZERO; 4];
    let n = cq.poll(&mut wc).expect("ibv_poll_cq");
    assert_eq!(n, 0, "unexpected completions: {:?}", &wc[..n]);
}
