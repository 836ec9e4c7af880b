use super::*;
use crate::rng::{ReplayDraws, Xoshiro256PlusPlus};
use proptest::prelude::*;

fn freq(n: usize, mut draw: impl FnMut() -> usize, k: usize) -> Vec<f64> {
    let mut c = vec![0usize; k];
    for _ in 0..n {
        c[draw()] += 1;
    }
    c.into_iter().map(|x| x as f64 / n as f64).collect()
}

#[test]
fn softmax_of_a_hand_made_row() {
    let mut p = Vec::new();
    softmax_into(&[0.0, 2f64.ln(), f64::NEG_INFINITY], &mut p);
    assert!((p[0] - 1.0 / 3.0).abs() < 1e-15);
    assert!((p[1] - 2.0 / 3.0).abs() < 1e-15);
    assert_eq!(p[2], 0.0);
}

proptest! {
    #[test]
    fn softmax_at_equals_the_full_softmax_bitwise(row in prop::collection::vec(-30f32..30.0, 1..64), i in 0usize..64) {
        let i = i % row.len();
        let mut p = Vec::new();
        softmax_into(&row.iter().map(|&x| f64::from(x)).collect::<Vec<_>>(), &mut p);
        prop_assert_eq!(softmax_at(&row, i).to_bits(), p[i].to_bits());
        let total: f64 = p.iter().sum();
        prop_assert!((total - 1.0).abs() < 1e-12);
        // Against log-sum-exp.
        let m = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
        let lse = m + row.iter().map(|&x| (f64::from(x) - m).exp()).sum::<f64>().ln();
        prop_assert!((p[i] - (f64::from(row[i]) - lse).exp()).abs() < 1e-12);
    }

    #[test]
    fn argmax_takes_the_first_maximum(row in prop::collection::vec(-4i8..4, 1..40)) {
        let f: Vec<f32> = row.iter().map(|&x| f32::from(x)).collect();
        let m = row.iter().max().copied();
        let first = row.iter().position(|&x| Some(x) == m);
        prop_assert_eq!(Some(argmax_f32(&f)), first);
        let d: Vec<f64> = f.iter().map(|&x| f64::from(x)).collect();
        prop_assert_eq!(Some(argmax_f64(&d)), first);
    }

    /// The Gumbel draw is the official expression on the injected numbers.
    #[test]
    fn gumbel_argmax_is_the_official_expression(
        row in prop::collection::vec(-10f32..10.0, 1..32),
        us in prop::collection::vec(1e-9f64..1.0, 32),
        temperature in 0.05f64..3.0,
    ) {
        let mut src = ReplayDraws::new(us.clone());
        let got = gumbel_argmax(&row, temperature, &mut src);
        let scores: Vec<f64> = row.iter().zip(&us)
            .map(|(&l, &u)| f64::from(l).exp() / (-u.ln()).powf(temperature))
            .collect();
        prop_assert_eq!(got, argmax_f64(&scores));
        prop_assert_eq!(src.consumed(), row.len());
    }
}

#[test]
fn gumbel_argmax_samples_the_tempered_softmax() {
    let row = [1.0f32, 0.0, -1.0, 0.5];
    for temperature in [1.0f64, 0.5, 2.0] {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let got = freq(
            40_000,
            || gumbel_argmax(&row, temperature, &mut rng),
            row.len(),
        );
        let mut want = Vec::new();
        softmax_into(
            &row.iter()
                .map(|&x| f64::from(x) / temperature)
                .collect::<Vec<_>>(),
            &mut want,
        );
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 0.01, "T={temperature}: {got:?} vs {want:?}");
        }
    }
}

#[test]
fn categorical_samples_its_distribution_and_never_returns_a_zero_entry() {
    let probs = [0.1, 0.0, 0.6, 0.3];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
    let got = freq(40_000, || categorical(&probs, rng.next_f64()), probs.len());
    for (g, w) in got.iter().zip(&probs) {
        assert!((g - w).abs() < 0.01, "{got:?}");
    }
    assert_eq!(got[1], 0.0);
    // Rounding that leaves the total at or below u falls back to the last non-zero entry.
    assert_eq!(categorical(&[0.5, 0.25, 0.0], 0.9), 1);
    assert_eq!(categorical(&[0.5, 0.5], 0.0), 0);
}
