//! The CPU backend: quantized GEMM from `lacuna-cpu` (weights repacked once at load) and,
//! for the element-wise and attention operations `lacuna-cpu` does not export yet, plain
//! rayon-parallel implementations following ggml's CPU arithmetic (f64 sums where ggml
//! uses `ggml_float`).

use lacuna_cpu::{PackedWeight, Workspace};
use lacuna_quant::GgmlType;
use rayon::prelude::*;

use crate::backend::{AttnShape, Backend, RopeParams};
use crate::{Result, RopeStyle};

/// Runs a graph on the host CPU with the best instruction path `lacuna-cpu` detects.
#[derive(Debug, Default)]
pub struct CpuBackend {
    ws: Workspace,
}

impl CpuBackend {
    /// A backend with empty reusable buffers.
    pub fn new() -> CpuBackend {
        CpuBackend::default()
    }
}

impl Backend for CpuBackend {
    type Weight = PackedWeight;

    fn name(&self) -> String {
        match lacuna_cpu::Path::active() {
            Ok(p) => format!("cpu-{p:?}").to_lowercase(),
            Err(_) => "cpu".to_string(),
        }
    }

    fn prepare_weight(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<PackedWeight> {
        Ok(PackedWeight::new(ty, n, k, bytes)?)
    }

    fn matmul(&mut self, x: &[f32], t: usize, w: &PackedWeight, y: &mut [f32]) -> Result<()> {
        Ok(lacuna_cpu::matmul(x, t, w, y, &mut self.ws)?)
    }

    fn rms_norm(&mut self, x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
        rms_norm(x, weight, eps, out);
    }

    fn rope(&mut self, x: &mut [f32], t: usize, head_dim: usize, params: RopeParams) {
        rope(x, t, head_dim, params);
    }

    fn attention(
        &mut self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        shape: AttnShape,
        rows: Option<&[usize]>,
        out: &mut [f32],
    ) {
        attention(q, k, v, shape, rows, out);
    }

    fn swiglu(&mut self, gate: &mut [f32], up: &[f32]) {
        gate.par_chunks_mut(4096)
            .zip(up.par_chunks(4096))
            .for_each(|(g, u)| {
                for (g, &u) in g.iter_mut().zip(u) {
                    *g = *g / (1.0 + (-*g).exp()) * u;
                }
            });
    }
}

/// ggml's `rms_norm` then `mul`: `out = (x * (1 / sqrt(mean(x^2) + eps))) * w`, the sum of
/// squares in f64.
pub(crate) fn rms_norm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let n = weight.len();
    out.par_chunks_mut(n)
        .zip(x.par_chunks(n))
        .for_each(|(o, x)| {
            let sum: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
            let mean = (sum / n as f64) as f32;
            let scale = 1.0 / (mean + eps).sqrt();
            for ((o, &v), &w) in o.iter_mut().zip(x).zip(weight) {
                *o = (v * scale) * w;
            }
        });
}

/// ggml's `rope_ext` (no YaRN): row `p` of the `t` rows is at position `p`;
/// `theta_i = p * freq_scale * base^(-2i/d)`, the powers built by repeated multiplication
/// as ggml's rope cache does.
pub(crate) fn rope(x: &mut [f32], t: usize, head_dim: usize, params: RopeParams) {
    if t == 0 {
        return;
    }
    let width = x.len() / t;
    let half = head_dim / 2;
    let theta_scale = params.freq_base.powf(-2.0 / head_dim as f32);
    x.par_chunks_mut(width).enumerate().for_each_init(
        || vec![0.0f32; head_dim],
        |cache, (p, row)| {
            let mut theta = p as f32;
            for i in 0..half {
                let th = theta * params.freq_scale;
                cache[2 * i] = th.cos();
                cache[2 * i + 1] = th.sin();
                theta *= theta_scale;
            }
            for head in row.chunks_exact_mut(head_dim) {
                for i in 0..half {
                    let (c, s) = (cache[2 * i], cache[2 * i + 1]);
                    let (a, b) = match params.style {
                        RopeStyle::Normal => (2 * i, 2 * i + 1),
                        RopeStyle::Neox => (i, i + half),
                    };
                    let (x0, x1) = (head[a], head[b]);
                    head[a] = x0 * c - x1 * s;
                    head[b] = x0 * s + x1 * c;
                }
            }
        },
    );
}

/// 16-lane dot product (vectorizes without fast-math).
#[inline]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0.0f32; 16];
    let ca = a.chunks_exact(16);
    let cb = b.chunks_exact(16);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s: f32 = ra.iter().zip(rb).map(|(x, y)| x * y).sum();
    for v in acc {
        s += v;
    }
    s
}

fn attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    s: AttnShape,
    rows: Option<&[usize]>,
    out: &mut [f32],
) {
    let hd = s.head_dim;
    let q_dim = s.n_head * hd;
    let kv_dim = s.n_head_kv * hd;
    let group = s.n_head / s.n_head_kv;
    out.par_chunks_mut(q_dim).enumerate().for_each_init(
        || (vec![0.0f32; s.t], vec![0.0f32; hd]),
        |(scores, acc), (r, o)| {
            let i = rows.map_or(r, |rows| rows[r]);
            for h in 0..s.n_head {
                let g = h / group;
                let qi = &q[i * q_dim + h * hd..][..hd];
                let mut max = f32::NEG_INFINITY;
                for (j, sc) in scores.iter_mut().enumerate() {
                    let kj = &k[j * kv_dim + g * hd..][..hd];
                    *sc = dot(qi, kj) * s.scale;
                    max = max.max(*sc);
                }
                let mut sum = 0.0f64;
                for sc in scores.iter_mut() {
                    *sc = (*sc - max).exp();
                    sum += f64::from(*sc);
                }
                let inv = (1.0 / sum) as f32;
                acc.fill(0.0);
                for (j, &p) in scores.iter().enumerate() {
                    let p = p * inv;
                    let vj = &v[j * kv_dim + g * hd..][..hd];
                    for (a, &vv) in acc.iter_mut().zip(vj) {
                        *a += p * vv;
                    }
                }
                o[h * hd..(h + 1) * hd].copy_from_slice(acc);
            }
        },
    );
}
