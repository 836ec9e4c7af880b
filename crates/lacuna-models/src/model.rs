//! [`Model`]: a loaded model and its forward pass over a whole canvas with bidirectional
//! attention, as llama.cpp's `llada`, `dream` and `llada-moe` graphs compute it.

use std::ops::Range;
use std::path::Path;
use std::time::{Duration, Instant};

use lacuna_gguf::{GgufFile, TensorInfo};
use lacuna_sampler::Pass;

use crate::backend::{AttnShape, Backend, RopeParams, WeightPlan};
use crate::cpu::CpuBackend;
use crate::weights::{Dense, Ffn, Linear, Loader, Qkv, Weights};
use crate::{Arch, Config, Error, Result};

mod moe;

/// LLaDA2's default block length (its generate code's `block_length=32`).
pub const DEFAULT_BLOCK: usize = 32;

/// Wall time spent in each part of the forward passes since the last reset.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PartTimes {
    /// Projections and feed-forward matmuls (including MoE routing and experts).
    pub gemm: Duration,
    /// Attention (scores, softmax, weighted sum of values).
    pub attention: Duration,
    /// The LM head matmul.
    pub lm_head: Duration,
    /// Embedding lookup, norms, RoPE, SwiGLU, residual adds, bias adds.
    pub other: Duration,
    /// Forward passes timed.
    pub passes: u32,
    /// Bytes of expert weights the passes read, in the form the backend keeps them: each
    /// expert that at least one token was routed to, once per layer and pass.
    pub expert_bytes: u64,
    /// Expert matmul groups run (expert x layer x pass with at least one token).
    pub experts_run: u64,
}

/// Reused activation buffers, the backend's own: they grow to the largest canvas seen
/// and are never freed between passes.
struct Scratch<B: Backend> {
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
        }
    }
}

/// Per-layer keys (after RoPE) and values of every canvas position, kept between passes:
/// written by [`Pass::Fill`] for every position and by [`Pass::Window`] for the window's;
/// read by every pass that uses the cache. Buffers (the backend's: device memory on a GPU)
/// grow to the longest canvas and stay.
///
/// A [`Model`] owns one; a program that interleaves several canvases on one model (a server)
/// keeps one per canvas and swaps it in around each pass with [`Model::swap_cache`].
#[derive(Debug, Default)]
pub struct KvCache<Buf = Vec<f32>> {
    /// The canvas length the cache holds (block-causal: the positions up to the last
    /// window's end); 0 when empty or after a failed pass.
    len: usize,
    /// The attention block length the cache was computed with.
    block: Option<usize>,
    /// `[layer][position x kv_dim]`.
    k: Vec<Buf>,
    /// `[layer][position x kv_dim]`.
    v: Vec<Buf>,
}

impl<Buf: Default> KvCache<Buf> {
    fn prepare<B: Backend<Buf = Buf>>(
        &mut self,
        be: &mut B,
        layers: usize,
        t: usize,
        kv_dim: usize,
    ) -> Result<()> {
        self.k.resize_with(layers, Buf::default);
        self.v.resize_with(layers, Buf::default);
        for b in self.k.iter_mut().chain(self.v.iter_mut()) {
            be.ensure(b, t * kv_dim)?;
        }
        Ok(())
    }
}

/// A diffusion language model ready to run on backend `B`.
pub struct Model<B: Backend = CpuBackend> {
    file: GgufFile,
    config: Config,
    embd: TensorInfo,
    embd_table: B::Table,
    weights: Weights<B>,
    backend: B,
    scratch: Scratch<B>,
    cache: KvCache<B::Buf>,
    times: PartTimes,
    /// Block length of block-causal attention (LLaDA2), `None` = bidirectional.
    attn_block: Option<usize>,
    /// See [`Model::weight_bytes`].
    weight_bytes: usize,
}

impl<B: Backend> std::fmt::Debug for Model<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("config", &self.config)
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

impl Model<CpuBackend> {
    /// Memory-maps the GGUF file at `path` and loads it on the CPU backend.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        Self::load(GgufFile::open(path)?, CpuBackend::new())
    }
}

impl<B: Backend> Model<B> {
    /// Reads the hyperparameters, checks every tensor's shape and type, and prepares the
    /// weights on `backend` (the token embedding stays in the file and is read by row).
    pub fn load(file: GgufFile, mut backend: B) -> Result<Self> {
        let config = Config::from_metadata(file.metadata())?;
        let mut plan = WeightPlan::default();
        // Matrices the backend prepares: 2-D and 3-D tensors but the token embedding, which
        // stays in the file unless it is also the LM head (vectors are norms and biases).
        let tied = !file.tensors().iter().any(|t| t.name == "output.weight");
        for t in file.tensors().iter().filter(|t| t.dims.len() >= 2) {
            let (elements, bytes) = (
                t.dims.iter().product::<u64>(),
                file.info_data(t).len() as u64,
            );
            if t.name.ends_with("_exps.weight") {
                plan.expert_elements += elements;
                plan.expert_bytes += bytes;
            } else if t.name != "token_embd.weight" || tied {
                plan.dense_elements += elements;
                plan.dense_bytes += bytes;
            }
        }
        backend.plan_weights(plan)?;
        let loader = Loader {
            file: &file,
            backend: &backend,
            prepared: Default::default(),
        };
        let embd = loader
            .checked("token_embd.weight", &[config.n_embd, config.n_vocab])?
            .clone();
        if !lacuna_quant::can_dequantize(embd.ty) {
            return Err(Error::TensorType {
                name: embd.name,
                ty: embd.ty,
                supported: crate::weights::MATRIX_TYPES,
            });
        }
        let weights = loader.load(&config)?;
        let weight_bytes = loader.prepared.get();
        let embd_table = backend.prepare_table(
            embd.ty,
            config.n_vocab,
            config.n_embd,
            file.info_data(&embd),
        )?;
        let attn_block = config.arch.block_causal().then_some(DEFAULT_BLOCK);
        Ok(Model {
            file,
            config,
            embd,
            embd_table,
            weights,
            backend,
            scratch: Scratch::default(),
            cache: KvCache::default(),
            times: PartTimes::default(),
            attn_block,
            weight_bytes,
        })
    }

    /// Bytes the backend holds for the model's matrices (repacked or compact), the token
    /// embedding aside (it is read from the file by row).
    pub fn weight_bytes(&self) -> usize {
        self.weight_bytes
    }

    /// The block length of block-causal attention, `None` when attention is
    /// bidirectional (every architecture but LLaDA2).
    pub fn attention_block(&self) -> Option<usize> {
        self.attn_block
    }

    /// Sets the block length of LLaDA2's block-causal attention: position `p` attends to
    /// the positions before `(p / block + 1) * block`. LLaDA2's generate code builds this
    /// mask from the sampler's block length, so a generation sets both alike; 1 is plain
    /// causal attention (the autoregressive BailingMoE-v2 graph). Errors for 0 and for
    /// bidirectional architectures. A cache computed with another block length is not
    /// reused by window passes.
    pub fn set_attention_block(&mut self, block: usize) -> Result<()> {
        if !self.config.arch.block_causal() {
            return Err(Error::NotBlockCausal {
                arch: self.config.arch,
            });
        }
        if block == 0 {
            return Err(Error::ZeroAttentionBlock);
        }
        self.attn_block = Some(block);
        Ok(())
    }

    /// The hyperparameters.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The architecture.
    pub fn arch(&self) -> Arch {
        self.config.arch
    }

    /// Logits per row.
    pub fn vocab_size(&self) -> usize {
        self.config.n_vocab
    }

    /// The training context length (the longest canvas accepted).
    pub fn context_length(&self) -> usize {
        self.config.n_ctx
    }

    /// The mask token id, when the file names one.
    pub fn mask_token_id(&self) -> Option<u32> {
        self.config.mask_token_id
    }

    /// Whether row `i - 1` predicts token `i` (Dream).
    pub fn shift_logits(&self) -> bool {
        self.config.shift_logits
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The GGUF file the model was loaded from.
    pub fn file(&self) -> &GgufFile {
        &self.file
    }

    /// Time per part of the forward passes since the last [`Model::reset_part_times`].
    pub fn part_times(&self) -> PartTimes {
        self.times
    }

    /// Zeroes the [`PartTimes`].
    pub fn reset_part_times(&mut self) {
        self.times = PartTimes::default();
    }

    /// Logits of every canvas position, `tokens.len() x vocab_size()` into `out`.
    pub fn forward_all(&mut self, tokens: &[u32], out: &mut [f32]) -> Result<()> {
        self.run(tokens, &Pass::Full, None, out)
    }

    /// Logits of the canvas rows `rows` (ascending, distinct), `rows.len() x vocab_size()`
    /// into `out`. The whole canvas is run (every position attends to every other); only
    /// the last layer's feed-forward and the LM head are restricted to `rows`.
    pub fn forward(&mut self, tokens: &[u32], rows: &[usize], out: &mut [f32]) -> Result<()> {
        self.run(tokens, &Pass::Full, Some(rows), out)
    }

    /// [`Model::forward`] as `pass` says: [`Pass::Full`] is [`Model::forward`];
    /// [`Pass::Fill`] computes the same logits (bit for bit) and keeps every layer's keys and
    /// values; [`Pass::Window`] runs only the window's positions, their queries attending to
    /// the window's fresh keys and values and to the cached ones of every other position
    /// (rows must lie in the window). The cache belongs to the model: it holds one canvas.
    pub fn forward_pass(
        &mut self,
        tokens: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<()> {
        self.run(tokens, pass, Some(rows), out)
    }

    /// Exchanges the model's key/value cache with `cache`: the next cached pass reads and
    /// writes `cache`'s canvas. A new (default) cache is empty, so its first pass must be a
    /// [`Pass::Fill`].
    pub fn swap_cache(&mut self, cache: &mut KvCache<B::Buf>) {
        std::mem::swap(&mut self.cache, cache);
    }

    /// Bytes the key/value cache holds now.
    pub fn cache_bytes(&self) -> usize {
        let floats: usize = self
            .cache
            .k
            .iter()
            .chain(&self.cache.v)
            .map(B::buf_len)
            .sum();
        floats * std::mem::size_of::<f32>()
    }

    /// The positions a pass runs through the layers, checked against the cache.
    fn window(&self, t: usize, pass: &Pass, rows: Option<&[usize]>) -> Result<Range<usize>> {
        let Pass::Window(w) = pass else {
            return Ok(0..t);
        };
        let bad = |row| Error::BadWindow {
            start: w.start,
            end: w.end,
            len: t,
            row,
        };
        if w.start >= w.end || w.end > t {
            return Err(bad(w.end));
        }
        // Bidirectional: the window attends to every position, so the cache must hold this
        // canvas. Block-causal: a position sees only the blocks up to its own, so a window
        // needs the keys and values of the positions before it, which earlier passes on the
        // same prefix left (the canvas may have grown since, block by block).
        let filled = self.cache.block == self.attn_block
            && match self.attn_block {
                None => self.cache.len == t,
                Some(_) => self.cache.len >= w.start,
            };
        if !filled {
            return Err(Error::CacheNotFilled {
                len: t,
                cached: self.cache.len,
            });
        }
        if let Some(&row) = rows.into_iter().flatten().find(|r| !w.contains(r)) {
            return Err(bad(row));
        }
        Ok(w.clone())
    }

    fn check(&self, tokens: &[u32], rows: Option<&[usize]>, out: &[f32]) -> Result<usize> {
        let t = tokens.len();
        if t == 0 || t > self.config.n_ctx {
            return Err(Error::CanvasLength {
                len: t,
                max: self.config.n_ctx,
            });
        }
        for (position, &token) in tokens.iter().enumerate() {
            if token as usize >= self.config.n_vocab {
                return Err(Error::TokenOutOfRange {
                    token,
                    position,
                    vocab: self.config.n_vocab,
                });
            }
        }
        let n_rows = match rows {
            None => t,
            Some(rows) => {
                let mut prev = None;
                for &row in rows {
                    if row >= t || prev.is_some_and(|p| row <= p) {
                        return Err(Error::BadRow { row, len: t });
                    }
                    prev = Some(row);
                }
                rows.len()
            }
        };
        let expected = n_rows * self.config.n_vocab;
        if out.len() != expected {
            return Err(Error::OutputLength {
                expected,
                found: out.len(),
            });
        }
        Ok(n_rows)
    }

    fn run(
        &mut self,
        tokens: &[u32],
        pass: &Pass,
        rows: Option<&[usize]>,
        out: &mut [f32],
    ) -> Result<()> {
        let n_rows = self.check(tokens, rows, out)?;
        let window = self.window(tokens.len(), pass, rows)?;
        if n_rows == 0 {
            return Ok(());
        }
        let t_all = tokens.len();
        let pos0 = window.start;
        let t = window.len();
        // Requested rows as indices into the window; all of them in order is no selection.
        let local: Option<Vec<usize>> = rows
            .map(|r| r.iter().map(|&i| i - pos0).collect())
            .filter(|r: &Vec<usize>| r.len() != t);
        let rows = local.as_deref();
        let cfg = &self.config;
        let d = cfg.n_embd;
        let kvd = cfg.kv_dim();
        let qd = cfg.q_dim();
        let s = &mut self.scratch;
        let be = &mut self.backend;
        let tm = &mut self.times;
        let mut cache = match pass {
            Pass::Full => None,
            Pass::Fill | Pass::Window(_) => {
                // Invalid until this pass has written every layer. (Growing keeps the
                // positions already cached: the layout is position-major per layer.)
                self.cache.len = 0;
                self.cache.prepare(be, cfg.n_layer, t_all, kvd)?;
                Some(&mut self.cache)
            }
        };
        let clock = Instant::now();
        for (b, n) in [
            (&mut s.x, t * d),
            (&mut s.xn, t * d),
            (&mut s.q, t * qd),
            (&mut s.attn, t * qd),
            (&mut s.proj, t * qd.max(d)),
            (&mut s.rows, t * d),
        ] {
            be.ensure(b, n)?;
        }
        if cache.is_none() {
            be.ensure(&mut s.k, t * kvd)?;
            be.ensure(&mut s.v, t * kvd)?;
        }

        // Embedding rows (ggml get_rows: dequantized to f32, bit-exact).
        be.embed(
            &self.embd_table,
            self.file.info_data(&self.embd),
            &tokens[window.clone()],
            B::view_mut(&mut s.x, 0..t * d),
        )?;
        let mut other = clock.elapsed();
        let (mut gemm, mut attention) = (Duration::ZERO, Duration::ZERO);
        let rope = RopeParams {
            style: cfg.arch.rope_style(),
            n_rot: cfg.n_rot,
            freq_base: cfg.rope_freq_base,
            freq_scale: cfg.rope_freq_scale,
        };
        let shape = AttnShape {
            queries: t,
            keys: t_all,
            n_head: cfg.n_head,
            n_head_kv: cfg.n_head_kv,
            head_dim: cfg.head_dim,
            scale: 1.0 / (cfg.head_dim as f32).sqrt(),
            pos0,
            block: self.attn_block,
        };
        let mut cur_t = t;
        for (il, layer) in self.weights.layers.iter().enumerate() {
            let last = il + 1 == cfg.n_layer;
            let c = Instant::now();
            be.rms_norm(
                B::view(&s.x, 0..t * d),
                &layer.attn_norm,
                cfg.rms_eps,
                B::view_mut(&mut s.xn, 0..t * d),
            )?;
            other += c.elapsed();
            // A cached pass writes the window's keys and values straight into the cache.
            let kv = match cache {
                Some(_) => pos0 * kvd..(pos0 + t) * kvd,
                None => 0..t * kvd,
            };
            let (kbuf, vbuf) = match cache.as_deref_mut() {
                Some(c) => (&mut c.k[il], &mut c.v[il]),
                None => (&mut s.k, &mut s.v),
            };
            let xn = B::view(&s.xn, 0..t * d);
            match &layer.qkv {
                Qkv::Split {
                    q: wq,
                    k: wk,
                    v: wv,
                } => {
                    let q = B::view_mut(&mut s.q, 0..t * qd);
                    linear(be, wq, xn, t, q, &mut gemm, &mut other)?;
                    let k = B::view_mut(kbuf, kv.clone());
                    linear(be, wk, xn, t, k, &mut gemm, &mut other)?;
                    let v = B::view_mut(vbuf, kv.clone());
                    linear(be, wv, xn, t, v, &mut gemm, &mut other)?;
                }
                Qkv::Fused(lin) => {
                    // One `[t x (q + 2 kv)]` product, then each row split into Q, K and V
                    // (llama.cpp's `build_qkv` views of `wqkv`'s output).
                    be.ensure(&mut s.gate, t * lin.n)?;
                    let fused = B::view_mut(&mut s.gate, 0..t * lin.n);
                    linear(be, lin, xn, t, fused, &mut gemm, &mut other)?;
                    let c = Instant::now();
                    let fused = B::view(&s.gate, 0..t * lin.n);
                    be.copy_rows(fused, lin.n, 0, None, B::view_mut(&mut s.q, 0..t * qd), qd)?;
                    let k = B::view_mut(kbuf, kv.clone());
                    be.copy_rows(fused, lin.n, qd, None, k, kvd)?;
                    let v = B::view_mut(vbuf, kv.clone());
                    be.copy_rows(fused, lin.n, qd + kvd, None, v, kvd)?;
                    other += c.elapsed();
                }
            }
            let c = Instant::now();
            if let (Some(qn), Some(kn)) = (&layer.q_norm, &layer.k_norm) {
                let tmp = B::view_mut(&mut s.proj, 0..t * qd);
                be.copy_rows(B::view(&s.q, 0..t * qd), qd, 0, None, tmp, qd)?;
                let tmp = B::view(&s.proj, 0..t * qd);
                be.rms_norm(tmp, qn, cfg.rms_eps, B::view_mut(&mut s.q, 0..t * qd))?;
                let tmp = B::view_mut(&mut s.proj, 0..t * kvd);
                be.copy_rows(B::view(kbuf, kv.clone()), kvd, 0, None, tmp, kvd)?;
                let tmp = B::view(&s.proj, 0..t * kvd);
                be.rms_norm(tmp, kn, cfg.rms_eps, B::view_mut(kbuf, kv.clone()))?;
            }
            be.rope(
                B::view_mut(&mut s.q, 0..t * qd),
                t,
                pos0,
                cfg.head_dim,
                rope,
            )?;
            be.rope(B::view_mut(kbuf, kv.clone()), t, pos0, cfg.head_dim, rope)?;
            other += c.elapsed();

            let c = Instant::now();
            let sel = if last { rows } else { None };
            let out_t = sel.map_or(t, <[usize]>::len);
            let (keys, values) = match cache.as_deref() {
                Some(c) => (
                    B::view(&c.k[il], 0..t_all * kvd),
                    B::view(&c.v[il], 0..t_all * kvd),
                ),
                None => (B::view(&s.k, 0..t * kvd), B::view(&s.v, 0..t * kvd)),
            };
            be.attention(
                B::view(&s.q, 0..t * qd),
                keys,
                values,
                shape,
                sel,
                B::view_mut(&mut s.attn, 0..out_t * qd),
            )?;
            attention += c.elapsed();
            if let Some(sel) = sel {
                // llama.cpp's `inp_out_ids`: keep only the requested rows from here on.
                let c = Instant::now();
                let g = B::view_mut(&mut s.rows, 0..out_t * d);
                be.copy_rows(B::view(&s.x, 0..t * d), d, 0, Some(sel), g, d)?;
                let g = B::view(&s.rows, 0..out_t * d);
                be.copy_rows(g, d, 0, None, B::view_mut(&mut s.x, 0..out_t * d), d)?;
                other += c.elapsed();
            }
            cur_t = out_t;
            let n = cur_t * d;
            let attn = B::view(&s.attn, 0..cur_t * qd);
            let proj = B::view_mut(&mut s.proj, 0..n);
            linear(be, &layer.o, attn, cur_t, proj, &mut gemm, &mut other)?;
            let c = Instant::now();
            be.add(B::view_mut(&mut s.x, 0..n), B::view(&s.proj, 0..n))?;
            be.rms_norm(
                B::view(&s.x, 0..n),
                &layer.ffn_norm,
                cfg.rms_eps,
                B::view_mut(&mut s.xn, 0..n),
            )?;
            other += c.elapsed();

            match &layer.ffn {
                Ffn::Dense(ffn) => {
                    let bufs = DenseBufs::<B> {
                        gate: &mut s.gate,
                        up: &mut s.up,
                        act: &mut s.act,
                    };
                    let (xn, proj) = (B::view(&s.xn, 0..n), B::view_mut(&mut s.proj, 0..n));
                    dense(be, ffn, xn, cur_t, proj, bufs, &mut gemm, &mut other)?;
                }
                Ffn::Moe(experts) => {
                    let c = Instant::now();
                    let (xn, proj) = (B::view(&s.xn, 0..n), B::view_mut(&mut s.proj, 0..n));
                    let (bytes, run) = moe::moe_ffn(be, experts, xn, cur_t, d, proj, &mut s.moe)?;
                    tm.expert_bytes += bytes;
                    tm.experts_run += run;
                    gemm += c.elapsed();
                    if let Some(shared) = &experts.shared {
                        // llama.cpp: `moe_out + ffn_shexp`, the shared block on the same
                        // normalised input.
                        let bufs = DenseBufs::<B> {
                            gate: &mut s.gate,
                            up: &mut s.up,
                            act: &mut s.act,
                        };
                        let (xn, y) = (B::view(&s.xn, 0..n), B::view_mut(&mut s.rows, 0..n));
                        dense(be, shared, xn, cur_t, y, bufs, &mut gemm, &mut other)?;
                        let c = Instant::now();
                        be.add(B::view_mut(&mut s.proj, 0..n), B::view(&s.rows, 0..n))?;
                        other += c.elapsed();
                    }
                }
            }
            let c = Instant::now();
            be.add(B::view_mut(&mut s.x, 0..n), B::view(&s.proj, 0..n))?;
            other += c.elapsed();
        }
        let c = Instant::now();
        let n = cur_t * d;
        be.rms_norm(
            B::view(&s.x, 0..n),
            &self.weights.output_norm,
            cfg.rms_eps,
            B::view_mut(&mut s.xn, 0..n),
        )?;
        other += c.elapsed();
        let c = Instant::now();
        let lm_w = &self.weights.output;
        be.matmul_to_host(B::view(&s.xn, 0..n), cur_t, &lm_w.w, out)?;
        let lm = c.elapsed();
        if let Some(b) = &lm_w.b {
            // No supported architecture's LM head has a bias; added on the host if one does.
            let c = Instant::now();
            let b = be.vector_to_host(b)?;
            for row in out.chunks_exact_mut(lm_w.n) {
                for (o, &v) in row.iter_mut().zip(&b) {
                    *o += v;
                }
            }
            other += c.elapsed();
        }
        tm.gemm += gemm;
        tm.attention += attention;
        tm.lm_head += lm;
        tm.other += other;
        tm.passes += 1;
        if let Some(c) = cache {
            // Block-causal: the positions up to the window's end are exact now; any cached
            // beyond it belong to a longer canvas of earlier passes and are not kept.
            c.len = match (pass, self.attn_block) {
                (Pass::Window(w), Some(_)) => w.end,
                _ => t_all,
            };
            c.block = self.attn_block;
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
#[allow(clippy::too_many_arguments)]
fn dense<B: Backend>(
    be: &mut B,
    ffn: &Dense<B>,
    x: B::View<'_>,
    t: usize,
    y: B::ViewMut<'_>,
    bufs: DenseBufs<'_, B>,
    gemm: &mut Duration,
    other: &mut Duration,
) -> Result<()> {
    let n = t * ffn.gate.n;
    for b in [&mut *bufs.gate, &mut *bufs.up, &mut *bufs.act] {
        be.ensure(b, n)?;
    }
    linear(
        be,
        &ffn.gate,
        x,
        t,
        B::view_mut(bufs.gate, 0..n),
        gemm,
        other,
    )?;
    linear(be, &ffn.up, x, t, B::view_mut(bufs.up, 0..n), gemm, other)?;
    let c = Instant::now();
    let (g, u) = (B::view(bufs.gate, 0..n), B::view(bufs.up, 0..n));
    be.swiglu(g, u, B::view_mut(bufs.act, 0..n))?;
    *other += c.elapsed();
    linear(be, &ffn.down, B::view(bufs.act, 0..n), t, y, gemm, other)
}

/// `y = x W^T (+ b)`, timing the matmul and the bias add separately.
fn linear<B: Backend>(
    be: &mut B,
    lin: &Linear<B>,
    x: B::View<'_>,
    t: usize,
    mut y: B::ViewMut<'_>,
    gemm: &mut Duration,
    other: &mut Duration,
) -> Result<()> {
    let c = Instant::now();
    match &lin.b {
        None => {
            be.matmul(x, t, &lin.w, y)?;
            *gemm += c.elapsed();
        }
        Some(b) => {
            be.matmul(x, t, &lin.w, B::reborrow(&mut y))?;
            *gemm += c.elapsed();
            let c = Instant::now();
            be.add_bias(y, b)?;
            *other += c.elapsed();
        }
    }
    Ok(())
}

impl<B: Backend> lacuna_sampler::Denoiser for Model<B> {
    type Error = Error;

    fn vocab_size(&self) -> usize {
        self.config.n_vocab
    }

    fn logits(&mut self, canvas: &[u32], rows: &[usize], out: &mut [f32]) -> Result<()> {
        self.forward(canvas, rows, out)
    }

    fn supports_cache(&self) -> bool {
        true
    }

    fn forward(
        &mut self,
        canvas: &[u32],
        pass: &Pass,
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<()> {
        self.forward_pass(canvas, pass, rows, out)
    }
}

#[cfg(test)]
mod tests;
