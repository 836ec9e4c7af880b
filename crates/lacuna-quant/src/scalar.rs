//! Scalar helpers that reproduce ggml's C arithmetic bit for bit: its f16/bf16 conversions,
//! its `nearest_int` rounding trick, and the float-to-integer casts as x86-64 compilers emit
//! them for ggml's reference quantizers.

use half::{bf16, f16};

/// ggml's `GGML_FP16_TO_FP32` (`ggml_compute_fp16_to_fp32`), exact for every input.
pub fn fp16_to_fp32(h: f16) -> f32 {
    let w = u32::from(h.to_bits()) << 16;
    let sign = w & 0x8000_0000;
    let two_w = w.wrapping_add(w);
    let exp_offset: u32 = 0xE0 << 23;
    let exp_scale = f32::from_bits(0x0780_0000); // 2^-112
    let normalized = f32::from_bits((two_w >> 4) + exp_offset) * exp_scale;
    let magic_mask: u32 = 126 << 23;
    let denormalized = f32::from_bits((two_w >> 17) | magic_mask) - 0.5;
    let cutoff: u32 = 1 << 27;
    let bits = if two_w < cutoff {
        denormalized.to_bits()
    } else {
        normalized.to_bits()
    };
    f32::from_bits(sign | bits)
}

/// ggml's `GGML_FP32_TO_FP16` (`ggml_compute_fp32_to_fp16`): round to nearest even, overflow
/// to infinity, every NaN to the canonical `0x7E00` (with the input's sign).
pub fn fp32_to_fp16(f: f32) -> f16 {
    let scale_to_inf = f32::from_bits(0x7780_0000); // 2^112
    let scale_to_zero = f32::from_bits(0x0880_0000); // 2^-110
    let mut base = (f.abs() * scale_to_inf) * scale_to_zero;
    let w = f.to_bits();
    let shl1_w = w.wrapping_add(w);
    let sign = w & 0x8000_0000;
    let bias = (shl1_w & 0xFF00_0000).max(0x7100_0000);
    base += f32::from_bits((bias >> 1) + 0x0780_0000);
    let bits = base.to_bits();
    let exp_bits = (bits >> 13) & 0x0000_7C00;
    let mantissa_bits = bits & 0x0000_0FFF;
    let nonsign = exp_bits + mantissa_bits;
    let h = (sign >> 16)
        | if shl1_w > 0xFF00_0000 {
            0x7E00
        } else {
            nonsign
        };
    f16::from_bits(h as u16)
}

/// ggml's `GGML_BF16_TO_FP32`: the bf16 bits become the top half of an f32 (exact).
pub fn bf16_to_fp32(h: bf16) -> f32 {
    f32::from_bits(u32::from(h.to_bits()) << 16)
}

/// ggml's `GGML_FP32_TO_BF16` (`ggml_compute_fp32_to_bf16`): NaN is truncated and forced
/// quiet, everything else rounds to nearest even (overflowing to infinity).
pub fn fp32_to_bf16(f: f32) -> bf16 {
    let u = f.to_bits();
    if (u & 0x7fff_ffff) > 0x7f80_0000 {
        return bf16::from_bits(((u >> 16) | 64) as u16);
    }
    bf16::from_bits((u.wrapping_add(0x7fff + ((u >> 16) & 1)) >> 16) as u16)
}

/// ggml's `nearest_int`: adds 1.5·2^23 and reads the low mantissa bits, which rounds to
/// nearest even for |x| ≤ 4194303. Outside that range (and for NaN/∞) it returns the same
/// garbage ggml's release build does (ggml only asserts in debug builds).
pub fn nearest_int(fval: f32) -> i32 {
    let val = fval + 12_582_912.0;
    (val.to_bits() & 0x007f_ffff) as i32 - 0x0040_0000
}

/// A C float-to-integer conversion as x86-64 compilers emit it (`cvttss2si` to 32 bits):
/// truncation toward zero, and `i32::MIN` (the "integer indefinite") for NaN and for values
/// out of the `i32` range. Narrower C casts (`(int8_t)x`, `(uint8_t)x`) then keep the low
/// bits, which callers get with `as i8` / `as u8` on the result.
pub fn c_cast_f32_to_i32(x: f32) -> i32 {
    if x.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&x) {
        i32::MIN
    } else {
        x as i32
    }
}

/// ggml's `MAX(a, b)` macro, `a > b ? a : b`: unlike `f32::max` it returns `b` when either
/// is NaN.
pub fn c_max(a: f32, b: f32) -> f32 {
    if a > b { a } else { b }
}

#[cfg(test)]
mod tests;
