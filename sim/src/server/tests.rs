//! The command path end to end on this test process's own memory: the
//! daemon reads each command and writes each response with
//! process_vm_readv/writev on our pid, as it does for an application.
//!
//! Buffers are `Vec`s whose addresses travel as integers (exposed) and are
//! written inside `process_vm_writev`, an opaque foreign call, so the
//! compiler must assume they changed (as for the kernel's writes in
//! `src/cmd/channel.rs`); nothing here needs `unsafe`.

use super::cmd::{u32_at, Out};
use super::{Config, Conn, Daemon};
use crate::fixture::Identity;
use crate::proto::{Call, Reply};

struct Client {
    d: std::sync::Arc<Daemon>,
    conn: Conn,
}

/// A page-aligned, zeroed buffer inside a larger allocation.
struct Buf {
    mem: Vec<u8>,
    off: usize,
}

impl Buf {
    fn new(len: usize) -> Self {
        let mem = vec![0u8; len + 4096];
        let off = (4096 - (mem.as_ptr() as usize % 4096)) % 4096;
        Buf { mem, off }
    }
    fn addr(&self) -> u64 {
        self.mem.as_ptr() as u64 + self.off as u64
    }
    fn bytes(&self) -> &[u8] {
        std::hint::black_box(&self.mem[self.off..])
    }
}

impl Client {
    fn new(d: &std::sync::Arc<Daemon>) -> Self {
        let mut st = d.lock();
        let ctx = super::State::alloc(&mut st.next_ctx, 1);
        st.ctxx.insert(ctx, Default::default());
        st.uars.insert(ctx, std::sync::Arc::new(super::uar::Uar::new().unwrap()));
        drop(st);
        Client { d: d.clone(), conn: Conn { ctx, pid: std::process::id() as i32 } }
    }

    /// write(2) of a plain command: header + core (response pointer first
    /// when `resp` is given) + udata; returns the reply.
    fn write(&mut self, cmd: u32, resp: Option<&Buf>, out_len: usize, core: &[u8], udata: &[u8]) -> Reply {
        let mut c = Vec::new();
        let in_len = 8 + resp.map_or(0, |_| 8) + core.len() + udata.len();
        c.extend_from_slice(&cmd.to_le_bytes());
        c.extend_from_slice(&((in_len / 4) as u16).to_le_bytes());
        c.extend_from_slice(&((out_len / 4) as u16).to_le_bytes());
        if let Some(r) = resp {
            c.extend_from_slice(&r.addr().to_le_bytes());
        }
        c.extend_from_slice(core);
        c.extend_from_slice(udata);
        let call = Call::Write { buf: c.as_ptr() as u64, len: c.len() as u64 };
        let (reply, _fds) = self.d.call(&mut self.conn, call);
        std::hint::black_box(&c);
        reply
    }
}

fn daemon() -> std::sync::Arc<Daemon> {
    let cfg = Config { socket: "/nonexistent".into(), trace: None, identity: Identity::default(), sysfs: None };
    Daemon::new(&cfg).unwrap()
}

const EINVAL: i64 = -(libc::EINVAL as i64);

#[test]
fn context_pd_cq_qp_and_the_state_machine_answer_like_mlx5_ib() {
    let d = daemon();
    let mut a = Client::new(&d);
    // Nothing before GET_CONTEXT.
    let r = Buf::new(64);
    assert_eq!(a.write(3, Some(&r), 8, &[], &[]).ret, EINVAL);
    // GET_CONTEXT: mlx5_ib_alloc_ucontext_req_v2 as libmlx5 sends it.
    let mut req = Out::new(32);
    req.u32(0, 16).u32(4, 4).u32(8, 1).u8(16, 1).u64(24, 3);
    let resp = Buf::new(80);
    let reply = a.write(0, Some(&resp), 80, &[], &req.0);
    assert_eq!(reply.ret, 48, "write returns the command length");
    assert_eq!(reply.nfds, 1, "the async event descriptor");
    assert_eq!(reply.patch[0], resp.addr(), "its number goes to resp.async_fd");
    let m = &resp.bytes()[8..];
    assert_eq!(u32_at(resp.bytes(), 4), 4, "num_comp_vectors");
    assert_eq!((u32_at(m, 4), u32_at(m, 8), u32_at(m, 12)), (512, 16, 64), "bf_reg_size, tot_bfregs, cache line");
    assert_eq!((m[44], m[45]), (1, 2), "cqe_version 1, cmds_supp_uhw CREATE_AH");
    // A second GET_CONTEXT on the same descriptor.
    assert_eq!(a.write(0, Some(&resp), 80, &[], &req.0).ret, EINVAL);

    // ALLOC_PD: handle and mlx5 pdn.
    let pd = Buf::new(8);
    assert!(a.write(3, Some(&pd), 8, &[], &[]).ret > 0);
    let pdn = u32_at(pd.bytes(), 0);
    assert_eq!(u32_at(pd.bytes(), 4), pdn);

    // CREATE_CQ of 16 entries: 32 made, cqe 31; the arm word preset.
    let (ring, db) = (Buf::new(32 * 64), Buf::new(64));
    let mut core = Out::new(24);
    core.u64(0, 0xc0ffee).u32(8, 16).u32(12, 0).u32(16, u32::MAX);
    let mut ud = Out::new(32);
    ud.u64(0, ring.addr()).u64(8, db.addr()).u32(16, 64);
    let cq = Buf::new(16);
    assert!(a.write(18, Some(&cq), 16, &core.0, &ud.0).ret > 0);
    let (cqh, cqe) = (u32_at(cq.bytes(), 0), u32_at(cq.bytes(), 4));
    assert_eq!(cqe, 31);
    assert_eq!(u32::from_be_bytes(db.bytes()[4..8].try_into().unwrap()), super::ARM_UNSET);
    // A ring that is not page-aligned is refused.
    ud.u64(0, ring.addr() + 64);
    assert_eq!(a.write(18, Some(&cq), 16, &core.0, &ud.0).ret, EINVAL);

    // CREATE_QP (RC) on them: QPN, BlueFlame register 24 (compact 12, the
    // first of the 4 low-latency ones of 16: the QP's alone).
    let (qbuf, qdb) = (Buf::new(4096), Buf::new(64));
    let mut core = Out::new(48);
    core.u64(0, 0x9a).u32(8, pdn).u32(12, cqh).u32(16, cqh).u32(24, 1).u32(28, 1).u32(32, 1).u32(36, 1).u8(45, 2);
    let mut ud = Out::new(56);
    ud.u64(0, qbuf.addr()).u64(8, qdb.addr()).u32(16, 4).u32(20, 4).u32(24, 4).u32(28, 2);
    let qp = Buf::new(72);
    assert!(a.write(24, Some(&qp), 72, &core.0, &ud.0).ret > 0);
    let qpn = u32_at(qp.bytes(), 4);
    assert_eq!(u32_at(qp.bytes(), 32), 24, "bfreg_index");

    // MODIFY_QP: RESET->INIT without the port is EINVAL, with all three it
    // works; INIT->RTS is no transition; ->ERR from anywhere.
    let modify = |c: &mut Client, mask: u32, state: u8| {
        let mut m = Out::new(112);
        m.u32(64, qpn).u32(68, mask).u32(88, 7).u16(92, 0).u8(96, state).u8(104, 1);
        c.write(26, None, 0, &m.0, &[]).ret
    };
    assert_eq!(modify(&mut a, 1 | 0x10 | 0x08, 1), EINVAL, "PORT missing");
    assert!(modify(&mut a, 1 | 0x10 | 0x20 | 0x08, 1) > 0);
    assert_eq!(modify(&mut a, 1, 3), EINVAL, "INIT->RTS");
    assert_eq!(modify(&mut a, 1 | 0x40, 6), EINVAL, "QKEY is not an attribute of ->ERR");
    assert!(modify(&mut a, 1, 6) > 0);
    // QUERY_QP says ERR (state at offset 108 of the response).
    let q = Buf::new(128);
    let mut c = Out::new(8);
    c.u32(0, qpn);
    assert!(a.write(25, Some(&q), 128, &c.0, &[]).ret > 0);
    assert_eq!(q.bytes()[108], 6);

    // The CQ is in use: DESTROY_CQ is EBUSY; another context cannot name
    // this one's objects.
    let out = Buf::new(8);
    let mut c = Out::new(8);
    c.u32(0, cqh);
    assert_eq!(a.write(20, Some(&out), 8, &c.0, &[]).ret, -(libc::EBUSY as i64));
    let mut b = Client::new(&d);
    req.u32(8, 0);
    assert!(b.write(0, Some(&resp), 80, &[], &req.0).ret > 0);
    assert_eq!(b.write(20, Some(&out), 8, &c.0, &[]).ret, EINVAL, "not b's CQ");
    // After DESTROY_QP the CQ goes, reporting no events.
    let mut c2 = Out::new(8);
    c2.u32(0, qpn);
    assert!(a.write(27, Some(&out), 8, &c2.0, &[]).ret > 0);
    assert!(a.write(20, Some(&out), 8, &c.0, &[]).ret > 0);
    assert_eq!((u32_at(out.bytes(), 0), u32_at(out.bytes(), 4)), (0, 0));
    // Closing a context destroys what it owns.
    d.teardown(a.conn.ctx);
    assert!(d.lock().dev.pds.values().all(|p| p.ctx != a.conn.ctx));
}

/// One attribute of an ioctl: (id, len, flags, data).
type IoAttr = (u16, u16, u16, u64);

impl Client {
    /// ioctl(RDMA_VERBS_IOCTL) with a header for (object, method) and
    /// `attrs`; returns the result and the header buffer after the call.
    fn ioctl_raw(&mut self, object: u16, method: u16, attrs: &[IoAttr], driver: u32, reserved1: u64) -> (i64, Buf) {
        let b = Buf::new(24 + 16 * attrs.len());
        let mut h = Out::new(24 + 16 * attrs.len());
        h.u16(0, (24 + 16 * attrs.len()) as u16).u16(2, object).u16(4, method).u16(6, attrs.len() as u16);
        h.u64(8, reserved1).u32(16, driver);
        for (i, &(id, len, flags, data)) in attrs.iter().enumerate() {
            h.u16(24 + 16 * i, id).u16(26 + 16 * i, len).u16(28 + 16 * i, flags).u64(32 + 16 * i, data);
        }
        let _ = crate::mem::HostMem::write(&self.d.mem, self.conn.pid, b.addr(), &h.0);
        let call = Call::Ioctl { request: super::ioctl::RDMA_VERBS_IOCTL, arg: b.addr() };
        let (reply, _) = self.d.call(&mut self.conn, call);
        (reply.ret, b)
    }
    fn ioctl(&mut self, object: u16, method: u16, attrs: &[IoAttr]) -> i64 {
        self.ioctl_raw(object, method, attrs, 1, 0).0
    }
    fn open(&mut self) {
        let mut req = Out::new(32);
        req.u32(0, 16).u32(4, 4).u8(16, 1);
        let resp = Buf::new(80);
        assert!(self.write(0, Some(&resp), 80, &[], &req.0).ret > 0);
    }
}

const M: u16 = 1; // UVERBS_ATTR_F_MANDATORY
const EPROTONOSUPPORT: i64 = -(libc::EPROTONOSUPPORT as i64);
const EOPNOTSUPP: i64 = -(libc::EOPNOTSUPP as i64);

#[test]
fn ioctl_framework_checks_like_ib_uverbs_ioctl() {
    let d = daemon();
    let mut a = Client::new(&d);
    let resp = Buf::new(48);
    let port = |p: u64| [(0, 8, M, p), (1, 48, M, resp.addr())];
    // Before GET_CONTEXT: the method exists, the context does not.
    assert_eq!(a.ioctl(0, 2, &port(1)), EINVAL);
    // The ioctl forms of write commands are absent (libibverbs falls back
    // to write); methods without a write form are not offered.
    assert_eq!(a.ioctl(0, 0, &[(2, 8, M, 0)]), EPROTONOSUPPORT, "INVOKE_WRITE");
    assert_eq!(a.ioctl(3, 0, &[]), EPROTONOSUPPORT, "CQ_CREATE");
    assert_eq!(a.ioctl(14, 0, &[]), EOPNOTSUPP, "DM_ALLOC");
    assert_eq!(a.ioctl(0x1000, 0x1000, &[]), EOPNOTSUPP, "mlx5 DEVX_OTHER");
    let (r, _) = a.ioctl_raw(0, 2, &port(1), 0, 0);
    assert_eq!(r, EINVAL, "driver_id is not mlx5's");
    let (r, _) = a.ioctl_raw(0, 2, &port(1), 1, 1);
    assert_eq!(r, EPROTONOSUPPORT, "reserved1");
    let (r, _) = a.ioctl_raw(14, 0, &[], 1, 1);
    assert_eq!(r, EPROTONOSUPPORT, "reserved1 is checked before the method");
    let (reply, _) = a.d.call(&mut a.conn, Call::Ioctl { request: 0x5401, arg: resp.addr() });
    assert_eq!(reply.ret, -(libc::ENOTTY as i64), "not RDMA_VERBS_IOCTL");
    a.open();
    assert_eq!(a.ioctl(0, 2, &port(1)), 0);
    assert_eq!(a.ioctl(0, 2, &[(0, 8, M, 1), (1, 48, M, resp.addr()), (9, 8, M, 0)]), EPROTONOSUPPORT, "unknown mandatory attribute");
    assert_eq!(a.ioctl(0, 2, &[(0, 8, M, 1), (1, 48, M, resp.addr()), (9, 8, 0, 0)]), 0, "unknown optional attribute");
    assert_eq!(a.ioctl(0, 2, &[(0, 8, M, 1), (0, 8, M, 1), (1, 48, M, resp.addr())]), EINVAL, "duplicate");
    assert_eq!(a.ioctl(0, 2, &[(0, 8, M, 1)]), EINVAL, "RESP missing");
    assert_eq!(a.ioctl(0, 2, &[(0, 4, M, 1), (1, 48, M, resp.addr())]), EINVAL, "a const is 8 bytes");
    assert_eq!(a.ioctl(0, 2, &[(0, 8, M, 1), (1, 40, M, resp.addr())]), EINVAL, "shorter than resp_ex");
    assert_eq!(a.ioctl(0, 2, &port(2)), EINVAL, "no port 2");
    assert_eq!(a.ioctl(0, 2, &port(0x101)), EINVAL, "port_num is a u8");
}

#[test]
fn query_port_and_the_gid_table_by_ioctl_match_the_write_command_and_sysfs() {
    let d = daemon();
    let mut a = Client::new(&d);
    a.open();
    // QUERY_PORT: the write command's 40 bytes, then flags2 0 and
    // active_speed_ex; a longer buffer is zeroed after 48 bytes; the
    // attribute is flagged VALID_OUTPUT.
    let legacy = Buf::new(40);
    let mut c = Out::new(8);
    c.u8(0, 1);
    assert!(a.write(2, Some(&legacy), 40, &c.0, &[]).ret > 0);
    let resp = Buf::new(64);
    crate::mem::HostMem::write(&d.mem, a.conn.pid, resp.addr(), &[0xff; 64]).unwrap();
    let (r, hdr) = a.ioctl_raw(0, 2, &[(0, 8, M, 1), (1, 64, M, resp.addr())], 1, 0);
    assert_eq!(r, 0);
    assert_eq!(&resp.bytes()[..40], &legacy.bytes()[..40]);
    assert_eq!(&resp.bytes()[40..48], &[0, 0, 0, 0, 32, 0, 0, 0]);
    assert!(resp.bytes()[48..64].iter().all(|&x| x == 0));
    assert_eq!(hdr.bytes()[24 + 16 + 4] & 2, 2, "VALID_OUTPUT on RESP");

    // QUERY_GID_TABLE: the four valid GIDs of the fixture, in index order.
    let (ents, num) = (Buf::new(16 * 32), Buf::new(8));
    let table = |a: &mut Client, size: u64, len: u16, flags: Option<u64>| {
        let mut at = vec![(0, 8, M, size), (2, len, M, ents.addr()), (3, 8, M, num.addr())];
        if let Some(f) = flags {
            at.push((1, 4, 0, f));
        }
        a.ioctl(0, 5, &at)
    };
    assert_eq!(table(&mut a, 32, 16 * 32, Some(0)), 0);
    assert_eq!(u32_at(num.bytes(), 0), 6);
    let gids = crate::fixture::gids(&Identity::default());
    for (i, (gid, ty)) in gids.iter().enumerate() {
        let e = &ents.bytes()[32 * i..32 * i + 32];
        assert_eq!(&e[..16], gid);
        assert_eq!((u32_at(e, 16), u32_at(e, 20), u32_at(e, 24)), (i as u32, 1, if *ty == "RoCE v2" { 2 } else { 1 }));
    }
    assert_eq!(table(&mut a, 32, 5 * 32, None), EINVAL, "6 valid entries, room for 5");
    assert_eq!(table(&mut a, 0, 32, None), EINVAL, "entry size 0");
    assert_eq!(table(&mut a, 32, 100, None), EINVAL, "not a whole number of entries");
    assert_eq!(table(&mut a, 32, 0, None), EINVAL, "no room");
    assert_eq!(table(&mut a, 32, 6 * 32, Some(1)), EINVAL, "no flags are defined");
    // An older (shorter) and a newer (longer) entry layout.
    assert_eq!(table(&mut a, 24, 6 * 24, None), 0);
    assert_eq!(&ents.bytes()[3 * 24..3 * 24 + 16], &gids[3].0);
    crate::mem::HostMem::write(&d.mem, a.conn.pid, ents.addr(), &[0xff; 16 * 32]).unwrap();
    assert_eq!(table(&mut a, 40, 6 * 40, None), 0);
    assert_eq!(&ents.bytes()[40..56], &gids[1].0);
    assert!(ents.bytes()[32..40].iter().all(|&x| x == 0), "padding zeroed");

    // QUERY_GID_ENTRY: a valid entry, an empty one (ENODATA), one past the
    // table (EINVAL), another port, and FLAGS is mandatory.
    let e = Buf::new(32);
    let entry = |a: &mut Client, port: u64, idx: u64| a.ioctl(0, 6, &[(0, 8, M, port), (1, 8, M, idx), (2, 4, M, 0), (3, 32, M, e.addr())]);
    assert_eq!(entry(&mut a, 1, 3), 0);
    assert_eq!((&e.bytes()[..16], u32_at(e.bytes(), 16), u32_at(e.bytes(), 24)), (&gids[3].0[..], 3, 2));
    assert_eq!(entry(&mut a, 1, 6), -(libc::ENODATA as i64));
    assert_eq!(entry(&mut a, 1, 16), EINVAL);
    assert_eq!(entry(&mut a, 2, 0), EINVAL);
    assert_eq!(a.ioctl(0, 6, &[(0, 8, M, 1), (1, 8, M, 0), (3, 32, M, e.addr())]), EINVAL, "FLAGS missing");
}

/// BlueFlame or plain doorbell, by content: a plain doorbell (first word
/// only) waits until a later store proves no copy follows; a copy that
/// lands late is still BlueFlame; a decided half is cleared, so an earlier
/// copy's bytes never make a later plain doorbell look like BlueFlame.
#[test]
fn blueflame_is_told_by_the_copy_not_by_the_scan_time() {
    let trace = std::env::temp_dir().join(format!("verbs-sim-bf-{}.trace", std::process::id()));
    let cfg = Config { socket: "/nonexistent".into(), trace: Some(trace.clone()), identity: Identity::default(), sysfs: None };
    let d = Daemon::new(&cfg).unwrap();
    let mut a = Client::new(&d);
    a.open();
    let pd = Buf::new(8);
    assert!(a.write(3, Some(&pd), 8, &[], &[]).ret > 0);
    let (ring, cqdb) = (Buf::new(32 * 64), Buf::new(64));
    let mut core = Out::new(24);
    core.u32(8, 16).u32(16, u32::MAX);
    let mut ud = Out::new(32);
    ud.u64(0, ring.addr()).u64(8, cqdb.addr()).u32(16, 64);
    let cq = Buf::new(16);
    assert!(a.write(18, Some(&cq), 16, &core.0, &ud.0).ret > 0);
    let cqh = u32_at(cq.bytes(), 0);
    let (sq, db) = (Buf::new(4096), Buf::new(64));
    let mut core = Out::new(48);
    core.u32(8, u32_at(pd.bytes(), 0)).u32(12, cqh).u32(16, cqh).u32(24, 8).u8(45, 2);
    let mut ud = Out::new(56);
    ud.u64(0, sq.addr()).u64(8, db.addr()).u32(16, 8);
    let qp = Buf::new(72);
    assert!(a.write(24, Some(&qp), 72, &core.0, &ud.0).ret > 0);
    let qpn = u32_at(qp.bytes(), 4);
    let uar = d.lock().uars[&a.conn.ctx].clone();
    let mem = &d.mem;
    let pid = a.conn.pid;
    use crate::mem::HostMem as _;
    // WQE i: ctrl (idx i, ds 2) + a data segment; the doorbell record says
    // i + 1. Their bytes after the first 8 are all alike.
    let post = |i: u16| -> [u64; 8] {
        let mut w = Out::new(64);
        w.u32(0, (u32::from(i) << 8 | 0x0a).to_be()).u32(4, (qpn << 8 | 2).to_be()).u8(11, 8);
        w.u32(16, 64u32.to_be()).u32(20, 0x1234u32.to_be()).u64(24, 0x5000u64.to_be()); // same SGE each time, as perftest posts
        mem.write(pid, sq.addr() + u64::from(i) * 64, &w.0).unwrap();
        mem.write(pid, db.addr() + 4, &(u32::from(i) + 1).to_be_bytes()).unwrap();
        std::array::from_fn(|k| u64::from_ne_bytes(w.0[8 * k..8 * k + 8].try_into().unwrap()))
    };
    let half = |i: u16| 0x800 + 256 * usize::from(i % 2); // libmlx5 alternates the halves
    let seen = |i: u16| {
        let mut st = d.lock();
        super::blueflame::seen(&d, &mut st, a.conn.ctx, &uar, qpn, i, 2, 0, half(i) as u32);
    };
    let poll = || super::blueflame::poll(&d, &mut d.lock());
    let verdicts = || {
        let t = std::fs::read_to_string(&trace).unwrap_or_default();
        t.lines().filter_map(|l| l.split_once(" DOORBELL ").map(|(_, r)| r[..2].to_string() + &r[r.find("wqe=").unwrap()..].split(' ').next().unwrap()[3..])).collect::<Vec<_>>().join(" ")
    };

    // 0: the whole copy landed before the scan: BlueFlame at once.
    let w = post(0);
    for (k, v) in w.iter().enumerate().skip(1) {
        uar.poke(half(0) + 8 * k, *v);
    }
    seen(0);
    assert_eq!(verdicts(), "BF=0");
    assert!(uar.tail(0, half(0) as u32, 256).iter().all(|&b| b == 0), "decided: cleared");
    // 1: only the first word (plain doorbell): undecided while nothing else
    // happened, however often the scanner looks.
    post(1);
    seen(1);
    poll();
    poll();
    assert_eq!(verdicts(), "BF=0");
    // 2: the next post (doorbell record moved on) proves 1 had no copy; 2's
    // copy lands in two parts, the first before the scan saw its doorbell.
    let w = post(2);
    poll();
    assert_eq!(verdicts(), "BF=0 DB=1");
    uar.poke(half(2) + 8, w[1]);
    seen(2);
    poll();
    assert_eq!(verdicts(), "BF=0 DB=1", "half a copy: not decided yet");
    for (k, v) in w.iter().enumerate().skip(2) {
        uar.poke(half(2) + 8 * k, *v);
    }
    poll();
    assert_eq!(verdicts(), "BF=0 DB=1 BF=2");
    // 3 is plain; a doorbell on the same register (4) decides it.
    post(3);
    seen(3);
    post(4);
    seen(4);
    assert_eq!(verdicts(), "BF=0 DB=1 BF=2 DB=3");
    // 4 is plain, on the half 2's copy used: those bytes (alike to 4's) were
    // cleared when 2 was decided, so closing the context decides 4 plain.
    d.teardown(a.conn.ctx);
    assert_eq!(verdicts(), "BF=0 DB=1 BF=2 DB=3 DB=4");
    let _ = std::fs::remove_file(&trace);
}
