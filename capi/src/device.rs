//! # Safety
//!
//! Devices: `ibv_get_device_list`, `ibv_free_device_list`,
//! `ibv_get_device_name`, `ibv_get_device_guid`, `ibv_get_device_index`.
//!
//! Every `struct ibv_device` we hand out is the first field of a leaked
//! (never freed) [`CDevice`] recorded in [`REGISTRY`]; a device pointer
//! from C is accepted only if it is one of them ([`lookup`]), so a stale or
//! foreign pointer gives `EINVAL` instead of a wild read. A device found
//! again by a later `ibv_get_device_list` reuses its entry (C programs keep
//! `ibv_device *` across list calls, as rdma-core allows while a context
//! is open). The list array is `calloc`ed and released with `free`.
#![allow(unsafe_code)]

use core::ffi::{c_char, c_int};
use core::mem::size_of;
use std::sync::Mutex;

use verbs::discovery::{self, Device};
use verbs::ErrorKind;

use crate::abi::device::{IbvDevice, IbvDeviceOps};
use crate::errno::{copy_cstr, errno_of, fail_neg1, fail_null, set_errno};

/// A device as C sees it (`ibv`, first) and as the `verbs` crate knows it.
#[repr(C)]
pub(crate) struct CDevice {
    pub(crate) ibv: IbvDevice,
    pub(crate) dev: Device,
}

/// Address of a leaked [`CDevice`]; only ever read through `&'static`.
#[derive(Clone, Copy, PartialEq, Eq)]
struct DevAddr(usize);

/// Every device ever listed (bounded by the devices the machine has had).
static REGISTRY: Mutex<Vec<(DevAddr, &'static CDevice)>> = Mutex::new(Vec::new());

fn registry() -> std::sync::MutexGuard<'static, Vec<(DevAddr, &'static CDevice)>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// `ibv_device.transport_type` from the node type (rdma-core's mapping).
fn transport_of(dev: &Device) -> c_int {
    dev.transport().as_raw()
}

fn intern(dev: Device) -> &'static CDevice {
    let mut reg = registry();
    if let Some((_, d)) = reg.iter().find(|(_, d)| {
        d.dev.name() == dev.name() && d.dev.dev_name() == dev.dev_name() && d.dev.dev_t() == dev.dev_t()
    }) {
        return d;
    }
    let mut ibv = IbvDevice {
        _ops: IbvDeviceOps { _dummy1: None, _dummy2: None },
        node_type: dev.node_type().as_raw(),
        transport_type: transport_of(&dev),
        name: [0; 64],
        dev_name: [0; 64],
        dev_path: [0; 256],
        ibdev_path: [0; 256],
    };
    copy_cstr(&mut ibv.name, dev.name());
    copy_cstr(&mut ibv.dev_name, dev.dev_name());
    copy_cstr(&mut ibv.dev_path, &dev.sysfs_path().to_string_lossy());
    copy_cstr(&mut ibv.ibdev_path, &dev.ibdev_path().to_string_lossy());
    let d: &'static CDevice = Box::leak(Box::new(CDevice { ibv, dev }));
    reg.push((DevAddr(d as *const CDevice as usize), d));
    d
}

/// The [`CDevice`] behind a C `struct ibv_device *`, if it is one of ours.
pub(crate) fn lookup(p: *const IbvDevice) -> Option<&'static CDevice> {
    let a = DevAddr(p as usize);
    registry().iter().find(|(addr, _)| *addr == a).map(|(_, d)| *d)
}

/// The errno `ibv_get_device_list` reports for a failed discovery:
/// rdma-core gives `ENOSYS` when the uverbs ABI file is missing or has an
/// unsupported version.
fn list_errno(e: &verbs::Error) -> c_int {
    match e.kind() {
        ErrorKind::NoAbiFile | ErrorKind::AbiMismatch { .. } => libc::ENOSYS,
        _ => errno_of(e),
    }
}

/// `ibv_get_device_list`: a NULL-terminated array of the devices;
/// `*num_devices` (if not NULL) gets their number, 0 on failure.
///
/// # Safety
///
/// `num_devices` is NULL or points to a writable `int`.
pub(crate) unsafe extern "C" fn ibv_get_device_list(num_devices: *mut c_int) -> *mut *mut IbvDevice {
    if !num_devices.is_null() {
        // SAFETY: the caller passes NULL or a writable int.
        unsafe { *num_devices = 0 };
    }
    let list = match discovery::devices() {
        Ok(l) => l,
        Err(e) => return fail_null(list_errno(&e)),
    };
    let devs: Vec<&'static CDevice> = list.into_iter().map(intern).collect();
    // SAFETY: calloc with a nonzero element count and size; the result is
    // checked for NULL before use.
    let arr = unsafe { libc::calloc(devs.len() + 1, size_of::<*mut IbvDevice>()) }.cast::<*mut IbvDevice>();
    if arr.is_null() {
        return fail_null(libc::ENOMEM);
    }
    // SAFETY: calloc returned devs.len() + 1 zeroed (NULL) pointer slots,
    // exclusively ours until returned.
    let slots = unsafe { core::slice::from_raw_parts_mut(arr, devs.len() + 1) };
    for (slot, d) in slots.iter_mut().zip(&devs) {
        *slot = &d.ibv as *const IbvDevice as *mut IbvDevice;
    }
    if !num_devices.is_null() {
        // SAFETY: as above.
        unsafe { *num_devices = devs.len() as c_int };
    }
    arr
}

/// `ibv_free_device_list`: frees the array (the devices stay valid).
///
/// # Safety
///
/// `list` is NULL or an array returned by `ibv_get_device_list`, not yet freed.
pub(crate) unsafe extern "C" fn ibv_free_device_list(list: *mut *mut IbvDevice) {
    // SAFETY: the caller passes NULL or our calloc'ed array; free(NULL) is a no-op.
    unsafe { libc::free(list.cast()) };
}

/// `ibv_get_device_name`: the kernel's device name (`"rxe0"`), NULL with
/// `EINVAL` for a pointer that is not one of our devices.
pub(crate) extern "C" fn ibv_get_device_name(device: *mut IbvDevice) -> *const c_char {
    match lookup(device) {
        Some(d) => d.ibv.name.as_ptr(),
        None => fail_null::<c_char>(libc::EINVAL),
    }
}

/// `ibv_get_device_guid`: the node GUID, big-endian (`__be64`); 0 with
/// `EINVAL` for an unknown device.
pub(crate) extern "C" fn ibv_get_device_guid(device: *mut IbvDevice) -> u64 {
    match lookup(device) {
        Some(d) => d.dev.guid_be(),
        None => {
            set_errno(libc::EINVAL);
            0
        }
    }
}

/// `ibv_get_device_index`: the kernel's device index, -1 if unknown.
pub(crate) extern "C" fn ibv_get_device_index(device: *mut IbvDevice) -> c_int {
    match lookup(device).map(|d| d.dev.index()) {
        Some(Some(i)) => i as c_int,
        Some(None) => -1,
        None => fail_neg1(libc::EINVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ptr::null_mut;

    #[test]
    fn unknown_device_pointers_are_refused() {
        let bogus = 0x1000 as *mut IbvDevice;
        assert!(ibv_get_device_name(bogus).is_null());
        assert_eq!(ibv_get_device_guid(null_mut()), 0);
        assert_eq!(ibv_get_device_index(bogus), -1);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn list_with_null_count_and_free() {
        // On a host without RDMA this fails cleanly (NULL + errno) or gives
        // an empty list; either way NULL num_devices must be accepted.
        // SAFETY: NULL num_devices is allowed.
        let l = unsafe { ibv_get_device_list(null_mut()) };
        let mut n: c_int = -5;
        // SAFETY: &mut n is a writable int.
        let l2 = unsafe { ibv_get_device_list(&mut n) };
        if l2.is_null() {
            assert_eq!(n, 0);
        } else {
            assert!(n >= 0);
            let last = l2.wrapping_add(n as usize);
            // SAFETY: l2 has n + 1 entries; `last` is the final one.
            assert!(unsafe { *last }.is_null());
        }
        // SAFETY: ours (or NULL), freed once.
        unsafe { ibv_free_device_list(l) };
        // SAFETY: as above.
        unsafe { ibv_free_device_list(l2) };
    }
}
