//! `Q4_1`: 32 weights = `d * q + m`, q a 4-bit unsigned quant.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::{QK, min_max};
use crate::GgmlType;
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::legacy::BlockQ8_1;
use crate::scalar::{c_cast_f32_to_i32, fp16_to_fp32, fp32_to_fp16};

/// ggml's `block_q4_1` (20 bytes): `d` at 0, `m` at 2, `qs[16]` at 4.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ4_1 {
    /// Scale.
    pub d: f16,
    /// Minimum (added to every weight).
    pub m: f16,
    /// Packed 4-bit quants.
    pub qs: [u8; QK / 2],
}
const _: () = assert!(size_of::<BlockQ4_1>() == 20);

impl QuantBlock<QK> for BlockQ4_1 {
    const TYPE: GgmlType = GgmlType::Q4_1;
    fn dequantize(&self, out: &mut [f32; QK]) {
        let d = fp16_to_fp32(self.d);
        let m = fp16_to_fp32(self.m);
        for j in 0..QK / 2 {
            out[j] = f32::from(self.qs[j] & 0x0F) * d + m;
            out[j + QK / 2] = f32::from(self.qs[j] >> 4) * d + m;
        }
    }
}

impl QuantizeBlock<QK> for BlockQ4_1 {
    /// `quantize_row_q4_1_ref`: `d = (max - min) / 15`, `q = min(15, (int8_t)((x-min)/d + 0.5))`.
    fn quantize(x: &[f32; QK]) -> Self {
        let (min, max) = min_max(x);
        let d = (max - min) / 15.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut qs = [0u8; QK / 2];
        for j in 0..QK / 2 {
            let q =
                |v: f32| (i32::from(c_cast_f32_to_i32((v - min) * id + 0.5) as i8)).min(15) as u8;
            qs[j] = q(x[j]) | (q(x[j + QK / 2]) << 4);
        }
        Self {
            d: fp32_to_fp16(d),
            m: fp32_to_fp16(min),
            qs,
        }
    }
}

impl VecDotBlock<QK> for BlockQ4_1 {
    type Rhs = BlockQ8_1;
    /// `d_x·d_y·Σ q_x·q_y + m_x·s_y`, where `s_y` is Q8_1's stored (f16-rounded) `d·Σq`.
    fn vec_dot_block(&self, y: &BlockQ8_1) -> f32 {
        let mut sumi = 0i32;
        for j in 0..QK / 2 {
            sumi += i32::from(self.qs[j] & 0x0F) * i32::from(y.qs[j])
                + i32::from(self.qs[j] >> 4) * i32::from(y.qs[j + QK / 2]);
        }
        (fp16_to_fp32(self.d) * fp16_to_fp32(y.d)) * sumi as f32
            + fp16_to_fp32(self.m) * fp16_to_fp32(y.s)
    }
}
