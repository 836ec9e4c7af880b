//! The ternary formats TQ1_0 (1.6875 bpw, base-3 packed) and TQ2_0 (2.0625 bpw): each
//! weight is `d·t` with `t ∈ {−1, 0, 1}` (BitNet b1.58 / TriLM models).

use bytemuck::{Pod, Zeroable};
use half::f16;

use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::kquants::BlockQ8K;
use crate::scalar::{c_max, fp16_to_fp32, fp32_to_fp16};
use crate::{GgmlType, QK_K};

/// ggml's `block_tq1_0` (54 bytes).
///
/// ```text
/// offset 0    qs[48]   5 trits per byte, stored as ceil(v·256/243) of the base-3 number v
///                      (first trit most significant); trit n of byte m is
///                      ((qs[m]·3ⁿ mod 256)·3) >> 8:
///                        qs[0..32]  → elements 32n + m        (n < 5)
///                        qs[32..48] → elements 160 + 16n + m  (n < 5)
/// offset 48   qh[4]    4 trits per byte (shifted up one trit): elements 240 + 4n + j
/// offset 52   d: f16
/// weight = d·(trit − 1)
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockTQ1_0 {
    /// Five trits per byte.
    pub qs: [u8; 48],
    /// Four trits per byte.
    pub qh: [u8; 4],
    /// Scale.
    pub d: f16,
}
const _: () = assert!(size_of::<BlockTQ1_0>() == 54);

/// ggml's `block_tq2_0` (66 bytes): `qs[64]` then `d: f16`; element `128c + 32l + m` is
/// bits `2l..2l+2` of `qs[32c + m]`, weight = `d·(q − 1)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockTQ2_0 {
    /// 2-bit codes, 4 per byte.
    pub qs: [u8; 64],
    /// Scale.
    pub d: f16,
}
const _: () = assert!(size_of::<BlockTQ2_0>() == 66);

const POW3: [u8; 6] = [1, 3, 9, 27, 81, 243];

fn trit(byte: u8, n: usize) -> i8 {
    let q = byte.wrapping_mul(POW3[n]);
    ((u16::from(q) * 3) >> 8) as i8 - 1
}

impl BlockTQ1_0 {
    /// The 256 ternary values (−1, 0, 1) in element order.
    pub fn trits(&self) -> [i8; QK_K] {
        let mut t = [0i8; QK_K];
        let mut k = 0;
        for n in 0..5 {
            for m in 0..32 {
                t[k] = trit(self.qs[m], n);
                k += 1;
            }
        }
        for n in 0..5 {
            for m in 0..16 {
                t[k] = trit(self.qs[32 + m], n);
                k += 1;
            }
        }
        for n in 0..4 {
            for j in 0..4 {
                t[k] = trit(self.qh[j], n);
                k += 1;
            }
        }
        t
    }
}

impl BlockTQ2_0 {
    /// The 256 values `q − 1` in element order (−1..=2; the quantizer writes −1..=1).
    pub fn trits(&self) -> [i8; QK_K] {
        let mut t = [0i8; QK_K];
        for c in 0..2 {
            for l in 0..4 {
                for m in 0..32 {
                    t[128 * c + 32 * l + m] = ((self.qs[32 * c + m] >> (2 * l)) & 3) as i8 - 1;
                }
            }
        }
        t
    }
}

/// glibc's `lroundf` as x86-64 builds it, narrowed to `int` as ggml stores it: round half
/// away from zero; NaN and out-of-range values give `LONG_MIN`, whose low 32 bits are 0.
fn c_lroundf_int(x: f32) -> i32 {
    if x.is_nan() || x.abs() >= 9.223_372e18 {
        0
    } else {
        x.round() as i64 as i32
    }
}

/// `d·t` for every value of a block (both formats dequantize their trits alike).
fn dequantize_trits(trits: &[i8; QK_K], d: f16, out: &mut [f32; QK_K]) {
    let d = fp16_to_fp32(d);
    for (o, &t) in out.iter_mut().zip(trits) {
        *o = f32::from(t) * d;
    }
}

/// ggml's `vec_dot_tq*_q8_K` for one block: the integer sum `Σ t·q`, then `· (d · d_y)`.
fn dot_trits(trits: &[i8; QK_K], d: f16, y: &BlockQ8K) -> f32 {
    let sum: i32 = trits
        .iter()
        .zip(&y.qs)
        .map(|(&t, &q)| i32::from(t) * i32::from(q))
        .sum();
    sum as f32 * (fp16_to_fp32(d) * y.d)
}

fn absmax_scale(x: &[f32; QK_K]) -> (f32, f32) {
    let d = x.iter().fold(0.0f32, |a, v| c_max(a, v.abs()));
    (d, if d != 0.0 { 1.0 / d } else { 0.0 })
}

impl QuantBlock<QK_K> for BlockTQ1_0 {
    const TYPE: GgmlType = GgmlType::TQ1_0;
    fn dequantize(&self, out: &mut [f32; QK_K]) {
        dequantize_trits(&self.trits(), self.d, out);
    }
}

impl QuantizeBlock<QK_K> for BlockTQ1_0 {
    /// `quantize_row_tq1_0_ref`: `d = amax`, trits `lroundf(x/d) + 1`, base-3 packed.
    fn quantize(x: &[f32; QK_K]) -> Self {
        let (d, id) = absmax_scale(x);
        let t = |v: f32| (c_lroundf_int(v * id) + 1) as u8;
        let pack = |q: u8| (u16::from(q) * 256).div_ceil(243) as u8; // ceil(q·256/243)
        let mut y = Self {
            qs: [0; 48],
            qh: [0; 4],
            d: fp32_to_fp16(d),
        };
        for m in 0..32 {
            let q = (0..5).fold(0u8, |q, n| q.wrapping_mul(3).wrapping_add(t(x[m + 32 * n])));
            y.qs[m] = pack(q);
        }
        for m in 0..16 {
            let q = (0..5).fold(0u8, |q, n| {
                q.wrapping_mul(3).wrapping_add(t(x[160 + m + 16 * n]))
            });
            y.qs[32 + m] = pack(q);
        }
        for j in 0..4 {
            let q = (0..4).fold(0u8, |q, n| {
                q.wrapping_mul(3).wrapping_add(t(x[240 + j + 4 * n]))
            });
            y.qh[j] = pack(q.wrapping_mul(3));
        }
        y
    }
}

impl VecDotBlock<QK_K> for BlockTQ1_0 {
    type Rhs = BlockQ8K;
    fn vec_dot_block(&self, y: &BlockQ8K) -> f32 {
        dot_trits(&self.trits(), self.d, y)
    }
}

impl QuantBlock<QK_K> for BlockTQ2_0 {
    const TYPE: GgmlType = GgmlType::TQ2_0;
    fn dequantize(&self, out: &mut [f32; QK_K]) {
        dequantize_trits(&self.trits(), self.d, out);
    }
}

impl QuantizeBlock<QK_K> for BlockTQ2_0 {
    /// `quantize_row_tq2_0_ref`: `d = amax`, codes `(lroundf(x/d) + 1) & 3`.
    fn quantize(x: &[f32; QK_K]) -> Self {
        let (d, id) = absmax_scale(x);
        let mut y = Self {
            qs: [0; 64],
            d: fp32_to_fp16(d),
        };
        for c in 0..2 {
            for m in 0..32 {
                let mut q = 0u8;
                for n in 0..4 {
                    let xi = c_lroundf_int(x[128 * c + m + 32 * n] * id) + 1;
                    q = q.wrapping_add(((xi & 3) << (2 * n)) as u8);
                }
                y.qs[32 * c + m] = q;
            }
        }
        y
    }
}

impl VecDotBlock<QK_K> for BlockTQ2_0 {
    type Rhs = BlockQ8K;
    fn vec_dot_block(&self, y: &BlockQ8K) -> f32 {
        dot_trits(&self.trits(), self.d, y)
    }
}
