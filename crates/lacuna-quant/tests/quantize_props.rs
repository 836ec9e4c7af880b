//! Property tests of the reference quantizers on random data (their bit-exactness with ggml
//! is tested in `vectors.rs`), plus the edge cases: zero, constant, tiny, huge, NaN and Inf
//! inputs, and arbitrary bit patterns.

mod common;

use common::{QUANTIZERS, dequant, quant};
use lacuna_quant::{BlockQ8_0, BlockQ8K, GgmlType, QuantizeBlock, can_quantize, quantize_blocks};
use proptest::prelude::*;

/// Largest `|x − dequant(quant(x))|` allowed, as a fraction of the block's largest
/// magnitude (block = 32 elements for the float types). Exact for the simple formats
/// (half a step, plus the f16 rounding of the scale); for K-quants, whose least-squares
/// search may clip outliers, ≈1.6× the worst seen over 1,200 random blocks (and held
/// over 2,000 proptest cases).
fn max_rel_error(ty: GgmlType) -> f32 {
    use GgmlType as T;
    match ty {
        T::F32 => 0.0,
        T::F16 => 1.0 / 2048.0,
        T::BF16 => 1.0 / 256.0,
        T::Q4_0 => 1.0 / 8.0 + 1.0 / 512.0,
        T::Q4_1 => 1.0 / 15.0 + 1.0 / 512.0,
        T::Q5_0 => 1.0 / 16.0 + 1.0 / 512.0,
        T::Q5_1 => 1.0 / 31.0 + 1.0 / 512.0,
        T::Q8_0 | T::Q8_1 => 1.0 / 254.0 + 1.0 / 1024.0,
        T::Q8_K => 1.0 / 254.0 + 1e-6,
        T::Q2_K => 0.55,
        T::Q3_K => 0.32,
        T::Q4_K => 0.125,
        T::Q5_K => 0.08,
        T::Q6_K => 0.026,
        T::IQ4_NL => 0.15,
        T::IQ4_XS => 0.15,
        T::TQ1_0 | T::TQ2_0 => 0.5 + 1.0 / 1024.0,
        // d = 2^(floor(log2 amax) - 3): amax lies in [8d, 16d) and the top level is 12d, so
        // the clipped tail loses at most 4d <= amax / 2.
        T::MXFP4 => 0.5 + 1.0 / 1024.0,
        _ => unreachable!("{ty} has no quantizer"),
    }
}

fn values() -> impl Strategy<Value = Vec<f32>> {
    (prop::collection::vec(-1.0f32..1.0, 512), 0u8..3, -4i32..10).prop_map(|(v, kind, e)| {
        let s = 2f32.powi(e);
        v.into_iter()
            .map(|x| match kind {
                0 => x * s,
                1 => x * x * x * s, // heavy tails around zero
                _ => (x + 0.5) * s, // mostly positive: exercises the mins
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn round_trip_error_is_bounded(x in values()) {
        for &ty in QUANTIZERS {
            let y = dequant(ty, &quant(ty, &x), x.len());
            let bs = ty.block_size().max(32);
            for (b, (xb, yb)) in x.chunks(bs).zip(y.chunks(bs)).enumerate() {
                let amax = xb.iter().fold(0f32, |a, v| a.max(v.abs()));
                let err = xb.iter().zip(yb).fold(0f32, |a, (p, q)| a.max((p - q).abs()));
                prop_assert!(err <= max_rel_error(ty) * amax, "{ty} block {b}: error {err}, amax {amax}");
            }
        }
    }

    #[test]
    fn quantizers_never_panic_on_arbitrary_bits(bits in prop::collection::vec(any::<u32>(), 256)) {
        let x: Vec<f32> = bits.into_iter().map(f32::from_bits).collect();
        for &ty in QUANTIZERS {
            let _ = dequant(ty, &quant(ty, &x), x.len());
        }
        let mut q8k = [BlockQ8K::default_zeroed()];
        quantize_blocks(&x, &mut q8k).unwrap();
        for g in 0..16 {
            let s: i32 = q8k[0].qs[16 * g..16 * g + 16].iter().map(|&q| i32::from(q)).sum();
            prop_assert_eq!(i32::from(q8k[0].bsums[g]), s);
        }
        prop_assert!(q8k[0].qs.iter().all(|&q| q >= -127));
    }
}

trait Zeroed {
    fn default_zeroed() -> Self;
}
impl<T: bytemuck::Zeroable> Zeroed for T {
    fn default_zeroed() -> Self {
        T::zeroed()
    }
}

#[test]
fn zero_input_dequantizes_to_zero() {
    let x = vec![0f32; 512];
    for &ty in QUANTIZERS {
        let y = dequant(ty, &quant(ty, &x), x.len());
        assert!(y.iter().all(|&v| v == 0.0), "{ty}");
    }
}

#[test]
fn constant_and_tiny_blocks_do_not_blow_up() {
    for c in [0.37f32, -2.5, 1e-30, -1e-20] {
        let x = vec![c; 512];
        for &ty in QUANTIZERS {
            let y = dequant(ty, &quant(ty, &x), x.len());
            let err = x
                .iter()
                .zip(&y)
                .fold(0f32, |a, (p, q)| a.max((p - q).abs()));
            // below f16's range every scale flushes to zero, so the error is |c| there
            let bound =
                (max_rel_error(ty) * c.abs()).max(if c.abs() < 1e-6 { c.abs() } else { 0.0 });
            assert!(err <= bound, "{ty} constant {c}: error {err}");
        }
    }
}

#[test]
fn nan_element_quantizes_to_zero_like_ggml() {
    // ggml: the NaN never wins the |x| maximum, and its quant (an x86 cast of NaN, or
    // nearest_int(NaN)) is 0; every other element is quantized as if it were absent.
    let mut x: Vec<f32> = (0..256).map(|i| (i as f32 * 0.37).sin()).collect();
    let mut x0 = x.clone();
    x[3] = f32::NAN;
    x0[3] = 0.0;
    let (mut a, mut b) = ([BlockQ8K::default_zeroed()], [BlockQ8K::default_zeroed()]);
    quantize_blocks(&x, &mut a).unwrap();
    quantize_blocks(&x0, &mut b).unwrap();
    assert_eq!(a, b);
    let q = BlockQ8_0::quantize(x[..32].try_into().unwrap());
    let q0 = BlockQ8_0::quantize(x0[..32].try_into().unwrap());
    assert_eq!(q, q0);
}

#[test]
fn infinite_element_makes_the_q8_0_scale_infinite_like_ggml() {
    let mut x = [0.5f32; 32];
    x[7] = f32::INFINITY;
    let q = BlockQ8_0::quantize(&x);
    assert!(q.d.to_f32().is_infinite());
    // id = 1/inf = 0: every finite element quantizes to 0, inf·0 = NaN casts to 0 too
    assert!(q.qs.iter().all(|&v| v == 0));
}

#[test]
fn types_without_a_quantizer_are_reported() {
    for &ty in GgmlType::ALL {
        assert_eq!(can_quantize(ty), QUANTIZERS.contains(&ty), "{ty}");
    }
}
