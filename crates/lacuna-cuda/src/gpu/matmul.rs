//! The matmul launcher: activations rounded or quantized to the weight's partner format,
//! then the GEMM kernel of the weight's layout.

use super::buffers::{DevView, DevWeight, addr, scratch};
use super::{Arg, Gpu, grid};
use crate::repack::Layout;
use crate::{Error, Result};

impl Gpu {
    /// `y[t x n] = x[t x k] . W^T`.
    pub fn matmul(
        &mut self,
        x: DevView<'_>,
        t: usize,
        w: &DevWeight,
        y: DevView<'_>,
    ) -> Result<()> {
        let (n, k) = (w.n, w.k);
        if x.len != t * k || y.len != t * n {
            return Err(Error::Shape(format!(
                "matmul {t}x{k} . {n}x{k} into {}",
                y.len
            )));
        }
        if t == 0 {
            return Ok(());
        }
        let tiles = ((n.div_ceil(64)) as u32, (t.div_ceil(64)) as u32);
        let st = &self.stream;
        match w.layout {
            Layout::F16 | Layout::BF16 => {
                let need = t * k;
                let xh = scratch(st, &mut self.xh, need)?;
                let round = if w.layout == Layout::F16 {
                    "round_f16"
                } else {
                    "round_bf16"
                };
                self.launch(round, (grid(need), 1), 256, &[&x.ptr, &(need as u64), &xh])?;
                let wh = addr(&w.half, &self.stream);
                self.launch(
                    w.layout.kernel(),
                    tiles,
                    128,
                    &[&wh, &xh, &y.ptr, &(n as i32), &(k as i32), &(t as i32)],
                )
            }
            Layout::F32 => {
                let wf = addr(&w.full, st);
                self.launch(
                    "gemm_f32",
                    tiles,
                    256,
                    &[&wf, &x.ptr, &y.ptr, &(n as i32), &(k as i32), &(t as i32)],
                )
            }
            layout => {
                let kfmt = layout.is_k();
                let (nd, ns) = if kfmt {
                    (t * k / 256, t * k / 16)
                } else {
                    (t * k / 32, 1)
                };
                let xq = scratch(st, &mut self.xq, t * k)?;
                let xd = scratch(st, &mut self.xd, nd)?;
                let xs = scratch(st, &mut self.xs, ns)?;
                if kfmt {
                    self.launch(
                        "quantize_q8k",
                        (t as u32, (k / 256) as u32),
                        32,
                        &[&x.ptr, &(k as i32), &xq, &xd, &xs],
                    )?;
                } else {
                    self.launch(
                        "quantize_q8_0",
                        (t as u32, (k / 32) as u32),
                        32,
                        &[&x.ptr, &(k as i32), &xq, &xd],
                    )?;
                }
                // Split k until the product has about 512 blocks (several per
                // multiprocessor), at least 2 chunks of 256 per split.
                let chunks = k.div_ceil(256);
                let blocks = tiles.0 as usize * tiles.1 as usize;
                let splits = 512usize.div_ceil(blocks).min(chunks / 2).clamp(1, 16);
                let part = if splits > 1 {
                    scratch(st, &mut self.part, splits * t * n)?
                } else {
                    y.ptr
                };
                let st = &self.stream;
                let args: [&dyn Arg; 14] = [
                    &addr(&w.q, st),
                    &addr(&w.sc, st),
                    &addr(&w.mn, st),
                    &addr(&w.d, st),
                    &addr(&w.dmin, st),
                    &xq,
                    &xd,
                    &xs,
                    &y.ptr,
                    &part,
                    &(n as i32),
                    &(k as i32),
                    &(t as i32),
                    &(splits as i32),
                ];
                let dims = (tiles.0, tiles.1 * splits as u32);
                self.launch(layout.kernel(), dims, 128, &args)?;
                if splits > 1 {
                    let len = t * n;
                    self.launch(
                        "sum_splits",
                        (grid(len), 1),
                        256,
                        &[&part, &(len as u64), &(splits as i32), &y.ptr],
                    )?;
                }
                Ok(())
            }
        }
    }
}
