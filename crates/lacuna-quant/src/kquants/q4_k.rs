//! `Q4_K`: 4.5 bits per weight, 8 sub-blocks of 32 with 6-bit scales and mins.

use bytemuck::{Pod, Zeroable};
use half::f16;

use super::solvers::{Qkx2, get_scale_min_k4, make_qkx2_quants, pack_scale_min_k4};
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::kquants::BlockQ8K;
use crate::scalar::{fp16_to_fp32, fp32_to_fp16, nearest_int};
use crate::{GgmlType, QK_K};

/// ggml's `block_q4_K` (144 bytes).
///
/// ```text
/// offset 0    d: f16        scale of the sub-block scales
/// offset 2    dmin: f16     scale of the sub-block mins
/// offset 4    scales[12]    8 six-bit scales sc0..7 and mins m0..7:
///               bytes 0..4   sc0..3 in bits 0-5, high 2 bits of sc4..7 in bits 6-7
///               bytes 4..8   m0..3  in bits 0-5, high 2 bits of m4..7  in bits 6-7
///               bytes 8..12  low 4 bits of sc4..7 | low 4 bits of m4..7 << 4
/// offset 16   qs[128]       4-bit quants; sub-block 2c in the low nibbles of
///                           qs[32c..32c+32], sub-block 2c+1 in their high nibbles
/// weight (sub-block j, quant q) = d·sc_j·q − dmin·m_j
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockQ4K {
    /// Super-block scale for the quantized scales.
    pub d: f16,
    /// Super-block scale for the quantized mins.
    pub dmin: f16,
    /// Packed 6-bit scales and mins (see the layout above).
    pub scales: [u8; 12],
    /// Packed 4-bit quants.
    pub qs: [u8; QK_K / 2],
}
const _: () = assert!(size_of::<BlockQ4K>() == 144);

impl BlockQ4K {
    /// The 4-bit quant of element `i` (0..256).
    fn q(&self, i: usize) -> u8 {
        let (c, l) = (i / 64, i % 64);
        if l < 32 {
            self.qs[32 * c + l] & 0xF
        } else {
            self.qs[32 * c + l - 32] >> 4
        }
    }
}

impl QuantBlock<QK_K> for BlockQ4K {
    const TYPE: GgmlType = GgmlType::Q4_K;
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

impl QuantizeBlock<QK_K> for BlockQ4K {
    /// `quantize_row_q4_K_ref`: per sub-block `make_qkx2_quants(32, 15, …, -1, 0.1, 20)`
    /// with weights `rms + |x|`, scales and mins to 6 bits against their maxima, then every
    /// quant recomputed from the rounded scales.
    fn quantize(x: &[f32; QK_K]) -> Self {
        let p = Qkx2 {
            nmax: 15,
            rmin: -1.0,
            rdelta: 0.1,
            nstep: 20,
            use_mad: false,
        };
        quantize_k4(x, &p, 15).0
    }
}

/// The shared body of the Q4_K and Q5_K reference quantizers: returns the Q4_K-shaped
/// block (for Q5_K the caller repacks `L`) and the quants `L` (0..=qmax).
pub(super) fn quantize_k4(x: &[f32; QK_K], p: &Qkx2, qmax: i32) -> (BlockQ4K, [u8; QK_K]) {
    let mut l = [0u8; QK_K];
    let mut mins = [0f32; 8];
    let mut scales = [0f32; 8];
    let mut max_scale = 0.0f32;
    let mut max_min = 0.0f32;
    for j in 0..8 {
        let xs = &x[32 * j..32 * j + 32];
        let mut sum_x2 = 0.0f32;
        for &v in xs {
            sum_x2 += v * v;
        }
        let av_x = (sum_x2 / 32.0).sqrt();
        let mut weights = [0f32; 32];
        for (w, &v) in weights.iter_mut().zip(xs) {
            *w = av_x + v.abs();
        }
        let (s, m) = make_qkx2_quants(p, xs, &weights, &mut l[32 * j..32 * j + 32]);
        scales[j] = s;
        mins[j] = m;
        if s > max_scale {
            max_scale = s;
        }
        if m > max_min {
            max_min = m;
        }
    }
    let inv_scale = if max_scale > 0.0 {
        63.0 / max_scale
    } else {
        0.0
    };
    let inv_min = if max_min > 0.0 { 63.0 / max_min } else { 0.0 };
    let mut ls = [0u8; 8];
    let mut lm = [0u8; 8];
    for j in 0..8 {
        ls[j] = (nearest_int(inv_scale * scales[j]) as u8).min(63);
        lm[j] = (nearest_int(inv_min * mins[j]) as u8).min(63);
    }
    let mut y = BlockQ4K {
        d: fp32_to_fp16(max_scale / 63.0),
        dmin: fp32_to_fp16(max_min / 63.0),
        scales: pack_scale_min_k4(&ls, &lm),
        qs: [0; QK_K / 2],
    };
    for j in 0..8 {
        let (sc, m) = get_scale_min_k4(j, &y.scales);
        let d = fp16_to_fp32(y.d) * f32::from(sc);
        if d == 0.0 {
            continue;
        }
        let dm = fp16_to_fp32(y.dmin) * f32::from(m);
        for ii in 0..32 {
            let q = nearest_int((x[32 * j + ii] + dm) / d);
            l[32 * j + ii] = q.clamp(0, qmax) as u8;
        }
    }
    for c in 0..4 {
        for i in 0..32 {
            y.qs[32 * c + i] = (l[64 * c + i] & 0xF) | (l[64 * c + i + 32] << 4);
        }
    }
    (y, l)
}

impl VecDotBlock<QK_K> for BlockQ4K {
    type Rhs = BlockQ8K;
    /// `d_x·d_y·Σ_j sc_j·Σ q·q_y − dmin_x·d_y·Σ_j m_j·(bsums[2j] + bsums[2j+1])`.
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
