//! Every error a public function returns goes through `?` into
//! `Box<dyn Error + Send + Sync>` (and `Box<dyn Error>`), including the
//! ones that hand a borrowed object back (issue 27). This file is the
//! proof: it compiles only if each conversion exists. The functions are
//! never called (they would need a device).

#![allow(dead_code)]

use verbs::cm::{CmId, EventChannel, EventKind, MigrateError, WaitError};
use verbs::pd::DestroyError;
use verbs::qp::{AnyQp, PostError, QpCap, QpInitAttr, RcQp, TransitionError};
use verbs::{Context, Cq, Error, Pd};

type Boxed = Box<dyn core::error::Error + Send + Sync>;
type BoxedLocal = Box<dyn core::error::Error>;

fn verbs_error(e: Error) -> Result<(), Boxed> {
    Err(e)?
}

fn post_error(e: PostError) -> Result<(), Boxed> {
    Err(e)?
}

fn transition_error(e: TransitionError<RcQp<'_>>) -> Result<(), Boxed> {
    Err(e)?
}

fn transition_error_any(e: TransitionError<AnyQp<'_, verbs::qp::Rc>>) -> Result<(), BoxedLocal> {
    Err(e)?
}

fn wait_error(e: WaitError<'_>) -> Result<(), Boxed> {
    Err(e)?
}

fn migrate_error(e: MigrateError<'_>) -> Result<(), BoxedLocal> {
    Err(e)?
}

fn destroy_error(e: DestroyError<Pd<'_>>) -> Result<(), Boxed> {
    Err(e)?
}

/// The common path: one `?` per call, borrowing errors included.
fn connect_by_hand(ctx: &Context, ch: &EventChannel) -> Result<(), Boxed> {
    let id = CmId::create(ch, verbs::cm::PortSpace::Tcp)?;
    id.resolve_addr(None, &"10.0.0.1:1".parse()?, 1000)?;
    id.wait(EventKind::AddrResolved, 1000)?;
    let pd = Pd::alloc(ctx)?;
    let cq = Cq::create(ctx, 4, None, 0)?;
    let cap = QpCap { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
    let qp = RcQp::create(&pd, QpInitAttr { send_cq: &cq, recv_cq: &cq, srq: None, cap, sq_sig_all: false })?;
    let qp = id.init_qp(qp)?;
    drop(qp);
    drop(cq);
    pd.destroy()?;
    Ok(())
}

#[test]
fn borrowed_errors_box_with_their_message() {
    let e = Error::new("ibv_modify_qp", verbs::ErrorKind::WrongState).with_detail("x");
    let b: Boxed = verbs_error(e).unwrap_err();
    assert_eq!(b.to_string(), e.to_string());
}
