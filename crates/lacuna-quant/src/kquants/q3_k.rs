//! `Q3_K`: 3.4375 bits per weight, 16 sub-blocks of 16 with 6-bit signed scales.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::q2_k::{pack_q2, q2};
use super::solvers::make_q3_quants_rmse;
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::kquants::BlockQ8K;
use crate::scalar::{fp16_to_fp32, fp32_to_fp16, nearest_int};
use crate::{GgmlType, QK_K};

/// ggml's `block_q3_K` (110 bytes).
///
/// ```text
/// offset 0    hmask[32]    high bit: element i has bit i/32 of hmask[i % 32];
///                          a SET bit means no offset, a clear bit subtracts 4
/// offset 32   qs[64]       low 2 bits, packed as Q2_K's quants
/// offset 96   scales[12]   16 six-bit scales s_g (stored +32):
///               low 4 bits: g < 8 → scales[g] & 15, g ≥ 8 → scales[g-8] >> 4
///               high 2 bits: (scales[8 + g%4] >> 2·(g/4)) & 3
/// offset 108  d: f16
/// weight (element i) = d·(s_{i/16} − 32)·(q2 − (hbit ? 0 : 4))
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ3K {
    /// High bits of the quants.
    pub hmask: [u8; QK_K / 8],
    /// Low 2 bits of the quants.
    pub qs: [u8; QK_K / 4],
    /// Packed 6-bit scales.
    pub scales: [u8; 12],
    /// Super-block scale.
    pub d: f16,
}
const _: () = assert!(size_of::<BlockQ3K>() == 110);

impl BlockQ3K {
    /// The signed 6-bit scale of sub-block `g` (0..16), already minus 32.
    pub fn scale(&self, g: usize) -> i32 {
        scale6(&self.scales, g)
    }

    /// The signed quant of element `i`, in −4..4.
    fn q(&self, i: usize) -> i32 {
        let hbit = (self.hmask[i % 32] >> (i / 32)) & 1;
        i32::from(q2(&self.qs, i)) - if hbit != 0 { 0 } else { 4 }
    }
}

fn scale6(s: &[u8; 12], g: usize) -> i32 {
    let lo = if g < 8 { s[g] & 0xF } else { s[g - 8] >> 4 };
    let hi = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
    i32::from(lo | (hi << 4)) - 32
}

impl QuantBlock<QK_K> for BlockQ3K {
    const TYPE: GgmlType = GgmlType::Q3_K;
    fn dequantize(&self, out: &mut [f32; QK_K]) {
        let d_all = fp16_to_fp32(self.d);
        for g in 0..QK_K / 16 {
            let dl = d_all * self.scale(g) as f32;
            for i in 16 * g..16 * g + 16 {
                out[i] = dl * self.q(i) as f32;
            }
        }
    }
}

impl QuantizeBlock<QK_K> for BlockQ3K {
    /// `quantize_row_q3_K_ref`: per sub-block `make_q3_quants(16, 4, …, do_rmse)`, scales
    /// to 6 bits against `-32 / max_scale`, quants recomputed from the rounded scales.
    fn quantize(x: &[f32; QK_K]) -> Self {
        let mut l = [0i8; QK_K];
        let mut scales = [0f32; QK_K / 16];
        let mut max_scale = 0.0f32;
        let mut amax = 0.0f32;
        for j in 0..QK_K / 16 {
            scales[j] =
                make_q3_quants_rmse(4, &x[16 * j..16 * j + 16], &mut l[16 * j..16 * j + 16]);
            let scale = scales[j].abs();
            if scale > amax {
                amax = scale;
                max_scale = scales[j];
            }
        }
        let mut y = Self::zeroed();
        if max_scale != 0.0 {
            let iscale = -32.0 / max_scale;
            for j in 0..QK_K / 16 {
                let q = nearest_int(iscale * scales[j]) as i8;
                let lq = (i32::from(q).clamp(-32, 31) + 32) as i8 as u8;
                if j < 8 {
                    y.scales[j] = lq & 0xF;
                } else {
                    y.scales[j - 8] |= (lq & 0xF) << 4;
                }
                let hi = lq >> 4;
                y.scales[j % 4 + 8] |= hi << (2 * (j / 4));
            }
            y.d = fp32_to_fp16(1.0 / iscale);
        } else {
            y.d = fp32_to_fp16(0.0);
        }
        for j in 0..QK_K / 16 {
            let d = fp16_to_fp32(y.d) * scale6(&y.scales, j) as f32;
            if d == 0.0 {
                continue;
            }
            for ii in 0..16 {
                let q = nearest_int(x[16 * j + ii] / d).clamp(-4, 3);
                l[16 * j + ii] = (q + 4) as i8;
            }
        }
        let mut lu = [0u8; QK_K];
        for j in 0..QK_K {
            let mut v = l[j] as u8;
            if v > 3 {
                y.hmask[j % 32] |= 1 << (j / 32);
                v -= 4;
            }
            lu[j] = v;
        }
        y.qs = pack_q2(&lu);
        y
    }
}

impl VecDotBlock<QK_K> for BlockQ3K {
    type Rhs = BlockQ8K;
    /// `d_x·d_y·Σ_g (s_g − 32)·Σ q·q_y`.
    fn vec_dot_block(&self, y: &BlockQ8K) -> f32 {
        let mut sumi = 0i32;
        for g in 0..QK_K / 16 {
            let s: i32 = (16 * g..16 * g + 16)
                .map(|i| self.q(i) * i32::from(y.qs[i]))
                .sum();
            sumi += self.scale(g) * s;
        }
        fp16_to_fp32(self.d) * y.d * sumi as f32
    }
}
