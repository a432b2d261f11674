// Owned, address-stable buffers register; destroy gives them back.
use verbs::wr::MwBind;
use verbs::{AccessFlags, Mr, Mw, MwType, PageBuf, Pd};

fn owned(pd: &Pd<'_>) {
    let v = Mr::reg(pd, vec![0u8; 64], AccessFlags::LOCAL_WRITE).unwrap();
    let b = Mr::reg(pd, vec![0u8; 64].into_boxed_slice(), AccessFlags::LOCAL_WRITE).unwrap();
    let s = Mr::reg(pd, vec![0u8; 64].leak(), AccessFlags::LOCAL_WRITE).unwrap();
    let p = Mr::reg(pd, PageBuf::new(64).unwrap(), AccessFlags::LOCAL_WRITE).unwrap();
    let a: Mr<'_> = Mr::alloc(pd, 64, AccessFlags::LOCAL_WRITE | AccessFlags::MW_BIND).unwrap();
    let _: Vec<u8> = v.destroy().unwrap();
    let _: Box<[u8]> = b.destroy().unwrap();
    let _: &'static mut [u8] = s.destroy().unwrap();
    let _: PageBuf = p.destroy().unwrap();
    // A window bound to `a` is dropped first; then `a` can go.
    let mw = Mw::alloc(pd, MwType::Type2).unwrap();
    let _ = MwBind::new(&mw, &a, a.addr(), 64, AccessFlags::REMOTE_READ);
    drop(mw);
    let _ = a.destroy();
}

fn main() {
    let _ = owned;
}
