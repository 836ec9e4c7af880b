//! Launchers of the element-wise and row kernels: RMSNorm, RoPE, SwiGLU, adds, row copies,
//! the MoE scatter and slot sums, embedding rows.

use super::buffers::{DevView, DevWeight, addr, upload_scratch};
use super::{Gpu, grid};
use crate::repack::Layout;
use crate::{Error, Result};

impl Gpu {
    /// RMSNorm of each `w`-wide row of `x` times `w`.
    pub fn rms_norm(
        &self,
        x: DevView<'_>,
        w: DevView<'_>,
        eps: f32,
        out: DevView<'_>,
    ) -> Result<()> {
        let rows = x.len / w.len.max(1);
        self.launch(
            "rms_norm",
            (rows as u32, 1),
            256,
            &[&x.ptr, &w.ptr, &out.ptr, &(w.len as i32), &eps],
        )
    }

    /// RoPE in place (see the `rope` kernel): `x` is `t` rows of whole `head_dim`-wide
    /// heads, the first `n_rot` elements of each rotating (`n_rot` even, at most
    /// `head_dim`).
    #[allow(clippy::too_many_arguments)]
    pub fn rope(
        &self,
        x: DevView<'_>,
        t: usize,
        head_dim: usize,
        n_rot: usize,
        pos0: usize,
        freq_scale: f32,
        theta_scale: f32,
        neox: bool,
    ) -> Result<()> {
        let width = x.len / t.max(1);
        if head_dim == 0
            || n_rot % 2 != 0
            || n_rot > head_dim
            || t * width != x.len
            || width % head_dim != 0
        {
            return Err(Error::Shape(format!(
                "rope: {} floats in {t} rows of {head_dim}-wide heads, {n_rot} rotated",
                x.len
            )));
        }
        self.launch(
            "rope",
            (t as u32, 1),
            128,
            &[
                &x.ptr,
                &(width as i32),
                &(head_dim as i32),
                &(n_rot as i32),
                &(pos0 as i32),
                &freq_scale,
                &theta_scale,
                &i32::from(neox),
            ],
        )
    }

    /// `out = silu(gate) * up`.
    pub fn swiglu(&self, g: DevView<'_>, u: DevView<'_>, out: DevView<'_>) -> Result<()> {
        self.launch(
            "swiglu",
            (grid(out.len), 1),
            256,
            &[&g.ptr, &u.ptr, &out.ptr, &(out.len as u64)],
        )
    }

    /// `x += y`.
    pub fn add(&self, x: DevView<'_>, y: DevView<'_>) -> Result<()> {
        self.launch(
            "add",
            (grid(x.len), 1),
            256,
            &[&x.ptr, &y.ptr, &(x.len as u64)],
        )
    }

    /// Each `b`-wide row of `x` += `b`.
    pub fn add_bias(&self, x: DevView<'_>, b: DevView<'_>) -> Result<()> {
        self.launch(
            "add_bias",
            (grid(x.len), 1),
            256,
            &[&x.ptr, &b.ptr, &(b.len as i32), &(x.len as u64)],
        )
    }

    /// `dst[r] = src[rows[r] or r][col0..col0 + cols]`.
    pub fn copy_rows(
        &mut self,
        src: DevView<'_>,
        src_width: usize,
        col0: usize,
        rows: Option<&[usize]>,
        dst: DevView<'_>,
        cols: usize,
    ) -> Result<()> {
        let n = dst.len / cols.max(1);
        if n == 0 {
            return Ok(());
        }
        let rp = match rows {
            Some(r) => self.indices(r)?,
            None => 0,
        };
        self.launch(
            "copy_rows",
            (n as u32, 1),
            256,
            &[
                &src.ptr,
                &(src_width as i32),
                &(col0 as i32),
                &rp,
                &dst.ptr,
                &(cols as i32),
            ],
        )
    }

    /// `dst[to[r]] = scale[r] * src[r]`.
    pub fn scatter_scaled(
        &mut self,
        src: DevView<'_>,
        to: &[usize],
        scale: &[f32],
        dst: DevView<'_>,
        width: usize,
    ) -> Result<()> {
        if to.is_empty() {
            return Ok(());
        }
        let tp = self.indices(to)?;
        let sp = self.floats(scale)?;
        self.launch(
            "scatter_scaled",
            (to.len() as u32, 1),
            256,
            &[&src.ptr, &tp, &sp, &dst.ptr, &(width as i32)],
        )
    }

    /// `out[i] = sum of slots[i*k .. i*k + k]` in order.
    pub fn sum_slots(
        &self,
        slots: DevView<'_>,
        k: usize,
        width: usize,
        out: DevView<'_>,
    ) -> Result<()> {
        let n = out.len / width.max(1);
        self.launch(
            "sum_slots",
            (n as u32, 1),
            256,
            &[&slots.ptr, &(k as i32), &(width as i32), &out.ptr],
        )
    }

    /// Embedding rows of `tokens` (each below the table's rows) from a repacked table into
    /// `out`.
    pub fn get_rows(&mut self, table: &DevWeight, tokens: &[u32], out: DevView<'_>) -> Result<()> {
        if out.len != tokens.len() * table.k || tokens.iter().any(|&t| t as usize >= table.n) {
            return Err(Error::Shape(format!(
                "get_rows: {} tokens of a {}-row table into {} floats",
                tokens.len(),
                table.n,
                out.len
            )));
        }
        let ids: Vec<i32> = tokens.iter().map(|&t| t as i32).collect();
        let tp = upload_scratch(&self.stream, &mut self.idx, &ids)?;
        let k = table.k as i32;
        let g = (tokens.len() as u32, 1);
        let st = &self.stream;
        let (p, pf) = (|s| addr::<i8>(s, st), |s| addr::<f32>(s, st));
        match table.layout {
            Layout::F16 | Layout::BF16 => {
                let h = addr(&table.half, st);
                self.launch(
                    "get_rows_f16",
                    g,
                    256,
                    &[
                        &h,
                        &tp,
                        &k,
                        &i32::from(table.layout == Layout::BF16),
                        &out.ptr,
                    ],
                )
            }
            Layout::F32 => self.launch(
                "get_rows_f32",
                g,
                256,
                &[&pf(&table.full), &tp, &k, &out.ptr],
            ),
            Layout::B32 => self.launch(
                "get_rows_b32",
                g,
                256,
                &[&p(&table.q), &pf(&table.d), &tp, &k, &out.ptr],
            ),
            _ => self.launch(
                "get_rows_k",
                g,
                256,
                &[
                    &p(&table.q),
                    &p(&table.sc),
                    &p(&table.mn),
                    &pf(&table.d),
                    &pf(&table.dmin),
                    &tp,
                    &k,
                    &out.ptr,
                ],
            ),
        }
    }
}
