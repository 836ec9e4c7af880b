//! `Q8_1`: Q8_0 plus `s = d * Σq`, the activation format Q4_1 and Q5_1 weights are
//! multiplied with (the stored sum carries their min term). Never stored in model files.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::QK;
use crate::GgmlType;
use crate::block::{QuantBlock, QuantizeBlock};
use crate::scalar::{c_cast_f32_to_i32, c_max, fp16_to_fp32, fp32_to_fp16};

/// ggml's `block_q8_1` (36 bytes): `d` at 0, `s` at 2, `qs[32]` at 4.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ8_1 {
    /// Scale.
    pub d: f16,
    /// `d * Σ qs`, rounded to f16.
    pub s: f16,
    /// Quants.
    pub qs: [i8; QK],
}
const _: () = assert!(size_of::<BlockQ8_1>() == 36);

impl QuantBlock<QK> for BlockQ8_1 {
    const TYPE: GgmlType = GgmlType::Q8_1;
    /// ggml has no `dequantize_row_q8_1`; this is the obvious `q * d` (as for Q8_0).
    fn dequantize(&self, out: &mut [f32; QK]) {
        let d = fp16_to_fp32(self.d);
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = f32::from(q) * d;
        }
    }
}

impl QuantizeBlock<QK> for BlockQ8_1 {
    /// `quantize_row_q8_1_ref`: as Q8_0, plus `s = fp16(Σq · d)` with the f32 `d`.
    fn quantize(x: &[f32; QK]) -> Self {
        let amax = x.iter().fold(0.0f32, |a, v| c_max(a, v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut qs = [0i8; QK];
        for (q, &v) in qs.iter_mut().zip(x) {
            *q = c_cast_f32_to_i32((v * id).round()) as i8;
        }
        let sum: i32 = qs.iter().map(|&q| i32::from(q)).sum();
        Self {
            d: fp32_to_fp16(d),
            s: fp32_to_fp16(sum as f32 * d),
            qs,
        }
    }
}
