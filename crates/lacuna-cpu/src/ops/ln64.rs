//! A vectorizable f64 natural logarithm and the row sum `Σ p ln(p + eps)` built on it (Dream's
//! negative-entropy confidence reads it over each row of probabilities), compiled for
//! AVX-512, AVX2+FMA and portable by [`multiversion`], bit-identical on every path.
//!
//! `ln` is fdlibm's `__ieee754_log` without its branches: `x = 2^k m` with `m` in
//! `[sqrt(1/2), sqrt(2))`, `ln m = f - (f²/2 - s (f²/2 + R(s²)))` for `f = m - 1`,
//! `s = f / (2 + f)` and fdlibm's degree-14 minimax `R`, plus `k ln 2` in two parts: within
//! 1 ulp of libm (the test sweeps 2^-1074 to 2^1023). 0 gives -inf, negatives and NaN give
//! NaN, +inf gives +inf. The sum runs in 8 lanes in a fixed order, as [`super::exp64`]'s.

use crate::ops::multiversion;

const LANES: usize = 8;
const LN2_HI: f64 = 0.6931471803691238;
const LN2_LO: f64 = 1.9082149292705877e-10;
const LG1: f64 = 0.6666666666666735;
const LG2: f64 = 0.3999999999940942;
const LG3: f64 = 0.2857142874366239;
const LG4: f64 = 0.22222198432149784;
const LG5: f64 = 0.1818357216161805;
const LG6: f64 = 0.15313837699209373;
const LG7: f64 = 0.14798198605116586;
/// Bits of sqrt(1/2): `bits(x) - SQRT_HALF_BITS` has `k` in its exponent field.
const SQRT_HALF_BITS: u64 = 0x3FE6_A09E_667F_3BCD;
/// 2^52 and its bits.
const TWO52: f64 = 4_503_599_627_370_496.0;
const TWO52_BITS: u64 = 0x4330_0000_0000_0000;
/// 2^54, which lifts a subnormal into the normal range.
const TWO54: f64 = 18_014_398_509_481_984.0;

/// `ln x` in f64 (see the module docs), branch-free.
#[inline(always)]
pub(crate) fn ln(x: f64) -> f64 {
    let tiny = x < f64::MIN_POSITIVE;
    let xs = if tiny { x * TWO54 } else { x };
    let bits = xs.to_bits();
    let t = bits.wrapping_sub(SQRT_HALF_BITS);
    // k: the exponent of x relative to sqrt(1/2), t's top 12 bits as a two's complement
    // number, made an f64 by the bits of 2^52 + k + 2048 (no integer-to-float conversion:
    // 64-bit ones need AVX-512 DQ, and would leave this loop scalar without it).
    let k12 = ((t >> 52).wrapping_add(2048)) & 0xFFF;
    let k = f64::from_bits(TWO52_BITS | k12) - (TWO52 + 2048.0) - if tiny { 54.0 } else { 0.0 };
    let m = f64::from_bits(bits.wrapping_sub(t & 0xFFF0_0000_0000_0000));
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let v = k * LN2_HI - ((hfsq - (s * (hfsq + r) + k * LN2_LO)) - f);
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if x < 0.0 || x.is_nan() {
        f64::NAN
    } else if x == f64::INFINITY {
        x
    } else {
        v
    }
}

multiversion! {
    fn sum_p_ln_body(p: &[f64], eps: f64) -> f64 {
        let mut acc = [0.0f64; LANES];
        let chunks = p.chunks_exact(LANES);
        let rest = chunks.remainder();
        // A zero p adds 0, the limit of p ln p (with eps > 0 it would anyway). The product
        // is computed first and then selected: as a branch around it the loop stays scalar.
        let term = |v: f64| {
            let t = v * ln(v + eps);
            if v == 0.0 { 0.0 } else { t }
        };
        for c in chunks {
            for l in 0..LANES {
                acc[l] += term(c[l]);
            }
        }
        for (l, &v) in rest.iter().enumerate() {
            acc[l] += term(v);
        }
        acc.iter().fold(0.0, |s, &v| s + v)
    }
}

/// `ln x` in f64, the function [`sum_p_ln_p`] uses (within 1 ulp of libm's).
pub fn ln_f64(x: f64) -> f64 {
    ln(x)
}

/// `Σ p ln(p + eps)` over a row of probabilities (8 lanes, fixed order), a zero `p` adding
/// 0: Dream's negative entropy with its epsilon (`eps = 1e-10`), or minus the entropy with
/// `eps = 0`.
pub fn sum_p_ln_p(p: &[f64], eps: f64) -> f64 {
    sum_p_ln_body(p, eps)
}

#[cfg(test)]
mod tests;
