//! uverbs write commands as the kernel receives them: the header(s), the
//! core command, the driver's (mlx5) udata, and where the core and driver
//! responses go — read from and written to the caller's memory.
//!
//! Layouts: `struct ib_uverbs_cmd_hdr` (in_words/out_words in 4-byte units,
//! the header included in in_words), and for extended commands
//! (`IB_USER_VERBS_CMD_FLAG_EXTENDED`) `struct ib_uverbs_ex_cmd_hdr`
//! (8-byte units, core and provider parts counted apart, the response
//! address in the header).

use crate::mem::{HostMem, Pid};

/// IB_USER_VERBS_CMD_FLAG_EXTENDED
pub const FLAG_EXTENDED: u32 = 0x8000_0000;
/// Largest command accepted (bytes).
const MAX_CMD: u64 = 64 * 1024;

/// Errno values the commands answer with.
pub mod errno {
    pub use libc::{EBUSY, EFAULT, EINVAL, ENODATA, ENOENT, ENOMEM, ENOSPC, ENOTTY, EOPNOTSUPP, EPERM, EPROTONOSUPPORT};
}

/// Core sizes of a command: (name, core in bytes incl. the response
/// pointer, has a response pointer, core out bytes).
pub fn layout(cmd: u32, ex: bool) -> Option<(usize, bool, usize)> {
    Some(match (ex, cmd) {
        (false, 0) => (8, true, 8),      // GET_CONTEXT
        (false, 1) => (8, true, 176),    // QUERY_DEVICE
        (false, 2) => (16, true, 40),    // QUERY_PORT
        (false, 3) => (8, true, 4),      // ALLOC_PD
        (false, 4) => (4, false, 0),     // DEALLOC_PD
        (false, 5) => (56, true, 4),     // CREATE_AH
        (false, 8) => (4, false, 0),     // DESTROY_AH
        (false, 9) => (40, true, 12),    // REG_MR
        (false, 11) => (48, true, 8),    // REREG_MR
        (false, 13) => (4, false, 0),    // DEREG_MR
        (false, 14) => (16, true, 8),    // ALLOC_MW
        (false, 16) => (4, false, 0),    // DEALLOC_MW
        (false, 17) => (8, true, 4),     // CREATE_COMP_CHANNEL
        (false, 18) => (32, true, 8),    // CREATE_CQ
        (false, 19) => (16, true, 8),    // RESIZE_CQ
        (false, 20) => (16, true, 8),    // DESTROY_CQ
        (false, 23) => (8, false, 0),    // REQ_NOTIFY_CQ
        (false, 24) => (56, true, 32),   // CREATE_QP
        (false, 25) => (16, true, 128),  // QUERY_QP
        (false, 26) => (112, false, 0),  // MODIFY_QP
        (false, 27) => (16, true, 4),    // DESTROY_QP
        (false, 30) => (24, false, 0),   // ATTACH_MCAST
        (false, 31) => (24, false, 0),   // DETACH_MCAST
        (false, 32) => (32, true, 16),   // CREATE_SRQ
        (false, 33) => (16, false, 0),   // MODIFY_SRQ
        (false, 34) => (16, true, 16),   // QUERY_SRQ
        (false, 35) => (16, true, 4),    // DESTROY_SRQ
        (true, 1) => (8, false, 176 + 8), // EX QUERY_DEVICE (base + comp_mask, response_length)
        (true, 18) => (32, false, 16),   // EX CREATE_CQ
        (true, 24) => (64, false, 40),   // EX CREATE_QP
        (true, 26) => (120, false, 8),   // EX MODIFY_QP
        _ => return None,
    })
}

/// One decoded write command.
#[derive(Debug)]
pub struct Req {
    /// Command number (without the extended flag).
    pub cmd: u32,
    /// Extended command.
    pub ex: bool,
    /// Core command bytes without the response pointer (for commands that
    /// have one), so non-extended and extended forms share offsets.
    pub core: Vec<u8>,
    /// The driver's input (mlx5 udata).
    pub udata: Vec<u8>,
    /// Where the core response goes (0: none).
    pub resp: u64,
    /// Room for the core response.
    pub core_out: usize,
    /// Where the driver response goes, and its room.
    pub drv_out: u64,
    /// Room for the driver response.
    pub drv_out_len: usize,
    /// The count `write` returns on success.
    pub len: u64,
}

/// What a command handler hands back.
#[derive(Debug, Default)]
pub struct Resp {
    /// Core response bytes.
    pub core: Vec<u8>,
    /// Driver response bytes.
    pub drv: Vec<u8>,
    /// Descriptors for the process, each with the offset in the core
    /// response where its number goes.
    pub fds: Vec<(std::os::fd::OwnedFd, usize)>,
    /// Detail for the trace.
    pub note: String,
}

fn rd(mem: &impl HostMem, pid: Pid, addr: u64, len: usize) -> Result<Vec<u8>, i32> {
    let mut v = vec![0u8; len];
    mem.read(pid, addr, &mut v).map_err(|_| errno::EFAULT)?;
    Ok(v)
}

/// Reads and splits the command `write(fd, buf, len)` carries.
pub fn parse(mem: &impl HostMem, pid: Pid, buf: u64, len: u64) -> Result<Req, (u32, i32)> {
    if !(8..=MAX_CMD).contains(&len) {
        return Err((u32::MAX, errno::EINVAL));
    }
    let all = rd(mem, pid, buf, len as usize).map_err(|e| (u32::MAX, e))?;
    let word = u32_at(&all, 0);
    let (in_words, out_words) = (u16_at(&all, 4) as usize, u16_at(&all, 6) as usize);
    let ex = word & FLAG_EXTENDED != 0;
    let cmd = word & 0xff;
    let fail = |e| Err((cmd, e));
    let Some((core_in, has_resp, core_out)) = layout(cmd, ex) else {
        return fail(errno::EOPNOTSUPP);
    };
    if !ex {
        if in_words * 4 != all.len() || all.len() < 8 + core_in {
            return fail(errno::EINVAL);
        }
        let body = &all[8..];
        let resp = if has_resp { u64_at(body, 0) } else { 0 };
        let skip = if has_resp { 8 } else { 0 };
        let out = out_words * 4;
        if has_resp && out < core_out {
            return fail(errno::ENOSPC);
        }
        Ok(Req {
            cmd,
            ex,
            core: body[skip..core_in].to_vec(),
            udata: body[core_in..].to_vec(),
            resp,
            core_out: if has_resp { core_out } else { 0 },
            drv_out: resp + core_out as u64,
            drv_out_len: out.saturating_sub(core_out),
            len,
        })
    } else {
        // hdr(8) + ex_hdr(16) + core(in_words*8) + provider(provider_in_words*8)
        if all.len() < 24 {
            return fail(errno::EINVAL);
        }
        let resp = u64_at(&all, 8);
        let (p_in, p_out) = (u16_at(&all, 16) as usize * 8, u16_at(&all, 18) as usize * 8);
        let c_in = in_words * 8;
        if 24 + c_in + p_in != all.len() || c_in < core_in {
            return fail(errno::EINVAL);
        }
        let c_out = out_words * 8;
        if c_out < core_out {
            return fail(errno::ENOSPC);
        }
        Ok(Req {
            cmd,
            ex,
            core: all[24..24 + c_in].to_vec(),
            udata: all[24 + c_in..].to_vec(),
            resp,
            core_out: c_out,
            drv_out: resp + c_out as u64,
            drv_out_len: p_out,
            len,
        })
    }
}

/// Writes a handler's responses where the command said, truncated to the
/// room given (as the kernel's copy_to_user of `min(len, size)`).
pub fn write_resp(mem: &impl HostMem, pid: Pid, req: &Req, r: &Resp) -> Result<(), i32> {
    if req.resp != 0 && !r.core.is_empty() {
        let n = r.core.len().min(req.core_out);
        mem.write(pid, req.resp, &r.core[..n]).map_err(|_| errno::EFAULT)?;
    }
    if req.drv_out_len > 0 && !r.drv.is_empty() {
        let n = r.drv.len().min(req.drv_out_len);
        mem.write(pid, req.drv_out, &r.drv[..n]).map_err(|_| errno::EFAULT)?;
    }
    Ok(())
}

/// Little-endian field readers that give 0 past the end (short udata reads
/// as zeros, as the kernel's `ib_copy_from_udata` of a shorter struct).
pub fn u8_at(b: &[u8], at: usize) -> u8 {
    b.get(at).copied().unwrap_or(0)
}
/// See [`u8_at`].
pub fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([u8_at(b, at), u8_at(b, at + 1)])
}
/// See [`u8_at`].
pub fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([u8_at(b, at), u8_at(b, at + 1), u8_at(b, at + 2), u8_at(b, at + 3)])
}
/// See [`u8_at`].
pub fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | u64::from(u32_at(b, at + 4)) << 32
}

/// A response under construction: a zeroed buffer with field writers.
#[derive(Debug)]
pub struct Out(pub Vec<u8>);

impl Out {
    /// `len` zero bytes.
    pub fn new(len: usize) -> Self {
        Out(vec![0; len])
    }
    /// Stores a u8.
    pub fn u8(&mut self, at: usize, v: u8) -> &mut Self {
        self.0[at] = v;
        self
    }
    /// Stores a little-endian u16.
    pub fn u16(&mut self, at: usize, v: u16) -> &mut Self {
        self.0[at..at + 2].copy_from_slice(&v.to_le_bytes());
        self
    }
    /// Stores a little-endian u32.
    pub fn u32(&mut self, at: usize, v: u32) -> &mut Self {
        self.0[at..at + 4].copy_from_slice(&v.to_le_bytes());
        self
    }
    /// Stores a little-endian u64.
    pub fn u64(&mut self, at: usize, v: u64) -> &mut Self {
        self.0[at..at + 8].copy_from_slice(&v.to_le_bytes());
        self
    }
    /// Stores bytes.
    pub fn bytes(&mut self, at: usize, v: &[u8]) -> &mut Self {
        self.0[at..at + v.len()].copy_from_slice(v);
        self
    }
    /// The bytes.
    pub fn done(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mem::FakeMem;

    #[test]
    fn plain_and_extended_commands_split_like_the_kernel() {
        let mem = FakeMem::default();
        mem.add(1, 0x1000, 0x1000);
        // ALLOC_PD: hdr(in_words 4 = 16 B, out_words 2 = 4 core + 4 mlx5) + response + no udata
        let mut c = Out::new(16);
        c.u32(0, 3).u16(4, 4).u16(6, 2).u64(8, 0x1800);
        mem.write(1, 0x1000, &c.0).unwrap();
        let r = parse(&mem, 1, 0x1000, 16).unwrap();
        assert_eq!((r.cmd, r.ex, r.resp, r.core_out, r.drv_out, r.drv_out_len), (3, false, 0x1800, 4, 0x1804, 4));
        assert!(r.core.is_empty() && r.udata.is_empty());
        // a length that disagrees with in_words
        assert_eq!(parse(&mem, 1, 0x1000, 20).unwrap_err(), (3, errno::EINVAL));
        // EX CREATE_CQ: 24 B headers + 32 B core + 48 B mlx5 udata
        let mut c = Out::new(24 + 32 + 48);
        c.u32(0, FLAG_EXTENDED | 18).u16(4, 4).u16(6, 2).u64(8, 0x1900).u16(16, 6).u16(18, 1).u32(24 + 8, 255);
        mem.write(1, 0x1000, &c.0).unwrap();
        let r = parse(&mem, 1, 0x1000, 104).unwrap();
        assert_eq!((r.cmd, r.ex, r.resp, r.core_out, r.drv_out, r.drv_out_len), (18, true, 0x1900, 16, 0x1910, 8));
        assert_eq!((u32_at(&r.core, 8), r.udata.len()), (255, 48));
        // unknown command
        c.u32(0, 40);
        mem.write(1, 0x1000, &c.0[..8]).unwrap();
        assert_eq!(parse(&mem, 1, 0x1000, 8).unwrap_err(), (40, errno::EOPNOTSUPP));
        // unreadable buffer
        assert_eq!(parse(&mem, 1, 0x9000, 8).unwrap_err().1, errno::EFAULT);
    }
}
