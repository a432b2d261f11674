// A region owns its buffer: a borrowed, non-'static buffer cannot be
// registered (forgetting the region would end the borrow while the device
// may still write the memory).
use verbs::{AccessFlags, Mr, Pd};

fn borrowed(pd: &Pd<'_>) {
    let mut local = [0u8; 64];
    let mr = Mr::reg(pd, &mut local[..], AccessFlags::LOCAL_WRITE).unwrap();
    core::mem::forget(mr);
}

fn main() {
    let _ = borrowed;
}
