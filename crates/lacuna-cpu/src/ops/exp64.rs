//! The sampler's f64 exponentials over a vocabulary row: a vectorizable f64 `exp` and the
//! sums of a softmax built on it, compiled for AVX-512, AVX2+FMA and portable (NEON on
//! aarch64) by [`multiversion`], bit-identical on every path.
//!
//! `exp` reduces by ln 2 in two parts (Cephes' split: `n * C1` is exact) and evaluates
//! `e^r` on `|r| <= ln 2 / 2` by its Taylor series to degree 13 (truncation below 0.02 ulp):
//! within 1 ulp of libm's `exp` over the whole range (the test sweeps it). Below -708 (where `e^x` nears the
//! subnormal range) it returns 0, above ln(f64::MAX) +inf, NaN for NaN. A softmax over f32
//! logits never reads those tails: every term it adds there is below 1e-307 of a sum of at
//! least 1. No table and no branch, so loops over it vectorize (glibc's scalar `exp` costs
//! ~5 ns an element, 0.6 ms a 126,464-token row).
//!
//! Sums run in [`LANES`] lanes (element `i` into lane `i % LANES`, the lanes then added left
//! to right): a fixed order, the same on every path and thread count.

use crate::ops::multiversion;

/// Lanes of the f64 accumulators (one zmm of f64).
pub(crate) const LANES: usize = 8;

const LOG2E: f64 = std::f64::consts::LOG2_E;
/// ln 2 = C1 + C2; C1 = 22713 / 32768, so `n * C1` is exact for the `n` that occur.
const C1: f64 = 0.693_145_751_953_125;
const C2: f64 = 1.428_606_820_309_417_2e-6;
/// 1.5 * 2^52: `z + SHIFT` rounds `z` to an integer held in the low bits of the sum.
const SHIFT: f64 = 6_755_399_441_055_744.0;
const SHIFT_BITS: u64 = 0x4338_0000_0000_0000;
/// 1/k! for k = 13 down to 2.
const INV_FACT: [f64; 12] = [
    1.605_904_383_682_161_3e-10,
    2.087_675_698_786_81e-9,
    2.505_210_838_544_172e-8,
    2.755_731_922_398_589e-7,
    2.755_731_922_398_589_3e-6,
    2.480_158_730_158_73e-5,
    1.984_126_984_126_984e-4,
    1.388_888_888_888_889e-3,
    8.333_333_333_333_333e-3,
    4.166_666_666_666_666_4e-2,
    1.666_666_666_666_666_6e-1,
    0.5,
];
/// Below this `exp` returns 0; above [`HIGH`], +inf.
const LOW: f64 = -708.0;
/// ln(f64::MAX).
const HIGH: f64 = 709.782_712_893_384;

/// `e^x` in f64 (see the module docs for its accuracy and range), branch-free.
#[inline(always)]
pub(crate) fn exp(x: f64) -> f64 {
    let xc = x.clamp(LOW, HIGH);
    // n = round(x / ln 2), as an f64 and as the bits of SHIFT + n.
    let kd = xc * LOG2E + SHIFT;
    let n = kd - SHIFT;
    let r = (xc - n * C1) - n * C2;
    let mut q = INV_FACT[0];
    for &c in &INV_FACT[1..] {
        q = q * r + c;
    }
    let y = 1.0 + (r + (r * r) * q);
    // 2^(n - 1) from the bits (n - 1 in -1023..=1023 for x in LOW..=HIGH): y * 2 is exact
    // and 2^n itself would overflow at n = 1024.
    let e = kd.to_bits().wrapping_sub(SHIFT_BITS).wrapping_add(1022) << 52;
    let v = (y + y) * f64::from_bits(e);
    if x < LOW {
        0.0
    } else if x > HIGH {
        f64::INFINITY
    } else if x.is_nan() {
        x
    } else {
        v
    }
}

/// The lanes of an accumulator, added left to right.
#[inline(always)]
fn lanes_sum(acc: &[f64; LANES]) -> f64 {
    acc.iter().fold(0.0, |s, &v| s + v)
}

#[inline(always)]
fn sum_exp_body<T: Copy + Into<f64>>(x: &[T], shift: f64) -> f64 {
    let mut acc = [0.0f64; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..LANES {
            acc[l] += exp(c[l].into() - shift);
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        acc[l] += exp(v.into() - shift);
    }
    lanes_sum(&acc)
}

multiversion! {
    fn sum_exp_f32_body(x: &[f32], shift: f64) -> f64 {
        sum_exp_body(x, shift)
    }
}

multiversion! {
    fn sum_exp_f64_body(x: &[f64], shift: f64) -> f64 {
        sum_exp_body(x, shift)
    }
}

multiversion! {
    fn exp_into_body(x: &[f64], shift: f64, out: &mut [f64]) -> f64 {
        let mut acc = [0.0f64; LANES];
        let n = x.len().min(out.len());
        let (x, out) = (&x[..n], &mut out[..n]);
        let split = n - n % LANES;
        for (xc, oc) in x[..split].chunks_exact(LANES).zip(out[..split].chunks_exact_mut(LANES)) {
            for l in 0..LANES {
                oc[l] = exp(xc[l] - shift);
                acc[l] += oc[l];
            }
        }
        for (l, (&v, o)) in x[split..].iter().zip(&mut out[split..]).enumerate() {
            *o = exp(v - shift);
            acc[l] += *o;
        }
        lanes_sum(&acc)
    }
}

multiversion! {
    fn exp_in_place_body(x: &mut [f64], shift: f64) -> f64 {
        let mut acc = [0.0f64; LANES];
        let mut chunks = x.chunks_exact_mut(LANES);
        for c in &mut chunks {
            for l in 0..LANES {
                c[l] = exp(c[l] - shift);
                acc[l] += c[l];
            }
        }
        for (l, v) in chunks.into_remainder().iter_mut().enumerate() {
            *v = exp(*v - shift);
            acc[l] += *v;
        }
        lanes_sum(&acc)
    }
}

#[inline(always)]
fn entropy_body<T: Copy + Into<f64>>(x: &[T], lse: f64) -> f64 {
    // -inf logits (filtered tokens) add nothing (their product would be NaN).
    let term = |v: T| {
        let v: f64 = v.into();
        let logp = v - lse;
        if v > f64::NEG_INFINITY {
            exp(logp) * logp
        } else {
            0.0
        }
    };
    let mut acc = [0.0f64; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for l in 0..LANES {
            acc[l] += term(c[l]);
        }
    }
    for (l, &v) in rest.iter().enumerate() {
        acc[l] += term(v);
    }
    -lanes_sum(&acc)
}

multiversion! {
    fn entropy_f32_body(x: &[f32], lse: f64) -> f64 {
        entropy_body(x, lse)
    }
}

multiversion! {
    fn entropy_f64_body(x: &[f64], lse: f64) -> f64 {
        entropy_body(x, lse)
    }
}

/// `e^x` in f64, the function the row sums below use (so a single term computed apart
/// matches theirs bit for bit). Within 1 ulp of libm's; 0 below -708, +inf above ln(f64::MAX).
pub fn exp_f64(x: f64) -> f64 {
    exp(x)
}

/// `Σ e^(x - shift)` over an f32 row, in f64 (8 lanes, fixed order).
pub fn sum_exp_f32(x: &[f32], shift: f64) -> f64 {
    sum_exp_f32_body(x, shift)
}

/// `Σ e^(x - shift)` over an f64 row (8 lanes, fixed order).
pub fn sum_exp_f64(x: &[f64], shift: f64) -> f64 {
    sum_exp_f64_body(x, shift)
}

/// `out[i] = e^(x[i] - shift)` over the first `min(x.len(), out.len())` elements; returns
/// their sum as [`sum_exp_f64`] adds them.
pub fn exp_into(x: &[f64], shift: f64, out: &mut [f64]) -> f64 {
    exp_into_body(x, shift, out)
}

/// [`exp_into`] in place: `x[i] = e^(x[i] - shift)`, returning the same sum.
pub fn exp_in_place(x: &mut [f64], shift: f64) -> f64 {
    exp_in_place_body(x, shift)
}

/// `-Σ p ln p` of `p = e^(x - lse)` for the log-sum-exp `lse` of an f64 row: the entropy
/// in nats of its softmax; `-inf` entries add nothing (8 lanes, fixed order).
pub fn entropy_f64(x: &[f64], lse: f64) -> f64 {
    entropy_f64_body(x, lse)
}

/// [`entropy_f64`] of an f32 row.
pub fn entropy_f32(x: &[f32], lse: f64) -> f64 {
    entropy_f32_body(x, lse)
}

#[cfg(test)]
mod tests;
