//! The compute backend a model graph runs on. Kernels stay free of model knowledge: the
//! graph calls these generic operations with shapes, never layer names.
//!
//! Everything a forward pass touches lives where the backend computes: activations,
//! workspaces and key/value caches are backend-owned buffers ([`Buffers::Buf`], row-major
//! f32 `[tokens x width]`, reused across passes and addressed through views of element
//! ranges); weights, norm vectors and the embedding table are prepared once at load. The
//! host hands over token ids and row indices and takes back only logits (and a MoE
//! layer's router scores). For the CPU backend a buffer is a `Vec<f32>` and a view a
//! slice, so nothing is copied; for a GPU every buffer is device memory.
//!
//! # Shapes are the graph's to check, once
//! The graph checks every shape before a kernel sees it, and reports it as this crate's
//! [`crate::Error`]: the hyperparameters when the [`Config`] is read (head counts, head
//! width, rotary dimensions: [`crate::Error::BadMetadata`] naming the key), the backend's
//! own limits once at load ([`Backend::check_config`]:
//! [`crate::Error::UnsupportedShape`]), and token ids, rows and windows at each pass
//! ([`crate::Error::TokenOutOfRange`] with the token's canvas position, and the other
//! per-pass variants). A backend's operations may assume all of it: they do not check the
//! same things again in their own words. The kernel crates keep guards of their own so that
//! a wrong call cannot read or write out of bounds; a checked graph never trips them.

use std::ops::Range;

use lacuna_gguf::SharedBytes;
use lacuna_quant::GgmlType;

use crate::{Config, Result, RopeStyle};

/// The shape of one multi-head attention call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttnShape {
    /// Query rows (the positions being computed).
    pub queries: usize,
    /// Key and value rows (the whole canvas: fresh, or cached and fresh).
    pub keys: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads (`n_head` must be a multiple).
    pub n_head_kv: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Multiplier of `q . k` before the softmax.
    pub scale: f32,
    /// Canvas position of query row 0 (the window start); query row `i` is at `pos0 + i`.
    pub pos0: usize,
    /// Block-causal attention with blocks of this length (position `p` sees keys before
    /// `(p / block + 1) * block`); `None` = bidirectional.
    pub block: Option<usize>,
}

impl AttnShape {
    /// Keys visible to a query at canvas position `pos`.
    pub fn visible(&self, pos: usize) -> usize {
        match self.block {
            None => self.keys,
            Some(b) => ((pos / b + 1) * b).min(self.keys),
        }
    }
}

/// RoPE parameters (ggml `rope_ext` with no YaRN extension).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RopeParams {
    /// Which element pairs rotate together.
    pub style: RopeStyle,
    /// Leading elements of each head that rotate (the rest pass through); even, at most
    /// the head width.
    pub n_rot: usize,
    /// Base frequency.
    pub freq_base: f32,
    /// Frequency scale (1 = none).
    pub freq_scale: f32,
}

/// The matrix weights of a file, as [`Weights::plan_weights`] is told them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WeightPlan {
    /// Elements of the mixture-of-experts tensors (`*_exps.weight`).
    pub expert_elements: u64,
    /// Their bytes in the file.
    pub expert_bytes: u64,
    /// Elements of the other matrices the backend prepares (attention, dense FFN, LM head).
    pub dense_elements: u64,
    /// Their bytes in the file.
    pub dense_bytes: u64,
    /// Every such matrix: its type and shape, so that a backend can size the form it holds
    /// them in exactly.
    pub matrices: Vec<PlannedMatrix>,
    /// Bytes the model holds beside the file's matrices: matrices it derives at load and
    /// its largest working buffers (DiffusionGemma's transposed embedding and canvas ×
    /// vocabulary logits), which a backend deciding what fits in memory counts too.
    pub other_bytes: u64,
}

/// One matrix tensor of a [`WeightPlan`]: `count` matrices (the experts of a `*_exps`
/// tensor, else 1) of `rows x cols` elements of type `ty`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlannedMatrix {
    /// The type in the file.
    pub ty: lacuna_quant::GgmlType,
    /// Rows (output features).
    pub rows: u64,
    /// Columns (input features).
    pub cols: u64,
    /// Matrices of that shape (experts).
    pub count: u64,
    /// Whether they are mixture-of-experts weights.
    pub expert: bool,
}

/// The buffers a backend computes in: growable f32 buffers it owns (activations,
/// workspaces, key/value caches) and views of their element ranges.
pub trait Buffers {
    /// A growable f32 buffer owned by the backend (activations, workspaces, caches).
    type Buf: Default + Send;
    /// A read-only view of a range of a [`Buffers::Buf`].
    type View<'a>: Copy
    where
        Self: 'a;
    /// A writable view of a range of a [`Buffers::Buf`].
    type ViewMut<'a>
    where
        Self: 'a;

    /// Grows `buf` to at least `len` elements, keeping its contents.
    fn ensure(&mut self, buf: &mut Self::Buf, len: usize) -> Result<()>;

    /// Elements `buf` holds.
    fn buf_len(buf: &Self::Buf) -> usize;

    /// A view of elements `range` of `buf` (within [`Buffers::buf_len`]).
    fn view(buf: &Self::Buf, range: Range<usize>) -> Self::View<'_>;

    /// A writable view of elements `range` of `buf`.
    fn view_mut(buf: &mut Self::Buf, range: Range<usize>) -> Self::ViewMut<'_>;

    /// A shorter-lived copy of a writable view (for two operations on one output).
    fn reborrow<'a>(view: &'a mut Self::ViewMut<'_>) -> Self::ViewMut<'a>;
}

/// The weights a backend holds: matrices, vectors and the embedding table, each prepared once
/// at load from the file's bytes.
pub trait Weights {
    /// A weight matrix prepared (possibly repacked) for [`Backend::matmul`].
    type Weight: Send + Sync;
    /// An f32 vector prepared at load: a norm's weight or a projection's bias.
    type Vector: Send + Sync;
    /// The token embedding table, prepared at load for [`Backend::embed`].
    type Table: Send + Sync;

    /// Prepares `n` rows of `k` elements of type `ty` (ggml row-major bytes), once at load.
    fn prepare_weight(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<Self::Weight>;

    /// [`Weights::prepare_weight`] over bytes the caller built and no longer needs (a
    /// matrix derived at load): a backend may keep them without a copy, so they are never
    /// held twice. The default prepares from a borrow and drops them.
    fn prepare_weight_owned(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: Vec<u8>,
    ) -> Result<Self::Weight> {
        self.prepare_weight(ty, n, k, &bytes)
    }

    /// [`Weights::prepare_weight`] (or, for one expert, [`Weights::prepare_expert`]) over a
    /// tensor of the model file, with a handle that keeps the file's bytes alive: a backend
    /// may hold them in place instead of copying them (the CPU backend's compact layout:
    /// loading then costs nothing). Returns the weight and whether it holds the file's
    /// bytes in place, in which case the caller leaves the file's pages mapped. The default
    /// prepares from a borrow.
    fn prepare_in_file(
        &self,
        expert: bool,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &SharedBytes,
    ) -> Result<(Self::Weight, bool)> {
        let w = if expert {
            self.prepare_expert(ty, n, k, bytes)?
        } else {
            self.prepare_weight(ty, n, k, bytes)?
        };
        Ok((w, false))
    }

    /// A prepared weight's bytes on the host when they are the file's rows unchanged (a
    /// weight kept in the file's layout), else `None` (the default). A tied embedding
    /// table then reads its rows from the LM head's copy, not from the file, so the
    /// file's pages of it are not resident beside that copy.
    fn file_layout_bytes(w: &Self::Weight) -> Option<&[u8]> {
        let _ = w;
        None
    }

    /// Told, before any weight is prepared, how many matrix weights the file holds, so that
    /// a backend can choose how to keep them ([`Weights::prepare_weight`],
    /// [`Weights::prepare_expert`]). The default ignores it.
    fn plan_weights(&mut self, plan: WeightPlan) -> Result<()> {
        let _ = plan;
        Ok(())
    }

    /// Prepares one expert of a mixture-of-experts layer: a matrix each forward pass reads
    /// for few tokens, which a backend may keep in a compact form. Defaults to
    /// [`Weights::prepare_weight`].
    fn prepare_expert(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<Self::Weight> {
        self.prepare_weight(ty, n, k, bytes)
    }

    /// Bytes a prepared weight occupies (what one matmul over it reads).
    fn weight_bytes(&self, w: &Self::Weight) -> usize;

    /// Prepares a norm weight or bias.
    fn prepare_vector(&self, v: Vec<f32>) -> Result<Self::Vector>;

    /// Prepares the embedding table: `rows` rows of `width` elements of `ty`, `bytes` the
    /// file's (which [`Backend::embed`] is handed again, so a host backend need not copy).
    fn prepare_table(
        &self,
        ty: GgmlType,
        rows: usize,
        width: usize,
        bytes: &[u8],
    ) -> Result<Self::Table>;

    /// A prepared vector's values, on the host.
    fn vector_to_host(&mut self, v: &Self::Vector) -> Result<Vec<f32>>;
}

/// Operations a model graph needs from a compute device, over its [`Buffers`] and
/// [`Weights`].
pub trait Backend: Buffers + Weights {
    /// A short name for logs and benchmark files.
    fn name(&self) -> String;

    /// Checks, once at load and before any weight is prepared, that this backend runs every
    /// operation of a model with these hyperparameters, so that no pass fails on a shape
    /// the device cannot take ([`crate::Error::UnsupportedShape`]). `config` is valid (as
    /// [`Config::from_metadata`] returns it). The default accepts every valid config.
    fn check_config(&self, config: &Config) -> Result<()> {
        let _ = config;
        Ok(())
    }

    /// The embedding rows of `tokens` into `out` (`tokens.len() x width`); `bytes` are the
    /// table's file bytes. The ids are below the table's rows (the graph checked them).
    fn embed(
        &mut self,
        table: &Self::Table,
        bytes: &[u8],
        tokens: &[u32],
        out: Self::ViewMut<'_>,
    ) -> Result<()>;

    /// `y[t x n] = x[t x k] . w^T`.
    fn matmul(
        &mut self,
        x: Self::View<'_>,
        t: usize,
        w: &Self::Weight,
        y: Self::ViewMut<'_>,
    ) -> Result<()>;

    /// [`Backend::matmul`] into host memory: the LM head's logits and a router's scores.
    fn matmul_to_host(
        &mut self,
        x: Self::View<'_>,
        t: usize,
        w: &Self::Weight,
        y: &mut [f32],
    ) -> Result<()>;

    /// [`Backend::matmul_to_host`] with output row `i` written to `rows[i]` (each a row of
    /// `w`'s outputs), `t = rows.len()`: a batch's LM head writes each canvas's logits into
    /// that canvas's buffer. The default goes through one `t x n` buffer and copies; the CPU
    /// backend writes the rows in place (no batch-sized buffer held, no copy).
    fn matmul_to_host_rows(
        &mut self,
        x: Self::View<'_>,
        w: &Self::Weight,
        rows: &mut [&mut [f32]],
    ) -> Result<()> {
        let n = rows.first().map_or(0, |r| r.len());
        let mut y = vec![0.0; rows.len() * n];
        self.matmul_to_host(x, rows.len(), w, &mut y)?;
        for (row, src) in rows.iter_mut().zip(y.chunks_exact(n.max(1))) {
            row.copy_from_slice(src);
        }
        Ok(())
    }

    /// RMSNorm of each `weight`-wide row of `x`, times `weight`, into `out`.
    fn rms_norm(
        &mut self,
        x: Self::View<'_>,
        weight: &Self::Vector,
        eps: f32,
        out: Self::ViewMut<'_>,
    ) -> Result<()>;

    /// Rotates, in place, the first `params.n_rot` elements of each `head_dim`-wide head of
    /// each of the `t` rows of `x`; row `i` is at position `pos0 + i`. `params` are valid
    /// for `head_dim` (checked with the [`Config`]).
    fn rope(
        &mut self,
        x: Self::ViewMut<'_>,
        t: usize,
        pos0: usize,
        head_dim: usize,
        params: RopeParams,
    ) -> Result<()>;

    /// Attention: for every query row `i` in `rows` (all rows when `None`),
    /// `out[i] = softmax(scale * q_i . K^T) V` per head, heads concatenated, over the keys
    /// [`AttnShape::visible`] at the row's position (all of them when bidirectional). `q` is
    /// `[queries x n_head*head_dim]`, `k` and `v` are `[keys x n_head_kv*head_dim]`, `out`
    /// is `[rows x n_head*head_dim]`.
    fn attention(
        &mut self,
        q: Self::View<'_>,
        k: Self::View<'_>,
        v: Self::View<'_>,
        shape: AttnShape,
        rows: Option<&[usize]>,
        out: Self::ViewMut<'_>,
    ) -> Result<()>;

    /// `out = silu(gate) * up`, element-wise.
    fn swiglu(
        &mut self,
        gate: Self::View<'_>,
        up: Self::View<'_>,
        out: Self::ViewMut<'_>,
    ) -> Result<()>;

    /// `out = gelu_tanh(gate) * up`, element-wise (Gemma's feed-forward blocks). The default
    /// refuses: a backend without it cannot run `diffusion-gemma` (its `check_config` says so
    /// at load).
    fn geglu(
        &mut self,
        gate: Self::View<'_>,
        up: Self::View<'_>,
        out: Self::ViewMut<'_>,
    ) -> Result<()> {
        let _ = (gate, up, out);
        Err(self.missing_op("geglu"))
    }

    /// `x *= s`, element-wise (Gemma's per-layer output scalar). The default refuses.
    fn scale(&mut self, x: Self::ViewMut<'_>, s: f32) -> Result<()> {
        let _ = (x, s);
        Err(self.missing_op("scale"))
    }

    /// [`Backend::rope`] with ggml's frequency factors (`params.n_rot / 2` of them, on the
    /// host): each pair's angle divided by its factor; an infinite factor leaves the pair
    /// unrotated (Gemma 4's proportional RoPE). The default refuses.
    fn rope_factors(
        &mut self,
        x: Self::ViewMut<'_>,
        t: usize,
        pos0: usize,
        head_dim: usize,
        params: RopeParams,
        factors: &[f32],
    ) -> Result<()> {
        let _ = (x, t, pos0, head_dim, params, factors);
        Err(self.missing_op("rope with frequency factors"))
    }

    /// Copies host values into `out` (a self-conditioning step's probabilities). The default
    /// refuses.
    fn upload(&mut self, host: &[f32], out: Self::ViewMut<'_>) -> Result<()> {
        let _ = (host, out);
        Err(self.missing_op("upload"))
    }

    /// Each row of `x` (rows of `cols`) replaced by its softmax (a self-conditioning step's
    /// probabilities). The default refuses.
    fn softmax_rows(&mut self, x: Self::ViewMut<'_>, cols: usize) -> Result<()> {
        let _ = (x, cols);
        Err(self.missing_op("softmax"))
    }

    /// The error of an operation this backend does not have.
    fn missing_op(&self, op: &'static str) -> crate::Error {
        crate::Error::MissingOp {
            backend: self.name(),
            op,
        }
    }

    /// `x += y`, element-wise.
    fn add(&mut self, x: Self::ViewMut<'_>, y: Self::View<'_>) -> Result<()>;

    /// Adds `bias` to every `bias`-wide row of `x`.
    fn add_bias(&mut self, x: Self::ViewMut<'_>, bias: &Self::Vector) -> Result<()>;

    /// `dst[r] = src[rows[r]][col0 .. col0 + cols]` (`src` rows `src_width` wide; `rows`
    /// `None`: row `r` itself), `dst` rows `cols` wide: row gathers and column splits.
    fn copy_rows(
        &mut self,
        src: Self::View<'_>,
        src_width: usize,
        col0: usize,
        rows: Option<&[usize]>,
        dst: Self::ViewMut<'_>,
        cols: usize,
    ) -> Result<()>;

    /// `dst[to[r]] = scale[r] * src[r]` for each `width`-wide row `r` of `src` (a MoE
    /// expert's outputs into their token-and-slot rows; `to` distinct).
    fn scatter_scaled(
        &mut self,
        src: Self::View<'_>,
        to: &[usize],
        scale: &[f32],
        dst: Self::ViewMut<'_>,
        width: usize,
    ) -> Result<()>;

    /// `out[i] = slots[i*k] + slots[i*k + 1] + ... + slots[i*k + k - 1]`, rows `width`
    /// wide, summed in slot order (a MoE layer's weighted expert outputs per token).
    fn sum_slots(
        &mut self,
        slots: Self::View<'_>,
        k: usize,
        width: usize,
        out: Self::ViewMut<'_>,
    ) -> Result<()>;

    /// Waits until every operation queued so far has finished (a profiling pass reads the
    /// clock only after it). The default, for a backend that computes synchronously, returns
    /// at once.
    fn synchronize(&mut self) -> Result<()> {
        Ok(())
    }
}
