//! Dream's sampler, transcribed from Dream's `generation_utils.py`
//! (`DreamGenerationMixin._sample`, `sample_tokens`), plus Fast-dLLM's parallel mode.
//!
//! The canvas is the prompt followed by `gen_length` masks, all decoded together over
//! `steps` steps with `timesteps = linspace(1, eps, steps + 1)` ([`dream_timesteps`]). Dream
//! shifts its logits: the token at position `i` is predicted by output row `i - 1` (row 0 for
//! position 0), so the sampler asks the denoiser for the rows before the masked positions.
//! Each step `i` with `t = timesteps[i]`, `s = timesteps[i + 1]`:
//!
//! * `origin`: each masked position is revealed with probability `1 - s / t` (1 on the last
//!   step), its token drawn by [`sample_row`];
//! * `maskgit_plus`, `topk_margin`, `entropy`: every masked position gets a token and a
//!   confidence from [`sample_row`]; `int(masks * (1 - s / t))` of them (all on the last step)
//!   are committed, the most confident ones, or with `alg_temp > 0` drawn without
//!   replacement from `softmax(confidence / alg_temp)`.
//!
//! Randomness is drawn in this order per step: for `origin`, one `next_f32` per masked
//! position (ascending), then one `next_f64` per revealed position when temperature > 0; for
//! the others, one `next_f64` per masked position when temperature > 0, then one `next_f64`
//! per masked position when `alg_temp > 0`. Steps that commit nothing are skipped without a
//! denoiser call, the run ends when no masks remain or at a settled end token; none of this
//! changes the result.

mod sample;

pub use sample::{Confidence, Filters, Scratch, nucleus, sample_row, top_p_filter};

use std::ops::Range;

use crate::cache::CachePolicy;
use crate::canvas::{Canvas, StepAt};
use crate::denoiser::Denoiser;
use crate::error::{ConfigError, Error};
use crate::math;
use crate::output::{Generation, StepView};
use crate::parallel::ParallelConfig;
use crate::rng::UniformSource;
use crate::schedule::{dream_p_transfer, dream_timesteps, dream_transfer_count};
use crate::select::{self, Predictions};

/// Dream's remasking algorithm (`alg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DreamAlg {
    /// Reveal each masked position with probability `1 - s / t` (`origin`, the official
    /// default).
    #[default]
    Origin,
    /// Rank by the probability of the chosen token (`maskgit_plus`).
    MaskgitPlus,
    /// Rank by top-1 minus top-2 probability (`topk_margin`).
    TopkMargin,
    /// Rank by negative entropy, larger = surer (`entropy`, recommended for Dream-Instruct).
    Entropy,
}

/// Settings of the Dream sampler; the defaults are those of `DreamGenerationConfig`
/// (except `gen_length`, which it derives from `max_length`).
#[derive(Debug, Clone, PartialEq)]
pub struct DreamConfig {
    /// Tokens to generate (`max_new_tokens`; default 128).
    pub gen_length: usize,
    /// Denoising steps (default 512). Unused in parallel mode.
    pub steps: usize,
    /// Final timestep of `linspace(1, eps, steps + 1)` (default 1e-3).
    pub eps: f32,
    /// The remasking algorithm (default `Origin`).
    pub alg: DreamAlg,
    /// Temperature of the position draw; 0 ranks deterministically (default 0).
    pub alg_temp: f32,
    /// Token temperature; 0 is greedy (default 0).
    pub temperature: f32,
    /// Nucleus sampling threshold, in `[0, 1]` (default none).
    pub top_p: Option<f64>,
    /// Top-k filter, at least 1 (default none).
    pub top_k: Option<usize>,
    /// The `[MASK]` token id (151666 for Dream-7B); required.
    pub mask_id: Option<u32>,
    /// End tokens at which generation stops.
    pub eos_ids: Vec<u32>,
    /// Run the whole schedule and return everything after the first end token too.
    pub keep_after_eos: bool,
    /// Fast-dLLM parallel decoding instead of the official schedule.
    pub parallel: Option<ParallelConfig>,
    /// Block length of parallel mode (Fast-dLLM uses 32); must divide `gen_length`; none
    /// means one block. Only valid with `parallel`.
    pub block_length: Option<usize>,
    /// Key/value reuse between steps (default `None`); needs `parallel`.
    pub cache: CachePolicy,
}

impl Default for DreamConfig {
    fn default() -> Self {
        Self {
            gen_length: 128,
            steps: 512,
            eps: 1e-3,
            alg: DreamAlg::Origin,
            alg_temp: 0.0,
            temperature: 0.0,
            top_p: None,
            top_k: None,
            mask_id: None,
            eos_ids: Vec::new(),
            keep_after_eos: false,
            parallel: None,
            block_length: None,
            cache: CachePolicy::None,
        }
    }
}

fn out_of_range(name: &'static str, value: f64, expected: &'static str) -> ConfigError {
    ConfigError::OutOfRange {
        name,
        value,
        expected,
    }
}

impl DreamConfig {
    /// Checks every setting; returns the mask id.
    pub fn validate(&self) -> Result<u32, ConfigError> {
        if self.gen_length == 0 {
            return Err(ConfigError::ZeroGenLength);
        }
        if self.steps == 0 {
            return Err(ConfigError::ZeroSteps);
        }
        if !(self.eps.is_finite() && self.eps > 0.0 && self.eps < 1.0) {
            return Err(out_of_range(
                "eps",
                self.eps.into(),
                "strictly between 0 and 1",
            ));
        }
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return Err(out_of_range(
                "temperature",
                self.temperature.into(),
                "a finite number >= 0",
            ));
        }
        if !(self.alg_temp.is_finite() && self.alg_temp >= 0.0) {
            return Err(out_of_range(
                "alg_temp",
                self.alg_temp.into(),
                "a finite number >= 0",
            ));
        }
        if let Some(p) = self.top_p {
            if !(0.0..=1.0).contains(&p) {
                return Err(out_of_range("top_p", p, "between 0 and 1"));
            }
        }
        if self.top_k == Some(0) {
            return Err(ConfigError::ZeroTopK);
        }
        match (self.block_length, &self.parallel) {
            (Some(_), None) => return Err(ConfigError::BlockLengthWithoutParallel),
            (Some(0), Some(_)) => return Err(ConfigError::ZeroBlockLength),
            (Some(b), Some(_)) if self.gen_length % b != 0 => {
                return Err(ConfigError::GenLengthNotMultipleOfBlock {
                    gen_length: self.gen_length,
                    block_length: b,
                });
            }
            _ => {}
        }
        if let Some(p) = &self.parallel {
            p.validate()?;
        }
        if self.cache != CachePolicy::None && self.parallel.is_none() {
            return Err(ConfigError::CacheNeedsBlocks {
                policy: self.cache.name(),
            });
        }
        self.mask_id.ok_or(ConfigError::MissingMaskId)
    }

    fn filters(&self) -> Filters {
        Filters {
            temperature: self.temperature,
            top_p: self.top_p,
            top_k: self.top_k,
        }
    }
}

/// Per-run state.
struct Run<'c> {
    config: &'c DreamConfig,
    vocab: usize,
    canvas: Canvas<'c>,
    scratch: Scratch,
}

impl Run<'_> {
    /// Token and confidence for each of `positions` (ascending), from the shifted rows, in a
    /// step of `block`.
    fn sample<D: Denoiser>(
        &mut self,
        denoiser: &mut D,
        positions: &[usize],
        kind: Confidence,
        block: Range<usize>,
        rng: &mut impl UniformSource,
    ) -> Result<Predictions, Error<D::Error>> {
        // Row of position p is p - 1 (0 for p = 0): non-decreasing, so dedup keeps order and
        // only merges positions 0 and 1.
        let mut rows: Vec<usize> = positions.iter().map(|&p| p.saturating_sub(1)).collect();
        rows.dedup();
        self.canvas.fetch(denoiser, &rows, block)?;
        let filters = self.config.filters();
        let want_entropy = self.config.parallel.is_some_and(|p| p.needs_entropy());
        let mut out_tokens = Vec::with_capacity(positions.len());
        let mut out_conf = Vec::with_capacity(positions.len());
        let mut entropy = Vec::new();
        let mut r = 0;
        for &p in positions {
            let row = p.saturating_sub(1);
            while rows[r] != row {
                r += 1;
            }
            let logits = &self.canvas.logits[r * self.vocab..(r + 1) * self.vocab];
            let (t, c) = sample_row(logits, &filters, kind, rng, &mut self.scratch);
            out_tokens.push(t);
            out_conf.push(c);
            if want_entropy {
                entropy.push(math::entropy(logits));
            }
        }
        Ok(Predictions {
            positions: positions.to_vec(),
            tokens: out_tokens,
            conf: out_conf,
            entropy,
        })
    }
}

/// Generates with Dream's official sampler (or Fast-dLLM's parallel mode when
/// `config.parallel` is set), calling `on_step` after every step that ran the denoiser.
/// A [`CachePolicy`] other than `None` needs the parallel mode, whose blocks it refreshes
/// at (see [`crate::cache`]).
pub fn generate<D: Denoiser>(
    denoiser: &mut D,
    prompt: &[u32],
    config: &DreamConfig,
    rng: &mut impl UniformSource,
    mut on_step: impl FnMut(&StepView<'_>),
) -> Result<Generation, Error<D::Error>> {
    let mask_id = config.validate()?;
    let vocab = denoiser.vocab_size();
    if vocab == 0 {
        return Err(ConfigError::EmptyVocab.into());
    }
    config.cache.check_denoiser(denoiser)?;
    let mut run = Run {
        config,
        vocab,
        canvas: Canvas::new(
            prompt,
            config.gen_length,
            mask_id,
            &config.eos_ids,
            config.keep_after_eos,
            config.cache,
        ),
        scratch: Scratch::default(),
    };
    match &config.parallel {
        Some(par) => parallel(&mut run, denoiser, par, rng, &mut on_step)?,
        None => official(&mut run, denoiser, rng, &mut on_step)?,
    }
    Ok(run.canvas.finish())
}

/// The official `_sample` loop.
fn official<D: Denoiser>(
    run: &mut Run<'_>,
    denoiser: &mut D,
    rng: &mut impl UniformSource,
    on_step: &mut impl FnMut(&StepView<'_>),
) -> Result<(), Error<D::Error>> {
    let c = run.config;
    let timesteps = dream_timesteps(c.steps, c.eps);
    let len = run.canvas.tokens.len();
    for i in 0..c.steps {
        let masked = run.canvas.masked(0..len);
        if masked.is_empty() {
            break;
        }
        let (t, s, last) = (timesteps[i], timesteps[i + 1], i + 1 == c.steps);
        let (pred, chosen) = if c.alg == DreamAlg::Origin {
            let p = dream_p_transfer(t, s, last);
            let reveal: Vec<usize> = masked.into_iter().filter(|_| rng.next_f32() < p).collect();
            if reveal.is_empty() {
                continue;
            }
            let pred = run.sample(denoiser, &reveal, Confidence::Probability, 0..len, rng)?;
            let all: Vec<usize> = (0..reveal.len()).collect();
            (pred, all)
        } else {
            let k = dream_transfer_count(masked.len(), t, s, last);
            if k == 0 {
                continue;
            }
            let kind = match c.alg {
                DreamAlg::TopkMargin => Confidence::Margin,
                DreamAlg::Entropy => Confidence::NegEntropy,
                _ => Confidence::Probability,
            };
            let pred = run.sample(denoiser, &masked, kind, 0..len, rng)?;
            let chosen = if c.alg_temp == 0.0 {
                select::top_k(&pred.conf, k)
            } else {
                let scaled: Vec<f64> = pred
                    .conf
                    .iter()
                    .map(|&x| x / f64::from(c.alg_temp))
                    .collect();
                let mut weights = Vec::new();
                math::softmax_into(&scaled, &mut weights);
                select::multinomial_without_replacement(&weights, k, rng)
            };
            (pred, chosen)
        };
        let at = StepAt {
            step: i,
            total_steps: c.steps,
            block: 0,
            num_blocks: 1,
        };
        if run.canvas.commit(&pred, &chosen, at, on_step) {
            break;
        }
    }
    Ok(())
}

/// Fast-dLLM's block-wise parallel decoding.
fn parallel<D: Denoiser>(
    run: &mut Run<'_>,
    denoiser: &mut D,
    par: &ParallelConfig,
    rng: &mut impl UniformSource,
    on_step: &mut impl FnMut(&StepView<'_>),
) -> Result<(), Error<D::Error>> {
    let c = run.config;
    let block_length = c.block_length.unwrap_or(c.gen_length);
    let num_blocks = c.gen_length / block_length;
    let mut step = 0;
    for block in 0..num_blocks {
        let start = run.canvas.prompt_len + block * block_length;
        let end = start + block_length;
        run.canvas.begin_block();
        loop {
            let cand = run.canvas.masked(start..end);
            if cand.is_empty() {
                break;
            }
            let pred = run.sample(denoiser, &cand, Confidence::Probability, start..end, rng)?;
            let chosen = par.select(&pred.conf, &pred.entropy);
            let at = StepAt {
                step,
                total_steps: c.gen_length,
                block,
                num_blocks,
            };
            let stop = run.canvas.commit(&pred, &chosen, at, on_step);
            if run.canvas.masked(start..end).len() == cand.len() {
                return Err(Error::Stalled { block });
            }
            step += 1;
            if stop {
                return Ok(());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
