//! DiffusionGemma's sampler, transcribed from Hugging Face transformers'
//! `generation_diffusion_gemma.py` (`DiffusionGemmaGenerationMixin.generate`,
//! `EntropyBoundSampler`, `LinearTemperatureScheduleLogitsProcessor`,
//! `StableAndConfidentStoppingCriteria`), which llama.cpp's #24423 runner mirrors.
//!
//! Uniform-state diffusion: no mask token. The prompt is encoded once; then canvases of
//! `canvas_length` tokens are generated one after another until `gen_length` tokens (or an end
//! token). Each canvas starts as uniformly random tokens. At step `s` from `max_steps` down to
//! 1 the decoder's logits (conditioned on the previous step's processed logits) are divided by
//! `t = t_min + (t_max - t_min) · s / max_steps`; every position draws a sample from that
//! distribution and has its entropy; positions sorted by entropy (ascending) are accepted while
//! the sum of the entropies before them is at most `entropy_bound`
//! (`cumsum − own ≤ bound`: the lowest-entropy one always); accepted positions take their
//! sample, the others are re-drawn uniformly. The loop stops early when the argmax canvas has
//! not changed for `stability_threshold` steps and the mean entropy is below
//! `confidence_threshold`. The canvas kept is the last step's argmax, which the encoder then
//! commits.
//!
//! Random draws, in this order (one uniform each; PyTorch's streams cannot be reproduced):
//! the initial canvas, position by position (`floor(u · vocab)`); then per step, the sample of
//! each position (inverse CDF over its probabilities, f64), then the new token of each
//! rejected position, ascending. Probabilities, entropies and sums are f64 (the row sums in
//! `lacuna-cpu`'s fixed lane order, the inverse CDF left to right);
//! ties go to the lower index (sort by entropy, then position; argmax: the lowest token id).
//!
//! Differences from the official code:
//! * only the rejected positions draw new tokens (the official code draws a whole canvas and
//!   keeps the accepted positions);
//! * the result is cut to `gen_length` tokens (the official code returns whole canvases) and
//!   before the first end token (unless `keep_after_eos`), where the official code pads after
//!   it;
//! * a batch of one: no per-sequence bookkeeping.

use crate::common::{self, Common};
use crate::denoiser::CanvasDenoiser;
use crate::error::{ConfigError, Error};
use crate::output::{Finish, Generation, Stats, StepView};
use crate::rng::UniformSource;
use crate::row_pool;

/// Settings of DiffusionGemma's sampler; the defaults are the official ones
/// (`_get_default_generation_params`), which a file's `diffusion.eb_*` keys may replace.
#[derive(Debug, Clone, PartialEq)]
pub struct EntropyBoundConfig {
    /// Tokens to generate (rounded up to whole canvases, then cut), end tokens. The mask id
    /// is unused (there is no mask).
    pub common: Common,
    /// Most denoising steps per canvas (48).
    pub max_steps: usize,
    /// Temperature of the last step (0.4).
    pub t_min: f64,
    /// Temperature of the first step (0.8).
    pub t_max: f64,
    /// The acceptance rule's bound on the summed entropies (0.1).
    pub entropy_bound: f64,
    /// Steps the argmax canvas must repeat before stopping (1; 0: no stability needed).
    pub stability_threshold: usize,
    /// Mean entropy under which a stable canvas stops (0.005).
    pub confidence_threshold: f64,
}

impl Default for EntropyBoundConfig {
    fn default() -> Self {
        Self {
            common: Common::default(),
            max_steps: 48,
            t_min: 0.4,
            t_max: 0.8,
            entropy_bound: 0.1,
            stability_threshold: 1,
            confidence_threshold: 0.005,
        }
    }
}

impl EntropyBoundConfig {
    /// Rejects a zero generation length or step count, temperatures that are not positive,
    /// and a bound that is not (the official `EntropyBoundSamplerConfig` asks `> 0`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.common.gen_length == 0 {
            return Err(ConfigError::ZeroGenLength);
        }
        if self.max_steps == 0 {
            return Err(ConfigError::ZeroSteps);
        }
        for (name, v) in [
            ("t_min", self.t_min),
            ("t_max", self.t_max),
            ("entropy_bound", self.entropy_bound),
        ] {
            common::in_range(name, v, v.is_finite() && v > 0.0, "a finite number > 0")?;
        }
        common::non_negative("confidence_threshold", self.confidence_threshold)?;
        if let Some(k) = self.common.logprobs {
            return Err(ConfigError::OutOfRange {
                name: "logprobs",
                value: k as f64,
                expected: "none: DiffusionGemma's sampler records no log-probabilities yet",
            });
        }
        if !self.common.suffix.is_empty() {
            return Err(ConfigError::InfillUnsupported {
                sampler: "DiffusionGemma's sampler (uniform noise has no masks to fill)",
            });
        }
        Ok(())
    }

    /// The temperature of step `s` (counting down from `max_steps` to 1).
    pub fn temperature(&self, s: usize) -> f64 {
        self.t_min + (self.t_max - self.t_min) * (s as f64 / self.max_steps as f64)
    }
}

/// One position's processed distribution: probabilities, entropy, argmax; the row's logits
/// are left divided by the temperature (the processed logits Hugging Face conditions on).
fn row_stats(logits: &mut [f32], t: f64, probs: &mut [f64]) -> (f64, u32) {
    // The tempered logits in f64, then their softmax in place (lacuna-cpu's row kernels:
    // each exp and ln within 1 ulp of libm's, the sums in a fixed lane order).
    for (p, &x) in probs.iter_mut().zip(logits.iter()) {
        *p = f64::from(x) / t;
    }
    let (best, max) = match lacuna_cpu::argmax_f64(probs) {
        Some((i, v)) if v > f64::NEG_INFINITY => (i, v),
        _ => (0, f64::NEG_INFINITY),
    };
    let sum = lacuna_cpu::exp_in_place(probs, max);
    for p in probs.iter_mut() {
        *p /= sum;
    }
    let entropy = -lacuna_cpu::sum_p_ln_p(probs, 0.0);
    // The processed logits, in place: the next step's self-conditioning signal.
    for x in logits.iter_mut() {
        *x = (f64::from(*x) / t) as f32;
    }
    (entropy, best as u32)
}

/// The index the inverse CDF of `probs` gives for the draw `u` (the last positive one if
/// rounding leaves `u` above the total).
fn inverse_cdf(probs: &[f64], u: f64) -> u32 {
    let mut acc = 0.0;
    let mut last = 0;
    for (i, &p) in probs.iter().enumerate() {
        if p > 0.0 {
            acc += p;
            last = i;
            if u < acc {
                return i as u32;
            }
        }
    }
    last as u32
}

/// The id that marks a position of the constrained region not decided yet (not a token).
const UNDECIDED: u32 = u32::MAX;

fn uniform_token<R: UniformSource>(rng: &mut R, vocab: usize) -> u32 {
    ((rng.next_f64() * vocab as f64) as usize).min(vocab - 1) as u32
}

/// Generates after `prompt` with DiffusionGemma's sampler, calling `on_step` after every
/// denoising step (its canvas: the context and the current argmax draft).
pub fn generate<D, R, F>(
    denoiser: &mut D,
    prompt: &[u32],
    config: &EntropyBoundConfig,
    rng: &mut R,
    mut on_step: F,
) -> Result<Generation, Error<D::Error>>
where
    D: CanvasDenoiser,
    R: UniformSource,
    F: FnMut(&StepView<'_>),
{
    config.validate()?;
    let vocab = denoiser.vocab_size();
    if vocab == 0 {
        return Err(ConfigError::EmptyVocab.into());
    }
    let c = denoiser.canvas_length();
    if c == 0 {
        return Err(ConfigError::ZeroBlockLength.into());
    }
    let n_canvases = config.common.gen_length.div_ceil(c);
    let gen_length = config.common.gen_length;
    // A structured-output constraint: each step's argmax canvas is the most likely one that
    // keeps the region completable (DINGO's program over the step's processed logits).
    let mut constraint = config
        .common
        .constraint
        .as_ref()
        .map(|k| k.0.start(gen_length, UNDECIDED));
    let mut region = vec![UNDECIDED; gen_length];
    if let Some(k) = &mut constraint
        && !k.completable(&region)
    {
        return Err(ConfigError::ConstraintUnsatisfiable { gen_length }.into());
    }
    let mut stats = Stats::default();
    if !prompt.is_empty() {
        denoiser.encode(prompt).map_err(Error::Denoiser)?;
    }
    let mut context: Vec<u32> = prompt.to_vec();
    let mut generated: Vec<u32> = Vec::with_capacity(n_canvases * c);
    // One buffer: the decoder reads the processed logits it holds as the
    // self-conditioning signal, then writes the step's logits over them.
    let mut logits = vec![0.0f32; c * vocab];
    let mut probs: Vec<Vec<f64>> = Vec::new();
    let (mut entropy, mut sample) = (vec![0.0f64; c], vec![0u32; c]);
    let mut order: Vec<usize> = Vec::with_capacity(c);
    let mut view = Vec::with_capacity(prompt.len() + n_canvases * c);
    let total_steps = n_canvases * config.max_steps;
    let mut finish = Finish::Completed;
    for block in 0..n_canvases {
        // This canvas's positions in the constrained region (the last canvas may run past it).
        let (a, b) = (block * c, ((block + 1) * c).min(gen_length));
        let mut current: Vec<u32> = (0..c).map(|_| uniform_token(rng, vocab)).collect();
        let mut argmax = current.clone();
        let mut history: Vec<Vec<u32>> = Vec::new();
        let mut have_sc = false;
        for s in (1..=config.max_steps).rev() {
            denoiser
                .decode(&current, have_sc, &mut logits)
                .map_err(Error::Denoiser)?;
            stats.denoiser_calls += 1;
            stats.logit_rows += c;
            stats.positions_computed += c;
            stats.steps += 1;
            let t = config.temperature(s);
            // Each row's draw taken beforehand in row order, the rows then on the pool's
            // threads ([`row_pool`]).
            let draws: Vec<f64> = (0..c).map(|_| rng.next_f64()).collect();
            let rows = row_pool::map_mut(&mut logits, vocab, &mut probs, |r, row, probs| {
                // A branch-free scan first (it vectorizes), the token only in a bad row.
                let bad = |v: f32| v.is_nan() || v == f32::INFINITY;
                if row.iter().fold(false, |b, &v| b | bad(v))
                    && let Some((token, &value)) = row.iter().enumerate().find(|(_, v)| bad(**v))
                {
                    return Err((r, token, value));
                }
                probs.resize(vocab, 0.0);
                let (h, best) = row_stats(row, t, probs);
                Ok((h, best, inverse_cdf(probs, draws[r])))
            });
            for (r, x) in rows.into_iter().enumerate() {
                match x {
                    Ok((h, best, drawn)) => {
                        entropy[r] = h;
                        argmax[r] = best;
                        sample[r] = drawn;
                    }
                    Err((row, token, value)) => {
                        return Err(Error::InvalidLogit { row, token, value });
                    }
                }
            }
            have_sc = true;
            if let Some(k) = &mut constraint
                && a < b
            {
                let best = k
                    .most_likely(&region, a..b, &logits[..(b - a) * vocab])
                    .ok_or(ConfigError::ConstraintUnsatisfiable { gen_length })?;
                argmax[..b - a].copy_from_slice(&best);
            }
            order.clear();
            order.extend(0..c);
            order.sort_by(|&a, &b| entropy[a].total_cmp(&entropy[b]).then(a.cmp(&b)));
            // The official `cumsum - sorted <= bound`: the sum of the entropies before each
            // position in the order, which only grows, so the accepted ones are a prefix.
            let mut accepted = vec![false; c];
            let mut before = 0.0;
            for &i in &order {
                if before > config.entropy_bound {
                    break;
                }
                accepted[i] = true;
                before += entropy[i];
            }
            let mut committed = Vec::new();
            let mut confidences = Vec::new();
            for r in 0..c {
                if accepted[r] {
                    current[r] = sample[r];
                    committed.push(context.len() + r);
                    confidences.push(entropy[r]);
                } else {
                    current[r] = uniform_token(rng, vocab);
                }
            }
            let stable = config.stability_threshold == 0
                || (history.len() == config.stability_threshold
                    && history.iter().all(|h| *h == argmax));
            if config.stability_threshold > 0 {
                if history.len() == config.stability_threshold {
                    history.remove(0);
                }
                history.push(argmax.clone());
            }
            let mean = entropy.iter().sum::<f64>() / c as f64;
            let done = stable && mean < config.confidence_threshold;
            view.clear();
            view.extend_from_slice(&context);
            view.extend_from_slice(&argmax);
            on_step(&StepView {
                canvas: &view,
                prompt_len: prompt.len(),
                suffix: &[],
                committed: &committed,
                confidences: &confidences,
                draft: argmax.len(),
                step: stats.steps - 1,
                total_steps,
                block,
                num_blocks: n_canvases,
                logprobs: None,
            });
            if done {
                break;
            }
        }
        if a < b {
            region[a..b].copy_from_slice(&argmax[..b - a]);
        }
        context.extend_from_slice(&argmax);
        generated.extend_from_slice(&argmax);
        let eos = argmax
            .iter()
            .position(|t| config.common.eos_ids.contains(t));
        if let Some(i) = eos {
            let index = block * c + i;
            if index < config.common.gen_length && !config.common.keep_after_eos {
                finish = Finish::Eos {
                    index,
                    token: argmax[i],
                };
                break;
            }
        }
        if block + 1 < n_canvases {
            denoiser.encode(&argmax).map_err(Error::Denoiser)?;
            stats.cache_fills += 1;
        }
    }
    generated.truncate(config.common.gen_length);
    let canvas: Vec<u32> = prompt.iter().chain(&generated).copied().collect();
    let tokens = match finish {
        Finish::Eos { index, .. } => generated[..index].to_vec(),
        Finish::Completed => generated,
    };
    stats.finish = finish;
    Ok(Generation {
        tokens,
        canvas,
        stats,
        logprobs: None,
    })
}
