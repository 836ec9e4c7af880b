//! The token filters every sampler applies to a logit row before choosing a token
//! (temperature, top-k, top-p), and the entropy of a row's distribution.
//!
//! The samplers differ only in the order of the filters and in how top-k treats ties, each as
//! its official code does; both are parameters ([`FilterOrder`], [`Ties`]) of one
//! [`Filters::apply`]. Rows are processed in f64; the temperature divides in f32, as the
//! official code (and its numpy transcription in `tools/sampler-ref`) does.

use crate::select;
use std::cmp::Ordering;

/// How top-k treats tokens tied with the `k`-th largest logit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ties {
    /// Keep every token whose logit is at least the `k`-th largest, ties included
    /// (`top_k_logits`: Dream's `sample_tokens`, LLaDA2).
    #[default]
    Keep,
    /// Keep exactly `k` tokens, ties going to the lower token id (RND1's
    /// `apply_top_k_filtering`).
    LowestId,
}

/// A top-k filter: `k` (at least 1 is useful; 0 counts as 1) and its tie rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopK {
    /// Tokens kept (more with [`Ties::Keep`] when the `k`-th is tied).
    pub k: usize,
    /// Which tokens tied with the `k`-th survive.
    pub ties: Ties,
}

/// The order in which [`Filters::apply`] runs its filters, as each official sampler does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FilterOrder {
    /// Temperature, top-p, top-k (Dream's `sample_tokens`).
    #[default]
    TemperatureTopPTopK,
    /// Top-k on the raw logits, then temperature, top-p (LLaDA2, as `tools/sampler-ref`
    /// transcribes `_sample_with_temperature_topk_topp`).
    TopKTemperatureTopP,
    /// Temperature, top-k, top-p (RND1's `forward_scores`).
    TemperatureTopKTopP,
}

/// One filter of a [`FilterOrder`].
#[derive(Debug, Clone, Copy)]
enum Stage {
    Temperature,
    TopK,
    TopP,
}

impl FilterOrder {
    fn stages(self) -> [Stage; 3] {
        use Stage::{Temperature, TopK, TopP};
        match self {
            FilterOrder::TemperatureTopPTopK => [Temperature, TopP, TopK],
            FilterOrder::TopKTemperatureTopP => [TopK, Temperature, TopP],
            FilterOrder::TemperatureTopKTopP => [Temperature, TopK, TopP],
        }
    }
}

/// The token filters of one sampler.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Filters {
    /// Logits are divided by this (in f32) when above 0; samplers that read it as a switch
    /// take 0 as greedy.
    pub temperature: f32,
    /// Top-k filter (none: keep every token).
    pub top_k: Option<TopK>,
    /// Nucleus filter, applied when below 1 (see [`top_p_filter`]).
    pub top_p: Option<f64>,
    /// The order of the three filters.
    pub order: FilterOrder,
}

impl Filters {
    /// Writes `row` after every filter, in f64, into `s.logits` (filtered tokens are `-inf`).
    pub fn apply(&self, row: &[f32], s: &mut Scratch) {
        s.logits.clear();
        s.logits.extend(row.iter().map(|&x| f64::from(x)));
        for stage in self.order.stages() {
            match stage {
                Stage::Temperature if self.temperature > 0.0 => {
                    // Every value is an f32 (or -inf) here, so the round trip is exact.
                    for l in &mut s.logits {
                        *l = f64::from(*l as f32 / self.temperature);
                    }
                }
                Stage::TopK => {
                    if let Some(k) = self.top_k {
                        top_k_filter(&mut s.logits, k, &mut s.sorted, &mut s.order);
                    }
                }
                Stage::TopP => {
                    if let Some(p) = self.top_p.filter(|&p| p < 1.0) {
                        top_p_filter(&mut s.logits, p, &mut s.probs, &mut s.order);
                    }
                }
                Stage::Temperature => {}
            }
        }
    }
}

/// Reusable buffers of [`Filters::apply`] and the samplers that read its result.
#[derive(Debug, Default)]
pub struct Scratch {
    /// The filtered row (after [`Filters::apply`]).
    pub(crate) logits: Vec<f64>,
    /// The probabilities of a row (top-p's softmax; free for the caller afterwards).
    pub(crate) probs: Vec<f64>,
    sorted: Vec<f64>,
    order: Vec<usize>,
}

impl Scratch {
    /// The row as the last [`Filters::apply`] left it.
    pub fn logits(&self) -> &[f64] {
        &self.logits
    }
}

/// Top-k in place: every token outside the top `k` becomes `-inf`; tokens tied with the
/// `k`-th stay or go as `top_k.ties` says. `sorted` and `order` are scratch.
pub fn top_k_filter(
    logits: &mut [f64],
    top_k: TopK,
    sorted: &mut Vec<f64>,
    order: &mut Vec<usize>,
) {
    let n = logits.len();
    if n == 0 {
        return;
    }
    let k = top_k.k.clamp(1, n);
    match top_k.ties {
        Ties::Keep => {
            sorted.clear();
            sorted.extend_from_slice(logits);
            // The k-th largest value (NaN cannot occur: inputs are checked).
            let (_, kth, _) = sorted.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
            let kth = *kth;
            for l in logits.iter_mut() {
                if *l < kth {
                    *l = f64::NEG_INFINITY;
                }
            }
        }
        Ties::LowestId => {
            // Partial selection over the ranking (value descending, id ascending).
            order.clear();
            order.extend(0..n);
            if k < n {
                let values: &[f64] = logits;
                order.select_nth_unstable_by(k, |a, b| {
                    select::rank_key(values[*b])
                        .total_cmp(&select::rank_key(values[*a]))
                        .then(a.cmp(b))
                });
                for &i in &order[k..] {
                    logits[i] = f64::NEG_INFINITY;
                }
            }
        }
    }
}

/// `top_p_logits` in place: every token outside the nucleus ([`nucleus`]) becomes `-inf`.
/// `probs` and `order` are scratch.
pub fn top_p_filter(logits: &mut [f64], top_p: f64, probs: &mut Vec<f64>, order: &mut Vec<usize>) {
    crate::math::softmax_into(logits, probs);
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

/// A logit row's element type: f32 (the model's rows) or f64 (rows after
/// [`Filters::apply`]); each sums through `lacuna-cpu`'s row kernels for its type.
pub trait Logit: Copy + Into<f64> + sealed::Sealed {
    /// `Σ e^(x - shift)` over `row` in f64 (8 lanes, fixed order).
    fn sum_exp(row: &[Self], shift: f64) -> f64;
    /// `-Σ p ln p` of `p = e^(x - lse)`, `-inf` entries adding nothing.
    fn entropy_at(row: &[Self], lse: f64) -> f64;
}

impl Logit for f32 {
    fn sum_exp(row: &[f32], shift: f64) -> f64 {
        lacuna_cpu::sum_exp_f32(row, shift)
    }
    fn entropy_at(row: &[f32], lse: f64) -> f64 {
        lacuna_cpu::entropy_f32(row, lse)
    }
}

impl Logit for f64 {
    fn sum_exp(row: &[f64], shift: f64) -> f64 {
        lacuna_cpu::sum_exp_f64(row, shift)
    }
    fn entropy_at(row: &[f64], lse: f64) -> f64 {
        lacuna_cpu::entropy_f64(row, lse)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `ln Σ exp(x)` of a logit row in f64, as `max + ln Σ exp(x - max)` ([`Logit::sum_exp`]).
/// `row` must hold a finite value.
pub fn log_sum_exp<T: Logit>(row: &[T]) -> f64 {
    let max = row
        .iter()
        .map(|&x| x.into())
        .fold(f64::NEG_INFINITY, f64::max);
    max + T::sum_exp(row, max).ln()
}

/// The entropy of `softmax(row)` in nats, in f64: `-Σ p ln p` with `ln p = x - lse`
/// ([`log_sum_exp`]), `-inf` logits (filtered tokens) contributing nothing
/// ([`Logit::entropy_at`]). RND1 orders its commits by it; the entropy-bounded parallel
/// rule reads it. `row` must hold a finite value.
pub fn entropy<T: Logit>(row: &[T]) -> f64 {
    T::entropy_at(row, log_sum_exp(row))
}

#[cfg(test)]
mod tests;
