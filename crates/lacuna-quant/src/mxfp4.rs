//! MXFP4 (OCP microscaling FP4): 32 E2M1 values sharing one E8M0 power-of-two scale.

use bytemuck::{Pod, Zeroable};

use crate::GgmlType;
use crate::block::{QuantBlock, VecDotBlock};
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

impl VecDotBlock<32> for BlockMXFP4 {
    type Rhs = BlockQ8_0;
    fn vec_dot_block(&self, y: &BlockQ8_0) -> f32 {
        let sumi: i32 = (0..32)
            .map(|i| i32::from(self.level(i)) * i32::from(y.qs[i]))
            .sum();
        (fp16_to_fp32(y.d) * e8m0_to_fp32_half(self.e)) * sumi as f32
    }
}
