//! An `RDMA_VERBS_IOCTL` frame built on the stack.
//!
//! The frame is `struct ib_uverbs_ioctl_hdr` followed by up to `N`
//! `struct ib_uverbs_attr`. Attributes that point at memory take a borrow
//! of lifetime `'a` — the frame's own lifetime — so the pointed-to data
//! outlives every ioctl the frame is used for (the invariant
//! [`super::channel`] relies on). Inputs of at most 8 bytes are carried
//! inline in the attribute, as the kernel expects.

use core::ffi::c_void;
use core::marker::PhantomData;

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes};

use crate::abi::ioctl::{IoctlAttr, IoctlHdr, UVERBS_ATTR_F_MANDATORY};
use crate::abi::RdmaDriverId;

/// Position of an attribute in a frame, to read what the kernel wrote back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttrSlot(usize);

#[derive(FromZeros)]
#[repr(C)]
struct Frame<const N: usize> {
    hdr: IoctlHdr,
    attrs: [IoctlAttr; N],
}

/// A stack-built ioctl frame with room for `N` attributes.
///
/// Adding more than `N` attributes is a programming error of this crate:
/// the extra attribute is dropped and the frame marked overflowed, and
/// [`IoctlBuf::overflowed`] reports it (the channel refuses such frames).
pub struct IoctlBuf<'a, const N: usize> {
    frame: Frame<N>,
    used: usize,
    overflow: bool,
    _borrows: PhantomData<&'a mut [u8]>,
}

impl<'a, const N: usize> IoctlBuf<'a, N> {
    /// A frame for method `method_id` of object `object_id`.
    pub fn new(object_id: u16, method_id: u16) -> Self {
        let mut frame = Frame::<N>::new_zeroed();
        frame.hdr.object_id = object_id;
        frame.hdr.method_id = method_id;
        Self {
            frame,
            used: 0,
            overflow: false,
            _borrows: PhantomData,
        }
    }

    fn push(&mut self, attr_id: u16, len: u16, data: u64) -> AttrSlot {
        if self.used == N {
            self.overflow = true;
            return AttrSlot(N);
        }
        let a = &mut self.frame.attrs[self.used];
        a.attr_id = attr_id;
        a.len = len;
        a.flags = UVERBS_ATTR_F_MANDATORY;
        a.data = data;
        self.used += 1;
        AttrSlot(self.used - 1)
    }

    /// A `PTR_IN` attribute over `bytes` (inline when at most 8 bytes).
    pub fn in_bytes(&mut self, attr_id: u16, bytes: &'a [u8]) -> AttrSlot {
        if bytes.len() <= 8 {
            let mut inline = [0u8; 8];
            inline[..bytes.len()].copy_from_slice(bytes);
            self.push(attr_id, bytes.len() as u16, u64::from_ne_bytes(inline))
        } else {
            self.push(attr_id, bytes.len() as u16, bytes.as_ptr() as u64)
        }
    }

    /// A `PTR_IN` attribute over a zerocopy struct.
    pub fn in_obj<T: IntoBytes + Immutable>(&mut self, attr_id: u16, v: &'a T) -> AttrSlot {
        self.in_bytes(attr_id, v.as_bytes())
    }

    /// A `PTR_IN` attribute holding a plain value inline (`len` = size of `T`,
    /// at most 8 bytes), as rdma-core's `fill_attr_in_uint32/64` do.
    pub fn in_value<T: IntoBytes + Immutable>(&mut self, attr_id: u16, v: T) -> AttrSlot {
        let b = v.as_bytes();
        let mut inline = [0u8; 8];
        let n = b.len().min(8);
        inline[..n].copy_from_slice(&b[..n]);
        self.push(attr_id, n as u16, u64::from_ne_bytes(inline))
    }

    /// A `CONST_IN` / `ENUM_IN`-style attribute: an 8-byte inline value.
    pub fn in_const(&mut self, attr_id: u16, value: u64) -> AttrSlot {
        self.push(attr_id, 8, value)
    }

    /// A `PTR_OUT` attribute: the kernel writes at most `size_of::<T>()`
    /// bytes into `out`.
    pub fn out_obj<T: FromBytes + IntoBytes>(&mut self, attr_id: u16, out: &'a mut T) -> AttrSlot {
        let b = out.as_mut_bytes();
        self.push(attr_id, b.len() as u16, b.as_mut_ptr() as u64)
    }

    /// A `PTR_OUT` attribute over raw bytes.
    pub fn out_bytes(&mut self, attr_id: u16, out: &'a mut [u8]) -> AttrSlot {
        self.push(attr_id, out.len() as u16, out.as_mut_ptr() as u64)
    }

    /// An `IDR` attribute naming an existing object by handle.
    pub fn idr_in(&mut self, attr_id: u16, handle: u32) -> AttrSlot {
        self.push(attr_id, 0, u64::from(handle))
    }

    /// An `IDR` attribute for an object the method creates; read its handle
    /// with [`Self::attr_data`] after the call.
    pub fn idr_new(&mut self, attr_id: u16) -> AttrSlot {
        self.push(attr_id, 0, 0)
    }

    /// An `FD` attribute for a file the method creates; read the fd number
    /// with [`Self::attr_data`] after the call.
    pub fn fd_new(&mut self, attr_id: u16) -> AttrSlot {
        self.push(attr_id, 0, 0)
    }

    /// An `FD` attribute naming an existing file descriptor.
    pub fn fd_in(&mut self, attr_id: u16, fd: rustix::fd::BorrowedFd<'a>) -> AttrSlot {
        use rustix::fd::AsRawFd;
        self.push(attr_id, 0, fd.as_raw_fd() as u32 as u64)
    }

    /// The attribute's `data` after the kernel wrote it back (new handles,
    /// new fds), or `None` for a slot that was never added.
    pub fn attr_data(&self, slot: AttrSlot) -> Option<u64> {
        self.frame.attrs[..self.used].get(slot.0).map(|a| a.data)
    }

    /// Whether the kernel marked an output attribute as written
    /// (`UVERBS_ATTR_F_VALID_OUTPUT`).
    pub fn valid_output(&self, slot: AttrSlot) -> bool {
        self.frame.attrs[..self.used]
            .get(slot.0)
            .is_some_and(|a| a.flags & crate::abi::ioctl::UVERBS_ATTR_F_VALID_OUTPUT != 0)
    }

    /// Number of attributes filled in.
    pub fn len(&self) -> usize {
        self.used
    }

    /// Whether no attribute was filled in.
    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// Whether more than `N` attributes were added.
    pub fn overflowed(&self) -> bool {
        self.overflow
    }

    /// Seals the header (length, attribute count, driver id) and returns the
    /// address of the frame for the ioctl.
    pub(super) fn finish(&mut self, driver_id: RdmaDriverId) -> *mut c_void {
        let len = size_of::<IoctlHdr>() + self.used * size_of::<IoctlAttr>();
        self.frame.hdr.length = len as u16;
        self.frame.hdr.num_attrs = self.used as u16;
        self.frame.hdr.driver_id = driver_id.0;
        (&mut self.frame as *mut Frame<N>).cast()
    }

    /// The header as it will be sent (after [`Self::seal`]), for tests.
    pub fn header(&self) -> &IoctlHdr {
        &self.frame.hdr
    }

    /// The filled attributes, for tests and debugging.
    pub fn attrs(&self) -> &[IoctlAttr] {
        &self.frame.attrs[..self.used]
    }

    /// Seals the header without sending (tests inspect the result).
    pub fn seal(&mut self, driver_id: RdmaDriverId) {
        self.finish(driver_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::ioctl::UVERBS_ATTR_F_VALID_OUTPUT;

    #[test]
    fn small_inputs_are_inline_large_ones_are_pointers() {
        let small = [1u8, 2, 3];
        let large = [7u8; 24];
        let mut b = IoctlBuf::<4>::new(3, 4);
        b.in_bytes(10, &small);
        b.in_bytes(11, &large);
        b.in_const(12, 0xdead_beef);
        b.seal(RdmaDriverId::RXE);
        let a = b.attrs();
        assert_eq!(a.len(), 3);
        assert_eq!((a[0].attr_id, a[0].len), (10, 3));
        assert_eq!(a[0].data.to_ne_bytes()[..3], small);
        assert_eq!((a[1].attr_id, a[1].len), (11, 24));
        assert_eq!(a[1].data, large.as_ptr() as u64);
        assert_eq!((a[2].len, a[2].data), (8, 0xdead_beef));
        assert!(a.iter().all(|x| x.flags == UVERBS_ATTR_F_MANDATORY));
        let h = b.header();
        assert_eq!((h.object_id, h.method_id, h.num_attrs), (3, 4, 3));
        assert_eq!(usize::from(h.length), 24 + 3 * 16);
        assert_eq!(h.driver_id, 14);
    }

    #[test]
    fn outputs_point_at_the_borrowed_object() {
        let mut out = 0u64;
        let addr = &raw const out as u64;
        let mut b = IoctlBuf::<1>::new(0, 0);
        let slot = b.out_obj(5, &mut out);
        assert_eq!(b.attrs()[0].data, addr);
        assert_eq!(b.attrs()[0].len, 8);
        assert!(!b.valid_output(slot));
        assert_eq!(b.attr_data(slot), Some(addr));
    }

    #[test]
    fn overflow_is_reported_not_written() {
        let mut b = IoctlBuf::<1>::new(0, 0);
        b.idr_in(1, 7);
        let s = b.idr_new(2);
        assert!(b.overflowed());
        assert_eq!(b.len(), 1);
        assert_eq!(b.attr_data(s), None);
        let _ = UVERBS_ATTR_F_VALID_OUTPUT;
    }
}
