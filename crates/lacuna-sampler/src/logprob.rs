//! Log-probabilities of committed tokens, recorded at the step that committed them.
//!
//! A diffusion model has no single left-to-right distribution: every step predicts every
//! masked position from the canvas as it then stands, and a position's token is fixed by the
//! step that commits it. So a token's log-probability here is the one *that* step's logits
//! gave it, `log_softmax(logits)[token]` over the raw logits of its row (temperature 1, no
//! top-k/top-p filter, as OpenAI reports the model's own distribution; with LLaDA's
//! classifier-free guidance the row is the guided one the sampler ranked). The alternatives
//! are the `k` most probable tokens of the same row. Dream and RND1 read position `p` from
//! row `p - 1` (their logits are shifted by one); the record follows the row the sampler
//! read. Recording is opt-in ([`Common::logprobs`](crate::Common::logprobs)): when off,
//! nothing is computed or stored.

/// One alternative token of a committing step's distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TopLogprob {
    /// Token id.
    pub token: u32,
    /// Its natural-log probability, `<= 0`.
    pub logprob: f32,
}

/// The log-probability of a committed token and the most probable alternatives, all from
/// the step that committed it.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    /// The committed token.
    pub token: u32,
    /// Its natural-log probability under the committing step's logits, `<= 0`.
    pub logprob: f32,
    /// The `k` most probable tokens of that step's row, most probable first (ties to the
    /// lower id); holds `token` whenever it is among them.
    pub top: Vec<TopLogprob>,
}

/// Most alternatives a request may ask for (OpenAI's limit).
pub const MAX_TOP_LOGPROBS: usize = 20;

/// The record of `token` from one row of `logits`, with its `top` most probable alternatives
/// (fewer when the row is shorter). Computed in f64: `(l - max) - ln Σ exp(l - max)`.
pub fn token_logprob(logits: &[f32], token: u32, top: usize) -> TokenLogprob {
    let max = logits
        .iter()
        .copied()
        .filter(|l| !l.is_nan())
        .fold(f32::NEG_INFINITY, f32::max);
    let max = f64::from(max);
    // ln Σ exp(l - max), kept apart from `max` so that large logits lose no precision.
    let ln_sum = logits
        .iter()
        .filter(|l| !l.is_nan())
        .map(|&l| (f64::from(l) - max).exp())
        .sum::<f64>()
        .ln();
    let lp = |id: usize| {
        let l = f64::from(logits[id]);
        // A NaN logit carries no probability; -inf is its log.
        if l.is_nan() {
            f32::NEG_INFINITY
        } else {
            ((l - max - ln_sum).min(0.0)) as f32
        }
    };
    // One pass keeping the `top` best ids, most probable first, ties to the lower id (an equal
    // later id never displaces an earlier one): no vocabulary-sized index per token.
    let key = |i: usize| {
        let l = logits[i];
        if l.is_nan() { f32::NEG_INFINITY } else { l }
    };
    let mut top_ids: Vec<usize> = Vec::with_capacity(top.min(logits.len()));
    if top > 0 {
        for i in 0..logits.len() {
            let ki = key(i);
            if let Some(&last) = top_ids.last()
                && top_ids.len() == top
                && key(last).total_cmp(&ki).is_ge()
            {
                continue;
            }
            let at = top_ids.partition_point(|&j| key(j).total_cmp(&ki).is_ge());
            if top_ids.len() == top {
                top_ids.pop();
            }
            top_ids.insert(at, i);
        }
    }
    // Ids come from a row of `vocab_size` logits; a vocabulary beyond u32 cannot occur.
    TokenLogprob {
        token,
        logprob: logits
            .get(token as usize)
            .map_or(f32::NEG_INFINITY, |_| lp(token as usize)),
        top: top_ids
            .into_iter()
            .map(|i| TopLogprob {
                token: i as u32,
                logprob: lp(i),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests;
