// A bound memory window keeps its region borrowed for the window's whole
// life: the region cannot be dropped (deregistered, its buffer freed) while
// the window may still grant access to it.
use verbs::wr::MwBind;
use verbs::{AccessFlags, Mr, Mw, MwType, Pd};

fn bound(pd: &Pd<'_>) {
    let mr = Mr::alloc(pd, 4096, AccessFlags::LOCAL_WRITE | AccessFlags::MW_BIND).unwrap();
    let mw = Mw::alloc(pd, MwType::Type2).unwrap();
    let bind = MwBind::new(&mw, &mr, mr.addr(), 64, AccessFlags::REMOTE_READ);
    let _ = bind.rkey();
    drop(mr);
    drop(mw);
}

fn main() {
    let _ = bound;
}
