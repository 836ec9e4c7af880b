//! Device memory: f32 buffers ([`DevBuf`]) and views of them ([`DevView`], plain
//! addresses, so that views of one buffer are values), repacked weights ([`DevWeight`]),
//! and the grow-only workspaces the launchers stage activations and index lists in.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr, ValidAsZeroBits};

use super::drv;
use crate::Result;
use crate::repack::Layout;

/// An f32 buffer in device memory (empty until first grown).
#[derive(Debug, Default)]
pub struct DevBuf {
    pub(super) slice: Option<CudaSlice<f32>>,
    pub(super) ptr: u64,
    pub(super) len: usize,
}

impl DevBuf {
    /// Elements held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A view of elements `range`.
    pub fn view(&self, range: std::ops::Range<usize>) -> DevView<'_> {
        assert!(
            range.start <= range.end && range.end <= self.len,
            "view out of bounds"
        );
        DevView {
            ptr: self.ptr + 4 * range.start as u64,
            len: range.len(),
            _buf: std::marker::PhantomData,
        }
    }
}

/// A range of a [`DevBuf`]: its device address and length.
#[derive(Debug, Clone, Copy)]
pub struct DevView<'a> {
    pub(super) ptr: u64,
    pub(super) len: usize,
    _buf: std::marker::PhantomData<&'a DevBuf>,
}

impl DevView<'_> {
    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A weight in device memory, in [`Repacked`]'s layout.
#[derive(Debug)]
pub struct DevWeight {
    /// The kernel that reads it.
    pub layout: Layout,
    /// Rows.
    pub n: usize,
    /// Columns.
    pub k: usize,
    pub(super) bytes: usize,
    pub(super) q: Option<CudaSlice<i8>>,
    pub(super) sc: Option<CudaSlice<i8>>,
    pub(super) mn: Option<CudaSlice<i8>>,
    pub(super) d: Option<CudaSlice<f32>>,
    pub(super) dmin: Option<CudaSlice<f32>>,
    pub(super) half: Option<CudaSlice<u16>>,
    pub(super) full: Option<CudaSlice<f32>>,
}

impl DevWeight {
    /// Device bytes it holds.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

pub(super) fn ptr_of<T>(s: &CudaSlice<T>, stream: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// The device address of an optional buffer (0, a null pointer, for one a layout lacks).
pub(super) fn addr<T>(s: &Option<CudaSlice<T>>, stream: &Arc<CudaStream>) -> u64 {
    s.as_ref().map_or(0, |s| ptr_of(s, stream))
}

/// Grows the workspace in `slot` to at least `n` elements (at least 1024, so small uploads
/// do not reallocate); returns its device address.
pub(super) fn scratch<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    slot: &mut Option<CudaSlice<T>>,
    n: usize,
) -> Result<u64> {
    if slot.as_ref().is_none_or(|s| s.len() < n) {
        *slot = Some(stream.alloc_zeros::<T>(n.max(1024)).map_err(drv("alloc"))?);
    }
    Ok(addr(slot, stream))
}

/// Copies `v` to the start of the workspace in `slot` (grown as needed).
pub(super) fn upload_scratch<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    slot: &mut Option<CudaSlice<T>>,
    v: &[T],
) -> Result<u64> {
    let at = scratch(stream, slot, v.len())?;
    if let Some(s) = slot {
        let mut head = s.slice_mut(0..v.len());
        stream.memcpy_htod(v, &mut head).map_err(drv("upload"))?;
    }
    Ok(at)
}
