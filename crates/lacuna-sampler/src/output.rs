//! What a sampler reports: per-step views for streaming and the final result.

use crate::logprob::TokenLogprob;

/// One denoising step, as seen by the `on_step` callback (the streaming canvas view).
#[derive(Debug, Clone, Copy)]
pub struct StepView<'a> {
    /// The whole canvas after this step (prompt, committed tokens, masks).
    pub canvas: &'a [u32],
    /// Where the generated region starts in `canvas`.
    pub prompt_len: usize,
    /// The infill suffix that follows the generated region
    /// ([`Common::suffix`](crate::Common::suffix)), fixed for the whole generation; empty
    /// without one.
    pub suffix: &'a [u32],
    /// Canvas positions committed this step, most confident first.
    pub committed: &'a [usize],
    /// The confidence each committed position was ranked by (same order as `committed`).
    pub confidences: &'a [f64],
    /// Positions at the end of `canvas` that are a draft, not settled: DiffusionGemma's
    /// argmax of the canvas being denoised, redrawn at every step until the encoder commits
    /// it (its `committed` are the positions accepted this step). 0 for the masked-diffusion
    /// samplers, whose committed tokens are final.
    pub draft: usize,
    /// 0-based index of this step in the schedule.
    pub step: usize,
    /// Steps in the schedule (an upper bound in parallel mode).
    pub total_steps: usize,
    /// 0-based index of the current block.
    pub block: usize,
    /// Number of blocks.
    pub num_blocks: usize,
    /// With [`Common::logprobs`](crate::Common::logprobs) set: one entry per generated
    /// position (index 0 is `canvas[prompt_len]`), the record of the step that committed
    /// it, `None` while masked. `None` when not requested.
    pub logprobs: Option<&'a [Option<TokenLogprob>]>,
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Finish {
    /// The schedule ran to its end (or no masks remained).
    #[default]
    Completed,
    /// An end token was committed with every position before it committed, so generation
    /// stopped there; later steps could not have changed any earlier token.
    Eos {
        /// Index of the end token within the generated region.
        index: usize,
        /// The end token.
        token: u32,
    },
}

/// Counters describing a generation; the default is all zero, [`Finish::Completed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Steps that ran the denoiser.
    pub steps: usize,
    /// Calls to [`Denoiser::logits`](crate::Denoiser::logits) (two per step with CFG).
    pub denoiser_calls: usize,
    /// Logit rows requested in total.
    pub logit_rows: usize,
    /// Denoiser calls that refreshed the key/value cache (0 without a cache policy).
    pub cache_fills: usize,
    /// Canvas positions run through the model, summed over calls: the canvas length for a
    /// full pass, the window's length for a cached one.
    pub positions_computed: usize,
    /// Why it ended.
    pub finish: Finish,
}

/// The result of a generation.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The generated tokens (after the prompt): cut before the first end token unless
    /// `keep_after_eos` was set.
    pub tokens: Vec<u32>,
    /// The final canvas, prompt included, not cut (masks may remain after an early stop).
    pub canvas: Vec<u32>,
    /// Counters.
    pub stats: Stats,
    /// With [`Common::logprobs`](crate::Common::logprobs) set: one entry per token of
    /// `tokens`, from the step that committed it (`None` for a position never committed,
    /// which still holds the mask). `None` when not requested.
    pub logprobs: Option<Vec<Option<TokenLogprob>>>,
}

/// The first end token of the generated region if every position before it is committed,
/// as `(index in the generated region, token)`.
pub(crate) fn settled_eos(
    generated: &[u32],
    mask_id: u32,
    eos_ids: &[u32],
) -> Option<(usize, u32)> {
    for (i, &t) in generated.iter().enumerate() {
        if t == mask_id {
            return None;
        }
        if eos_ids.contains(&t) {
            return Some((i, t));
        }
    }
    None
}

/// Builds the result: `tokens` cut at the first end token unless `keep_after_eos`.
pub(crate) fn finish(
    canvas: Vec<u32>,
    prompt_len: usize,
    mask_id: u32,
    eos_ids: &[u32],
    keep_after_eos: bool,
    mut stats: Stats,
    logprobs: Option<Vec<Option<TokenLogprob>>>,
) -> Generation {
    let generated = &canvas[prompt_len..];
    let tokens = if keep_after_eos {
        generated.to_vec()
    } else if let Some((index, token)) = settled_eos(generated, mask_id, eos_ids) {
        stats.finish = Finish::Eos { index, token };
        generated[..index].to_vec()
    } else {
        generated.to_vec()
    };
    let logprobs = logprobs.map(|mut l| {
        l.truncate(tokens.len());
        l
    });
    Generation {
        tokens,
        canvas,
        stats,
        logprobs,
    }
}
