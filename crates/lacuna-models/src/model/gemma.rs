//! DiffusionGemma's two passes over the shared Gemma 4 weights, as Hugging Face's
//! `DiffusionGemmaEncoderModel` / `DiffusionGemmaDecoderModel` and llama.cpp's #24423 graph
//! compute them:
//!
//! - the **encoder** runs prompt (or committed canvas) tokens causally at the positions after
//!   the cache, sliding layers seeing the keys less than the window back, writes every layer's
//!   keys and values into the cache, and scales each layer's output by the encoder scalar;
//! - the **decoder** runs a canvas bidirectionally over the cache without committing it:
//!   global layers see every cached key, sliding layers the last `window - 1` (what Hugging
//!   Face's sliding cache holds), both the whole canvas; its input is the canvas embedding
//!   plus the self-conditioning signal, normalised without scale; the decoder scalars apply.
//!
//! Each layer: attention (Q/K RMS norms, V = its own projection or the raw K on global
//! layers, normalised without scale; RoPE NeoX, proportional on global layers; scale 1),
//! post-norm and residual; a dense GeGLU block and the experts (routed by the residual's own
//! norm), each post-normed, summed, post-normed again, added; the layer scalar. Then the
//! final norm, the tied head and the logit softcap.

use crate::backend::{AttnShape, Backend, RopeParams};
use crate::model::cache::KvCache;
use crate::model::moe::{self, MoeScratch};
use crate::model::pass::linear;
use crate::model::timer::{Part, Timer};
use crate::weights::gemma::{GemmaLayer, GemmaWeights};
use crate::weights::{Dense, Weights};
use crate::{Config, GemmaConfig, Result, RopeStyle};

/// Reused activation buffers of the Gemma passes.
pub(crate) struct GemmaScratch<B: Backend> {
    x: B::Buf,
    xn: B::Buf,
    xr: B::Buf,
    q: B::Buf,
    k: B::Buf,
    v: B::Buf,
    tmp: B::Buf,
    attn: B::Buf,
    h1: B::Buf,
    h2: B::Buf,
    gate: B::Buf,
    up: B::Buf,
    act: B::Buf,
    moe: MoeScratch<B>,
}

/// Canvas rows whose self-conditioning probabilities are held at once (see `condition`).
pub(crate) const SC_CHUNK_ROWS: usize = 64;

#[cfg(test)]
thread_local! {
    /// Tests: another [`SC_CHUNK_ROWS`] for this thread's passes.
    pub(crate) static SC_CHUNK_TEST: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

/// [`SC_CHUNK_ROWS`], or a test's.
fn sc_chunk_rows() -> usize {
    #[cfg(test)]
    if let Some(n) = SC_CHUNK_TEST.get() {
        return n;
    }
    SC_CHUNK_ROWS
}

impl<B: Backend> Default for GemmaScratch<B> {
    fn default() -> Self {
        GemmaScratch {
            x: B::Buf::default(),
            xn: B::Buf::default(),
            xr: B::Buf::default(),
            q: B::Buf::default(),
            k: B::Buf::default(),
            v: B::Buf::default(),
            tmp: B::Buf::default(),
            attn: B::Buf::default(),
            h1: B::Buf::default(),
            h2: B::Buf::default(),
            gate: B::Buf::default(),
            up: B::Buf::default(),
            act: B::Buf::default(),
            moe: MoeScratch::default(),
        }
    }
}

/// Which of the two passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Causal, committing the rows' keys and values.
    Encode,
    /// Bidirectional over the cache, committing nothing.
    Decode,
}

/// One pass's parts.
pub(crate) struct GemmaGraph<'a, B: Backend> {
    pub(crate) cfg: &'a Config,
    pub(crate) g: &'a GemmaConfig,
    pub(crate) w: &'a Weights<B>,
    pub(crate) gw: &'a GemmaWeights<B>,
    pub(crate) be: &'a mut B,
    pub(crate) s: &'a mut GemmaScratch<B>,
    pub(crate) timer: Timer,
}

impl<B: Backend> GemmaGraph<'_, B> {
    /// Embeds `tokens` into `x` (`t x d`), times `sqrt(d)`.
    pub(crate) fn embed(&mut self, table: &B::Table, bytes: &[u8], tokens: &[u32]) -> Result<()> {
        let n = tokens.len() * self.cfg.n_embd;
        self.be.ensure(&mut self.s.x, n)?;
        self.be
            .embed(table, bytes, tokens, B::view_mut(&mut self.s.x, 0..n))?;
        let scale = (self.cfg.n_embd as f32).sqrt();
        self.be.scale(B::view_mut(&mut self.s.x, 0..n), scale)?;
        self.timer.mark(self.be, Part::Other)
    }

    /// The decoder's input: `rms_norm(x + sc)` without scale, `sc` the self-conditioning
    /// block over `softmax(sc_logits) @ E * sqrt(d)` when logits are given (and the file has
    /// the block); without, `sc` is zero (the block maps zeros to zeros).
    pub(crate) fn condition(&mut self, t: usize, sc_logits: Option<&[f32]>) -> Result<()> {
        let d = self.cfg.n_embd;
        let n = t * d;
        if let (Some(logits), Some(sc)) = (sc_logits, &self.gw.self_cond) {
            let nv = self.cfg.n_vocab;
            let (be, s) = (&mut *self.be, &mut *self.s);
            be.ensure(&mut s.h1, n)?;
            // The probabilities a chunk of rows at a time: each row's product is its own (the
            // same bits in any chunk), and at 262k words a whole canvas's would hold 268 MB
            // (and its 8-bit copy 67 MB) for a matrix re-read once more per chunk.
            let chunk = sc_chunk_rows().min(t);
            be.ensure(&mut s.tmp, chunk * nv)?;
            for r0 in (0..t).step_by(chunk) {
                let rows = chunk.min(t - r0);
                let probs = rows * nv;
                be.upload(
                    &logits[r0 * nv..(r0 + rows) * nv],
                    B::view_mut(&mut s.tmp, 0..probs),
                )?;
                be.softmax_rows(B::view_mut(&mut s.tmp, 0..probs), nv)?;
                linear(
                    be,
                    &mut self.timer,
                    &sc.embd_t,
                    B::view(&s.tmp, 0..probs),
                    rows,
                    B::view_mut(&mut s.h1, r0 * d..(r0 + rows) * d),
                )?;
            }
            be.scale(B::view_mut(&mut s.h1, 0..n), (d as f32).sqrt())?;
            be.ensure(&mut s.xn, n)?;
            be.rms_norm(
                B::view(&s.h1, 0..n),
                &sc.pre_norm,
                self.cfg.rms_eps,
                B::view_mut(&mut s.xn, 0..n),
            )?;
            self.timer.mark(be, Part::Other)?;
            self.geglu_block(&sc.mlp, t, false)?;
            let (be, s) = (&mut *self.be, &mut *self.s);
            be.add(B::view_mut(&mut s.x, 0..n), B::view(&s.h2, 0..n))?;
        }
        let (be, s) = (&mut *self.be, &mut *self.s);
        be.ensure(&mut s.xn, n)?;
        be.copy_rows(
            B::view(&s.x, 0..n),
            d,
            0,
            None,
            B::view_mut(&mut s.xn, 0..n),
            d,
        )?;
        be.rms_norm(
            B::view(&s.xn, 0..n),
            &self.gw.ones_d,
            self.cfg.rms_eps,
            B::view_mut(&mut s.x, 0..n),
        )?;
        self.timer.mark(be, Part::Other)
    }

    /// Runs every layer over `x`'s `t` rows at positions `cache.len ..`; an encode pass
    /// commits them (`cache.len += t`).
    pub(crate) fn layers(
        &mut self,
        mode: Mode,
        cache: &mut KvCache<B::Buf>,
        t: usize,
    ) -> Result<()> {
        let n_layer = self.gw.layers.len();
        cache.k.resize_with(n_layer, B::Buf::default);
        cache.v.resize_with(n_layer, B::Buf::default);
        let p0 = cache.len;
        let gw = self.gw;
        for (il, layer) in gw.layers.iter().enumerate() {
            self.layer(mode, layer, il, cache, p0, t)?;
        }
        if mode == Mode::Encode {
            cache.len = p0 + t;
        }
        Ok(())
    }

    fn layer(
        &mut self,
        mode: Mode,
        l: &GemmaLayer<B>,
        il: usize,
        cache: &mut KvCache<B::Buf>,
        p0: usize,
        t: usize,
    ) -> Result<()> {
        let cfg = self.cfg;
        let g = self.g;
        let d = cfg.n_embd;
        let n = t * d;
        let (hd, kvh) = (l.shape.head_dim, l.shape.n_head_kv);
        let (qd, kvd) = (cfg.n_head * hd, kvh * hd);
        let eps = cfg.rms_eps;
        {
            let (be, s, tm) = (&mut *self.be, &mut *self.s, &mut self.timer);
            for (b, len) in [
                (&mut s.xn, n),
                (&mut s.xr, n),
                (&mut s.q, t * qd),
                (&mut s.k, t * kvd),
                (&mut s.v, t * kvd),
                (&mut s.tmp, t * qd.max(d)),
                (&mut s.attn, t * qd),
                (&mut s.h1, n),
                (&mut s.h2, n),
            ] {
                be.ensure(b, len)?;
            }
            be.ensure(&mut cache.k[il], (p0 + t) * kvd)?;
            be.ensure(&mut cache.v[il], (p0 + t) * kvd)?;
            be.rms_norm(
                B::view(&s.x, 0..n),
                &l.attn_norm,
                eps,
                B::view_mut(&mut s.xn, 0..n),
            )?;
            tm.mark(be, Part::Other)?;
            let xn = B::view(&s.xn, 0..n);
            linear(be, tm, &l.q, xn, t, B::view_mut(&mut s.tmp, 0..t * qd))?;
            be.rms_norm(
                B::view(&s.tmp, 0..t * qd),
                &l.q_norm,
                eps,
                B::view_mut(&mut s.q, 0..t * qd),
            )?;
            linear(be, tm, &l.k, xn, t, B::view_mut(&mut s.tmp, 0..t * kvd))?;
            // V: its own projection, or the raw K projection (global layers); normalised
            // without scale, no RoPE.
            match &l.v {
                Some(v) => linear(be, tm, v, xn, t, B::view_mut(&mut s.k, 0..t * kvd))?,
                None => be.copy_rows(
                    B::view(&s.tmp, 0..t * kvd),
                    kvd,
                    0,
                    None,
                    B::view_mut(&mut s.k, 0..t * kvd),
                    kvd,
                )?,
            }
            be.rms_norm(
                B::view(&s.k, 0..t * kvd),
                self.gw.ones(hd),
                eps,
                B::view_mut(&mut s.v, 0..t * kvd),
            )?;
            be.rms_norm(
                B::view(&s.tmp, 0..t * kvd),
                &l.k_norm,
                eps,
                B::view_mut(&mut s.k, 0..t * kvd),
            )?;
            let (style, freq_scale) = (RopeStyle::Neox, 1.0);
            if l.shape.sliding {
                let r = RopeParams {
                    style,
                    n_rot: g.n_rot_swa,
                    freq_base: g.rope_base_swa,
                    freq_scale,
                };
                be.rope(B::view_mut(&mut s.q, 0..t * qd), t, p0, hd, r)?;
                be.rope(B::view_mut(&mut s.k, 0..t * kvd), t, p0, hd, r)?;
            } else {
                let r = RopeParams {
                    style,
                    n_rot: g.n_rot,
                    freq_base: g.rope_base,
                    freq_scale,
                };
                let f = &self.gw.rope_freqs;
                be.rope_factors(B::view_mut(&mut s.q, 0..t * qd), t, p0, hd, r, f)?;
                be.rope_factors(B::view_mut(&mut s.k, 0..t * kvd), t, p0, hd, r, f)?;
            }
            let at = p0 * kvd..(p0 + t) * kvd;
            be.copy_rows(
                B::view(&s.k, 0..t * kvd),
                kvd,
                0,
                None,
                B::view_mut(&mut cache.k[il], at.clone()),
                kvd,
            )?;
            be.copy_rows(
                B::view(&s.v, 0..t * kvd),
                kvd,
                0,
                None,
                B::view_mut(&mut cache.v[il], at),
                kvd,
            )?;
            tm.mark(be, Part::Other)?;
        }
        self.attend(mode, l, il, cache, p0, t)?;
        let (be, s, tm) = (&mut *self.be, &mut *self.s, &mut self.timer);
        linear(
            be,
            tm,
            &l.o,
            B::view(&s.attn, 0..t * qd),
            t,
            B::view_mut(&mut s.tmp, 0..n),
        )?;
        be.rms_norm(
            B::view(&s.tmp, 0..n),
            &l.post_attn_norm,
            eps,
            B::view_mut(&mut s.h1, 0..n),
        )?;
        be.add(B::view_mut(&mut s.x, 0..n), B::view(&s.h1, 0..n))?;
        // The dense block.
        be.rms_norm(
            B::view(&s.x, 0..n),
            &l.ffn_norm,
            eps,
            B::view_mut(&mut s.xn, 0..n),
        )?;
        tm.mark(be, Part::Other)?;
        self.geglu_block(&l.dense, t, true)?;
        let (be, s, tm) = (&mut *self.be, &mut *self.s, &mut self.timer);
        be.rms_norm(
            B::view(&s.tmp, 0..n),
            &l.post_ffw_norm_1,
            eps,
            B::view_mut(&mut s.h1, 0..n),
        )?;
        // The experts: routed by the residual's own norm, fed by `pre_ffw_norm_2`'s.
        be.rms_norm(
            B::view(&s.x, 0..n),
            &l.router_norm,
            eps,
            B::view_mut(&mut s.xr, 0..n),
        )?;
        be.rms_norm(
            B::view(&s.x, 0..n),
            &l.pre_ffw_norm_2,
            eps,
            B::view_mut(&mut s.xn, 0..n),
        )?;
        tm.mark(be, Part::Other)?;
        let (xr, xn) = (B::view(&s.xr, 0..n), B::view(&s.xn, 0..n));
        moe::moe_ffn(
            be,
            tm,
            &l.experts,
            xr,
            xn,
            t,
            d,
            B::view_mut(&mut s.tmp, 0..n),
            &mut s.moe,
        )?;
        tm.mark(be, Part::Gemm)?;
        be.rms_norm(
            B::view(&s.tmp, 0..n),
            &l.post_ffw_norm_2,
            eps,
            B::view_mut(&mut s.h2, 0..n),
        )?;
        be.add(B::view_mut(&mut s.h1, 0..n), B::view(&s.h2, 0..n))?;
        be.rms_norm(
            B::view(&s.h1, 0..n),
            &l.post_ffw_norm,
            eps,
            B::view_mut(&mut s.h2, 0..n),
        )?;
        be.add(B::view_mut(&mut s.x, 0..n), B::view(&s.h2, 0..n))?;
        let scalar = match mode {
            Mode::Encode => l.enc_out_scale,
            Mode::Decode => l.out_scale,
        };
        be.scale(B::view_mut(&mut s.x, 0..n), scalar)?;
        tm.mark(be, Part::Other)
    }

    /// The attention of one layer into `attn` (scale 1: the Q/K norms set the scale).
    fn attend(
        &mut self,
        mode: Mode,
        l: &GemmaLayer<B>,
        il: usize,
        cache: &KvCache<B::Buf>,
        p0: usize,
        t: usize,
    ) -> Result<()> {
        let cfg = self.cfg;
        let (hd, kvh) = (l.shape.head_dim, l.shape.n_head_kv);
        let (qd, kvd) = (cfg.n_head * hd, kvh * hd);
        let window = self.g.sliding_window;
        let (be, s, tm) = (&mut *self.be, &mut *self.s, &mut self.timer);
        let (kc, vc) = (&cache.k[il], &cache.v[il]);
        let shape = |queries, keys, pos0, block| AttnShape {
            queries,
            keys,
            n_head: cfg.n_head,
            n_head_kv: kvh,
            head_dim: hd,
            scale: 1.0,
            pos0,
            block,
        };
        match mode {
            Mode::Decode => {
                // Every canvas query sees the same keys: the cache (on sliding layers its
                // last `window - 1` positions) and the whole canvas.
                let lo = if l.shape.sliding {
                    p0.saturating_sub(window - 1)
                } else {
                    0
                };
                let keys = lo * kvd..(p0 + t) * kvd;
                be.attention(
                    B::view(&s.q, 0..t * qd),
                    B::view(kc, keys.clone()),
                    B::view(vc, keys),
                    shape(t, p0 + t - lo, 0, None),
                    None,
                    B::view_mut(&mut s.attn, 0..t * qd),
                )?;
            }
            Mode::Encode => {
                // Causal; on sliding layers a query at `p` sees the keys after `p - window`.
                // The rows whose window reaches back to position 0 run as one causal call;
                // each later row runs over its own window of keys.
                let whole = if l.shape.sliding {
                    window.saturating_sub(p0).min(t)
                } else {
                    t
                };
                if whole > 0 {
                    let keys = 0..(p0 + whole) * kvd;
                    be.attention(
                        B::view(&s.q, 0..whole * qd),
                        B::view(kc, keys.clone()),
                        B::view(vc, keys),
                        shape(whole, p0 + whole, p0, Some(1)),
                        None,
                        B::view_mut(&mut s.attn, 0..whole * qd),
                    )?;
                }
                for r in whole..t {
                    let p = p0 + r;
                    let keys = (p + 1 - window) * kvd..(p + 1) * kvd;
                    be.attention(
                        B::view(&s.q, r * qd..(r + 1) * qd),
                        B::view(kc, keys.clone()),
                        B::view(vc, keys),
                        shape(1, window, 0, None),
                        None,
                        B::view_mut(&mut s.attn, r * qd..(r + 1) * qd),
                    )?;
                }
            }
        }
        tm.mark(be, Part::Attention)
    }

    /// `down(gelu_tanh(gate(xn)) * up(xn))` over `t` rows of `xn`, into `tmp` (or `h2`).
    fn geglu_block(&mut self, mlp: &Dense<B>, t: usize, into_tmp: bool) -> Result<()> {
        let (be, s, tm) = (&mut *self.be, &mut *self.s, &mut self.timer);
        let (ff, k, d) = (mlp.gate.n, mlp.gate.cost.k, mlp.down.n);
        for b in [&mut s.gate, &mut s.up, &mut s.act] {
            be.ensure(b, t * ff)?;
        }
        let xn = B::view(&s.xn, 0..t * k);
        linear(
            be,
            tm,
            &mlp.gate,
            xn,
            t,
            B::view_mut(&mut s.gate, 0..t * ff),
        )?;
        linear(be, tm, &mlp.up, xn, t, B::view_mut(&mut s.up, 0..t * ff))?;
        be.geglu(
            B::view(&s.gate, 0..t * ff),
            B::view(&s.up, 0..t * ff),
            B::view_mut(&mut s.act, 0..t * ff),
        )?;
        tm.mark(be, Part::Other)?;
        let out = if into_tmp { &mut s.tmp } else { &mut s.h2 };
        linear(
            be,
            tm,
            &mlp.down,
            B::view(&s.act, 0..t * ff),
            t,
            B::view_mut(out, 0..t * d),
        )
    }

    /// The final norm, the head and the softcap over `x`'s `t` rows into `out`.
    pub(crate) fn head(&mut self, t: usize, out: &mut [f32]) -> Result<()> {
        let d = self.cfg.n_embd;
        let n = t * d;
        let (be, s, tm) = (&mut *self.be, &mut *self.s, &mut self.timer);
        be.ensure(&mut s.xn, n)?;
        be.rms_norm(
            B::view(&s.x, 0..n),
            &self.w.output_norm,
            self.cfg.rms_eps,
            B::view_mut(&mut s.xn, 0..n),
        )?;
        tm.mark(be, Part::Other)?;
        tm.matmul(t, &self.w.output.cost);
        be.matmul_to_host(B::view(&s.xn, 0..n), t, &self.w.output.w, out)?;
        tm.mark(be, Part::LmHead)?;
        if let Some(c) = self.g.softcap {
            // Host logits whatever the backend: the vectorised, parallel tanh.
            lacuna_cpu::softcap(out, c);
        }
        tm.mark(be, Part::Other)
    }
}
