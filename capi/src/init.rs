//! The library's load-time initialisation (rdma-core's `ibverbs_init`
//! reads `VERBS_LOG_LEVEL` / `VERBS_LOG_FILE` the same way): the process
//! logger of the `verbs` crate is installed with rdma-core's release-build
//! behaviour before any entry point can log, so that `VERBS_LOG_LEVEL`
//! without a usable `VERBS_LOG_FILE` prints nothing, as with the library
//! distributions ship, and with a file every failure a C caller sees as an
//! errno value is also written there with the verb and its cause
//! ([`crate::errno::errno_of`]).
//!
//! # Safety
//!
//! `#[link_section = ".init_array"]` is the unsafe operation: the section
//! holds pointers the dynamic loader calls once, with `(argc, argv, envp)`,
//! when it loads the library. The one entry placed there is a pointer to an
//! `extern "C" fn()`: the System V ABI lets a callee ignore arguments passed
//! in registers, and the function reads the environment through `std`,
//! needs nothing else initialised, cannot unwind (it does not panic:
//! `install` reports an already-set logger as a value) and returns.
#![allow(unsafe_code)]

use verbs::log::{install, Fallback, Logger};

extern "C" fn init() {
    // Only the first logger wins; a second load of the library (dlopen'd
    // twice) finds it set and keeps it.
    let _ = install(Logger::from_env_with(Fallback::Off));
}

/// The constructor entry (see the module's Safety note).
#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;
