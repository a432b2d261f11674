//! The device context (`struct ibv_context`): an open device file with a
//! kernel user context, its async event file, and the device queries.
//!
//! # Safety
//!
//! No `unsafe` block: this file declares `unsafe fn Context::from_fd`,
//! whose caller promises that the fd is a uverbs device file. The command
//! channel writes commands carrying response addresses to that fd and
//! adopts the fd numbers in the responses as owned files. Paths and
//! device numbers come from the caller (`DiscoveryConfig::sysfs_root`,
//! `dev_dir`) and can name any file, so the proof is the answer itself:
//! the responses that name fds are filled with `0xff` before the call and
//! an fd field the call did not write is refused
//! (`cmd::channel::adopt_fd`); `/dev/null`, a pipe or a regular file take
//! the command and write nothing back (before this check, their all-zero
//! "response" made the context adopt, and on drop close, fd 0).
//! [`Context::open`] also checks with `fstat` that the opened file is a
//! character device whose `major:minor` is the one sysfs lists for the
//! discovered `uverbsN`.
#![allow(unsafe_code)]

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::FileType;

use crate::abi::RdmaDriverId;
use crate::cmd::{self, Channel};
use crate::error::Result;
use crate::providers::{AnyCtx, ProviderKind};
use crate::query::{DeviceAttr, GidEntry, PortAttr};

/// Longest device name the kernel allows (`IB_DEVICE_NAME_MAX`).
pub const DEVICE_NAME_MAX: usize = 64;

/// An open RDMA device (`struct ibv_context`).
///
/// Created by [`Context::open`] (with device discovery) or
/// [`Context::from_fd`] (no_std: from an already opened device file).
/// Dropping it closes the device (`ibv_close_device`); every object created
/// from it borrows it, so it cannot be closed under them.
#[doc(alias = "ibv_context")]
#[derive(Debug)]
pub struct Context {
    chan: Channel,
    async_fd: OwnedFd,
    num_comp_vectors: u32,
    name: heapless::String<DEVICE_NAME_MAX>,
    /// The provider's state (what its `alloc_context` answered).
    state: AnyCtx,
}

impl Context {
    /// `ibv_open_device` from an open `/dev/infiniband/uverbsN` file: creates
    /// the kernel user context for `provider`.
    ///
    /// `name` is the device's name (e.g. `rxe0`), used for sysfs look-ups
    /// (P_Keys) and messages; names longer than 64 bytes are rejected. A
    /// file that is not a character device is refused with
    /// [`ErrorKind::NotUverbsDevice`](crate::ErrorKind::NotUverbsDevice)
    /// (a cheap check; it cannot tell a uverbs device from `/dev/null`).
    ///
    /// # Safety
    ///
    /// `fd` must be an open uverbs device file (`/dev/infiniband/uverbsN`,
    /// opened read-write) of a device that `provider` drives. The context
    /// sends commands to it whose bytes carry addresses of response
    /// buffers, and takes ownership of every file descriptor number the
    /// responses name; another file would answer with bytes that are not
    /// the kernel's. (A file that answers nothing, like `/dev/null`, is
    /// refused with `NotUverbsDevice`: the async fd field of `GET_CONTEXT`
    /// must be written by the call. A file that writes responses through
    /// the addresses in `write()` commands is a uverbs-speaking driver, and
    /// this is the contract for it.) [`Context::open`] checks the device
    /// number as well and is safe.
    #[doc(alias = "ibv_open_device")]
    pub unsafe fn from_fd(fd: OwnedFd, provider: ProviderKind, name: &str) -> Result<Self> {
        const VERB: &str = "ibv_open_device";
        if !is_char_device(fd.as_fd()) {
            return Err(crate::Error::new(VERB, crate::ErrorKind::NotUverbsDevice));
        }
        Self::from_uverbs_fd(fd, provider, name)
    }

    /// [`Context::from_fd`] for an fd known to be a uverbs device file.
    fn from_uverbs_fd(fd: OwnedFd, provider: ProviderKind, name: &str) -> Result<Self> {
        const VERB: &str = "ibv_open_device";
        let name: heapless::String<DEVICE_NAME_MAX> = name
            .try_into()
            .map_err(|_| crate::Error::new(VERB, crate::ErrorKind::InvalidArgument))?;
        let chan = Channel::new(fd, driver_id_of(provider));
        let (reply, state) = AnyCtx::open(provider, &chan)?;
        Ok(Self {
            chan,
            async_fd: reply.async_fd,
            num_comp_vectors: reply.num_comp_vectors,
            name,
            state,
        })
    }

    /// `ibv_open_device` for a device found by [`crate::discovery`]: opens
    /// its `/dev/infiniband/uverbsN` (with the permission fix in the error),
    /// checks with `fstat` that the opened file is a character device
    /// whose `major:minor` is the device's uverbs number from sysfs
    /// ([`Device::dev_t`](crate::discovery::Device::dev_t)), else
    /// [`ErrorKind::NotUverbsDevice`](crate::ErrorKind::NotUverbsDevice),
    /// and creates the kernel context with the matched provider. A file
    /// that takes the `GET_CONTEXT` command without writing its response
    /// (`/dev/null` named by a caller's sysfs tree) is also
    /// `NotUverbsDevice`, and no fd is adopted from it.
    #[cfg(feature = "std")]
    #[doc(alias = "ibv_open_device")]
    pub fn open(device: &crate::discovery::Device) -> Result<Self> {
        let fd = device.open_file()?;
        let provider = device
            .provider()
            .ok_or(crate::Error::new("ibv_open_device", crate::ErrorKind::NoProvider))?;
        check_uverbs_fd(fd.as_fd(), device.dev_t())?;
        Self::from_uverbs_fd(fd, provider, device.name())
    }

    /// The device's name (`ibv_get_device_name` of its device).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The provider driving this context.
    pub fn provider(&self) -> ProviderKind {
        self.state.kind()
    }

    /// What the provider driving this context can do.
    pub fn provider_caps(&self) -> crate::ProviderCaps {
        self.state.caps()
    }

    /// The attributes of port `port_num`, or an error naming the port if
    /// the device has no such port (ports count from 1).
    pub(crate) fn port_checked(&self, verb: &'static str, port_num: u8) -> Result<PortAttr> {
        crate::attr_check::port_num(verb, port_num)?;
        self.query_port(port_num).map_err(|e| crate::attr_check::no_such_port(verb, e))
    }

    /// Every check of an address vector: its fields, then against its
    /// port (which must exist).
    pub(crate) fn check_ah(&self, verb: &'static str, ah: &crate::ah::attr::AhAttr) -> Result<()> {
        crate::attr_check::ah_fields(verb, ah)?;
        let port = self.port_checked(verb, ah.port_num)?;
        crate::attr_check::ah_on_port(verb, &port, self.provider_caps().iwarp, ah)
    }

    /// The provider's per-context state, for the objects it creates.
    pub(crate) fn provider_state(&self) -> &AnyCtx {
        &self.state
    }

    /// Number of completion vectors (`ibv_context.num_comp_vectors`).
    pub fn num_comp_vectors(&self) -> u32 {
        self.num_comp_vectors
    }

    /// The provider's device id from the context response (siw's
    /// `dev_id`; 0 for providers that have none).
    pub fn provider_dev_id(&self) -> u32 {
        self.state.dev_id()
    }

    /// The async event file (`ibv_context.async_fd`), usable with poll/epoll.
    pub fn async_fd(&self) -> BorrowedFd<'_> {
        self.async_fd.as_fd()
    }

    /// The command channel, for the layers that create objects. Private:
    /// a raw command can make the kernel write to any address. Public only
    /// with the `internals` feature, which is outside the safe API.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn channel(&self) -> &Channel {
        &self.chan
    }

    /// The command channel, for the layers that create objects.
    #[cfg(not(feature = "internals"))]
    pub(crate) fn channel(&self) -> &Channel {
        &self.chan
    }

    /// `ibv_query_device_ex`: the device's attributes and capabilities.
    #[doc(alias = "ibv_query_device")]
    #[doc(alias = "ibv_query_device_ex")]
    pub fn query_device(&self) -> Result<DeviceAttr> {
        cmd::device::query_device_ex(&self.chan).map(DeviceAttr::from_kernel)
    }

    /// `ibv_query_port`: attributes of port `port_num` (ports count from 1).
    #[doc(alias = "ibv_query_port")]
    pub fn query_port(&self, port_num: u8) -> Result<PortAttr> {
        cmd::device::query_port(&self.chan, port_num).map(PortAttr::from_kernel)
    }

    /// `ibv_query_gid_ex`: one GID table entry with its type. Both ways
    /// of naming no GID are `InvalidArgument` errors: an empty entry (the
    /// kernel answers `ENODATA`; the error's detail says so) and an index
    /// past the table or a port the device lacks (the kernel's `EINVAL`,
    /// carried as the error's errno).
    #[doc(alias = "ibv_query_gid_ex")]
    pub fn query_gid_ex(&self, port_num: u8, index: u32) -> Result<GidEntry> {
        cmd::device::query_gid_entry(&self.chan, port_num, index)
            .map(GidEntry::from_kernel)
            .map_err(|e| match e.errno() {
                Some(errno @ rustix::io::Errno::NODATA) => {
                    crate::Error::with_errno(e.verb(), crate::ErrorKind::InvalidArgument, errno)
                        .with_detail("no GID at this index of the port's GID table (an empty entry)")
                }
                _ => e,
            })
    }

    /// `ibv_query_gid`: the GID at `index` of port `port_num`; an empty slot
    /// reads as the zero GID, as in libibverbs.
    #[doc(alias = "ibv_query_gid")]
    pub fn query_gid(&self, port_num: u8, index: u32) -> Result<[u8; 16]> {
        match cmd::device::query_gid_entry(&self.chan, port_num, index) {
            Ok(e) => Ok(GidEntry::from_kernel(e).gid),
            Err(e) if e.errno() == Some(rustix::io::Errno::NODATA) => Ok([0; 16]),
            Err(e) => Err(e),
        }
    }

    /// `ibv_query_gid_table`: every valid GID of the device, into `out`;
    /// returns how many entries were filled.
    #[doc(alias = "ibv_query_gid_table")]
    pub fn query_gid_table(&self, out: &mut [GidEntry]) -> Result<usize> {
        crate::query::query_gid_table(&self.chan, out)
    }

    /// The index of port `port_num`'s first RoCE v2 GID that holds an IPv4
    /// address (`::ffff:a.b.c.d`): the source GID index (`sgid_index`)
    /// RoCE peers reach each other with over IPv4, and the one rdma-core's
    /// tests take with `--gid`.
    ///
    /// Reads the GID table with its types (`ibv_query_gid_table`, falling
    /// back to `ibv_query_gid_ex` per entry when the table is larger than
    /// one read). No such GID (an InfiniBand or iWARP port, or a netdev
    /// without an IPv4 address) is [`ErrorKind::NotFound`](crate::ErrorKind::NotFound).
    pub fn roce_v2_ipv4_gid_index(&self, port_num: u8) -> Result<u8> {
        const VERB: &str = "ibv_query_gid_table";
        let is_v4 = |e: &GidEntry| {
            e.port_num == u32::from(port_num)
                && e.gid_type == crate::query::GID_TYPE_ROCE_V2
                && crate::query::is_ipv4_mapped(&e.gid)
        };
        // A port that does not exist is the query's error, not "not found".
        let len = self.query_port(port_num)?.gid_tbl_len.min(256);
        let mut table = [GidEntry::default(); crate::query::GID_TABLE_CHUNK];
        let n = self.query_gid_table(&mut table)?;
        let found = table[..n].iter().filter(|e| is_v4(e)).map(|e| e.gid_index).min();
        if let Some(i) = found {
            return u8::try_from(i).map_err(|_| crate::Error::new(VERB, crate::ErrorKind::NotFound));
        }
        if n < table.len() {
            return Err(crate::Error::new(VERB, crate::ErrorKind::NotFound));
        }
        // The table did not fit in one read: walk the port's entries.
        for i in 0..len {
            match self.query_gid_ex(port_num, i) {
                Ok(e) if is_v4(&e) => return Ok(i as u8),
                Ok(_) => {}
                Err(e) if e.errno() == Some(rustix::io::Errno::NODATA) => {}
                Err(e) => return Err(e),
            }
        }
        Err(crate::Error::new(VERB, crate::ErrorKind::NotFound))
    }

    /// `ibv_query_pkey`: the P_Key at `index` of port `port_num`, read from
    /// sysfs as libibverbs does (in host byte order).
    ///
    /// A port the device does not have, or an index past the port's
    /// P_Key table, is an `InvalidArgument` error naming which, with the
    /// errno C's `ibv_query_pkey` sets for both (`ENOENT`: its sysfs file
    /// does not exist).
    #[doc(alias = "ibv_query_pkey")]
    pub fn query_pkey(&self, port_num: u8, index: u16) -> Result<u16> {
        const VERB: &str = "ibv_query_pkey";
        let no_entry = |detail| {
            crate::Error::with_errno(VERB, crate::ErrorKind::InvalidArgument, rustix::io::Errno::NOENT)
                .with_detail(detail)
        };
        let port = self.port_checked(VERB, port_num).map_err(|e| match e.detail() {
            Some(d) if e.kind() == crate::ErrorKind::InvalidArgument => no_entry(d),
            _ => e,
        })?;
        if index >= port.pkey_tbl_len {
            return Err(no_entry("index is past the port's P_Key table (pkey_tbl_len)"));
        }
        crate::query::query_pkey(&self.name, port_num, index)
    }
}

/// Whether `fd` is a character device (`fstat`).
fn is_char_device(fd: BorrowedFd<'_>) -> bool {
    rustix::fs::fstat(fd).is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::CharacterDevice)
}

/// `Ok` if `fd` is the character device `dev` (`(major, minor)`), else
/// [`ErrorKind::NotUverbsDevice`](crate::ErrorKind::NotUverbsDevice) (or
/// the `fstat` errno).
#[cfg_attr(not(feature = "std"), allow(dead_code))]
fn check_uverbs_fd(fd: BorrowedFd<'_>, dev: (u32, u32)) -> Result<()> {
    const VERB: &str = "ibv_open_device";
    let st = rustix::fs::fstat(fd).map_err(|e| crate::Error::from_errno(VERB, e))?;
    let rdev = st.st_rdev;
    if FileType::from_raw_mode(st.st_mode) != FileType::CharacterDevice
        || (rustix::fs::major(rdev), rustix::fs::minor(rdev)) != dev
    {
        return Err(crate::Error::new(VERB, crate::ErrorKind::NotUverbsDevice));
    }
    Ok(())
}

fn driver_id_of(p: ProviderKind) -> RdmaDriverId {
    crate::providers::PROVIDERS
        .iter()
        .find(|r| r.kind == p)
        .map_or(RdmaDriverId::UNKNOWN, |r| r.driver_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn open(path: &str) -> OwnedFd {
        rustix::fs::open(path, rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty())
            .unwrap()
    }

    #[test]
    fn a_char_device_with_another_number_is_not_the_uverbs_device() {
        // /dev/null is character device 1:3.
        let fd = open("/dev/null");
        assert!(check_uverbs_fd(fd.as_fd(), (1, 3)).is_ok());
        let e = check_uverbs_fd(fd.as_fd(), (231, 192)).unwrap_err();
        assert_eq!((e.kind(), e.verb()), (ErrorKind::NotUverbsDevice, "ibv_open_device"));
    }

    #[test]
    fn from_fd_of_dev_null_is_refused_and_adopts_no_fd() {
        for rule in crate::providers::PROVIDERS {
            // SAFETY: violates the contract on purpose: /dev/null is a
            // character device, so only its missing answer to GET_CONTEXT
            // refuses it, before any fd is adopted.
            let e = unsafe { Context::from_fd(open("/dev/null"), rule.kind, "dev0") }.unwrap_err();
            assert_eq!((e.kind(), e.verb()), (ErrorKind::NotUverbsDevice, "ibv_open_device"), "{e}");
        }
    }

    #[cfg(feature = "std")]
    #[test]
    fn from_fd_refuses_a_file_that_is_not_a_character_device() {
        let fd = rustix::fs::memfd_create("verbs-not-a-device", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        let e = check_uverbs_fd(fd.as_fd(), (231, 192)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotUverbsDevice);
        if let Some(rule) = crate::providers::PROVIDERS.first() {
            // SAFETY: violates the contract on purpose: the check in
            // `from_fd` refuses the memfd before any command is written.
            let e = unsafe { Context::from_fd(fd, rule.kind, "dev0") }.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::NotUverbsDevice);
        }
    }
}
