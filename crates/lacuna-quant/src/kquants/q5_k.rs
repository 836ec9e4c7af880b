//! `Q5_K`: 5.5 bits per weight, Q4_K plus a fifth bit per weight.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::q4_k::quantize_k4;
use super::solvers::{Qkx2, get_scale_min_k4};
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::kquants::BlockQ8K;
use crate::scalar::fp16_to_fp32;
use crate::{GgmlType, QK_K};

/// ggml's `block_q5_K` (176 bytes).
///
/// ```text
/// offset 0    d: f16, offset 2 dmin: f16, offset 4 scales[12]   exactly as Q4_K
/// offset 16   qh[32]        fifth bits: element 64c + l (l < 32) has bit 2c of qh[l],
///                           element 64c + 32 + l has bit 2c+1 of qh[l]
/// offset 48   qs[128]       low 4 bits, packed as Q4_K's quants
/// weight (sub-block j, quant q in 0..32) = d·sc_j·q − dmin·m_j
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ5K {
    /// Super-block scale for the quantized scales.
    pub d: f16,
    /// Super-block scale for the quantized mins.
    pub dmin: f16,
    /// Packed 6-bit scales and mins (as Q4_K).
    pub scales: [u8; 12],
    /// Fifth bits.
    pub qh: [u8; QK_K / 8],
    /// Packed low 4 bits.
    pub qs: [u8; QK_K / 2],
}
const _: () = assert!(size_of::<BlockQ5K>() == 176);

impl BlockQ5K {
    /// The 5-bit quant of element `i` (0..256).
    fn q(&self, i: usize) -> u8 {
        let (c, l) = (i / 64, i % 64);
        let (lo, hbit) = if l < 32 {
            (self.qs[32 * c + l] & 0xF, (self.qh[l] >> (2 * c)) & 1)
        } else {
            (
                self.qs[32 * c + l - 32] >> 4,
                (self.qh[l - 32] >> (2 * c + 1)) & 1,
            )
        };
        lo | (hbit << 4)
    }
}

impl QuantBlock<QK_K> for BlockQ5K {
    const TYPE: GgmlType = GgmlType::Q5_K;
    fn dequantize(&self, out: &mut [f32; QK_K]) {
        let d = fp16_to_fp32(self.d);
        let min = fp16_to_fp32(self.dmin);
        for j in 0..8 {
            let (sc, m) = get_scale_min_k4(j, &self.scales);
            let d1 = d * f32::from(sc);
            let m1 = min * f32::from(m);
            for i in 32 * j..32 * j + 32 {
                out[i] = d1 * f32::from(self.q(i)) - m1;
            }
        }
    }
}

impl QuantizeBlock<QK_K> for BlockQ5K {
    /// `quantize_row_q5_K_ref`: as Q4_K with `make_qkx2_quants(32, 31, …, -0.5, 0.1, 15)`.
    fn quantize(x: &[f32; QK_K]) -> Self {
        let p = Qkx2 {
            nmax: 31,
            rmin: -0.5,
            rdelta: 0.1,
            nstep: 15,
            use_mad: false,
        };
        let (b4, l) = quantize_k4(x, &p, 31);
        let mut y = Self {
            d: b4.d,
            dmin: b4.dmin,
            scales: b4.scales,
            qh: [0; QK_K / 8],
            qs: [0; QK_K / 2],
        };
        for c in 0..4 {
            for j in 0..32 {
                let mut l1 = l[64 * c + j];
                if l1 > 15 {
                    l1 -= 16;
                    y.qh[j] |= 1 << (2 * c);
                }
                let mut l2 = l[64 * c + j + 32];
                if l2 > 15 {
                    l2 -= 16;
                    y.qh[j] |= 2 << (2 * c);
                }
                y.qs[32 * c + j] = l1 | (l2 << 4);
            }
        }
        y
    }
}

impl VecDotBlock<QK_K> for BlockQ5K {
    type Rhs = BlockQ8K;
    /// As Q4_K with 5-bit quants.
    fn vec_dot_block(&self, y: &BlockQ8K) -> f32 {
        let mut sumi = 0i32;
        let mut summ = 0i32;
        for j in 0..8 {
            let (sc, m) = get_scale_min_k4(j, &self.scales);
            let s: i32 = (32 * j..32 * j + 32)
                .map(|i| i32::from(self.q(i)) * i32::from(y.qs[i]))
                .sum();
            sumi += i32::from(sc) * s;
            summ += i32::from(m) * (i32::from(y.bsums[2 * j]) + i32::from(y.bsums[2 * j + 1]));
        }
        let d = fp16_to_fp32(self.d) * y.d;
        let dmin = fp16_to_fp32(self.dmin) * y.d;
        d * sumi as f32 - dmin * summ as f32
    }
}
