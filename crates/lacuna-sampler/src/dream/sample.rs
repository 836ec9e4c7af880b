//! Dream's `sample_tokens` (with `top_p_logits` and `top_k_logits`) for one logit row.

use crate::math;
use crate::rng::UniformSource;
use crate::sampling::{Filters, Scratch};

/// Which number `sample_tokens` returns as the confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confidence {
    /// The probability of the chosen token (`maskgit_plus`, `origin`, parallel mode).
    Probability,
    /// Top-1 minus top-2 probability (`topk_margin`).
    Margin,
    /// `Σ p ln(p + 1e-10)`, Dream's negative entropy with its epsilon: larger is surer
    /// (`entropy`; summed by [`lacuna_cpu::sum_p_ln_p`]). Not [`crate::sampling::entropy`]:
    /// the epsilon changes the numbers.
    NegEntropy,
}

/// `sample_tokens` on one row: returns `(token, confidence)`.
///
/// In order: the filters ([`Filters::apply`]; Dream's are temperature, top-p, top-k);
/// softmax in f64; at temperature > 0 a categorical draw (one `next_f64`, inverse CDF),
/// otherwise the most probable token (first on ties); then the confidence of the requested
/// kind. `row` must hold a finite value.
pub fn sample_row(
    row: &[f32],
    f: &Filters,
    kind: Confidence,
    rng: &mut impl UniformSource,
    s: &mut Scratch,
) -> (u32, f64) {
    f.apply(row, s);
    math::softmax_into(&s.logits, &mut s.probs);
    let probs = &s.probs;
    let x0 = if f.temperature > 0.0 {
        math::categorical(probs, rng.next_f64())
    } else {
        math::argmax_f64(probs)
    };
    let conf = match kind {
        Confidence::Probability => probs[x0],
        Confidence::Margin => {
            let (mut top1, mut top2) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
            for &p in probs {
                if p > top1 {
                    top2 = top1;
                    top1 = p;
                } else if p > top2 {
                    top2 = p;
                }
            }
            top1 - top2.max(0.0)
        }
        Confidence::NegEntropy => lacuna_cpu::sum_p_ln_p(probs, 1e-10),
    };
    // Token ids fit in u32 (GGUF vocabularies are u32-indexed).
    (x0 as u32, conf)
}
