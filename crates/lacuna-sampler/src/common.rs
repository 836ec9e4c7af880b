//! The settings every sampler shares, and the range checks their configs use.

use crate::constraint::ConstraintRef;
use crate::error::ConfigError;

/// The settings every sampler config holds in its `common` field: what to generate and
/// where to stop. The defaults are the same for every sampler.
///
/// The step count is not here although every config has one: its meaning and official
/// default differ by sampler (LLaDA: the whole schedule, 128; Dream: 512; LLaDA2: per block,
/// 32; RND1: forward passes, 128), so a shared default would silently be wrong for three of
/// them. Nor is the temperature (f32 in Dream's transcription, beside a greedy switch in
/// RND1's) or the cache policy (RND1 has none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Common {
    /// Tokens to generate (default 128).
    pub gen_length: usize,
    /// The model's `[MASK]` token id; required.
    pub mask_id: Option<u32>,
    /// End tokens (EOS/EOT) at which generation stops and the result is cut.
    pub eos_ids: Vec<u32>,
    /// Run the whole schedule and return everything after the first end token too.
    pub keep_after_eos: bool,
    /// Record each committed token's log-probability with this many alternatives
    /// ([`Generation::logprobs`](crate::Generation::logprobs), see [`crate::logprob`]);
    /// `None` (the default) records nothing. At most
    /// [`MAX_TOP_LOGPROBS`](crate::logprob::MAX_TOP_LOGPROBS).
    pub logprobs: Option<usize>,
    /// Infilling: tokens that follow the generated region (the canvas is prompt, then
    /// `gen_length` masks, then these). Every position sees them (bidirectional samplers);
    /// they are never masked, and the result holds the middle only. Empty: plain generation.
    pub suffix: Vec<u32>,
    /// Structured output: the generated region must be a word of this constraint's language
    /// (see [`crate::constraint`]). `None`: free text.
    pub constraint: Option<ConstraintRef>,
}

impl Default for Common {
    fn default() -> Self {
        Self {
            gen_length: 128,
            mask_id: None,
            eos_ids: Vec::new(),
            keep_after_eos: false,
            logprobs: None,
            suffix: Vec::new(),
            constraint: None,
        }
    }
}

impl Common {
    /// Rejects a zero `gen_length`, a missing mask id and more than
    /// [`MAX_TOP_LOGPROBS`](crate::logprob::MAX_TOP_LOGPROBS) alternatives; returns the
    /// mask id.
    pub fn validate(&self) -> Result<u32, ConfigError> {
        if self.gen_length == 0 {
            return Err(ConfigError::ZeroGenLength);
        }
        if let Some(k) = self.logprobs {
            let max = crate::logprob::MAX_TOP_LOGPROBS;
            in_range("logprobs", k as f64, k <= max, "at most 20")?;
        }
        self.mask_id.ok_or(ConfigError::MissingMaskId)
    }
}

/// [`ConfigError::OutOfRange`] for `name = value` unless `ok`.
pub(crate) fn in_range(
    name: &'static str,
    value: f64,
    ok: bool,
    expected: &'static str,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError::OutOfRange {
            name,
            value,
            expected,
        })
    }
}

/// Rejects a NaN, infinite or negative `value`.
pub(crate) fn non_negative(name: &'static str, value: f64) -> Result<(), ConfigError> {
    in_range(
        name,
        value,
        value.is_finite() && value >= 0.0,
        "a finite number >= 0",
    )
}

/// Rejects `Some(0)`: a top-k that keeps nothing (`None` disables it).
pub(crate) fn check_top_k(top_k: Option<usize>) -> Result<(), ConfigError> {
    if top_k == Some(0) {
        Err(ConfigError::ZeroTopK)
    } else {
        Ok(())
    }
}
