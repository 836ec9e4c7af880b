//! Fast-dLLM's confidence-aware parallel decoding, an opt-in replacement for the official
//! fixed schedule: each step commits every masked position of the current block that is
//! confident enough (always at least the most confident one) and a block ends when it has no
//! masks left, so easy spans take few steps.

use std::ops::Range;

use crate::canvas::{Canvas, StepAt};
use crate::error::{ConfigError, Error};
use crate::output::StepView;
use crate::select::{self, Predictions};

/// Which positions a parallel step commits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParallelRule {
    /// Commit the most confident position and every other one with confidence at least this
    /// value (Fast-dLLM `threshold`, default 0.9).
    Threshold(f64),
    /// Fast-dLLM's factor rule (`get_transfer_index_dynamic`): the `j`-th most confident
    /// position (0-based) is committed while its confidence reaches `1 - factor / (j + 2)`.
    Factor(f64),
    /// The entropy-bounded rule of EB-Sampler (Ben-Hamu et al., 2025): candidates in order of
    /// confidence, the longest run whose entropies (of each position's predictive
    /// distribution, in nats) satisfy `Σ H - max H <= gamma` (always at least the most
    /// confident one). Small `gamma` commits few tokens per step, large `gamma` many.
    EntropyBound(f64),
}

/// The parallel decoding mode.
///
/// For LLaDA the confidence is the remasking strategy's (`low_confidence`: probability of the
/// chosen token; `random`: a uniform draw) and the candidates are the masked positions before
/// the end of the current block, as in Fast-dLLM's `generate`. For Dream it is the probability
/// of the sampled token (Fast-dLLM's `confidence_threshold` algorithm, whatever `alg` says;
/// `alg` and `alg_temp` are unused) over the masked positions of the current block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParallelConfig {
    /// The commit rule.
    pub rule: ParallelRule,
}

impl Default for ParallelConfig {
    fn default() -> Self {
        Self {
            rule: ParallelRule::Threshold(0.9),
        }
    }
}

impl ParallelConfig {
    /// Rejects a NaN or infinite threshold, or a factor that is not positive and finite.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self.rule {
            ParallelRule::Threshold(t) if !t.is_finite() => Err(ConfigError::OutOfRange {
                name: "threshold",
                value: t,
                expected: "a finite number (at most 1 to be useful)",
            }),
            ParallelRule::Factor(f) if !(f.is_finite() && f > 0.0) => {
                Err(ConfigError::OutOfRange {
                    name: "factor",
                    value: f,
                    expected: "a finite number above 0",
                })
            }
            ParallelRule::EntropyBound(g) if !(g.is_finite() && g >= 0.0) => {
                Err(ConfigError::OutOfRange {
                    name: "entropy bound",
                    value: g,
                    expected: "a finite number >= 0",
                })
            }
            _ => Ok(()),
        }
    }

    /// Whether [`ParallelConfig::select`] reads the candidates' entropies.
    pub fn needs_entropy(&self) -> bool {
        matches!(self.rule, ParallelRule::EntropyBound(_))
    }

    /// Indices into `conf` (one confidence per candidate) to commit, most confident first.
    /// `entropy` (one per candidate) is read by the entropy-bounded rule only and may be
    /// empty for the others.
    pub fn select(&self, conf: &[f64], entropy: &[f64]) -> Vec<usize> {
        match self.rule {
            ParallelRule::Threshold(t) => select::threshold_rule(conf, t),
            ParallelRule::Factor(f) => select::factor_rule(conf, f),
            ParallelRule::EntropyBound(g) => select::entropy_bound_rule(conf, entropy, g),
        }
    }

    /// Fast-dLLM's block-wise loop over the generated region in blocks of `block_length`:
    /// while the block holds a mask, `predict` gives the predictions of the masked
    /// positions in `scope(block)` for a step of `block`, and [`ParallelConfig::select`]'s
    /// choice is committed. Fails with [`Error::Stalled`] when a step commits only masks.
    pub(crate) fn decode<'c, E>(
        &self,
        canvas: &mut Canvas<'c>,
        block_length: usize,
        scope: impl Fn(Range<usize>) -> Range<usize>,
        mut predict: impl FnMut(
            &mut Canvas<'c>,
            &[usize],
            Range<usize>,
        ) -> Result<Predictions, Error<E>>,
        on_step: &mut impl FnMut(&StepView<'_>),
    ) -> Result<(), Error<E>> {
        let gen_length = canvas.len() - canvas.prompt_len;
        let num_blocks = gen_length / block_length;
        let mut step = 0;
        for block in 0..num_blocks {
            let start = canvas.prompt_len + block * block_length;
            let range = start..start + block_length;
            canvas.begin_block();
            while canvas.has_mask(range.clone()) {
                let cand = canvas.masked(scope(range.clone()));
                let pred = predict(canvas, &cand, range.clone())?;
                let chosen = self.select(&pred.conf, &pred.entropy);
                let at = StepAt {
                    step,
                    total_steps: gen_length,
                    block,
                    num_blocks,
                };
                let stop = canvas.commit(&pred, &chosen, at, on_step);
                if canvas.masked(scope(range.clone())).len() == cand.len() {
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
}
