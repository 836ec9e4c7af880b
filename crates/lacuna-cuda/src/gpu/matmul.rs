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
                let st = &self.stream;
                let args: [&dyn Arg; 12] = [
                    &addr(&w.q, st),
                    &addr(&w.sc, st),
                    &addr(&w.mn, st),
                    &addr(&w.d, st),
                    &addr(&w.dmin, st),
                    &xq,
                    &xd,
                    &xs,
                    &y.ptr,
                    &(n as i32),
                    &(k as i32),
                    &(t as i32),
                ];
                self.launch(layout.kernel(), tiles, 128, &args)
            }
        }
    }
}
