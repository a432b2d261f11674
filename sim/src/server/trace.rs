//! The strace-like trace: one line per command, ioctl and doorbell, to the
//! file named by `--trace` / `VERBS_SIM_TRACE` (nothing when unset).

use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A shared trace sink (cheap to clone; a no-op when off).
#[derive(Clone)]
pub struct Trace {
    out: Option<Arc<Mutex<File>>>,
    start: Instant,
}

impl Trace {
    /// Tracing to `path` (created or truncated), or off.
    pub fn new(path: Option<&Path>) -> std::io::Result<Self> {
        let out = match path {
            Some(p) => Some(Arc::new(Mutex::new(File::create(p)?))),
            None => None,
        };
        Ok(Trace { out, start: Instant::now() })
    }

    /// Whether lines are written (callers skip building them otherwise).
    pub fn on(&self) -> bool {
        self.out.is_some()
    }

    /// Writes one line, prefixed with seconds since start.
    pub fn line(&self, args: fmt::Arguments<'_>) {
        if let Some(f) = &self.out {
            let t = self.start.elapsed();
            let mut f = f.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writeln!(f, "{:>4}.{:06} {}", t.as_secs(), t.subsec_micros(), args);
        }
    }
}

/// Name of a uverbs write command (IB_USER_VERBS_CMD_*).
pub fn cmd_name(cmd: u32) -> &'static str {
    const NAMES: [&str; 41] = [
        "GET_CONTEXT", "QUERY_DEVICE", "QUERY_PORT", "ALLOC_PD", "DEALLOC_PD", "CREATE_AH", "MODIFY_AH",
        "QUERY_AH", "DESTROY_AH", "REG_MR", "REG_SMR", "REREG_MR", "QUERY_MR", "DEREG_MR", "ALLOC_MW",
        "BIND_MW", "DEALLOC_MW", "CREATE_COMP_CHANNEL", "CREATE_CQ", "RESIZE_CQ", "DESTROY_CQ", "POLL_CQ",
        "PEEK_CQ", "REQ_NOTIFY_CQ", "CREATE_QP", "QUERY_QP", "MODIFY_QP", "DESTROY_QP", "POST_SEND",
        "POST_RECV", "ATTACH_MCAST", "DETACH_MCAST", "CREATE_SRQ", "MODIFY_SRQ", "QUERY_SRQ",
        "DESTROY_SRQ", "POST_SRQ_RECV", "OPEN_XRCD", "CLOSE_XRCD", "CREATE_XSRQ", "OPEN_QP",
    ];
    NAMES.get(cmd as usize).copied().unwrap_or("?")
}
