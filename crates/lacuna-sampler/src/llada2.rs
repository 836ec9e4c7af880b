//! LLaDA2's sampler, transcribed from the `generate` of inclusionAI's
//! `modeling_llada2_moe.py` (LLaDA2.0-mini; `_get_num_transfer_tokens`,
//! `_sample_with_temperature_topk_topp`) and, behind [`Llada2Config::editing`], LLaDA2.1's
//! token-to-token editing loop.
//!
//! The canvas is the prompt followed by masks up to a whole number of blocks of
//! `block_length`, the blocks aligned at position 0, so the prompt's last partial block is
//! decoded together with the first generated tokens. Blocks are decoded left to right; the
//! model sees the canvas up to the end of the current block only, with block-causal
//! attention (the model's side: `Model::set_attention_block`). Each step of a block:
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

use crate::cache::CachePolicy;
use crate::denoiser::{Denoiser, Pass, fetch_pass};
use crate::dream::{Confidence, Filters, Scratch, sample_row};
use crate::error::{ConfigError, Error};
use crate::output::{self, Generation, Stats, StepView};
use crate::rng::UniformSource;
use crate::select;

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
    /// Tokens to generate (default 128).
    pub gen_length: usize,
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
    /// The `[MASK]` token id (156895 for LLaDA2.0-mini); required.
    pub mask_id: Option<u32>,
    /// End tokens (EOS/EOT) at which generation stops.
    pub eos_ids: Vec<u32>,
    /// Run every block and return everything after the first end token too.
    pub keep_after_eos: bool,
    /// `None`: every pass runs the canvas up to the block's end. `Prefix`: the exact
    /// finished-block cache. `Dual` is refused (there is no suffix to cache).
    pub cache: CachePolicy,
}

impl Default for Llada2Config {
    fn default() -> Self {
        Self {
            gen_length: 128,
            block_length: 32,
            steps: 32,
            threshold: 0.95,
            temperature: 0.0,
            top_k: None,
            top_p: None,
            editing: None,
            mask_id: None,
            eos_ids: Vec::new(),
            keep_after_eos: false,
            cache: CachePolicy::None,
        }
    }
}

impl Llada2Config {
    /// Checks every setting; returns the mask id.
    pub fn validate(&self) -> Result<u32, ConfigError> {
        if self.gen_length == 0 {
            return Err(ConfigError::ZeroGenLength);
        }
        if self.block_length == 0 {
            return Err(ConfigError::ZeroBlockLength);
        }
        if self.steps == 0 {
            return Err(ConfigError::ZeroSteps);
        }
        let range = |name, value: f64, ok: bool, expected| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError::OutOfRange {
                    name,
                    value,
                    expected,
                })
            }
        };
        let t = self.temperature;
        range(
            "temperature",
            t,
            t.is_finite() && t >= 0.0,
            "a finite number >= 0",
        )?;
        let th = self.threshold;
        range(
            "threshold",
            th,
            th.is_finite() && th >= 0.0,
            "a finite number >= 0",
        )?;
        if let Some(p) = self.top_p {
            range("top_p", p, p > 0.0 && p <= 1.0, "in (0, 1]")?;
        }
        if self.top_k == Some(0) {
            return Err(ConfigError::ZeroTopK);
        }
        if let Some(e) = &self.editing {
            let th = e.threshold;
            range(
                "editing threshold",
                th,
                th.is_finite() && th >= 0.0,
                "a finite number >= 0",
            )?;
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
        self.mask_id.ok_or(ConfigError::MissingMaskId)
    }
}

/// LLaDA2's per-step transfer counts: `block / steps` each, one more for the first
/// `block % steps` steps (`_get_num_transfer_tokens`).
pub fn transfer_schedule(block_length: usize, steps: usize) -> Vec<usize> {
    let (base, rem) = (block_length / steps, block_length % steps);
    (0..steps).map(|i| base + usize::from(i < rem)).collect()
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
    config.cache.check_denoiser(denoiser)?;
    let vocab = denoiser.vocab_size();
    if vocab == 0 {
        return Err(ConfigError::EmptyVocab.into());
    }
    let b = config.block_length;
    let total = prompt.len() + config.gen_length;
    let num_blocks = total.div_ceil(b);
    let mut tokens = prompt.to_vec();
    tokens.resize(num_blocks * b, mask_id);
    let prompt_len = prompt.len();
    let mut stats = Stats {
        steps: 0,
        denoiser_calls: 0,
        logit_rows: 0,
        cache_fills: 0,
        positions_computed: 0,
        finish: output::Finish::Completed,
    };
    let filters = Filters {
        temperature: config.temperature as f32,
        top_p: config.top_p,
        top_k: None,
    };
    let mut scratch = Scratch::default();
    let mut filtered = Vec::new();
    let mut logits = Vec::new();
    let schedule = transfer_schedule(b, config.steps);
    let total_steps = match config.editing {
        None => config.steps,
        Some(e) => b + e.max_post_steps + 1,
    };
    let first_block = prompt_len / b;
    let mut cached = false;
    'blocks: for blk in first_block..num_blocks {
        let (start, end) = (blk * b, (blk + 1) * b);
        let editable_from = start.max(prompt_len);
        let mut post_steps = 0;
        let mut step = 0;
        loop {
            let active: Vec<usize> = (start..end).filter(|&p| tokens[p] == mask_id).collect();
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
            let pass = if config.cache == CachePolicy::None {
                Pass::Full
            } else if !cached {
                cached = true;
                Pass::Fill
            } else if step == 0 && blk > first_block {
                Pass::Window(start - b..end)
            } else {
                Pass::Window(start..end)
            };
            fetch_pass(
                denoiser,
                &tokens[..end],
                &pass,
                &rows,
                &mut logits,
                &mut stats,
            )?;
            // Predictions of every requested row, in position order (the draw order).
            let mut pred = Vec::with_capacity(rows.len());
            for row in logits.chunks_exact(vocab) {
                let row = match config.top_k {
                    None => row,
                    Some(k) => {
                        top_k_filter(row, k, &mut filtered);
                        &filtered[..]
                    }
                };
                pred.push(sample_row(
                    row,
                    &filters,
                    Confidence::Probability,
                    rng,
                    &mut scratch,
                ));
            }
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
            let mut committed: Vec<(usize, f64)> =
                chosen.iter().map(|&i| (active[i], conf[i])).collect();
            // Token to token (LLaDA2.1).
            let mut edited = 0;
            if let Some(e) = config.editing {
                for (&p, &(tok, c)) in rows.iter().zip(&pred) {
                    if tokens[p] != mask_id && c > e.threshold && tok != tokens[p] {
                        committed.push((p, c));
                        edited += 1;
                    }
                }
            }
            for &(p, _) in &committed {
                tokens[p] = at(p).map_or(tokens[p], |x| x.0);
            }
            committed.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            let (pos, cs): (Vec<usize>, Vec<f64>) = committed.into_iter().unzip();
            stats.steps += 1;
            on_step(&StepView {
                canvas: &tokens[..total],
                prompt_len,
                committed: &pos,
                confidences: &cs,
                step,
                total_steps,
                block: blk - first_block,
                num_blocks: num_blocks - first_block,
            });
            step += 1;
            let generated = &tokens[prompt_len..total];
            if config.editing.is_none()
                && !config.keep_after_eos
                && !config.eos_ids.is_empty()
                && output::settled_eos(generated, mask_id, &config.eos_ids).is_some()
            {
                break 'blocks;
            }
            if config.editing.is_some() && active.is_empty() && edited == 0 {
                break;
            }
        }
        // After a block: stop once an end token is in the generated region (2.0 always;
        // 2.1 when the region so far has no mask).
        if !config.keep_after_eos {
            let generated = &tokens[prompt_len..end.min(total)];
            let has_eos = generated.iter().any(|t| config.eos_ids.contains(t));
            let done = match config.editing {
                None => has_eos,
                Some(_) => has_eos && !generated.contains(&mask_id),
            };
            if done {
                break;
            }
        }
    }
    tokens.truncate(total);
    Ok(output::finish(
        tokens,
        prompt_len,
        mask_id,
        &config.eos_ids,
        config.keep_after_eos,
        stats,
    ))
}

/// `top_k_logits`: every logit below the `k`-th largest becomes `-inf` (ties kept).
fn top_k_filter(row: &[f32], k: usize, out: &mut Vec<f32>) {
    let k = k.clamp(1, row.len());
    out.clear();
    out.extend_from_slice(row);
    let (_, kth, _) = out.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    let kth = *kth;
    out.clear();
    out.extend(
        row.iter()
            .map(|&x| if x < kth { f32::NEG_INFINITY } else { x }),
    );
}

#[cfg(test)]
mod tests;
