//! Compile-fail tests for the QP typestate (trybuild): posting in a state
//! that does not allow it, skipping a transition, using a QP after
//! destroy, and destroying a CQ under a live QP do not compile; the legal
//! sequence does. Memory regions own their buffers: registering a borrowed,
//! non-`'static` buffer and dropping a region under a bound memory window
//! do not compile; every owned buffer type registers. The expected compiler messages are in `tests/ui/*.stderr`
//! (regenerate with `TRYBUILD=overwrite cargo test --test typestate_ui`
//! and review the diff).

#[test]
fn typestate_ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail_*.rs");
    t.pass("tests/ui/pass_*.rs");
}
