//! The plain float types F32, F16 and BF16 as one-element "blocks", so that the generic row
//! functions and the dispatch cover them too. Conversions are ggml's own (see [`crate::scalar`]);
//! dot products multiply in f32 and accumulate in f64 (`ggml_float`), as ggml's scalar
//! `ggml_vec_dot_f32/f16/bf16` do.

use half::{bf16, f16};

use crate::GgmlType;
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::scalar::{bf16_to_fp32, fp16_to_fp32, fp32_to_bf16, fp32_to_fp16};

impl QuantBlock<1> for f32 {
    const TYPE: GgmlType = GgmlType::F32;
    fn dequantize(&self, out: &mut [f32; 1]) {
        out[0] = *self;
    }
}

impl QuantizeBlock<1> for f32 {
    fn quantize(x: &[f32; 1]) -> Self {
        x[0]
    }
}

impl VecDotBlock<1> for f32 {
    type Rhs = f32;
    fn vec_dot_block(&self, rhs: &f32) -> f32 {
        self * rhs
    }
    fn vec_dot_blocks(lhs: &[Self], rhs: &[f32]) -> f32 {
        lhs.iter()
            .zip(rhs)
            .map(|(x, y)| f64::from(x * y))
            .sum::<f64>() as f32
    }
}

impl QuantBlock<1> for f16 {
    const TYPE: GgmlType = GgmlType::F16;
    fn dequantize(&self, out: &mut [f32; 1]) {
        out[0] = fp16_to_fp32(*self);
    }
}

impl QuantizeBlock<1> for f16 {
    fn quantize(x: &[f32; 1]) -> Self {
        fp32_to_fp16(x[0])
    }
}

impl VecDotBlock<1> for f16 {
    type Rhs = f16;
    fn vec_dot_block(&self, rhs: &f16) -> f32 {
        fp16_to_fp32(*self) * fp16_to_fp32(*rhs)
    }
    fn vec_dot_blocks(lhs: &[Self], rhs: &[f16]) -> f32 {
        lhs.iter()
            .zip(rhs)
            .map(|(x, y)| f64::from(x.vec_dot_block(y)))
            .sum::<f64>() as f32
    }
}

impl QuantBlock<1> for bf16 {
    const TYPE: GgmlType = GgmlType::BF16;
    fn dequantize(&self, out: &mut [f32; 1]) {
        out[0] = bf16_to_fp32(*self);
    }
}

impl QuantizeBlock<1> for bf16 {
    fn quantize(x: &[f32; 1]) -> Self {
        fp32_to_bf16(x[0])
    }
}

impl VecDotBlock<1> for bf16 {
    type Rhs = bf16;
    fn vec_dot_block(&self, rhs: &bf16) -> f32 {
        bf16_to_fp32(*self) * bf16_to_fp32(*rhs)
    }
    fn vec_dot_blocks(lhs: &[Self], rhs: &[bf16]) -> f32 {
        lhs.iter()
            .zip(rhs)
            .map(|(x, y)| f64::from(x.vec_dot_block(y)))
            .sum::<f64>() as f32
    }
}
