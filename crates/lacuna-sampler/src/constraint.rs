//! Constrained decoding on a canvas: the generated region must be a word of a language
//! (a JSON schema's, a regex's), whichever positions a step commits.
//!
//! A sampler sees the language only through [`ConstraintState`]: whether a region with some
//! positions still masked can be completed into a word ([`ConstraintState::completable`]),
//! the logits of a masked position restricted to the tokens that keep it completable
//! ([`ConstraintState::restrict`]), and the most likely completion of a run of positions
//! under per-position scores ([`ConstraintState::most_likely`], for samplers without masks).
//! The shared canvas ([`crate::canvas`]) applies them at every fetch and commit, so every
//! sampler, cache policy and parallel rule is constrained the same way:
//!
//! 1. each fetched row of a masked position is restricted before the sampler reads it, so
//!    the sampler draws from the model's distribution over the tokens that keep the region
//!    completable (argmax, Gumbel draws, confidences and entropies all see that restriction);
//! 2. a step's commits are checked together: if the region is no longer completable (two
//!    tokens possible alone can be impossible together), they are applied one by one in
//!    commit order, and a token that breaks completability is replaced by the best token of
//!    its row that keeps it (an edit of a committed token is dropped instead).
//!
//! "Exact" means every final region is a word of the language (cut at its first end token);
//! it does not mean the model's distribution conditioned on the language (each step
//! restricts its own per-position distributions).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// A compiled constraint: starts one [`ConstraintState`] per generation.
pub trait Constraint: Send + Sync + fmt::Debug {
    /// The state of one generation whose region has `len` positions; `free` is the token id
    /// that marks a position not yet decided (the mask id).
    fn start(&self, len: usize, free: u32) -> Box<dyn ConstraintState>;
}

/// One generation's view of its constraint. Each call gets the whole region as it stands
/// (positions holding the `free` id are undecided); a state may cache work between calls on
/// the same region.
pub trait ConstraintState: Send {
    /// Whether the undecided positions of `region` can be filled so that the region is a
    /// word of the language.
    fn completable(&mut self, region: &[u32]) -> bool;

    /// Sets to `-inf` the logit of every token that would make `region` impossible to
    /// complete if placed at position `pos` (undecided in `region`). Leaves at least one
    /// token when `region` is completable.
    fn restrict(&mut self, region: &[u32], pos: usize, logits: &mut [f32]);

    /// The tokens for positions `range` (each undecided in `region`) that maximize the sum of
    /// `scores` (`range.len()` rows of per-token scores, e.g. log-probabilities) among the
    /// fillings that keep `region` completable; `None` when none does.
    fn most_likely(
        &mut self,
        region: &[u32],
        range: Range<usize>,
        scores: &[f32],
    ) -> Option<Vec<u32>>;
}

/// A shared, compiled constraint in a sampler config; configs compare equal when they share
/// the same compiled constraint.
#[derive(Clone)]
pub struct ConstraintRef(pub Arc<dyn Constraint>);

impl ConstraintRef {
    /// Wraps a compiled constraint.
    pub fn new(c: Arc<dyn Constraint>) -> Self {
        ConstraintRef(c)
    }
}

impl fmt::Debug for ConstraintRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for ConstraintRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ConstraintRef {}

/// The index of the largest of `logits` (the lowest index among equals), `None` when every
/// value is `-inf`.
pub(crate) fn argmax_finite(logits: &[f32]) -> Option<usize> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &v) in logits.iter().enumerate() {
        if v > f32::NEG_INFINITY && best.is_none_or(|(_, b)| v > b) {
            best = Some((i, v));
        }
    }
    best.map(|(i, _)| i)
}
