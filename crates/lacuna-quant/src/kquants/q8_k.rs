//! `Q8_K`: the activation format of the K-quant dot products.

use bytemuck::{Pod, Zeroable};

use crate::block::{QuantBlock, QuantizeBlock};
use crate::scalar::nearest_int;
use crate::{GgmlType, QK_K};

/// ggml's `block_q8_K` (292 bytes).
///
/// ```text
/// offset 0    d: f32           weight i = d * qs[i]   (d is f32 here, not f16)
/// offset 4    qs[256]: i8      quants in [-128, 127] (the quantizer yields -127..=127)
/// offset 260  bsums[16]: i16   bsums[g] = Σ qs[16g..16g+16], for the K-quant min terms
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ8K {
    /// Scale (f32).
    pub d: f32,
    /// Quants.
    pub qs: [i8; QK_K],
    /// Sums of each group of 16 quants.
    pub bsums: [i16; QK_K / 16],
}
const _: () = assert!(size_of::<BlockQ8K>() == 292);

impl QuantBlock<QK_K> for BlockQ8K {
    const TYPE: GgmlType = GgmlType::Q8_K;
    fn dequantize(&self, out: &mut [f32; QK_K]) {
        for (o, &q) in out.iter_mut().zip(&self.qs) {
            *o = self.d * f32::from(q);
        }
    }
}

impl QuantizeBlock<QK_K> for BlockQ8K {
    /// `quantize_row_q8_K_ref`: `iscale = -127 / max` where `max` is the signed value of
    /// largest magnitude, `q = min(127, nearest_int(iscale·x))`, `d = 1 / iscale` (so `d` is
    /// negative when `max` is positive and the quants carry the opposite sign), plus the
    /// 16-element sums. An all-zero block gets `d = 0` and zero quants and sums.
    fn quantize(x: &[f32; QK_K]) -> Self {
        let mut max = 0.0f32;
        let mut amax = 0.0f32;
        for &v in x {
            let ax = v.abs();
            if ax > amax {
                amax = ax;
                max = v;
            }
        }
        let mut y = Self::zeroed();
        if amax == 0.0 {
            return y;
        }
        let iscale = -127.0 / max;
        for (q, &v) in y.qs.iter_mut().zip(x) {
            *q = nearest_int(iscale * v).min(127) as i8;
        }
        for (g, s) in y.bsums.iter_mut().enumerate() {
            *s = y.qs[16 * g..16 * g + 16]
                .iter()
                .map(|&q| i32::from(q))
                .sum::<i32>() as i16;
        }
        y.d = 1.0 / iscale;
        y
    }
}
