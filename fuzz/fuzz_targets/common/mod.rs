//! Fake rxe rings on plain memory for the data-path fuzz targets, built as
//! `benches/rings.rs` builds them: a memfd stands in for the device file,
//! gets an `rxe_queue_buf` header, and is mapped by the same `Queue::map`
//! that maps the kernel's rings. The target plays the kernel through a
//! second mapping of the same memfd.
#![allow(dead_code)]

pub mod siw;

use rustix::fd::OwnedFd;
use verbs::mmap::Mapping;
use verbs::providers::rxe::queue::{Mminfo, Queue, CONSUMER_INDEX, DATA, INDEX_MASK, LOG2_ELEM_SIZE, PRODUCER_INDEX};

/// Reads the fuzz input front to back; past its end everything is 0.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | u64::from(self.u32()) << 32
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A ring of `slots` elements of `1 << log2` bytes with the given indices,
/// mapped as the library maps the kernel's, plus the "kernel's" view.
pub struct Ring<const MIN: usize> {
    pub q: Queue<MIN>,
    pub kernel: Mapping,
    pub len: usize,
    _fd: OwnedFd,
}

impl<const MIN: usize> Ring<MIN> {
    pub fn new(slots: u32, log2: u32, producer: u32, consumer: u32) -> Self {
        let fd = rustix::fs::memfd_create("verbs-fuzz-ring", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        let len = DATA + ((slots as usize) << log2);
        rustix::fs::ftruncate(&fd, len as u64).unwrap();
        let mut kernel = Mapping::new("fuzz", &fd, 0, len).unwrap();
        assert!(kernel.write::<u32>(LOG2_ELEM_SIZE, log2) && kernel.write::<u32>(INDEX_MASK, slots - 1));
        assert!(kernel.write::<u32>(PRODUCER_INDEX, producer & (slots - 1)));
        assert!(kernel.write::<u32>(CONSUMER_INDEX, consumer & (slots - 1)));
        let q = Queue::map("fuzz", &fd, Mminfo { offset: 0, size: len as u32, pad: 0 }).unwrap();
        Self { q, kernel, len, _fd: fd }
    }

    pub fn producer(&mut self) -> u32 {
        self.kernel.read::<u32>(PRODUCER_INDEX).unwrap()
    }

    pub fn consumer(&mut self) -> u32 {
        self.kernel.read::<u32>(CONSUMER_INDEX).unwrap()
    }

    /// The bytes of slot `i` (`i & mask`) as the kernel sees them.
    pub fn slot_bytes(&mut self, i: u32, out: &mut Vec<u8>) {
        out.clear();
        let off = self.q.slot_offset(i);
        for at in off..off + self.q.elem_size() {
            out.push(self.kernel.read::<u8>(at).unwrap());
        }
    }
}
