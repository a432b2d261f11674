//! A sysfs tree the caller controls can name any character device as a
//! device's uverbs file: here `/dev/null` (1:3). `Context::open` must see
//! that it is not a uverbs device from how the file answers, not from the
//! paths, and must never adopt an fd number that the file did not hand out
//! (before the check, the all-zero `GET_CONTEXT` "response" made the
//! context own fd 0, stdin, and close it on drop).

use std::path::Path;

use rustix::fd::AsFd;
use verbs::log::{LogLevel, Logger};
use verbs::ErrorKind;

use super::{fixture, TempDir};

/// Writes `text` to `root/rel`, creating the directories.
fn put(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A sysfs tree with device rxe0 whose uverbs entry is `null`, numbered 1:3.
fn null_tree(root: &Path) {
    put(root, "class/infiniband/rxe0/node_guid", "5054:00ff:fe12:3456\n");
    put(root, "class/infiniband/rxe0/node_type", "1: CA\n");
    put(root, "class/infiniband/rxe0/ports/1/state", "4: ACTIVE\n");
    put(root, "class/infiniband/rxe0/ports/1/link_layer", "Ethernet\n");
    put(root, "class/infiniband_verbs/abi_version", "6\n");
    put(root, "class/infiniband_verbs/null/abi_version", "2\n");
    put(root, "class/infiniband_verbs/null/dev", "1:3\n");
    put(root, "class/infiniband_verbs/null/ibdev", "rxe0\n");
}

/// `(st_dev, st_ino)` of fd 0, or `None` if it is closed.
fn stdin_identity() -> Option<(u64, u64)> {
    let st = rustix::fs::fstat(std::io::stdin().as_fd()).ok()?;
    Some((st.st_dev, st.st_ino))
}

#[test]
fn context_open_of_dev_null_named_by_a_fixture_tree_is_refused_and_adopts_no_fd() {
    let dir = TempDir::new("null-uverbs");
    null_tree(&dir.0);
    let list = fixture("rxe")
        .sysfs_root(&dir.0)
        .dev_dir("/dev")
        .devices_with_logger(&Logger::memory(LogLevel::None, false))
        .unwrap();
    let d = list.by_name("rxe0").unwrap();
    // The paths say "uverbs device": the file is /dev/null and sysfs lists
    // its number, so the path and number checks pass.
    assert_eq!(d.uverbs_path(), Path::new("/dev/null"));
    assert_eq!(d.dev_t(), (1, 3));
    let before = stdin_identity();
    match verbs::Context::open(d) {
        Ok(ctx) => {
            let fd = rustix::fd::AsRawFd::as_raw_fd(&ctx.async_fd());
            // Never close what the context wrongly owns: that would close
            // a file this process holds elsewhere.
            core::mem::forget(ctx);
            panic!("Context::open accepted /dev/null and adopted fd {fd} as its async event file");
        }
        Err(e) => {
            assert_eq!((e.kind(), e.verb()), (ErrorKind::NotUverbsDevice, "ibv_open_device"), "{e}");
            assert!(e.detail().is_some_and(|d| d.contains("no response")), "{e:?}");
        }
    }
    // Nothing this process held was closed by the refused open.
    assert_eq!(stdin_identity(), before);
    // A file opened now still works: no fd was double-owned.
    let f = std::fs::File::open("/dev/null").unwrap();
    assert!(rustix::fs::fstat(f.as_fd()).is_ok());
}
