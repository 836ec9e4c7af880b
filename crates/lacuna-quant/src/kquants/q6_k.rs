//! `Q6_K`: 6.5625 bits per weight, 16 sub-blocks of 16 with signed 8-bit scales.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::solvers::{GROUP_MAX_EPS, make_qx_quants_rmse1};
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::kquants::BlockQ8K;
use crate::scalar::{fp16_to_fp32, fp32_to_fp16, nearest_int};
use crate::{GgmlType, QK_K};

/// ggml's `block_q6_K` (210 bytes).
///
/// ```text
/// offset 0    ql[128]      low 4 bits: for half h (elements 128h..128h+128) and l < 32,
///                          ql[64h + l]      low nibble → element 128h + l
///                          ql[64h + 32 + l] low nibble → element 128h + 32 + l
///                          ql[64h + l]      high nibble → element 128h + 64 + l
///                          ql[64h + 32 + l] high nibble → element 128h + 96 + l
/// offset 128  qh[64]       high 2 bits: qh[32h + l] bits 0-1, 2-3, 4-5, 6-7 → elements
///                          128h + l, +32, +64, +96
/// offset 192  scales[16]   i8 scale of each 16-element sub-block
/// offset 208  d: f16
/// weight (element i, quant q in 0..64) = d·scales[i/16]·(q − 32)
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ6K {
    /// Low 4 bits of the quants.
    pub ql: [u8; QK_K / 2],
    /// High 2 bits of the quants.
    pub qh: [u8; QK_K / 4],
    /// Signed 8-bit sub-block scales.
    pub scales: [i8; QK_K / 16],
    /// Super-block scale.
    pub d: f16,
}
const _: () = assert!(size_of::<BlockQ6K>() == 210);

impl BlockQ6K {
    /// The signed quant of element `i` (0..256), `q − 32` in −32..32.
    fn q(&self, i: usize) -> i32 {
        let (h, r) = (i / 128, i % 128);
        let (k, l) = (r / 32, r % 32);
        let lo_byte = self.ql[64 * h + 32 * (k % 2) + l];
        let lo = if k < 2 { lo_byte & 0xF } else { lo_byte >> 4 };
        let hi = (self.qh[32 * h + l] >> (2 * k)) & 3;
        i32::from(lo | (hi << 4)) - 32
    }
}

impl QuantBlock<QK_K> for BlockQ6K {
    const TYPE: GgmlType = GgmlType::Q6_K;
    fn dequantize(&self, out: &mut [f32; QK_K]) {
        let d = fp16_to_fp32(self.d);
        for (i, o) in out.iter_mut().enumerate() {
            *o = d * f32::from(self.scales[i / 16]) * self.q(i) as f32;
        }
    }
}

impl QuantizeBlock<QK_K> for BlockQ6K {
    /// `quantize_row_q6_K_ref`: per sub-block `make_qx_quants(16, 32, …, rmse_type 1)`,
    /// scales to i8 against `-128 / max_scale`, quants recomputed from the rounded scales.
    /// A block whose scales are all below `GROUP_MAX_EPS` is all zero.
    fn quantize(x: &[f32; QK_K]) -> Self {
        let mut l = [0i8; QK_K];
        let mut scales = [0f32; QK_K / 16];
        let mut max_scale = 0.0f32;
        let mut max_abs_scale = 0.0f32;
        for ib in 0..QK_K / 16 {
            let s =
                make_qx_quants_rmse1(32, &x[16 * ib..16 * ib + 16], &mut l[16 * ib..16 * ib + 16]);
            scales[ib] = s;
            if s.abs() > max_abs_scale {
                max_abs_scale = s.abs();
                max_scale = s;
            }
        }
        let mut y = Self::zeroed();
        if max_abs_scale < GROUP_MAX_EPS {
            return y;
        }
        let iscale = -128.0 / max_scale;
        y.d = fp32_to_fp16(1.0 / iscale);
        for ib in 0..QK_K / 16 {
            y.scales[ib] = nearest_int(iscale * scales[ib]).min(127) as i8;
        }
        for j in 0..QK_K / 16 {
            let d = fp16_to_fp32(y.d) * f32::from(y.scales[j]);
            if d == 0.0 {
                continue;
            }
            for ii in 0..16 {
                let q = nearest_int(x[16 * j + ii] / d).clamp(-32, 31);
                l[16 * j + ii] = (q + 32) as i8;
            }
        }
        let lu = |i: usize| l[i] as u8;
        for h in 0..2 {
            let j = 128 * h;
            for i in 0..32 {
                let q1 = lu(j + i) & 0xF;
                let q2 = lu(j + i + 32) & 0xF;
                let q3 = lu(j + i + 64) & 0xF;
                let q4 = lu(j + i + 96) & 0xF;
                y.ql[64 * h + i] = q1 | (q3 << 4);
                y.ql[64 * h + i + 32] = q2 | (q4 << 4);
                y.qh[32 * h + i] = (lu(j + i) >> 4)
                    | ((lu(j + i + 32) >> 4) << 2)
                    | ((lu(j + i + 64) >> 4) << 4)
                    | ((lu(j + i + 96) >> 4) << 6);
            }
        }
        y
    }
}

impl VecDotBlock<QK_K> for BlockQ6K {
    type Rhs = BlockQ8K;
    /// `d_x·d_y·Σ_g scales[g]·Σ (q−32)·q_y` over the 16 sub-blocks.
    fn vec_dot_block(&self, y: &BlockQ8K) -> f32 {
        let mut sumi = 0i32;
        for g in 0..QK_K / 16 {
            let s: i32 = (16 * g..16 * g + 16)
                .map(|i| self.q(i) * i32::from(y.qs[i]))
                .sum();
            sumi += i32::from(self.scales[g]) * s;
        }
        fp16_to_fp32(self.d) * y.d * sumi as f32
    }
}
