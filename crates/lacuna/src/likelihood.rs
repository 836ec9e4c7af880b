//! Scoring text: a log-likelihood for every token of a given text under the model, the
//! masked-model estimate of the LLaDA paper (see [`lacuna_sampler::likelihood`] for the
//! estimator and how each token's value is defined). What the server's `echo` with
//! `logprobs` returns, and what multiple-choice evaluations rank answers by.

use lacuna_models::Arch;
pub use lacuna_sampler::likelihood::{
    DEFAULT_SAMPLES, EchoLogprobs, Estimate, LikelihoodConfig, MAX_SAMPLES, echo_passes,
};

use crate::prepare::Preparer;
use crate::{Error, Result};

/// The most forward passes one scoring may take ([`echo_passes`]); more is
/// [`Error::LikelihoodTooCostly`].
pub const MAX_PASSES: usize = 1 << 16;

/// How to score a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scoring {
    /// Mask sets per estimate (default [`DEFAULT_SAMPLES`]); estimates over at most this
    /// many sets are exact.
    pub samples: usize,
    /// Seeds the Monte Carlo estimates.
    pub seed: u64,
    /// Alternatives per token (0 to [`crate::settings::MAX_TOP_LOGPROBS`]).
    pub top: usize,
}

impl Default for Scoring {
    fn default() -> Self {
        Self {
            samples: DEFAULT_SAMPLES,
            seed: 0,
            top: 0,
        }
    }
}

impl Preparer {
    /// Checks `tokens` and `scoring` against the model and gives the estimator's settings.
    pub(crate) fn scoring(&self, tokens: &[u32], scoring: &Scoring) -> Result<LikelihoodConfig> {
        if self.gemma.is_some() || self.arch == Arch::DiffusionGemma {
            return Err(Error::LikelihoodUnsupported {
                arch: self.arch.name(),
            });
        }
        if tokens.is_empty() {
            return Err(Error::LikelihoodEmpty);
        }
        let vocab = self.tokenizer.n_vocab();
        if let Some((position, &token)) = tokens
            .iter()
            .enumerate()
            .find(|&(_, &t)| t as usize >= vocab)
        {
            return Err(Error::PromptToken {
                token,
                position,
                vocab,
            });
        }
        if tokens.len() > self.context {
            return Err(Error::ContextOverflow {
                prompt: tokens.len(),
                gen_length: 0,
                total: tokens.len(),
                context: self.context,
            });
        }
        if !(1..=MAX_SAMPLES).contains(&scoring.samples) {
            return Err(Error::LikelihoodSamples {
                samples: scoring.samples,
                max: MAX_SAMPLES,
            });
        }
        let passes = echo_passes(tokens.len(), scoring.samples)
            + if scoring.top > 0 { tokens.len() } else { 0 };
        if passes > MAX_PASSES {
            return Err(Error::LikelihoodTooCostly {
                tokens: tokens.len(),
                samples: scoring.samples,
                passes,
                max: MAX_PASSES,
            });
        }
        if scoring.top > crate::settings::MAX_TOP_LOGPROBS {
            return Err(crate::SettingsError::TooManyLogprobs {
                requested: scoring.top,
            }
            .into());
        }
        Ok(LikelihoodConfig {
            mask_id: self.mask_id,
            shifted: matches!(self.arch, Arch::Dream | Arch::Rnd1),
            samples: scoring.samples,
            seed: scoring.seed,
            top: scoring.top,
        })
    }
}
