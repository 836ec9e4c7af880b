//! `Q8_0`: 32 weights = `d * q`, q a signed byte. Also the activation format that Q4_0,
//! Q5_0, Q8_0 and IQ4_NL weights are multiplied with.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::QK;
use crate::GgmlType;
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::scalar::{c_cast_f32_to_i32, c_max, fp16_to_fp32, fp32_to_fp16};

/// ggml's `block_q8_0` (34 bytes): `d` at 0, `qs[32]` at 2.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ8_0 {
    /// Scale.
    pub d: f16,
    /// Quants.
    pub qs: [i8; QK],
}
const _: () = assert!(size_of::<BlockQ8_0>() == 34);

impl QuantBlock<QK> for BlockQ8_0 {
    const TYPE: GgmlType = GgmlType::Q8_0;
    fn dequantize(&self, out: &mut [f32; QK]) {
        let d = fp16_to_fp32(self.d);
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = f32::from(q) * d;
        }
    }
}

impl QuantizeBlock<QK> for BlockQ8_0 {
    /// `quantize_row_q8_0_ref`: `d = amax / 127`, `q = roundf(x / d)` (half away from
    /// zero), with the f32 `d` (not its f16 rounding) used for the quants.
    fn quantize(x: &[f32; QK]) -> Self {
        let amax = x.iter().fold(0.0f32, |a, v| c_max(a, v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut qs = [0i8; QK];
        for (q, &v) in qs.iter_mut().zip(x) {
            *q = c_cast_f32_to_i32((v * id).round()) as i8;
        }
        Self {
            d: fp32_to_fp16(d),
            qs,
        }
    }
}

impl VecDotBlock<QK> for BlockQ8_0 {
    type Rhs = BlockQ8_0;
    fn vec_dot_block(&self, y: &BlockQ8_0) -> f32 {
        let sumi: i32 = self
            .qs
            .iter()
            .zip(&y.qs)
            .map(|(&a, &b)| i32::from(a) * i32::from(b))
            .sum();
        sumi as f32 * (fp16_to_fp32(self.d) * fp16_to_fp32(y.d))
    }
}
