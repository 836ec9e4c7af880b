use super::*;
use crate::rng::Xoshiro256PlusPlus;
use proptest::prelude::*;

/// Confidences with many ties (a few distinct values), sometimes -inf.
fn confs() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(
        prop_oneof![
            Just(f64::NEG_INFINITY),
            (0u8..6).prop_map(|x| f64::from(x) / 5.0)
        ],
        1..40,
    )
}

#[test]
fn entropy_bound_rule_examples() {
    // Sorted by confidence: entropies 0.1, 0.2, 0.5: sums minus max 0, 0.1, 0.3.
    let conf = [0.5, 0.9, 0.7];
    let ent = [0.5, 0.1, 0.2];
    assert_eq!(entropy_bound_rule(&conf, &ent, 0.0), vec![1]);
    assert_eq!(entropy_bound_rule(&conf, &ent, 0.15), vec![1, 2]);
    assert_eq!(entropy_bound_rule(&conf, &ent, 0.35), vec![1, 2, 0]);
}

#[test]
fn ties_go_to_the_left_most_position() {
    assert_eq!(
        order_desc(&[0.5, 0.9, 0.5, 0.9, -0.0, 0.0]),
        vec![1, 3, 0, 2, 4, 5]
    );
    assert_eq!(
        order_desc(&[f64::NAN, f64::NEG_INFINITY, 1.0]),
        vec![2, 0, 1]
    );
    assert_eq!(top_k(&[0.1, 0.3, 0.3], 2), vec![1, 2]);
    assert_eq!(top_k(&[0.1], 5), vec![0]);
}

proptest! {
    #[test]
    fn top_k_equals_a_naive_stable_sort(conf in confs(), k in 0usize..45) {
        let mut naive: Vec<usize> = (0..conf.len()).collect();
        // Stable sort by descending confidence keeps ties in index order.
        naive.sort_by(|&a, &b| conf[b].partial_cmp(&conf[a]).expect("no NaN"));
        naive.truncate(k);
        prop_assert_eq!(top_k(&conf, k), naive);
    }

    #[test]
    fn threshold_rule_takes_the_best_and_all_above(conf in confs(), t in 0f64..1.0) {
        let got = threshold_rule(&conf, t);
        let order = order_desc(&conf);
        prop_assert_eq!(got[0], order[0]);
        let mut want: Vec<usize> = order.iter().copied().skip(1).filter(|&i| conf[i] >= t).collect();
        want.insert(0, order[0]);
        prop_assert_eq!(got, want);
    }

    #[test]
    fn factor_rule_commits_at_least_one_in_confidence_order(conf in confs(), f in 0.1f64..4.0) {
        let got = factor_rule(&conf, f);
        let order = order_desc(&conf);
        prop_assert!(!got.is_empty());
        prop_assert_eq!(&got[..], &order[..got.len()]);
    }

    #[test]
    fn entropy_bound_rule_is_the_longest_run_within_the_bound(
        conf in confs(),
        seed in any::<u64>(),
        gamma in 0f64..3.0,
    ) {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let ent: Vec<f64> = conf.iter().map(|_| rng.next_f64() * 2.0).collect();
        let got = entropy_bound_rule(&conf, &ent, gamma);
        let order = order_desc(&conf);
        prop_assert!(!got.is_empty());
        prop_assert_eq!(&got[..], &order[..got.len()]);
        let bound = |n: usize| {
            let h: Vec<f64> = order[..n].iter().map(|&i| ent[i]).collect();
            h.iter().sum::<f64>() - h.iter().copied().fold(0.0, f64::max)
        };
        // Within the bound (or the forced first), and one more would break it.
        prop_assert!(got.len() == 1 || bound(got.len()) <= gamma);
        if got.len() < order.len() {
            prop_assert!(bound(got.len() + 1) > gamma);
        }
    }

    #[test]
    fn multinomial_draws_distinct_positive_weight_indices(
        w in prop::collection::vec(prop_oneof![Just(0.0), 0.01f64..1.0], 1..30),
        k in 1usize..30,
        seed in any::<u64>(),
    ) {
        let positive = w.iter().filter(|&&x| x > 0.0).count();
        let k = k.min(positive);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let got = multinomial_without_replacement(&w, k, &mut rng);
        prop_assert_eq!(got.len(), k);
        let mut seen = got.clone();
        seen.sort_unstable();
        seen.dedup();
        prop_assert_eq!(seen.len(), k);
        prop_assert!(got.iter().all(|&i| w[i] > 0.0));
    }
}

#[test]
fn factor_rule_reproduces_the_official_quirks() {
    // Thresholds with factor 1: [-1, 1 - 1/3, 1 - 1/4, 1 - 1/5].
    // Fails at rank 1: commits one.
    assert_eq!(factor_rule(&[0.3, 0.95, 0.2, 0.1], 1.0), vec![1]);
    // Fails at the last rank (n - 1): the official code still commits all of them.
    assert_eq!(factor_rule(&[0.2, 0.95, 0.9], 1.0), vec![1, 2, 0]);
    // Never fails: the loop ends at n - 1, plus one: all.
    assert_eq!(factor_rule(&[0.99, 0.98, 0.97], 1.0), vec![0, 1, 2]);
    // Fails at rank 2 of 4: commits two.
    assert_eq!(factor_rule(&[0.99, 0.9, 0.5, 0.1], 1.0), vec![0, 1]);
    // A single candidate is committed.
    assert_eq!(factor_rule(&[0.01], 1.0), vec![0]);
}

#[test]
fn multinomial_first_pick_follows_the_weights() {
    let w = [0.5, 0.3, 0.2];
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    let n = 40_000;
    let mut c = [0usize; 3];
    for _ in 0..n {
        c[multinomial_without_replacement(&w, 1, &mut rng)[0]] += 1;
    }
    for (ci, wi) in c.iter().zip(&w) {
        assert!((*ci as f64 / n as f64 - wi).abs() < 0.01, "{c:?}");
    }
}
