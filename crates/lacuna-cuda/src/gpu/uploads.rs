//! Allocation and host-device copies: weights and vectors at load, activation buffers grown
//! on demand (checked against free memory first), results read back, row lists uploaded.

use cudarc::driver::CudaSlice;

use super::buffers::{DevBuf, DevView, DevWeight, ptr_of, upload_scratch};
use super::{Gpu, drv};
use crate::repack::Repacked;
use crate::{Error, Result};

impl Gpu {
    /// `(free, total)` device memory now.
    pub fn mem(&self) -> Result<(u64, u64)> {
        let (f, t) = self.ctx.mem_get_info().map_err(drv("cuMemGetInfo"))?;
        Ok((f as u64, t as u64))
    }

    fn check_fits(&self, what: impl FnOnce() -> String, need: u64) -> Result<()> {
        let (free, total) = self.mem()?;
        if need > free {
            return Err(Error::OutOfMemory {
                what: what(),
                need,
                free,
                total,
            });
        }
        Ok(())
    }

    fn upload<T: cudarc::driver::DeviceRepr>(&self, v: &[T]) -> Result<Option<CudaSlice<T>>> {
        if v.is_empty() {
            return Ok(None);
        }
        self.stream.clone_htod(v).map(Some).map_err(drv("upload"))
    }

    /// Copies a repacked weight to the device.
    pub fn weight(&self, r: &Repacked) -> Result<DevWeight> {
        self.check_fits(|| format!("a {} x {} weight", r.n, r.k), r.bytes() as u64)?;
        Ok(DevWeight {
            layout: r.layout,
            n: r.n,
            k: r.k,
            bytes: r.bytes(),
            q: self.upload(&r.q)?,
            sc: self.upload(&r.sc)?,
            mn: self.upload(&r.mn)?,
            d: self.upload(&r.d)?,
            dmin: self.upload(&r.dmin)?,
            half: self.upload(&r.half)?,
            full: self.upload(&r.full)?,
        })
    }

    /// An f32 vector on the device.
    pub fn vector(&self, v: &[f32]) -> Result<DevBuf> {
        let mut b = DevBuf::default();
        self.ensure_f32(&mut b, v.len())?;
        if let Some(s) = &mut b.slice {
            self.stream.memcpy_htod(v, s).map_err(drv("upload"))?;
        }
        Ok(b)
    }

    /// Grows `b` to at least `len` elements, keeping its contents.
    pub fn ensure_f32(&self, b: &mut DevBuf, len: usize) -> Result<()> {
        if b.len >= len {
            return Ok(());
        }
        self.check_fits(
            || format!("an activation buffer of {len} floats"),
            4 * len as u64,
        )?;
        let mut fresh = self.stream.alloc_zeros::<f32>(len).map_err(drv("alloc"))?;
        if let Some(old) = &b.slice {
            let mut head = fresh.slice_mut(0..b.len);
            self.stream
                .memcpy_dtod(old, &mut head)
                .map_err(drv("copy"))?;
        }
        b.ptr = ptr_of(&fresh, &self.stream);
        b.len = len;
        b.slice = Some(fresh);
        Ok(())
    }

    /// Copies `src` to the host.
    pub fn download(&self, src: DevView<'_>, out: &mut [f32]) -> Result<()> {
        if out.len() != src.len {
            return Err(Error::Shape(format!(
                "download of {} floats into {}",
                src.len,
                out.len()
            )));
        }
        self.ctx.bind_to_thread().map_err(drv("bind context"))?;
        // SAFETY: `src` addresses `len` live floats of a buffer of this context, and `out`
        // holds as many; the copy is synchronous on this stream after all queued work.
        let r = unsafe {
            cudarc::driver::result::memcpy_dtoh_async(out, src.ptr, self.stream.cu_stream())
        };
        r.map_err(drv("download"))?;
        self.stream.synchronize().map_err(drv("synchronize"))
    }

    /// Copies host floats into `dst`.
    pub fn upload_into(&self, src: &[f32], dst: DevView<'_>) -> Result<()> {
        if src.len() != dst.len {
            return Err(Error::Shape("upload length".into()));
        }
        self.ctx.bind_to_thread().map_err(drv("bind context"))?;
        // SAFETY: `dst` addresses `len` live floats; `src` stays borrowed until the stream
        // is synchronised below.
        let r = unsafe {
            cudarc::driver::result::memcpy_htod_async(dst.ptr, src, self.stream.cu_stream())
        };
        r.map_err(drv("upload"))?;
        self.stream.synchronize().map_err(drv("synchronize"))
    }

    /// Uploads row indices (as i32) to the index workspace; returns its device address.
    pub(super) fn indices(&mut self, rows: &[usize]) -> Result<u64> {
        let v: Vec<i32> = rows.iter().map(|&r| r as i32).collect();
        upload_scratch(&self.stream, &mut self.idx, &v)
    }

    /// Uploads floats (a MoE expert's routing weights) to their workspace.
    pub(super) fn floats(&mut self, v: &[f32]) -> Result<u64> {
        upload_scratch(&self.stream, &mut self.fidx, v)
    }
}
