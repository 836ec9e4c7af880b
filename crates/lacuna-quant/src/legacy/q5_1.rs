//! `Q5_1`: 32 weights = `d * q + m`, q a 5-bit unsigned quant.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::{QK, min_max};
use crate::GgmlType;
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::legacy::BlockQ8_1;
use crate::scalar::{c_cast_f32_to_i32, fp16_to_fp32, fp32_to_fp16};

/// ggml's `block_q5_1` (24 bytes): `d` at 0, `m` at 2, `qh[4]` at 4, `qs[16]` at 8.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ5_1 {
    /// Scale.
    pub d: f16,
    /// Minimum.
    pub m: f16,
    /// Fifth bits, little-endian u32.
    pub qh: [u8; 4],
    /// Packed low 4 bits.
    pub qs: [u8; QK / 2],
}
const _: () = assert!(size_of::<BlockQ5_1>() == 24);

impl BlockQ5_1 {
    /// The 5-bit quant of element `i` (0..32).
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

impl QuantBlock<QK> for BlockQ5_1 {
    const TYPE: GgmlType = GgmlType::Q5_1;
    fn dequantize(&self, out: &mut [f32; QK]) {
        let d = fp16_to_fp32(self.d);
        let m = fp16_to_fp32(self.m);
        for (i, o) in out.iter_mut().enumerate() {
            *o = self.q(i) as f32 * d + m;
        }
    }
}

impl QuantizeBlock<QK> for BlockQ5_1 {
    /// `quantize_row_q5_1_ref`: `d = (max - min) / 31`, `q = (uint8_t)((x-min)/d + 0.5)`.
    fn quantize(x: &[f32; QK]) -> Self {
        let (min, max) = min_max(x);
        let d = (max - min) / 31.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut qs = [0u8; QK / 2];
        let mut qh = 0u32;
        for j in 0..QK / 2 {
            let q = |v: f32| c_cast_f32_to_i32((v - min) * id + 0.5) as u8;
            let (xi0, xi1) = (q(x[j]), q(x[j + QK / 2]));
            qs[j] = (xi0 & 0x0F) | ((xi1 & 0x0F) << 4);
            qh |= (u32::from(xi0 & 0x10) >> 4) << j;
            qh |= (u32::from(xi1 & 0x10) >> 4) << (j + QK / 2);
        }
        Self {
            d: fp32_to_fp16(d),
            m: fp32_to_fp16(min),
            qh: qh.to_le_bytes(),
            qs,
        }
    }
}

impl VecDotBlock<QK> for BlockQ5_1 {
    type Rhs = BlockQ8_1;
    /// `d_x·d_y·Σ q_x·q_y + m_x·s_y` (see [`BlockQ8_1`]).
    fn vec_dot_block(&self, y: &BlockQ8_1) -> f32 {
        let sumi: i32 = (0..QK).map(|i| self.q(i) * i32::from(y.qs[i])).sum();
        (fp16_to_fp32(self.d) * fp16_to_fp32(y.d)) * sumi as f32
            + fp16_to_fp32(self.m) * fp16_to_fp32(y.s)
    }
}
