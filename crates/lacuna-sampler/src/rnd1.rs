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

use crate::cache::{CachePlan, CachePolicy};
use crate::canvas::{Canvas, StepAt};
use crate::common::{self, Common};
use crate::denoiser::Denoiser;
use crate::error::{ConfigError, Error};
use crate::math;
use crate::output::{Generation, StepView};
use crate::rng::UniformSource;
use crate::row_pool;
use crate::sampling::{self, FilterOrder, Filters, Scratch, Ties, TopK};
use crate::select::{self, Predictions};

/// Settings of the RND1 sampler; the defaults are those of `diffusion_sample` (with
/// `num_steps = gen_length`, its 256 / 256).
#[derive(Debug, Clone, PartialEq)]
pub struct Rnd1Config {
    /// Generation length, mask id (151669 for RND1) and the end tokens the result is cut at.
    pub common: Common,
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
}

impl Default for Rnd1Config {
    fn default() -> Self {
        Self {
            common: Common::default(),
            steps: 128,
            greedy: true,
            temperature: 1.0,
            top_k: None,
            top_p: None,
        }
    }
}

impl Rnd1Config {
    /// Checks every setting; returns the mask id.
    pub fn validate(&self) -> Result<u32, ConfigError> {
        let mask_id = self.common.validate()?;
        if self.steps == 0 {
            return Err(ConfigError::ZeroSteps);
        }
        common::non_negative("temperature", self.temperature)?;
        if let Some(p) = self.top_p {
            common::in_range("top_p", p, p > 0.0 && p <= 1.0, "in (0, 1]")?;
        }
        common::check_top_k(self.top_k)?;
        Ok(mask_id)
    }

    /// `forward_scores`' filters: the temperature, `apply_top_k_filtering` (exactly `k`,
    /// ties to the lower id), then `apply_top_p_filtering` (Dream's `top_p_logits` rule).
    fn filters(&self) -> Filters {
        Filters {
            temperature: self.temperature.max(1e-8) as f32,
            top_k: self.top_k.map(|k| TopK {
                k,
                ties: Ties::LowestId,
            }),
            top_p: self.top_p,
            order: FilterOrder::TemperatureTopKTopP,
        }
    }
}

/// Prediction and entropy of one logit row, as `forward_scores` computes them.
fn score(
    row: &[f32],
    greedy: bool,
    filters: &Filters,
    rng: &mut impl UniformSource,
    s: &mut Scratch,
) -> (u32, f64) {
    filters.apply(row, s);
    let l = &s.logits;
    let ent = sampling::entropy(l);
    let pred = if greedy {
        math::argmax_f64(l)
    } else {
        let lse = sampling::log_sum_exp(l);
        s.probs.clear();
        s.probs.resize(l.len(), 0.0);
        lacuna_cpu::exp_into(l, lse, &mut s.probs);
        math::categorical(&s.probs, rng.next_f64())
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
    let plan = CachePlan::new(CachePolicy::None);
    let mut canvas = Canvas::new(denoiser, prompt, &config.common, mask_id, plan)?.shifted();
    let (prompt_len, len, vocab) = (prompt.len(), canvas.len(), canvas.vocab);
    // Positions the sampler has not committed yet (the prompt's masks stay).
    let mut maskable: Vec<bool> = (0..len).map(|p| p >= prompt_len).collect();
    let total = config.common.gen_length;
    let (filters, mut scratch) = (config.filters(), Vec::<Scratch>::new());
    // Predicted token and entropy per canvas position (valid where maskable).
    let mut pred = vec![(0u32, 0f64); len];
    let mut forward = |canvas: &mut Canvas<'_>, maskable: &[bool], pred: &mut [(u32, f64)]| {
        let rows: Vec<usize> = (prompt_len - 1..len - 1)
            .filter(|&r| maskable[r + 1])
            .collect();
        canvas.fetch(denoiser, &rows, 0..len)?;
        // One draw per row when sampling, taken in row order beforehand; the rows then on
        // the pool's threads ([`row_pool`]).
        let draws: Vec<f64> = if config.greedy {
            Vec::new()
        } else {
            rows.iter().map(|_| rng.next_f64()).collect()
        };
        let logits = &canvas.logits[..];
        let scored = row_pool::map(rows.len(), &mut scratch, |i, s| {
            let mut u = row_pool::Drawn(draws.get(i).copied());
            score(
                row_pool::row(logits, vocab, i),
                config.greedy,
                &filters,
                &mut u,
                s,
            )
        });
        for (&r, x) in rows.iter().zip(scored) {
            pred[r + 1] = x;
        }
        Ok::<(), Error<D::Error>>(())
    };
    // The still-maskable positions with their predictions; confidence is minus the entropy.
    let open = |maskable: &[bool], pred: &[(u32, f64)]| {
        let positions: Vec<usize> = (0..len).filter(|&p| maskable[p]).collect();
        Predictions {
            tokens: positions.iter().map(|&p| pred[p].0).collect(),
            conf: positions.iter().map(|&p| -pred[p].1).collect(),
            positions,
            entropy: Vec::new(),
        }
    };
    forward(&mut canvas, &maskable, &mut pred)?;
    let n = config.steps;
    for step in (1..n).rev() {
        let cutoff = (total as f32 * (step as f64 / n as f64) as f32) as usize;
        let cand = open(&maskable, &pred);
        let ent: Vec<f64> = cand.conf.iter().map(|&c| -c).collect();
        let mut kept = vec![false; cand.positions.len()];
        for i in select::top_k(&ent, cutoff) {
            kept[i] = true;
        }
        // Every other open position takes its prediction, in position order.
        let chosen: Vec<usize> = (0..kept.len()).filter(|&i| !kept[i]).collect();
        for &i in &chosen {
            maskable[cand.positions[i]] = false;
        }
        let at = StepAt {
            step: n - 1 - step,
            total_steps: n,
            block: 0,
            num_blocks: 1,
        };
        canvas.commit(&cand, &chosen, at, &mut on_step);
        let rerun = !chosen.is_empty() || !config.greedy;
        if maskable.iter().any(|&m| m) && rerun {
            forward(&mut canvas, &maskable, &mut pred)?;
        }
    }
    let rest = open(&maskable, &pred);
    if !rest.positions.is_empty() {
        let all: Vec<usize> = (0..rest.positions.len()).collect();
        let at = StepAt {
            step: n - 1,
            total_steps: n,
            block: 0,
            num_blocks: 1,
        };
        canvas.commit(&rest, &all, at, &mut on_step);
    }
    Ok(canvas.finish())
}
