//! Log-likelihoods of given text under a masked diffusion model, for scoring (multiple
//! choice, perplexity-style evaluations) rather than generating.
//!
//! A masked model has no left-to-right factorisation; what it offers is the bound of the
//! LLaDA paper (arXiv 2502.09992, eq. 6) on the conditional likelihood of a target `x[c..]`
//! given the text before it:
//!
//! `log p(x[c..] | x[..c]) ≥ E_{l ~ U{1..m}} E_{S ⊂ [c, P), |S| = l} [ (m / l) Σ_{i ∈ S} log p(x_i | x with S masked) ]`
//!
//! with `m = P − c` target tokens. [`suffix_log_likelihood`] computes it exactly by
//! enumerating every mask set when there are at most `samples` of them (`2^m − 1 ≤ samples`),
//! and otherwise estimates it as LLaDA's lm-eval adapter does (`get_loglikelihood`: batches of
//! 32 samples, the numbers of masks of a batch stratified from one random start, each mask
//! set a uniform random subset), from a seeded [`Xoshiro256PlusPlus`]. Unlike the adapter,
//! halves round up when the mask counts are spread, which keeps the estimate unbiased.
//!
//! [`echo_logprobs`] gives every token of a text one value such that the sum over any tail
//! `x[c..]` is the bound for that split: token `i`'s value is `est(i) − est(i + 1)`, the
//! estimate for the suffix from `i` less that from `i + 1` (for an exact joint model this is
//! `log p(x_i | x[..i])`, the chain rule's factor). A client that splits a prompt into
//! context and continuation after the fact (lm-evaluation-harness does) thus sums to the
//! LLaDA estimate of its continuation whatever the split. Its cost is one forward pass per
//! mask set: `Σ_{m=1}^{P−1} min(2^m − 1, samples)` passes, see [`echo_passes`].

use crate::denoiser::Denoiser;
use crate::rng::{Xoshiro256PlusPlus, splitmix64};

/// Samples per estimate when a request names none (LLaDA's `mc_num`).
pub const DEFAULT_SAMPLES: usize = 128;

/// The most samples one estimate may take.
pub const MAX_SAMPLES: usize = 4096;

/// Samples per batch of the Monte Carlo estimate (LLaDA's `batch_size`): the numbers of
/// masks of one batch are spread evenly from one random start.
const BATCH: usize = 32;

/// How to score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LikelihoodConfig {
    /// The mask token.
    pub mask_id: u32,
    /// Whether row `p − 1` predicts position `p` (Dream's and RND1's shifted logits).
    pub shifted: bool,
    /// Mask sets per estimate; an estimate with at most this many possible sets is exact.
    pub samples: usize,
    /// Seeds the Monte Carlo estimates (each suffix its own stream, so a value does not
    /// depend on what else is scored).
    pub seed: u64,
    /// Alternatives to report per position ([`EchoLogprobs::top`]); 0 for none.
    pub top: usize,
}

impl Default for LikelihoodConfig {
    fn default() -> Self {
        Self {
            mask_id: 0,
            shifted: false,
            samples: DEFAULT_SAMPLES,
            seed: 0,
            top: 0,
        }
    }
}

/// One estimate of [`suffix_log_likelihood`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The bound on `log p(x[c..] | x[..c])`, in nats.
    pub log_likelihood: f64,
    /// Forward passes it took.
    pub passes: usize,
    /// Whether every mask set was enumerated (no sampling error).
    pub exact: bool,
}

/// Per-token values of a text ([`echo_logprobs`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EchoLogprobs {
    /// Token `i`'s value, `est(i) − est(i + 1)`; `None` for token 0, which has no text
    /// before it.
    pub logprobs: Vec<Option<f64>>,
    /// Per token, up to [`LikelihoodConfig::top`] alternatives `(token, log-probability)`,
    /// best first, from the model's prediction of position `i` with every later position
    /// masked (its left-to-right guess). Empty for token 0 and when `top` is 0.
    pub top: Vec<Vec<(u32, f64)>>,
    /// Whether each token's value came from exact enumerations only.
    pub exact: Vec<bool>,
    /// Forward passes, all told.
    pub passes: usize,
}

/// Forward passes [`echo_logprobs`] takes for a text of `len` tokens: one per mask set
/// of every suffix, plus one per position for the alternatives when `top > 0` and the
/// estimate did not already mask the whole suffix.
pub fn echo_passes(len: usize, samples: usize) -> usize {
    (1..len).map(|m| sets_for(m, samples)).sum()
}

/// Mask sets one estimate over `m` target tokens takes.
fn sets_for(m: usize, samples: usize) -> usize {
    if exact_for(m, samples) {
        (1usize << m) - 1
    } else {
        samples
    }
}

fn exact_for(m: usize, samples: usize) -> bool {
    m < usize::BITS as usize - 1 && (1usize << m) - 1 <= samples
}

/// The canvas row that predicts position `p`.
fn row_of(config: &LikelihoodConfig, p: usize) -> usize {
    if config.shifted { p - 1 } else { p }
}

/// The log-softmax of `row` at `token`, in f64.
fn log_prob(row: &[f32], token: u32) -> f64 {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let sum: f64 = row.iter().map(|&x| (x as f64 - max).exp()).sum();
    row.get(token as usize)
        .map_or(f64::NEG_INFINITY, |&x| x as f64 - max - sum.ln())
}

/// The `k` most likely tokens of `row`, best first (ties by lower id), as log-probabilities.
fn top_of(row: &[f32], k: usize) -> Vec<(u32, f64)> {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    let lse = max
        + row
            .iter()
            .map(|&x| (x as f64 - max).exp())
            .sum::<f64>()
            .ln();
    let mut ids: Vec<u32> = (0..row.len() as u32).collect();
    let k = k.min(ids.len());
    let by = |a: &u32, b: &u32| row[*b as usize].total_cmp(&row[*a as usize]).then(a.cmp(b));
    if k < ids.len() && k > 0 {
        ids.select_nth_unstable_by(k - 1, by);
    }
    ids.truncate(k);
    ids.sort_by(by);
    ids.into_iter()
        .map(|t| (t, row[t as usize] as f64 - lse))
        .collect()
}

/// One pass over `tokens` with the positions of `masked` (ascending) masked: the summed log
/// probability of the true tokens there, and the rows' logits when `keep` is set.
struct Scorer<'a, D: Denoiser> {
    denoiser: &'a mut D,
    tokens: &'a [u32],
    config: &'a LikelihoodConfig,
    canvas: Vec<u32>,
    rows: Vec<usize>,
    out: Vec<f32>,
    passes: usize,
}

impl<'a, D: Denoiser> Scorer<'a, D> {
    fn new(denoiser: &'a mut D, tokens: &'a [u32], config: &'a LikelihoodConfig) -> Self {
        Self {
            denoiser,
            tokens,
            config,
            canvas: Vec::with_capacity(tokens.len()),
            rows: Vec::new(),
            out: Vec::new(),
            passes: 0,
        }
    }

    /// `Σ_{i ∈ masked} log p(x_i | canvas)`; the logits of the masked rows stay in `out`.
    fn pass(&mut self, masked: &[usize]) -> Result<f64, D::Error> {
        let vocab = self.denoiser.vocab_size();
        self.canvas.clear();
        self.canvas.extend_from_slice(self.tokens);
        for &p in masked {
            self.canvas[p] = self.config.mask_id;
        }
        self.rows.clear();
        self.rows
            .extend(masked.iter().map(|&p| row_of(self.config, p)));
        self.out.resize(self.rows.len() * vocab, 0.0);
        self.denoiser
            .logits(&self.canvas, &self.rows, &mut self.out)?;
        self.passes += 1;
        Ok(masked
            .iter()
            .zip(self.out.chunks_exact(vocab))
            .map(|(&p, row)| log_prob(row, self.tokens[p]))
            .sum())
    }

    /// The logits of the `j`-th masked row of the last pass.
    fn row(&self, j: usize) -> &[f32] {
        let vocab = self.denoiser.vocab_size();
        &self.out[j * vocab..(j + 1) * vocab]
    }
}

/// The bound on `log p(tokens[start..] | tokens[..start])` (see the module docs): exact when
/// `2^m − 1 ≤ config.samples` for the `m = tokens.len() − start` target tokens, else the
/// Monte Carlo estimate with `config.samples` mask sets seeded by `config.seed` and `start`.
/// `start` must be at least 1 (and `tokens.len() > start`); an empty target is 0.
pub fn suffix_log_likelihood<D: Denoiser>(
    denoiser: &mut D,
    tokens: &[u32],
    start: usize,
    config: &LikelihoodConfig,
) -> Result<Estimate, D::Error> {
    let mut scorer = Scorer::new(denoiser, tokens, config);
    let log_likelihood = estimate(&mut scorer, start, &mut |_, _| {})?;
    Ok(Estimate {
        log_likelihood,
        passes: scorer.passes,
        exact: exact_for(tokens.len().saturating_sub(start), config.samples),
    })
}

/// The estimate over `tokens[start..]`; `on_full` sees every pass that masked the whole
/// suffix (the scorer holds its rows).
fn estimate<D: Denoiser>(
    s: &mut Scorer<'_, D>,
    start: usize,
    on_full: &mut dyn FnMut(&Scorer<'_, D>, usize),
) -> Result<f64, D::Error> {
    let len = s.tokens.len();
    if start == 0 || start >= len {
        return Ok(0.0);
    }
    let m = len - start;
    let samples = s.config.samples.max(1);
    let mut masked = Vec::with_capacity(m);
    if exact_for(m, samples) {
        // Every non-empty subset S, weighted 1 / (|S| · C(m, |S|)).
        let mut total = 0.0;
        for bits in 1u64..(1u64 << m) {
            masked.clear();
            masked.extend((0..m).filter(|&j| bits >> j & 1 == 1).map(|j| start + j));
            let l = masked.len();
            let lp = s.pass(&masked)?;
            if l == m {
                on_full(s, start);
            }
            total += lp / (l as f64 * binomial(m, l));
        }
        return Ok(total);
    }
    let mut state = s.config.seed ^ (start as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(splitmix64(&mut state));
    let mut order: Vec<usize> = (start..len).collect();
    let mut total = 0.0;
    let mut done = 0;
    while done < samples {
        let b = BATCH.min(samples - done);
        // LLaDA's `_forward_process`: k ~ U{1..m}; x_j = round(k + j·m/b), wrapped into 1..=m.
        // Halves round up, so that x_j − k does not depend on k and each sample's mask count
        // is uniform (torch.round's half-to-even makes it depend on k's parity at ties,
        // which biases the estimate).
        let k = 1 + (rng.next_u64() % m as u64) as usize;
        for j in 0..b {
            let x = (k as f64 + j as f64 * (m as f64 / b as f64)).round() as usize;
            let l = (x - 1) % m + 1;
            // A uniform random subset of size l: the first l of a Fisher-Yates shuffle.
            for i in 0..l {
                let r = i + (rng.next_u64() % (m - i) as u64) as usize;
                order.swap(i, r);
            }
            masked.clear();
            masked.extend_from_slice(&order[..l]);
            masked.sort_unstable();
            let lp = s.pass(&masked)?;
            if l == m {
                on_full(s, start);
            }
            total += lp * m as f64 / l as f64;
        }
        done += b;
    }
    Ok(total / samples as f64)
}

/// `C(n, k)` as f64 (exact for the small `n` enumerated).
fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Every token's value (see the module docs): `logprobs[i] = est(i) − est(i + 1)` with
/// `est(len) = 0`, so that `Σ logprobs[c..]` is the bound for `tokens[c..]` given
/// `tokens[..c]`, for every `c ≥ 1`. Costs [`echo_passes`] forward passes (plus up to one per
/// position for the alternatives).
pub fn echo_logprobs<D: Denoiser>(
    denoiser: &mut D,
    tokens: &[u32],
    config: &LikelihoodConfig,
) -> Result<EchoLogprobs, D::Error> {
    let len = tokens.len();
    let mut scorer = Scorer::new(denoiser, tokens, config);
    let mut est = vec![0.0; len + 1];
    let mut top: Vec<Vec<(u32, f64)>> = vec![Vec::new(); len];
    let mut exact = vec![true; len];
    for c in (1..len).rev() {
        let mut full: Option<Vec<(u32, f64)>> = None;
        let k = config.top;
        est[c] = estimate(&mut scorer, c, &mut |s, _| {
            if k > 0 && full.is_none() {
                // Position `start` is the first masked row of a whole-suffix pass.
                full = Some(top_of(s.row(0), k));
            }
        })?;
        if k > 0 {
            top[c] = match full {
                Some(t) => t,
                None => {
                    let masked: Vec<usize> = (c..len).collect();
                    scorer.pass(&masked)?;
                    top_of(scorer.row(0), k)
                }
            };
        }
        exact[c] = exact_for(len - c, config.samples.max(1));
    }
    let mut logprobs = vec![None; len];
    // est(c + 1) covers fewer tokens than est(c), so it is exact whenever est(c) is.
    for c in 1..len {
        logprobs[c] = Some(est[c] - est[c + 1]);
    }
    if len > 0 {
        exact[0] = false;
    }
    Ok(EchoLogprobs {
        logprobs,
        top,
        exact,
        passes: scorer.passes,
    })
}

#[cfg(test)]
mod tests;
