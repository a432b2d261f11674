//! rdma_cm commands end to end on this test process's own memory (as in
//! `tests.rs`): a listener file and a client file, each event type read
//! back as the kernel's `rdma_ucm_event_resp`, and the token socket
//! readable exactly while an event waits.

use std::os::fd::OwnedFd;

use super::sock;
use super::ucma::{command, write};
use super::ucma_model::{ev, PS_TCP, PS_UDP};
use super::{Config, Daemon};
use crate::fixture::Identity;

fn daemon() -> std::sync::Arc<Daemon> {
    Daemon::new(&Config { socket: "/nonexistent".into(), trace: None, identity: Identity::default(), sysfs: None }).unwrap()
}

/// CREATE_ID on `file` (also used by `ucma_mcast`'s tests): the id's handle. The QP type is
/// the one librdmacm's `rdma_create_id` picks for `ps`: UD for the UDP port space, else RC.
pub(super) fn create_id(d: &Daemon, file: u32, uid: u64, ps: u16) -> u32 {
    let out = vec![0u8; 4];
    let mut c = [0u8; 512];
    c[0..8].copy_from_slice(&uid.to_le_bytes());
    c[8..16].copy_from_slice(&(out.as_ptr() as u64).to_le_bytes());
    c[16..18].copy_from_slice(&ps.to_le_bytes());
    c[18] = if ps == PS_UDP { 4 } else { 2 }; // IB_QPT_UD : IB_QPT_RC
    command(d, file, pid(), 0, &c, 4).unwrap();
    u32::from_le_bytes(std::hint::black_box(&out)[..4].try_into().unwrap())
}

struct F {
    d: std::sync::Arc<Daemon>,
    file: u32,
    app: OwnedFd,
}

fn pid() -> i32 {
    std::process::id() as i32
}

impl F {
    fn new(d: &std::sync::Arc<Daemon>) -> F {
        let (mine, app) = sock::event_pair().unwrap();
        let file = d.cm().add_file(pid(), mine, app.try_clone().unwrap());
        F { d: d.clone(), file, app }
    }
    fn cmd(&self, cmd: u32, body: &[u8], outlen: usize) -> Result<(), i32> {
        let mut c = [0u8; 512];
        c[..body.len()].copy_from_slice(body);
        command(&self.d, self.file, pid(), cmd, &c, outlen)
    }
    fn create(&self, uid: u64) -> u32 {
        create_id(&self.d, self.file, uid, PS_TCP)
    }
    fn readable(&self) -> bool {
        sock::pending(&self.app)
    }
    /// GET_EVENT: (uid, id, event, status, record).
    fn event(&self) -> Result<(u64, u32, u32, i32, Vec<u8>), i32> {
        let out = vec![0u8; 336];
        self.cmd(12, &(out.as_ptr() as u64).to_le_bytes(), 336)?;
        let r = std::hint::black_box(&out).clone();
        let u = |a: usize| u32::from_le_bytes(r[a..a + 4].try_into().unwrap());
        Ok((u64::from_le_bytes(r[0..8].try_into().unwrap()), u(8), u(12), u(16) as i32, r))
    }
}

fn sin(ip: [u8; 4], port: u16) -> [u8; 128] {
    let mut s = [0u8; 128];
    s[0..2].copy_from_slice(&(libc::AF_INET as u16).to_le_bytes());
    s[2..4].copy_from_slice(&port.to_be_bytes());
    s[4..8].copy_from_slice(&ip);
    s
}

fn bind(f: &F, id: u32, ip: [u8; 4], port: u16) -> Result<(), i32> {
    let mut b = [0u8; 136];
    b[0..4].copy_from_slice(&id.to_le_bytes());
    b[4..6].copy_from_slice(&16u16.to_le_bytes());
    b[8..136].copy_from_slice(&sin(ip, port));
    f.cmd(20, &b, 0)
}

fn resolve(f: &F, id: u32, ip: [u8; 4], port: u16) {
    let mut b = [0u8; 272];
    b[0..4].copy_from_slice(&id.to_le_bytes());
    b[10..12].copy_from_slice(&16u16.to_le_bytes());
    b[144..272].copy_from_slice(&sin(ip, port));
    f.cmd(21, &b, 0).unwrap();
}

fn conn_param(qpn: u32, pd: &[u8], id_at: usize, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    b[0..4].copy_from_slice(&qpn.to_le_bytes());
    b[8..8 + pd.len()].copy_from_slice(pd);
    b[264] = pd.len() as u8;
    b[266] = 1;
    b[267] = 1;
    b[269] = 7;
    b[270] = 7;
    let _ = id_at;
    b
}

const IP: [u8; 4] = [10, 251, 0, 1];

#[test]
fn rc_connect_establish_disconnect_destroy() {
    let d = daemon();
    let (srv, cli) = (F::new(&d), F::new(&d));
    let l = srv.create(0x1111);
    bind(&srv, l, IP, 7000).unwrap();
    srv.cmd(7, &[l.to_le_bytes(), 4u32.to_le_bytes()].concat(), 0).unwrap();
    let c = cli.create(0x2222);
    assert!(!cli.readable());
    resolve(&cli, c, IP, 7000);
    assert!(cli.readable());
    assert_eq!(cli.event().unwrap().2, ev::ADDR_RESOLVED);
    assert!(!cli.readable());
    cli.cmd(4, &[c.to_le_bytes(), 100u32.to_le_bytes()].concat(), 0).unwrap();
    assert_eq!(cli.event().unwrap().2, ev::ROUTE_RESOLVED);
    let mut b = conn_param(0x11, b"hello", 272, 288);
    b[272..276].copy_from_slice(&c.to_le_bytes());
    cli.cmd(6, &b, 0).unwrap();
    let (uid, n, e, _, r) = srv.event().unwrap();
    assert_eq!((uid, e, u32::from_le_bytes(r[20..24].try_into().unwrap())), (0x1111, ev::CONNECT_REQUEST, 0x11));
    assert_eq!((&r[28..33], r[284]), (&b"hello"[..], 56), "REQ private data, padded to 56 bytes");
    assert_ne!(n, l);
    let mut a = vec![0u8; 288];
    a[0..8].copy_from_slice(&0x3333u64.to_le_bytes());
    a[8..280].copy_from_slice(&conn_param(0x22, b"yo", 0, 272));
    a[280..284].copy_from_slice(&n.to_le_bytes());
    srv.cmd(8, &a, 0).unwrap();
    let (_, _, e, _, r) = cli.event().unwrap();
    assert_eq!((e, u32::from_le_bytes(r[20..24].try_into().unwrap()), &r[28..30], r[284]), (ev::CONNECT_RESPONSE, 0x22, &b"yo"[..], 196));
    // INIT_QP_ATTR RTR on the client: the server's QP number.
    let qa = vec![0u8; 144];
    let mut q = [0u8; 16];
    q[0..8].copy_from_slice(&(qa.as_ptr() as u64).to_le_bytes());
    q[8..12].copy_from_slice(&c.to_le_bytes());
    q[12..16].copy_from_slice(&2u32.to_le_bytes());
    cli.cmd(11, &q, 144).unwrap();
    let qa = std::hint::black_box(&qa).clone();
    assert_eq!(u32::from_le_bytes(qa[32..36].try_into().unwrap()), 0x22);
    assert_eq!(qa[40..56], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 251, 0, 1]);
    assert_eq!(qa[60], 3, "sgid index: the RoCE v2 IPv4 GID");
    // The client's RTU: the server is established.
    let mut rtu = vec![0u8; 288];
    rtu[280..284].copy_from_slice(&c.to_le_bytes());
    cli.cmd(8, &rtu, 0).unwrap();
    let (uid, id, e, _, _) = srv.event().unwrap();
    assert_eq!((uid, id, e), (0x3333, n, ev::ESTABLISHED));
    cli.cmd(10, &c.to_le_bytes(), 0).unwrap();
    assert_eq!(cli.event().unwrap().2, ev::DISCONNECTED);
    assert_eq!(srv.event().unwrap().2, ev::DISCONNECTED);
    assert_eq!(srv.event(), Err(libc::EAGAIN));
    let out = vec![0u8; 4];
    let mut x = [0u8; 16];
    x[0..8].copy_from_slice(&(out.as_ptr() as u64).to_le_bytes());
    x[8..12].copy_from_slice(&c.to_le_bytes());
    cli.cmd(1, &x, 4).unwrap();
    assert_eq!(u32::from_le_bytes(std::hint::black_box(&out)[..4].try_into().unwrap()), 4, "events reported");
}

#[test]
fn nobody_listening_is_rejected_and_ports_conflict() {
    let d = daemon();
    let f = F::new(&d);
    let a = f.create(1);
    bind(&f, a, IP, 7100).unwrap();
    let b = f.create(2);
    assert_eq!(bind(&f, b, IP, 7100), Err(libc::EADDRINUSE));
    assert_eq!(bind(&f, b, [10, 9, 9, 9], 7100), Err(libc::EADDRNOTAVAIL));
    resolve(&f, b, IP, 7200);
    assert_eq!(f.event().unwrap().2, ev::ADDR_RESOLVED);
    f.cmd(4, &b.to_le_bytes(), 0).unwrap();
    assert_eq!(f.event().unwrap().2, ev::ROUTE_RESOLVED);
    let mut p = conn_param(5, b"", 272, 288);
    p[272..276].copy_from_slice(&b.to_le_bytes());
    f.cmd(6, &p, 0).unwrap();
    let (_, id, e, status, _) = f.event().unwrap();
    assert_eq!((id, e, status), (b, ev::REJECTED, 8), "IB_CM_REJ_INVALID_SERVICE_ID");
}

/// INIT_QP_ATTR: (mask, access flags, qp_state) or the errno.
fn init_attr(f: &F, id: u32, state: u32) -> Result<(u32, u32, u32), i32> {
    let qa = vec![0u8; 144];
    let mut q = [0u8; 16];
    q[0..8].copy_from_slice(&(qa.as_ptr() as u64).to_le_bytes());
    q[8..12].copy_from_slice(&id.to_le_bytes());
    q[12..16].copy_from_slice(&state.to_le_bytes());
    f.cmd(11, &q, 144)?;
    let qa = std::hint::black_box(&qa).clone();
    let u = |a: usize| u32::from_le_bytes(qa[a..a + 4].try_into().unwrap());
    Ok((u(0), u(36), u(4)))
}

#[test]
fn query_route_and_init_qp_attr_as_the_kernel_answers() {
    let d = daemon();
    let (srv, cli) = (F::new(&d), F::new(&d));
    let l = srv.create(1);
    bind(&srv, l, IP, 7300).unwrap();
    srv.cmd(7, &[l.to_le_bytes(), 4u32.to_le_bytes()].concat(), 0).unwrap();
    assert_eq!(init_attr(&srv, l, 1), Err(libc::EINVAL), "a listener's CM id has no QP attributes");
    let c = cli.create(2);
    resolve(&cli, c, IP, 7300);
    assert_eq!(cli.event().unwrap().2, ev::ADDR_RESOLVED);
    // QUERY_ROUTE before the route: the addresses and GIDs, no path
    let qr = |f: &F, id: u32| {
        let out = vec![0u8; 208];
        let mut q = [0u8; 16];
        q[0..8].copy_from_slice(&(out.as_ptr() as u64).to_le_bytes());
        q[8..12].copy_from_slice(&id.to_le_bytes());
        f.cmd(5, &q, 208).unwrap();
        std::hint::black_box(&out).clone()
    };
    let r = qr(&cli, c);
    assert_eq!(u32::from_le_bytes(r[192..196].try_into().unwrap()), 0, "num_paths");
    assert_eq!((r[196], &r[0..8]), (1, &0x0c42_a103_00b1_5e00u64.to_be_bytes()[..]));
    assert_eq!(r[8..24], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 251, 0, 1], "dgid");
    assert_eq!(u16::from_le_bytes([r[164], r[165]]), libc::AF_INET as u16);
    assert_eq!((u16::from_be_bytes([r[166], r[167]]), &r[168..172]), (7300, &IP[..]), "dst_addr");
    cli.cmd(4, &c.to_le_bytes(), 0).unwrap();
    assert_eq!(cli.event().unwrap().2, ev::ROUTE_RESOLVED);
    let r = qr(&cli, c);
    assert_eq!((u32::from_le_bytes(r[192..196].try_into().unwrap()), r[8 + 62]), (1, 16), "one path, packet life");
    // before rdma_connect (no CM id): cma_ib_init_qp_attr, access flags 0, any state
    assert_eq!(init_attr(&cli, c, 1), Ok((1 | 8 | 16 | 32, 0, 1)));
    assert_eq!(init_attr(&cli, c, 2), Ok((1 | 8 | 16 | 32, 0, 2)));
    let mut b = conn_param(0x11, b"", 272, 288);
    b[272..276].copy_from_slice(&c.to_le_bytes());
    cli.cmd(6, &b, 0).unwrap();
    // connecting, with responder resources: REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC
    assert_eq!(init_attr(&cli, c, 1), Ok((1 | 8 | 16 | 32, 2 | 4 | 8, 1)));
}

/// perftest `-R`'s two connections to one port, through `write` (as the
/// shim forwards them): the listener file lists a listener exactly while
/// one listens, updated before LISTEN / DESTROY_ID return, so a client's
/// shim that waits for the port (`crate::cm_listen`) cannot take the
/// destroyed control listener for the second one, and once it sees the
/// port its REQ reaches the new listener instead of a REJ.
#[test]
fn listener_file_follows_perftest_relisten() {
    let dir = std::env::temp_dir().join(format!("verbs-sim-cmlisten-{}", pid()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("sock");
    let d = Daemon::new(&Config { socket: sock.clone(), trace: None, identity: Identity::default(), sysfs: None }).unwrap();
    let listed = |port| crate::cm_listen::lists_port(&std::fs::read_to_string(crate::cm_listen::path(&sock)).unwrap_or_default(), port);
    let (srv, cli) = (F::new(&d), F::new(&d));
    let w = |f: &F, cmd: u32, body: &[u8]| {
        let mut b = vec![0u8; 8 + body.len()];
        b[0..4].copy_from_slice(&cmd.to_le_bytes());
        b[4..6].copy_from_slice(&(body.len() as u16).to_le_bytes());
        b[8..].copy_from_slice(body);
        write(&f.d, f.file, pid(), b.as_ptr() as u64, b.len() as u64)
    };
    let listen = |l: u32| w(&srv, 7, &[l.to_le_bytes(), 1u32.to_le_bytes()].concat());
    let destroy = |f: &F, id: u32| {
        let mut out = [0u8; 4]; // the events reported, written by the daemon
        let mut x = [0u8; 16];
        x[0..8].copy_from_slice(&(out.as_mut_ptr() as u64).to_le_bytes());
        x[8..12].copy_from_slice(&id.to_le_bytes());
        let mut b = [0u8; 24];
        b[0..4].copy_from_slice(&1u32.to_le_bytes());
        b[4..6].copy_from_slice(&16u16.to_le_bytes());
        b[6..8].copy_from_slice(&4u16.to_le_bytes());
        b[8..24].copy_from_slice(&x);
        write(&f.d, f.file, pid(), b.as_ptr() as u64, b.len() as u64)
    };
    let connect = |c: u32| {
        resolve(&cli, c, IP, 7400);
        assert_eq!(cli.event().unwrap().2, ev::ADDR_RESOLVED);
        cli.cmd(4, &c.to_le_bytes(), 0).unwrap();
        assert_eq!(cli.event().unwrap().2, ev::ROUTE_RESOLVED);
        let mut p = conn_param(0x11, b"", 272, 288);
        p[272..276].copy_from_slice(&c.to_le_bytes());
        cli.cmd(6, &p, 0).unwrap();
    };
    // the control connection: wildcard listener, accepted, then destroyed
    let l1 = srv.create(1);
    bind(&srv, l1, [0; 4], 7400).unwrap();
    assert!(!listed(7400));
    listen(l1).unwrap();
    assert!(listed(7400));
    let c1 = cli.create(2);
    connect(c1);
    let (_, n1, e, _, _) = srv.event().unwrap();
    assert_eq!(e, ev::CONNECT_REQUEST);
    destroy(&srv, l1).unwrap();
    assert!(!listed(7400), "the accepted connection's id is not a listener");
    // the test connection: a client too early is rejected, as by the kernel
    let early = cli.create(3);
    connect(early);
    assert_eq!(cli.event().unwrap().2, ev::REJECTED);
    // ... and one that waits for the port to be listed is not
    let l2 = srv.create(4);
    bind(&srv, l2, [0; 4], 7400).unwrap();
    listen(l2).unwrap();
    assert!(listed(7400));
    let c2 = cli.create(5);
    connect(c2);
    let (uid, n2, e, _, _) = srv.event().unwrap();
    assert_eq!((uid, e), (4, ev::CONNECT_REQUEST));
    assert_ne!(n2, n1);
    destroy(&srv, l2).unwrap();
    assert!(!listed(7400));
    let _ = std::fs::remove_dir_all(&dir);
}
