//! ggml's scalar `ggml_vec_dot_*` (ggml-cpu/quants.c, generic versions), transcribed with
//! their float summation order, over raw ggml blocks and ggml-format activations. Tests only.

use crate::blocks::{QuantKind, decode, f16_at};

/// One activation row in ggml's form: signed quants, a scale per block (`d`), and for
/// Q8_1 the stored `s` per block (empty otherwise; Q8_K's `bsums` are summed from `q`).
pub(crate) struct GgmlActs<'a> {
    pub(crate) q: &'a [i8],
    pub(crate) d: &'a [f32],
    pub(crate) s: &'a [f32],
}

fn bsums16(q8: &[i8]) -> Vec<i32> {
    q8.chunks_exact(16)
        .map(|c| c.iter().map(|&v| i32::from(v)).sum())
        .collect()
}

/// `ggml_vec_dot_<kind>_q8_K` / `_q8_0` for one weight row (raw bytes) and one activation row.
pub(crate) fn vec_dot(kind: QuantKind, row: &[u8], x: &GgmlActs<'_>) -> f32 {
    let bsize = kind.ty().type_size();
    let block = kind.block();
    match kind {
        _ if block == 32 => {
            // sumf += sumi * (d_x * d_y), plus m * s for Q4_1/Q5_1 (`vec_dot_q4_1_q8_1`).
            let mut sumf = 0.0f32;
            for (b, raw) in row.chunks_exact(bsize).enumerate() {
                let dec = decode(kind, raw);
                let q8 = &x.q[b * 32..][..32];
                let sumi: i32 = (0..32)
                    .map(|i| i32::from(dec.q[i]) * i32::from(q8[i]))
                    .sum();
                if kind.affine_group().is_some() {
                    sumf += (dec.d * x.d[b]) * sumi as f32 + dec.aff[0] * x.s[b];
                } else {
                    sumf += sumi as f32 * (dec.d * x.d[b]);
                }
            }
            sumf
        }
        QuantKind::Q2K => {
            // `vec_dot_q2_K_q8_K`: sumf += dall * isum - dmin * summs.
            let mut sumf = 0.0f32;
            for (b, raw) in row.chunks_exact(bsize).enumerate() {
                let dec = decode(kind, raw);
                let q8 = &x.q[b * 256..][..256];
                let bs = bsums16(q8);
                let summs: i32 = (0..16).map(|j| bs[j] * i32::from(raw[j] >> 4)).sum();
                let dall = x.d[b] * dec.d;
                let dmin = x.d[b] * f16_at(raw, 82);
                let isum: i32 = (0..256)
                    .map(|i| dec.sc[i / 16] * i32::from(dec.q[i]) * i32::from(q8[i]))
                    .sum();
                sumf += dall * isum as f32 - dmin * summs as f32;
            }
            sumf
        }
        QuantKind::IQ4XS => {
            // `vec_dot_iq4_xs_q8_K`: sumf += (d4d8 * (ls - 32)) * sumi per 32.
            let mut sumf = 0.0f32;
            for (b, raw) in row.chunks_exact(bsize).enumerate() {
                let dec = decode(kind, raw);
                let q8 = &x.q[b * 256..][..256];
                let d4d8 = dec.d * x.d[b];
                for s in 0..8 {
                    let sumi: i32 = (32 * s..32 * s + 32)
                        .map(|i| i32::from(dec.q[i]) * i32::from(q8[i]))
                        .sum();
                    sumf += d4d8 * dec.sc[s] as f32 * sumi as f32;
                }
            }
            sumf
        }
        _ => {
            // Q3_K, Q4_K, Q5_K, Q6_K: 8 integer lanes, each scaled and summed in f32.
            let mut sums = [0.0f32; 8];
            let mut sumf = 0.0f32;
            for (b, raw) in row.chunks_exact(bsize).enumerate() {
                let dec = decode(kind, raw);
                let q8 = &x.q[b * block..][..block];
                let sub = kind.sub();
                let mut aux32 = [0i32; 8];
                for (i, (&w, &q)) in dec.q.iter().zip(q8).enumerate() {
                    aux32[i % 8] += dec.sc[i / sub] * (i32::from(w) * i32::from(q));
                }
                let d = dec.d * x.d[b];
                for l in 0..8 {
                    sums[l] += d * aux32[l] as f32;
                }
                if kind.has_mins() {
                    let bsums = bsums16(q8);
                    let sumi: i32 = (0..16).map(|j| bsums[j] * i32::from(dec.mins[j / 2])).sum();
                    let dmin = dec.dmin * x.d[b];
                    sumf -= dmin * sumi as f32;
                }
            }
            sumf + sums.iter().sum::<f32>()
        }
    }
}

/// Sum of the absolute values of the terms ggml adds (per block and per lane of its 8-lane
/// integer accumulator): the scale of the f32 rounding error of any summation order.
pub(crate) fn abs_terms(kind: QuantKind, row: &[u8], x: &GgmlActs<'_>) -> f64 {
    let bsize = kind.ty().type_size();
    let block = kind.block();
    let mut s = 0.0f64;
    for (b, raw) in row.chunks_exact(bsize).enumerate() {
        let dec = decode(kind, raw);
        let q8 = &x.q[b * block..][..block];
        let mut lanes = [0i64; 8];
        let mut msum = 0i64;
        for (i, (&w, &q)) in dec.q.iter().zip(q8).enumerate() {
            lanes[i % 8] += i64::from(dec.sc[i / kind.sub()]) * i64::from(w) * i64::from(q);
            msum += i64::from(dec.mins[i / 32]) * i64::from(q);
        }
        let d = f64::from(dec.d) * f64::from(x.d[b]);
        s += lanes.iter().map(|&l| (d * l as f64).abs()).sum::<f64>();
        if kind.has_mins() {
            s += (f64::from(dec.dmin) * f64::from(x.d[b]) * msum as f64).abs();
        }
        if let Some(g) = kind.affine_group() {
            for (j, c) in q8.chunks_exact(g).enumerate() {
                let sg = if g == 32 {
                    f64::from(x.s[b])
                } else {
                    f64::from(x.d[b]) * c.iter().map(|&v| f64::from(v)).sum::<f64>()
                };
                s += (f64::from(dec.aff[j]) * sg).abs();
            }
        }
    }
    s
}
