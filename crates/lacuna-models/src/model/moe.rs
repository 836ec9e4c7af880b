//! The mixture-of-experts feed-forward block of `llada-moe`, as llama.cpp's `build_moe_ffn`
//! computes it with softmax gating and no weight renormalisation: router logits, softmax
//! over all experts, the top-k experts by probability (descending), each expert's SwiGLU
//! output times its probability (times `expert_weights_scale` when that is neither 0
//! nor 1), summed in selection order.

use crate::Result;
use crate::backend::Backend;
use crate::weights::Experts;

/// Reused buffers of the MoE block.
#[derive(Debug, Default)]
pub(crate) struct MoeScratch {
    probs: Vec<f32>,
    /// `[t][k]` selected expert per slot.
    sel: Vec<usize>,
    /// `[t][k]` routing weight per slot.
    weight: Vec<f32>,
    /// Rows routed to the current expert: `(token, slot)`.
    routed: Vec<(usize, usize)>,
    xin: Vec<f32>,
    gate: Vec<f32>,
    up: Vec<f32>,
    act: Vec<f32>,
    down: Vec<f32>,
    /// `[t][k][d]` weighted expert outputs.
    slots: Vec<f32>,
}

fn grow(v: &mut Vec<f32>, n: usize) -> &mut [f32] {
    if v.len() < n {
        v.resize(n, 0.0);
    }
    &mut v[..n]
}

/// ggml's `soft_max` of one row: `exp(x - max)`, summed in f64, scaled by `1 / sum`.
pub(crate) fn softmax_row(x: &mut [f32]) {
    let max = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f64;
    for v in x.iter_mut() {
        *v = (*v - max).exp();
        sum += f64::from(*v);
    }
    let inv = (1.0 / sum) as f32;
    for v in x.iter_mut() {
        *v *= inv;
    }
}

/// Indices of the `k` largest values, largest first (ties: lower index first).
pub(crate) fn top_k(x: &[f32], k: usize, out: &mut [usize]) {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|&a, &b| x[b].total_cmp(&x[a]).then(a.cmp(&b)));
    out[..k].copy_from_slice(&idx[..k]);
}

/// `out[t x d] = MoE(xn[t x d])`.
pub(crate) fn moe_ffn<B: Backend>(
    be: &mut B,
    ex: &Experts<B::Weight>,
    xn: &[f32],
    t: usize,
    d: usize,
    out: &mut [f32],
    s: &mut MoeScratch,
) -> Result<()> {
    let m = &ex.cfg;
    let (ne, k, ff) = (m.n_expert, m.n_expert_used, m.n_ff_exp);
    let probs = grow(&mut s.probs, t * ne);
    be.matmul(xn, t, &ex.router, probs)?;
    s.sel.resize(t * k, 0);
    s.weight.resize(t * k, 0.0);
    for (ti, p) in probs.chunks_exact_mut(ne).enumerate() {
        softmax_row(p);
        top_k(p, k, &mut s.sel[ti * k..(ti + 1) * k]);
        for slot in 0..k {
            let mut w = p[s.sel[ti * k + slot]];
            if m.weights_scale != 0.0 && m.weights_scale != 1.0 {
                w *= m.weights_scale;
            }
            s.weight[ti * k + slot] = w;
        }
    }
    let slots = grow(&mut s.slots, t * k * d);
    for e in 0..ne {
        s.routed.clear();
        for ti in 0..t {
            for slot in 0..k {
                if s.sel[ti * k + slot] == e {
                    s.routed.push((ti, slot));
                }
            }
        }
        let n = s.routed.len();
        if n == 0 {
            continue;
        }
        let xin = grow(&mut s.xin, n * d);
        for (dst, &(ti, _)) in xin.chunks_exact_mut(d).zip(&s.routed) {
            dst.copy_from_slice(&xn[ti * d..(ti + 1) * d]);
        }
        let g = grow(&mut s.gate, n * ff);
        let u = grow(&mut s.up, n * ff);
        be.matmul(xin, n, &ex.gate[e], g)?;
        be.matmul(xin, n, &ex.up[e], u)?;
        let act = grow(&mut s.act, n * ff);
        be.swiglu(g, u, act)?;
        let y = grow(&mut s.down, n * d);
        be.matmul(act, n, &ex.down[e], y)?;
        for (row, &(ti, slot)) in y.chunks_exact(d).zip(&s.routed) {
            let w = s.weight[ti * k + slot];
            let dst = &mut slots[(ti * k + slot) * d..][..d];
            for (o, &v) in dst.iter_mut().zip(row) {
                *o = v * w;
            }
        }
    }
    for (ti, o) in out.chunks_exact_mut(d).enumerate().take(t) {
        o.copy_from_slice(&slots[ti * k * d..][..d]);
        for slot in 1..k {
            let src = &slots[(ti * k + slot) * d..][..d];
            for (a, &b) in o.iter_mut().zip(src) {
                *a += b;
            }
        }
    }
    Ok(())
}
