//! ibv_reg_mr / ibv_rereg_mr / ibv_dereg_mr on both soft devices, checked
//! against what the kernel reports (`rdma resource show mr`, iproute2).
#![allow(unsafe_code)]

use super::common::{rxe_name, siw_name};
use verbs::mr::{AccessFlags, Mr, Rereg};
use verbs::error::Errno;
use verbs::{discovery::devices, Context, ErrorKind, Pd};

const RW: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ);

fn open(name: &str) -> Context {
    let list = devices().expect("ibv_get_device_list");
    Context::open(list.by_name(name).unwrap()).unwrap()
}

/// The kernel's view of the MR with `lkey` on `dev`: (mrlen, pdn), from
/// `rdma -d resource show mr`; `None` if the kernel lists no such MR.
fn kernel_mr(dev: &str, lkey: u32) -> Option<(u64, u32)> {
    let out = std::process::Command::new("rdma")
        .args(["-d", "resource", "show", "mr"])
        .output()
        .expect("running `rdma resource show mr` (iproute2)");
    assert!(out.status.success(), "rdma: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let want = format!("lkey {lkey:#x}");
    let line = text.lines().find(|l| l.starts_with(&format!("dev {dev} ")) && l.contains(&format!("{want} ")))?;
    let field = |name: &str| -> String {
        let mut it = line.split_whitespace();
        it.find(|w| *w == name).and_then(|_| it.next()).unwrap_or_else(|| panic!("no {name} in {line:?}")).to_owned()
    };
    Some((field("mrlen").parse().unwrap(), field("pdn").parse().unwrap()))
}

fn reg_dereg(name: &str, access: AccessFlags) {
    let ctx = open(name);
    let pd = Pd::alloc(&ctx).unwrap();
    let buf = vec![7u8; 3 * 4096 + 100];
    let (addr, len) = (buf.as_ptr() as u64, buf.len());
    let mr = Mr::reg(&pd, buf, access).expect("ibv_reg_mr");
    assert_eq!((mr.addr(), mr.len(), mr.iova(), mr.access()), (addr, len, addr, access));
    let (mrlen, _) = kernel_mr(name, mr.lkey()).expect("the kernel lists the new MR");
    assert_eq!(mrlen, len as u64);
    let lkey = mr.lkey();
    let mut buf = mr.destroy().expect("ibv_dereg_mr");
    assert_eq!(kernel_mr(name, lkey), None, "deregistered MR still listed");
    // The buffer is ours again once the region is gone, unmoved.
    assert_eq!((buf.as_ptr() as u64, buf.len()), (addr, len));
    buf[0] = 1;

    // Dropping deregisters too; a second region on the same memory works.
    let mr = Mr::reg(&pd, buf, AccessFlags::LOCAL_WRITE).expect("ibv_reg_mr again");
    let lkey = mr.lkey();
    assert!(kernel_mr(name, lkey).is_some());
    drop(mr);
    assert_eq!(kernel_mr(name, lkey), None, "dropped MR still listed");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_reg_mr_dereg_mr() {
    reg_dereg(&rxe_name(), RW | AccessFlags::REMOTE_ATOMIC | AccessFlags::MW_BIND);
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_reg_mr_dereg_mr() {
    reg_dereg(&siw_name(), RW);
}

fn bad_args(name: &str) {
    let ctx = open(name);
    let pd = Pd::alloc(&ctx).unwrap();
    let mut buf = vec![0u8; 4096];
    for access in [
        AccessFlags::REMOTE_WRITE,
        AccessFlags::REMOTE_ATOMIC,
        AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE,
    ] {
        let e = Mr::reg(&pd, buf, access).unwrap_err();
        assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_reg_mr", ErrorKind::InvalidArgument, None), "{access:?}");
        // A refused registration gives the buffer back.
        buf = e.buf.expect("the buffer comes back");
    }
    let iova = buf.as_ptr() as u64 + 1;
    let e = Mr::reg_iova(&pd, buf, iova, AccessFlags::LOCAL_WRITE).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::InvalidArgument, None), "iova page offset");
    let buf = e.buf.unwrap();

    // Memory that is not mapped: the kernel cannot pin it (EFAULT).
    let len = 2 * 4096;
    // SAFETY: a fresh anonymous private mapping at a kernel-chosen address
    // replaces nothing of ours.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // SAFETY: `p..p+len` is the mapping made above, referenced by nothing;
    // afterwards only its (dangling) address is used, never dereferenced.
    assert_eq!(unsafe { libc::munmap(p, len) }, 0);
    let p = p.cast::<u8>();
    // SAFETY: nothing references the range (it is not even mapped); the
    // registration is expected to fail.
    let e = unsafe { Mr::reg_raw(&pd, p, len, p as u64, AccessFlags::LOCAL_WRITE) }.unwrap_err();
    assert_eq!(e.verb(), "ibv_reg_mr");
    assert_eq!(e.kind(), ErrorKind::BadAddress);
    assert_eq!(e.raw_os_error(), libc::EFAULT);
    assert!(e.to_string().contains("not (fully) mapped"), "{e}");

    // On-demand paging is not offered by the soft devices in the test VM:
    // the kernel's ib_check_mr_access refuses it (EOPNOTSUPP).
    let e = Mr::reg(&pd, buf, AccessFlags::LOCAL_WRITE | AccessFlags::ON_DEMAND).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_reg_mr", ErrorKind::Unsupported));
    assert_eq!(e.buf.map(|b| b.len()), Some(4096), "the kernel's refusal gives the buffer back");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_reg_mr_bad_args() {
    bad_args(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_reg_mr_bad_args() {
    bad_args(&siw_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_rereg_mr() {
    let name = rxe_name();
    let ctx = open(&name);
    let pd = Pd::alloc(&ctx).unwrap();
    let pd2 = Pd::alloc(&ctx).unwrap();
    let buf = vec![0u8; 8192];
    let other = vec![0u8; 4096];
    let mut mr = Mr::reg(&pd, buf, AccessFlags::LOCAL_WRITE).unwrap();
    let (_, pdn1) = kernel_mr(&name, mr.lkey()).unwrap();

    // Access change (rxe implements IB_MR_REREG_ACCESS).
    mr.rereg(Rereg { access: Some(RW), ..Default::default() }).expect("rereg access");
    assert_eq!(mr.access(), RW);

    // PD change: the kernel now counts the MR in the other PD.
    mr.rereg(Rereg { pd: Some(&pd2), ..Default::default() }).expect("rereg pd");
    assert_eq!(mr.pd().handle(), pd2.handle());
    let (mrlen, pdn2) = kernel_mr(&name, mr.lkey()).expect("MR still listed after rereg");
    assert_ne!(pdn2, pdn1, "the kernel's MR did not move to the new PD");
    assert_eq!(mrlen, 8192);

    // Bad arguments are refused before the kernel is asked.
    let e = mr.rereg(Rereg::default()).unwrap_err();
    assert_eq!((e.verb(), e.kind(), e.errno()), ("ibv_rereg_mr", ErrorKind::InvalidArgument, None));
    let e = mr.rereg(Rereg { access: Some(AccessFlags::REMOTE_WRITE), ..Default::default() }).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::InvalidArgument, None));
    assert_eq!(mr.access(), RW, "a refused rereg changes nothing");

    // mlx5 (the simulated ConnectX) re-registers a translation change.
    #[cfg(feature = "mlx5")]
    if ctx.provider() == verbs::ProviderKind::Mlx5 {
        return rereg_translation_maps_the_new_buffer(&name, mr, other, pdn2);
    }
    // rxe's rereg_user_mr refuses translation changes (EOPNOTSUPP); the
    // region stays as it was (and `other` is leaked: after a refused
    // translation change the registration's memory is the driver's word).
    let e = mr.rereg(Rereg { buf: Some(other), ..Default::default() }).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_rereg_mr", ErrorKind::Unsupported));
    assert_eq!(mr.len(), 8192);
    assert_eq!(kernel_mr(&name, mr.lkey()), Some((8192, pdn2)));
    mr.destroy().expect("ibv_dereg_mr after rereg");
}

/// mlx5_ib_rereg_user_mr honours a translation change (a new umem, under
/// a new mkey when the old one cannot take it): the region is then `other`
/// (4096 bytes in the kernel's MR list, in the same PD), the old buffer
/// comes back untouched, and an RDMA WRITE through the region's rkey lands
/// in `other`, nowhere else.
#[cfg(feature = "mlx5")]
fn rereg_translation_maps_the_new_buffer(name: &str, mut mr: Mr<'_, Vec<u8>>, other: Vec<u8>, pdn: u32) {
    use super::rig::{init_attr, rc_pair, CAP};
    use core::time::Duration;
    use std::time::Instant;
    use verbs::wr::{SendFlags, SendWr};
    use verbs::{Cq, Wc, WcStatus};
    let old = mr.rereg(Rereg { buf: Some(other), ..Default::default() }).expect("rereg translation on mlx5");
    let old = old.expect("the old buffer given back");
    assert_eq!((old.len(), mr.len()), (8192, 4096));
    assert!(old.iter().all(|&b| b == 0));
    assert_eq!(kernel_mr(name, mr.lkey()), Some((4096, pdn)));
    let pd = mr.pd();
    let ctx = pd.context();
    let (cq, cq2) = (Cq::create(ctx, 8, None, 0).unwrap(), Cq::create(ctx, 8, None, 0).unwrap());
    let (mut a, _b) = rc_pair(pd, init_attr(&cq, &cq, None, CAP), init_attr(&cq2, &cq2, None, CAP));
    let data = [0xa5u8; 32];
    let wr = SendWr::rdma_write(1, &[], mr.addr() + 100, mr.rkey()).inline(&data);
    a.post_send(&[wr.flags(SendFlags::SIGNALED)]).expect("ibv_post_send");
    let mut wc = [Wc::ZERO; 1];
    let deadline = Instant::now() + Duration::from_secs(10);
    while cq.poll(&mut wc).expect("ibv_poll_cq") == 0 {
        assert!(Instant::now() < deadline, "no completion of the RDMA WRITE within 10 s");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(wc[0].status(), WcStatus::Success, "{:?}", wc[0]);
    drop((a, _b));
    let other = mr.destroy().expect("ibv_dereg_mr after rereg");
    assert_eq!(other[100..132], data, "the WRITE through the re-registered rkey");
    assert!(other[..100].iter().chain(&other[132..]).all(|&b| b == 0), "bytes outside the WRITE changed");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_rereg_mr_unsupported() {
    let name = siw_name();
    let ctx = open(&name);
    let pd = Pd::alloc(&ctx).unwrap();
    let buf = vec![0u8; 4096];
    let mut mr = Mr::reg(&pd, buf, AccessFlags::LOCAL_WRITE).unwrap();
    let e = mr.rereg(Rereg { access: Some(RW), ..Default::default() }).unwrap_err();
    assert_eq!((e.verb(), e.kind()), ("ibv_rereg_mr", ErrorKind::Unsupported));
    assert_eq!(e.raw_os_error(), libc::EOPNOTSUPP);
    assert_eq!(mr.access(), AccessFlags::LOCAL_WRITE);
    assert!(kernel_mr(&name, mr.lkey()).is_some());
}

/// Zero-length regions are the kernel's to judge (issue 29), which pins
/// the pages a range touches: rxe registers an empty region at an address
/// inside a page and refuses one at a page start (no page: `EINVAL`), and so
/// does mlx5 (mlx5_ib_reg_user_mr takes the range through ib_umem_get too:
/// the simulated ConnectX does the same); siw
/// refuses both (`EINVAL`). An empty `Vec` that never allocated points
/// into page 0, which rxe cannot pin (`EFAULT`). On rxe, zero-byte RDMA
/// WRITE and READ to and from the empty region succeed, one byte is a
/// remote access error, and the bytes around it stay as they were.
fn zero_length(name: &str) {
    use super::rig::{init_attr, rc_pair, wait, CAP};
    use verbs::wr::{SendFlags, SendWr, Sge};
    use verbs::{Cq, WcStatus};
    let ctx = open(name);
    let pd = Pd::alloc(&ctx).unwrap();
    let rxe = name == rxe_name();
    let e = Mr::reg(&pd, Vec::new(), AccessFlags::LOCAL_WRITE).unwrap_err();
    let want = if rxe { (ErrorKind::BadAddress, Some(Errno::FAULT)) } else { (ErrorKind::InvalidArgument, Some(Errno::INVAL)) };
    assert_eq!((e.kind(), e.errno()), want, "empty Vec: {e}");
    assert!(e.buf.is_some(), "the empty Vec comes back");
    // Empty slices of a live buffer: one inside a page, one at a page start.
    let whole: &'static mut [u8] = Box::leak(vec![b'x'; 3 * 4096].into_boxed_slice());
    let base = whole.as_ptr() as usize;
    let at_page = base.next_multiple_of(4096) - base;
    let inside = if at_page == 100 { 101 } else { 100 };
    let (p1, p2) = (inside.min(at_page), inside.max(at_page));
    let (lo, rest) = whole.split_at_mut(p1);
    let (mid, tail) = rest.split_at_mut(p2 - p1);
    let (e1, mid) = mid.split_at_mut(0);
    let (e2, tail) = tail.split_at_mut(0);
    let (empty_inside, empty_at_page) = if inside < at_page { (e1, e2) } else { (e2, e1) };
    let e = Mr::reg(&pd, empty_at_page, RW).unwrap_err();
    assert_eq!((e.kind(), e.errno()), (ErrorKind::InvalidArgument, Some(Errno::INVAL)), "page start: {e}");
    let addr = empty_inside.as_ptr() as u64;
    let empty = Mr::reg(&pd, empty_inside, RW);
    if !rxe {
        let e = empty.unwrap_err();
        assert_eq!((e.kind(), e.errno()), (ErrorKind::InvalidArgument, Some(Errno::INVAL)), "siw: {e}");
        return;
    }
    let z = empty.expect("rxe registers an empty region inside a page");
    assert!(z.is_empty() && z.addr() == addr, "{z:?}");
    let cq = Cq::create(&ctx, 16, None, 0).unwrap();
    let (mut a, _b) = rc_pair(&pd, init_attr(&cq, &cq, None, CAP), init_attr(&cq, &cq, None, CAP));
    let sig = SendFlags::SIGNALED;
    let none = [Sge::from_mr(&z, 0, 0)];
    a.post_send(&[SendWr::rdma_write(1, &none, z.addr(), z.rkey()).flags(sig)]).expect("0-byte write");
    a.post_send(&[SendWr::rdma_read(2, &none, z.addr(), z.rkey()).flags(sig)]).expect("0-byte read");
    let c = wait(&cq, 2);
    assert!(c.iter().all(|w| w.status() == WcStatus::Success), "{c:?}");
    a.post_send(&[SendWr::rdma_write(3, &[], z.addr(), z.rkey()).inline(b"!").flags(sig)]).expect("1-byte write");
    let c = wait(&cq, 1);
    assert_eq!((c[0].wr_id(), c[0].status()), (3, WcStatus::RemAccessErr), "{c:?}");
    assert!([&*lo, &*mid, &*tail].iter().all(|p| p.iter().all(|&b| b == b'x')), "a byte landed");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn rxe_zero_length_regions() {
    zero_length(&rxe_name());
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn siw_zero_length_regions() {
    zero_length(&siw_name());
}
