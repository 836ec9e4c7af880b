//! ggml's reference quantizers for IQ4_NL and IQ4_XS (`quantize_row_iq4_nl_ref`,
//! `quantize_row_iq4_xs_ref`, both `quantize_row_iq4_nl_impl` without importance weights).

use super::{BlockIQ4NL, BlockIQ4XS, KVALUES_IQ4NL};
use crate::QK_K;
use crate::block::QuantizeBlock;
use crate::kquants::GROUP_MAX_EPS;
use crate::scalar::{fp32_to_fp16, nearest_int};

/// ggml's `best_index_int8` over the 16 sorted levels, as in the llama.cpp our oracle
/// vendors (llama-cpp-sys-2 0.1.161): clamp to the ends, bisect, then pick the nearer
/// neighbour with f32 differences (ties go up). NaN falls through every comparison to 15.
/// (Newer ggml bisects on doubled midpoints instead; the two differ only for NaN, which
/// that version maps to 0, and for ties within f32 rounding.)
fn best_index(x: f32) -> u8 {
    let val = |i: usize| f32::from(KVALUES_IQ4NL[i]);
    if x <= val(0) {
        return 0;
    }
    if x >= val(15) {
        return 15;
    }
    let (mut ml, mut mu) = (0usize, 15usize);
    while mu - ml > 1 {
        let mav = (ml + mu) / 2;
        if x < val(mav) {
            mu = mav;
        } else {
            ml = mav;
        }
    }
    if x - val(mu - 1) < val(mu) - x {
        (mu - 1) as u8
    } else {
        mu as u8
    }
}

/// The per-32 search of `quantize_row_iq4_nl_impl` (weights `x²`): returns the scale and
/// fills `l`, or returns `None` (leaving `l` alone) for a group below `GROUP_MAX_EPS`.
fn search(xb: &[f32], l: &mut [u8], ntry: i32) -> Option<f32> {
    let v0 = f32::from(KVALUES_IQ4NL[0]);
    let mut amax = 0.0f32;
    let mut max = 0.0f32;
    for &v in xb {
        if v.abs() > amax {
            amax = v.abs();
            max = v;
        }
    }
    if amax < GROUP_MAX_EPS {
        return None;
    }
    let mut d = if ntry > 0 { -max / v0 } else { max / v0 };
    let mut id = 1.0 / d;
    let (mut sumqx, mut sumq2) = (0.0f32, 0.0f32);
    for (j, &x) in xb.iter().enumerate() {
        let li = best_index(id * x);
        l[j] = li;
        let q = f32::from(KVALUES_IQ4NL[usize::from(li)]);
        let w = x * x;
        sumqx += w * q * x;
        sumq2 += w * q * q;
    }
    d = if sumq2 > 0.0 { sumqx / sumq2 } else { 0.0 };
    let mut best = d * sumqx;
    for itry in -ntry..=ntry {
        id = (itry + i32::from(KVALUES_IQ4NL[0])) as f32 / max;
        sumqx = 0.0;
        sumq2 = 0.0;
        for &x in xb {
            let q = f32::from(KVALUES_IQ4NL[usize::from(best_index(id * x))]);
            let w = x * x;
            sumqx += w * q * x;
            sumq2 += w * q * q;
        }
        if sumq2 > 0.0 && sumqx * sumqx > best * sumq2 {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    Some(d)
}

fn pack(l: &[u8], q4: &mut [u8]) {
    for i in 0..l.len() / 32 {
        for j in 0..16 {
            q4[16 * i + j] = l[32 * i + j] | (l[32 * i + 16 + j] << 4);
        }
    }
}

impl QuantizeBlock<32> for BlockIQ4NL {
    /// `quantize_row_iq4_nl_ref`: one search pass (`ntry = -1`) from `d = max / -127`.
    ///
    /// For a block below `GROUP_MAX_EPS` ggml writes `d = 0` and packs whatever its `L`
    /// buffer still holds from the previous block (uninitialized for the first); here those
    /// indices are the level nearest 0 instead. Dequantized, both are all zeros.
    fn quantize(x: &[f32; 32]) -> Self {
        let mut l = [best_index(0.0); 32];
        let d = search(x, &mut l, -1).unwrap_or(0.0);
        let mut y = Self {
            d: fp32_to_fp16(d),
            qs: [0; 16],
        };
        pack(&l, &mut y.qs);
        y
    }
}

impl BlockIQ4NL {
    /// `quantize_iq4_nl` without importance weights (`ggml_quantize_chunk`, what
    /// llama-quantize writes): the search with `ntry = 7`, then every index re-derived from
    /// the unrounded scale (all nearest-0 for a block below `GROUP_MAX_EPS`, `d = 0`).
    pub fn quantize_chunk(x: &[f32; 32]) -> Self {
        let mut l = [0u8; 32];
        let d = search(x, &mut l, 7).unwrap_or(0.0);
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        for (li, &v) in l.iter_mut().zip(x) {
            *li = best_index(id * v);
        }
        let mut y = Self {
            d: fp32_to_fp16(d),
            qs: [0; 16],
        };
        pack(&l, &mut y.qs);
        y
    }
}

impl QuantizeBlock<QK_K> for BlockIQ4XS {
    /// `quantize_row_iq4_xs_ref`: per sub-block search with `ntry = 7`, sub-block scales to
    /// 6 bits against `d = -max_scale / 32`, indices recomputed from the rounded scales.
    fn quantize(x: &[f32; QK_K]) -> Self {
        let mut l = [0u8; QK_K];
        let mut scales = [0f32; QK_K / 32];
        let mut max_scale = 0.0f32;
        let mut amax_scale = 0.0f32;
        for ib in 0..QK_K / 32 {
            let s =
                search(&x[32 * ib..32 * ib + 32], &mut l[32 * ib..32 * ib + 32], 7).unwrap_or(0.0);
            scales[ib] = s;
            if s.abs() > amax_scale {
                amax_scale = s.abs();
                max_scale = s;
            }
        }
        let d = -max_scale / 32.0;
        let mut y = Self {
            d: fp32_to_fp16(d),
            scales_h: 0,
            scales_l: [0; QK_K / 64],
            qs: [0; QK_K / 2],
        };
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        for ib in 0..QK_K / 32 {
            let li = nearest_int(id * scales[ib]).clamp(-32, 31);
            let dl = d * li as f32;
            let idl = if dl != 0.0 { 1.0 / dl } else { 0.0 };
            for j in 0..32 {
                l[32 * ib + j] = best_index(idl * x[32 * ib + j]);
            }
            let lu = (li + 32) as u8;
            let (l_l, l_h) = (lu & 0xf, lu >> 4);
            if ib % 2 == 0 {
                y.scales_l[ib / 2] = l_l;
            } else {
                y.scales_l[ib / 2] |= l_l << 4;
            }
            y.scales_h |= u16::from(l_h) << (2 * (ib % 8));
        }
        pack(&l, &mut y.qs);
        y
    }
}
