//! rxe's shared ring (`struct rxe_queue_buf` of `<rdma/rdma_user_rxe.h>`)
//! and the `struct mminfo` that tells user space where to map it.
//!
//! Every rxe CQ, SQ, RQ and SRQ is one such ring in kernel memory:
//!
//! ```text
//! off   0: u32 log2_elem_size; u32 index_mask; u32 pad_1[30]
//! off 128: u32 producer_index; u32 pad_2[31]
//! off 256: u32 consumer_index; u32 pad_3[31]
//! off 384: u8  data[]   // element i at data + (i << log2_elem_size)
//! ```
//!
//! This file maps a ring and checks that the header the kernel wrote is
//! consistent with the mapping length before anything else trusts it.

use core::mem::size_of;
use core::sync::atomic::Ordering;

use rustix::fd::AsFd;
use static_assertions::const_assert_eq;

use crate::abi::abi_struct;
use crate::error::{Error, ErrorKind, Result};
use crate::mmap::Mapping;

abi_struct! {
    /// `struct mminfo`: where and how much of the device file to map.
    #[repr(C)]
    pub struct Mminfo {
        /// The `mmap` offset (a cookie the kernel assigned).
        pub offset: u64,
        /// Bytes to map.
        pub size: u32,
        /// Padding.
        pub pad: u32,
    }
}
const_assert_eq!(size_of::<Mminfo>(), 16);

/// Offset of `log2_elem_size` in the ring header.
pub const LOG2_ELEM_SIZE: usize = 0;
/// Offset of `index_mask`.
pub const INDEX_MASK: usize = 4;
/// Offset of `producer_index`.
pub const PRODUCER_INDEX: usize = 128;
/// Offset of `consumer_index`.
pub const CONSUMER_INDEX: usize = 256;
/// Offset of `data[]`, the first element.
pub const DATA: usize = 384;

/// A mapped rxe ring whose header has been checked.
#[derive(Debug)]
pub struct Queue {
    map: Mapping,
    mminfo: Mminfo,
    log2_elem_size: u32,
    index_mask: u32,
}

impl Queue {
    /// Maps the ring described by `mi` from the device file `fd` and checks
    /// its header: the element array `(index_mask + 1) << log2_elem_size`
    /// must fit in `mi.size` and the slot count must be a power of two.
    pub fn map<Fd: AsFd>(verb: &'static str, fd: Fd, mi: Mminfo) -> Result<Self> {
        let bad = || Error::new(verb, ErrorKind::Malformed);
        let len = mi.size as usize;
        if len < DATA {
            return Err(bad());
        }
        let map = Mapping::new(verb, fd, mi.offset, len)?;
        let log2 = map.read::<u32>(LOG2_ELEM_SIZE).ok_or_else(bad)?;
        let mask = map.read::<u32>(INDEX_MASK).ok_or_else(bad)?;
        let slots = u64::from(mask) + 1;
        if log2 >= 16 || !slots.is_power_of_two() {
            return Err(bad());
        }
        let need = (DATA as u64).checked_add(slots << log2).ok_or_else(bad)?;
        if need > len as u64 {
            return Err(bad());
        }
        Ok(Self {
            map,
            mminfo: mi,
            log2_elem_size: log2,
            index_mask: mask,
        })
    }

    /// Bytes per element (`1 << log2_elem_size`).
    pub fn elem_size(&self) -> usize {
        1 << self.log2_elem_size
    }

    /// Number of slots (`index_mask + 1`); one is always kept free, so the
    /// ring holds at most `slots() - 1` elements.
    pub fn slots(&self) -> u32 {
        self.index_mask.wrapping_add(1)
    }

    /// The `mminfo` this ring was mapped from.
    pub fn mminfo(&self) -> Mminfo {
        self.mminfo
    }

    /// The producer index as the other side last published it (acquire).
    pub fn producer(&self) -> u32 {
        self.map
            .atomic_u32(PRODUCER_INDEX)
            .map_or(0, |a| a.load(Ordering::Acquire))
    }

    /// The consumer index as the other side last published it (acquire).
    pub fn consumer(&self) -> u32 {
        self.map
            .atomic_u32(CONSUMER_INDEX)
            .map_or(0, |a| a.load(Ordering::Acquire))
    }

    /// The underlying mapping (for the data path).
    pub fn mapping(&self) -> &Mapping {
        &self.map
    }
}
