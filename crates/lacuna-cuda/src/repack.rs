//! Weights repacked on the host, once at load, into the layout the tensor-core kernels read
//! (`kernels/gemm_q.cu`, `kernels/gemm_f.cu`), with a host twin of the kernels' arithmetic
//! ([`Repacked::reference_matmul`]) so that the layout and the integer plan are tested on
//! machines with no GPU, against the CPU backend.
//!
//! Quantized formats decode through [`lacuna_quant::int_blocks`] (the CPU backend's
//! decoder) into int8 weights, an integer scale and min per 16 weights and float
//! super-block scales ("K" formats, 256 per block), or int8 weights and one float scale per
//! 32 ("B32" formats). Formats with a float offset per group (Q2_K, Q4_1, Q5_1) have no
//! kernel yet.

use lacuna_quant::int_blocks::{QuantKind, decode};
use lacuna_quant::{BlockQ8K, GgmlType, QuantizeBlock};

use crate::{Error, Result};

/// Which GEMM kernel a repacked weight takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// 256-element blocks, integer scales per 16, no mins (Q3_K, Q6_K): `gemm_k16`.
    K16,
    /// 256-element blocks, integer scales per 32, no mins (IQ4_XS): `gemm_k32`.
    K32,
    /// 256-element blocks, integer scales and mins per 32 (Q4_K, Q5_K): `gemm_k32_mins`.
    K32Mins,
    /// 32-element blocks, one float scale each (Q8_0, Q4_0, Q5_0, IQ4_NL, MXFP4): `gemm_b32`.
    B32,
    /// f16 weights on the f16 tensor cores: `gemm_f16`.
    F16,
    /// bf16 weights on the bf16 tensor cores: `gemm_bf16`.
    BF16,
    /// f32 weights on the CUDA cores: `gemm_f32`.
    F32,
}

impl Layout {
    /// The kernel's entry point.
    pub fn kernel(self) -> &'static str {
        match self {
            Layout::K16 => "gemm_k16",
            Layout::K32 => "gemm_k32",
            Layout::K32Mins => "gemm_k32_mins",
            Layout::B32 => "gemm_b32",
            Layout::F16 => "gemm_f16",
            Layout::BF16 => "gemm_bf16",
            Layout::F32 => "gemm_f32",
        }
    }

    /// Whether the kernel reads 256-element super-blocks with Q8_K activations.
    pub fn is_k(self) -> bool {
        matches!(self, Layout::K16 | Layout::K32 | Layout::K32Mins)
    }

    /// The layout of a ggml type, or the error naming what the backend takes.
    pub fn of(ty: GgmlType) -> Result<Layout> {
        let unsupported = || Error::UnsupportedType {
            ty: ty.to_string(),
            supported: SUPPORTED,
        };
        Ok(match ty {
            GgmlType::F16 => Layout::F16,
            GgmlType::BF16 => Layout::BF16,
            GgmlType::F32 => Layout::F32,
            _ => {
                let kind = QuantKind::of(ty).ok_or_else(unsupported)?;
                if kind.affine_group().is_some() {
                    return Err(unsupported());
                }
                match (kind.block(), kind.sub(), kind.has_mins()) {
                    (256, 16, false) => Layout::K16,
                    (256, 32, false) => Layout::K32,
                    (256, 32, true) => Layout::K32Mins,
                    (32, _, false) => Layout::B32,
                    _ => return Err(unsupported()),
                }
            }
        })
    }
}

/// The weight types the CUDA kernels take ([`Layout::of`] maps each to its kernel).
pub const TYPES: [GgmlType; 13] = [
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_XS,
    GgmlType::Q8_0,
    GgmlType::Q4_0,
    GgmlType::Q5_0,
    GgmlType::IQ4_NL,
    GgmlType::MXFP4,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::F32,
];

/// [`TYPES`] as ggml names them, for error messages.
pub const SUPPORTED: &str =
    "q3_K, q4_K, q5_K, q6_K, iq4_xs, q8_0, q4_0, q5_0, iq4_nl, mxfp4, f16, bf16, f32";

/// A `[n x k]` weight in the device layout, still on the host.
#[derive(Debug, Clone, PartialEq)]
pub struct Repacked {
    /// Which kernel reads it.
    pub layout: Layout,
    /// Rows (output features).
    pub n: usize,
    /// Columns (input features).
    pub k: usize,
    /// int8 weights `[n][k]` (quantized layouts).
    pub q: Vec<i8>,
    /// Integer scale per 16 weights `[n][k/16]` (K layouts).
    pub sc: Vec<i8>,
    /// Integer min per 16 weights `[n][k/16]` (K layouts; zero without mins).
    pub mn: Vec<i8>,
    /// Float scale per super-block `[n][k/256]` (K) or per block `[n][k/32]` (B32).
    pub d: Vec<f32>,
    /// Float min scale per super-block `[n][k/256]` (K layouts; zero without mins).
    pub dmin: Vec<f32>,
    /// f16 or bf16 bits `[n][k]` (F16, BF16).
    pub half: Vec<u16>,
    /// f32 weights `[n][k]` (F32).
    pub full: Vec<f32>,
}

impl Repacked {
    /// Repacks `n` rows of `k` elements of `ty` from ggml's row-major bytes.
    pub fn new(ty: GgmlType, n: usize, k: usize, bytes: &[u8]) -> Result<Repacked> {
        let layout = Layout::of(ty)?;
        let block = ty.block_size();
        if n == 0 || k == 0 || k % block != 0 || k % 8 != 0 {
            return Err(Error::Shape(format!(
                "a {ty} weight of {n} x {k}: k must be a non-zero multiple of {}",
                block.max(8)
            )));
        }
        let row_bytes = k / block * ty.type_size();
        if n.checked_mul(row_bytes) != Some(bytes.len()) {
            return Err(Error::Shape(format!(
                "a {ty} weight of {n} x {k} needs {} bytes, got {}",
                n.saturating_mul(row_bytes),
                bytes.len()
            )));
        }
        let mut r = Repacked {
            layout,
            n,
            k,
            q: Vec::new(),
            sc: Vec::new(),
            mn: Vec::new(),
            d: Vec::new(),
            dmin: Vec::new(),
            half: Vec::new(),
            full: Vec::new(),
        };
        match layout {
            Layout::F16 | Layout::BF16 => {
                r.half = bytes
                    .chunks_exact(2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]))
                    .collect();
            }
            Layout::F32 => {
                r.full = bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
            }
            _ => {
                let kind = QuantKind::of(ty).ok_or_else(|| Error::Shape(ty.to_string()))?;
                r.q.reserve(n * k);
                if layout.is_k() {
                    r.sc.reserve(n * k / 16);
                    r.mn.reserve(n * k / 16);
                }
                for blk in bytes.chunks_exact(ty.type_size()) {
                    let dec = decode(kind, blk);
                    r.q.extend_from_slice(&dec.q[..block]);
                    r.d.push(dec.d);
                    if layout.is_k() {
                        let sub = kind.sub();
                        // Every K format's integer scales fit in i8: 6-bit (Q4_K/Q5_K),
                        // 6-bit minus 32 (Q3_K, IQ4_XS), int8 (Q6_K).
                        r.sc.extend((0..16).map(|j| dec.sc[j * 16 / sub] as i8));
                        r.mn.extend((0..16).map(|j| dec.mins[j / 2] as i8));
                        r.dmin.push(dec.dmin);
                    }
                }
            }
        }
        Ok(r)
    }

    /// Bytes the device copy takes.
    pub fn bytes(&self) -> usize {
        self.q.len()
            + self.sc.len()
            + self.mn.len()
            + 4 * (self.d.len() + self.dmin.len() + self.full.len())
            + 2 * self.half.len()
    }

    /// Row `row` dequantized, as the `get_rows_*` kernels compute it (for the embedding
    /// table); bit-identical to ggml's `dequantize_row_*`.
    pub fn dequantize_row(&self, row: usize, out: &mut [f32]) {
        let k = self.k;
        for (c, o) in out.iter_mut().enumerate().take(k) {
            let at = row * k + c;
            *o = match self.layout {
                Layout::F16 => half::f16::from_bits(self.half[at]).to_f32(),
                Layout::BF16 => half::bf16::from_bits(self.half[at]).to_f32(),
                Layout::F32 => self.full[at],
                Layout::B32 => self.d[row * (k / 32) + c / 32] * f32::from(self.q[at]),
                _ => {
                    let (s, b) = (row * (k / 16) + c / 16, row * (k / 256) + c / 256);
                    let dd = self.d[b] * f32::from(self.sc[s]);
                    let mm = self.dmin[b] * f32::from(self.mn[s]);
                    dd * f32::from(self.q[at]) - mm
                }
            };
        }
    }

    /// `y[t x n] = x[t x k] . W^T` with the device kernels' arithmetic: activations
    /// quantized as `quantize.cu` does, integer sums per 16 or 32, the float folds of
    /// `gemm_q.cu` (per super-block for K layouts, per block for B32), f32 sums of
    /// f16/bf16-rounded products for the float layouts. The order of float additions across
    /// blocks is the host's (the device's tiles add in the same block order).
    pub fn reference_matmul(&self, x: &[f32], t: usize) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        let mut y = vec![0.0f32; t * n];
        for ti in 0..t {
            let xr = &x[ti * k..(ti + 1) * k];
            match self.layout {
                Layout::F16 | Layout::BF16 | Layout::F32 => {
                    let round = |v: f32| match self.layout {
                        Layout::F16 => half::f16::from_f32(v).to_f32(),
                        Layout::BF16 => half::bf16::from_f32(v).to_f32(),
                        _ => v,
                    };
                    let xs: Vec<f32> = xr.iter().map(|&v| round(v)).collect();
                    for r in 0..n {
                        let mut w = vec![0.0f32; k];
                        self.dequantize_row(r, &mut w);
                        y[ti * n + r] = w.iter().zip(&xs).map(|(a, b)| a * b).sum();
                    }
                }
                Layout::B32 => {
                    let (xq, xd) = quantize_q8_0(xr);
                    for r in 0..n {
                        let mut acc = 0.0f32;
                        for b in 0..k / 32 {
                            let isum: i32 = (0..32)
                                .map(|i| {
                                    i32::from(self.q[r * k + b * 32 + i])
                                        * i32::from(xq[b * 32 + i])
                                })
                                .sum();
                            acc += self.d[r * (k / 32) + b] * xd[b] * isum as f32;
                        }
                        y[ti * n + r] = acc;
                    }
                }
                _ => {
                    let (xq, xd, xs) = quantize_q8k(xr);
                    for r in 0..n {
                        let mut acc = 0.0f32;
                        for b in 0..k / 256 {
                            let (mut isum, mut msum) = (0i32, 0i32);
                            for j in 0..16 {
                                let s16 = (0..16)
                                    .map(|i| {
                                        let at = b * 256 + j * 16 + i;
                                        i32::from(self.q[r * k + at]) * i32::from(xq[at])
                                    })
                                    .sum::<i32>();
                                let s = r * (k / 16) + b * 16 + j;
                                isum += i32::from(self.sc[s]) * s16;
                                msum += i32::from(self.mn[s]) * xs[b * 16 + j];
                            }
                            let at = r * (k / 256) + b;
                            acc += self.d[at] * xd[b] * isum as f32;
                            acc -= self.dmin[at] * xd[b] * msum as f32;
                        }
                        y[ti * n + r] = acc;
                    }
                }
            }
        }
        y
    }
}

/// `quantize.cu`'s `quantize_q8k` for one row: int8 quants, a scale per 256, sums per 16 —
/// ggml's `quantize_row_q8_K_ref`, which lacuna-quant implements ([`BlockQ8K`]).
pub fn quantize_q8k(x: &[f32]) -> (Vec<i8>, Vec<f32>, Vec<i32>) {
    let (mut q, mut d, mut s) = (Vec::new(), Vec::new(), Vec::new());
    for blk in x.chunks_exact(256) {
        let b = BlockQ8K::quantize(blk.try_into().expect("256-element chunk"));
        q.extend_from_slice(&b.qs);
        d.push(b.d);
        s.extend(b.bsums.iter().map(|&v| i32::from(v)));
    }
    (q, d, s)
}

/// `quantize.cu`'s `quantize_q8_0` for one row: int8 quants and the f16 scale per 32. This is
/// ggml's x86 variant (`id = 127 / amax`), which the CPU backend pairs with the 32-element
/// formats, not lacuna-quant's reference quantizer (`id = 1 / d`).
pub fn quantize_q8_0(x: &[f32]) -> (Vec<i8>, Vec<f32>) {
    let mut q = vec![0i8; x.len()];
    let mut d = Vec::new();
    for (blk, qb) in x.chunks_exact(32).zip(q.chunks_exact_mut(32)) {
        let amax = blk.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        d.push(half::f16::from_f32(amax / 127.0).to_f32());
        let id = if amax != 0.0 { 127.0 / amax } else { 0.0 };
        for (o, &v) in qb.iter_mut().zip(blk) {
            *o = ((v * id).round_ties_even() as i32).clamp(-128, 127) as i8;
        }
    }
    (q, d)
}
