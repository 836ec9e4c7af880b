//! Bidirectional (non-causal) multi-head and grouped-query attention with a blocked online
//! softmax (flash-style): the `T x T` score matrix is never materialised; f32 accumulation.

use rayon::prelude::*;

use crate::Error;
use crate::ops::exp::exp;
use crate::ops::{dot, multiversion};

/// Query rows per task.
const QB: usize = 8;
/// Key rows per online-softmax step.
const KB: usize = 64;

/// Shape of one attention call.
#[derive(Debug, Clone, Copy)]
struct Shape {
    t: usize,
    n_head: usize,
    n_head_kv: usize,
    head_dim: usize,
    scale: f32,
}

/// `out = softmax(scale * Q K^T) V` per head, every query attending to every key.
///
/// `q` and `out` are `[t][n_head][head_dim]`, `k` and `v` are `[t][n_head_kv][head_dim]`;
/// query head `h` reads key/value head `h / (n_head / n_head_kv)` (ggml's broadcast).
#[allow(clippy::too_many_arguments)]
pub fn attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    t: usize,
    n_head: usize,
    n_head_kv: usize,
    head_dim: usize,
    scale: f32,
    out: &mut [f32],
) -> Result<(), Error> {
    if n_head == 0 || n_head_kv == 0 || head_dim == 0 || !n_head.is_multiple_of(n_head_kv) {
        return Err(Error::BadShape {
            what: "attention",
            detail: "need n_head, n_head_kv, head_dim > 0 and n_head a multiple of n_head_kv",
        });
    }
    let qlen = t * n_head * head_dim;
    let kvlen = t * n_head_kv * head_dim;
    for (what, expected, found) in [
        ("attention q", qlen, q.len()),
        ("attention k", kvlen, k.len()),
        ("attention v", kvlen, v.len()),
        ("attention out", qlen, out.len()),
    ] {
        if expected != found {
            return Err(Error::BadLength {
                what,
                expected,
                found,
            });
        }
    }
    if t == 0 {
        return Ok(());
    }
    let shape = Shape {
        t,
        n_head,
        n_head_kv,
        head_dim,
        scale,
    };
    out.par_chunks_mut(QB * n_head * head_dim)
        .enumerate()
        .for_each(|(b, o)| block(q, k, v, b * QB, shape, o));
    Ok(())
}

multiversion! {
    /// All heads of the query rows `t0..t0 + o.len() / (n_head * head_dim)`.
    fn block(q: &[f32], k: &[f32], v: &[f32], t0: usize, sh: Shape, o: &mut [f32]) {
        let hd = sh.head_dim;
        let qrow = sh.n_head * hd;
        let kvrow = sh.n_head_kv * hd;
        let nq = o.len() / qrow;
        let group = sh.n_head / sh.n_head_kv;
        let mut s = vec![0.0f32; KB];
        let mut acc = vec![0.0f32; hd];
        for h in 0..sh.n_head {
            let kvh = h / group;
            for i in 0..nq {
                let qi = &q[(t0 + i) * qrow + h * hd..][..hd];
                let (mut m, mut l) = (f32::NEG_INFINITY, 0.0f32);
                acc.fill(0.0);
                for kb in (0..sh.t).step_by(KB) {
                    let kn = (sh.t - kb).min(KB);
                    let mut bm = f32::NEG_INFINITY;
                    for (j, sj) in s[..kn].iter_mut().enumerate() {
                        let kj = &k[(kb + j) * kvrow + kvh * hd..][..hd];
                        *sj = dot(qi, kj) * sh.scale;
                        bm = bm.max(*sj);
                    }
                    let mnew = m.max(bm);
                    if mnew == f32::NEG_INFINITY {
                        continue;
                    }
                    let corr = exp(m - mnew);
                    l *= corr;
                    for a in acc.iter_mut() {
                        *a *= corr;
                    }
                    for (j, &sj) in s[..kn].iter().enumerate() {
                        let p = exp(sj - mnew);
                        l += p;
                        let vj = &v[(kb + j) * kvrow + kvh * hd..][..hd];
                        for (a, &x) in acc.iter_mut().zip(vj) {
                            *a += p * x;
                        }
                    }
                    m = mnew;
                }
                let oi = &mut o[i * qrow + h * hd..][..hd];
                for (dst, &a) in oi.iter_mut().zip(acc.iter()) {
                    *dst = a / l;
                }
            }
        }
    }
}
