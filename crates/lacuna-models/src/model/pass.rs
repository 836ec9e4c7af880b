//! One forward pass, as llama.cpp's graphs compute it, in its parts: the embedding rows,
//! each layer's attention and feed-forward blocks, and the head.

use std::ops::Range;

use crate::backend::{AttnShape, Backend, RopeParams};
use crate::model::cache::KvCache;
use crate::model::moe;
use crate::model::timer::{Part, Timer};
use crate::weights::{Dense, Ffn, Layer, Linear, Qkv, Weights};
use crate::{Config, Result};

/// Reused activation buffers, the backend's own: they grow to the largest canvas seen
/// and are never freed between passes.
pub(crate) struct Scratch<B: Backend> {
    x: B::Buf,
    xn: B::Buf,
    q: B::Buf,
    k: B::Buf,
    v: B::Buf,
    attn: B::Buf,
    proj: B::Buf,
    gate: B::Buf,
    up: B::Buf,
    act: B::Buf,
    rows: B::Buf,
    moe: moe::MoeScratch<B>,
    /// A batch's selected rows, as indices into its concatenated windows.
    sel: Vec<usize>,
}

impl<B: Backend> Default for Scratch<B> {
    fn default() -> Self {
        Scratch {
            x: B::Buf::default(),
            xn: B::Buf::default(),
            q: B::Buf::default(),
            k: B::Buf::default(),
            v: B::Buf::default(),
            attn: B::Buf::default(),
            proj: B::Buf::default(),
            gate: B::Buf::default(),
            up: B::Buf::default(),
            act: B::Buf::default(),
            rows: B::Buf::default(),
            moe: moe::MoeScratch::default(),
            sel: Vec::new(),
        }
    }
}

/// The geometry of one pass, checked by the model before it runs.
pub(crate) struct Geometry<'a> {
    /// Canvas positions in all (keys of a cached pass).
    pub(crate) t_all: usize,
    /// The positions run through the layers.
    pub(crate) window: Range<usize>,
    /// Requested rows as indices into the window; `None` is every row in order.
    pub(crate) rows: Option<&'a [usize]>,
    /// Block-causal attention's block length.
    pub(crate) block: Option<usize>,
}

/// One canvas's pass in a batched forward: its geometry and where its window's rows start
/// among the batch's concatenated rows.
pub(crate) struct Segment<'a> {
    pub(crate) g: Geometry<'a>,
    pub(crate) row0: usize,
}

impl Segment<'_> {
    /// Rows the segment keeps after the last layer's selection.
    fn out_rows(&self) -> usize {
        self.g.rows.map_or(self.g.window.len(), <[usize]>::len)
    }
}

/// The parts of the model a pass reads, and the buffers it writes.
pub(crate) struct Graph<'a, B: Backend> {
    pub(crate) cfg: &'a Config,
    pub(crate) weights: &'a Weights<B>,
    pub(crate) be: &'a mut B,
    pub(crate) s: &'a mut Scratch<B>,
    pub(crate) timer: Timer,
}

impl<B: Backend> Graph<'_, B> {
    /// Runs the layers and the head over `x`'s rows (already embedded by [`Graph::embed`]:
    /// the segments' windows one after another), each segment's keys and values into its
    /// cache when it has one, its logits into its `outs` entry.
    pub(crate) fn run(
        &mut self,
        segs: &[Segment<'_>],
        caches: &mut [Option<&mut KvCache<B::Buf>>],
        outs: &mut [&mut [f32]],
    ) -> Result<()> {
        let cfg = self.cfg;
        let t: usize = segs.iter().map(|s| s.g.window.len()).sum();
        let (d, kvd, qd) = (cfg.n_embd, cfg.kv_dim(), cfg.q_dim());
        for (b, n) in [
            (&mut self.s.x, t * d),
            (&mut self.s.xn, t * d),
            (&mut self.s.q, t * qd),
            (&mut self.s.k, t * kvd),
            (&mut self.s.v, t * kvd),
            (&mut self.s.attn, t * qd),
            (&mut self.s.proj, t * qd.max(d)),
            (&mut self.s.rows, t * d),
        ] {
            self.be.ensure(b, n)?;
        }
        let mut cur_t = t;
        for (il, layer) in self.weights.layers.iter().enumerate() {
            let last = il + 1 == cfg.n_layer;
            cur_t = self.attention(layer, il, segs, caches, last)?;
            self.ffn(layer, cur_t)?;
        }
        self.head(segs, cur_t, outs)
    }

    /// The embedding rows of `tokens` into `x` (ggml get_rows: dequantized to f32,
    /// bit-exact).
    pub(crate) fn embed(&mut self, table: &B::Table, bytes: &[u8], tokens: &[u32]) -> Result<()> {
        let n = tokens.len() * self.cfg.n_embd;
        self.be.ensure(&mut self.s.x, n)?;
        self.be
            .embed(table, bytes, tokens, B::view_mut(&mut self.s.x, 0..n))?;
        self.timer.mark(self.be, Part::Other)
    }

    /// One layer's attention block and residual add over the segments' rows; in the last
    /// layer only the rows each segment asks for are kept. Returns the rows kept.
    fn attention(
        &mut self,
        layer: &Layer<B>,
        il: usize,
        segs: &[Segment<'_>],
        caches: &mut [Option<&mut KvCache<B::Buf>>],
        last: bool,
    ) -> Result<usize> {
        let cfg = self.cfg;
        let (be, s) = (&mut *self.be, &mut *self.s);
        let tm = &mut self.timer;
        let t: usize = segs.iter().map(|s| s.g.window.len()).sum();
        let (d, kvd, qd) = (cfg.n_embd, cfg.kv_dim(), cfg.q_dim());
        be.rms_norm(
            B::view(&s.x, 0..t * d),
            &layer.attn_norm,
            cfg.rms_eps,
            B::view_mut(&mut s.xn, 0..t * d),
        )?;
        tm.mark(be, Part::Other)?;
        let xn = B::view(&s.xn, 0..t * d);
        match &layer.qkv {
            Qkv::Split {
                q: wq,
                k: wk,
                v: wv,
            } => {
                linear(be, tm, wq, xn, t, B::view_mut(&mut s.q, 0..t * qd))?;
                linear(be, tm, wk, xn, t, B::view_mut(&mut s.k, 0..t * kvd))?;
                linear(be, tm, wv, xn, t, B::view_mut(&mut s.v, 0..t * kvd))?;
            }
            Qkv::Fused(lin) => {
                // One `[t x (q + 2 kv)]` product, then each row split into Q, K and V
                // (llama.cpp's `build_qkv` views of `wqkv`'s output).
                be.ensure(&mut s.gate, t * lin.n)?;
                let fused = B::view_mut(&mut s.gate, 0..t * lin.n);
                linear(be, tm, lin, xn, t, fused)?;
                let fused = B::view(&s.gate, 0..t * lin.n);
                be.copy_rows(fused, lin.n, 0, None, B::view_mut(&mut s.q, 0..t * qd), qd)?;
                let k = B::view_mut(&mut s.k, 0..t * kvd);
                be.copy_rows(fused, lin.n, qd, None, k, kvd)?;
                let v = B::view_mut(&mut s.v, 0..t * kvd);
                be.copy_rows(fused, lin.n, qd + kvd, None, v, kvd)?;
                tm.mark(be, Part::Other)?;
            }
        }
        if let (Some(qn), Some(kn)) = (&layer.q_norm, &layer.k_norm) {
            let tmp = B::view_mut(&mut s.proj, 0..t * qd);
            be.copy_rows(B::view(&s.q, 0..t * qd), qd, 0, None, tmp, qd)?;
            let tmp = B::view(&s.proj, 0..t * qd);
            be.rms_norm(tmp, qn, cfg.rms_eps, B::view_mut(&mut s.q, 0..t * qd))?;
            let tmp = B::view_mut(&mut s.proj, 0..t * kvd);
            be.copy_rows(B::view(&s.k, 0..t * kvd), kvd, 0, None, tmp, kvd)?;
            let tmp = B::view(&s.proj, 0..t * kvd);
            be.rms_norm(tmp, kn, cfg.rms_eps, B::view_mut(&mut s.k, 0..t * kvd))?;
        }
        let rope = RopeParams {
            style: cfg.arch.rope_style(),
            n_rot: cfg.n_rot,
            freq_base: cfg.rope_freq_base,
            freq_scale: cfg.rope_freq_scale,
        };
        let mut out_row0 = 0;
        for (seg, cache) in segs.iter().zip(caches.iter_mut()) {
            let g = &seg.g;
            let (ts, pos0, r0) = (g.window.len(), g.window.start, seg.row0);
            let (qs, ks) = (r0 * qd..(r0 + ts) * qd, r0 * kvd..(r0 + ts) * kvd);
            be.rope(
                B::view_mut(&mut s.q, qs.clone()),
                ts,
                pos0,
                cfg.head_dim,
                rope,
            )?;
            be.rope(
                B::view_mut(&mut s.k, ks.clone()),
                ts,
                pos0,
                cfg.head_dim,
                rope,
            )?;
            // A cached pass keeps the window's keys and values in its canvas's cache and
            // attends over all of them.
            let (keys, values) = match cache.as_deref_mut() {
                Some(c) => {
                    let at = pos0 * kvd..(pos0 + ts) * kvd;
                    let (kc, vc) = (&mut c.k[il], &mut c.v[il]);
                    let kw = B::view_mut(kc, at.clone());
                    be.copy_rows(B::view(&s.k, ks.clone()), kvd, 0, None, kw, kvd)?;
                    let vw = B::view_mut(vc, at);
                    be.copy_rows(B::view(&s.v, ks.clone()), kvd, 0, None, vw, kvd)?;
                    (B::view(kc, 0..g.t_all * kvd), B::view(vc, 0..g.t_all * kvd))
                }
                None => (B::view(&s.k, ks.clone()), B::view(&s.v, ks)),
            };
            tm.mark(be, Part::Other)?;
            let sel = if last { g.rows } else { None };
            let out_t = sel.map_or(ts, <[usize]>::len);
            let shape = AttnShape {
                queries: ts,
                keys: g.t_all,
                n_head: cfg.n_head,
                n_head_kv: cfg.n_head_kv,
                head_dim: cfg.head_dim,
                scale: 1.0 / (cfg.head_dim as f32).sqrt(),
                pos0,
                block: g.block,
            };
            let out = B::view_mut(&mut s.attn, out_row0 * qd..(out_row0 + out_t) * qd);
            be.attention(B::view(&s.q, qs), keys, values, shape, sel, out)?;
            tm.mark(be, Part::Attention)?;
            out_row0 += out_t;
        }
        let out_t = out_row0;
        if out_t != t {
            // llama.cpp's `inp_out_ids`: keep only the requested rows from here on.
            s.sel.clear();
            for seg in segs {
                let r0 = seg.row0;
                match seg.g.rows {
                    Some(rows) => s.sel.extend(rows.iter().map(|&r| r0 + r)),
                    None => s.sel.extend(r0..r0 + seg.g.window.len()),
                }
            }
            let gathered = B::view_mut(&mut s.rows, 0..out_t * d);
            be.copy_rows(B::view(&s.x, 0..t * d), d, 0, Some(&s.sel), gathered, d)?;
            let gathered = B::view(&s.rows, 0..out_t * d);
            be.copy_rows(gathered, d, 0, None, B::view_mut(&mut s.x, 0..out_t * d), d)?;
            tm.mark(be, Part::Other)?;
        }
        let n = out_t * d;
        let attn = B::view(&s.attn, 0..out_t * qd);
        linear(
            be,
            tm,
            &layer.o,
            attn,
            out_t,
            B::view_mut(&mut s.proj, 0..n),
        )?;
        be.add(B::view_mut(&mut s.x, 0..n), B::view(&s.proj, 0..n))?;
        tm.mark(be, Part::Other)?;
        Ok(out_t)
    }

    /// One layer's feed-forward block (dense, or experts plus an optional shared block) and
    /// residual add over `t` rows.
    fn ffn(&mut self, layer: &Layer<B>, t: usize) -> Result<()> {
        let cfg = self.cfg;
        let (be, s) = (&mut *self.be, &mut *self.s);
        let tm = &mut self.timer;
        let d = cfg.n_embd;
        let n = t * d;
        be.rms_norm(
            B::view(&s.x, 0..n),
            &layer.ffn_norm,
            cfg.rms_eps,
            B::view_mut(&mut s.xn, 0..n),
        )?;
        tm.mark(be, Part::Other)?;
        match &layer.ffn {
            Ffn::Dense(ffn) => {
                let bufs = DenseBufs::<B> {
                    gate: &mut s.gate,
                    up: &mut s.up,
                    act: &mut s.act,
                };
                let (xn, proj) = (B::view(&s.xn, 0..n), B::view_mut(&mut s.proj, 0..n));
                dense(be, tm, ffn, xn, t, proj, bufs)?;
            }
            Ffn::Moe(experts) => {
                let (xn, proj) = (B::view(&s.xn, 0..n), B::view_mut(&mut s.proj, 0..n));
                moe::moe_ffn(be, tm, experts, xn, xn, t, d, proj, &mut s.moe)?;
                tm.mark(be, Part::Gemm)?;
                if let Some(shared) = &experts.shared {
                    // llama.cpp: `moe_out + ffn_shexp`, the shared block on the same
                    // normalised input.
                    let bufs = DenseBufs::<B> {
                        gate: &mut s.gate,
                        up: &mut s.up,
                        act: &mut s.act,
                    };
                    let (xn, y) = (B::view(&s.xn, 0..n), B::view_mut(&mut s.rows, 0..n));
                    dense(be, tm, shared, xn, t, y, bufs)?;
                    be.add(B::view_mut(&mut s.proj, 0..n), B::view(&s.rows, 0..n))?;
                    tm.mark(be, Part::Other)?;
                }
            }
        }
        be.add(B::view_mut(&mut s.x, 0..n), B::view(&s.proj, 0..n))?;
        tm.mark(be, Part::Other)
    }

    /// The final norm and the LM head over the `t` rows left, each segment's logits into
    /// its `outs` entry.
    fn head(&mut self, segs: &[Segment<'_>], t: usize, outs: &mut [&mut [f32]]) -> Result<()> {
        let cfg = self.cfg;
        let (be, s) = (&mut *self.be, &mut *self.s);
        let tm = &mut self.timer;
        let n = t * cfg.n_embd;
        be.rms_norm(
            B::view(&s.x, 0..n),
            &self.weights.output_norm,
            cfg.rms_eps,
            B::view_mut(&mut s.xn, 0..n),
        )?;
        tm.mark(be, Part::Other)?;
        let lm_w = &self.weights.output;
        tm.matmul(t, &lm_w.cost);
        // Every row goes straight into its canvas's buffer: one product for the whole
        // batch (the head's weights read once), with no batch-sized buffer or copy.
        let xn = B::view(&s.xn, 0..n);
        if let [out] = outs {
            be.matmul_to_host(xn, t, &lm_w.w, out)?;
        } else {
            let mut rows: Vec<&mut [f32]> = segs
                .iter()
                .zip(outs.iter_mut())
                .flat_map(|(seg, o)| o[..seg.out_rows() * lm_w.n].chunks_exact_mut(lm_w.n))
                .collect();
            be.matmul_to_host_rows(xn, &lm_w.w, &mut rows)?;
        }
        tm.mark(be, Part::LmHead)?;
        if let Some(b) = &lm_w.b {
            // No supported architecture's LM head has a bias; added on the host if one does.
            let b = be.vector_to_host(b)?;
            for out in outs.iter_mut() {
                for row in out.chunks_exact_mut(lm_w.n) {
                    for (o, &v) in row.iter_mut().zip(&b) {
                        *o += v;
                    }
                }
            }
            tm.mark(be, Part::Other)?;
        }
        Ok(())
    }
}

/// Reused buffers of a dense SwiGLU block.
struct DenseBufs<'a, B: Backend> {
    gate: &'a mut B::Buf,
    up: &'a mut B::Buf,
    act: &'a mut B::Buf,
}

/// `y = down(silu(gate(x)) * up(x))` over `t` rows.
fn dense<B: Backend>(
    be: &mut B,
    tm: &mut Timer,
    ffn: &Dense<B>,
    x: B::View<'_>,
    t: usize,
    y: B::ViewMut<'_>,
    bufs: DenseBufs<'_, B>,
) -> Result<()> {
    let n = t * ffn.gate.n;
    for b in [&mut *bufs.gate, &mut *bufs.up, &mut *bufs.act] {
        be.ensure(b, n)?;
    }
    linear(be, tm, &ffn.gate, x, t, B::view_mut(bufs.gate, 0..n))?;
    linear(be, tm, &ffn.up, x, t, B::view_mut(bufs.up, 0..n))?;
    let (g, u) = (B::view(bufs.gate, 0..n), B::view(bufs.up, 0..n));
    be.swiglu(g, u, B::view_mut(bufs.act, 0..n))?;
    tm.mark(be, Part::Other)?;
    linear(be, tm, &ffn.down, B::view(bufs.act, 0..n), t, y)
}

/// `y = x W^T (+ b)`, the matmul and the bias add charged to their parts.
pub(crate) fn linear<B: Backend>(
    be: &mut B,
    tm: &mut Timer,
    lin: &Linear<B>,
    x: B::View<'_>,
    t: usize,
    mut y: B::ViewMut<'_>,
) -> Result<()> {
    tm.matmul(t, &lin.cost);
    match &lin.b {
        None => {
            be.matmul(x, t, &lin.w, y)?;
            tm.mark(be, Part::Gemm)
        }
        Some(b) => {
            be.matmul(x, t, &lin.w, B::reborrow(&mut y))?;
            tm.mark(be, Part::Gemm)?;
            be.add_bias(y, b)?;
            tm.mark(be, Part::Other)
        }
    }
}
