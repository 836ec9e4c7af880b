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

pub use sample::{Confidence, sample_row};

use std::ops::Range;

use crate::cache::{CachePlan, CachePolicy};
use crate::canvas::{Canvas, StepAt};
use crate::common::{self, Common};
use crate::denoiser::Denoiser;
use crate::error::{ConfigError, Error};
use crate::math;
use crate::output::{Generation, StepView};
use crate::parallel::ParallelConfig;
use crate::rng::UniformSource;
use crate::row_pool;
use crate::sampling::{self, FilterOrder, Filters, Scratch, Ties, TopK};
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
    /// Generation length (`max_new_tokens`), mask id (151666 for Dream-7B) and end tokens.
    pub common: Common,
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
            common: Common::default(),
            steps: 512,
            eps: 1e-3,
            alg: DreamAlg::Origin,
            alg_temp: 0.0,
            temperature: 0.0,
            top_p: None,
            top_k: None,
            parallel: None,
            block_length: None,
            cache: CachePolicy::None,
        }
    }
}

impl DreamConfig {
    /// Checks every setting; returns the mask id.
    pub fn validate(&self) -> Result<u32, ConfigError> {
        let mask_id = self.common.validate()?;
        let gen_length = self.common.gen_length;
        if self.steps == 0 {
            return Err(ConfigError::ZeroSteps);
        }
        let eps = self.eps;
        common::in_range(
            "eps",
            eps.into(),
            eps.is_finite() && eps > 0.0 && eps < 1.0,
            "strictly between 0 and 1",
        )?;
        common::non_negative("temperature", self.temperature.into())?;
        common::non_negative("alg_temp", self.alg_temp.into())?;
        if let Some(p) = self.top_p {
            common::in_range("top_p", p, (0.0..=1.0).contains(&p), "between 0 and 1")?;
        }
        common::check_top_k(self.top_k)?;
        match (self.block_length, &self.parallel) {
            (Some(_), None) => return Err(ConfigError::BlockLengthWithoutParallel),
            (Some(0), Some(_)) => return Err(ConfigError::ZeroBlockLength),
            (Some(b), Some(_)) if gen_length % b != 0 => {
                return Err(ConfigError::GenLengthNotMultipleOfBlock {
                    gen_length,
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
        Ok(mask_id)
    }

    /// `sample_tokens`' filters: temperature, top-p, then top-k keeping ties.
    fn filters(&self) -> Filters {
        Filters {
            temperature: self.temperature,
            top_p: self.top_p,
            top_k: self.top_k.map(|k| TopK {
                k,
                ties: Ties::Keep,
            }),
            order: FilterOrder::TemperatureTopPTopK,
        }
    }
}

/// What a step's samples need besides the canvas.
struct Sampler<'c> {
    config: &'c DreamConfig,
    filters: Filters,
    scratch: Vec<Scratch>,
}

impl Sampler<'_> {
    /// Token and confidence for each of `positions` (ascending), from the shifted rows, in a
    /// step of `block`.
    fn sample<D: Denoiser>(
        &mut self,
        denoiser: &mut D,
        canvas: &mut Canvas<'_>,
        positions: &[usize],
        kind: Confidence,
        block: Range<usize>,
        rng: &mut impl UniformSource,
    ) -> Result<Predictions, Error<D::Error>> {
        // Row of position p is p - 1 (0 for p = 0): non-decreasing, so dedup keeps order and
        // only merges positions 0 and 1.
        let mut rows: Vec<usize> = positions.iter().map(|&p| p.saturating_sub(1)).collect();
        rows.dedup();
        canvas.fetch(denoiser, &rows, block)?;
        let vocab = canvas.vocab;
        let want_entropy = self.config.parallel.is_some_and(|p| p.needs_entropy());
        // The row of each position (positions 0 and 1 share row 0).
        let mut of = Vec::with_capacity(positions.len());
        let mut r = 0;
        for &p in positions {
            let row = p.saturating_sub(1);
            while rows[r] != row {
                r += 1;
            }
            of.push(r);
        }
        // One draw per position, in position order, when sampling (as one row at a time
        // drew them); then the rows on the pool's threads ([`row_pool`]).
        let draws: Vec<f64> = if self.filters.temperature > 0.0 {
            positions.iter().map(|_| rng.next_f64()).collect()
        } else {
            Vec::new()
        };
        let (filters, logits) = (&self.filters, &canvas.logits[..]);
        let sampled: Vec<(u32, f64, f64)> =
            row_pool::map(positions.len(), &mut self.scratch, |i, s| {
                let row = row_pool::row(logits, vocab, of[i]);
                let mut u = row_pool::Drawn(draws.get(i).copied());
                let (t, c) = sample_row(row, filters, kind, &mut u, s);
                (
                    t,
                    c,
                    if want_entropy {
                        sampling::entropy(row)
                    } else {
                        0.0
                    },
                )
            });
        Ok(Predictions {
            positions: positions.to_vec(),
            tokens: sampled.iter().map(|x| x.0).collect(),
            conf: sampled.iter().map(|x| x.1).collect(),
            entropy: if want_entropy {
                sampled.iter().map(|x| x.2).collect()
            } else {
                Vec::new()
            },
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
    let plan = CachePlan::new(config.cache);
    let mut canvas = Canvas::new(denoiser, prompt, &config.common, mask_id, plan)?.shifted();
    let mut sampler = Sampler {
        config,
        filters: config.filters(),
        scratch: Vec::new(),
    };
    match &config.parallel {
        // Fast-dLLM's block-wise decoding; the confidence is the sampled token's probability.
        Some(par) => par.decode(
            &mut canvas,
            config.block_length.unwrap_or(config.common.gen_length),
            |block| block,
            |canvas, cand, block| {
                let kind = Confidence::Probability;
                sampler.sample(denoiser, canvas, cand, kind, block, rng)
            },
            &mut on_step,
        )?,
        None => official(&mut sampler, &mut canvas, denoiser, rng, &mut on_step)?,
    }
    Ok(canvas.finish())
}

/// The official `_sample` loop.
fn official<D: Denoiser>(
    sampler: &mut Sampler<'_>,
    canvas: &mut Canvas<'_>,
    denoiser: &mut D,
    rng: &mut impl UniformSource,
    on_step: &mut impl FnMut(&StepView<'_>),
) -> Result<(), Error<D::Error>> {
    let c = sampler.config;
    let timesteps = dream_timesteps(c.steps, c.eps);
    let len = canvas.len();
    for i in 0..c.steps {
        let masked = canvas.masked(0..len);
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
            let kind = Confidence::Probability;
            let pred = sampler.sample(denoiser, canvas, &reveal, kind, 0..len, rng)?;
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
            let pred = sampler.sample(denoiser, canvas, &masked, kind, 0..len, rng)?;
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
        if canvas.commit(&pred, &chosen, at, on_step) {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
