//! Dream's `sample_tokens` (with `top_p_logits` and `top_k_logits`) for one logit row.

use crate::math;
use crate::rng::UniformSource;
use crate::select;

/// Which number `sample_tokens` returns as the confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confidence {
    /// The probability of the chosen token (`maskgit_plus`, `origin`, parallel mode).
    Probability,
    /// Top-1 minus top-2 probability (`topk_margin`).
    Margin,
    /// `Σ p ln(p + 1e-10)`, the negative entropy: larger is surer (`entropy`).
    NegEntropy,
}

/// The token filters and temperature of `sample_tokens`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Filters {
    /// Logits are divided by this (in f32) when above 0; 0 means greedy.
    pub temperature: f32,
    /// Nucleus filter, applied when below 1.
    pub top_p: Option<f64>,
    /// Keep tokens whose logit is at least the `k`-th largest (ties kept).
    pub top_k: Option<usize>,
}

/// Reusable buffers for [`sample_row`].
#[derive(Debug, Default)]
pub struct Scratch {
    logits: Vec<f64>,
    sorted: Vec<f64>,
    probs: Vec<f64>,
}

/// `sample_tokens` on one row: returns `(token, confidence)`.
///
/// In order: divide by the temperature (f32, when > 0); nucleus filter (sort descending, ties
/// by token id; drop every token after the first whose cumulative probability exceeds
/// `top_p`); top-k filter; softmax in f64; at temperature > 0 a categorical draw (one
/// `next_f64`, inverse CDF), otherwise the most probable token (first on ties); then the
/// confidence of the requested kind. `row` must hold a finite value.
pub fn sample_row(
    row: &[f32],
    f: &Filters,
    kind: Confidence,
    rng: &mut impl UniformSource,
    s: &mut Scratch,
) -> (u32, f64) {
    s.logits.clear();
    if f.temperature > 0.0 {
        s.logits
            .extend(row.iter().map(|&x| f64::from(x / f.temperature)));
    } else {
        s.logits.extend(row.iter().map(|&x| f64::from(x)));
    }
    if let Some(p) = f.top_p.filter(|&p| p < 1.0) {
        let order = select::order_desc(&s.logits);
        s.sorted.clear();
        s.sorted.extend(order.iter().map(|&i| s.logits[i]));
        math::softmax_into(&s.sorted, &mut s.probs);
        let mut cum = 0.0;
        let mut remove_rest = false;
        for (rank, &i) in order.iter().enumerate() {
            if remove_rest && rank > 0 {
                s.logits[i] = f64::NEG_INFINITY;
            }
            cum += s.probs[rank];
            remove_rest |= cum > p;
        }
    }
    if let Some(k) = f.top_k {
        let k = k.clamp(1, s.logits.len());
        s.sorted.clear();
        s.sorted.extend_from_slice(&s.logits);
        // k-th largest: sort descending (NaN cannot occur: inputs are checked).
        s.sorted.sort_by(|a, b| b.total_cmp(a));
        let kth = s.sorted[k - 1];
        for l in s.logits.iter_mut() {
            if *l < kth {
                *l = f64::NEG_INFINITY;
            }
        }
    }
    math::softmax_into(&s.logits, &mut s.probs);
    let probs = &s.probs;
    let x0 = if f.temperature > 0.0 {
        math::categorical(probs, rng.next_f64())
    } else {
        math::argmax_f64(probs)
    };
    let conf = match kind {
        Confidence::Probability => probs[x0],
        Confidence::Margin => {
            let (mut top1, mut top2) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
            for &p in probs {
                if p > top1 {
                    top2 = top1;
                    top1 = p;
                } else if p > top2 {
                    top2 = p;
                }
            }
            top1 - top2.max(0.0)
        }
        Confidence::NegEntropy => probs.iter().map(|&p| p * (p + 1e-10).ln()).sum(),
    };
    // Token ids fit in u32 (GGUF vocabularies are u32-indexed).
    (x0 as u32, conf)
}
