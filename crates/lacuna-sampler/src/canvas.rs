//! The per-step bookkeeping every sampler shares: the canvas, committing a step's choice,
//! the step view for streaming, the settled-end-token stop, the counters and the cache plan.

use std::ops::Range;

use crate::cache::CachePlan;
use crate::common::Common;
use crate::denoiser::{Denoiser, fetch_pass};
use crate::error::{ConfigError, Error};
use crate::logprob::{self, TokenLogprob};
use crate::output::{self, Generation, Stats, StepView};
use crate::select::Predictions;

/// Where a step stands in the schedule, for its [`StepView`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct StepAt {
    pub(crate) step: usize,
    pub(crate) total_steps: usize,
    pub(crate) block: usize,
    pub(crate) num_blocks: usize,
}

/// A generation's canvas and what it has counted so far.
pub(crate) struct Canvas<'c> {
    /// Prompt, committed tokens and masks, then the infill suffix ([`Common::suffix`]);
    /// longer than the prompt and `gen_length` only with a suffix or after [`Canvas::pad_to`].
    pub(crate) tokens: Vec<u32>,
    pub(crate) prompt_len: usize,
    /// Prompt and generated region: what steps show and the result holds.
    len: usize,
    pub(crate) mask_id: u32,
    /// Logits per row.
    pub(crate) vocab: usize,
    common: &'c Common,
    pub(crate) stats: Stats,
    plan: CachePlan,
    /// Logits of the last [`Canvas::fetch`], `rows x vocab`.
    pub(crate) logits: Vec<f32>,
    /// With log-probabilities requested: the rows of the last fetch (ascending), and the
    /// record of each generated position (see [`crate::logprob`]).
    logprobs: Option<Logprobs>,
}

/// What log-probability recording keeps between a fetch and its commit.
struct Logprobs {
    /// Alternatives per token.
    top: usize,
    /// Whether position `p` is read from row `p - 1` (Dream and RND1's shifted logits).
    shifted: bool,
    /// Canvas rows of [`Canvas::logits`], in order.
    rows: Vec<usize>,
    /// One per generated position.
    records: Vec<Option<TokenLogprob>>,
}

impl<'c> Canvas<'c> {
    /// The prompt followed by `common.gen_length` masks and `common.suffix`, to decode with
    /// `denoiser` under `plan`; rejects an empty vocabulary and a cache the denoiser does not
    /// keep.
    pub(crate) fn new<D: Denoiser>(
        denoiser: &D,
        prompt: &[u32],
        common: &'c Common,
        mask_id: u32,
        plan: CachePlan,
    ) -> Result<Self, ConfigError> {
        let vocab = denoiser.vocab_size();
        if vocab == 0 {
            return Err(ConfigError::EmptyVocab);
        }
        plan.check_denoiser(denoiser)?;
        let len = prompt.len() + common.gen_length;
        let mut tokens = prompt.to_vec();
        tokens.resize(len, mask_id);
        tokens.extend_from_slice(&common.suffix);
        Ok(Self {
            tokens,
            prompt_len: prompt.len(),
            len,
            mask_id,
            vocab,
            common,
            stats: Stats::default(),
            plan,
            logits: Vec::new(),
            logprobs: common.logprobs.map(|top| Logprobs {
                top,
                shifted: false,
                rows: Vec::new(),
                records: vec![None; common.gen_length],
            }),
        })
    }

    /// Marks the samplers whose logits are shifted by one (row `p - 1` predicts position
    /// `p`, as Dream's and RND1's), so that log-probabilities read the row they read.
    pub(crate) fn shifted(mut self) -> Self {
        if let Some(l) = &mut self.logprobs {
            l.shifted = true;
        }
        self
    }

    /// Prompt and generated region, in positions.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends masks up to `padded` positions (LLaDA2 decodes whole blocks); steps show and
    /// the result keeps only the first [`Canvas::len`]. Never called with a suffix (LLaDA2
    /// refuses to infill).
    pub(crate) fn pad_to(&mut self, padded: usize) {
        debug_assert!(
            self.tokens.len() == self.len,
            "padding after an infill suffix"
        );
        self.tokens.resize(padded.max(self.len), self.mask_id);
    }

    /// Positions that are neither masks nor generated: the prompt's and the suffix's
    /// (masked for LLaDA's unconditional CFG pass, as its `prompt_index = x != mask_id`).
    pub(crate) fn given(&self) -> Vec<usize> {
        let prompt = (0..self.prompt_len).filter(|&p| self.tokens[p] != self.mask_id);
        prompt.chain(self.len..self.tokens.len()).collect()
    }

    /// Masked positions in `range`, ascending.
    pub(crate) fn masked(&self, range: Range<usize>) -> Vec<usize> {
        range.filter(|&p| self.tokens[p] == self.mask_id).collect()
    }

    /// Whether `range` still holds a mask.
    pub(crate) fn has_mask(&self, range: Range<usize>) -> bool {
        self.tokens[range].contains(&self.mask_id)
    }

    /// A new block begins (see [`CachePlan::begin_block`]).
    pub(crate) fn begin_block(&mut self) {
        self.plan.begin_block();
    }

    /// Logits of `rows` into [`Canvas::logits`], through the pass the cache plan picks for
    /// a step of `block`; the denoiser sees the whole canvas.
    pub(crate) fn fetch<D: Denoiser>(
        &mut self,
        denoiser: &mut D,
        rows: &[usize],
        block: Range<usize>,
    ) -> Result<(), Error<D::Error>> {
        self.fetch_upto(denoiser, rows, block, self.tokens.len())
    }

    /// [`Canvas::fetch`] with the denoiser seeing the canvas up to `seen` only (LLaDA2 shows
    /// it up to the current block's end).
    pub(crate) fn fetch_upto<D: Denoiser>(
        &mut self,
        denoiser: &mut D,
        rows: &[usize],
        block: Range<usize>,
        seen: usize,
    ) -> Result<(), Error<D::Error>> {
        let pass = self.plan.pass(rows, block, seen);
        if let Some(l) = &mut self.logprobs {
            l.rows.clear();
            l.rows.extend_from_slice(rows);
        }
        fetch_pass(
            denoiser,
            &self.tokens[..seen],
            &pass,
            rows,
            &mut self.logits,
            &mut self.stats,
        )
    }

    /// Commits entries `chosen` of `pred` (reported in that order), counts the step, reports
    /// it to `on_step`, and returns true when generation may stop at a settled end token
    /// (never with `keep_after_eos` or without end tokens).
    pub(crate) fn commit(
        &mut self,
        pred: &Predictions,
        chosen: &[usize],
        at: StepAt,
        on_step: &mut impl FnMut(&StepView<'_>),
    ) -> bool {
        let (pos, cs) = pred.commit(&mut self.tokens, chosen);
        self.record_logprobs(pred, chosen);
        self.stats.steps += 1;
        let canvas = &self.tokens[..self.len];
        on_step(&StepView {
            canvas,
            prompt_len: self.prompt_len,
            suffix: &self.common.suffix,
            committed: &pos,
            confidences: &cs,
            draft: 0,
            step: at.step,
            total_steps: at.total_steps,
            block: at.block,
            num_blocks: at.num_blocks,
            logprobs: self.logprobs.as_ref().map(|l| &l.records[..]),
        });
        let c = self.common;
        !c.keep_after_eos
            && !c.eos_ids.is_empty()
            && output::settled_eos(&canvas[self.prompt_len..], self.mask_id, &c.eos_ids).is_some()
    }

    /// The result: the canvas without padding, the tokens cut at the first end token unless
    /// `keep_after_eos`.
    pub(crate) fn finish(mut self) -> Generation {
        self.tokens.truncate(self.len);
        output::finish(
            self.tokens,
            self.prompt_len,
            self.mask_id,
            &self.common.eos_ids,
            self.common.keep_after_eos,
            self.stats,
            self.logprobs.map(|l| l.records),
        )
    }

    /// Records the log-probabilities of the tokens `chosen` of `pred` commits, from the
    /// rows of the last fetch (a commit always follows the fetch its predictions came
    /// from). A position whose row was not fetched (LLaDA2 keeping a prompt mask) gets none.
    fn record_logprobs(&mut self, pred: &Predictions, chosen: &[usize]) {
        let Some(l) = &mut self.logprobs else {
            return;
        };
        let vocab = self.vocab;
        for &i in chosen {
            let (p, token) = (pred.positions[i], pred.tokens[i]);
            let Some(slot) = p
                .checked_sub(self.prompt_len)
                .and_then(|g| l.records.get_mut(g))
            else {
                continue;
            };
            let row = if l.shifted { p.saturating_sub(1) } else { p };
            let Ok(r) = l.rows.binary_search(&row) else {
                continue;
            };
            let Some(logits) = self.logits.get(r * vocab..(r + 1) * vocab) else {
                continue;
            };
            *slot = Some(logprob::token_logprob(logits, token, l.top));
        }
    }
}
