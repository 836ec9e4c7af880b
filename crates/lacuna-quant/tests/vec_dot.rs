//! Scalar `vec_dot` of every type against an f64 dot product of the dequantized operands.
//!
//! Bound (documented on `lacuna_quant::vec_dot`): with `ε = 2⁻²³`, `S = Σ|y_i|·(|x_i| + |x0_i|)`
//! where `x0` is the block dequantized with its quants zeroed (the min/offset term, whose
//! rounding the integer formula does not share), and `nb` blocks:
//! `|dot − ref| ≤ (16 + nb)·ε·S`, plus `2⁻¹⁰·Σ|x0_i|·|y_i|` for Q8_1 partners, whose
//! stored sum `s = d·Σq` is rounded to f16.

mod common;

use common::{dequant, patch_scales, quant};
use lacuna_quant::{GgmlType, vec_dot, vec_dot_type};
use proptest::prelude::*;

const DOT_TYPES: &[GgmlType] = &[
    GgmlType::F32,
    GgmlType::F16,
    GgmlType::BF16,
    GgmlType::Q4_0,
    GgmlType::Q4_1,
    GgmlType::Q5_0,
    GgmlType::Q5_1,
    GgmlType::Q8_0,
    GgmlType::Q2_K,
    GgmlType::Q3_K,
    GgmlType::Q4_K,
    GgmlType::Q5_K,
    GgmlType::Q6_K,
    GgmlType::IQ4_NL,
    GgmlType::IQ4_XS,
    GgmlType::TQ1_0,
    GgmlType::TQ2_0,
    GgmlType::MXFP4,
];

/// Zeroes every quant bit of the blocks, keeping the scale fields.
fn zero_quants(ty: GgmlType, bytes: &[u8]) -> Vec<u8> {
    let mut z = vec![0u8; bytes.len()];
    let fields = common::scale_fields(ty);
    let size = ty.type_size();
    for (zb, b) in z.chunks_exact_mut(size).zip(bytes.chunks_exact(size)) {
        for &(off, is_f32) in fields {
            let w = if is_f32 { 4 } else { 2 };
            zb[off..off + w].copy_from_slice(&b[off..off + w]);
        }
        // the scale/min bytes of K-quants are quant-independent too
        let keep: Option<std::ops::Range<usize>> = match ty {
            GgmlType::Q2_K => Some(0..16),
            GgmlType::Q3_K => Some(96..108),
            GgmlType::Q4_K | GgmlType::Q5_K => Some(4..16),
            GgmlType::Q6_K => Some(192..208),
            GgmlType::IQ4_XS => Some(2..8),
            GgmlType::MXFP4 => Some(0..1),
            _ => None,
        };
        if let Some(r) = keep {
            zb[r.clone()].copy_from_slice(&b[r]);
        }
    }
    z
}

fn check(
    ty: GgmlType,
    nb: usize,
    raw: &[u8],
    exps: &[i8],
    acts: &[f32],
) -> Result<(), TestCaseError> {
    let yt = vec_dot_type(ty).unwrap();
    let n = nb * ty.block_size();
    let mut xb = raw[..nb * ty.type_size()].to_vec();
    patch_scales(ty, &mut xb, exps);
    let x = dequant(ty, &xb, n);
    prop_assume!(x.iter().all(|v| v.is_finite()));
    let yb = quant(yt, &acts[..n]);
    let y = dequant(yt, &yb, n);
    let x0 = dequant(ty, &zero_quants(ty, &xb), n);
    let reference: f64 = x
        .iter()
        .zip(&y)
        .map(|(&a, &b)| f64::from(a) * f64::from(b))
        .sum();
    let s: f64 = (0..n)
        .map(|i| f64::from(y[i]).abs() * (f64::from(x[i]).abs() + f64::from(x0[i]).abs()))
        .sum();
    let s0: f64 = (0..n)
        .map(|i| f64::from(y[i]).abs() * f64::from(x0[i]).abs())
        .sum();
    let eps = f64::from(f32::EPSILON);
    let mut bound = (16.0 + nb as f64) * eps * s + f64::from(f32::MIN_POSITIVE);
    if yt == GgmlType::Q8_1 {
        bound += s0 / 1024.0;
    }
    let got = vec_dot(ty, n, &xb, &yb).unwrap();
    let err = (f64::from(got) - reference).abs();
    prop_assert!(
        err <= bound,
        "{ty}: got {got}, f64 reference {reference}, error {err} > bound {bound}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn vec_dot_matches_f64_reference(
        raw in prop::collection::vec(any::<u8>(), 4 * 292),
        exps in prop::collection::vec(-24i8..=3, 1..8),
        acts in prop::collection::vec(-8.0f32..8.0, 4 * 256),
        nb in 1usize..=4,
    ) {
        for &ty in DOT_TYPES {
            // f32/f16/bf16 "blocks" are single elements: use 64·nb of them
            let nb_ty = if ty.block_size() == 1 { 64 * nb } else { nb };
            let raw = if ty.block_size() == 1 {
                // keep floats finite and moderate: use quantized activations as the weights
                common::quant(ty, &acts[..nb_ty].iter().map(|v| v * 0.37).collect::<Vec<_>>())
            } else {
                raw.clone()
            };
            check(ty, nb_ty, &raw, &exps, &acts)?;
        }
    }
}

#[test]
fn vec_dot_of_zero_blocks_is_zero() {
    for &ty in DOT_TYPES {
        let yt = vec_dot_type(ty).unwrap();
        let n = ty.block_size().max(32) * 2;
        let nbx = n / ty.block_size();
        let xb = vec![0u8; nbx * ty.type_size()];
        let yb = quant(yt, &(0..n).map(|i| i as f32 - 10.0).collect::<Vec<_>>());
        assert_eq!(vec_dot(ty, n, &xb, &yb).unwrap(), 0.0, "{ty}");
    }
}
