//! `Q2_K`: 2.625 bits per weight, 16 sub-blocks of 16 with 4-bit scales and mins.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::solvers::{Qkx2, make_qkx2_quants};
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::kquants::BlockQ8K;
use crate::scalar::{fp16_to_fp32, fp32_to_fp16, nearest_int};
use crate::{GgmlType, QK_K};

/// ggml's `block_q2_K` (84 bytes).
///
/// ```text
/// offset 0    scales[16]   sub-block g: scale in bits 0-3, min in bits 4-7
/// offset 16   qs[64]       2-bit quants: element 128n + 32j + l is bits 2j..2j+2 of
///                          qs[32n + l]
/// offset 80   d: f16       scale of the scales
/// offset 82   dmin: f16    scale of the mins
/// weight (element i, quant q in 0..4) = d·(scales[i/16] & 15)·q − dmin·(scales[i/16] >> 4)
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ2K {
    /// 4-bit scales (low nibble) and mins (high nibble).
    pub scales: [u8; QK_K / 16],
    /// Packed 2-bit quants.
    pub qs: [u8; QK_K / 4],
    /// Super-block scale for the scales.
    pub d: f16,
    /// Super-block scale for the mins.
    pub dmin: f16,
}
const _: () = assert!(size_of::<BlockQ2K>() == 84);

/// The 2-bit field of element `i` in a 64-byte K-quant `qs` array.
pub(super) fn q2(qs: &[u8; QK_K / 4], i: usize) -> u8 {
    let (n, r) = (i / 128, i % 128);
    (qs[32 * n + r % 32] >> (2 * (r / 32))) & 3
}

/// Packs 256 2-bit values as ggml's Q2_K/Q3_K quantizers do.
pub(super) fn pack_q2(l: &[u8; QK_K]) -> [u8; QK_K / 4] {
    let mut qs = [0u8; QK_K / 4];
    for n in 0..2 {
        let j = 128 * n;
        for i in 0..32 {
            qs[32 * n + i] =
                l[j + i] | (l[j + i + 32] << 2) | (l[j + i + 64] << 4) | (l[j + i + 96] << 6);
        }
    }
    qs
}

impl QuantBlock<QK_K> for BlockQ2K {
    const TYPE: GgmlType = GgmlType::Q2_K;
    fn dequantize(&self, out: &mut [f32; QK_K]) {
        let d = fp16_to_fp32(self.d);
        let min = fp16_to_fp32(self.dmin);
        for g in 0..QK_K / 16 {
            let sc = self.scales[g];
            let dl = d * f32::from(sc & 0xF);
            let ml = min * f32::from(sc >> 4);
            for i in 16 * g..16 * g + 16 {
                out[i] = dl * f32::from(q2(&self.qs, i)) - ml;
            }
        }
    }
}

impl QuantizeBlock<QK_K> for BlockQ2K {
    /// `quantize_row_q2_K_ref`: per sub-block `make_qkx2_quants(16, 3, …, -0.5, 0.1, 15,
    /// use_mad)` with weights `|x|`, scales and mins to 4 bits against their maxima, quants
    /// recomputed from the rounded scales.
    fn quantize(x: &[f32; QK_K]) -> Self {
        let p = Qkx2 {
            nmax: 3,
            rmin: -0.5,
            rdelta: 0.1,
            nstep: 15,
            use_mad: true,
        };
        let mut l = [0u8; QK_K];
        let mut mins = [0f32; QK_K / 16];
        let mut scales = [0f32; QK_K / 16];
        let mut max_scale = 0.0f32;
        let mut max_min = 0.0f32;
        for j in 0..QK_K / 16 {
            let xs = &x[16 * j..16 * j + 16];
            let mut weights = [0f32; 16];
            for (w, &v) in weights.iter_mut().zip(xs) {
                *w = v.abs();
            }
            let (s, m) = make_qkx2_quants(&p, xs, &weights, &mut l[16 * j..16 * j + 16]);
            scales[j] = s;
            mins[j] = m;
            if s > max_scale {
                max_scale = s;
            }
            if m > max_min {
                max_min = m;
            }
        }
        let q4scale = 15.0f32;
        let mut y = Self::zeroed();
        if max_scale > 0.0 {
            let iscale = q4scale / max_scale;
            for j in 0..QK_K / 16 {
                y.scales[j] = nearest_int(iscale * scales[j]) as u8;
            }
            y.d = fp32_to_fp16(max_scale / q4scale);
        } else {
            y.d = fp32_to_fp16(0.0);
        }
        if max_min > 0.0 {
            let iscale = q4scale / max_min;
            for j in 0..QK_K / 16 {
                let lm = nearest_int(iscale * mins[j]);
                y.scales[j] |= lm.wrapping_shl(4) as u8;
            }
            y.dmin = fp32_to_fp16(max_min / q4scale);
        } else {
            y.dmin = fp32_to_fp16(0.0);
        }
        for j in 0..QK_K / 16 {
            let d = fp16_to_fp32(y.d) * f32::from(y.scales[j] & 0xF);
            if d == 0.0 {
                continue;
            }
            let dm = fp16_to_fp32(y.dmin) * f32::from(y.scales[j] >> 4);
            for ii in 0..16 {
                let q = nearest_int((x[16 * j + ii] + dm) / d);
                l[16 * j + ii] = q.clamp(0, 3) as u8;
            }
        }
        y.qs = pack_q2(&l);
        y
    }
}

impl VecDotBlock<QK_K> for BlockQ2K {
    type Rhs = BlockQ8K;
    /// `d_x·d_y·Σ_g sc_g·Σ q·q_y − dmin_x·d_y·Σ_g m_g·bsums[g]`.
    fn vec_dot_block(&self, y: &BlockQ8K) -> f32 {
        let mut sumi = 0i32;
        let mut summ = 0i32;
        for g in 0..QK_K / 16 {
            let s: i32 = (16 * g..16 * g + 16)
                .map(|i| i32::from(q2(&self.qs, i)) * i32::from(y.qs[i]))
                .sum();
            sumi += i32::from(self.scales[g] & 0xF) * s;
            summ += i32::from(self.scales[g] >> 4) * i32::from(y.bsums[g]);
        }
        let d = fp16_to_fp32(self.d) * y.d;
        let dmin = fp16_to_fp32(self.dmin) * y.d;
        d * sumi as f32 - dmin * summ as f32
    }
}
