//! The non-linear 4-bit formats IQ4_NL (32-element blocks, like Q4_0) and IQ4_XS
//! (256-element super-blocks with 6-bit sub-block scales): each 4-bit index selects one of
//! 16 fixed levels ([`KVALUES_IQ4NL`]) that is then scaled.

use bytemuck::{Pod, Zeroable};
use half::f16;

use crate::block::{QuantBlock, VecDotBlock};
use crate::kquants::BlockQ8K;
use crate::legacy::BlockQ8_0;
use crate::scalar::fp16_to_fp32;
use crate::{GgmlType, QK_K};

mod quantize;

/// ggml's `kvalues_iq4nl`: the 16 levels of IQ4_NL and IQ4_XS.
pub const KVALUES_IQ4NL: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// Elements per IQ4_NL block (`QK4_NL`).
const QK4_NL: usize = 32;

/// ggml's `block_iq4_nl` (18 bytes): `d` at 0, `qs[16]` at 2, nibbles packed as Q4_0
/// (element j low nibble of `qs[j]`, element j+16 high nibble);
/// weight = `d · KVALUES_IQ4NL[index]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockIQ4NL {
    /// Scale.
    pub d: f16,
    /// Packed 4-bit level indices.
    pub qs: [u8; QK4_NL / 2],
}
const _: () = assert!(size_of::<BlockIQ4NL>() == 18);

fn level(nibble: u8) -> i8 {
    KVALUES_IQ4NL[usize::from(nibble & 0xF)]
}

impl QuantBlock<QK4_NL> for BlockIQ4NL {
    const TYPE: GgmlType = GgmlType::IQ4_NL;
    fn dequantize(&self, out: &mut [f32; QK4_NL]) {
        let d = fp16_to_fp32(self.d);
        for j in 0..QK4_NL / 2 {
            out[j] = d * f32::from(level(self.qs[j]));
            out[j + QK4_NL / 2] = d * f32::from(level(self.qs[j] >> 4));
        }
    }
}

impl VecDotBlock<QK4_NL> for BlockIQ4NL {
    type Rhs = BlockQ8_0;
    fn vec_dot_block(&self, y: &BlockQ8_0) -> f32 {
        let mut sumi = 0i32;
        for j in 0..QK4_NL / 2 {
            sumi += i32::from(level(self.qs[j])) * i32::from(y.qs[j])
                + i32::from(level(self.qs[j] >> 4)) * i32::from(y.qs[j + QK4_NL / 2]);
        }
        (fp16_to_fp32(self.d) * fp16_to_fp32(y.d)) * sumi as f32
    }
}

/// ggml's `block_iq4_xs` (136 bytes).
///
/// ```text
/// offset 0    d: f16
/// offset 2    scales_h: u16    high 2 bits of sub-block scale g at bits 2g..2g+2
/// offset 4    scales_l[4]      low 4 bits of scale g: (scales_l[g/2] >> 4·(g%2)) & 15
/// offset 8    qs[128]          sub-block g (32 elements) in qs[16g..16g+16], packed
///                              as IQ4_NL
/// weight (sub-block g) = d·(scale_g − 32)·KVALUES_IQ4NL[index]
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockIQ4XS {
    /// Super-block scale.
    pub d: f16,
    /// High 2 bits of the 8 sub-block scales.
    pub scales_h: u16,
    /// Low 4 bits of the 8 sub-block scales.
    pub scales_l: [u8; QK_K / 64],
    /// Packed 4-bit level indices.
    pub qs: [u8; QK_K / 2],
}
const _: () = assert!(size_of::<BlockIQ4XS>() == 136);

impl BlockIQ4XS {
    /// The signed scale of sub-block `g` (0..8), already minus 32.
    pub fn scale(&self, g: usize) -> i32 {
        let lo = (self.scales_l[g / 2] >> (4 * (g % 2))) & 0xF;
        let hi = ((self.scales_h >> (2 * g)) & 3) as u8;
        i32::from(lo | (hi << 4)) - 32
    }

    fn index_level(&self, i: usize) -> i8 {
        let (g, r) = (i / 32, i % 32);
        let b = self.qs[16 * g + r % 16];
        level(if r < 16 { b } else { b >> 4 })
    }
}

impl QuantBlock<QK_K> for BlockIQ4XS {
    const TYPE: GgmlType = GgmlType::IQ4_XS;
    fn dequantize(&self, out: &mut [f32; QK_K]) {
        let d = fp16_to_fp32(self.d);
        for g in 0..QK_K / 32 {
            let dl = d * self.scale(g) as f32;
            for i in 32 * g..32 * g + 32 {
                out[i] = dl * f32::from(self.index_level(i));
            }
        }
    }
}

impl VecDotBlock<QK_K> for BlockIQ4XS {
    type Rhs = BlockQ8K;
    /// `d_x·d_y·Σ_g (scale_g − 32)·Σ level·q_y`.
    fn vec_dot_block(&self, y: &BlockQ8K) -> f32 {
        let mut sumi = 0i32;
        for g in 0..QK_K / 32 {
            let s: i32 = (32 * g..32 * g + 32)
                .map(|i| i32::from(self.index_level(i)) * i32::from(y.qs[i]))
                .sum();
            sumi += self.scale(g) * s;
        }
        fp16_to_fp32(self.d) * y.d * sumi as f32
    }
}
