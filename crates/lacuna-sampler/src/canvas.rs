//! The per-step bookkeeping every sampler shares: the canvas, committing a step's choice,
//! the step view for streaming, the settled-end-token stop, the counters and the cache plan.

use std::ops::Range;

use crate::cache::{CachePlan, CachePolicy};
use crate::denoiser::{Denoiser, fetch_pass};
use crate::error::Error;
use crate::output::{self, Finish, Generation, Stats, StepView};
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
    /// Prompt, committed tokens and masks.
    pub(crate) tokens: Vec<u32>,
    pub(crate) prompt_len: usize,
    pub(crate) mask_id: u32,
    eos_ids: &'c [u32],
    keep_after_eos: bool,
    pub(crate) stats: Stats,
    plan: CachePlan,
    /// Logits of the last [`Canvas::fetch`], `rows x vocab`.
    pub(crate) logits: Vec<f32>,
}

impl<'c> Canvas<'c> {
    /// The prompt followed by `gen_length` masks.
    pub(crate) fn new(
        prompt: &[u32],
        gen_length: usize,
        mask_id: u32,
        eos_ids: &'c [u32],
        keep_after_eos: bool,
        cache: CachePolicy,
    ) -> Self {
        let mut tokens = prompt.to_vec();
        tokens.resize(prompt.len() + gen_length, mask_id);
        Self {
            tokens,
            prompt_len: prompt.len(),
            mask_id,
            eos_ids,
            keep_after_eos,
            stats: Stats {
                steps: 0,
                denoiser_calls: 0,
                logit_rows: 0,
                cache_fills: 0,
                positions_computed: 0,
                finish: Finish::Completed,
            },
            plan: CachePlan::new(cache),
            logits: Vec::new(),
        }
    }

    /// Masked positions in `range`, ascending.
    pub(crate) fn masked(&self, range: Range<usize>) -> Vec<usize> {
        range.filter(|&p| self.tokens[p] == self.mask_id).collect()
    }

    /// Whether `range` still holds a mask.
    pub(crate) fn has_mask(&self, range: Range<usize>) -> bool {
        self.tokens[range].contains(&self.mask_id)
    }

    /// Decoding of `block` (canvas positions) begins: the cache is refreshed at its first
    /// step that runs the denoiser.
    pub(crate) fn begin_block(&mut self) {
        self.plan.begin_block();
    }

    /// Logits of `rows` into [`Canvas::logits`], through the pass the cache policy picks
    /// for a step of `block`.
    pub(crate) fn fetch<D: Denoiser>(
        &mut self,
        denoiser: &mut D,
        rows: &[usize],
        block: Range<usize>,
    ) -> Result<(), Error<D::Error>> {
        let pass = self.plan.pass(rows, block, self.tokens.len());
        fetch_pass(
            denoiser,
            &self.tokens,
            &pass,
            rows,
            &mut self.logits,
            &mut self.stats,
        )
    }

    /// Commits candidates `chosen` of `pred`, counts the step, reports it to `on_step`, and
    /// returns true when generation should stop at a settled end token.
    pub(crate) fn commit(
        &mut self,
        pred: &Predictions,
        chosen: &[usize],
        at: StepAt,
        on_step: &mut impl FnMut(&StepView<'_>),
    ) -> bool {
        let (pos, cs) = pred.commit(&mut self.tokens, chosen);
        self.stats.steps += 1;
        on_step(&StepView {
            canvas: &self.tokens,
            prompt_len: self.prompt_len,
            committed: &pos,
            confidences: &cs,
            step: at.step,
            total_steps: at.total_steps,
            block: at.block,
            num_blocks: at.num_blocks,
        });
        !self.keep_after_eos
            && !self.eos_ids.is_empty()
            && output::settled_eos(&self.tokens[self.prompt_len..], self.mask_id, self.eos_ids)
                .is_some()
    }

    /// The result: tokens cut at the first end token unless `keep_after_eos`.
    pub(crate) fn finish(self) -> Generation {
        output::finish(
            self.tokens,
            self.prompt_len,
            self.mask_id,
            self.eos_ids,
            self.keep_after_eos,
            self.stats,
        )
    }
}
