//! ibv_fork_init / ibv_is_fork_initialized against the running kernel.

use super::common::rxe_name;
use verbs::fork::{fork_init, is_fork_initialized, ForkStatus};
use verbs::{discovery::devices, AccessFlags, Context, Mr, Pd};

/// Whether the mapping holding `addr` is marked "do not copy on fork".
fn dontfork(addr: usize) -> bool {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((s, e)) = range.split_once('-') {
                if let (Ok(s), Ok(e)) = (usize::from_str_radix(s, 16), usize::from_str_radix(e, 16)) {
                    inside = s <= addr && addr < e;
                    continue;
                }
            }
        }
        if inside {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                return flags.split_whitespace().any(|f| f == "dc");
            }
        }
    }
    panic!("{addr:#x} not mapped");
}

#[test]
#[ignore = "device test: needs an RDMA device (run scripts/test.sh)"]
fn fork_init_follows_the_kernels_copy_on_fork() {
    let cof = verbs::discovery::copy_on_fork().expect("RDMA netlink answers SYS_GET");
    let before = is_fork_initialized();
    if cof {
        assert_eq!(before, ForkStatus::Unneeded);
    } else {
        assert_ne!(before, ForkStatus::Unneeded);
    }
    fork_init().expect("ibv_fork_init");
    let after = is_fork_initialized();
    assert_eq!(after, if cof { ForkStatus::Unneeded } else { ForkStatus::Enabled });

    // Registering memory marks it MADV_DONTFORK only if the kernel needs it.
    let list = devices().unwrap();
    let ctx = Context::open(list.by_name(&rxe_name()).unwrap()).unwrap();
    let pd = Pd::alloc(&ctx).unwrap();
    let buf = vec![0u8; 3 * 4096];
    let addr = buf.as_ptr() as usize + 4096;
    let mr = Mr::reg(&pd, buf, AccessFlags::LOCAL_WRITE).unwrap();
    assert_eq!(dontfork(addr), !cof, "copy_on_fork={cof}");
    drop(mr);
    assert!(!dontfork(addr), "deregistration unmarks the pages");
}
