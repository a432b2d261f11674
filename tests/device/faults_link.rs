//! Fault scenario, device removal (issue #12): `rdma link delete rxe0`
//! while a QP pair streams RDMA WRITEs. rxe cannot disassociate user
//! contexts, so the kernel's `ib_uverbs_remove_one` waits until every
//! uverbs file of the device is closed: the delete runs in a child process
//! (our descriptors are close-on-exec), the load goes on after the device
//! node has left `/dev/infiniband` (sysfs keeps the device until our files
//! close), and dropping our objects lets the delete finish. Checked: no panic, no hang (deadlines
//! everywhere), one completion per request, a later open fails with
//! `NoDevice`. The device is then re-created as the VM made it (same
//! netdev, same RoCE v2 GID at the index the other tests use) — also when
//! the test fails half-way, by the guard's `Drop`.

use core::time::Duration;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Instant;

use super::common::{gid_index, read_attr, rxe_name, sys_infiniband, uverbs_of};
use super::rig::{init_attr, rc_pair, ALL_ACCESS, CAP};
use verbs::discovery::devices;
use verbs::wr::{SendFlags, SendWr};
use verbs::{Context, Cq, ErrorKind, Mr, Pd, Wc, WcStatus};

/// The netdev under `dev` port 1, from `rdma link show` (iproute2).
fn netdev_of(dev: &str) -> String {
    let out = Command::new("rdma").args(["link", "show", &format!("{dev}/1")]).output().expect("rdma link show");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut it = text.split_whitespace();
    it.find(|w| *w == "netdev").and_then(|_| it.next()).unwrap_or_else(|| panic!("no netdev in {text:?}")).to_owned()
}

/// Polls `cond` every 20 ms until it holds or `secs` pass; returns whether it held.
fn wait_until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the delete child (and re-creates the device) when dropped, so
/// that a failure anywhere leaves the VM's rxe0 as the other tests need it.
struct Restore {
    dev: String,
    netdev: String,
    gid: String,
    child: Option<Child>,
}

impl Restore {
    /// Waits (60 s at most) for the `rdma link delete` child; its exit status.
    fn reap(&mut self) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        let mut status = None;
        wait_until(60, || {
            status = child.try_wait().expect("waitpid");
            status.is_some()
        });
        if status.is_some() {
            self.child = None;
        }
        status
    }

    /// `rdma link add` and wait for ACTIVE and the same GID at the same index.
    fn recreate(&self) -> Result<(), String> {
        let port = sys_infiniband().join(&self.dev).join("ports/1");
        if !port.exists() {
            let st = Command::new("rdma")
                .args(["link", "add", &self.dev, "type", "rxe", "netdev", &self.netdev])
                .status()
                .map_err(|e| format!("rdma link add: {e}"))?;
            if !st.success() {
                return Err(format!("rdma link add {} netdev {}: {st}", self.dev, self.netdev));
            }
        }
        let gid_path = port.join(format!("gids/{}", gid_index()));
        let back = wait_until(30, || {
            std::fs::read_to_string(port.join("state")).is_ok_and(|s| s.trim() == "4: ACTIVE")
                && std::fs::read_to_string(&gid_path).is_ok_and(|g| g.trim() == self.gid)
        });
        if back {
            Ok(())
        } else {
            Err(format!("{} not ACTIVE with GID {} = {} within 30 s", self.dev, gid_index(), self.gid))
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if self.child.is_some() && self.reap().is_none() {
            eprintln!("rdma link delete {} still blocked after 60 s; cannot restore it", self.dev);
            return;
        }
        if let Err(e) = self.recreate() {
            eprintln!("restoring {}: {e}", self.dev);
        }
    }
}

/// `ibv_get_device_list` + `ibv_open_device` by name.
fn open_by_name(name: &str) -> verbs::Result<Context> {
    Context::open(devices()?.by_name(name)?)
}

/// The descriptors of this process that point at `node` (e.g. `/dev/infiniband/uverbs0`,
/// shown as `... (deleted)` once the device node is gone).
fn fds_on(node: &str) -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .map(|p| p.to_string_lossy().into_owned())
        .filter(|p| p == node || p.starts_with(&format!("{node} ")))
        .collect()
}

/// The stream of signaled RDMA WRITEs: how many were posted, the
/// completions polled so far, and the CQ they arrive on.
struct Load<'a> {
    posted: u64,
    done: Vec<Wc>,
    cq: &'a Cq<'a>,
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_link_delete_under_load() {
    let name = rxe_name();
    let sys = sys_infiniband().join(&name);
    let node = format!("/dev/infiniband/{}", uverbs_of(&name));
    let mut restore = Restore {
        dev: name.clone(),
        netdev: netdev_of(&name),
        gid: read_attr(sys.join(format!("ports/1/gids/{}", gid_index()))),
        child: None,
    };
    let list = devices().expect("ibv_get_device_list");
    let dev = list.by_name(&name).expect("rxe device");
    {
        let ctx = Context::open(dev).expect("ibv_open_device");
        let pd = Pd::alloc(&ctx).unwrap();
        let (cq, other) = (Cq::create(&ctx, 64, None, 0).unwrap(), Cq::create(&ctx, 64, None, 0).unwrap());
        let (mut a, _b) = rc_pair(&pd, init_attr(&cq, &cq, None, CAP), init_attr(&other, &other, None, CAP));
        let bbuf = vec![0u8; 4096];
        let bmr = Mr::reg(&pd, bbuf, ALL_ACCESS).unwrap();
        let mut load = Load { posted: 0, done: Vec::new(), cq: &cq };
        let data = [0x77u8; 32];
        let mut step = |load: &mut Load<'_>, post: bool| {
            while post && load.posted - (load.done.len() as u64) < 8 {
                let off = (load.posted % 64) * 32;
                let wr = SendWr::rdma_write(load.posted, &[], bmr.addr() + off, bmr.rkey()).inline(&data);
                a.post_send(&[wr.flags(SendFlags::SIGNALED)]).expect("ibv_post_send under load");
                load.posted += 1;
            }
            let mut batch = [Wc::ZERO; 8];
            let k = load.cq.poll(&mut batch).expect("ibv_poll_cq under load");
            load.done.extend_from_slice(&batch[..k]);
            if k == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
        };
        assert!(wait_until(30, || {
            step(&mut load, true);
            load.done.len() >= 50
        }), "load did not start: {} completions", load.done.len());

        // Delete in a child: it blocks in the kernel until our files close.
        restore.child = Some(Command::new("rdma").args(["link", "delete", &name]).spawn().expect("spawn rdma"));
        // The kernel unregisters the uverbs character device first, then waits
        // for our files; the device itself stays in sysfs until they close.
        let mut early = None;
        let gone = wait_until(30, || {
            step(&mut load, true);
            early = restore.child.as_mut().and_then(|c| c.try_wait().expect("waitpid"));
            !Path::new(&node).exists() || early.is_some()
        });
        let pid = restore.child.as_ref().map_or(0, Child::id);
        let stack = std::fs::read_to_string(format!("/proc/{pid}/stack")).unwrap_or_default();
        assert!(early.is_none(), "rdma link delete {name} ended while our files are open: {early:?}");
        assert!(gone, "{node} still there 30 s after rdma link delete; the child is in:\n{stack}");
        // The load goes on while the delete waits for us.
        let at = load.done.len();
        assert!(wait_until(30, || {
            step(&mut load, true);
            load.done.len() >= at + 50
        }), "load stalled after the delete: {} completions", load.done.len());

        // The open context still answers: new objects either work or fail
        // with an error (rxe keeps serving until our files close).
        match Cq::create(&ctx, 8, None, 0) {
            Ok(extra) => extra.destroy().map(|_| ()).map_err(|e| e.error).expect("ibv_destroy_cq during the delete"),
            Err(e) => eprintln!("ibv_create_cq during the delete: {e}"),
        }
        assert_eq!(ctx.query_port(1).expect("ibv_query_port during the delete").state, 4);

        // New opens fail, by name and through the stale handle.
        let e = open_by_name(&name).unwrap_err();
        assert_eq!((e.verb(), e.kind()), ("ibv_open_device", ErrorKind::NoDevice), "{e}");
        let e = Context::open(dev).map(|_| ()).unwrap_err();
        assert_eq!((e.verb(), e.kind()), ("ibv_open_device", ErrorKind::NoDevice), "{e}");

        // Drain what is in flight: exactly one completion per request, in order.
        assert!(wait_until(30, || {
            step(&mut load, false);
            load.done.len() as u64 == load.posted
        }), "{} of {} completions", load.done.len(), load.posted);
        let ids: Vec<u64> = load.done.iter().map(Wc::wr_id).collect();
        assert_eq!(ids, (0..load.posted).collect::<Vec<_>>());
        let bad: Vec<_> = load.done.iter().filter(|w| w.status() != WcStatus::Success).collect();
        assert!(bad.is_empty(), "{bad:?}");
        eprintln!("{} requests completed across the delete", load.posted);
    } // QPs, MR, CQs, PD and the context close here
    assert_eq!(fds_on(&node), Vec::<String>::new(), "descriptors still open on {node}");
    let status = restore.reap().expect("rdma link delete did not finish within 60 s of closing our files");
    assert!(status.success(), "rdma link delete {name}: {status}");
    assert!(!sys.exists(), "{name} still in sysfs after the delete finished");
    let e = open_by_name(&name).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoDevice, "{e}");
    let e = Context::open(dev).map(|_| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoDevice, "{e}");

    restore.recreate().expect("re-creating the device");
    let ctx = open_by_name(&name).expect("open the re-created device");
    assert_eq!(ctx.query_port(1).unwrap().state, 4, "port ACTIVE");
}
