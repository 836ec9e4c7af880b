//! Softmax, log-softmax and top-k over one vocabulary row (the sampler's confidence math).
//! Maxima ignore NaN; ties in top-k keep the lower index first.

use crate::Error;
use crate::ops::exp::exp;
use crate::ops::{LANES, multiversion};

/// Largest value of `x` (NaN ignored), `-inf` for an empty or all-NaN row.
#[inline(always)]
fn max_of(x: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; LANES];
    let chunks = x.chunks_exact(LANES);
    for (l, &v) in chunks.remainder().iter().enumerate() {
        acc[l] = acc[l].max(v);
    }
    for c in chunks {
        for l in 0..LANES {
            acc[l] = acc[l].max(c[l]);
        }
    }
    acc.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v))
}

/// `sum(e^(x - m))` in f64 lanes.
#[inline(always)]
fn sum_exp(x: &[f32], m: f32) -> f64 {
    let mut acc = [0.0f64; LANES];
    for xc in x.chunks(LANES) {
        for (l, &v) in xc.iter().enumerate() {
            acc[l] += f64::from(exp(v - m));
        }
    }
    acc.iter().sum()
}

multiversion! {
    fn softmax_body(x: &mut [f32]) {
        let m = max_of(x);
        let mut acc = [0.0f64; LANES];
        for xc in x.chunks_mut(LANES) {
            for (l, v) in xc.iter_mut().enumerate() {
                *v = exp(*v - m);
                acc[l] += f64::from(*v);
            }
        }
        let s = acc.iter().sum::<f64>() as f32;
        for v in x.iter_mut() {
            *v /= s;
        }
    }
}

/// Softmax of `x` in place: `e^(x - max) / sum`, the sum in f64 (attention's
/// single-block path). An empty row is left as is.
pub(crate) fn softmax(x: &mut [f32]) {
    if !x.is_empty() {
        softmax_body(x);
    }
}

multiversion! {
    fn log_softmax_body(x: &mut [f32]) {
        let m = max_of(x);
        let lse = m + (sum_exp(x, m).ln() as f32);
        for v in x.iter_mut() {
            *v -= lse;
        }
    }
}

/// Log-softmax of `x` in place: `x - (max + ln(sum(e^(x - max))))`.
pub fn log_softmax(x: &mut [f32]) {
    if !x.is_empty() {
        log_softmax_body(x);
    }
}

/// Index and value of the largest element (first one on ties, NaN ignored); `None` for an
/// empty or all-NaN row.
pub fn argmax(x: &[f32]) -> Option<(usize, f32)> {
    argmax_f32_body(x)
}

/// [`argmax`] of an f64 row.
pub fn argmax_f64(x: &[f64]) -> Option<(usize, f64)> {
    argmax_f64_body(x)
}

/// The element types [`argmax_lanes`] runs over.
trait Float: Copy + PartialOrd {
    const NEG_INFINITY: Self;
}

impl Float for f32 {
    const NEG_INFINITY: f32 = f32::NEG_INFINITY;
}

impl Float for f64 {
    const NEG_INFINITY: f64 = f64::NEG_INFINITY;
}

/// One pass: each lane keeps its first strict maximum and where it was (NaN is never
/// greater); the lanes then give the largest value, the lowest index on ties. A row with
/// nothing above -inf gives its first -inf (none: empty or all NaN).
#[inline(always)]
fn argmax_lanes<T: Float>(x: &[T]) -> Option<(usize, T)> {
    let first_neg_inf = || {
        x.iter()
            .position(|&v| v == T::NEG_INFINITY)
            .map(|i| (i, T::NEG_INFINITY))
    };
    if x.len() > u32::MAX as usize {
        // Indices beyond u32: one lane, in usize.
        let mut best: Option<(usize, T)> = None;
        for (i, &v) in x.iter().enumerate() {
            if v > best.map_or(T::NEG_INFINITY, |b| b.1) {
                best = Some((i, v));
            }
        }
        return best.or_else(first_neg_inf);
    }
    let mut best = [T::NEG_INFINITY; LANES];
    let mut at = [u32::MAX; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for (c, chunk) in chunks.enumerate() {
        let base = (c * LANES) as u32;
        for l in 0..LANES {
            let v = chunk[l];
            let gt = v > best[l];
            best[l] = if gt { v } else { best[l] };
            at[l] = if gt { base + l as u32 } else { at[l] };
        }
    }
    let base = (x.len() - rest.len()) as u32;
    for (l, &v) in rest.iter().enumerate() {
        if v > best[l] {
            best[l] = v;
            at[l] = base + l as u32;
        }
    }
    let mut win: Option<(u32, T)> = None;
    for l in 0..LANES {
        if at[l] == u32::MAX {
            continue;
        }
        win = match win {
            Some((i, m)) if m > best[l] || (m == best[l] && i < at[l]) => Some((i, m)),
            _ => Some((at[l], best[l])),
        };
    }
    win.map(|(i, m)| (i as usize, m)).or_else(first_neg_inf)
}

multiversion! {
    fn argmax_f32_body(x: &[f32]) -> Option<(usize, f32)> {
        argmax_lanes(x)
    }
}

multiversion! {
    fn argmax_f64_body(x: &[f64]) -> Option<(usize, f64)> {
        argmax_lanes(x)
    }
}

/// The two largest elements, largest first (lower index first on ties, NaN ignored);
/// `None` when the row has fewer than two non-NaN values.
pub fn top2(x: &[f32]) -> Option<[(usize, f32); 2]> {
    let mut best = [(usize::MAX, f32::NEG_INFINITY); 2];
    let mut seen = 0usize;
    for (i, &v) in x.iter().enumerate() {
        if v.is_nan() {
            continue;
        }
        seen += 1;
        if seen == 1 || v > best[0].1 {
            best[1] = best[0];
            best[0] = (i, v);
        } else if seen == 2 || v > best[1].1 {
            best[1] = (i, v);
        }
    }
    (seen >= 2).then_some(best)
}

/// The `k` largest elements, largest first (lower index first on ties, NaN ignored).
/// Returns fewer than `k` when the row has fewer non-NaN values.
pub fn top_k(x: &[f32], k: usize) -> Result<Vec<(usize, f32)>, Error> {
    if k > x.len() {
        return Err(Error::BadShape {
            what: "top_k",
            detail: "k is larger than the row",
        });
    }
    let mut best: Vec<(usize, f32)> = Vec::with_capacity(k + 1);
    for (i, &v) in x.iter().enumerate() {
        if k == 0 || v.is_nan() || (best.len() == k && v <= best[k - 1].1) {
            continue;
        }
        let at = best.partition_point(|&(_, b)| b >= v);
        best.insert(at, (i, v));
        best.truncate(k);
    }
    Ok(best)
}
