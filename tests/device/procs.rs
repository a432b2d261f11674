//! The two programs of a pair test (a server and a client: ours, rdma-core's or perftest's):
//! start them with their pipes drained by threads, wait for the server to listen before the
//! client starts, and show BOTH sides' exit status, stdout and stderr in every failure
//! message ([`both`]), so that a failure says what each program saw.
//!
//! The client starts exactly once, after the server listens: a client that is retried until
//! it gets through hides its first failure (issue #24 item 7: the C `ucmatose` server had
//! already finished with an earlier attempt's connections, and the last retry, refused,
//! was all the failure message showed).

use core::fmt;
use core::time::Duration;
use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// What a pipe delivered so far, filled by its draining thread.
type Sink = Arc<Mutex<Vec<u8>>>;

/// A started program and the threads draining its pipes.
pub(crate) struct Running {
    name: String,
    child: Child,
    out: (Sink, JoinHandle<()>),
    err: (Sink, JoinHandle<()>),
}

/// A program that exited (or was killed at its deadline: `code` None).
pub(crate) struct Finished {
    pub(crate) name: String,
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    /// Where a program killed at its deadline was waiting, and the kernel's connection
    /// manager ids then.
    pub(crate) hung: Option<String>,
    /// Killed because [`Running::finish_unless`]'s `stop` said it could only hang.
    pub(crate) stopped: bool,
}

impl fmt::Display for Finished {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let code = match self.code {
            Some(c) => format!("exit {c}"),
            None => "killed at its deadline (or by a signal)".to_owned(),
        };
        write!(f, "{}: {code}\n--- stdout\n{}--- stderr\n{}", self.name, self.stdout, self.stderr)?;
        if let Some(h) = &self.hung {
            write!(f, "--- at the deadline\n{h}")?;
        }
        Ok(())
    }
}

/// Both sides of a pair, for failure messages.
pub(crate) fn both(server: &Finished, client: &Finished) -> String {
    format!("=== server {server}\n=== client {client}")
}

fn drain(mut r: impl Read + Send + 'static) -> (Sink, JoinHandle<()>) {
    let sink = Sink::default();
    let to = Arc::clone(&sink);
    let t = std::thread::spawn(move || {
        let mut b = [0u8; 4096];
        loop {
            match r.read(&mut b) {
                Ok(0) => break,
                Ok(n) => to.lock().expect("pipe sink").extend_from_slice(&b[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    });
    (sink, t)
}

fn text(sink: &Sink) -> String {
    String::from_utf8_lossy(&sink.lock().expect("pipe sink")).into_owned()
}

/// `prog` with its C stdio line-buffered (`stdbuf -oL -eL`, when there is one): a C program
/// writing into a pipe buffers its stdout fully, so one killed at its deadline would show
/// nothing of how far it got.
fn command(prog: &str) -> Command {
    const STDBUF: &str = "/usr/bin/stdbuf";
    if Path::new(STDBUF).exists() {
        let mut c = Command::new(STDBUF);
        c.args(["-oL", "-eL", prog]);
        c
    } else {
        Command::new(prog)
    }
}

/// What a process that did not exit in time was doing: its kernel wait channel and stack
/// (as root), and the connection manager ids (`rdma res show cm_id`).
fn hung_state(pid: u32) -> String {
    let read = |f: &str| std::fs::read_to_string(format!("/proc/{pid}/{f}")).unwrap_or_else(|e| format!("({e})\n"));
    let ids = std::process::Command::new("rdma")
        .args(["res", "show", "cm_id"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_else(|e| format!("(rdma: {e})"));
    format!("wchan: {}\nkernel stack:\n{}cm ids:\n{ids}", read("wchan"), read("stack"))
}

fn spawn(name: String, mut cmd: Command) -> Running {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot run {name}: {e}"));
    let out = drain(child.stdout.take().expect("stdout pipe"));
    let err = drain(child.stderr.take().expect("stderr pipe"));
    Running { name, child, out, err }
}

/// Starts `prog args` in the test's environment.
pub(crate) fn start(prog: &str, args: &[String]) -> Running {
    let mut cmd = command(prog);
    cmd.args(args);
    spawn(format!("{prog} {}", args.join(" ")), cmd)
}

/// Starts `prog args` on the `libibverbs.so.1` in `lib` (our C library), or on rdma-core's
/// with `None`; the name in messages says which.
pub(crate) fn start_on(prog: &str, args: &[String], lib: Option<&Path>) -> Running {
    let mut cmd = command(prog);
    cmd.args(args).env_remove("LD_LIBRARY_PATH");
    if let Some(d) = lib {
        cmd.env("LD_LIBRARY_PATH", d);
    }
    let on = if lib.is_some() { "[our libibverbs]" } else { "[rdma-core]" };
    spawn(format!("{on} {prog} {}", args.join(" ")), cmd)
}

impl Running {
    /// Waits for the program to exit until `deadline`, then kills it. Returns its status
    /// (None: killed) and everything it printed.
    pub(crate) fn finish(self, deadline: Instant) -> Finished {
        self.finish_unless(deadline, |_| false)
    }

    /// [`Running::finish`], but kills the program at once when `stop` (given its stdout so
    /// far) says it can only hang from there.
    pub(crate) fn finish_unless(mut self, deadline: Instant, stop: impl Fn(&str) -> bool) -> Finished {
        let (mut hung, mut stopped) = (None, false);
        let code = loop {
            match self.child.try_wait().expect("try_wait") {
                Some(status) => break status.code(),
                None if stop(&text(&self.out.0)) => {
                    hung = Some("stopped early: it could only hang from there\n".to_owned());
                    stopped = true;
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
                None if Instant::now() > deadline => {
                    hung = Some(hung_state(self.child.id()));
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
                None => std::thread::sleep(Duration::from_millis(20)),
            }
        };
        self.out.1.join().expect("stdout reader");
        self.err.1.join().expect("stderr reader");
        Finished { name: self.name, code, stdout: text(&self.out.0), stderr: text(&self.err.0), hung, stopped }
    }

    /// True once the program has exited.
    pub(crate) fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Waits until `ready()` (the server listens); panics with the server's output if it
    /// exits first or `deadline` passes.
    pub(crate) fn until(mut self, what: &str, ready: impl Fn() -> bool, deadline: Instant) -> Running {
        while !ready() {
            if self.exited() || Instant::now() > deadline {
                let name = self.name.clone();
                panic!("{name}: never {what}:\n=== server {}", self.finish(Instant::now()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self
    }
}

/// siw can lose the initiator's first message: `siw_accept` sends the MPA reply, then hands
/// the socket to the QP (`siw_qp_socket_assoc`). An FPDU that arrives in between meets the
/// connection manager's `data_ready`, which ignores data once the endpoint is in RDMA mode,
/// and nothing wakes the QP's receive path for it later. In a protocol where the client
/// speaks first (rping, perftest's `-R` exchange) both sides then wait for each other
/// forever, while the server's TCP socket holds the unread bytes. Seen in the cm soak
/// (`scripts/cm-soak.sh`) under TCG: the C rping client blocked in a futex, our server
/// waiting for its first message, no error in the kernel log.
///
/// [`SiwStall::check`] says true once an established TCP socket on the server's `port`
/// has held unread bytes for [`SiwStall::GRACE`] on end (siw reads its sockets in softirq
/// context as data arrives, so bytes that stay are bytes it will never read): the attempt
/// can only hang, and is run again.
pub(crate) struct SiwStall {
    port: u16,
    since: core::cell::Cell<Option<Instant>>,
}

impl SiwStall {
    /// How long unread bytes must stay before the connection counts as stalled.
    pub(crate) const GRACE: Duration = Duration::from_secs(5);

    pub(crate) fn new(port: u16) -> Self {
        SiwStall { port, since: core::cell::Cell::new(None) }
    }

    /// True once the server's socket has held unread bytes for [`Self::GRACE`].
    pub(crate) fn check(&self) -> bool {
        if !unread_on(self.port) {
            self.since.set(None);
            return false;
        }
        let since = *self.since.get().get_or_insert_with(Instant::now);
        self.since.set(Some(since));
        since.elapsed() > Self::GRACE
    }
}

/// True if an established TCP socket (IPv4 or IPv6) with local port `port` has bytes in
/// its receive queue (`/proc/net/tcp{,6}`: state 01, `tx_queue:rx_queue` in hex).
fn unread_on(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).unwrap_or_default().lines().skip(1).any(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() > 4
                && cols[3] == "01"
                && cols[1].rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok()) == Some(port)
                && cols[4].rsplit(':').next().and_then(|q| u32::from_str_radix(q, 16).ok()).is_some_and(|q| q > 0)
        })
    })
}
