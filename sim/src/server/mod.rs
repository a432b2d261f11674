//! The daemon side: the unix socket, one thread per connection (one device
//! context of one process), the uverbs commands (write and ioctl) answered as `mlx5_ib`
//! answers them, and the doorbell scanner that drives the engine.

mod bfreg;
mod blueflame;
pub mod cmd;
mod device;
mod events;
mod ioctl;
mod ioctl_device;
mod link;
mod mcast;
mod nldev;
mod objects;
mod qp;
mod qp_state;
mod queues;
mod scanner;
mod sock;
pub mod trace;
pub mod uar;
mod ucma;
mod ucma_mcast;
mod ucma_model;
mod ucma_qp;
#[cfg(test)]
mod ucma_tests;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::engine::Engine;
use crate::fdpass;
use crate::fixture::Identity;
use crate::mem::{Pid, ProcMem};
use crate::model::{Ctx, Device};
use crate::proto::{Call, Hello, Reply, Welcome, UAR_PAGES};
use cmd::{errno, Req, Resp};
use trace::{cmd_name, Trace};
pub use events::{Chan, Sink};
use uar::Uar;

/// Daemon settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// The unix socket to listen on (`VERBS_SIM_SOCKET` of the clients).
    pub socket: PathBuf,
    /// Trace file.
    pub trace: Option<PathBuf>,
    /// Identity of the simulated NIC (must match the fixture sysfs).
    pub identity: Identity,
    /// The fixture sysfs tree the daemon wrote (`--sysfs`), whose port
    /// state it keeps in step with the netdev (`link.rs`); None: no tree.
    pub sysfs: Option<PathBuf>,
}

pub use crate::model::ARM_UNSET;

/// The file in which the daemon publishes its rdma_cm listeners, next to
/// `socket`: one line per listening id, in the words of `rdma res show
/// cm_id` (`state LISTEN ps TCP src-addr 10.251.0.1:7471 `); a harness,
/// or a client's shim (`crate::cm_listen`), that waits for another
/// process's listener reads it.
pub fn cm_listen_path(socket: &std::path::Path) -> PathBuf {
    crate::cm_listen::path(socket)
}

/// Per-context facts the model does not keep.
#[derive(Debug, Default, Clone)]
pub struct CtxExtra {
    /// GET_CONTEXT done.
    pub open: bool,
    /// bfregs granted (legacy mode).
    pub tot_bfregs: u32,
    /// cqe_version granted.
    pub cqe_version: u8,
    /// Which BlueFlame register each QP holds (the kernel's classes).
    pub bfregs: bfreg::Bfregs,
}

/// The whole daemon state, behind one lock.
#[derive(Default)]
pub struct State {
    /// The object model the engine works on.
    pub dev: Device,
    /// Events out.
    pub sink: Sink,
    /// UAR pages by context.
    pub uars: HashMap<u32, Arc<Uar>>,
    /// Context facts.
    pub ctxx: HashMap<u32, CtxExtra>,
    /// QP facts for QUERY_QP.
    pub qpx: HashMap<u32, qp::QpExtra>,
    /// Send doorbells whose kind (BlueFlame or not) is not known yet.
    pub bf_pending: Vec<blueflame::Pending>,
    /// Next ids.
    next_ctx: u32,
    next_pdn: u32,
    next_cqn: u32,
    next_qpn: u32,
    next_srqn: u32,
    next_mkey: u32,
    next_ah: u32,
    next_chan: u32,
}

impl State {
    fn alloc(counter: &mut u32, first: u32) -> u32 {
        if *counter < first {
            *counter = first;
        }
        let v = *counter;
        *counter += 1;
        v
    }
}

/// The daemon.
pub struct Daemon {
    state: Mutex<State>,
    /// The connection manager (rdma_cm files and ids).
    cm: Mutex<ucma_model::Cm>,
    /// DMA into the applications.
    pub mem: ProcMem,
    /// Trace.
    pub trace: Trace,
    /// NIC identity.
    pub id: Identity,
    /// Where the rdma_cm listeners are published (`<socket>.cm_listen`).
    pub cm_listen: PathBuf,
    /// The port's netdev is up (`ip link set dev <netdev> down|up`, `link.rs`).
    pub port_up: std::sync::atomic::AtomicBool,
    /// [`Config::sysfs`].
    pub sysfs: Option<PathBuf>,
}

impl Daemon {
    /// A daemon with no contexts.
    pub fn new(cfg: &Config) -> io::Result<Arc<Self>> {
        let trace = Trace::new(cfg.trace.as_deref())?;
        let mut state = State { sink: Sink { trace: trace.on().then(|| trace.clone()), ..Default::default() }, ..Default::default() };
        state.dev.gids = crate::fixture::gids(&cfg.identity).iter().map(|(g, _)| *g).collect();
        Ok(Arc::new(Daemon { state: Mutex::new(state), cm: Mutex::default(), mem: ProcMem, trace, id: cfg.identity.clone(), cm_listen: cm_listen_path(&cfg.socket), port_up: true.into(), sysfs: cfg.sysfs.clone() }))
    }

    /// The state lock.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The connection manager's lock.
    fn cm(&self) -> MutexGuard<'_, ucma_model::Cm> {
        self.cm.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with an engine over the locked state.
    pub fn with_engine<R>(&self, st: &mut State, f: impl FnOnce(&mut Engine<'_, ProcMem, Sink>) -> R) -> R {
        let mut e = Engine { dev: &mut st.dev, mem: &self.mem, events: &mut st.sink };
        f(&mut e)
    }
}

/// Serves forever: listens on `cfg.socket`, a thread per connection, and
/// the doorbell scanner.
pub fn run(cfg: &Config) -> io::Result<()> {
    let d = Daemon::new(cfg)?;
    let _ = std::fs::remove_file(&cfg.socket);
    let _ = std::fs::write(cm_listen_path(&cfg.socket), ""); // no listener yet
    let listener = sock::seqpacket_listen(&cfg.socket)?;
    {
        let d = d.clone();
        std::thread::Builder::new().name("doorbells".into()).spawn(move || scanner::run(&d))?;
    }
    loop {
        let conn = sock::seqpacket_accept(&listener)?;
        let d = d.clone();
        std::thread::Builder::new().name("conn".into()).spawn(move || serve(&d, conn))?;
    }
}

struct Conn {
    ctx: u32,
    pid: Pid,
}

fn serve(d: &Daemon, sock: OwnedFd) {
    let mut buf = [0u8; 64];
    let Ok((n, _)) = fdpass::recv(sock.as_fd(), &mut buf) else { return };
    let Some(hello) = Hello::decode(&buf[..n]) else { return };
    if hello.index == crate::proto::UCMA_INDEX {
        return ucma::serve(d, sock, hello);
    }
    if hello.index == crate::proto::NETLINK_INDEX {
        return nldev::serve(d, sock, hello);
    }
    let uar = match Uar::new() {
        Ok(u) => Arc::new(u),
        Err(e) => {
            d.trace.line(format_args!("connect pid={} failed: {e}", hello.pid));
            return;
        }
    };
    let ctx = {
        let mut st = d.lock();
        let ctx = State::alloc(&mut st.next_ctx, 1);
        st.dev.ctxs.insert(ctx, Ctx { id: ctx, pid: hello.pid, comp_channels: Vec::new() });
        st.uars.insert(ctx, uar.clone());
        st.ctxx.insert(ctx, CtxExtra::default());
        ctx
    };
    d.trace.line(format_args!("ctx={ctx} pid={} OPEN uverbs{}", hello.pid, hello.index));
    let w = Welcome { ctx, daemon_pid: std::process::id() as i32, uar_pages: UAR_PAGES };
    if fdpass::send(sock.as_fd(), &w.encode(), &[uar.fd().as_raw_fd()]).is_ok() {
        let mut conn = Conn { ctx, pid: hello.pid };
        loop {
            let Ok((n, _)) = fdpass::recv(sock.as_fd(), &mut buf) else { break };
            if n == 0 {
                break;
            }
            let Some(call) = Call::decode(&buf[..n]) else { break };
            let (reply, fds) = d.call(&mut conn, call);
            let raw: Vec<i32> = fds.iter().map(|f| f.as_raw_fd()).collect();
            if fdpass::send(sock.as_fd(), &reply.encode(), &raw).is_err() {
                break;
            }
        }
    }
    d.teardown(ctx);
    d.trace.line(format_args!("ctx={ctx} pid={} CLOSE", hello.pid));
}

impl Daemon {
    fn call(&self, conn: &mut Conn, call: Call) -> (Reply, Vec<OwnedFd>) {
        match call {
            Call::Ioctl { request, arg } => {
                let open = self.lock().ctxx.get(&conn.ctx).is_some_and(|c| c.open);
                let c = ioctl_device::DevCtx { open, id: self.id.clone(), port_up: self.port_up.load(std::sync::atomic::Ordering::Acquire) };
                let out = ioctl::run(&self.mem, conn.pid, request, arg, ioctl_device::METHODS, &c);
                let e = match out.res {
                    Ok(()) => "ok".to_string(),
                    Err(e) => errname(e),
                };
                self.trace.line(format_args!("ctx={} pid={} IOCTL {} -> {e}", conn.ctx, conn.pid, out.what));
                (Reply::ret(out.res.map_or_else(|e| -i64::from(e), |()| 0)), Vec::new())
            }
            Call::Write { buf, len } => {
                let req = match cmd::parse(&self.mem, conn.pid, buf, len) {
                    Ok(r) => r,
                    Err((c, e)) => {
                        self.trace.line(format_args!(
                            "ctx={} pid={} WRITE {}({c}) len={len} -> {}",
                            conn.ctx,
                            conn.pid,
                            cmd_name(c),
                            errname(e)
                        ));
                        return (Reply::ret(-i64::from(e)), Vec::new());
                    }
                };
                let mut st = self.lock();
                let res = self.dispatch(&mut st, conn, &req);
                let res = res.and_then(|r| cmd::write_resp(&self.mem, conn.pid, &req, &r).map(|()| r));
                drop(st);
                let ex = if req.ex { "EX " } else { "" };
                match res {
                    Ok(r) => {
                        self.trace.line(format_args!(
                            "ctx={} pid={} WRITE {ex}{}({}) in={}+{} out={}+{} -> ok {}",
                            conn.ctx,
                            conn.pid,
                            cmd_name(req.cmd),
                            req.cmd,
                            req.core.len(),
                            req.udata.len(),
                            req.core_out,
                            req.drv_out_len,
                            r.note
                        ));
                        let mut reply = Reply::ret(len as i64);
                        let mut fds = Vec::new();
                        for (fd, off) in r.fds {
                            reply.patch[fds.len()] = req.resp + off as u64;
                            fds.push(fd);
                        }
                        reply.nfds = fds.len() as u32;
                        (reply, fds)
                    }
                    Err(e) => {
                        self.trace.line(format_args!(
                            "ctx={} pid={} WRITE {ex}{}({}) in={}+{} -> {} core={} udata={}",
                            conn.ctx,
                            conn.pid,
                            cmd_name(req.cmd),
                            req.cmd,
                            req.core.len(),
                            req.udata.len(),
                            errname(e),
                            hex(&req.core),
                            hex(&req.udata)
                        ));
                        (Reply::ret(-i64::from(e)), Vec::new())
                    }
                }
            }
        }
    }

    fn dispatch(&self, st: &mut State, conn: &mut Conn, req: &Req) -> Result<Resp, i32> {
        let open = st.ctxx.get(&conn.ctx).is_some_and(|c| c.open);
        if !open && req.cmd != 0 {
            return Err(errno::EINVAL);
        }
        match (req.ex, req.cmd) {
            (false, 0) => device::get_context(self, st, conn.ctx, conn.pid, req),
            (false, 1) => device::query_device(self, req),
            (true, 1) => device::query_device_ex(self, req),
            (false, 2) => device::query_port(self, req),
            (false, 3) => objects::alloc_pd(st, conn.ctx),
            (false, 4) => objects::dealloc_pd(st, conn.ctx, req),
            (false, 5) => objects::create_ah(self, st, conn.ctx, req),
            (false, 8) => objects::destroy_ah(st, conn.ctx, req),
            (false, 9) => objects::reg_mr(self, st, conn.ctx, conn.pid, req),
            (false, 11) => objects::rereg_mr(self, st, conn.ctx, conn.pid, req),
            (false, 13) => objects::dereg_mr(st, conn.ctx, req),
            (false, 14) => objects::alloc_mw(st, conn.ctx, req),
            (false, 16) => objects::dealloc_mw(st, conn.ctx, req),
            (false, 17) => objects::create_comp_channel(st, conn.ctx),
            (_, 18) => queues::create_cq(self, st, conn.ctx, conn.pid, req),
            (false, 19) => queues::resize_cq(self, st, conn.ctx, req),
            (false, 20) => queues::destroy_cq(st, conn.ctx, req),
            (_, 24) => qp::create_qp(st, conn.ctx, conn.pid, req),
            (false, 25) => qp::query_qp(st, conn.ctx, req),
            (_, 26) => qp::modify_qp(self, st, conn.ctx, req),
            (false, 27) => qp::destroy_qp(st, conn.ctx, req),
            (false, 30) => mcast::attach(st, conn.ctx, req),
            (false, 31) => mcast::detach(st, conn.ctx, req),
            (false, 32) => queues::create_srq(st, conn.ctx, conn.pid, req),
            (false, 33) => queues::modify_srq(st, conn.ctx, req),
            (false, 34) => queues::query_srq(st, conn.ctx, req),
            (false, 35) => queues::destroy_srq(st, conn.ctx, req),
            _ => Err(errno::EOPNOTSUPP),
        }
    }

    /// Destroys everything a context owns (its process closed the device
    /// or exited), as the kernel's uverbs file release does.
    fn teardown(&self, ctx: u32) {
        let mut st = self.lock();
        blueflame::close(self, &mut st, ctx);
        let qps: Vec<u32> = st.dev.qps.values().filter(|q| q.ctx == ctx).map(|q| q.qpn).collect();
        for q in qps {
            st.dev.qps.remove(&q);
            st.qpx.remove(&q);
        }
        st.dev.srqs.retain(|_, s| s.ctx != ctx);
        let cqs: Vec<u32> = st.dev.cqs.values().filter(|c| c.ctx == ctx).map(|c| c.cqn).collect();
        for c in cqs {
            st.dev.cqs.remove(&c);
        }
        st.dev.mrs.retain(|_, m| m.ctx != ctx);
        st.dev.mws.retain(|_, m| m.ctx != ctx);
        st.dev.ahs.retain(|_, a| a.ctx != ctx);
        st.dev.pds.retain(|_, p| p.ctx != ctx);
        let chans: Vec<u32> = st.sink.chans.iter().filter(|(_, c)| c.ctx == ctx).map(|(k, _)| *k).collect();
        for c in chans {
            st.sink.chans.remove(&c);
            st.sink.comp_counts.retain(|k, _| k.0 != c);
        }
        st.sink.async_fds.remove(&ctx);
        st.sink.async_counts.retain(|k, _| k.0 != ctx);
        st.uars.remove(&ctx);
        st.ctxx.remove(&ctx);
        st.dev.ctxs.remove(&ctx);
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// errno name for the trace.
pub fn errname(e: i32) -> String {
    let n = match e {
        libc::EINVAL => "EINVAL",
        libc::EFAULT => "EFAULT",
        libc::ENOMEM => "ENOMEM",
        libc::EBUSY => "EBUSY",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOTTY => "ENOTTY",
        libc::ENOSPC => "ENOSPC",
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ENODATA => "ENODATA",
        libc::EPROTONOSUPPORT => "EPROTONOSUPPORT",
        _ => return format!("errno {e}"),
    };
    n.to_string()
}
