// The legal sequence compiles: RESET -> INIT (post_recv) -> RTR (post_recv)
// -> RTS (post_send, post_recv) -> SQD (post_send) -> RTS -> ERROR
// (post_recv) -> RESET -> destroy; and the runtime-state form.
// main() does not run it: that needs a device (see tests/device/qp.rs).
use verbs::qp::{
    AnyQp, ConnInitAttr, Rc, RcQp, RcRtrAttr, RcRtsAttr, RecvWr, SendWr, UdInitAttr, UdQp,
    UdRtrAttr, SqPsnAttr,
};

fn rc(qp: RcQp<'_>, init: ConnInitAttr, rtr: RcRtrAttr, rts: RcRtsAttr) -> Result<(), verbs::Error> {
    let recv = [RecvWr::new(1, &[])];
    let send = [SendWr::send(2, &[])];
    let mut qp = qp.into_init(init).map_err(|e| e.error)?;
    qp.post_recv(&recv)?;
    let mut qp = qp.into_rtr(rtr).map_err(|e| e.error)?;
    qp.post_recv(&recv)?;
    let mut qp = qp.into_rts(rts).map_err(|e| e.error)?;
    qp.post_send(&send)?;
    qp.post_recv(&recv)?;
    let mut qp = qp.into_sqd().map_err(|e| e.error)?;
    qp.post_send(&send)?;
    let qp = qp.resume().map_err(|e| e.error)?;
    let mut qp = qp.into_error().map_err(|e| e.error)?;
    qp.post_recv(&recv)?;
    let qp = qp.into_reset().map_err(|e| e.error)?;
    let any: AnyQp<'_, Rc> = qp.into();
    let qp = any.try_into_reset().map_err(|_| verbs::Error::new("x", verbs::ErrorKind::WrongState))?;
    qp.destroy().map_err(|e| e.error)?;
    Ok(())
}

fn ud(qp: UdQp<'_>, init: UdInitAttr) -> Result<(), verbs::Error> {
    let qp = qp.into_init(init).map_err(|e| e.error)?;
    let qp = qp.into_rtr(UdRtrAttr).map_err(|e| e.error)?;
    let mut qp = qp.into_rts(SqPsnAttr { sq_psn: 0 }).map_err(|e| e.error)?;
    qp.post_send(&[SendWr::send(3, &[])])?;
    Ok(())
}

fn main() {
    let _ = rc;
    let _ = ud;
}
