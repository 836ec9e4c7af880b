//! Choosing which masked positions to commit: top-k by confidence, sampling without
//! replacement, and Fast-dLLM's threshold and factor rules.

use crate::rng::UniformSource;
use std::cmp::Ordering;

/// A sort key for a confidence: NaN ranks lowest, `-0.0` equals `0.0`.
pub(crate) fn rank_key(v: f64) -> f64 {
    if v.is_nan() {
        f64::NEG_INFINITY
    } else {
        v + 0.0
    }
}

/// Indices of `conf` from most to least confident; ties go to the lower index (the
/// left-most canvas position when `conf` is in position order). This is the deterministic
/// tie-break of every top-k in Lacuna (`torch.topk` leaves tie order unspecified).
pub fn order_desc(conf: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..conf.len()).collect();
    idx.sort_by(|&a, &b| {
        rank_key(conf[b])
            .partial_cmp(&rank_key(conf[a]))
            .unwrap_or(Ordering::Equal)
            .then(a.cmp(&b))
    });
    idx
}

/// The `k` most confident indices (fewer if `conf` is shorter), best first.
pub fn top_k(conf: &[f64], k: usize) -> Vec<usize> {
    let mut idx = order_desc(conf);
    idx.truncate(k);
    idx
}

/// `k` indices drawn without replacement with probabilities proportional to `weights`, as
/// `torch.multinomial(.., replacement=False)` does it: one exponential variate
/// `E = -ln(1 - u)` per entry (entries in order), then the top `k` of `weight / E`.
pub fn multinomial_without_replacement(
    weights: &[f64],
    k: usize,
    rng: &mut impl UniformSource,
) -> Vec<usize> {
    let keys: Vec<f64> = weights
        .iter()
        .map(|&w| {
            let e = -(1.0 - rng.next_f64()).ln();
            w / e
        })
        .collect();
    top_k(&keys, k)
}

/// Fast-dLLM's threshold rule: the most confident index always, then every other index whose
/// confidence is at least `threshold`. Returns indices best first.
pub fn threshold_rule(conf: &[f64], threshold: f64) -> Vec<usize> {
    let order = order_desc(conf);
    let mut out = Vec::with_capacity(order.len());
    for (rank, &i) in order.iter().enumerate() {
        if rank == 0 || conf[i] >= threshold {
            out.push(i);
        }
    }
    out
}

/// Fast-dLLM's factor rule (`get_transfer_index_dynamic`), transcribed with its quirks:
/// sort confidences descending; with `n` candidates the `j`-th (0-based) must reach
/// `1 - factor / (j + 2)` (the first always passes); count up to the first failure; if that
/// count is 0 or `n - 1` it is increased by one (so a failure at the last rank still commits
/// everything, as the official loop does). Returns indices best first.
pub fn factor_rule(conf: &[f64], factor: f64) -> Vec<usize> {
    let order = order_desc(conf);
    let n = order.len();
    if n == 0 {
        return order;
    }
    let mut top_i = 0;
    for j in 0..n {
        top_i = j;
        let thresh = if j == 0 {
            -1.0
        } else {
            1.0 - factor / (j as f64 + 2.0)
        };
        if conf[order[j]] < thresh {
            break;
        }
    }
    if top_i == 0 || top_i == n - 1 {
        top_i += 1;
    }
    let mut out = order;
    out.truncate(top_i);
    out
}

/// EB-Sampler's entropy-bounded rule: walk the candidates from most to least confident and
/// keep the longest run with `Σ H - max H <= gamma` over the run (the most confident one
/// always). Returns indices best first.
pub fn entropy_bound_rule(conf: &[f64], entropy: &[f64], gamma: f64) -> Vec<usize> {
    let order = order_desc(conf);
    let (mut sum, mut max) = (0.0f64, 0.0f64);
    let mut out = Vec::with_capacity(order.len());
    for (rank, &i) in order.iter().enumerate() {
        let h = entropy.get(i).copied().unwrap_or(f64::INFINITY).max(0.0);
        let (s, m) = (sum + h, max.max(h));
        if rank > 0 && (s - m > gamma || (s - m).is_nan()) {
            break;
        }
        (sum, max) = (s, m);
        out.push(i);
    }
    out
}

/// The predicted token and confidence of each candidate position of a step.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Predictions {
    /// Candidate canvas positions: ascending, so that ties in a ranking go to the left-most
    /// (LLaDA2 lists its commits in the order it reports them instead).
    pub(crate) positions: Vec<usize>,
    /// Predicted token per candidate.
    pub(crate) tokens: Vec<u32>,
    /// Confidence per candidate.
    pub(crate) conf: Vec<f64>,
    /// Entropy of each candidate's predictive distribution, when the commit rule reads it
    /// (empty otherwise).
    pub(crate) entropy: Vec<f64>,
}

impl Predictions {
    /// Writes the tokens of candidates `chosen` into `canvas`; returns their positions and
    /// confidences in `chosen` order.
    pub(crate) fn commit(&self, canvas: &mut [u32], chosen: &[usize]) -> (Vec<usize>, Vec<f64>) {
        let mut pos = Vec::with_capacity(chosen.len());
        let mut cs = Vec::with_capacity(chosen.len());
        for &i in chosen {
            canvas[self.positions[i]] = self.tokens[i];
            pos.push(self.positions[i]);
            cs.push(self.conf[i]);
        }
        (pos, cs)
    }
}

#[cfg(test)]
mod tests;
