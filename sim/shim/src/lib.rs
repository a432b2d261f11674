//! LD_PRELOAD shim for the simulated ConnectX (see `verbs-sim`).
