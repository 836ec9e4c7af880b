use super::*;

#[test]
fn matches_a_direct_log_softmax() {
    let logits = [1.0f32, 3.0, -2.0, 3.0, 0.5];
    let z: f64 = logits.iter().map(|&l| f64::from(l).exp()).sum();
    let r = token_logprob(&logits, 4, 3);
    assert!((f64::from(r.logprob) - (0.5f64.exp() / z).ln()).abs() < 1e-6);
    // Ties go to the lower id; sorted descending.
    let ids: Vec<u32> = r.top.iter().map(|t| t.token).collect();
    assert_eq!(ids, vec![1, 3, 0]);
    assert!(r.top.windows(2).all(|w| w[0].logprob >= w[1].logprob));
    assert!((f64::from(r.top[0].logprob) - (3f64.exp() / z).ln()).abs() < 1e-6);
}

#[test]
fn top_is_capped_by_the_row_and_off_at_zero() {
    let logits = [0.0f32, 1.0];
    assert_eq!(token_logprob(&logits, 0, 20).top.len(), 2);
    assert!(token_logprob(&logits, 0, 0).top.is_empty());
}

#[test]
fn huge_logits_stay_finite_and_non_positive() {
    let logits = [1e30f32, 1e30, -1e30];
    let r = token_logprob(&logits, 0, 2);
    assert!(r.logprob <= 0.0 && r.logprob.is_finite());
    assert!((f64::from(r.logprob) - 0.5f64.ln()).abs() < 1e-6);
    assert!(token_logprob(&logits, 2, 0).logprob < -1e29);
}
