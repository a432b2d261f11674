//! Fake siw arrays on plain memory for the siw fuzz targets: a memfd
//! stands in for the device file and is mapped by the same `Ring::map`
//! that maps the kernel's arrays; the target plays the kernel through a
//! second mapping of it.

use rustix::fd::OwnedFd;
use verbs::mmap::Mapping;
use verbs::providers::siw::ring::Ring;

/// `n` elements of `E` bytes (plus `tail`), and the "kernel's" view.
pub struct Array<const E: usize> {
    pub q: Ring<E>,
    pub kernel: Mapping,
    _fd: OwnedFd,
}

impl<const E: usize> Array<E> {
    pub fn new(n: u32, tail: usize) -> Self {
        let fd = rustix::fs::memfd_create("verbs-fuzz-siw", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        let len = n as usize * E + tail;
        rustix::fs::ftruncate(&fd, len as u64).unwrap();
        let kernel = Mapping::new("fuzz", &fd, 0, len).unwrap();
        let q = Ring::<E>::map("fuzz", &fd, 0, n, tail).unwrap();
        Self { q, kernel, _fd: fd }
    }

    /// Every byte of every element, as the kernel sees them.
    pub fn bytes(&mut self) -> Vec<u8> {
        (0..self.q.len() as usize * E).map(|at| self.kernel.read::<u8>(at).unwrap()).collect()
    }

    /// The `u16` flags of work element `i`.
    pub fn flags16(&mut self, i: u32) -> u16 {
        self.kernel.read::<u16>(i as usize * E + 8).unwrap()
    }
}
