//! LLaDA's sampler, transcribed from ML-GSAI/LLaDA `generate.py` (`generate`,
//! `get_num_transfer_tokens`, `add_gumbel_noise`), plus Fast-dLLM's parallel mode.
//!
//! The canvas is the prompt followed by `gen_length` masks, decoded left to right in blocks of
//! `block_length` (semi-autoregressive); each block gets `steps / num_blocks` steps and commits
//! its masks on the official schedule ([`llada_transfer_counts`]). Each step:
//!
//! 1. logits for every masked position before the end of the current block (positions after
//!    it are never chosen: the official code gives them confidence `-inf`); with
//!    `cfg_scale > 0` a second pass over the canvas with the prompt masked, combined as
//!    `uncond + (cfg_scale + 1) * (cond - uncond)`;
//! 2. the predicted token `x0`: the argmax at temperature 0, otherwise the Gumbel-max
//!    `argmax(exp(l) / (-ln u)^temperature)` in float64;
//! 3. its confidence: `softmax(l)[x0]` in float64 (`low_confidence`, on the logits without
//!    noise) or a uniform draw (`random`);
//! 4. the `k` most confident positions are committed (ties to the left-most position).
//!
//! Randomness is drawn in this order per step: at temperature > 0, one `next_f64` per token
//! of each candidate row (rows by position, tokens by id); then, for `random` remasking, one
//! `next_f32` per candidate row. Steps whose count is 0 are skipped without a denoiser call
//! (the official code runs the model and commits nothing), and the run stops early at a
//! settled end token (see [`Finish::Eos`](crate::Finish::Eos)); neither changes the result.

use std::ops::Range;

use crate::cache::{CachePlan, CachePolicy};
use crate::canvas::{Canvas, StepAt};
use crate::common::{self, Common};
use crate::denoiser::{Denoiser, check_rows, fetch_logits};
use crate::error::{ConfigError, Error};
use crate::math;
use crate::output::{Generation, StepView};
use crate::parallel::ParallelConfig;
use crate::rng::UniformSource;
use crate::row_pool;
use crate::sampling;
use crate::schedule::llada_transfer_counts;
use crate::select::{self, Predictions};

/// How LLaDA ranks the predicted tokens of masked positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Remasking {
    /// Keep the positions whose predicted token is most probable (`low_confidence`).
    #[default]
    LowConfidence,
    /// Keep random positions (`random`).
    Random,
}

/// Settings of the LLaDA sampler; the defaults are those of the official `generate()`.
#[derive(Debug, Clone, PartialEq)]
pub struct LladaConfig {
    /// Generation length, mask id and end tokens (the mask id is 126336 for LLaDA-8B).
    pub common: Common,
    /// Block length of semi-autoregressive decoding; must divide `gen_length` (default 128).
    pub block_length: usize,
    /// Denoising steps in total; must be a multiple of the number of blocks (default 128).
    /// Unused in parallel mode (but still validated, as Fast-dLLM asserts it).
    pub steps: usize,
    /// Gumbel-max temperature; 0 is greedy (default 0).
    pub temperature: f64,
    /// Unsupervised classifier-free guidance scale; 0 disables it (default 0).
    pub cfg_scale: f32,
    /// The remasking strategy (default `LowConfidence`).
    pub remasking: Remasking,
    /// Fast-dLLM parallel decoding instead of the official schedule.
    pub parallel: Option<ParallelConfig>,
    /// Key/value reuse between steps (default `None`: every step runs the whole canvas).
    pub cache: CachePolicy,
}

impl Default for LladaConfig {
    fn default() -> Self {
        Self {
            common: Common::default(),
            block_length: 128,
            steps: 128,
            temperature: 0.0,
            cfg_scale: 0.0,
            remasking: Remasking::LowConfidence,
            parallel: None,
            cache: CachePolicy::None,
        }
    }
}

impl LladaConfig {
    /// Checks every setting; returns the mask id.
    pub fn validate(&self) -> Result<u32, ConfigError> {
        let mask_id = self.common.validate()?;
        let gen_length = self.common.gen_length;
        if self.block_length == 0 {
            return Err(ConfigError::ZeroBlockLength);
        }
        if gen_length % self.block_length != 0 {
            return Err(ConfigError::GenLengthNotMultipleOfBlock {
                gen_length,
                block_length: self.block_length,
            });
        }
        if self.steps == 0 {
            return Err(ConfigError::ZeroSteps);
        }
        let blocks = gen_length / self.block_length;
        if self.steps % blocks != 0 {
            return Err(ConfigError::StepsNotMultipleOfBlocks {
                steps: self.steps,
                blocks,
            });
        }
        common::non_negative("temperature", self.temperature)?;
        common::non_negative("cfg_scale", f64::from(self.cfg_scale))?;
        if let Some(p) = &self.parallel {
            p.validate()?;
        }
        if self.cache != CachePolicy::None && self.cfg_scale > 0.0 {
            return Err(ConfigError::CacheWithCfg {
                policy: self.cache.name(),
            });
        }
        Ok(mask_id)
    }
}

/// What a step's predictions need besides the canvas.
struct Predictor<'c> {
    config: &'c LladaConfig,
    /// Prompt and suffix positions that are not masks (masked for the unconditional CFG
    /// pass).
    prompt_index: Vec<usize>,
    uncond: Vec<f32>,
}

impl Predictor<'_> {
    /// Predicted token and confidence of every candidate of a step of `block`.
    fn predict<D: Denoiser>(
        &mut self,
        denoiser: &mut D,
        canvas: &mut Canvas<'_>,
        cand: &[usize],
        block: Range<usize>,
        rng: &mut impl UniformSource,
    ) -> Result<Predictions, Error<D::Error>> {
        let c = self.config;
        let vocab = canvas.vocab;
        canvas.fetch(denoiser, cand, block)?;
        if c.cfg_scale > 0.0 {
            let mut un = canvas.tokens.clone();
            for &p in &self.prompt_index {
                un[p] = canvas.mask_id;
            }
            fetch_logits(denoiser, &un, cand, &mut self.uncond, &mut canvas.stats)?;
            let scale = c.cfg_scale + 1.0;
            for (l, &u) in canvas.logits.iter_mut().zip(&self.uncond) {
                *l = u + scale * (*l - u);
            }
            check_rows::<D::Error>(&canvas.logits, cand, vocab)?;
        }
        // Per-row work on the pool's threads ([`row_pool`]); the Gumbel draws (a whole row of
        // uniforms each) stay sequential, in row order.
        let logits = &canvas.logits[..cand.len() * vocab];
        let row = |i| row_pool::row(logits, vocab, i);
        let none = &mut Vec::<()>::new();
        let x0: Vec<usize> = if c.temperature == 0.0 {
            row_pool::map(cand.len(), none, |i, _| math::argmax_f32(row(i)))
        } else {
            logits
                .chunks_exact(vocab)
                .map(|r| math::gumbel_argmax(r, c.temperature, rng))
                .collect()
        };
        let entropy = if c.parallel.is_some_and(|p| p.needs_entropy()) {
            row_pool::map(cand.len(), none, |i, _| sampling::entropy(row(i)))
        } else {
            Vec::new()
        };
        let conf: Vec<f64> = match c.remasking {
            Remasking::LowConfidence => {
                row_pool::map(cand.len(), none, |i, _| math::softmax_at(row(i), x0[i]))
            }
            Remasking::Random => cand.iter().map(|_| f64::from(rng.next_f32())).collect(),
        };
        // Token ids are < vocab_size, which the denoiser reports as a usize; ids are u32 in
        // GGUF, so a vocabulary beyond u32 cannot occur.
        Ok(Predictions {
            positions: cand.to_vec(),
            tokens: x0.into_iter().map(|t| t as u32).collect(),
            conf,
            entropy,
        })
    }
}

/// Generates with LLaDA's official sampler (or Fast-dLLM's parallel mode when
/// `config.parallel` is set), calling `on_step` after every step that ran the denoiser.
/// With a [`CachePolicy`] other than `None`, each block's first step fills the denoiser's
/// cache and the others recompute a window (see [`crate::cache`]).
pub fn generate<D: Denoiser>(
    denoiser: &mut D,
    prompt: &[u32],
    config: &LladaConfig,
    rng: &mut impl UniformSource,
    mut on_step: impl FnMut(&StepView<'_>),
) -> Result<Generation, Error<D::Error>> {
    let mask_id = config.validate()?;
    let plan = CachePlan::new(config.cache);
    let mut canvas = Canvas::new(denoiser, prompt, &config.common, mask_id, plan)?;
    let mut predictor = Predictor {
        config,
        prompt_index: canvas.given(),
        uncond: Vec::new(),
    };
    if let Some(par) = &config.parallel {
        // Candidates are every masked position before the block's end, as officially.
        par.decode(
            &mut canvas,
            config.block_length,
            |block| 0..block.end,
            |canvas, cand, block| predictor.predict(denoiser, canvas, cand, block, rng),
            &mut on_step,
        )?;
        return Ok(canvas.finish());
    }
    let num_blocks = config.common.gen_length / config.block_length;
    let steps_per_block = config.steps / num_blocks;
    'blocks: for block in 0..num_blocks {
        let start = canvas.prompt_len + block * config.block_length;
        let end = start + config.block_length;
        canvas.begin_block();
        let masks = canvas.masked(start..end).len();
        let counts = llada_transfer_counts(masks, steps_per_block);
        for (i, &k) in counts.iter().enumerate() {
            if k == 0 {
                continue;
            }
            let cand = canvas.masked(0..end);
            let pred = predictor.predict(denoiser, &mut canvas, &cand, start..end, rng)?;
            let chosen = select::top_k(&pred.conf, k);
            let at = StepAt {
                step: block * steps_per_block + i,
                total_steps: config.steps,
                block,
                num_blocks,
            };
            if canvas.commit(&pred, &chosen, at, &mut on_step) {
                break 'blocks;
            }
        }
    }
    Ok(canvas.finish())
}

#[cfg(test)]
mod tests;
