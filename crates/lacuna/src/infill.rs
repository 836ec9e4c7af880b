//! Infilling's length search ([`GenerateRequest::infill_lengths`]): a masked diffusion model
//! fills a middle of exactly as many tokens as it is given, so a caller who does not know the
//! hole's length can offer a few and keep the fill the model itself likes best.
//!
//! Each length runs as its own generation (same prompt, suffix, seed and settings, `steps`
//! scaled to the length), then one more forward scores how well its fill leads into the
//! suffix ([`fill_score`]); the fill with the highest score wins, the shorter on a tie.

use std::time::Instant;

use lacuna_sampler::{Denoiser, StepView};
use lacuna_tokenizer::Tokenizer;

use crate::Result;
use crate::prepare::{Prepared, Search};
use crate::request::{GenerateRequest, Output};

/// Most lengths one search tries (each is a whole generation).
pub const MAX_INFILL_LENGTHS: usize = 8;

/// One middle length an infill search tried.
#[derive(Debug, Clone, PartialEq)]
pub struct InfillCandidate {
    /// The middle's length (masks laid down between prompt and suffix).
    pub length: usize,
    /// Its [`fill_score`] (`-inf` when nothing was committed).
    pub score: f64,
    /// The fill's tokens (the middle cut at its first end token).
    pub tokens: usize,
    /// The fill.
    pub text: String,
}

/// What an infill length search tried and which it returned.
#[derive(Debug, Clone, PartialEq)]
pub struct InfillSearch {
    /// Index into `candidates` of the fill returned.
    pub chosen: usize,
    /// Every length tried, shortest first.
    pub candidates: Vec<InfillCandidate>,
}

impl InfillSearch {
    /// The candidate returned.
    pub fn chosen(&self) -> &InfillCandidate {
        &self.candidates[self.chosen]
    }
}

/// Suffix tokens a fill's score reads (the suffix's head: where a fill of the wrong length
/// or content shows; a long suffix, a file's remainder, costs no more than this).
pub const SCORED_SUFFIX_TOKENS: usize = 32;

/// The score of a fill: how well it leads into the suffix. The canvas is rebuilt as the answer
/// reads — prompt, the fill (cut at its end token), then the suffix with its first
/// [`SCORED_SUFFIX_TOKENS`] tokens masked — and one forward gives the mean natural-log
/// probability of those suffix tokens at their masked positions (`records`: their log-probs).
/// A fill of the wrong length puts the suffix at the wrong positions, and a fill of the wrong
/// content makes it unlikely, while the fill's own tokens say little: each was committed when
/// the model was already sure of it. `-inf` for no tokens.
pub fn fill_score(suffix_logprobs: &[f64]) -> f64 {
    if suffix_logprobs.is_empty() {
        f64::NEG_INFINITY
    } else {
        suffix_logprobs.iter().sum::<f64>() / suffix_logprobs.len() as f64
    }
}

/// The log-probabilities of the suffix's head after `fill` (see [`fill_score`]): one full
/// forward of `denoiser`. `shifted`: position `p` is read from row `p - 1` (Dream, RND1).
fn suffix_logprobs<D: Denoiser>(
    denoiser: &mut D,
    prompt: &[u32],
    fill: &[u32],
    suffix: &[u32],
    mask_id: u32,
    shifted: bool,
    stats: &mut lacuna_sampler::Stats,
) -> std::result::Result<Vec<f64>, lacuna_sampler::Error<D::Error>> {
    let k = suffix.len().min(SCORED_SUFFIX_TOKENS);
    let start = prompt.len() + fill.len();
    let mut canvas = Vec::with_capacity(start + suffix.len());
    canvas.extend_from_slice(prompt);
    canvas.extend_from_slice(fill);
    canvas.extend(std::iter::repeat_n(mask_id, k));
    canvas.extend_from_slice(&suffix[k..]);
    // A shifted model reads position `p` from row `p - 1`, which always exists: the prompt
    // holds at least BOS (and an empty prompt with an empty fill reads nothing before it).
    let rows: Vec<usize> = (start..start + k)
        .filter_map(|p| if shifted { p.checked_sub(1) } else { Some(p) })
        .collect();
    let vocab = denoiser.vocab_size();
    let mut logits = vec![0.0f32; rows.len() * vocab];
    denoiser
        .logits(&canvas, &rows, &mut logits)
        .map_err(lacuna_sampler::Error::Denoiser)?;
    stats.denoiser_calls += 1;
    stats.logit_rows += rows.len();
    stats.positions_computed += canvas.len();
    let skipped = k - rows.len();
    Ok(rows
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let row = &logits[i * vocab..(i + 1) * vocab];
            f64::from(lacuna_sampler::logprob::token_logprob(row, suffix[skipped + i], 0).logprob)
        })
        .collect())
}

/// The request of one candidate `length` of `request`'s search (see
/// [`GenerateRequest::infill_lengths`]).
pub(crate) fn candidate(request: &GenerateRequest, length: usize) -> GenerateRequest {
    let mut r = request.clone();
    r.infill_lengths.clear();
    r.gen_length = length;
    r.block_length = request
        .block_length
        .map(|b| if b > 0 && length % b == 0 { b } else { length });
    let blocks = r.block_length.map_or(1, |b| (length / b.max(1)).max(1));
    let scaled = (request.steps * length)
        .div_ceil(request.gen_length.max(1))
        .max(1);
    r.steps = scaled.div_ceil(blocks) * blocks;
    r
}

/// Runs every candidate of `search` on `denoiser` and returns the best-scoring fill, its
/// `stats` and `timings` summed over all of them. `on_step` is called once, with the chosen
/// canvas whole (candidates that lose are never shown: streamed text cannot be taken back).
pub(crate) fn search<D, F>(
    denoiser: &mut D,
    prepared: &Prepared,
    search: &Search,
    tokenizer: &Tokenizer,
    mask_id: u32,
    start: Instant,
    mut on_step: F,
) -> Result<Output>
where
    D: lacuna_sampler::CanvasDenoiser,
    crate::Error: From<lacuna_sampler::Error<D::Error>>,
    F: FnMut(&StepView<'_>),
{
    let mut candidates = Vec::with_capacity(search.candidates.len());
    let mut best: Option<(usize, Output)> = None;
    let (mut step_ms, mut encode_ms) = (Vec::new(), Vec::new());
    let mut stats = lacuna_sampler::Stats::default();
    for c in &search.candidates {
        let mut out = crate::run::run_one(&mut *denoiser, c, tokenizer, mask_id, start, |_| {})?;
        // With `keep_after_eos` the tokens are not cut: the fill still ends at its first end
        // token.
        let end = out
            .tokens
            .iter()
            .position(|t| search.eos_ids.contains(t))
            .unwrap_or(out.tokens.len());
        let fill = &out.tokens[..end];
        let common = c.sampler.common();
        let shifted = matches!(
            c.sampler,
            crate::prepare::SamplerConfig::Dream(_) | crate::prepare::SamplerConfig::Rnd1(_)
        );
        let scored = suffix_logprobs(
            &mut *denoiser,
            &out.prompt_tokens,
            fill,
            &common.suffix,
            mask_id,
            shifted,
            &mut out.stats,
        )?;
        let score = fill_score(&scored);
        candidates.push(InfillCandidate {
            length: c.gen_length,
            score,
            tokens: fill.len(),
            text: tokenizer.decode(fill)?,
        });
        step_ms.append(&mut out.timings.step_ms);
        encode_ms.append(&mut out.timings.encode_ms);
        add_stats(&mut stats, &out.stats);
        let better = best
            .as_ref()
            .is_none_or(|(b, _)| score > candidates[*b].score);
        if better {
            best = Some((candidates.len() - 1, out));
        }
    }
    let (chosen, mut out) = best.expect("a search has at least one candidate");
    stats.finish = out.stats.finish;
    out.stats = stats;
    out.timings.step_ms = step_ms;
    out.timings.encode_ms = encode_ms;
    out.timings.prepare_s = prepared.prepare_s;
    let committed: Vec<usize> = (out.prompt_tokens.len()..out.canvas.len())
        .filter(|&p| out.canvas[p] != mask_id)
        .collect();
    let confidences = vec![1.0; committed.len()];
    let suffix = &search.candidates[chosen].sampler.common().suffix;
    on_step(&StepView {
        canvas: &out.canvas,
        prompt_len: out.prompt_tokens.len(),
        suffix,
        committed: &committed,
        confidences: &confidences,
        draft: 0,
        step: out.stats.steps.saturating_sub(1),
        total_steps: out.stats.steps,
        block: 0,
        num_blocks: 1,
        logprobs: out.logprobs.as_deref(),
    });
    out.infill = Some(InfillSearch { chosen, candidates });
    out.timings.total_s = start.elapsed().as_secs_f64();
    Ok(out)
}

/// Adds the counters of one candidate to the search's (the finish is set by the caller).
fn add_stats(total: &mut lacuna_sampler::Stats, s: &lacuna_sampler::Stats) {
    total.steps += s.steps;
    total.denoiser_calls += s.denoiser_calls;
    total.logit_rows += s.logit_rows;
    total.cache_fills += s.cache_fills;
    total.positions_computed += s.positions_computed;
}
