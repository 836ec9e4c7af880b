use super::*;
use crate::ops::tests::FORCED;
use crate::ops::{Level, level_for};
use proptest::prelude::*;

/// Distance from libm's `exp` in units of the last place of the true value.
fn ulps(got: f64, x: f64) -> f64 {
    let want = x.exp();
    let ulp = f64::from_bits(want.to_bits() + 1) - want;
    (got - want).abs() / ulp
}

#[test]
fn within_one_ulp_of_libm_over_the_range() {
    let mut worst = (0.0f64, 0.0f64);
    let mut x = LOW;
    while x <= HIGH {
        let e = ulps(exp(x), x);
        if e > worst.0 {
            worst = (e, x);
        }
        x += 0.000_731;
    }
    // Near 0, where the softmax of a peaked row lives.
    for i in -20_000..20_000 {
        let x = f64::from(i) * 1.7e-5;
        let e = ulps(exp(x), x);
        if e > worst.0 {
            worst = (e, x);
        }
    }
    assert!(worst.0 <= 1.0, "worst {} ulp at x = {}", worst.0, worst.1);
}

#[test]
fn edges() {
    assert_eq!(exp(0.0).to_bits(), 1.0f64.to_bits());
    assert_eq!(exp(-0.0), 1.0);
    assert_eq!(exp(LOW - 1e-9), 0.0);
    assert_eq!(exp(-1000.0), 0.0);
    assert_eq!(exp(f64::NEG_INFINITY), 0.0);
    assert!(exp(LOW) > 0.0 && exp(LOW).is_normal());
    assert!(exp(HIGH).is_finite() && exp(HIGH) > 1.79e308);
    assert_eq!(exp(HIGH + 1e-9), f64::INFINITY);
    assert_eq!(exp(f64::INFINITY), f64::INFINITY);
    assert!(exp(f64::NAN).is_nan());
    assert!((exp(1.0) - std::f64::consts::E).abs() <= 2.0 * f64::EPSILON * std::f64::consts::E);
}

fn on_level<R>(level: Level, f: impl FnOnce() -> R) -> R {
    FORCED.with(|c| c.set(Some(level)));
    let r = f();
    FORCED.with(|c| c.set(None));
    r
}

/// A logit row: values in [-scale, scale] as f32, some `-inf` (filtered tokens).
fn row() -> impl Strategy<Value = Vec<f32>> {
    (0usize..300, 0.1f32..60.0, any::<u64>()).prop_map(|(n, scale, seed)| {
        let mut rng = crate::testing::Rng(seed | 1);
        (0..n)
            .map(|_| {
                let v = rng.f32();
                if v > 0.95 {
                    f32::NEG_INFINITY
                } else {
                    v * scale
                }
            })
            .collect()
    })
}

/// Every row sum, in the lane order the module documents, one element at a time.
fn lane_order(x: &[f64], term: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    for (i, &v) in x.iter().enumerate() {
        acc[i % LANES] += term(v);
    }
    acc.iter().fold(0.0, |s, &v| s + v)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn rows_are_the_same_bits_on_every_path_and_add_in_lane_order(x in row(), shift in -5.0f64..65.0) {
        let x64: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
        let run = || {
            let mut out = vec![f64::NAN; x64.len()];
            let s = exp_into(&x64, shift, &mut out);
            let mut inplace = x64.clone();
            let s2 = exp_in_place(&mut inplace, shift);
            assert_eq!(s.to_bits(), s2.to_bits());
            assert!(out.iter().zip(&inplace).all(|(a, b)| a.to_bits() == b.to_bits()));
            [
                sum_exp_f32(&x, shift).to_bits(),
                sum_exp_f64(&x64, shift).to_bits(),
                s.to_bits(),
                entropy_f32(&x, shift).to_bits(),
                entropy_f64(&x64, shift).to_bits(),
                out.iter().fold(0u64, |h, v| h.rotate_left(7) ^ v.to_bits()),
            ]
        };
        let want = on_level(Level::Portable, run);
        for path in crate::Path::available() {
            prop_assert_eq!(on_level(level_for(path), run), want, "{}", path);
        }
        // The scalar order: element i in lane i % 8, lanes left to right.
        let sum = lane_order(&x64, |v| exp(v - shift));
        prop_assert_eq!(sum_exp_f32(&x, shift).to_bits(), sum.to_bits());
        prop_assert_eq!(f64::from_bits(want[2]).to_bits(), sum.to_bits());
        let mut out = vec![0.0; x64.len()];
        exp_into(&x64, shift, &mut out);
        for (o, &v) in out.iter().zip(&x64) {
            prop_assert_eq!(o.to_bits(), exp(v - shift).to_bits());
        }
        let h = -lane_order(&x64, |v| if v > f64::NEG_INFINITY { exp(v - shift) * (v - shift) } else { 0.0 });
        prop_assert_eq!(entropy_f64(&x64, shift).to_bits(), h.to_bits());
        prop_assert!(!entropy_f64(&x64, shift).is_nan());
    }
}

#[test]
fn exp_into_stops_at_the_shorter_slice() {
    let x = [0.0, 1.0, 2.0];
    let mut out = [9.0; 2];
    let s = exp_into(&x, 0.0, &mut out);
    assert_eq!(out, [1.0, exp(1.0)]);
    assert_eq!(s, 1.0 + exp(1.0));
}
