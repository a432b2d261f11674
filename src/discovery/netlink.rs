//! Parsers for the RDMA netlink (nldev) replies discovery asks for.
//!
//! Every function here takes bytes the kernel (or a fuzzer) wrote and never
//! panics: lengths are checked before every access (smoltcp's
//! check-then-access style), and anything that does not have the expected
//! shape is an [`ErrorKind::Malformed`] error. They are public so fuzz
//! targets can drive them directly; the socket that feeds them lives in
//! [`super::nlsock`].
//!
//! Reply layouts (kernel `drivers/infiniband/core/nldev.c`):
//! * `RDMA_NLDEV_CMD_GET` dump: one message per device with `DEV_INDEX`,
//!   `DEV_NAME`, `PORT_INDEX` (number of ports), `CAP_FLAGS`, `FW_VERSION`
//!   (optional), `NODE_GUID`, `SYS_IMAGE_GUID`, `DEV_NODE_TYPE`, ...,
//!   `DEV_PROTOCOL`; then `NLMSG_DONE`.
//! * `RDMA_NLDEV_CMD_GET_CHARDEV`: one message with `CHARDEV` (huge-encoded
//!   `dev_t`), `CHARDEV_ABI`, `CHARDEV_NAME` and, for uverbs,
//!   `UVERBS_DRIVER_ID` (u32).
//! * `RDMA_NLDEV_CMD_SYS_GET`: one message; `SYS_ATTR_COPY_ON_FORK` (u8) is
//!   missing on kernels older than 5.13.

use crate::abi::netlink::*;
use crate::error::{Errno, Error, ErrorKind, Result};
use zerocopy::FromBytes;

/// One netlink message: its header and the payload after it.
#[derive(Clone, Copy, Debug)]
pub struct NlMessage<'a> {
    /// The message header.
    pub header: NlMsgHdr,
    /// The bytes after the header, `nlmsg_len - 16` long.
    pub payload: &'a [u8],
}

/// Iterates over the netlink messages in a received buffer. Stops after the
/// first malformed message (which it yields as an error).
#[derive(Clone, Debug)]
pub struct Messages<'a> {
    rest: &'a [u8],
    verb: &'static str,
}

impl<'a> Messages<'a> {
    /// Messages in `buf`; errors name `verb`.
    pub fn new(buf: &'a [u8], verb: &'static str) -> Self {
        Self { rest: buf, verb }
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = Result<NlMessage<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let malformed = Error::new(self.verb, ErrorKind::Malformed);
        let Ok((header, _)) = NlMsgHdr::read_from_prefix(self.rest) else {
            self.rest = &[];
            return Some(Err(malformed));
        };
        let len = header.nlmsg_len as usize;
        if len < NLMSG_HDRLEN || len > self.rest.len() {
            self.rest = &[];
            return Some(Err(malformed));
        }
        let payload = self.rest.get(NLMSG_HDRLEN..len).unwrap_or(&[]);
        let advance = nl_align(len).min(self.rest.len());
        self.rest = self.rest.get(advance..).unwrap_or(&[]);
        Some(Ok(NlMessage { header, payload }))
    }
}

/// Iterates over the attributes of a message payload as
/// `(type without flag bits, payload)`. Stops after the first malformed
/// attribute (which it yields as an error).
#[derive(Clone, Debug)]
pub struct Attrs<'a> {
    rest: &'a [u8],
    verb: &'static str,
}

impl<'a> Attrs<'a> {
    /// Attributes in `buf` (a message payload after any family header).
    pub fn new(buf: &'a [u8], verb: &'static str) -> Self {
        Self { rest: buf, verb }
    }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<(u16, &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let malformed = Error::new(self.verb, ErrorKind::Malformed);
        let Ok((attr, _)) = NlAttr::read_from_prefix(self.rest) else {
            self.rest = &[];
            return Some(Err(malformed));
        };
        let len = attr.nla_len as usize;
        if len < NLA_HDRLEN || len > self.rest.len() {
            self.rest = &[];
            return Some(Err(malformed));
        }
        let payload = self.rest.get(NLA_HDRLEN..len).unwrap_or(&[]);
        let advance = nl_align(len).min(self.rest.len());
        self.rest = self.rest.get(advance..).unwrap_or(&[]);
        Some(Ok((attr.nla_type & NLA_TYPE_MASK, payload)))
    }
}

/// A `u8` attribute payload.
pub fn attr_u8(payload: &[u8]) -> Option<u8> {
    match payload {
        [v] => Some(*v),
        _ => None,
    }
}

/// A `u32` attribute payload (native byte order).
pub fn attr_u32(payload: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(payload.try_into().ok()?))
}

/// A `u64` attribute payload (native byte order).
pub fn attr_u64(payload: &[u8]) -> Option<u64> {
    Some(u64::from_ne_bytes(payload.try_into().ok()?))
}

/// A string attribute payload: UTF-8, up to the first NUL (which
/// `NLA_NUL_STRING` attributes carry).
pub fn attr_str(payload: &[u8]) -> Option<&str> {
    let end = payload
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(payload.len());
    core::str::from_utf8(payload.get(..end)?).ok()
}

/// Decodes the kernel's `huge_encode_dev` form of a `dev_t` (what
/// `RDMA_NLDEV_ATTR_CHARDEV` carries) into `(major, minor)`.
pub const fn decode_huge_dev(dev: u64) -> (u32, u32) {
    let major = ((dev & 0xfff00) >> 8) as u32;
    let minor = ((dev & 0xff) | ((dev >> 12) & 0xfff00)) as u32;
    (major, minor)
}

/// One device from an `RDMA_NLDEV_CMD_GET` reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NlDevice {
    /// `RDMA_NLDEV_ATTR_DEV_INDEX`
    pub index: u32,
    /// `RDMA_NLDEV_ATTR_DEV_NAME`
    pub name: String,
    /// `RDMA_NLDEV_ATTR_PORT_INDEX`: the number of ports.
    pub num_ports: u32,
    /// `RDMA_NLDEV_ATTR_NODE_GUID`, host byte order.
    pub node_guid: u64,
    /// `RDMA_NLDEV_ATTR_SYS_IMAGE_GUID`, host byte order.
    pub sys_image_guid: Option<u64>,
    /// `RDMA_NLDEV_ATTR_DEV_NODE_TYPE`: `enum rdma_node_type`.
    pub node_type: u8,
    /// `RDMA_NLDEV_ATTR_FW_VERSION`, if the device has firmware.
    pub fw_version: Option<String>,
    /// `RDMA_NLDEV_ATTR_DEV_PROTOCOL`: `"ib"`, `"iw"`, `"roce"`, ...
    pub protocol: Option<String>,
}

/// What one received buffer of an `RDMA_NLDEV_CMD_GET` dump contained.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DevGetReply {
    /// The devices described in this buffer.
    pub devices: Vec<NlDevice>,
    /// Whether the buffer ended the dump (`NLMSG_DONE`).
    pub done: bool,
}

const VERB_LIST: &str = "ibv_get_device_list";

/// Turns an `NLMSG_ERROR` payload into `Ok(())` for an acknowledgement or
/// the error the kernel reported.
fn check_nlmsgerr(payload: &[u8], verb: &'static str) -> Result<()> {
    let Ok((err, _)) = i32::read_from_prefix(payload) else {
        return Err(Error::new(verb, ErrorKind::Malformed));
    };
    match err {
        0 => Ok(()),
        e => Err(Error::from_errno(
            verb,
            Errno::from_raw_os_error(e.checked_neg().unwrap_or(0)),
        )),
    }
}

fn parse_device(payload: &[u8]) -> Result<NlDevice> {
    let malformed = Error::new(VERB_LIST, ErrorKind::Malformed);
    let (mut index, mut name, mut ports, mut guid, mut ntype) = (None, None, None, None, None);
    let mut dev = NlDevice {
        index: 0,
        name: String::new(),
        num_ports: 0,
        node_guid: 0,
        sys_image_guid: None,
        node_type: 0,
        fw_version: None,
        protocol: None,
    };
    for attr in Attrs::new(payload, VERB_LIST) {
        let (ty, p) = attr?;
        match ty {
            RDMA_NLDEV_ATTR_DEV_INDEX => index = Some(attr_u32(p).ok_or(malformed)?),
            RDMA_NLDEV_ATTR_DEV_NAME => name = Some(attr_str(p).ok_or(malformed)?),
            RDMA_NLDEV_ATTR_PORT_INDEX => ports = Some(attr_u32(p).ok_or(malformed)?),
            RDMA_NLDEV_ATTR_NODE_GUID => guid = Some(attr_u64(p).ok_or(malformed)?),
            RDMA_NLDEV_ATTR_DEV_NODE_TYPE => ntype = Some(attr_u8(p).ok_or(malformed)?),
            RDMA_NLDEV_ATTR_SYS_IMAGE_GUID => dev.sys_image_guid = attr_u64(p),
            RDMA_NLDEV_ATTR_FW_VERSION => dev.fw_version = attr_str(p).map(String::from),
            RDMA_NLDEV_ATTR_DEV_PROTOCOL => dev.protocol = attr_str(p).map(String::from),
            _ => {}
        }
    }
    // The same attributes rdma-core's find_sysfs_devs_nl_cb insists on.
    let (Some(index), Some(name), Some(ports), Some(guid), Some(ntype)) =
        (index, name, ports, guid, ntype)
    else {
        return Err(malformed);
    };
    if name.is_empty() {
        return Err(malformed);
    }
    dev.index = index;
    dev.name = name.into();
    dev.num_ports = ports;
    dev.node_guid = guid;
    dev.node_type = ntype;
    Ok(dev)
}

/// Parses one received buffer of an `RDMA_NLDEV_CMD_GET` dump.
///
/// Messages of other types (e.g. `NLMSG_NOOP`) are skipped; an
/// `NLMSG_ERROR` becomes the kernel's errno; a dump the kernel flags as
/// interrupted (`NLM_F_DUMP_INTR`) becomes `EINTR` so the caller can retry.
pub fn parse_dev_get_reply(buf: &[u8]) -> Result<DevGetReply> {
    let mut out = DevGetReply::default();
    let dev_type = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET);
    for msg in Messages::new(buf, VERB_LIST) {
        let msg = msg?;
        if msg.header.nlmsg_flags & NLM_F_DUMP_INTR != 0 {
            return Err(Error::from_errno(VERB_LIST, Errno::INTR));
        }
        match msg.header.nlmsg_type {
            NLMSG_DONE => {
                out.done = true;
                break;
            }
            NLMSG_ERROR => check_nlmsgerr(msg.payload, VERB_LIST)?,
            t if t == dev_type => out.devices.push(parse_device(msg.payload)?),
            _ => {}
        }
    }
    Ok(out)
}

/// The character device of one client of a device, from an
/// `RDMA_NLDEV_CMD_GET_CHARDEV` reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NlChardev {
    /// `RDMA_NLDEV_ATTR_CHARDEV_NAME`: the `/dev/infiniband` file name.
    pub name: String,
    /// `RDMA_NLDEV_ATTR_CHARDEV_ABI`: the per-device ABI version (the top
    /// 32 bits are reserved and zero).
    pub abi: u64,
    /// `RDMA_NLDEV_ATTR_CHARDEV` decoded to `(major, minor)`.
    pub dev: (u32, u32),
    /// `RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID`, if the kernel binds the device to
    /// a driver id (`enum rdma_driver_id`).
    pub driver_id: Option<u32>,
}

/// Parses the reply to an `RDMA_NLDEV_CMD_GET_CHARDEV` request.
pub fn parse_chardev_reply(buf: &[u8]) -> Result<NlChardev> {
    let verb = VERB_LIST;
    let malformed = Error::new(verb, ErrorKind::Malformed);
    let want = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV);
    for msg in Messages::new(buf, verb) {
        let msg = msg?;
        match msg.header.nlmsg_type {
            NLMSG_ERROR => check_nlmsgerr(msg.payload, verb)?,
            t if t == want => {
                let (mut name, mut abi, mut dev, mut driver_id) = (None, None, None, None);
                for attr in Attrs::new(msg.payload, verb) {
                    let (ty, p) = attr?;
                    match ty {
                        RDMA_NLDEV_ATTR_CHARDEV_NAME => name = Some(attr_str(p).ok_or(malformed)?),
                        RDMA_NLDEV_ATTR_CHARDEV_ABI => abi = Some(attr_u64(p).ok_or(malformed)?),
                        RDMA_NLDEV_ATTR_CHARDEV => dev = Some(attr_u64(p).ok_or(malformed)?),
                        // Declared u64 in the header, put as u32 by the kernel.
                        RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID => {
                            driver_id = attr_u32(p).or_else(|| attr_u64(p).map(|v| v as u32))
                        }
                        _ => {}
                    }
                }
                let (Some(name), Some(abi), Some(dev)) = (name, abi, dev) else {
                    return Err(malformed);
                };
                if name.is_empty() {
                    return Err(malformed);
                }
                return Ok(NlChardev {
                    name: name.into(),
                    abi,
                    dev: decode_huge_dev(dev),
                    driver_id,
                });
            }
            _ => {}
        }
    }
    Err(malformed)
}

/// Parses the reply to an `RDMA_NLDEV_CMD_SYS_GET` request: the value of
/// `RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK`, `false` if the kernel predates it.
pub fn parse_sys_get_reply(buf: &[u8]) -> Result<bool> {
    let verb = "ibv_is_fork_initialized";
    let want = rdma_nl_get_type(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET);
    for msg in Messages::new(buf, verb) {
        let msg = msg?;
        match msg.header.nlmsg_type {
            NLMSG_ERROR => check_nlmsgerr(msg.payload, verb)?,
            t if t == want => {
                let mut cof = false;
                for attr in Attrs::new(msg.payload, verb) {
                    let (ty, p) = attr?;
                    if ty == RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK {
                        cof = attr_u8(p).ok_or(Error::new(verb, ErrorKind::Malformed))? != 0;
                    }
                }
                return Ok(cof);
            }
            _ => {}
        }
    }
    Err(Error::new(verb, ErrorKind::Malformed))
}
