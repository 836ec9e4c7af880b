//! Cache policies: which [`Pass`] each denoising step runs, after Fast-dLLM's
//! `generate_with_prefix_cache` and `generate_with_dual_cache` (LLaDA `generate.py`, Dream
//! `generation_utils_block.py`).
//!
//! Both refresh at the same point: the first step of every block that runs the denoiser is a
//! full forward that also fills the cache ([`Pass::Fill`], the same logits as an uncached
//! step, bit for bit). The other steps of the block recompute only a window:
//!
//! * `prefix`: the current block and everything after it (`x[:, block_start:]`); the
//!   prefix's keys and values come from the block's fill. Approximation: the prefix attends
//!   bidirectionally to the block and suffix, which change during the block, so its cached
//!   keys and values go stale.
//! * `dual`: the current block only (`x[:, block_start:block_end]` with `replace_position`);
//!   the prefix's and the masked suffix's keys and values both come from the fill.
//!   Approximation: as `prefix`, plus the suffix's stale keys and values.
//!
//! The window always reaches back to the first requested row: Dream's shifted logits read
//! row `block_start - 1` for position `block_start`, so while that position is masked the
//! window starts one row earlier. (Fast-dLLM instead always commits `block_start` at the
//! fill step and reads a shifted window row for it; here every step keeps its sampler's
//! commit rule, so the fill step is exactly the uncached step.)

use std::ops::Range;

use crate::denoiser::{Denoiser, Pass};
use crate::error::ConfigError;

/// How a generation reuses per-layer keys and values between steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CachePolicy {
    /// Every step runs the whole canvas (exact; the official samplers).
    #[default]
    None,
    /// Fast-dLLM PrefixCache: steps after a block's first recompute the block and the suffix.
    Prefix,
    /// Fast-dLLM DualCache: steps after a block's first recompute the block alone.
    Dual,
}

impl CachePolicy {
    /// The policy's name as the CLI and result files spell it.
    pub fn name(self) -> &'static str {
        match self {
            CachePolicy::None => "none",
            CachePolicy::Prefix => "prefix",
            CachePolicy::Dual => "dual",
        }
    }

    /// Rejects a policy other than `None` for a denoiser that keeps no cache.
    pub(crate) fn check_denoiser<D: Denoiser>(self, denoiser: &D) -> Result<(), ConfigError> {
        if self == CachePolicy::None || denoiser.supports_cache() {
            Ok(())
        } else {
            Err(ConfigError::CacheUnsupported {
                policy: self.name(),
            })
        }
    }

    /// Parses [`CachePolicy::name`]'s spelling.
    pub fn from_name(name: &str) -> Option<CachePolicy> {
        [CachePolicy::None, CachePolicy::Prefix, CachePolicy::Dual]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

impl std::fmt::Display for CachePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The per-block state of a policy: whether the current block's fill has run.
#[derive(Debug, Clone)]
pub(crate) struct CachePlan {
    policy: CachePolicy,
    filled: bool,
}

impl CachePlan {
    pub(crate) fn new(policy: CachePolicy) -> Self {
        Self {
            policy,
            filled: false,
        }
    }

    /// A new block starts: its first step that runs the denoiser refreshes the cache.
    pub(crate) fn begin_block(&mut self) {
        self.filled = false;
    }

    /// The pass of a step that asks for `rows` (ascending) while decoding `block` of a canvas
    /// of `len` positions.
    pub(crate) fn pass(&mut self, rows: &[usize], block: Range<usize>, len: usize) -> Pass {
        if self.policy == CachePolicy::None {
            return Pass::Full;
        }
        if !self.filled {
            self.filled = true;
            return Pass::Fill;
        }
        let first = rows.first().copied().unwrap_or(block.start);
        let last = rows.last().map_or(block.end, |&r| r + 1);
        let start = block.start.min(first);
        let end = match self.policy {
            CachePolicy::Prefix => len,
            _ => block.end.max(last),
        };
        Pass::Window(start..end.min(len))
    }
}

#[cfg(test)]
mod tests;
