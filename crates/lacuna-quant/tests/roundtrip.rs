//! Quantize → dequantize and quantized dot products on ggml's own test data, with the
//! thresholds of ggml's `tests/test-quantize-fns.cpp`.

mod common;

use common::{dequant, ggml_array_rmse, ggml_test_data, quant, quantized};
use lacuna_quant::{GgmlType, vec_dot, vec_dot_type};

const TEST_SIZE: usize = 32 * 128;

/// ggml's `MAX_QUANTIZATION_TOTAL_ERROR*` for a type.
fn max_quantization_error(ty: GgmlType) -> f32 {
    match ty {
        GgmlType::Q2_K => 0.0075,
        GgmlType::Q3_K => 0.0040,
        GgmlType::TQ1_0 | GgmlType::TQ2_0 => 0.01,
        _ => 0.002,
    }
}

/// ggml's `MAX_DOT_PRODUCT_ERROR*` for a type.
fn max_dot_error(ty: GgmlType) -> f32 {
    match ty {
        GgmlType::Q2_K => 0.04,
        GgmlType::TQ1_0 | GgmlType::TQ2_0 => 0.15,
        _ => 0.02,
    }
}

#[test]
fn total_quantization_error_is_within_ggml_thresholds() {
    let x = ggml_test_data(0.0, TEST_SIZE);
    for ty in quantized() {
        let y = dequant(ty, &quant(ty, &x), TEST_SIZE);
        let err = ggml_array_rmse(&x, &y);
        assert!(err < max_quantization_error(ty), "{ty}: total error {err}");
        assert!(
            err > 0.0 || matches!(ty, GgmlType::F16 | GgmlType::BF16),
            "{ty}: lossless?"
        );
    }
}

#[test]
fn quantized_dot_product_error_is_within_ggml_thresholds() {
    let x = ggml_test_data(0.0, TEST_SIZE);
    let y = ggml_test_data(1.0, TEST_SIZE);
    let exact: f64 = x
        .iter()
        .zip(&y)
        .map(|(&a, &b)| f64::from(a) * f64::from(b))
        .sum();
    for ty in quantized() {
        let Some(yt) = vec_dot_type(ty) else { continue };
        let got = vec_dot(ty, TEST_SIZE, &quant(ty, &x), &quant(yt, &y)).unwrap();
        let err = (f64::from(got) - exact).abs() as f32 / TEST_SIZE as f32;
        assert!(err < max_dot_error(ty), "{ty}: dot product error {err}");
    }
}
