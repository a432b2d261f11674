//! The debug log: `VERBS_LOG_LEVEL` / `VERBS_LOG_FILE`, and the user-facing
//! `libibverbs: Warning: ...` messages.
//!
//! Two channels, as in rdma-core:
//!
//! * **Leveled log** (rdma-core `verbs_log`, `verbs_debug`, ...): written
//!   only when the message's level is at most `VERBS_LOG_LEVEL`
//!   (`0` none, `1` error, `2` warning, `3` info, `4` debug; parsed like
//!   `strtol(s, NULL, 0)`, so `0x4` works too). Output goes to
//!   `VERBS_LOG_FILE` (opened for appending) or, when that is unset or
//!   cannot be opened, to stderr — what the libibverbs README documents for
//!   debug builds. (A release build of rdma-core drops the output instead;
//!   here setting `VERBS_LOG_LEVEL` is taken as asking for it.)
//! * **Console warnings** (rdma-core's unconditional
//!   `fprintf(stderr, "libibverbs: ...")`): the messages libibverbs users
//!   know, such as the `RLIMIT_MEMLOCK` warning, always go to stderr; the
//!   "no userspace device-specific driver" warning only when
//!   `IBV_SHOW_WARNINGS` is set, as in rdma-core. Both are copied to the
//!   leveled log at warning level.
//!
//! The environment is read once per process ([`logger`]). Code and tests
//! that need a different configuration build their own [`Logger`]
//! ([`Logger::from_vars`], [`Logger::memory`]) instead of touching the
//! process environment. A program (or the C library, which must behave as
//! rdma-core's release build) can choose the process logger before its
//! first use with [`install`], e.g. `install(Logger::from_env_with(Fallback::Off))`.

use core::fmt;
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::{Mutex, OnceLock};

/// The prefix rdma-core puts on every message (`PFX` in `ibverbs.h`).
pub const PREFIX: &str = "libibverbs: ";

/// `enum verbs_log_level` (`<infiniband/driver.h>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u32)]
pub enum LogLevel {
    /// `VERBS_LOG_LEVEL_NONE` (0): nothing is logged.
    None = 0,
    /// `VERBS_LOG_ERR` (1)
    Err = 1,
    /// `VERBS_LOG_WARN` (2)
    Warn = 2,
    /// `VERBS_LOG_INFO` (3)
    Info = 3,
    /// `VERBS_LOG_DEBUG` (4)
    Debug = 4,
}

/// Parses a `VERBS_LOG_LEVEL` value the way rdma-core does
/// (`strtol(value, NULL, 0)`): optional leading blanks and sign, then a
/// decimal, `0x` hexadecimal or `0` octal number; trailing garbage is
/// ignored and no digits at all give 0. Negative values give 0.
pub fn parse_log_level(value: &str) -> u32 {
    let s = value.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    let mut v: u32 = 0;
    for c in digits.chars() {
        let Some(d) = c.to_digit(radix) else { break };
        v = v.saturating_mul(radix).saturating_add(d);
    }
    if neg {
        0
    } else {
        v
    }
}

enum Sink {
    Stderr,
    File(Mutex<File>),
    Memory(Mutex<Vec<u8>>),
}

impl Sink {
    fn write_line(&self, args: fmt::Arguments<'_>) {
        // Logging must never fail the verb that logs: write errors are
        // dropped, as rdma-core ignores vfprintf's result.
        match self {
            Sink::Stderr => {
                let _ = writeln!(std::io::stderr().lock(), "{PREFIX}{args}");
            }
            Sink::File(f) => {
                if let Ok(mut f) = f.lock() {
                    let _ = writeln!(f, "{PREFIX}{args}");
                }
            }
            Sink::Memory(m) => {
                if let Ok(mut m) = m.lock() {
                    let _ = writeln!(m, "{PREFIX}{args}");
                }
            }
        }
    }
}

/// What the leveled log does when `VERBS_LOG_LEVEL` asks for output but
/// `VERBS_LOG_FILE` is unset or cannot be opened (rdma-core's
/// `verbs_log_file_fallback`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fallback {
    /// Log to stderr: rdma-core built with `VERBS_DEBUG`, and this crate's
    /// default (setting `VERBS_LOG_LEVEL` is taken as asking for output).
    Stderr,
    /// Log nothing (the level drops to 0): rdma-core's release build, which
    /// distributions ship; the C library follows it so that an unmodified
    /// C program prints the same on both libraries.
    Off,
}

/// A log configuration and its output.
pub struct Logger {
    level: u32,
    show_warnings: bool,
    log: Sink,
    /// Where console warnings go: stderr, or the same memory buffer.
    console_is_log: bool,
}

impl fmt::Debug for Logger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Logger")
            .field("level", &self.level)
            .field("show_warnings", &self.show_warnings)
            .finish_non_exhaustive()
    }
}

impl Logger {
    /// A logger configured from the values of `VERBS_LOG_LEVEL`,
    /// `VERBS_LOG_FILE` and whether `IBV_SHOW_WARNINGS` is set.
    /// Without a usable file the log goes to stderr ([`Fallback::Stderr`]).
    pub fn from_vars(level: Option<&OsStr>, file: Option<&OsStr>, show_warnings: bool) -> Self {
        Self::from_vars_with(level, file, show_warnings, Fallback::Stderr)
    }

    /// [`Logger::from_vars`] with the given behaviour for a missing or
    /// unopenable `VERBS_LOG_FILE`.
    pub fn from_vars_with(
        level: Option<&OsStr>,
        file: Option<&OsStr>,
        show_warnings: bool,
        fallback: Fallback,
    ) -> Self {
        let mut level = level.and_then(OsStr::to_str).map_or(0, parse_log_level);
        let opened = match file {
            Some(path) if level > 0 => OpenOptions::new().append(true).create(true).open(path).ok(),
            _ => None,
        };
        let log = match opened {
            Some(f) => Sink::File(Mutex::new(f)),
            None => {
                if fallback == Fallback::Off {
                    level = 0;
                }
                Sink::Stderr
            }
        };
        Self {
            level,
            show_warnings,
            log,
            console_is_log: false,
        }
    }

    /// The logger the process environment asks for.
    pub fn from_env() -> Self {
        Self::from_env_with(Fallback::Stderr)
    }

    /// The logger the process environment asks for, with the given
    /// behaviour for a missing or unopenable `VERBS_LOG_FILE`.
    pub fn from_env_with(fallback: Fallback) -> Self {
        let level = std::env::var_os("VERBS_LOG_LEVEL");
        let file = std::env::var_os("VERBS_LOG_FILE");
        let show = std::env::var_os("IBV_SHOW_WARNINGS").is_some();
        Self::from_vars_with(level.as_deref(), file.as_deref(), show, fallback)
    }

    /// A logger that keeps everything (leveled log and console warnings) in
    /// memory, for tests; read it back with [`Logger::captured`].
    pub fn memory(level: LogLevel, show_warnings: bool) -> Self {
        Self {
            level: level as u32,
            show_warnings,
            log: Sink::Memory(Mutex::new(Vec::new())),
            console_is_log: true,
        }
    }

    /// The text captured by a [`Logger::memory`] logger (empty otherwise).
    pub fn captured(&self) -> String {
        match &self.log {
            Sink::Memory(m) => m
                .lock()
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// The configured `VERBS_LOG_LEVEL` (any value; above 4 logs everything).
    pub fn level(&self) -> u32 {
        self.level
    }

    /// Whether a message of `level` would be written to the leveled log.
    pub fn enabled(&self, level: LogLevel) -> bool {
        level != LogLevel::None && level as u32 <= self.level
    }

    /// Writes `args` to the leveled log if `level` is enabled (rdma-core
    /// `verbs_log`).
    pub fn log(&self, level: LogLevel, args: fmt::Arguments<'_>) {
        if self.enabled(level) {
            self.log.write_line(args);
        }
    }

    /// A user-facing warning (rdma-core's `fprintf(stderr, PFX ...)`):
    /// printed to stderr if `always` or `IBV_SHOW_WARNINGS` is set, and
    /// copied to the leveled log at warning level.
    pub fn console(&self, always: bool, args: fmt::Arguments<'_>) {
        let shown = always || self.show_warnings;
        if self.console_is_log {
            if shown || self.enabled(LogLevel::Warn) {
                self.log.write_line(args);
            }
            return;
        }
        if shown {
            Sink::Stderr.write_line(args);
        }
        // Avoid printing the same line twice when the log also goes to stderr.
        let log_is_stderr = matches!(self.log, Sink::Stderr);
        if self.enabled(LogLevel::Warn) && !(shown && log_is_stderr) {
            self.log.write_line(args);
        }
    }
}

static LOGGER: OnceLock<Logger> = OnceLock::new();

/// The process-wide logger: the one [`install`]ed, or else configured from
/// the environment ([`Logger::from_env`]) on first use.
pub fn logger() -> &'static Logger {
    LOGGER.get_or_init(Logger::from_env)
}

/// Makes `logger` the process-wide logger. Only before the first use of
/// [`logger`] (or the first message): afterwards the logger is fixed and
/// `logger` is handed back.
pub fn install(logger: Logger) -> Result<(), Logger> {
    LOGGER.set(logger)
}

/// Logs at error level through the process logger (`verbs_err`).
pub fn err(args: fmt::Arguments<'_>) {
    logger().log(LogLevel::Err, args);
}

/// Logs at warning level through the process logger (`verbs_warn`).
pub fn warn(args: fmt::Arguments<'_>) {
    logger().log(LogLevel::Warn, args);
}

/// Logs at info level through the process logger (`verbs_info`).
pub fn info(args: fmt::Arguments<'_>) {
    logger().log(LogLevel::Info, args);
}

/// Logs at debug level through the process logger (`verbs_debug`).
pub fn debug(args: fmt::Arguments<'_>) {
    logger().log(LogLevel::Debug, args);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_parses_like_strtol_base_0() {
        assert_eq!(parse_log_level("4"), 4);
        assert_eq!(parse_log_level("  3\n"), 3);
        assert_eq!(parse_log_level("0x4"), 4);
        assert_eq!(parse_log_level("010"), 8);
        assert_eq!(parse_log_level("2junk"), 2);
        assert_eq!(parse_log_level("junk"), 0);
        assert_eq!(parse_log_level("-1"), 0);
        assert_eq!(parse_log_level(""), 0);
        assert_eq!(parse_log_level("99999999999999999999"), u32::MAX);
    }

    #[test]
    fn leveled_log_respects_the_level() {
        let l = Logger::memory(LogLevel::Info, false);
        l.log(LogLevel::Debug, format_args!("hidden"));
        l.log(LogLevel::Info, format_args!("shown {}", 1));
        l.log(LogLevel::Err, format_args!("error"));
        assert_eq!(l.captured(), "libibverbs: shown 1\nlibibverbs: error\n");
    }

    #[test]
    fn console_warnings_follow_ibv_show_warnings() {
        let quiet = Logger::memory(LogLevel::None, false);
        quiet.console(false, format_args!("optional"));
        quiet.console(true, format_args!("always"));
        assert_eq!(quiet.captured(), "libibverbs: always\n");
        let shown = Logger::memory(LogLevel::None, true);
        shown.console(false, format_args!("optional"));
        assert_eq!(shown.captured(), "libibverbs: optional\n");
    }

    #[test]
    fn log_file_is_appended_to() {
        let dir = std::env::temp_dir().join(format!("verbs-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("log");
        std::fs::write(&path, "before\n").unwrap();
        let l = Logger::from_vars(Some(OsStr::new("4")), Some(path.as_os_str()), false);
        l.log(LogLevel::Debug, format_args!("debug line"));
        l.log(LogLevel::Err, format_args!("err line"));
        drop(l);
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "before\nlibibverbs: debug line\nlibibverbs: err line\n"
        );
        // Release behaviour (rdma-core without VERBS_DEBUG): no file, no log.
        let off = Logger::from_vars_with(Some(OsStr::new("4")), None, false, Fallback::Off);
        assert_eq!(off.level(), 0);
        assert!(!off.enabled(LogLevel::Err));
        let bad = dir.join("no-such-dir").join("log");
        let off = Logger::from_vars_with(Some(OsStr::new("4")), Some(bad.as_os_str()), false, Fallback::Off);
        assert_eq!(off.level(), 0);
        let on = Logger::from_vars_with(Some(OsStr::new("4")), None, false, Fallback::Stderr);
        assert!(on.enabled(LogLevel::Debug));
        // Level 0: the file is not even opened, nothing is written.
        let l = Logger::from_vars(Some(OsStr::new("0")), Some(path.as_os_str()), false);
        l.log(LogLevel::Err, format_args!("dropped"));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
