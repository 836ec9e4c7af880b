//! [`Model`]: a loaded model and its forward pass over a whole canvas with bidirectional
//! attention, as llama.cpp's `llada`, `dream` and `llada-moe` graphs compute it.

use std::ops::Range;
use std::path::Path;

use lacuna_gguf::{GgufFile, TensorInfo};
use lacuna_sampler::Pass;

use crate::backend::{Backend, PlannedMatrix, WeightPlan};
use crate::cpu::CpuBackend;
use crate::weights::{Loader, Weights};
use crate::{Arch, Config, Error, Result};

mod cache;
mod gemma;
pub(crate) use gemma::SC_CHUNK_ROWS;
pub(crate) mod moe;
mod pass;
mod timer;

pub use cache::{Bound, KvCache, PassSpec};
pub use timer::PartTimes;

use pass::{Geometry, Graph, Scratch, Segment};
use timer::Timer;

/// LLaDA2's default block length (its generate code's `block_length=32`).
pub const DEFAULT_BLOCK: usize = 32;

/// A diffusion language model ready to run on backend `B`.
pub struct Model<B: Backend = CpuBackend> {
    file: GgufFile,
    config: Config,
    embd: TensorInfo,
    /// Whether the LM head is `token_embd` (see [`Model::table_bytes`]).
    tied: bool,
    embd_table: B::Table,
    weights: Weights<B>,
    backend: B,
    scratch: Scratch<B>,
    times: PartTimes,
    /// Whether passes time their parts (see [`Model::set_profiling`]).
    profiling: bool,
    /// See [`Model::weight_bytes`].
    weight_bytes: usize,
    /// Of `weight_bytes`, those read in place from the file's pages.
    weight_bytes_in_file: usize,
    /// `diffusion-gemma`'s activation buffers.
    gemma_scratch: gemma::GemmaScratch<B>,
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
        backend.check_config(&config)?;
        let mut plan = WeightPlan::default();
        // Matrices the backend prepares: 2-D and 3-D tensors but the token embedding, which
        // stays in the file unless it is also the LM head (vectors are norms and biases).
        let tied = !file.tensors().iter().any(|t| t.name == "output.weight");
        for t in file.tensors().iter().filter(|t| t.dims.len() >= 2) {
            let (elements, bytes) = (
                t.dims.iter().product::<u64>(),
                file.info_data(t).len() as u64,
            );
            let expert = t.name.ends_with("_exps.weight");
            if expert {
                plan.expert_elements += elements;
                plan.expert_bytes += bytes;
            } else if t.name != "token_embd.weight" || tied {
                plan.dense_elements += elements;
                plan.dense_bytes += bytes;
            } else {
                continue;
            }
            plan.matrices.push(PlannedMatrix {
                ty: t.ty,
                rows: t.dims[1],
                cols: t.dims[0],
                count: t.dims[2..].iter().product(),
                expert,
            });
        }
        plan.other_bytes = crate::weights::gemma::extra_bytes(&config, &file);
        backend.plan_weights(plan)?;
        let loader = Loader {
            file: &file,
            backend: &backend,
            prepared: Default::default(),
            in_place: Default::default(),
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
        let weight_bytes_in_file = loader.in_place.get();
        let embd_table = backend.prepare_table(
            embd.ty,
            config.n_vocab,
            config.n_embd,
            file.info_data(&embd),
        )?;
        Ok(Model {
            file,
            config,
            embd,
            tied,
            embd_table,
            weights,
            backend,
            scratch: Scratch::default(),
            times: PartTimes::default(),
            profiling: false,
            weight_bytes,
            weight_bytes_in_file,
            gemma_scratch: gemma::GemmaScratch::default(),
        })
    }

    /// The embedding table's bytes: the LM head's when the head is the tied `token_embd`
    /// held in the file's layout (the same rows: reading them there keeps the file's pages
    /// of the table, released after the head copied them, from coming back with every
    /// token looked up), else the file's; and whether they are the head's. Passes release
    /// the file's pages after each lookup: each token faults in its neighbours too, and a
    /// canvas of uniform noise (DiffusionGemma) otherwise gathered most of a 0.6 GB table
    /// within a few steps. Not the head's: a head held in the file's pages in place
    /// ([`Weights::prepare_in_file`](crate::Weights::prepare_in_file)) would lose them before every step.
    fn table_bytes<'a>(
        file: &'a GgufFile,
        embd: &TensorInfo,
        tied: bool,
        weights: &'a Weights<B>,
    ) -> (&'a [u8], bool) {
        let in_file = file.info_data(embd);
        match B::file_layout_bytes(&weights.output.w) {
            Some(head) if tied && head.len() == in_file.len() => (head, true),
            _ => (in_file, false),
        }
    }

    /// Bytes the backend holds for the model's matrices (repacked or compact), the token
    /// embedding aside (it is read from the file by row).
    pub fn weight_bytes(&self) -> usize {
        self.weight_bytes
    }

    /// Of [`Model::weight_bytes`], the bytes read in place from the file (compact matrices
    /// on the CPU: nothing copied at load, the pages read at first use or ahead of it).
    pub fn weight_bytes_in_file(&self) -> usize {
        self.weight_bytes_in_file
    }

    /// The block length of the architecture's own block-causal attention (LLaDA2:
    /// [`DEFAULT_BLOCK`], as its generate code's default), `None` when attention is
    /// bidirectional (every other architecture). A pass can ask for another block length
    /// ([`PassSpec::attention_block`]).
    pub fn attention_block(&self) -> Option<usize> {
        self.config.arch.block_causal().then_some(DEFAULT_BLOCK)
    }

    /// The attention block a pass asking for `requested` runs with: `None` is the
    /// architecture's own ([`Model::attention_block`]); a block length is LLaDA2's
    /// block-causal mask (position `p` attends to the positions before
    /// `(p / block + 1) * block`; 1 is plain causal attention, the autoregressive
    /// BailingMoE-v2 graph). Errors for 0 and for bidirectional architectures.
    pub fn resolve_attention_block(&self, requested: Option<usize>) -> Result<Option<usize>> {
        match requested {
            None => Ok(self.attention_block()),
            Some(_) if !self.config.arch.block_causal() => Err(Error::NotBlockCausal {
                arch: self.config.arch,
            }),
            Some(0) => Err(Error::ZeroAttentionBlock),
            Some(block) => Ok(Some(block)),
        }
    }

    /// The model as the sampler's denoiser for one canvas: with a cache of its own and the
    /// attention block `attention_block` (see [`Model::resolve_attention_block`]).
    pub fn bind(&mut self, attention_block: Option<usize>) -> Result<Bound<'_, B>> {
        Bound::new(self, attention_block)
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

    /// Tokens per canvas of a `diffusion-gemma` model (`diffusion.canvas_length`); `None`
    /// for the masked-diffusion architectures.
    pub fn canvas_length(&self) -> Option<usize> {
        self.config.gemma.as_ref().map(|g| g.canvas_length)
    }

    /// Whether a `diffusion-gemma` file carries the self-conditioning block (without it
    /// every step runs as the first one does).
    pub fn has_self_conditioning(&self) -> bool {
        self.weights
            .gemma
            .as_ref()
            .is_some_and(|g| g.self_cond.is_some())
    }

    /// `diffusion-gemma`'s encoder: runs `tokens` causally at the positions after `cache`'s,
    /// writes their keys and values into it (the prompt, then each committed canvas: the
    /// "commit" pass), and, when `out` is given, the encoder's logits of those rows into it
    /// (`tokens.len() x vocab_size()`; only a check of the graph: generation reads none).
    pub fn gemma_encode(
        &mut self,
        cache: &mut KvCache<B::Buf>,
        tokens: &[u32],
        out: Option<&mut [f32]>,
    ) -> Result<()> {
        self.gemma_check(tokens, cache.len, out.as_deref().map(<[f32]>::len))?;
        let t = tokens.len();
        let done = self.gemma_run(tokens, |graph| {
            graph.layers(gemma::Mode::Encode, cache, t)?;
            match out {
                Some(out) => graph.head(t, out),
                None => Ok(()),
            }
        });
        if done.is_err() {
            // A failed pass leaves the cache's layers half written.
            cache.len = 0;
        }
        done
    }

    /// `diffusion-gemma`'s decoder: the logits of `canvas` (`canvas.len() x vocab_size()`
    /// into `out`), attending bidirectionally over itself and the positions `cache` holds,
    /// which it does not change. `self_cond` is the previous step's processed logits (the
    /// same shape; Hugging Face passes them after the temperature): the self-conditioning
    /// signal; `None` on a canvas's first step (or for a file without the block, where it is
    /// ignored).
    pub fn gemma_decode(
        &mut self,
        cache: &mut KvCache<B::Buf>,
        canvas: &[u32],
        self_cond: Option<&[f32]>,
        out: &mut [f32],
    ) -> Result<()> {
        self.gemma_check(canvas, cache.len, Some(out.len()))?;
        if let Some(sc) = self_cond {
            let expected = canvas.len() * self.config.n_vocab;
            if sc.len() != expected {
                return Err(Error::OutputLength {
                    expected,
                    found: sc.len(),
                });
            }
        }
        if let Some(sc) = self_cond {
            out.copy_from_slice(sc);
        }
        self.gemma_decode_in_place(cache, canvas, self_cond.is_some(), out)
    }

    /// [`Model::gemma_decode`] with one buffer: with `self_cond`, `logits` holds the previous
    /// step's processed logits on entry and is read as the self-conditioning signal before
    /// this step's logits replace it. A sampler then keeps one `canvas × vocabulary` buffer,
    /// not two (268 MB each for Gemma 4's 256-token canvas and 262k vocabulary).
    pub fn gemma_decode_in_place(
        &mut self,
        cache: &mut KvCache<B::Buf>,
        canvas: &[u32],
        self_cond: bool,
        logits: &mut [f32],
    ) -> Result<()> {
        self.gemma_check(canvas, cache.len, Some(logits.len()))?;
        let t = canvas.len();
        self.gemma_run(canvas, |graph| {
            graph.condition(t, self_cond.then_some(&*logits))?;
            graph.layers(gemma::Mode::Decode, cache, t)?;
            graph.head(t, logits)
        })
    }

    fn gemma_check(&self, tokens: &[u32], cached: usize, out: Option<usize>) -> Result<()> {
        if self.config.gemma.is_none() {
            return Err(Error::NotUniformState {
                arch: self.config.arch,
            });
        }
        let t = tokens.len();
        if t == 0 || cached + t > self.config.n_ctx {
            return Err(Error::CanvasLength {
                len: cached + t,
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
        match out {
            Some(found) if found != t * self.config.n_vocab => Err(Error::OutputLength {
                expected: t * self.config.n_vocab,
                found,
            }),
            _ => Ok(()),
        }
    }

    /// Embeds `tokens` and hands the pass's graph to `f`; the part times are kept.
    fn gemma_run(
        &mut self,
        tokens: &[u32],
        f: impl FnOnce(&mut gemma::GemmaGraph<'_, B>) -> Result<()>,
    ) -> Result<()> {
        let (Some(g), Some(gw)) = (&self.config.gemma, &self.weights.gemma) else {
            return Err(Error::NotUniformState {
                arch: self.config.arch,
            });
        };
        let (table_bytes, heads) =
            Self::table_bytes(&self.file, &self.embd, self.tied, &self.weights);
        let timer = Timer::new(&mut self.backend, self.profiling)?;
        let mut graph = gemma::GemmaGraph {
            cfg: &self.config,
            g,
            w: &self.weights,
            gw,
            be: &mut self.backend,
            s: &mut self.gemma_scratch,
            timer,
        };
        let embedded = graph.embed(&self.embd_table, table_bytes, tokens);
        if !heads {
            self.file.release(table_bytes);
        }
        let done = embedded.and_then(|()| f(&mut graph));
        graph.timer.finish(&mut self.times);
        done
    }

    /// llama.cpp #24423's unified pass of a `diffusion-gemma` model over `tokens`: the last
    /// `canvas_length` tokens (all of them when there are no more) are the canvas, decoded
    /// without self-conditioning over the encoder's keys and values of the tokens before
    /// them; the prompt rows get the encoder's logits. Every row's logits into `out`.
    fn gemma_unified(&mut self, tokens: &[u32], out: &mut [f32]) -> Result<()> {
        let c = self.canvas_length().unwrap_or(tokens.len());
        let p = tokens.len().saturating_sub(c);
        let nv = self.config.n_vocab;
        if out.len() != tokens.len() * nv {
            return Err(Error::OutputLength {
                expected: tokens.len() * nv,
                found: out.len(),
            });
        }
        let mut cache = KvCache::new();
        let (prompt_out, canvas_out) = out.split_at_mut(p * nv);
        if p > 0 {
            self.gemma_encode(&mut cache, &tokens[..p], Some(prompt_out))?;
        }
        self.gemma_decode(&mut cache, &tokens[p..], None, canvas_out)
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The GGUF file the model was loaded from.
    pub fn file(&self) -> &GgufFile {
        &self.file
    }

    /// Time per part of the profiling passes, and expert counters of every pass, since
    /// the last [`Model::reset_part_times`].
    pub fn part_times(&self) -> PartTimes {
        self.times
    }

    /// Zeroes the [`PartTimes`].
    pub fn reset_part_times(&mut self) {
        self.times = PartTimes::default();
    }

    /// Makes the following passes profiling passes: the backend is synchronized after each
    /// part and the part's wall time added to [`Model::part_times`]. Off by default, so a
    /// normal pass reads no clock (on an asynchronous device such a read would time the
    /// launch queue, and the synchronizations slow the pass).
    pub fn set_profiling(&mut self, on: bool) {
        self.profiling = on;
    }

    /// Logits of every canvas position, `tokens.len() x vocab_size()` into `out`, under the
    /// architecture's own attention mask.
    pub fn forward_all(&mut self, tokens: &[u32], out: &mut [f32]) -> Result<()> {
        self.run(None, PassSpec::full(), tokens, None, out)
    }

    /// [`Model::forward_all`] with LLaDA2's attention in blocks of `attention_block` (see
    /// [`Model::resolve_attention_block`]; `None` is the architecture's own mask).
    pub fn forward_all_with_block(
        &mut self,
        tokens: &[u32],
        attention_block: Option<usize>,
        out: &mut [f32],
    ) -> Result<()> {
        let spec = PassSpec {
            pass: &Pass::Full,
            attention_block,
        };
        self.run(None, spec, tokens, None, out)
    }

    /// Logits of the canvas rows `rows` (ascending, distinct), `rows.len() x vocab_size()`
    /// into `out`. The whole canvas is run (every position attends to every other, or as the
    /// architecture's mask allows); only the last layer's feed-forward and the LM head are
    /// restricted to `rows`.
    pub fn forward(&mut self, tokens: &[u32], rows: &[usize], out: &mut [f32]) -> Result<()> {
        self.run(None, PassSpec::full(), tokens, Some(rows), out)
    }

    /// [`Model::forward`] as `spec` says, over one canvas's `cache`: [`Pass::Full`] is
    /// [`Model::forward`] (the cache untouched); [`Pass::Fill`] computes the same logits (bit
    /// for bit) and keeps every layer's keys and values in `cache`; [`Pass::Window`] runs
    /// only the window's positions, their queries attending to the window's fresh keys and
    /// values and to the cached ones of every other position (rows must lie in the window).
    /// `spec.attention_block` sets LLaDA2's block-causal mask (see
    /// [`Model::resolve_attention_block`]); a window over a cache computed with another
    /// block length is refused.
    pub fn forward_pass(
        &mut self,
        cache: &mut KvCache<B::Buf>,
        spec: PassSpec<'_>,
        tokens: &[u32],
        rows: &[usize],
        out: &mut [f32],
    ) -> Result<()> {
        self.run(Some(cache), spec, tokens, Some(rows), out)
    }

    /// The positions a pass runs through the layers, checked against the cache.
    fn window(
        cache: Option<&KvCache<B::Buf>>,
        block: Option<usize>,
        t: usize,
        pass: &Pass,
        rows: Option<&[usize]>,
    ) -> Result<Range<usize>> {
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
        let cached = cache.map_or(0, |c| c.len);
        let filled = cache.is_some_and(|c| {
            c.block == block
                && match block {
                    None => c.len == t,
                    Some(_) => c.len >= w.start,
                }
        });
        if !filled {
            return Err(Error::CacheNotFilled { len: t, cached });
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
        cache: Option<&mut KvCache<B::Buf>>,
        spec: PassSpec<'_>,
        tokens: &[u32],
        rows: Option<&[usize]>,
        out: &mut [f32],
    ) -> Result<()> {
        let mut one = [BatchPass {
            cache,
            spec,
            tokens,
            rows,
            out,
        }];
        let mut results = self.forward_batch(&mut one)?;
        results.pop().unwrap_or(Ok(()))
    }

    /// Checks one pass of a batch and says what it runs.
    fn plan(&self, p: &BatchPass<'_, B::Buf>) -> Result<Planned> {
        let block = self.resolve_attention_block(p.spec.attention_block)?;
        let n_rows = self.check(p.tokens, p.rows, p.out)?;
        let window = Self::window(
            p.cache.as_deref(),
            block,
            p.tokens.len(),
            p.spec.pass,
            p.rows,
        )?;
        if matches!(p.spec.pass, Pass::Fill | Pass::Window(_)) && p.cache.is_none() {
            // `forward_pass` always has a cache; only a batch item can lack one.
            return Err(Error::CacheNotFilled {
                len: p.tokens.len(),
                cached: 0,
            });
        }
        let pos0 = window.start;
        let t = window.len();
        // Requested rows as indices into the window; all of them in order is no selection.
        let local = p
            .rows
            .map(|r| r.iter().map(|&i| i - pos0).collect::<Vec<_>>())
            .filter(|r| r.len() != t);
        Ok(Planned {
            block,
            n_rows,
            window,
            local,
        })
    }

    /// Several canvases' passes as one forward: the rows of every pass's window are
    /// concatenated for each matrix product (every weight read once for all of them), while
    /// RoPE, attention (each canvas over its own keys, under its own mask) and the cache
    /// writes stay per canvas, and the LM head runs only on the rows each pass asks for.
    ///
    /// Each pass computes exactly what [`Model::forward_pass`] (or [`Model::forward`] for a
    /// [`Pass::Full`] without a cache) computes for it alone, bit for bit: activations are
    /// quantized per row and every kernel's result for a row is independent of the other
    /// rows in the product.
    ///
    /// Returns one result per pass: a pass that fails its checks (canvas, rows, window,
    /// cache) gets its error and is left out, the others run. The outer error is a failure
    /// of the batched forward itself (the backend), after which every pass's cache is
    /// invalid.
    pub fn forward_batch(
        &mut self,
        passes: &mut [BatchPass<'_, B::Buf>],
    ) -> Result<Vec<Result<()>>> {
        if self.config.gemma.is_some() {
            return Ok(passes.iter_mut().map(|p| self.gemma_pass(p)).collect());
        }
        let mut results = Vec::with_capacity(passes.len());
        let mut planned = Vec::with_capacity(passes.len());
        for p in passes.iter() {
            match self.plan(p) {
                Ok(plan) if plan.n_rows > 0 => {
                    planned.push(Some(plan));
                    results.push(Ok(()));
                }
                Ok(_) => {
                    planned.push(None);
                    results.push(Ok(()));
                }
                Err(e) => {
                    planned.push(None);
                    results.push(Err(e));
                }
            }
        }
        let cfg = &self.config;
        let be = &mut self.backend;
        let mut segs = Vec::new();
        let mut caches = Vec::new();
        let mut outs = Vec::new();
        // What each run cache holds after the pass: (length, block).
        let mut kept = Vec::new();
        let (mut row0, mut tokens) = (0, Vec::new());
        for (p, plan) in passes.iter_mut().zip(&planned) {
            let Some(plan) = plan else { continue };
            let t_all = p.tokens.len();
            // A full pass neither reads nor writes the cache.
            let cache = match p.spec.pass {
                Pass::Full => None,
                Pass::Fill | Pass::Window(_) => p.cache.as_deref_mut(),
            };
            let cache = match cache {
                Some(c) => {
                    c.prepare(be, cfg.n_layer, t_all, cfg.kv_dim())?;
                    Some(c)
                }
                None => None,
            };
            tokens.extend_from_slice(&p.tokens[plan.window.clone()]);
            segs.push(Segment {
                g: Geometry {
                    t_all,
                    window: plan.window.clone(),
                    rows: plan.local.as_deref(),
                    block: plan.block,
                },
                row0,
            });
            row0 += plan.window.len();
            // Block-causal: the positions up to the window's end are exact after the pass;
            // any cached beyond it belong to a longer canvas of earlier passes and are not
            // kept.
            kept.push(match (p.spec.pass, plan.block) {
                (Pass::Window(w), Some(_)) => (w.end, plan.block),
                _ => (t_all, plan.block),
            });
            caches.push(cache);
            outs.push(&mut *p.out);
        }
        if segs.is_empty() {
            return Ok(results);
        }
        let (table_bytes, heads) =
            Self::table_bytes(&self.file, &self.embd, self.tied, &self.weights);
        let timer = Timer::new(be, self.profiling)?;
        let mut graph = Graph {
            cfg,
            weights: &self.weights,
            be,
            s: &mut self.scratch,
            timer,
        };
        let embedded = graph.embed(&self.embd_table, table_bytes, &tokens);
        if !heads {
            self.file.release(table_bytes);
        }
        embedded?;
        graph.run(&segs, &mut caches, &mut outs)?;
        graph.timer.finish(&mut self.times);
        for (cache, (len, block)) in caches.into_iter().zip(kept) {
            if let Some(c) = cache {
                c.len = len;
                c.block = block;
            }
        }
        Ok(results)
    }
}

impl<B: Backend> Model<B> {
    /// A [`Pass::Full`] of a `diffusion-gemma` model: the unified pass, then the requested
    /// rows. Cached masked-diffusion passes do not apply to it.
    fn gemma_pass(&mut self, p: &mut BatchPass<'_, B::Buf>) -> Result<()> {
        if !matches!(p.spec.pass, Pass::Full) || p.spec.attention_block.is_some() {
            return Err(Error::NotMaskedDiffusion {
                arch: self.config.arch,
            });
        }
        let n_rows = self.check(p.tokens, p.rows, p.out)?;
        let nv = self.config.n_vocab;
        match p.rows {
            None => self.gemma_unified(p.tokens, p.out),
            Some(rows) => {
                let mut all = vec![0.0; p.tokens.len() * nv];
                self.gemma_unified(p.tokens, &mut all)?;
                for (i, &r) in rows.iter().enumerate().take(n_rows) {
                    p.out[i * nv..(i + 1) * nv].copy_from_slice(&all[r * nv..(r + 1) * nv]);
                }
                Ok(())
            }
        }
    }
}

/// One canvas's pass in [`Model::forward_batch`].
#[derive(Debug)]
pub struct BatchPass<'a, Buf> {
    /// The canvas's cache: read and written by [`Pass::Fill`] and [`Pass::Window`] (which
    /// need one), untouched by [`Pass::Full`].
    pub cache: Option<&'a mut KvCache<Buf>>,
    /// The pass and its attention mask.
    pub spec: PassSpec<'a>,
    /// The whole canvas.
    pub tokens: &'a [u32],
    /// The rows whose logits are wanted (ascending, distinct; inside the window for a
    /// window pass); `None` is every row of the canvas.
    pub rows: Option<&'a [usize]>,
    /// `rows x vocab` logits.
    pub out: &'a mut [f32],
}

/// A checked pass of a batch.
struct Planned {
    block: Option<usize>,
    n_rows: usize,
    window: Range<usize>,
    local: Option<Vec<usize>>,
}

#[cfg(test)]
mod tests;
