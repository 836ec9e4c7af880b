//! Bidirectional (non-causal) multi-head and grouped-query attention with a blocked online
//! softmax (flash-style): the `T x T` score matrix is never materialised; f32 accumulation.

use rayon::prelude::*;

use crate::Error;
use crate::ops::exp::exp;
use crate::ops::{LANES, multiversion};

/// Query rows per task (each transposed key block serves all of them).
const QB: usize = 16;
/// Accumulator registers per query updated together (independent add chains) in `P . V`.
const GROUP: usize = 4;
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
    let kt = transpose_keys(k, shape);
    out.par_chunks_mut(QB * n_head * head_dim)
        .enumerate()
        .for_each(|(b, o)| block(q, &kt, v, b * QB, shape, o));
    Ok(())
}

/// `k` (`[t][n_head_kv][head_dim]`) as `[n_head_kv][head_dim][t']`, `t'` rounded up to a
/// whole number of key blocks with zeros, so scores are a multiply-add with keys as lanes.
fn transpose_keys(k: &[f32], sh: Shape) -> Vec<f32> {
    let (hd, tp) = (sh.head_dim, sh.t.next_multiple_of(KB));
    let mut kt = vec![0.0f32; sh.n_head_kv * hd * tp];
    kt.par_chunks_mut(hd * tp).enumerate().for_each(|(h, dst)| {
        for j in 0..sh.t {
            let kj = &k[(j * sh.n_head_kv + h) * hd..][..hd];
            for (d, &x) in kj.iter().enumerate() {
                dst[d * tp + j] = x;
            }
        }
    });
    kt
}

multiversion! {
    /// All heads of the query rows `t0..t0 + o.len() / (n_head * head_dim)`.
    ///
    /// Per head and block of `KB` keys, queries in pairs: with the keys transposed
    /// ([`transpose_keys`]) a query's `KB` scores are one vectorized multiply-add over `d`
    /// (lanes = keys, no horizontal sums), and the output update `acc = acc * corr + P V`
    /// runs over `d` in groups of registers held across the keys. Pairing shares every key
    /// and value load between two queries; each query's arithmetic is the same as alone.
    fn block(q: &[f32], kt: &[f32], v: &[f32], t0: usize, sh: Shape, o: &mut [f32]) {
        let hd = sh.head_dim;
        let tp = sh.t.next_multiple_of(KB);
        let qrow = sh.n_head * hd;
        let kvrow = sh.n_head_kv * hd;
        let nq = o.len() / qrow;
        let group = sh.n_head / sh.n_head_kv;
        let mut acc = vec![0.0f32; QB * hd];
        let mut ml = [(f32::NEG_INFINITY, 0.0f32); QB];
        for h in 0..sh.n_head {
            let kvh = h / group;
            acc.fill(0.0);
            ml.fill((f32::NEG_INFINITY, 0.0));
            for kb in (0..sh.t).step_by(KB) {
                let kn = (sh.t - kb).min(KB);
                // Keys past `t` are zero padding: their scores are computed but never read
                // (only the first `kn` are).
                let kth = &kt[kvh * hd * tp..][..hd * tp];
                let vb = &v[kb * kvrow + kvh * hd..];
                for i in (0..nq).step_by(2) {
                    let pair = (nq - i).min(2);
                    let qa = &q[(t0 + i) * qrow + h * hd..][..hd];
                    let qb = &q[(t0 + i + pair - 1) * qrow + h * hd..][..hd];
                    // Fixed-size locals (not slices) so the sums live in registers.
                    let mut sc = [[0.0f32; KB]; 2];
                    for d in 0..hd {
                        let row: &[f32; KB] =
                            kth[d * tp + kb..][..KB].try_into().expect("KB wide");
                        let (xa, xb) = (qa[d], qb[d]);
                        for j in 0..KB {
                            sc[0][j] += xa * row[j];
                            sc[1][j] += xb * row[j];
                        }
                    }
                    // Online softmax per query: `sc` becomes the probabilities.
                    let mut corr = [0.0f32; 2];
                    let mut live = [false; 2];
                    for (e, s) in sc.iter_mut().enumerate().take(pair) {
                        let s = &mut s[..kn];
                        let mut bm = f32::NEG_INFINITY;
                        for sj in s.iter_mut() {
                            *sj *= sh.scale;
                            bm = bm.max(*sj);
                        }
                        let (m, l) = &mut ml[i + e];
                        let mnew = m.max(bm);
                        if mnew == f32::NEG_INFINITY {
                            continue;
                        }
                        corr[e] = exp(*m - mnew);
                        *l *= corr[e];
                        for sj in s.iter_mut() {
                            *sj = exp(*sj - mnew);
                        }
                        for &p in s.iter() {
                            *l += p;
                        }
                        *m = mnew;
                        live[e] = true;
                    }
                    let (a0, a1) = acc[i * hd..].split_at_mut(hd);
                    let accs = [a0, &mut a1[..if pair == 2 { hd } else { 0 }]];
                    if live == [true, true] && hd.is_multiple_of(GROUP * LANES) {
                        let [a0, a1] = accs;
                        for d0 in (0..hd).step_by(GROUP * LANES) {
                            let a0: &mut [f32; GROUP * LANES] =
                                (&mut a0[d0..d0 + GROUP * LANES]).try_into().expect("group");
                            let a1: &mut [f32; GROUP * LANES] =
                                (&mut a1[d0..d0 + GROUP * LANES]).try_into().expect("group");
                            let (mut r0, mut r1) = (*a0, *a1);
                            for e in 0..GROUP * LANES {
                                r0[e] *= corr[0];
                                r1[e] *= corr[1];
                            }
                            for j in 0..kn {
                                let vj: &[f32; GROUP * LANES] = vb[j * kvrow + d0..]
                                    [..GROUP * LANES]
                                    .try_into()
                                    .expect("group wide");
                                let (p0, p1) = (sc[0][j], sc[1][j]);
                                for e in 0..GROUP * LANES {
                                    r0[e] += p0 * vj[e];
                                    r1[e] += p1 * vj[e];
                                }
                            }
                            (*a0, *a1) = (r0, r1);
                        }
                    } else {
                        for (e, a) in accs.into_iter().enumerate().take(pair) {
                            if !live[e] {
                                continue;
                            }
                            for x in a.iter_mut() {
                                *x *= corr[e];
                            }
                            for (j, &p) in sc[e][..kn].iter().enumerate() {
                                let vj = &vb[j * kvrow..][..hd];
                                for (x, &y) in a.iter_mut().zip(vj) {
                                    *x += p * y;
                                }
                            }
                        }
                    }
                }
            }
            for i in 0..nq {
                let l = ml[i].1;
                let oi = &mut o[i * qrow + h * hd..][..hd];
                for (dst, &a) in oi.iter_mut().zip(&acc[i * hd..][..hd]) {
                    *dst = a / l;
                }
            }
        }
    }
}
