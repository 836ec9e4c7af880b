//! Plain vocab-row math in f64: softmax, argmax, Gumbel-max, categorical draws (the entropy
//! is [`crate::sampling::entropy`]).
//!
//! Kept scalar and simple on purpose (sums run left to right so a transcription can
//! reproduce them exactly); a vectorised version may later come from `lacuna-cpu`.

use crate::rng::UniformSource;

/// `softmax(row)` in f64, written into `out`: `exp(x - max) / Σ exp(x - max)`, the sum
/// taken left to right. `-inf` entries get probability 0. `row` must hold a finite value.
pub fn softmax_into(row: &[f64], out: &mut Vec<f64>) {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    out.clear();
    out.extend(row.iter().map(|&x| (x - max).exp()));
    let sum: f64 = out.iter().sum();
    for p in out.iter_mut() {
        *p /= sum;
    }
}

/// The probability of token `index` under `softmax(row)`, in f64, without materialising the
/// distribution: the same operations as [`softmax_into`] for that one entry.
pub fn softmax_at(row: &[f32], index: usize) -> f64 {
    let max = row
        .iter()
        .map(|&x| f64::from(x))
        .fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = row.iter().map(|&x| (f64::from(x) - max).exp()).sum();
    (f64::from(row[index]) - max).exp() / sum
}

/// Index of the largest value; the first one on ties (as `torch.argmax`). `row` must hold a
/// value that is not NaN.
pub fn argmax_f32(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in row.iter().enumerate().skip(1) {
        if v > row[best] {
            best = i;
        }
    }
    best
}

/// Index of the largest value, first on ties; NaN never wins.
pub fn argmax_f64(row: &[f64]) -> usize {
    let mut best = 0;
    let mut best_v = f64::NEG_INFINITY;
    for (i, &v) in row.iter().enumerate() {
        if v > best_v {
            best = i;
            best_v = v;
        }
    }
    best
}

/// LLaDA's Gumbel-max draw in float64, exactly the official form
/// `argmax(exp(l) / (-ln u)^temperature)`, one `u` per token in token order.
pub fn gumbel_argmax(row: &[f32], temperature: f64, rng: &mut impl UniformSource) -> usize {
    let mut best = 0;
    let mut best_v = f64::NEG_INFINITY;
    for (i, &l) in row.iter().enumerate() {
        let u = rng.next_f64();
        // pow(x, 1) is exactly x; skipping the call keeps the value and saves most of the time.
        let noise = if temperature == 1.0 {
            -u.ln()
        } else {
            (-u.ln()).powf(temperature)
        };
        let v = f64::from(l).exp() / noise;
        if v > best_v {
            best = i;
            best_v = v;
        }
    }
    best
}

/// A categorical draw from normalised `probs` by inverse CDF with one uniform `u`: the first
/// index whose running sum (left to right) exceeds `u`; the last non-zero entry if rounding
/// leaves the total at or below `u`.
pub fn categorical(probs: &[f64], u: f64) -> usize {
    let mut cum = 0.0;
    let mut last_nonzero = 0;
    for (i, &p) in probs.iter().enumerate() {
        if p > 0.0 {
            last_nonzero = i;
        }
        cum += p;
        if cum > u {
            return i;
        }
    }
    last_nonzero
}

#[cfg(test)]
mod tests;
