//! Dream's `sample_tokens` (with `top_p_logits` and `top_k_logits`) for one logit row.

use crate::math;
use crate::rng::UniformSource;
use crate::select;
use std::cmp::Ordering;

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
    order: Vec<usize>,
}

/// `sample_tokens` on one row: returns `(token, confidence)`.
///
/// In order: divide by the temperature (f32, when > 0); nucleus filter (see [`nucleus`]);
/// top-k filter; softmax in f64; at temperature > 0 a categorical draw (one
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
        top_p_filter(&mut s.logits, p, &mut s.probs, &mut s.order);
    }
    if let Some(k) = f.top_k {
        let k = k.clamp(1, s.logits.len());
        s.sorted.clear();
        s.sorted.extend_from_slice(&s.logits);
        // The k-th largest value (NaN cannot occur: inputs are checked).
        let (_, kth, _) = s
            .sorted
            .select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
        let kth = *kth;
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

/// `top_p_logits` in place: every token outside the nucleus ([`nucleus`]) becomes `-inf`.
/// `probs` and `order` are scratch.
pub fn top_p_filter(logits: &mut [f64], top_p: f64, probs: &mut Vec<f64>, order: &mut Vec<usize>) {
    math::softmax_into(logits, probs);
    let kept = nucleus(logits, probs, top_p, order);
    // The nucleus is a prefix of the ranking (logit descending, token id ascending): keep
    // every token ranked at or above the last kept one.
    let last = order[kept - 1];
    let (l_last, i_last) = (select::rank_key(logits[last]), last);
    for (i, l) in logits.iter_mut().enumerate() {
        let k = select::rank_key(*l);
        if !(k > l_last || (k == l_last && i <= i_last)) {
            *l = f64::NEG_INFINITY;
        }
    }
}

/// `top_p_logits`: how many tokens the nucleus keeps; `order[..kept]` are the kept tokens
/// from the most probable down (at least one).
///
/// Tokens are ranked by descending logit, ties by token id; `probs` (the softmax in token
/// order) is summed along that ranking and the nucleus ends at the first token whose running
/// sum exceeds `top_p` (all tokens if none does). The official code takes the softmax of the
/// sorted logits, the same numbers up to the order of the normalising sum.
///
/// Cost: tokens more than 30 below the top logit (probability ratio under 1e-13) rank below
/// every other token, so the ranking is first searched among the others only, and the whole
/// vocabulary is used only if their sum does not pass `top_p`; within the searched set only
/// the top is sorted (partial selection, widened as needed).
pub fn nucleus(logits: &[f64], probs: &[f64], top_p: f64, order: &mut Vec<usize>) -> usize {
    let n = logits.len();
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    order.clear();
    order.extend((0..n).filter(|&i| logits[i] >= max - 30.0));
    if order.len() < n {
        if let Some(kept) = ranked_prefix(logits, probs, top_p, order) {
            return kept;
        }
        order.clear();
        order.extend(0..n);
    }
    ranked_prefix(logits, probs, top_p, order).unwrap_or(n)
}

/// Among the tokens in `order`, ranks the top and returns how many it takes for the running
/// sum to exceed `top_p`, or `None` if all of them do not; sorts `order` accordingly.
fn ranked_prefix(logits: &[f64], probs: &[f64], top_p: f64, order: &mut [usize]) -> Option<usize> {
    let n = order.len();
    let by_rank = |a: &usize, b: &usize| {
        select::rank_key(logits[*b])
            .partial_cmp(&select::rank_key(logits[*a]))
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(b))
    };
    let mut m = n.min(256);
    loop {
        if m < n {
            order.select_nth_unstable_by(m - 1, by_rank);
        }
        order[..m].sort_unstable_by(by_rank);
        let mut cum = 0.0;
        for (rank, &i) in order[..m].iter().enumerate() {
            cum += probs[i];
            if cum > top_p {
                return Some(rank + 1);
            }
        }
        if m == n {
            return None;
        }
        m = (m * 4).min(n);
    }
}
