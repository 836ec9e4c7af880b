use super::*;
use crate::ops::tests::FORCED;
use crate::ops::{Level, level_for};
use proptest::prelude::*;

/// Distance from libm's `ln` in units of the last place of the true value.
fn ulps(x: f64) -> f64 {
    let want = x.ln();
    let ulp = f64::from_bits(want.abs().to_bits() + 1) - want.abs();
    (ln(x) - want).abs() / ulp
}

#[test]
fn within_one_ulp_of_libm_from_the_smallest_subnormal_to_the_largest_finite() {
    let mut worst = (0.0f64, 0.0f64);
    let mut check = |x: f64| {
        let e = ulps(x);
        if e > worst.0 {
            worst = (e, x);
        }
    };
    // Log-uniform over the whole range, subnormals included.
    let mut e = -1074.0f64;
    while e < 1023.99 {
        check(2f64.powf(e));
        e += 0.000_37;
    }
    // Around 1, where ln is small and cancellation bites.
    for i in -50_000..50_000 {
        check(1.0 + f64::from(i) * 3.1e-6);
    }
    check(f64::MAX);
    check(f64::MIN_POSITIVE);
    check(f64::from_bits(1));
    assert!(worst.0 <= 1.0, "worst {} ulp at x = {:e}", worst.0, worst.1);
}

#[test]
fn edges() {
    assert_eq!(ln(1.0).to_bits(), 0.0f64.to_bits());
    assert_eq!(ln(0.0), f64::NEG_INFINITY);
    assert_eq!(ln(-0.0), f64::NEG_INFINITY);
    assert!(ln(-1.0).is_nan());
    assert!(ln(f64::NAN).is_nan());
    assert!(ln(f64::NEG_INFINITY).is_nan());
    assert_eq!(ln(f64::INFINITY), f64::INFINITY);
    assert_eq!(ln(std::f64::consts::E), 1.0);
    assert_eq!(ln(2.0), std::f64::consts::LN_2);
}

fn on_level<R>(level: Level, f: impl FnOnce() -> R) -> R {
    FORCED.with(|c| c.set(Some(level)));
    let r = f();
    FORCED.with(|c| c.set(None));
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn the_sum_is_the_same_bits_on_every_path_in_lane_order(
        (n, seed, eps) in (0usize..300, any::<u64>(), prop_oneof![Just(0.0), Just(1e-10), 0.0f64..1.0])
    ) {
        let mut rng = crate::testing::Rng(seed | 1);
        // Probabilities: mostly tiny, some exactly 0, a few large.
        let p: Vec<f64> = (0..n)
            .map(|_| match rng.next() % 10 {
                0 => 0.0,
                1 => f64::from(rng.f32().abs()),
                _ => f64::from(rng.f32().abs()) * 1e-6,
            })
            .collect();
        let want = on_level(Level::Portable, || sum_p_ln_p(&p, eps));
        for path in crate::Path::available() {
            let got = on_level(level_for(path), || sum_p_ln_p(&p, eps));
            prop_assert_eq!(got.to_bits(), want.to_bits(), "{}", path);
        }
        let mut acc = [0.0f64; LANES];
        for (i, &v) in p.iter().enumerate() {
            acc[i % LANES] += if v == 0.0 { 0.0 } else { v * ln(v + eps) };
        }
        let lanes = acc.iter().fold(0.0, |s, &v| s + v);
        prop_assert_eq!(want.to_bits(), lanes.to_bits());
        prop_assert!(!want.is_nan());
    }
}
