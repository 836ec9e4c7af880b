//! Vocab-row math in f64: softmax, argmax, Gumbel-max, categorical draws (the entropy is
//! [`crate::sampling::entropy`]).
//!
//! The exponentials and their sums are `lacuna-cpu`'s vectorized f64 row kernels
//! ([`lacuna_cpu::sum_exp_f32`] and kin): within 1 ulp of libm's `exp` per term, summed in 8
//! lanes in a fixed order, the same bits on every CPU path and thread count. The official
//! code's float64 softmax on PyTorch sums in its own order, so these are not its bits: the
//! committed cases compare decisions, which both reproduce.

use crate::rng::UniformSource;

/// The largest value of a row (NaN ignored), in f64; `-inf` for an empty row.
fn max_f32(row: &[f32]) -> f64 {
    lacuna_cpu::argmax(row).map_or(f64::NEG_INFINITY, |(_, v)| f64::from(v))
}

/// `softmax(row)` in f64, written into `out`: `exp(x - max) / Σ exp(x - max)`.
/// `-inf` entries get probability 0. `row` must hold a finite value.
pub fn softmax_into(row: &[f64], out: &mut Vec<f64>) {
    let max = lacuna_cpu::argmax_f64(row).map_or(f64::NEG_INFINITY, |(_, v)| v);
    out.clear();
    out.resize(row.len(), 0.0);
    let sum = lacuna_cpu::exp_into(row, max, out);
    for p in out.iter_mut() {
        *p /= sum;
    }
}

/// The probability of token `index` under `softmax(row)`, in f64, without materialising the
/// distribution: the same operations as [`softmax_into`] for that one entry.
pub fn softmax_at(row: &[f32], index: usize) -> f64 {
    let max = max_f32(row);
    let sum = lacuna_cpu::sum_exp_f32(row, max);
    lacuna_cpu::exp_f64(f64::from(row[index]) - max) / sum
}

/// Index of the largest value; the first one on ties (as `torch.argmax`). `row` must hold a
/// value that is not NaN.
pub fn argmax_f32(row: &[f32]) -> usize {
    lacuna_cpu::argmax(row).map_or(0, |(i, _)| i)
}

/// Index of the largest value, first on ties; NaN never wins.
pub fn argmax_f64(row: &[f64]) -> usize {
    match lacuna_cpu::argmax_f64(row) {
        Some((i, v)) if v > f64::NEG_INFINITY => i,
        // Nothing above -inf (or only NaN): the first index, as a strict scan from -inf gives.
        _ => 0,
    }
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
