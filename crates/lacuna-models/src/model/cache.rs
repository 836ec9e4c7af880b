//! The key/value cache of one canvas, what a pass asks of it ([`PassSpec`]), and
//! [`Bound`]: a model, one canvas's cache and its attention mask, as the sampler's
//! [`Denoiser`].

use lacuna_sampler::{CanvasDenoiser, Denoiser, Pass};

use crate::backend::Backend;
use crate::{Error, Model, Result};

/// Per-layer keys (after RoPE) and values of every canvas position of one canvas, kept
/// between passes: written by [`Pass::Fill`] for every position and by [`Pass::Window`] for
/// the window's; read by every pass that uses the cache. Buffers (the backend's: device
/// memory on a GPU) grow to the longest canvas and stay.
///
/// A cache is an argument of [`Model::forward_pass`], typed by the backend's buffer, so a
/// program that interleaves several canvases keeps one per canvas and a cache of another
/// device does not compile.
#[derive(Debug, Default)]
pub struct KvCache<Buf = Vec<f32>> {
    /// The canvas length the cache holds (block-causal: the positions up to the last
    /// window's end); 0 when empty or after a failed pass.
    pub(crate) len: usize,
    /// The attention block length the cache was computed with.
    pub(crate) block: Option<usize>,
    /// `[layer][position x kv_dim]`.
    pub(crate) k: Vec<Buf>,
    /// `[layer][position x kv_dim]`.
    pub(crate) v: Vec<Buf>,
}

impl<Buf: Default> KvCache<Buf> {
    /// An empty cache (its first pass must be a [`Pass::Fill`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Grows every layer's buffers to `t` positions of `kv_dim` and marks the cache invalid
    /// until the pass that called this has written every layer. (Growing keeps the positions
    /// already cached: the layout is position-major per layer.)
    pub(crate) fn prepare<B: Backend<Buf = Buf>>(
        &mut self,
        be: &mut B,
        layers: usize,
        t: usize,
        kv_dim: usize,
    ) -> Result<()> {
        self.len = 0;
        self.k.resize_with(layers, Buf::default);
        self.v.resize_with(layers, Buf::default);
        for b in self.k.iter_mut().chain(self.v.iter_mut()) {
            be.ensure(b, t * kv_dim)?;
        }
        Ok(())
    }

    /// Bytes the cache holds now.
    pub fn bytes<B: Backend<Buf = Buf>>(&self) -> usize {
        let floats: usize = self.k.iter().chain(&self.v).map(B::buf_len).sum();
        floats * std::mem::size_of::<f32>()
    }
}

/// What one forward pass computes: which positions ([`Pass`]) under which attention mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassSpec<'a> {
    /// The positions run and what the cache gives and keeps.
    pub pass: &'a Pass,
    /// Block length of LLaDA2's block-causal attention (position `p` attends to the
    /// positions before `(p / block + 1) * block`; 1 is causal attention); `None` is the
    /// architecture's own mask: [`Model::attention_block`]. Only block-causal architectures
    /// take one.
    pub attention_block: Option<usize>,
}

impl<'a> PassSpec<'a> {
    /// `pass` under the architecture's own attention mask.
    pub fn new(pass: &'a Pass) -> Self {
        Self {
            pass,
            attention_block: None,
        }
    }

    /// A full pass (no cache read or written) under the architecture's own mask.
    pub fn full() -> PassSpec<'static> {
        PassSpec::new(&Pass::Full)
    }

    /// The same pass with block-causal attention in blocks of `block`.
    pub fn with_block(self, block: usize) -> Self {
        Self {
            attention_block: Some(block),
            ..self
        }
    }
}

/// One canvas's view of a model: the model, the canvas's own key/value cache and the
/// attention mask its generation uses, as the sampler's [`Denoiser`]. Made by
/// [`Model::bind`].
pub struct Bound<'m, B: Backend> {
    model: &'m mut Model<B>,
    cache: KvCache<B::Buf>,
    attention_block: Option<usize>,
}

impl<B: Backend> std::fmt::Debug for Bound<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound")
            .field("model", &self.model)
            .field("attention_block", &self.attention_block)
            .finish_non_exhaustive()
    }
}

impl<'m, B: Backend> Bound<'m, B> {
    pub(crate) fn new(model: &'m mut Model<B>, attention_block: Option<usize>) -> Result<Self> {
        let attention_block = model.resolve_attention_block(attention_block)?;
        Ok(Self {
            model,
            cache: KvCache::default(),
            attention_block,
        })
    }
}

impl<B: Backend> Denoiser for Bound<'_, B> {
    type Error = Error;

    fn vocab_size(&self) -> usize {
        self.model.vocab_size()
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
        let spec = PassSpec {
            pass,
            attention_block: self.attention_block,
        };
        self.model
            .forward_pass(&mut self.cache, spec, canvas, rows, out)
    }
}

/// DiffusionGemma: the encoder extends the bound canvas's cache (the context), the decoder
/// reads it. (A masked-diffusion model refuses both.)
impl<B: Backend> CanvasDenoiser for Bound<'_, B> {
    fn encode(&mut self, tokens: &[u32]) -> Result<()> {
        self.model.gemma_encode(&mut self.cache, tokens, None)
    }

    fn decode(&mut self, canvas: &[u32], self_cond: bool, logits: &mut [f32]) -> Result<()> {
        self.model
            .gemma_decode_in_place(&mut self.cache, canvas, self_cond, logits)
    }

    fn canvas_length(&self) -> usize {
        self.model.canvas_length().unwrap_or(0)
    }
}
