//! Host memory of the applications, as the NIC sees it: DMA by process id
//! and virtual address, through `process_vm_readv` / `process_vm_writev`.
//!
//! # Safety
//! The only unsafe code is the two system calls. They read and write the
//! *other* process's memory (the kernel checks the addresses there and
//! answers EFAULT) and this process's buffers only through the `&[u8]` /
//! `&mut [u8]` handed in, whose lengths bound what the kernel touches.
#![allow(unsafe_code)]

use core::fmt;

/// A process id of an application using the device.
pub type Pid = i32;

/// A DMA that could not be done: the address is not mapped in the target
/// process (or the process is gone). The engine turns this into a
/// protection error CQE, as a NIC does on an IOMMU/ATS fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaFault {
    /// Process whose memory was addressed.
    pub pid: Pid,
    /// First address of the access.
    pub addr: u64,
    /// Length of the access.
    pub len: usize,
}

impl fmt::Display for DmaFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DMA fault: pid {} addr {:#x} len {}", self.pid, self.addr, self.len)
    }
}

/// What the engine needs of host memory. Production: [`ProcMem`]; unit
/// tests of the engine use an in-memory fake.
pub trait HostMem {
    /// Reads `buf.len()` bytes at `addr` of `pid`.
    fn read(&self, pid: Pid, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault>;
    /// Writes `buf` at `addr` of `pid`.
    fn write(&self, pid: Pid, addr: u64, buf: &[u8]) -> Result<(), DmaFault>;

    /// Reads a big-endian u32 (doorbell records, WQE fields).
    fn read_be32(&self, pid: Pid, addr: u64) -> Result<u32, DmaFault> {
        let mut b = [0u8; 4];
        self.read(pid, addr, &mut b)?;
        Ok(u32::from_be_bytes(b))
    }
}

/// Real DMA into other processes (needs ptrace rights over them: same user,
/// or root).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProcMem;

impl HostMem for ProcMem {
    fn read(&self, pid: Pid, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        let fault = DmaFault { pid, addr, len: buf.len() };
        if buf.is_empty() {
            return Ok(());
        }
        let local = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: `local` describes exactly `buf`, which we borrow mutably for
        // the call, so the kernel writes only memory we own; `remote` is an
        // address in another process, which the kernel validates (EFAULT).
        let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
        if n == buf.len() as isize { Ok(()) } else { Err(fault) }
    }

    fn write(&self, pid: Pid, addr: u64, buf: &[u8]) -> Result<(), DmaFault> {
        let fault = DmaFault { pid, addr, len: buf.len() };
        if buf.is_empty() {
            return Ok(());
        }
        let local = libc::iovec { iov_base: buf.as_ptr() as *mut libc::c_void, iov_len: buf.len() };
        let remote = libc::iovec { iov_base: addr as usize as *mut libc::c_void, iov_len: buf.len() };
        // SAFETY: `local` describes exactly `buf`, which the kernel only reads
        // (process_vm_writev reads the local iovecs); `remote` is validated by
        // the kernel in the target process (EFAULT).
        let n = unsafe { libc::process_vm_writev(pid, &local, 1, &remote, 1, 0) };
        if n == buf.len() as isize { Ok(()) } else { Err(fault) }
    }
}

/// A fake host memory for engine unit tests: one flat byte array per pid,
/// addressed from `base`.
#[derive(Debug, Default)]
pub struct FakeMem {
    regions: std::sync::Mutex<Vec<(Pid, u64, Vec<u8>)>>,
}

impl FakeMem {
    /// Adds `len` zeroed bytes at `base` for `pid`.
    pub fn add(&self, pid: Pid, base: u64, len: usize) {
        self.regions.lock().unwrap().push((pid, base, vec![0; len]));
    }

    fn with<R>(&self, pid: Pid, addr: u64, len: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, DmaFault> {
        let mut regions = self.regions.lock().unwrap();
        for (p, base, bytes) in regions.iter_mut() {
            if *p == pid && addr >= *base && addr - *base + len as u64 <= bytes.len() as u64 {
                let off = (addr - *base) as usize;
                return Ok(f(&mut bytes[off..off + len]));
            }
        }
        Err(DmaFault { pid, addr, len })
    }
}

impl HostMem for FakeMem {
    fn read(&self, pid: Pid, addr: u64, buf: &mut [u8]) -> Result<(), DmaFault> {
        self.with(pid, addr, buf.len(), |m| buf.copy_from_slice(m))
    }
    fn write(&self, pid: Pid, addr: u64, buf: &[u8]) -> Result<(), DmaFault> {
        self.with(pid, addr, buf.len(), |m| m.copy_from_slice(buf))
    }
}
