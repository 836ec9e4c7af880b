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
}

/// When a [`CachePlan`] refreshes the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refresh {
    /// Fast-dLLM: a fill at every block's first step (the module docs).
    EveryBlock,
    /// LLaDA2's exact cache under block-causal attention: one fill at the first step; every
    /// later step recomputes the current block, reaching back over the block of the step
    /// before when the block changed (its tokens became final only after that step).
    /// Cached positions never attend to anything that changed since they were computed.
    Once,
}

/// The state of a policy during a generation: whether the current block's fill has run and
/// which block the last step decoded.
#[derive(Debug, Clone)]
pub(crate) struct CachePlan {
    policy: CachePolicy,
    refresh: Refresh,
    filled: bool,
    /// Start of the block the last step decoded ([`Refresh::Once`] only).
    last_start: Option<usize>,
}

impl CachePlan {
    /// Fast-dLLM's prefix and dual caches (LLaDA, Dream).
    pub(crate) fn new(policy: CachePolicy) -> Self {
        Self {
            policy,
            refresh: Refresh::EveryBlock,
            filled: false,
            last_start: None,
        }
    }

    /// LLaDA2's exact finished-block cache: one fill, then the current block as a window
    /// (the previous block too at a block's first step). Under it the window always ends at
    /// the block's end, so `Prefix` and `Dual` would be the same (LLaDA2 accepts `Prefix`).
    pub(crate) fn block_causal(policy: CachePolicy) -> Self {
        Self {
            refresh: Refresh::Once,
            ..Self::new(policy)
        }
    }

    /// Rejects a policy other than `None` for a denoiser that keeps no cache.
    pub(crate) fn check_denoiser<D: Denoiser>(&self, denoiser: &D) -> Result<(), ConfigError> {
        self.policy.check_denoiser(denoiser)
    }

    /// A new block starts: under Fast-dLLM's policies its first step that runs the denoiser
    /// refreshes the cache.
    pub(crate) fn begin_block(&mut self) {
        if self.refresh == Refresh::EveryBlock {
            self.filled = false;
        }
    }

    /// The pass of a step that asks for `rows` (ascending) while decoding `block` of a canvas
    /// of `len` positions.
    pub(crate) fn pass(&mut self, rows: &[usize], block: Range<usize>, len: usize) -> Pass {
        if self.policy == CachePolicy::None {
            return Pass::Full;
        }
        let reach_back = match self.refresh {
            Refresh::Once => self.last_start.replace(block.start),
            Refresh::EveryBlock => None,
        };
        if !self.filled {
            self.filled = true;
            return Pass::Fill;
        }
        let first = rows.first().copied().unwrap_or(block.start);
        let last = rows.last().map_or(block.end, |&r| r + 1);
        let start = block.start.min(first).min(reach_back.unwrap_or(usize::MAX));
        let end = match (self.refresh, self.policy) {
            (Refresh::EveryBlock, CachePolicy::Prefix) => len,
            _ => block.end.max(last),
        };
        Pass::Window(start..end.min(len))
    }
}

#[cfg(test)]
mod tests;
