//! The per-step bookkeeping every sampler shares: the canvas, committing a step's choice,
//! the step view for streaming, the settled-end-token stop, the counters and the cache plan.

use std::ops::Range;

use crate::cache::CachePlan;
use crate::common::Common;
use crate::constraint::{self, ConstraintState};
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

/// The canvas row that predicts position `p`: `p - 1` for shifted logits (position 0 by
/// row 0), else `p`.
fn row_of(shifted: bool, p: usize) -> usize {
    if shifted { p.saturating_sub(1) } else { p }
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
    /// Logits of the last [`Canvas::fetch`], `rows x vocab` (restricted by the constraint at
    /// masked positions).
    pub(crate) logits: Vec<f32>,
    /// Canvas rows of [`Canvas::logits`], ascending.
    rows: Vec<usize>,
    /// Whether position `p` is read from row `p - 1` (Dream and RND1's shifted logits).
    shifted: bool,
    /// The structured-output constraint on the generated region, if any.
    constraint: Option<Box<dyn ConstraintState>>,
    /// With log-probabilities requested: the rows of the last fetch (ascending), and the
    /// record of each generated position (see [`crate::logprob`]).
    logprobs: Option<Logprobs>,
}

/// What log-probability recording keeps between a fetch and its commit.
struct Logprobs {
    /// Alternatives per token.
    top: usize,
    /// One per generated position.
    records: Vec<Option<TokenLogprob>>,
}

impl<'c> Canvas<'c> {
    /// The prompt followed by `common.gen_length` masks and `common.suffix`, to decode with
    /// `denoiser` under `plan`; rejects an empty vocabulary and a cache the denoiser does not
    /// keep, and a constraint no region of `gen_length` tokens can satisfy.
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
        let mut constraint = common
            .constraint
            .as_ref()
            .map(|c| c.0.start(common.gen_length, mask_id));
        if let Some(c) = &mut constraint
            && !c.completable(&tokens[prompt.len()..len])
        {
            return Err(ConfigError::ConstraintUnsatisfiable {
                gen_length: common.gen_length,
            });
        }
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
            rows: Vec::new(),
            shifted: false,
            constraint,
            logprobs: common.logprobs.map(|top| Logprobs {
                top,
                records: vec![None; common.gen_length],
            }),
        })
    }

    /// Marks the samplers whose logits are shifted by one (row `p - 1` predicts position
    /// `p`, as Dream's and RND1's), so that log-probabilities and the constraint read the row
    /// they read.
    pub(crate) fn shifted(mut self) -> Self {
        self.shifted = true;
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
        self.rows.clear();
        self.rows.extend_from_slice(rows);
        fetch_pass(
            denoiser,
            &self.tokens[..seen],
            &pass,
            rows,
            &mut self.logits,
            &mut self.stats,
        )?;
        self.restrict_rows();
        Ok(())
    }

    /// Restricts each fetched row that predicts a masked position of the generated region
    /// to the tokens that keep the region completable.
    fn restrict_rows(&mut self) {
        let Some(c) = &mut self.constraint else {
            return;
        };
        let (start, end, vocab) = (self.prompt_len, self.len, self.vocab);
        let region = &self.tokens[start..end];
        for (i, &row) in self.rows.iter().enumerate() {
            let p = row + usize::from(self.shifted);
            if (start..end).contains(&p) && self.tokens[p] == self.mask_id {
                c.restrict(
                    region,
                    p - start,
                    &mut self.logits[i * vocab..(i + 1) * vocab],
                );
            }
        }
    }

    /// Applies the constraint to the commits just written at `pos` (over `prev`, the tokens
    /// they replaced): when the region is no longer completable, the commits are replayed
    /// one by one in order, a new token that breaks it is replaced by the best token of its
    /// row that keeps it, and an edit of a committed token that breaks it is dropped.
    /// Returns which commits stand.
    fn enforce(&mut self, pos: &[usize], prev: &[u32]) -> Vec<bool> {
        let mut kept = vec![true; pos.len()];
        let Some(c) = &mut self.constraint else {
            return kept;
        };
        let (start, end, vocab) = (self.prompt_len, self.len, self.vocab);
        if c.completable(&self.tokens[start..end]) {
            return kept;
        }
        let wanted: Vec<u32> = pos.iter().map(|&p| self.tokens[p]).collect();
        for (&p, &t) in pos.iter().zip(prev) {
            self.tokens[p] = t;
        }
        let mut row = vec![0.0f32; vocab];
        for (k, &p) in pos.iter().enumerate() {
            self.tokens[p] = wanted[k];
            if !(start..end).contains(&p) || c.completable(&self.tokens[start..end]) {
                continue;
            }
            self.tokens[p] = prev[k];
            if prev[k] != self.mask_id {
                kept[k] = false;
                continue;
            }
            let r = row_of(self.shifted, p);
            match self.rows.binary_search(&r) {
                Ok(i) => row.copy_from_slice(&self.logits[i * vocab..(i + 1) * vocab]),
                Err(_) => row.fill(0.0),
            }
            c.restrict(&self.tokens[start..end], p - start, &mut row);
            match constraint::argmax_finite(&row) {
                // Token ids fit u32 (GGUF ids are u32).
                Some(t) => self.tokens[p] = t as u32,
                None => kept[k] = false,
            }
        }
        kept
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
        let prev: Vec<u32> = chosen
            .iter()
            .map(|&i| self.tokens[pred.positions[i]])
            .collect();
        let (pos, cs) = pred.commit(&mut self.tokens, chosen);
        let kept = self.enforce(&pos, &prev);
        let (pos, cs): (Vec<usize>, Vec<f64>) = pos
            .into_iter()
            .zip(cs)
            .zip(&kept)
            .filter(|(_, k)| **k)
            .map(|(x, _)| x)
            .unzip();
        self.record_logprobs(&pos);
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

    /// Records the log-probabilities of the tokens just committed at `pos`, from the rows of
    /// the last fetch (a commit always follows the fetch its predictions came from). A
    /// position whose row was not fetched (LLaDA2 keeping a prompt mask) gets none.
    fn record_logprobs(&mut self, pos: &[usize]) {
        let Some(l) = &mut self.logprobs else {
            return;
        };
        let vocab = self.vocab;
        for &p in pos {
            let token = self.tokens[p];
            let Some(slot) = p
                .checked_sub(self.prompt_len)
                .and_then(|g| l.records.get_mut(g))
            else {
                continue;
            };
            let row = row_of(self.shifted, p);
            let Ok(r) = self.rows.binary_search(&row) else {
                continue;
            };
            let Some(logits) = self.logits.get(r * vocab..(r + 1) * vocab) else {
                continue;
            };
            *slot = Some(logprob::token_logprob(logits, token, l.top));
        }
    }
}
