//! The uverbs ioctl interface (`RDMA_VERBS_IOCTL`) as the kernel's
//! `ib_uverbs_ioctl` answers it: the header and attribute checks of
//! `uverbs_ioctl.c`, in its order and with its errnos, then the method.
//!
//! The methods the simulated device answers by ioctl are the device
//! queries (`QUERY_PORT`, `QUERY_GID_TABLE`, `QUERY_GID_ENTRY`, in
//! [`super::ioctl_device`]). For the rest the sim is a kernel whose ioctl
//! tree lacks them, told apart as libibverbs tells them apart:
//!
//! * a method that is the ioctl form of a write command (`INVOKE_WRITE`,
//!   `GET_CONTEXT`, the CQ/QP/SRQ/WQ create and the object destroys) is
//!   `EPROTONOSUPPORT`, what `ib_uverbs_cmd_verbs` says for a method not in
//!   its tree: libibverbs then sends that command through `write()`, which
//!   the sim answers (`cmd_fallback.c`, `_execute_ioctl_fallback`);
//! * every other method (device memory, counters, flow actions, DEVX, the
//!   mlx5 UAR objects, ...) is `EOPNOTSUPP`, the device not offering it,
//!   which is how mlx5_ib answers those a device lacks, and which callers
//!   without a fallback (pyverbs among them) treat as "not supported".

use super::cmd::{errno, u16_at, u32_at, u64_at};
use crate::mem::{HostMem, Pid, ProcMem};

/// `RDMA_VERBS_IOCTL` = `_IOWR(0x1b, 1, struct ib_uverbs_ioctl_hdr)`.
pub const RDMA_VERBS_IOCTL: u64 = 0xc018_1b01;
/// `RDMA_DRIVER_MLX5`: the driver id every header must carry.
pub const DRIVER_MLX5: u32 = 1;
/// `sizeof(struct ib_uverbs_ioctl_hdr)`.
const HDR_LEN: usize = 24;
/// `sizeof(struct ib_uverbs_attr)`.
const ATTR_LEN: usize = 16;
/// The largest header accepted (`PAGE_SIZE`).
const MAX_LEN: usize = 4096;
/// `UVERBS_ATTR_F_MANDATORY`.
const F_MANDATORY: u16 = 1;
/// `UVERBS_ATTR_F_VALID_OUTPUT`: set by the kernel on each attribute it wrote.
const F_VALID_OUTPUT: u16 = 2;

/// How an attribute is checked (`struct uverbs_attr_spec`).
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// `UVERBS_ATTR_CONST_IN`: exactly 8 bytes, inline.
    Const,
    /// `UVERBS_ATTR_FLAGS_IN`: 4 to 8 bytes, inline.
    Flags,
    /// `UVERBS_ATTR_PTR_OUT` of `UVERBS_ATTR_TYPE`: exactly this size.
    OutExact(u16),
    /// `UVERBS_ATTR_PTR_OUT` of `UVERBS_ATTR_STRUCT`: at least this size
    /// (up to the struct's last mandatory field), longer is allowed.
    OutStruct(u16),
    /// `UVERBS_ATTR_PTR_OUT` of `UVERBS_ATTR_MIN_SIZE`.
    OutMin(u16),
}

impl Kind {
    /// (min, max) length.
    fn bounds(self) -> (u16, u16) {
        match self {
            Kind::Const => (8, 8),
            Kind::Flags => (4, 8),
            Kind::OutExact(n) => (n, n),
            Kind::OutStruct(n) | Kind::OutMin(n) => (n, u16::MAX),
        }
    }
}

/// One attribute of a method's specification.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    /// Attribute id.
    pub id: u16,
    /// Its checks.
    pub kind: Kind,
    /// `UA_MANDATORY`.
    pub mandatory: bool,
}

/// One attribute as userspace sent it.
#[derive(Clone, Copy, Debug)]
struct Attr {
    /// Position in the user's array (for `VALID_OUTPUT`).
    idx: usize,
    flags: u16,
    len: u16,
    data: u64,
}

/// A method's attributes after the framework's checks, and the means to
/// answer through them (`struct uverbs_attr_bundle`).
pub struct Bundle<'a> {
    mem: &'a ProcMem,
    pid: Pid,
    /// The user's header address.
    arg: u64,
    specs: &'static [Spec],
    got: Vec<Option<Attr>>,
}

impl Bundle<'_> {
    fn attr(&self, id: u16) -> Result<Attr, i32> {
        let at = self.specs.iter().position(|s| s.id == id).ok_or(libc::ENOENT)?;
        self.got[at].ok_or(libc::ENOENT)
    }

    /// `uverbs_get_const` into an unsigned type whose largest value is
    /// `max`: `ENOENT` when absent, `EINVAL` out of range.
    pub fn const_in(&self, id: u16, max: u64) -> Result<u64, i32> {
        let v = self.attr(id)?.data;
        if (v as i64) < 0 || v > max {
            return Err(errno::EINVAL);
        }
        Ok(v)
    }

    /// `uverbs_get_flags32`: 0 when absent; bits outside `allowed` are `EINVAL`.
    pub fn flags32(&self, id: u16, allowed: u64) -> Result<u32, i32> {
        let Ok(a) = self.attr(id) else { return Ok(0) };
        let v = match a.len {
            8 => a.data,
            4 => a.data & 0xffff_ffff,
            _ => return Err(errno::EINVAL),
        };
        if v & !allowed != 0 || v > u64::from(u32::MAX) {
            return Err(errno::EINVAL);
        }
        Ok(v as u32)
    }

    /// The length userspace gave an attribute (`uverbs_attr_get_len`).
    pub fn len(&self, id: u16) -> Result<usize, i32> {
        Ok(usize::from(self.attr(id)?.len))
    }

    /// `uverbs_copy_to`: `min(len, bytes)` bytes to the attribute's buffer,
    /// then `VALID_OUTPUT`.
    pub fn copy_to(&self, id: u16, bytes: &[u8]) -> Result<(), i32> {
        let a = self.attr(id)?;
        let n = bytes.len().min(usize::from(a.len));
        self.mem.write(self.pid, a.data, &bytes[..n]).map_err(|_| errno::EFAULT)?;
        self.set_output(a)
    }

    /// `uverbs_copy_to_struct_or_zero`: a buffer longer than the struct
    /// gets zeros after it.
    pub fn copy_to_struct_or_zero(&self, id: u16, bytes: &[u8]) -> Result<(), i32> {
        let a = self.attr(id)?;
        if usize::from(a.len) > bytes.len() {
            let zeros = vec![0u8; usize::from(a.len) - bytes.len()];
            self.mem.write(self.pid, a.data + bytes.len() as u64, &zeros).map_err(|_| errno::EFAULT)?;
        }
        self.copy_to(id, bytes)
    }

    /// Writes `bytes` at `off` of an output attribute's buffer (the caller
    /// has checked they fit), without `VALID_OUTPUT`; see [`Self::written`].
    pub fn write_at(&self, id: u16, off: usize, bytes: &[u8]) -> Result<(), i32> {
        let a = self.attr(id)?;
        self.mem.write(self.pid, a.data + off as u64, bytes).map_err(|_| errno::EFAULT)
    }

    /// `uverbs_output_written`.
    pub fn written(&self, id: u16) -> Result<(), i32> {
        let a = self.attr(id)?;
        self.set_output(a)
    }

    fn set_output(&self, a: Attr) -> Result<(), i32> {
        let at = self.arg + (HDR_LEN + a.idx * ATTR_LEN) as u64 + 4;
        let flags = a.flags | F_VALID_OUTPUT;
        self.mem.write(self.pid, at, &flags.to_le_bytes()).map_err(|_| errno::EFAULT)
    }
}

/// What `ioctl(fd, request, arg)` did: the method it named and its result.
pub struct Outcome {
    /// "object=.. method=.." or the method's name, for the trace.
    pub what: String,
    /// 0 or an errno.
    pub res: Result<(), i32>,
}

/// The methods whose ioctl form libibverbs tries before the write command
/// of the same verb: (object, method). See the module note.
const WRITE_TWINS: &[(u16, u16)] = &[
    (0, 0),  // DEVICE INVOKE_WRITE
    (0, 3),  // DEVICE GET_CONTEXT
    (1, 0),  // PD_DESTROY
    (3, 0),  // CQ_CREATE
    (3, 1),  // CQ_DESTROY
    (4, 0),  // QP_CREATE
    (4, 1),  // QP_DESTROY
    (5, 0),  // SRQ_CREATE
    (5, 1),  // SRQ_DESTROY
    (6, 0),  // AH_DESTROY
    (7, 1),  // MR_DESTROY
    (8, 0),  // MW_DESTROY
    (9, 0),  // FLOW_DESTROY
    (10, 0), // XRCD_DESTROY
    (11, 0), // RWQ_IND_TBL_DESTROY
    (12, 0), // WQ_CREATE
    (12, 1), // WQ_DESTROY
];

/// A method the device answers: its object, id, name, attributes and handler.
pub struct Method<C> {
    /// Object id.
    pub object: u16,
    /// Method id.
    pub method: u16,
    /// Name for the trace.
    pub name: &'static str,
    /// Attribute specification.
    pub attrs: &'static [Spec],
    /// The handler, given the checked bundle and the caller's state.
    pub run: fn(&Bundle<'_>, &C) -> Result<(), i32>,
}

/// Runs `ioctl(fd, request, arg)` against `methods` (the header and
/// attribute checks of `ib_uverbs_ioctl`, then the handler with `ctx`).
pub fn run<C>(mem: &ProcMem, pid: Pid, request: u64, arg: u64, methods: &[Method<C>], ctx: &C) -> Outcome {
    if request != RDMA_VERBS_IOCTL {
        return Outcome { what: format!("request={request:#x}"), res: Err(errno::ENOTTY) };
    }
    let mut hdr = [0u8; HDR_LEN];
    if mem.read(pid, arg, &mut hdr).is_err() {
        return Outcome { what: "RDMA_VERBS_IOCTL".into(), res: Err(errno::EFAULT) };
    }
    let (object, method, nattrs) = (u16_at(&hdr, 2), u16_at(&hdr, 4), u16_at(&hdr, 6));
    let found = methods.iter().find(|m| m.object == object && m.method == method);
    let what = match found {
        Some(m) => m.name.to_string(),
        None => format!("object={object:#x} method={method:#x} attrs={nattrs}"),
    };
    let res = check_and_run(mem, pid, arg, &hdr, found, ctx);
    Outcome { what, res }
}

fn check_and_run<C>(
    mem: &ProcMem,
    pid: Pid,
    arg: u64,
    hdr: &[u8],
    found: Option<&Method<C>>,
    ctx: &C,
) -> Result<(), i32> {
    let (len, nattrs) = (usize::from(u16_at(hdr, 0)), usize::from(u16_at(hdr, 6)));
    if len > MAX_LEN || len != HDR_LEN + nattrs * ATTR_LEN {
        return Err(errno::EINVAL);
    }
    if u64_at(hdr, 8) != 0 || u32_at(hdr, 20) != 0 {
        return Err(errno::EPROTONOSUPPORT); // reserved1, reserved2
    }
    if u32_at(hdr, 16) != DRIVER_MLX5 {
        return Err(errno::EINVAL);
    }
    let Some(m) = found else {
        // not in this device's tree: see the module note
        let id = (u16_at(hdr, 2), u16_at(hdr, 4));
        return Err(if WRITE_TWINS.contains(&id) { errno::EPROTONOSUPPORT } else { errno::EOPNOTSUPP });
    };
    let mut raw = vec![0u8; nattrs * ATTR_LEN];
    mem.read(pid, arg + HDR_LEN as u64, &mut raw).map_err(|_| errno::EFAULT)?;
    let mut got: Vec<Option<Attr>> = vec![None; m.attrs.len()];
    for (idx, a) in raw.chunks_exact(ATTR_LEN).enumerate() {
        let (id, alen, flags, reserved, data) = (u16_at(a, 0), u16_at(a, 2), u16_at(a, 4), u16_at(a, 6), u64_at(a, 8));
        let Some(at) = m.attrs.iter().position(|s| s.id == id) else {
            // unknown to this kernel: fatal only when userspace needs it
            if flags & F_MANDATORY != 0 {
                return Err(errno::EPROTONOSUPPORT);
            }
            continue;
        };
        if got[at].is_some() {
            return Err(errno::EINVAL); // duplicate
        }
        let (min, max) = m.attrs[at].kind.bounds();
        if alen < min || alen > max || reserved != 0 {
            return Err(errno::EINVAL);
        }
        got[at] = Some(Attr { idx, flags, len: alen, data });
    }
    if m.attrs.iter().zip(&got).any(|(s, g)| s.mandatory && g.is_none()) {
        return Err(errno::EINVAL);
    }
    let b = Bundle { mem, pid, arg, specs: m.attrs, got };
    (m.run)(&b, ctx)
}
