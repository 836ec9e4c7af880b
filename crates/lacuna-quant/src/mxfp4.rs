//! The FP4 (E2M1) formats: MXFP4 (OCP microscaling: 32 values sharing one E8M0
//! power-of-two scale) and NVFP4 (64 values, one UE4M3 scale per 16; dequantization only,
//! its ggml dot product pairs one block with two Q8_0 blocks).

use bytemuck::{Pod, Zeroable};

use crate::GgmlType;
use crate::block::{QuantBlock, QuantizeBlock, VecDotBlock};
use crate::legacy::BlockQ8_0;
use crate::scalar::fp16_to_fp32;

/// ggml's `kvalues_mxfp4`: the E2M1 values, doubled (so they are integers).
pub const KVALUES_MXFP4: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// ggml's `block_mxfp4` (17 bytes): `e` (E8M0 exponent) at 0, `qs[16]` at 1 packed as
/// Q4_0 (element j low nibble of `qs[j]`, element j+16 high nibble);
/// weight = `KVALUES_MXFP4[index] · 2^(e − 128)` (the halving undoes the doubled table).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockMXFP4 {
    /// Shared E8M0 exponent.
    pub e: u8,
    /// Packed 4-bit E2M1 indices.
    pub qs: [u8; 16],
}
const _: () = assert!(size_of::<BlockMXFP4>() == 17);

/// ggml's `GGML_E8M0_TO_FP32_HALF`: `2^(e − 128)` as f32 bits (subnormal for e < 2).
pub fn e8m0_to_fp32_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        u32::from(e - 1) << 23
    };
    f32::from_bits(bits)
}

impl BlockMXFP4 {
    fn level(&self, i: usize) -> i8 {
        let b = self.qs[i % 16];
        KVALUES_MXFP4[usize::from(if i < 16 { b & 0xF } else { b >> 4 })]
    }
}

impl QuantBlock<32> for BlockMXFP4 {
    const TYPE: GgmlType = GgmlType::MXFP4;
    fn dequantize(&self, out: &mut [f32; 32]) {
        let d = e8m0_to_fp32_half(self.e);
        for (i, o) in out.iter_mut().enumerate() {
            *o = f32::from(self.level(i)) * d;
        }
    }
}

/// ggml's `best_index_mxfp4`: the first level nearest to `x` at scale `d`.
fn best_index_mxfp4(x: f32, d: f32) -> u8 {
    let mut best = 0u8;
    let mut best_err = (f32::from(KVALUES_MXFP4[0]) * d - x).abs();
    for (i, &k) in KVALUES_MXFP4.iter().enumerate().skip(1) {
        let err = (f32::from(k) * d - x).abs();
        if err < best_err {
            best = i as u8;
            best_err = err;
        }
    }
    best
}

impl QuantizeBlock<32> for BlockMXFP4 {
    /// ggml's `quantize_row_mxfp4_ref`: `e = floor(log2(amax)) - 2 + 127`, then the nearest
    /// level per value.
    fn quantize(x: &[f32; 32]) -> Self {
        let amax = x
            .iter()
            .fold(0.0f32, |m, v| if m < v.abs() { v.abs() } else { m });
        // ggml casts the float to uint8_t, which C leaves undefined outside 0..=255; x86
        // compilers convert through a 32-bit `cvttss2si` and keep the low byte (infinite or
        // NaN inputs give the "integer indefinite" 0x80000000, so byte 0). Do the same.
        let e = if amax > 0.0 {
            let v = amax.log2().floor() - 2.0 + 127.0;
            if v.is_finite() && v.abs() < 2_147_483_648.0 {
                v as i32 as u8
            } else {
                0
            }
        } else {
            0
        };
        let d = e8m0_to_fp32_half(e);
        let mut qs = [0u8; 16];
        for (j, q) in qs.iter_mut().enumerate() {
            *q = best_index_mxfp4(x[j], d) | (best_index_mxfp4(x[j + 16], d) << 4);
        }
        BlockMXFP4 { e, qs }
    }
}

impl VecDotBlock<32> for BlockMXFP4 {
    type Rhs = BlockQ8_0;
    fn vec_dot_block(&self, y: &BlockQ8_0) -> f32 {
        let sumi: i32 = (0..32)
            .map(|i| i32::from(self.level(i)) * i32::from(y.qs[i]))
            .sum();
        (fp16_to_fp32(y.d) * e8m0_to_fp32_half(self.e)) * sumi as f32
    }
}

/// ggml's `block_nvfp4` (36 bytes, 64 weights): `d[4]` UE4M3 scales (one per 16-element
/// sub-block) at 0, `qs[32]` at 4; sub-block s uses `qs[8s..8s+8]`, element `16s + j`
/// in the low nibble of `qs[8s + j]` and `16s + 8 + j` in its high nibble;
/// weight = `KVALUES_MXFP4[index] · ue4m3(d[s]) / 2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct BlockNVFP4 {
    /// UE4M3 sub-block scales.
    pub d: [u8; 4],
    /// Packed 4-bit E2M1 indices.
    pub qs: [u8; 32],
}
const _: () = assert!(size_of::<BlockNVFP4>() == 36);

/// ggml's `ggml_ue4m3_to_fp32`: unsigned E4M3 (bit 7 ignored, `0x7F` read as 0), halved
/// like [`e8m0_to_fp32_half`] to undo the doubled E2M1 table.
pub fn ue4m3_to_fp32_half(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let exp = i32::from((x >> 3) & 0xF);
    let man = f32::from(x & 0x7);
    let pow2 = |k: i32| f32::from_bits(((k + 127) as u32) << 23);
    let raw = if exp == 0 {
        man * pow2(-9)
    } else {
        (1.0 + man / 8.0) * pow2(exp - 7)
    };
    raw * 0.5
}

impl QuantBlock<64> for BlockNVFP4 {
    const TYPE: GgmlType = GgmlType::NVFP4;
    fn dequantize(&self, out: &mut [f32; 64]) {
        for s in 0..4 {
            let d = ue4m3_to_fp32_half(self.d[s]);
            for j in 0..8 {
                let b = self.qs[8 * s + j];
                out[16 * s + j] = f32::from(KVALUES_MXFP4[usize::from(b & 0xF)]) * d;
                out[16 * s + j + 8] = f32::from(KVALUES_MXFP4[usize::from(b >> 4)]) * d;
            }
        }
    }
}
