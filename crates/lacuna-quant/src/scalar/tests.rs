use super::*;

#[test]
fn fp16_to_fp32_matches_half_on_every_non_nan_value() {
    for bits in 0..=u16::MAX {
        let h = f16::from_bits(bits);
        let ours = fp16_to_fp32(h);
        if h.is_nan() {
            assert!(ours.is_nan(), "{bits:#06x}");
        } else {
            assert_eq!(ours.to_bits(), h.to_f32().to_bits(), "{bits:#06x}");
        }
    }
}

#[test]
fn fp32_to_fp16_rounds_to_nearest_even_like_half() {
    let mut x: u32 = 0x1234_5678;
    for _ in 0..200_000 {
        // xorshift32 over all bit patterns
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let f = f32::from_bits(x);
        let ours = fp32_to_fp16(f);
        if f.is_nan() {
            assert_eq!(ours.to_bits() & 0x7fff, 0x7E00);
        } else {
            assert_eq!(ours.to_bits(), f16::from_f32(f).to_bits(), "{x:#010x}");
        }
    }
    assert_eq!(fp32_to_fp16(65520.0).to_bits(), 0x7C00); // rounds up to +inf
    assert_eq!(fp32_to_fp16(-0.0).to_bits(), 0x8000);
}

#[test]
fn bf16_round_trip_and_nan_quieting() {
    assert_eq!(fp32_to_bf16(1.0).to_bits(), 0x3f80);
    // exactly halfway between two bf16 values: round to even
    assert_eq!(fp32_to_bf16(f32::from_bits(0x3f80_8000)).to_bits(), 0x3f80);
    assert_eq!(fp32_to_bf16(f32::from_bits(0x3f81_8000)).to_bits(), 0x3f82);
    // signalling NaN becomes quiet
    assert_eq!(fp32_to_bf16(f32::from_bits(0x7f80_0001)).to_bits(), 0x7fc0);
    assert_eq!(bf16_to_fp32(bf16::from_bits(0xc040)), -3.0);
}

#[test]
fn nearest_int_rounds_half_to_even() {
    assert_eq!(nearest_int(0.5), 0);
    assert_eq!(nearest_int(1.5), 2);
    assert_eq!(nearest_int(2.5), 2);
    assert_eq!(nearest_int(-2.5), -2);
    assert_eq!(nearest_int(-3.7), -4);
    assert_eq!(nearest_int(4_194_303.0), 4_194_303);
    assert_eq!(nearest_int(f32::NAN), 0);
}

#[test]
fn c_casts_follow_x86_semantics() {
    assert_eq!(c_cast_f32_to_i32(16.9), 16);
    assert_eq!(c_cast_f32_to_i32(-0.9), 0);
    assert_eq!(c_cast_f32_to_i32(f32::NAN), i32::MIN);
    assert_eq!(c_cast_f32_to_i32(3e9), i32::MIN);
    assert_eq!(c_cast_f32_to_i32(f32::NEG_INFINITY), i32::MIN);
    assert_eq!(c_cast_f32_to_i32(300.0) as i8, 44);
}
