//! Bidirectional (non-causal) multi-head and grouped-query attention, flash-style: per task
//! (one query head, up to [`QT`] query rows), keys in blocks of [`KB`] with an online
//! softmax, so no more than `QT x KB` scores ever exist. Both products of a block,
//! `S = Q K_b^T` and `O_b = P V_b`, run on the float GEMM's register-tiled microkernels
//! (6 rows x 32 columns of FMA chains), with `K_b` and `V_b^T` packed once per call and
//! shared by every query head of their key/value head (GQA). f32 throughout.
//!
//! A canvas of at most [`KB`] keys is one block: a plain softmax in ggml's order, no
//! rescaling.
//!
//! Every query row's arithmetic depends only on that row, so computing a subset of the rows
//! (the sampler's masked positions) gives the same bits as computing all of them.
//!
//! [`attention_rows`] computes chosen query rows only, and with a [`Mask`] limits each row
//! to a prefix of the keys (causal and block-causal attention): the softmax runs over the
//! visible keys only, which is what ggml's masked softmax computes (an `-inf` score adds an
//! exact 0 to its sum).

use rayon::prelude::*;

use crate::gemm::float_serial;
use crate::ops::exp::exp;
use crate::ops::{LANES, Level, multiversion};
use crate::packed::FloatPacked;
use crate::{Error, Path, Workspace};

/// Query rows per task: 8 register tiles of 6.
const QT: usize = 48;
/// Keys per online-softmax block: a canvas up to this long takes one block, i.e. a plain
/// softmax with no rescaling.
const KB: usize = 512;

/// Shape of one attention call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttnShape {
    /// Query rows.
    pub queries: usize,
    /// Key and value rows.
    pub keys: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads; `n_head` must be a multiple of it.
    pub n_head_kv: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Multiplier of `q . k` before the softmax.
    pub scale: f32,
}

/// Which keys each query row of [`attention_rows`] attends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mask {
    /// Every key (bidirectional attention).
    #[default]
    All,
    /// Block-causal attention: query row `i` is at position `pos0 + i` and sees the keys
    /// before `(position / block + 1) * block` (all of them past the last key); a block of
    /// 1 is causal attention.
    BlockCausal {
        /// The block length (at least 1).
        block: usize,
        /// The position of query row 0.
        pos0: usize,
    },
}

impl Mask {
    /// Keys visible to query row `row` of a call over `keys` keys (`None` for
    /// [`Mask::All`]; `block` must be positive).
    fn visible(self, row: usize, keys: usize) -> Option<usize> {
        match self {
            Mask::All => None,
            Mask::BlockCausal { block, pos0 } => {
                Some(((pos0 + row) / block + 1).saturating_mul(block).min(keys))
            }
        }
    }
}

/// [`attention`] for the query rows `rows` of `q` only (all of them, in order, when
/// `None`), each over the keys `mask` lets it see: `q` is `[s.queries][n_head][head_dim]`,
/// `out` is `[rows.len()][n_head][head_dim]` (`[s.queries][..]` when `rows` is `None`).
/// Every row's arithmetic depends on that row alone, so the bits are those of the same rows
/// of a call over all of them. `ws` also keeps the gathered rows between calls.
#[allow(clippy::too_many_arguments)]
pub fn attention_rows(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    s: AttnShape,
    mask: Mask,
    rows: Option<&[usize]>,
    out: &mut [f32],
    ws: &mut Workspace,
) -> Result<(), Error> {
    if let Mask::BlockCausal { block: 0, .. } = mask {
        return Err(Error::BadShape {
            what: "attention mask",
            detail: "the block length must be at least 1",
        });
    }
    let width = s.n_head.checked_mul(s.head_dim).ok_or(Error::BadShape {
        what: "attention",
        detail: "heads x head_dim overflows",
    })?;
    let Some(rows) = rows else {
        let mut vis = std::mem::take(&mut ws.attn.visible);
        vis.clear();
        vis.extend((0..s.queries).filter_map(|i| mask.visible(i, s.keys)));
        let vis_arg = (mask != Mask::All).then_some(&vis[..]);
        let r = attention_masked(q, k, v, s, vis_arg, out, ws);
        ws.attn.visible = vis;
        return r;
    };
    if s.queries.checked_mul(width) != Some(q.len()) {
        return Err(Error::BadLength {
            what: "attention q",
            expected: s.queries.saturating_mul(width),
            found: q.len(),
        });
    }
    if rows.iter().any(|&r| r >= s.queries) {
        return Err(Error::BadShape {
            what: "attention rows",
            detail: "a requested row is not a query row",
        });
    }
    let (mut qr, mut vis) = (
        std::mem::take(&mut ws.attn.q_rows),
        std::mem::take(&mut ws.attn.visible),
    );
    qr.clear();
    vis.clear();
    for &r in rows {
        qr.extend_from_slice(&q[r * width..(r + 1) * width]);
    }
    vis.extend(rows.iter().filter_map(|&r| mask.visible(r, s.keys)));
    let vis_arg = (mask != Mask::All).then_some(&vis[..]);
    let sub = AttnShape {
        queries: rows.len(),
        ..s
    };
    let r = attention_masked(&qr, k, v, sub, vis_arg, out, ws);
    (ws.attn.q_rows, ws.attn.visible) = (qr, vis);
    r
}

/// `out = softmax(scale * Q K^T) V` per head, every query attending to every key.
///
/// `q` and `out` are `[queries][n_head][head_dim]`, `k` and `v` are
/// `[keys][n_head_kv][head_dim]`; query head `h` reads key/value head
/// `h / (n_head / n_head_kv)` (ggml's broadcast). `ws` keeps the packed keys and values and
/// the per-head outputs between calls.
pub fn attention(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    s: AttnShape,
    out: &mut [f32],
    ws: &mut Workspace,
) -> Result<(), Error> {
    attention_masked(q, k, v, s, None, out, ws)
}

/// [`attention`] where query row `i` attends only to keys `0..visible[i]` (all keys when
/// `visible` is `None`): causal attention is `visible[i] = position + 1`, block-causal
/// attention the end of the row's block. Each `visible[i]` must be in `1..=keys`.
pub(crate) fn attention_masked(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    s: AttnShape,
    visible: Option<&[usize]>,
    out: &mut [f32],
    ws: &mut Workspace,
) -> Result<(), Error> {
    if let Some(vis) = visible {
        if vis.len() != s.queries {
            return Err(Error::BadLength {
                what: "attention visible keys",
                expected: s.queries,
                found: vis.len(),
            });
        }
        if vis.iter().any(|&n| n == 0 || n > s.keys) {
            return Err(Error::BadShape {
                what: "attention",
                detail: "every query row must see between 1 and all of the keys",
            });
        }
    }
    let (nh, nkv, hd) = (s.n_head, s.n_head_kv, s.head_dim);
    if nh == 0 || nkv == 0 || hd == 0 || !nh.is_multiple_of(nkv) {
        return Err(Error::BadShape {
            what: "attention",
            detail: "need n_head, n_head_kv, head_dim > 0 and n_head a multiple of n_head_kv",
        });
    }
    if s.queries > 0 && s.keys == 0 {
        return Err(Error::BadShape {
            what: "attention",
            detail: "queries need at least one key",
        });
    }
    let too_big = || Error::BadShape {
        what: "attention",
        detail: "rows x heads x head_dim overflows",
    };
    let qlen = s.queries.checked_mul(nh * hd).ok_or_else(too_big)?;
    let kvlen = s.keys.checked_mul(nkv * hd).ok_or_else(too_big)?;
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
    if s.queries == 0 {
        return Ok(());
    }
    let path = match crate::ops::level() {
        #[cfg(target_arch = "x86_64")]
        Level::V512 => Path::Avx512Vnni,
        #[cfg(target_arch = "x86_64")]
        Level::V256 => Path::Avx2,
        Level::Portable => Path::Scalar,
    };
    let kvrow = nkv * hd;
    let nblk = s.keys.div_ceil(KB);
    let AttnBuffers { packs, heads, .. } = &mut ws.attn;
    // [kv head][key block]: K_b (keys x head_dim) and V_b^T (head_dim x keys).
    if packs.len() < nkv * nblk {
        packs.resize_with(nkv * nblk, || (FloatPacked::empty(), FloatPacked::empty()));
    }
    let packs = &mut packs[..nkv * nblk];
    packs.par_iter_mut().enumerate().for_each(|(i, (kp, vt))| {
        let (g, b) = (i / nblk, i % nblk);
        let kn = KB.min(s.keys - b * KB);
        let at = b * KB * kvrow + g * hd;
        kp.fill_strided(&k[at..], kn, hd, kvrow, 1);
        vt.fill_strided(&v[at..], hd, kn, 1, kvrow);
    });
    let packs = &*packs;
    // Per-head outputs `[n_head][queries][head_dim]` (every element written), interleaved
    // into `out` at the end.
    if heads.len() < qlen {
        heads.resize(qlen, 0.0);
    }
    let heads = &mut heads[..qlen];
    heads
        .par_chunks_mut(s.queries * hd)
        .enumerate()
        .flat_map(|(h, oh)| {
            oh.par_chunks_mut(QT * hd)
                .enumerate()
                .map(move |(i, o)| (h, i * QT, o))
        })
        .for_each_init(Scratch::default, |scr, (h, t0, o)| {
            let g = h / (nh / nkv);
            let kv = &packs[g * nblk..][..nblk];
            let vis = visible.map(|v| &v[t0..t0 + o.len() / hd]);
            tile(path, q, kv, s, vis, h, t0, o, scr);
        });
    let heads = &*heads;
    out.par_chunks_mut(nh * hd)
        .enumerate()
        .for_each(|(i, row)| {
            for (h, dst) in row.chunks_exact_mut(hd).enumerate() {
                dst.copy_from_slice(&heads[(h * s.queries + i) * hd..][..hd]);
            }
        });
    Ok(())
}

/// Buffers [`attention`] and [`attention_rows`] keep in a [`Workspace`] between calls.
#[derive(Debug, Default)]
pub(crate) struct AttnBuffers {
    /// `[kv head][key block]`: packed `K_b` and `V_b^T`.
    packs: Vec<(FloatPacked, FloatPacked)>,
    /// `[n_head][queries][head_dim]` outputs.
    heads: Vec<f32>,
    /// The query rows [`attention_rows`] was asked for, gathered.
    q_rows: Vec<f32>,
    /// Keys visible to each computed query row.
    visible: Vec<usize>,
}

/// Per-thread buffers of [`tile`].
#[derive(Default)]
struct Scratch {
    q: Vec<f32>,
    scores: Vec<f32>,
    block_out: Vec<f32>,
    corr: Vec<f32>,
    ml: Vec<(f32, f32)>,
}

/// Query head `h`, rows `t0..t0 + o.len() / head_dim`, into `o` (`[rows][head_dim]`);
/// row `i` of the tile sees keys `0..vis[i]`.
#[allow(clippy::too_many_arguments)]
fn tile(
    path: Path,
    q: &[f32],
    kv: &[(FloatPacked, FloatPacked)],
    s: AttnShape,
    vis: Option<&[usize]>,
    h: usize,
    t0: usize,
    o: &mut [f32],
    scr: &mut Scratch,
) {
    let hd = s.head_dim;
    let nq = o.len() / hd;
    let qrow = s.n_head * hd;
    scr.q.clear();
    for i in 0..nq {
        scr.q
            .extend_from_slice(&q[(t0 + i) * qrow + h * hd..][..hd]);
    }
    scr.scores.resize(nq * KB, 0.0);
    if let [(kp, vt)] = kv {
        // One key block: a plain softmax in ggml's order (scale, `e^(x - max)` summed in
        // f64, normalise), then `P V`, as llama.cpp computes attention without flash
        // attention; this keeps logits closest to its.
        let sc = &mut scr.scores[..nq * s.keys];
        float_serial(path, kp, s.keys, &scr.q, nq, sc);
        for (i, row) in sc.chunks_exact_mut(s.keys).enumerate() {
            // The masked softmax: over the visible prefix, exact zeros after it.
            let (seen, hidden) = row.split_at_mut(vis.map_or(s.keys, |v| v[i]));
            scale_row(seen, s.scale);
            crate::ops::softmax(seen);
            hidden.fill(0.0);
        }
        float_serial(path, vt, hd, sc, nq, o);
        return;
    }
    scr.ml.clear();
    scr.ml.resize(nq, (f32::NEG_INFINITY, 0.0));
    scr.corr.resize(nq, 0.0);
    scr.block_out.resize(nq * hd, 0.0);
    // Key blocks past every row's visible prefix contribute nothing: skip them.
    let seen = vis.map_or(s.keys, |v| v.iter().copied().max().unwrap_or(s.keys));
    for (b, (kp, vt)) in kv.iter().enumerate().take(seen.div_ceil(KB)) {
        let kn = KB.min(s.keys - b * KB);
        let sc = &mut scr.scores[..nq * kn];
        float_serial(path, kp, kn, &scr.q, nq, sc);
        for (i, ((row, (m, l)), c)) in sc
            .chunks_exact_mut(kn)
            .zip(scr.ml.iter_mut())
            .zip(scr.corr.iter_mut())
            .enumerate()
        {
            if let Some(v) = vis {
                // Row i sees keys below v[i]; key 0 is always visible, so block 0 never
                // leaves a row with no finite score.
                let first_hidden = v[i].saturating_sub(b * KB).min(kn);
                row[first_hidden..].fill(f32::NEG_INFINITY);
            }
            *c = online_softmax(row, s.scale, m, l);
        }
        if b == 0 {
            float_serial(path, vt, hd, sc, nq, o);
        } else {
            float_serial(path, vt, hd, sc, nq, &mut scr.block_out);
            rescale_add(o, &scr.block_out, &scr.corr, hd);
        }
    }
    for (row, &(_, l)) in o.chunks_exact_mut(hd).zip(scr.ml.iter()) {
        divide(row, l);
    }
}

multiversion! {
    /// One online-softmax step of a query row: scales the block's scores `s` in place and
    /// turns them into `e^(s - m')`, where `m'` is the new running maximum; updates the
    /// running maximum `m` and sum `l`; returns `e^(m - m')`, the factor by which the output
    /// so far must be multiplied.
    fn online_softmax(s: &mut [f32], scale: f32, m: &mut f32, l: &mut f32) -> f32 {
        let mut mx = [f32::NEG_INFINITY; LANES];
        for c in s.chunks_mut(LANES) {
            for (a, x) in mx.iter_mut().zip(c.iter_mut()) {
                *x *= scale;
                *a = a.max(*x);
            }
        }
        let mnew = mx.iter().fold(*m, |a, &b| a.max(b));
        if mnew == f32::NEG_INFINITY {
            // Every score so far is -inf: nothing to weigh yet.
            s.fill(0.0);
            return 1.0;
        }
        let mut sum = [0.0f32; LANES];
        for c in s.chunks_mut(LANES) {
            for (a, x) in sum.iter_mut().zip(c.iter_mut()) {
                *x = exp(*x - mnew);
                *a += *x;
            }
        }
        let corr = exp(*m - mnew);
        *l = *l * corr + sum.iter().sum::<f32>();
        *m = mnew;
        corr
    }
}

multiversion! {
    /// `o[i] = o[i] * corr[i] + add[i]` for every `width`-wide row `i`.
    fn rescale_add(o: &mut [f32], add: &[f32], corr: &[f32], width: usize) {
        for ((row, a), &c) in o.chunks_exact_mut(width).zip(add.chunks_exact(width)).zip(corr) {
            for (x, &y) in row.iter_mut().zip(a) {
                *x = *x * c + y;
            }
        }
    }
}

multiversion! {
    /// `row *= scale`.
    fn scale_row(row: &mut [f32], scale: f32) {
        for x in row.iter_mut() {
            *x *= scale;
        }
    }
}

multiversion! {
    /// `row /= l`.
    fn divide(row: &mut [f32], l: f32) {
        for x in row.iter_mut() {
            *x /= l;
        }
    }
}
