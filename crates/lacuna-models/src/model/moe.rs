//! The mixture-of-experts feed-forward block, as llama.cpp's `build_moe_ffn` computes it:
//! router logits; softmax over all experts or a sigmoid per expert; for selection only,
//! the probabilities plus `exp_probs_b` and, with expert groups, every group but the
//! `n_group_used` best (scored by their two best experts) masked out; the top-k experts
//! (descending); their unbiased probabilities, divided by their sum when the weights are
//! normalised (RND1, LLaDA2), times `expert_weights_scale` when that is neither 0 nor 1;
//! each expert's SwiGLU output times its weight, summed in selection order.

use crate::backend::Backend;
use crate::model::timer::Timer;
use crate::weights::{Act, Experts};
use crate::{Gating, MoeConfig, Result};

/// Reused buffers of the MoE block.
/// Reused buffers of a MoE layer: routing on the host (a few floats per token), the
/// experts' activations the backend's.
pub(crate) struct MoeScratch<B: Backend> {
    probs: Vec<f32>,
    select: Vec<f32>,
    sel: Vec<usize>,
    weight: Vec<f32>,
    routed: Vec<usize>,
    slots_of: Vec<usize>,
    scale: Vec<f32>,
    xin: B::Buf,
    gate: B::Buf,
    up: B::Buf,
    act: B::Buf,
    down: B::Buf,
    slots: B::Buf,
}

impl<B: Backend> Default for MoeScratch<B> {
    fn default() -> Self {
        MoeScratch {
            probs: Vec::new(),
            select: Vec::new(),
            sel: Vec::new(),
            weight: Vec::new(),
            routed: Vec::new(),
            slots_of: Vec::new(),
            scale: Vec::new(),
            xin: B::Buf::default(),
            gate: B::Buf::default(),
            up: B::Buf::default(),
            act: B::Buf::default(),
            down: B::Buf::default(),
            slots: B::Buf::default(),
        }
    }
}

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

/// Indices of the `k` largest values, largest first (ties: lower index first), the order
/// of a full descending sort. Kept by insertion into `out` (k is a handful of experts out of
/// up to a few hundred), so that routing a token allocates and sorts nothing.
pub(crate) fn top_k(x: &[f32], k: usize, out: &mut [usize]) {
    assert!(k <= x.len() && k <= out.len(), "top {k} of {}", x.len());
    let mut len = 0;
    for (i, &v) in x.iter().enumerate() {
        // Past every kept value that is not smaller (an equal one has a lower index).
        let mut at = len;
        while at > 0 && x[out[at - 1]].total_cmp(&v).is_lt() {
            at -= 1;
        }
        if at < k {
            len = (len + 1).min(k);
            out.copy_within(at..len - 1, at + 1);
            out[at] = i;
        }
    }
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
        // The group scores go after the experts' scores in `select`, so that routing a
        // token allocates nothing; a group is kept when fewer than n_group_used groups come
        // before it in `top_k`'s order (larger score, or equal and a lower index).
        let (ne, per) = (p.len(), p.len() / m.n_group);
        let mut top2 = [0usize; 2];
        for gi in 0..m.n_group {
            let g = &select[gi * per..(gi + 1) * per];
            top_k(g, 2, &mut top2);
            let score = (f64::from(g[top2[0]]) + f64::from(g[top2[1]])) as f32;
            select.push(score);
        }
        for gi in 0..m.n_group {
            let (scores, sc) = (&select[ne..], select[ne + gi]);
            let before = (0..m.n_group)
                .filter(|&o| match scores[o].total_cmp(&sc) {
                    std::cmp::Ordering::Greater => true,
                    std::cmp::Ordering::Equal => o < gi,
                    std::cmp::Ordering::Less => false,
                })
                .count();
            if before >= m.n_group_used {
                select[gi * per..(gi + 1) * per].fill(f32::NEG_INFINITY);
            }
        }
        select.truncate(ne);
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

/// `out[t x d] = MoE(xn[t x d])`, routed by `router_x` (`xn` itself but in Gemma 4, whose
/// router reads its own normalisation of the residual); the router's and each run expert's
/// reads and operations counted in `tm`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn moe_ffn<B: Backend>(
    be: &mut B,
    tm: &mut Timer,
    ex: &Experts<B>,
    router_x: B::View<'_>,
    xn: B::View<'_>,
    t: usize,
    d: usize,
    out: B::ViewMut<'_>,
    s: &mut MoeScratch<B>,
) -> Result<()> {
    let m = &ex.cfg;
    let (mut bytes, mut run) = (0u64, 0u64);
    let (ne, k, ff) = (m.n_expert, m.n_expert_used, m.n_ff_exp);
    s.probs.resize(t * ne, 0.0);
    tm.matmul(t, &ex.router_cost);
    be.matmul_to_host(router_x, t, &ex.router, &mut s.probs)?;
    s.sel.resize(t * k, 0);
    s.weight.resize(t * k, 0.0);
    for (ti, p) in s.probs.chunks_exact_mut(ne).enumerate() {
        route(
            m,
            ex.probs_bias.as_deref(),
            p,
            &mut s.select,
            &mut s.sel[ti * k..(ti + 1) * k],
            &mut s.weight[ti * k..(ti + 1) * k],
        );
    }
    if let Some(scale) = &ex.expert_scale {
        // Gemma 4: each selected expert's weight times its own scale, after normalising.
        for (w, &e) in s.weight.iter_mut().zip(&s.sel) {
            *w *= scale[e];
        }
    }
    be.ensure(&mut s.slots, t * k * d)?;
    for e in 0..ne {
        s.routed.clear();
        s.slots_of.clear();
        s.scale.clear();
        for ti in 0..t {
            for slot in 0..k {
                if s.sel[ti * k + slot] == e {
                    s.routed.push(ti);
                    s.slots_of.push(ti * k + slot);
                    s.scale.push(s.weight[ti * k + slot]);
                }
            }
        }
        let n = s.routed.len();
        if n == 0 {
            continue;
        }
        run += 1;
        for c in &ex.expert_cost {
            tm.matmul(n, c);
        }
        bytes += [&ex.gate[e], &ex.up[e], &ex.down[e]]
            .iter()
            .map(|w| be.weight_bytes(w) as u64)
            .sum::<u64>();
        be.ensure(&mut s.xin, n * d)?;
        be.copy_rows(
            xn,
            d,
            0,
            Some(&s.routed),
            B::view_mut(&mut s.xin, 0..n * d),
            d,
        )?;
        for b in [&mut s.gate, &mut s.up, &mut s.act] {
            be.ensure(b, n * ff)?;
        }
        be.ensure(&mut s.down, n * d)?;
        let xin = B::view(&s.xin, 0..n * d);
        be.matmul(xin, n, &ex.gate[e], B::view_mut(&mut s.gate, 0..n * ff))?;
        be.matmul(xin, n, &ex.up[e], B::view_mut(&mut s.up, 0..n * ff))?;
        let (g, u) = (B::view(&s.gate, 0..n * ff), B::view(&s.up, 0..n * ff));
        match ex.act {
            Act::Silu => be.swiglu(g, u, B::view_mut(&mut s.act, 0..n * ff))?,
            Act::GeluTanh => be.geglu(g, u, B::view_mut(&mut s.act, 0..n * ff))?,
        }
        let act = B::view(&s.act, 0..n * ff);
        be.matmul(act, n, &ex.down[e], B::view_mut(&mut s.down, 0..n * d))?;
        let y = B::view(&s.down, 0..n * d);
        let slots = B::view_mut(&mut s.slots, 0..t * k * d);
        be.scatter_scaled(y, &s.slots_of, &s.scale, slots, d)?;
    }
    // Every (token, slot) was written: each token routes to k distinct experts.
    be.sum_slots(B::view(&s.slots, 0..t * k * d), k, d, out)?;
    tm.experts(bytes, run);
    Ok(())
}
