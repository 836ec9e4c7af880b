//! RND1's sampler, transcribed from `diffusion_sample` in Radical Numerics' `rnd/sampling.py`.
//!
//! The canvas is the prompt followed by `gen_length` masks, denoised as one whole (no
//! blocks). Logits are shifted: position `i` is predicted by row `i - 1`. A forward pass gives,
//! for every still-masked position, the predicted token and the entropy of its distribution:
//! the row divided by the temperature (1 in greedy mode), top-k, then top-p, `log_softmax`;
//! the argmax (greedy) or a categorical draw (one `next_f64` per row, rows ascending). Then,
//! for `step` from `steps - 1` down to 1, the `floor(total * step / steps)` (in f32, as torch
//! computes `long_tensor * float`) highest-entropy masked positions stay masked (ties: the
//! left-most stays) and every other masked position takes its prediction; the model runs
//! again while masks remain. After the last step the remaining masks take their predictions.
//!
//! Differences from the official code, all outside the default greedy path:
//! * the entropy counts `0 · ln 0` as 0; the official `-(p * logp).sum()` gives NaN as soon as
//!   top-k or top-p filtered a token out (`0 * -inf`), which then sorts as the largest;
//! * a step that committed nothing does not rerun the model in greedy mode (the same canvas
//!   gives the same predictions); in sampling mode it reruns, as officially;
//! * with a prompt, the official canvas reserves its last position for a padding token that is
//!   never generated; here all `gen_length` positions are generated;
//! * there is no end-token stop in the official code; here generation still runs every step
//!   and the result is cut before the first end token (unless `keep_after_eos`).

use crate::denoiser::{Denoiser, Pass, fetch_pass};
use crate::dream::top_p_filter;
use crate::error::{ConfigError, Error};
use crate::output::{self, Generation, Stats, StepView};
use crate::rng::UniformSource;
use crate::select;

/// Settings of the RND1 sampler; the defaults are those of `diffusion_sample` (with
/// `num_steps = gen_length`, its 256 / 256).
#[derive(Debug, Clone, PartialEq)]
pub struct Rnd1Config {
    /// Tokens to generate (default 128).
    pub gen_length: usize,
    /// Denoising steps (default 128): the number of forward passes.
    pub steps: usize,
    /// Argmax instead of sampling (default true).
    pub greedy: bool,
    /// Logits are divided by `max(temperature, 1e-8)` before everything, including the
    /// entropy that orders the commits (default 1).
    pub temperature: f64,
    /// Keep the `k` most likely tokens (default none).
    pub top_k: Option<usize>,
    /// Nucleus filter (default none).
    pub top_p: Option<f64>,
    /// The `[MASK]` token id (151669 for RND1); required.
    pub mask_id: Option<u32>,
    /// End tokens at which the result is cut.
    pub eos_ids: Vec<u32>,
    /// Return everything after the first end token too.
    pub keep_after_eos: bool,
}

impl Default for Rnd1Config {
    fn default() -> Self {
        Self {
            gen_length: 128,
            steps: 128,
            greedy: true,
            temperature: 1.0,
            top_k: None,
            top_p: None,
            mask_id: None,
            eos_ids: Vec::new(),
            keep_after_eos: false,
        }
    }
}

impl Rnd1Config {
    /// Checks every setting; returns the mask id.
    pub fn validate(&self) -> Result<u32, ConfigError> {
        if self.gen_length == 0 {
            return Err(ConfigError::ZeroGenLength);
        }
        if self.steps == 0 {
            return Err(ConfigError::ZeroSteps);
        }
        let t = self.temperature;
        if !(t.is_finite() && t >= 0.0) {
            return Err(ConfigError::OutOfRange {
                name: "temperature",
                value: t,
                expected: "a finite number >= 0",
            });
        }
        if let Some(p) = self.top_p {
            if !(p > 0.0 && p <= 1.0) {
                return Err(ConfigError::OutOfRange {
                    name: "top_p",
                    value: p,
                    expected: "in (0, 1]",
                });
            }
        }
        if self.top_k == Some(0) {
            return Err(ConfigError::ZeroTopK);
        }
        self.mask_id.ok_or(ConfigError::MissingMaskId)
    }
}

/// Reused buffers of [`score`]: the filtered logits and the top-k/top-p scratch.
#[derive(Default)]
struct Scratch {
    l: Vec<f64>,
    probs: Vec<f64>,
    order: Vec<usize>,
}

/// Prediction and entropy of one logit row, as `forward_scores` computes them.
fn score(row: &[f32], c: &Rnd1Config, rng: &mut impl UniformSource, s: &mut Scratch) -> (u32, f64) {
    let l = &mut s.l;
    let t = c.temperature.max(1e-8) as f32;
    l.clear();
    l.extend(row.iter().map(|&x| f64::from(x / t)));
    if let Some(k) = c.top_k {
        // `apply_top_k_filtering`: exactly the k largest survive (ties to the lower id), by
        // partial selection over the ranking (value descending, id ascending).
        let k = k.min(l.len());
        let rank = |a: &usize, b: &usize| {
            select::rank_key(l[*b])
                .total_cmp(&select::rank_key(l[*a]))
                .then(a.cmp(b))
        };
        s.order.clear();
        s.order.extend(0..l.len());
        if k < l.len() {
            s.order.select_nth_unstable_by(k, rank);
            for &i in &s.order[k..] {
                l[i] = f64::NEG_INFINITY;
            }
        }
    }
    if let Some(p) = c.top_p.filter(|&p| p < 1.0) {
        // `apply_top_p_filtering` is Dream's `top_p_logits` rule (sorted descending, ties by
        // id; tokens after the first whose running sum exceeds p go).
        top_p_filter(l, p, &mut s.probs, &mut s.order);
    }
    let max = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lse = max + l.iter().map(|&x| (x - max).exp()).sum::<f64>().ln();
    let mut ent = 0.0;
    for &x in l.iter() {
        if x > f64::NEG_INFINITY {
            let lp = x - lse;
            ent -= lp.exp() * lp;
        }
    }
    let pred = if c.greedy {
        crate::math::argmax_f64(l)
    } else {
        let probs: Vec<f64> = l.iter().map(|&x| (x - lse).exp()).collect();
        crate::math::categorical(&probs, rng.next_f64())
    };
    (pred as u32, ent)
}

/// Generates after `prompt` as RND1's `diffusion_sample` does (see the module docs).
pub fn generate<D: Denoiser>(
    denoiser: &mut D,
    prompt: &[u32],
    config: &Rnd1Config,
    rng: &mut impl UniformSource,
    mut on_step: impl FnMut(&StepView<'_>),
) -> Result<Generation, Error<D::Error>> {
    let mask_id = config.validate()?;
    if prompt.is_empty() {
        return Err(ConfigError::EmptyPrompt.into());
    }
    let vocab = denoiser.vocab_size();
    if vocab == 0 {
        return Err(ConfigError::EmptyVocab.into());
    }
    let prompt_len = prompt.len();
    let mut tokens = prompt.to_vec();
    tokens.resize(prompt_len + config.gen_length, mask_id);
    let mut maskable: Vec<bool> = (0..tokens.len()).map(|p| p >= prompt_len).collect();
    let total = config.gen_length;
    let mut stats = Stats {
        steps: 0,
        denoiser_calls: 0,
        logit_rows: 0,
        cache_fills: 0,
        positions_computed: 0,
        finish: output::Finish::Completed,
    };
    let (mut logits, mut scratch) = (Vec::new(), Scratch::default());
    // Predicted token and entropy per canvas position (valid where maskable).
    let mut pred = vec![(0u32, 0f64); tokens.len()];
    let mut forward = |tokens: &[u32],
                       maskable: &[bool],
                       pred: &mut Vec<(u32, f64)>,
                       stats: &mut Stats,
                       rng: &mut _| {
        let rows: Vec<usize> = (prompt_len - 1..tokens.len() - 1)
            .filter(|&r| maskable[r + 1])
            .collect();
        fetch_pass(denoiser, tokens, &Pass::Full, &rows, &mut logits, stats)?;
        for (row, &r) in logits.chunks_exact(vocab).zip(&rows) {
            pred[r + 1] = score(row, config, rng, &mut scratch);
        }
        Ok::<(), Error<D::Error>>(())
    };
    forward(&tokens, &maskable, &mut pred, &mut stats, rng)?;
    let n = config.steps;
    for step in (1..n).rev() {
        let cutoff = (total as f32 * (step as f64 / n as f64) as f32) as usize;
        let open: Vec<usize> = (0..tokens.len()).filter(|&p| maskable[p]).collect();
        let ent: Vec<f64> = open.iter().map(|&p| pred[p].1).collect();
        let keep = select::top_k(&ent, cutoff);
        let mut kept = vec![false; open.len()];
        for i in keep {
            kept[i] = true;
        }
        let mut committed = Vec::new();
        let mut conf = Vec::new();
        for (i, &p) in open.iter().enumerate() {
            if !kept[i] {
                tokens[p] = pred[p].0;
                maskable[p] = false;
                committed.push(p);
                conf.push(-pred[p].1);
            }
        }
        stats.steps += 1;
        on_step(&StepView {
            canvas: &tokens,
            prompt_len,
            committed: &committed,
            confidences: &conf,
            step: n - 1 - step,
            total_steps: n,
            block: 0,
            num_blocks: 1,
        });
        let rerun = !committed.is_empty() || !config.greedy;
        if maskable.iter().any(|&m| m) && rerun {
            forward(&tokens, &maskable, &mut pred, &mut stats, rng)?;
        }
    }
    let rest: Vec<usize> = (0..tokens.len()).filter(|&p| maskable[p]).collect();
    if !rest.is_empty() {
        let conf: Vec<f64> = rest.iter().map(|&p| -pred[p].1).collect();
        for &p in &rest {
            tokens[p] = pred[p].0;
        }
        stats.steps += 1;
        on_step(&StepView {
            canvas: &tokens,
            prompt_len,
            committed: &rest,
            confidences: &conf,
            step: n - 1,
            total_steps: n,
            block: 0,
            num_blocks: 1,
        });
    }
    Ok(output::finish(
        tokens,
        prompt_len,
        mask_id,
        &config.eos_ids,
        config.keep_after_eos,
        stats,
    ))
}
