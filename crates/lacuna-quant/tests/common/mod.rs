//! Shared helpers of the API tests: random blocks with sane scales, f64 references.

#![allow(dead_code)]

use lacuna_quant::{GgmlType, dequantize_row, quantize_row};

/// Offsets of the f16 (or, for Q8_K, f32) scale fields in a block of `ty`.
pub(crate) fn scale_fields(ty: GgmlType) -> &'static [(usize, bool)] {
    use GgmlType as T;
    // (offset, is_f32)
    match ty {
        T::Q3_K => &[(108, false)],
        T::Q6_K => &[(208, false)],
        T::Q4_0 | T::Q5_0 | T::Q8_0 | T::IQ4_NL | T::IQ4_XS => &[(0, false)],
        T::Q4_1 | T::Q5_1 | T::Q8_1 | T::Q4_K | T::Q5_K => &[(0, false), (2, false)],
        T::Q2_K => &[(80, false), (82, false)],
        T::Q8_K => &[(0, true)],
        T::TQ1_0 => &[(52, false)],
        T::TQ2_0 => &[(64, false)],
        _ => &[],
    }
}

/// Overwrites the scale fields of every block in `bytes` with finite values `±2^e·(1+m)`,
/// taking exponents from `exps` (cycled) so no scale is NaN or infinite.
pub(crate) fn patch_scales(ty: GgmlType, bytes: &mut [u8], exps: &[i8]) {
    let size = ty.type_size();
    let mut k = 0usize;
    for block in bytes.chunks_exact_mut(size) {
        if ty == GgmlType::MXFP4 {
            // E8M0 exponent byte: keep the scale near 1 (2^(e-128))
            block[0] = (128 + i32::from(exps[k % exps.len()])) as u8;
            k += 1;
        }
        for &(off, is_f32) in scale_fields(ty) {
            let e = i32::from(exps[k % exps.len()]);
            let sign = if k % 3 == 0 { -1.0 } else { 1.0 };
            let v = sign * 2f32.powi(e) * (1.0 + (k % 7) as f32 / 8.0);
            k += 1;
            if is_f32 {
                block[off..off + 4].copy_from_slice(&v.to_le_bytes());
            } else {
                let h = half::f16::from_f32(v);
                block[off..off + 2].copy_from_slice(&h.to_bits().to_le_bytes());
            }
        }
    }
}

/// Dequantizes `bytes` of `ty` holding `n` elements.
pub(crate) fn dequant(ty: GgmlType, bytes: &[u8], n: usize) -> Vec<f32> {
    let mut out = vec![0f32; n];
    dequantize_row(ty, bytes, &mut out).unwrap();
    out
}

/// Quantizes `x` to `ty`.
pub(crate) fn quant(ty: GgmlType, x: &[f32]) -> Vec<u8> {
    let mut out = vec![0u8; x.len() / ty.block_size() * ty.type_size()];
    quantize_row(ty, x, &mut out).unwrap();
    out
}

/// ggml test-quantize-fns' `array_rmse`: `sqrt(Σ(a−b)²) / n` (its own normalisation).
pub(crate) fn ggml_array_rmse(a: &[f32], b: &[f32]) -> f32 {
    let sum: f64 = a
        .iter()
        .zip(b)
        .map(|(&x, &y)| {
            let d = f64::from(x) - f64::from(y);
            d * d
        })
        .sum();
    (sum as f32).sqrt() / a.len() as f32
}

/// ggml test-quantize-fns' `generate_data`: `0.1 + 2·cos(i + offset)`.
pub(crate) fn ggml_test_data(offset: f32, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| 0.1 + 2.0 * (i as f32 + offset).cos())
        .collect()
}

/// Every type with a reference quantizer: the list `can_quantize` is pinned to
/// (`quantize_props.rs`), shared by the property and round-trip tests.
pub(crate) const QUANTIZERS: &[GgmlType] = &[
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q8_1,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::Q8_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::TQ1_0,
    GgmlType::TQ2_0,
    GgmlType::MXFP4,
];

/// Every quantizer but the lossless F32 copy: the types with ggml reference vectors and
/// ggml's quantization-error thresholds.
pub(crate) fn quantized() -> impl Iterator<Item = GgmlType> {
    QUANTIZERS.iter().copied().filter(|&ty| ty != GgmlType::F32)
}
