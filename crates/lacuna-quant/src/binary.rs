//! ggml's 1- and 2-bit formats without sub-block scales: Q1_0 (128 weights, `±d`) and
//! Q2_0 (64 weights, `d·{−1, 0, 1, 2}`). Dequantization only: their dot products pair one
//! block with several Q8_0 blocks, which the same-block-size [`VecDotBlock`] cannot express.
//!
//! [`VecDotBlock`]: crate::VecDotBlock

use bytemuck::{Pod, Zeroable};
use half::f16;

use crate::GgmlType;
use crate::block::QuantBlock;
use crate::scalar::fp16_to_fp32;

/// ggml's `block_q1_0` (18 bytes): `d` at 0, `qs[16]` at 2; element j is bit `j % 8` of
/// `qs[j / 8]`, weight = `d` if set, `−d` if clear.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ1_0 {
    /// Scale.
    pub d: f16,
    /// Sign bits.
    pub qs: [u8; 16],
}
const _: () = assert!(size_of::<BlockQ1_0>() == 18);

/// ggml's `block_q2_0` (18 bytes): `d` at 0, `qs[16]` at 2; element j is bits
/// `2(j % 4)..` of `qs[j / 4]`, weight = `d·(q − 1)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ2_0 {
    /// Scale.
    pub d: f16,
    /// 2-bit codes.
    pub qs: [u8; 16],
}
const _: () = assert!(size_of::<BlockQ2_0>() == 18);

impl QuantBlock<128> for BlockQ1_0 {
    const TYPE: GgmlType = GgmlType::Q1_0;
    fn dequantize(&self, out: &mut [f32; 128]) {
        let d = fp16_to_fp32(self.d);
        for (j, o) in out.iter_mut().enumerate() {
            *o = if (self.qs[j / 8] >> (j % 8)) & 1 != 0 {
                d
            } else {
                -d
            };
        }
    }
}

impl QuantBlock<64> for BlockQ2_0 {
    const TYPE: GgmlType = GgmlType::Q2_0;
    fn dequantize(&self, out: &mut [f32; 64]) {
        let d = fp16_to_fp32(self.d);
        for (j, o) in out.iter_mut().enumerate() {
            let q = (self.qs[j / 4] >> (2 * (j % 4))) & 3;
            *o = (i32::from(q) - 1) as f32 * d;
        }
    }
}
