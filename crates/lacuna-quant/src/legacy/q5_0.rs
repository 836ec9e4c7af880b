//! `Q5_0`: 32 weights = `d * (q - 16)`, q a 5-bit unsigned quant.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::{QK, signed_absmax};
use crate::GgmlType;
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::legacy::BlockQ8_0;
use crate::scalar::{c_cast_f32_to_i32, fp16_to_fp32, fp32_to_fp16};

/// ggml's `block_q5_0` (22 bytes): `d` at 0, `qh[4]` at 2 (bit i of the little-endian u32 is
/// bit 4 of element i), `qs[16]` at 6 (low 4 bits, packed as in Q4_0).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ5_0 {
    /// Scale.
    pub d: f16,
    /// Fifth bits, little-endian u32.
    pub qh: [u8; 4],
    /// Packed low 4 bits.
    pub qs: [u8; QK / 2],
}
const _: () = assert!(size_of::<BlockQ5_0>() == 22);

impl BlockQ5_0 {
    /// The 5-bit quant of element `i` (0..32), before the `-16` offset.
    fn q(&self, i: usize) -> i32 {
        let qh = u32::from_le_bytes(self.qh);
        let lo = if i < QK / 2 {
            self.qs[i] & 0x0F
        } else {
            self.qs[i - QK / 2] >> 4
        };
        i32::from(lo) | ((((qh >> i) & 1) as i32) << 4)
    }
}

impl QuantBlock<QK> for BlockQ5_0 {
    const TYPE: GgmlType = GgmlType::Q5_0;
    fn dequantize(&self, out: &mut [f32; QK]) {
        let d = fp16_to_fp32(self.d);
        for (i, o) in out.iter_mut().enumerate() {
            *o = (self.q(i) - 16) as f32 * d;
        }
    }
}

impl QuantizeBlock<QK> for BlockQ5_0 {
    /// `quantize_row_q5_0_ref`: `d = max / -16`, `q = min(31, (int8_t)(x/d + 16.5))`.
    fn quantize(x: &[f32; QK]) -> Self {
        let (_, max) = signed_absmax(x);
        let d = max / -16.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut qs = [0u8; QK / 2];
        let mut qh = 0u32;
        for j in 0..QK / 2 {
            let q = |v: f32| (i32::from(c_cast_f32_to_i32(v * id + 16.5) as i8)).min(31) as u8;
            let (xi0, xi1) = (q(x[j]), q(x[j + QK / 2]));
            qs[j] = (xi0 & 0x0F) | ((xi1 & 0x0F) << 4);
            qh |= (u32::from(xi0 & 0x10) >> 4) << j;
            qh |= (u32::from(xi1 & 0x10) >> 4) << (j + QK / 2);
        }
        Self {
            d: fp32_to_fp16(d),
            qh: qh.to_le_bytes(),
            qs,
        }
    }
}

impl VecDotBlock<QK> for BlockQ5_0 {
    type Rhs = BlockQ8_0;
    fn vec_dot_block(&self, y: &BlockQ8_0) -> f32 {
        let sumi: i32 = (0..QK).map(|i| (self.q(i) - 16) * i32::from(y.qs[i])).sum();
        sumi as f32 * (fp16_to_fp32(self.d) * fp16_to_fp32(y.d))
    }
}
