//! `Q4_0`: 32 weights = `d * (q - 8)`, q a 4-bit unsigned quant.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::{QK, signed_absmax};
use crate::GgmlType;
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::legacy::BlockQ8_0;
use crate::scalar::{c_cast_f32_to_i32, fp16_to_fp32, fp32_to_fp16};

/// ggml's `block_q4_0` (18 bytes): `d` at 0, then `qs[16]` (element j low nibble of
/// `qs[j]`, element j+16 high nibble).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ4_0 {
    /// Scale.
    pub d: f16,
    /// Packed 4-bit quants.
    pub qs: [u8; QK / 2],
}
const _: () = assert!(size_of::<BlockQ4_0>() == 18);

impl QuantBlock<QK> for BlockQ4_0 {
    const TYPE: GgmlType = GgmlType::Q4_0;
    fn dequantize(&self, out: &mut [f32; QK]) {
        let d = fp16_to_fp32(self.d);
        for j in 0..QK / 2 {
            let x0 = i32::from(self.qs[j] & 0x0F) - 8;
            let x1 = i32::from(self.qs[j] >> 4) - 8;
            out[j] = x0 as f32 * d;
            out[j + QK / 2] = x1 as f32 * d;
        }
    }
}

impl QuantizeBlock<QK> for BlockQ4_0 {
    /// `quantize_row_q4_0_ref`: `d = max / -8` where `max` is the signed value of largest
    /// magnitude, `q = min(15, (int8_t)(x/d + 8.5))`.
    fn quantize(x: &[f32; QK]) -> Self {
        let (_, max) = signed_absmax(x);
        let d = max / -8.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut qs = [0u8; QK / 2];
        for j in 0..QK / 2 {
            let q = |v: f32| (i32::from(c_cast_f32_to_i32(v * id + 8.5) as i8)).min(15) as u8;
            qs[j] = q(x[j]) | (q(x[j + QK / 2]) << 4);
        }
        Self {
            d: fp32_to_fp16(d),
            qs,
        }
    }
}

impl VecDotBlock<QK> for BlockQ4_0 {
    type Rhs = BlockQ8_0;
    fn vec_dot_block(&self, y: &BlockQ8_0) -> f32 {
        let mut sumi = 0i32;
        for j in 0..QK / 2 {
            let v0 = i32::from(self.qs[j] & 0x0F) - 8;
            let v1 = i32::from(self.qs[j] >> 4) - 8;
            sumi += v0 * i32::from(y.qs[j]) + v1 * i32::from(y.qs[j + QK / 2]);
        }
        sumi as f32 * (fp16_to_fp32(self.d) * fp16_to_fp32(y.d))
    }
}
