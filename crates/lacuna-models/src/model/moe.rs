//! The mixture-of-experts feed-forward block, as llama.cpp's `build_moe_ffn` computes it:
//! router logits; softmax over all experts or a sigmoid per expert; for selection only,
//! the probabilities plus `exp_probs_b` and, with expert groups, every group but the
//! `n_group_used` best (scored by their two best experts) masked out; the top-k experts
//! (descending); their unbiased probabilities, divided by their sum when the weights are
//! normalised (RND1, LLaDA2), times `expert_weights_scale` when that is neither 0 nor 1;
//! each expert's SwiGLU output times its weight, summed in selection order.

use crate::backend::Backend;
use crate::weights::Experts;
use crate::{Gating, MoeConfig, Result};

/// Reused buffers of the MoE block.
#[derive(Debug, Default)]
pub(crate) struct MoeScratch {
    probs: Vec<f32>,
    /// One token's selection scores (probabilities plus bias, groups masked).
    select: Vec<f32>,
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

/// ggml's `sigmoid`: `1 / (1 + e^-x)` in f32.
fn sigmoid_row(x: &mut [f32]) {
    for v in x.iter_mut() {
        *v = 1.0 / (1.0 + (-*v).exp());
    }
}

/// One token's routing: turns router logits `p` into probabilities in place and writes the
/// selected experts and their weights (`sel`, `weight`: `n_expert_used` each).
pub(crate) fn route(
    m: &MoeConfig,
    bias: Option<&[f32]>,
    p: &mut [f32],
    select: &mut Vec<f32>,
    sel: &mut [usize],
    weight: &mut [f32],
) {
    let k = m.n_expert_used;
    match m.gating {
        Gating::Softmax => softmax_row(p),
        Gating::Sigmoid => sigmoid_row(p),
    }
    select.clear();
    match bias {
        Some(b) => select.extend(p.iter().zip(b).map(|(&x, &y)| x + y)),
        None => select.extend_from_slice(p),
    }
    if m.n_group > 1 {
        // Score each group by the sum of its two best selection scores (ggml: argsort top 2,
        // sum_rows in f64 rounded to f32); keep the n_group_used best groups.
        let per = p.len() / m.n_group;
        let mut top2 = [0usize; 2];
        let scores: Vec<f32> = select
            .chunks_exact(per)
            .map(|g| {
                top_k(g, 2, &mut top2);
                (f64::from(g[top2[0]]) + f64::from(g[top2[1]])) as f32
            })
            .collect();
        let mut keep = vec![0usize; m.n_group_used];
        top_k(&scores, m.n_group_used, &mut keep);
        for (gi, g) in select.chunks_exact_mut(per).enumerate() {
            if !keep.contains(&gi) {
                g.fill(f32::NEG_INFINITY);
            }
        }
    }
    top_k(select, k, sel);
    for (w, &e) in weight.iter_mut().zip(sel.iter()) {
        *w = p[e];
    }
    if m.norm_weights {
        let sum = weight.iter().map(|&w| f64::from(w)).sum::<f64>() as f32;
        // llama.cpp clamps the sum to the smallest normal f16 against division by zero.
        let sum = sum.max(6.103_515_6e-5);
        for w in weight.iter_mut() {
            *w /= sum;
        }
    }
    if m.weights_scale != 0.0 && m.weights_scale != 1.0 {
        for w in weight.iter_mut() {
            *w *= m.weights_scale;
        }
    }
}

/// `out[t x d] = MoE(xn[t x d])`; returns the bytes of expert weights read and the number of
/// experts run.
pub(crate) fn moe_ffn<B: Backend>(
    be: &mut B,
    ex: &Experts<B::Weight>,
    xn: &[f32],
    t: usize,
    d: usize,
    out: &mut [f32],
    s: &mut MoeScratch,
) -> Result<(u64, u64)> {
    let m = &ex.cfg;
    let (mut bytes, mut run) = (0u64, 0u64);
    let (ne, k, ff) = (m.n_expert, m.n_expert_used, m.n_ff_exp);
    let probs = grow(&mut s.probs, t * ne);
    be.matmul(xn, t, &ex.router, probs)?;
    s.sel.resize(t * k, 0);
    s.weight.resize(t * k, 0.0);
    for (ti, p) in probs.chunks_exact_mut(ne).enumerate() {
        route(
            m,
            ex.probs_bias.as_deref(),
            p,
            &mut s.select,
            &mut s.sel[ti * k..(ti + 1) * k],
            &mut s.weight[ti * k..(ti + 1) * k],
        );
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
        run += 1;
        bytes += [&ex.gate[e], &ex.up[e], &ex.down[e]]
            .iter()
            .map(|w| be.weight_bytes(w) as u64)
            .sum::<u64>();
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
    Ok((bytes, run))
}
