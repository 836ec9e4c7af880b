use super::*;
use crate::testing::model;

const MASK: u32 = 7;

fn config(samples: usize, seed: u64) -> LikelihoodConfig {
    LikelihoodConfig {
        mask_id: MASK,
        shifted: false,
        samples,
        seed,
        top: 0,
    }
}

/// Row `r` prefers token `r % 5` by how many of the canvas's other positions are known: a
/// model whose predictions depend on the mask set.
fn dependent(canvas: &[u32], r: usize, t: usize) -> f32 {
    let known = canvas.iter().filter(|&&x| x != MASK).count() as f32;
    let left = if r > 0 && canvas[r - 1] != MASK {
        1.0
    } else {
        0.0
    };
    if t == r % 5 {
        0.3 * known + left
    } else {
        0.1 * t as f32 - left * 0.2
    }
}

/// The bound by its definition: E_l E_{|S| = l} (m / l) Σ_{i ∈ S} log p_i(S).
fn by_definition(tokens: &[u32], start: usize) -> f64 {
    let m = tokens.len() - start;
    let mut by_size = vec![(0.0, 0usize); m + 1];
    for bits in 1u32..(1 << m) {
        let masked: Vec<usize> = (0..m)
            .filter(|j| bits >> j & 1 == 1)
            .map(|j| start + j)
            .collect();
        let mut canvas = tokens.to_vec();
        for &p in &masked {
            canvas[p] = MASK;
        }
        let lp: f64 = masked
            .iter()
            .map(|&p| {
                let row: Vec<f32> = (0..6).map(|t| dependent(&canvas, p, t)).collect();
                log_prob(&row, tokens[p])
            })
            .sum();
        let l = masked.len();
        by_size[l].0 += m as f64 / l as f64 * lp;
        by_size[l].1 += 1;
    }
    by_size[1..]
        .iter()
        .map(|&(sum, n)| sum / n as f64)
        .sum::<f64>()
        / m as f64
}

#[test]
fn the_exact_bound_is_its_definition() {
    let tokens = [1, 2, 3, 4, 0, 1];
    for start in 1..tokens.len() {
        let mut d = model(6, dependent);
        let e = suffix_log_likelihood(&mut d, &tokens, start, &config(1000, 0)).unwrap();
        assert!(e.exact);
        assert_eq!(e.passes, (1 << (tokens.len() - start)) - 1);
        let want = by_definition(&tokens, start);
        assert!(
            (e.log_likelihood - want).abs() < 1e-9,
            "{start}: {} vs {want}",
            e.log_likelihood
        );
    }
}

#[test]
fn independent_positions_give_the_exact_log_likelihood_either_way() {
    // Predictions that ignore the canvas: the bound is tight, Σ log p_i, and every Monte
    // Carlo sample of one token per mask set... equals it in expectation; with one target
    // token it is exact at any sample count.
    let f = |_: &[u32], r: usize, t: usize| (r * 3 + t) as f32 * 0.25;
    let tokens = [0, 1, 2, 3, 4, 5, 0, 1];
    let truth: f64 = (1..tokens.len())
        .map(|p| {
            let row: Vec<f32> = (0..6).map(|t| f(&[], p, t)).collect();
            log_prob(&row, tokens[p])
        })
        .sum();
    let mut d = model(6, f);
    let exact = suffix_log_likelihood(&mut d, &tokens, 1, &config(1 << 8, 0)).unwrap();
    assert!(exact.exact);
    assert!((exact.log_likelihood - truth).abs() < 1e-9);
    let mc = suffix_log_likelihood(&mut d, &tokens, 1, &config(64, 3)).unwrap();
    assert!(!mc.exact);
    assert_eq!(mc.passes, 64);
    assert!(
        (mc.log_likelihood - truth).abs() < 0.25 * truth.abs(),
        "{} vs {truth}",
        mc.log_likelihood
    );
}

#[test]
fn the_monte_carlo_estimate_is_unbiased() {
    // Five target tokens: 31 mask sets. 16 samples estimate; their mean over seeds is the
    // exact bound within four standard errors.
    let tokens = [3, 1, 2, 3, 4, 0];
    let mut d = model(6, dependent);
    let exact = suffix_log_likelihood(&mut d, &tokens, 1, &config(31, 0)).unwrap();
    assert!(exact.exact);
    let runs: Vec<f64> = (0..3000)
        .map(|seed| {
            let e = suffix_log_likelihood(&mut d, &tokens, 1, &config(16, seed)).unwrap();
            assert!(!e.exact);
            e.log_likelihood
        })
        .collect();
    let n = runs.len() as f64;
    let mean = runs.iter().sum::<f64>() / n;
    let var = runs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let se = (var / n).sqrt();
    assert!(se > 0.0);
    assert!(
        (mean - exact.log_likelihood).abs() < 4.0 * se,
        "mean {mean} vs exact {} (se {se})",
        exact.log_likelihood
    );
}

#[test]
fn a_seed_fixes_the_estimate() {
    let tokens = [3, 1, 2, 3, 4, 0, 1, 2];
    let mut d = model(6, dependent);
    let a = suffix_log_likelihood(&mut d, &tokens, 1, &config(40, 9)).unwrap();
    let b = suffix_log_likelihood(&mut d, &tokens, 1, &config(40, 9)).unwrap();
    let c = suffix_log_likelihood(&mut d, &tokens, 1, &config(40, 10)).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.log_likelihood, c.log_likelihood);
}

#[test]
fn every_tail_of_the_echo_sums_to_that_split_s_estimate() {
    let tokens = [3, 1, 2, 3, 4, 0, 1, 2, 5];
    for samples in [8, 300] {
        let cfg = config(samples, 4);
        let mut d = model(6, dependent);
        let echo = echo_logprobs(&mut d, &tokens, &cfg).unwrap();
        assert_eq!(echo.logprobs[0], None);
        assert_eq!(echo.passes, echo_passes(tokens.len(), samples));
        for c in 1..tokens.len() {
            let tail: f64 = echo.logprobs[c..].iter().map(|x| x.unwrap()).sum();
            let e = suffix_log_likelihood(&mut d, &tokens, c, &cfg).unwrap();
            assert!((tail - e.log_likelihood).abs() < 1e-9, "{samples} {c}");
            assert_eq!(echo.exact[c], e.exact);
        }
    }
}

#[test]
fn alternatives_are_the_left_to_right_guess_and_shifted_rows_are_read() {
    let tokens = [3, 1, 2, 3, 4];
    let mut cfg = config(3, 0);
    cfg.top = 2;
    cfg.shifted = true;
    let mut d = model(6, dependent);
    let echo = echo_logprobs(&mut d, &tokens, &cfg).unwrap();
    assert!(echo.top[0].is_empty());
    for c in 1..tokens.len() {
        // Row c - 1 with positions c.. masked.
        let mut canvas = tokens.to_vec();
        canvas[c..].fill(MASK);
        let row: Vec<f32> = (0..6).map(|t| dependent(&canvas, c - 1, t)).collect();
        assert_eq!(echo.top[c], top_of(&row, 2), "{c}");
        assert_eq!(echo.top[c].len(), 2);
        assert!(echo.top[c][0].1 >= echo.top[c][1].1);
    }
    // Every request asked rows one before its masked positions.
    for (canvas, rows) in &d.requests {
        let masked: Vec<usize> = (0..canvas.len()).filter(|&p| canvas[p] == MASK).collect();
        let want: Vec<usize> = masked.iter().map(|p| p - 1).collect();
        assert_eq!(rows, &want);
    }
}

#[test]
fn a_failing_model_is_an_error_and_short_texts_cost_nothing() {
    let mut d = model(6, dependent);
    d.fail = true;
    assert!(echo_logprobs(&mut d, &[1, 2, 3], &config(4, 0)).is_err());
    let mut d = model(6, dependent);
    let one = echo_logprobs(&mut d, &[1], &config(4, 0)).unwrap();
    assert_eq!(one.logprobs, vec![None]);
    assert_eq!(one.passes, 0);
    assert_eq!(
        suffix_log_likelihood(&mut d, &[1, 2], 2, &config(4, 0))
            .unwrap()
            .passes,
        0
    );
}
