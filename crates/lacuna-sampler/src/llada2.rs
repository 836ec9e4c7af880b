//! LLaDA2's sampler, transcribed from the `generate` of inclusionAI's
//! `modeling_llada2_moe.py` (LLaDA2.0-mini; `_get_num_transfer_tokens`,
//! `_sample_with_temperature_topk_topp`) and, behind [`Llada2Config::editing`], LLaDA2.1's
//! token-to-token editing loop.
//!
//! The canvas is the prompt followed by masks up to a whole number of blocks of
//! `block_length`, the blocks aligned at position 0, so the prompt's last partial block is
//! decoded together with the first generated tokens. Blocks are decoded left to right; the
//! model sees the canvas up to the end of the current block only, with block-causal
//! attention (the model's side: the block length of each pass's `PassSpec`). Each step of a block:
//!
//! 1. logits of the block's masked positions (with editing: of every non-prompt position of
//!    the block);
//! 2. per row: logits divided by the temperature (when neither 0 nor 1), the top-k filter,
//!    the top-p filter, softmax in f64; the token is the argmax at temperature 0 (the
//!    LLaDA2.1 fix of the 2.0 code, which sampled even then) or a categorical draw (one
//!    `next_f64` per row, rows by position); its confidence is its probability;
//! 3. mask-to-token: if at least the scheduled count of masked positions have confidence
//!    strictly above `threshold`, all of them are committed (possibly more than scheduled);
//!    otherwise the scheduled count, most confident first (ties: left-most);
//! 4. with editing, token-to-token: every already-committed, non-prompt position of the
//!    block whose new prediction differs from its token and has confidence above the editing
//!    threshold takes the new token. Earlier blocks never change.
//!
//! LLaDA2.0 gives each block `steps` steps on the schedule `block_length / steps` (+1 for the
//! first `block_length % steps`) and stops after a block once an end token is in the
//! generated region. LLaDA2.1 commits a constant count per step and, once the block has no
//! mask, runs up to `max_post_steps` editing-only steps, stopping when a step edits nothing.
//! The result is the `gen_length` tokens after the prompt, cut before the first end token.
//! Without editing, generation also stops as soon as an end token is settled (every position
//! before it committed): no later step can change those tokens, so the result is the same.
//!
//! With a cache ([`CachePolicy::Prefix`]) the first pass fills the cache and every later pass
//! recomputes a window: the current block, and at a block's first step also the previous
//! block, whose tokens were final only after its last pass. Under block-causal attention the
//! cached positions never attend to anything that changed since they were computed, so the
//! cache is exact (same logits as without it, up to the batch-size-dependent rounding of the
//! matmul kernels).

use crate::cache::{CachePlan, CachePolicy};
use crate::canvas::{Canvas, StepAt};
use crate::common::{self, Common};
use crate::denoiser::Denoiser;
use crate::dream::{Confidence, sample_row};
use crate::error::{ConfigError, Error};
use crate::output::{Generation, StepView};
use crate::rng::UniformSource;
use crate::row_pool;
use crate::sampling::{FilterOrder, Filters, Scratch, Ties, TopK};
use crate::schedule::llada_transfer_counts;
use crate::select::{self, Predictions};

/// LLaDA2.1's token-to-token editing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Editing {
    /// A committed token is replaced when the new prediction's confidence is above this
    /// (default 0.9).
    pub threshold: f64,
    /// Editing-only steps allowed once a block has no mask (default 16).
    pub max_post_steps: usize,
    /// Masked positions committed per step when fewer pass the threshold (default 1).
    pub num_to_transfer: usize,
}

impl Default for Editing {
    fn default() -> Self {
        Self {
            threshold: 0.9,
            max_post_steps: 16,
            num_to_transfer: 1,
        }
    }
}

/// Settings of the LLaDA2 sampler; the defaults are those of the official `generate()`
/// (but `gen_length`, 2048 there, is 128 here as in the other samplers).
#[derive(Debug, Clone, PartialEq)]
pub struct Llada2Config {
    /// Generation length, mask id (156895 for LLaDA2.0-mini) and end tokens.
    pub common: Common,
    /// Block length, of both the schedule and the attention mask (default 32).
    pub block_length: usize,
    /// Steps per block (default 32; at most `block_length` are useful).
    pub steps: usize,
    /// Masked positions with confidence strictly above this are committed at once
    /// (default 0.95; above 1 disables it).
    pub threshold: f64,
    /// Softmax temperature; 0 is greedy (default 0).
    pub temperature: f64,
    /// Keep the `k` most likely tokens before sampling (default none).
    pub top_k: Option<usize>,
    /// Nucleus filter (default none).
    pub top_p: Option<f64>,
    /// LLaDA2.1's editing (default none: the LLaDA2.0 loop).
    pub editing: Option<Editing>,
    /// `None`: every pass runs the canvas up to the block's end. `Prefix`: the exact
    /// finished-block cache. `Dual` is refused (there is no suffix to cache).
    pub cache: CachePolicy,
}

impl Default for Llada2Config {
    fn default() -> Self {
        Self {
            common: Common::default(),
            block_length: 32,
            steps: 32,
            threshold: 0.95,
            temperature: 0.0,
            top_k: None,
            top_p: None,
            editing: None,
            cache: CachePolicy::None,
        }
    }
}

impl Llada2Config {
    /// Checks every setting; returns the mask id.
    pub fn validate(&self) -> Result<u32, ConfigError> {
        let mask_id = self.common.validate()?;
        if !self.common.suffix.is_empty() {
            return Err(ConfigError::InfillUnsupported { sampler: "LLaDA2" });
        }
        if self.block_length == 0 {
            return Err(ConfigError::ZeroBlockLength);
        }
        if self.steps == 0 {
            return Err(ConfigError::ZeroSteps);
        }
        common::non_negative("temperature", self.temperature)?;
        common::non_negative("threshold", self.threshold)?;
        if let Some(p) = self.top_p {
            common::in_range("top_p", p, p > 0.0 && p <= 1.0, "in (0, 1]")?;
        }
        common::check_top_k(self.top_k)?;
        if let Some(e) = &self.editing {
            common::non_negative("editing threshold", e.threshold)?;
            if e.num_to_transfer == 0 {
                return Err(ConfigError::OutOfRange {
                    name: "num_to_transfer",
                    value: 0.0,
                    expected: "at least 1",
                });
            }
        }
        if self.cache == CachePolicy::Dual {
            return Err(ConfigError::CacheUnsupported {
                policy: "dual (LLaDA2 sees no suffix: use prefix, which is exact)",
            });
        }
        Ok(mask_id)
    }

    /// `_sample_with_temperature_topk_topp`'s filters: top-k (keeping ties) on the raw
    /// logits, then the temperature, then top-p.
    fn filters(&self) -> Filters {
        Filters {
            temperature: self.temperature as f32,
            top_k: self.top_k.map(|k| TopK {
                k,
                ties: Ties::Keep,
            }),
            top_p: self.top_p,
            order: FilterOrder::TopKTemperatureTopP,
        }
    }
}

/// Generates after `prompt` as LLaDA2's `generate` does (see the module docs); `on_step` sees
/// the canvas after every step. The denoiser must run the model with block-causal attention
/// of `config.block_length`.
pub fn generate<D: Denoiser>(
    denoiser: &mut D,
    prompt: &[u32],
    config: &Llada2Config,
    rng: &mut impl UniformSource,
    mut on_step: impl FnMut(&StepView<'_>),
) -> Result<Generation, Error<D::Error>> {
    let mask_id = config.validate()?;
    let plan = CachePlan::block_causal(config.cache);
    let mut canvas = Canvas::new(denoiser, prompt, &config.common, mask_id, plan)?;
    let b = config.block_length;
    let (prompt_len, total) = (prompt.len(), canvas.len());
    let num_blocks = total.div_ceil(b);
    canvas.pad_to(num_blocks * b);
    let vocab = canvas.vocab;
    let filters = config.filters();
    let mut scratch: Vec<Scratch> = Vec::new();
    let schedule = llada_transfer_counts(b, config.steps);
    let total_steps = match config.editing {
        None => config.steps,
        Some(e) => b + e.max_post_steps + 1,
    };
    let first_block = prompt_len / b;
    let eos_ids = &config.common.eos_ids;
    'blocks: for blk in first_block..num_blocks {
        let (start, end) = (blk * b, (blk + 1) * b);
        let editable_from = start.max(prompt_len);
        canvas.begin_block();
        let mut post_steps = 0;
        let mut step = 0;
        loop {
            let active = canvas.masked(start..end);
            let n_transfer = match config.editing {
                None => {
                    if active.is_empty() || step >= config.steps {
                        break;
                    }
                    schedule[step]
                }
                Some(e) => {
                    if active.is_empty() {
                        post_steps += 1;
                    }
                    if post_steps > e.max_post_steps {
                        break;
                    }
                    e.num_to_transfer
                }
            };
            let rows: Vec<usize> = match config.editing {
                None => active.clone(),
                Some(_) => (editable_from..end).collect(),
            };
            canvas.fetch_upto(denoiser, &rows, start..end, end)?;
            // Predictions of every requested row, in position order (the draw order).
            // Its draw (one per row when sampling) taken beforehand in that order, the rows
            // then on the pool's threads ([`row_pool`]).
            let draws: Vec<f64> = if filters.temperature > 0.0 {
                rows.iter().map(|_| rng.next_f64()).collect()
            } else {
                Vec::new()
            };
            let logits = &canvas.logits[..];
            let pred: Vec<(u32, f64)> = row_pool::map(rows.len(), &mut scratch, |i, s| {
                let row = row_pool::row(logits, vocab, i);
                let mut u = row_pool::Drawn(draws.get(i).copied());
                sample_row(row, &filters, Confidence::Probability, &mut u, s)
            });
            let at = |p: usize| rows.binary_search(&p).map(|i| pred[i]).ok();
            // Mask to token.
            let conf: Vec<f64> = active.iter().map(|&p| at(p).map_or(0.0, |x| x.1)).collect();
            let high: Vec<usize> = (0..active.len())
                .filter(|&i| conf[i] > config.threshold)
                .collect();
            let chosen = if high.len() >= n_transfer {
                high
            } else {
                select::top_k(&conf, n_transfer.min(active.len()))
            };
            // (position, token, confidence); a position without a prediction (a prompt mask
            // under editing) keeps its token.
            let tokens = &canvas.tokens;
            let mut committed: Vec<(usize, u32, f64)> = chosen
                .iter()
                .map(|&i| {
                    let p = active[i];
                    (p, at(p).map_or(tokens[p], |x| x.0), conf[i])
                })
                .collect();
            // Token to token (LLaDA2.1).
            let mut edited = 0;
            if let Some(e) = config.editing {
                for (&p, &(tok, c)) in rows.iter().zip(&pred) {
                    if tokens[p] != mask_id && c > e.threshold && tok != tokens[p] {
                        committed.push((p, tok, c));
                        edited += 1;
                    }
                }
            }
            committed.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
            let commits = Predictions {
                positions: committed.iter().map(|c| c.0).collect(),
                tokens: committed.iter().map(|c| c.1).collect(),
                conf: committed.iter().map(|c| c.2).collect(),
                entropy: Vec::new(),
            };
            let all: Vec<usize> = (0..committed.len()).collect();
            let at = StepAt {
                step,
                total_steps,
                block: blk - first_block,
                num_blocks: num_blocks - first_block,
            };
            let settled = canvas.commit(&commits, &all, at, &mut on_step);
            step += 1;
            if config.editing.is_none() && settled {
                break 'blocks;
            }
            if config.editing.is_some() && active.is_empty() && edited == 0 {
                break;
            }
        }
        // After a block: stop once an end token is in the generated region (2.0 always;
        // 2.1 when the region so far has no mask).
        if !config.common.keep_after_eos {
            let generated = &canvas.tokens[prompt_len..end.min(total)];
            let has_eos = generated.iter().any(|t| eos_ids.contains(t));
            let done = match config.editing {
                None => has_eos,
                Some(_) => has_eos && !generated.contains(&mask_id),
            };
            if done {
                break;
            }
        }
    }
    Ok(canvas.finish())
}

#[cfg(test)]
mod tests;
