//! Device-level commands: get/query context, query device, port and GIDs.
//!
//! These are thin: they build the command on the stack, send it through
//! the [`Channel`] and hand back the kernel's response struct. Turning the
//! responses into friendly attribute types is the handle layer's job.

use rustix::fd::OwnedFd;
use zerocopy::FromZeros;

use crate::abi::ioctl_cmds::{device, OBJECT_DEVICE};
use crate::abi::ioctl_verbs::{GidEntry, QueryPortRespEx};
use crate::abi::uverbs::{
    ExQueryDevice, ExQueryDeviceResp, GetContext, GetContextResp,
    EX_CMD_QUERY_DEVICE,
};
use crate::error::{Error, ErrorKind, Result};

use super::channel::{adopt_fd, Channel};
use super::ioctl_buf::IoctlBuf;

/// What `GET_CONTEXT` returns besides the provider's private response.
#[derive(Debug)]
pub struct ContextReply {
    /// The async event file the kernel created for this context.
    pub async_fd: OwnedFd,
    /// Number of completion vectors of the device.
    pub num_comp_vectors: u32,
}

/// `IB_USER_VERBS_CMD_GET_CONTEXT` (write form): creates the user context.
/// `drv_out` receives the provider's response (e.g. `siw_uresp_alloc_ctx`).
pub fn get_context(ch: &Channel, drv_in: &[u8], drv_out: &mut [u8]) -> Result<ContextReply> {
    const VERB: &str = "ibv_open_device";
    let cmd = GetContext::new_zeroed();
    let resp: GetContextResp = ch.exec_new_fd(VERB, &cmd, drv_in, drv_out)?;
    let async_fd = adopt_fd(VERB, resp.async_fd)?;
    Ok(ContextReply { async_fd, num_comp_vectors: resp.num_comp_vectors })
}

/// `IB_USER_VERBS_EX_CMD_QUERY_DEVICE`: the extended device attributes
/// (the base attributes are in `resp.base`).
pub fn query_device_ex(ch: &Channel) -> Result<ExQueryDeviceResp> {
    let cmd = ExQueryDevice::new_zeroed();
    ch.command_ex("ibv_query_device_ex", EX_CMD_QUERY_DEVICE, &cmd, &[], &mut [])
}

/// `UVERBS_METHOD_QUERY_PORT`: attributes of port `port_num` (1-based).
pub fn query_port(ch: &Channel, port_num: u8) -> Result<QueryPortRespEx> {
    const VERB: &str = "ibv_query_port";
    let mut resp = QueryPortRespEx::new_zeroed();
    {
        let mut b = IoctlBuf::<2>::new(OBJECT_DEVICE, device::METHOD_QUERY_PORT);
        b.in_const(device::ATTR_QUERY_PORT_PORT_NUM, u64::from(port_num));
        b.out_obj(device::ATTR_QUERY_PORT_RESP, &mut resp);
        ch.ioctl(VERB, &mut b)?;
    }
    Ok(resp)
}

/// `UVERBS_METHOD_QUERY_GID_ENTRY`: one GID table entry with its type and
/// netdev. An empty slot is reported by the kernel as `ENODATA`.
pub fn query_gid_entry(ch: &Channel, port_num: u8, index: u32) -> Result<GidEntry> {
    const VERB: &str = "ibv_query_gid_ex";
    let mut entry = GidEntry::new_zeroed();
    {
        let mut b = IoctlBuf::<4>::new(OBJECT_DEVICE, device::METHOD_QUERY_GID_ENTRY);
        b.in_const(device::ATTR_QUERY_GID_ENTRY_PORT, u64::from(port_num));
        b.in_const(device::ATTR_QUERY_GID_ENTRY_GID_INDEX, u64::from(index));
        b.in_value(device::ATTR_QUERY_GID_ENTRY_FLAGS, 0u32);
        b.out_obj(device::ATTR_QUERY_GID_ENTRY_RESP_ENTRY, &mut entry);
        ch.ioctl(VERB, &mut b)?;
    }
    Ok(entry)
}

/// `UVERBS_METHOD_QUERY_GID_TABLE`: every valid GID of every port, written
/// into `entries`; returns how many the kernel filled in.
pub fn query_gid_table(ch: &Channel, entries: &mut [GidEntry]) -> Result<usize> {
    const VERB: &str = "ibv_query_gid_table";
    let mut num: u64 = 0;
    let cap = entries.len();
    {
        let bytes = zerocopy::IntoBytes::as_mut_bytes(entries);
        if bytes.len() > u16::MAX as usize {
            return Err(Error::new(VERB, ErrorKind::InvalidArgument));
        }
        let mut b = IoctlBuf::<4>::new(OBJECT_DEVICE, device::METHOD_QUERY_GID_TABLE);
        b.in_const(device::ATTR_QUERY_GID_TABLE_ENTRY_SIZE, size_of::<GidEntry>() as u64);
        b.in_value(device::ATTR_QUERY_GID_TABLE_FLAGS, 0u32);
        b.out_bytes(device::ATTR_QUERY_GID_TABLE_RESP_ENTRIES, bytes);
        b.out_obj(device::ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, &mut num);
        ch.ioctl(VERB, &mut b)?;
    }
    let n = usize::try_from(num).unwrap_or(usize::MAX);
    if n > cap {
        return Err(Error::new(VERB, ErrorKind::Malformed));
    }
    Ok(n)
}
