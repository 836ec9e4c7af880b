//! The compute backend a model graph runs on. Kernels stay free of model knowledge: the
//! graph calls these generic operations with shapes, never layer names.
//!
//! Activations are row-major f32 `[tokens x width]` host slices owned by the graph (and
//! reused across forward passes); weights are whatever the backend prepared at load.

use lacuna_quant::GgmlType;

use crate::{Result, RopeStyle};

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

/// The matrix weights of a file, as [`Backend::plan_weights`] is told them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WeightPlan {
    /// Elements of the mixture-of-experts tensors (`*_exps.weight`).
    pub expert_elements: u64,
    /// Their bytes in the file.
    pub expert_bytes: u64,
    /// Elements of the other matrices the backend prepares (attention, dense FFN, LM head).
    pub dense_elements: u64,
    /// Their bytes in the file.
    pub dense_bytes: u64,
}

/// Operations a model graph needs from a compute device.
pub trait Backend {
    /// A weight matrix prepared (possibly repacked) for [`Backend::matmul`].
    type Weight: Send + Sync;

    /// A short name for logs and benchmark files.
    fn name(&self) -> String;

    /// Prepares `n` rows of `k` elements of type `ty` (ggml row-major bytes), once at load.
    fn prepare_weight(
        &self,
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: &[u8],
    ) -> Result<Self::Weight>;

    /// Told, before any weight is prepared, how many matrix weights the file holds, so that
    /// a backend can choose how to keep them ([`Backend::prepare_weight`],
    /// [`Backend::prepare_expert`]). The default ignores it.
    fn plan_weights(&mut self, plan: WeightPlan) {
        let _ = plan;
    }

    /// Prepares one expert of a mixture-of-experts layer: a matrix each forward pass reads
    /// for few tokens, which a backend may keep in a compact form. Defaults to
    /// [`Backend::prepare_weight`].
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

    /// `y[t x n] = x[t x k] . w^T`.
    fn matmul(&mut self, x: &[f32], t: usize, w: &Self::Weight, y: &mut [f32]) -> Result<()>;

    /// RMSNorm of each `weight.len()`-wide row of `x`, times `weight`, into `out`.
    fn rms_norm(&mut self, x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) -> Result<()>;

    /// Rotates, in place, the first `params.n_rot` elements of each `head_dim`-wide head of
    /// each of the `t` rows of `x`; row `i` is at position `pos0 + i`.
    fn rope(
        &mut self,
        x: &mut [f32],
        t: usize,
        pos0: usize,
        head_dim: usize,
        params: RopeParams,
    ) -> Result<()>;

    /// Attention: for every query row `i` in `rows` (all rows when `None`),
    /// `out[i] = softmax(scale * q_i . K^T) V` per head, heads concatenated, over the keys
    /// [`AttnShape::visible`] at the row's position (all of them when bidirectional). `q` is `[queries x n_head*head_dim]`, `k` and `v` are
    /// `[keys x n_head_kv*head_dim]`, `out` is `[rows x n_head*head_dim]`.
    fn attention(
        &mut self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        shape: AttnShape,
        rows: Option<&[usize]>,
        out: &mut [f32],
    ) -> Result<()>;

    /// `out = silu(gate) * up`, element-wise.
    fn swiglu(&mut self, gate: &[f32], up: &[f32], out: &mut [f32]) -> Result<()>;
}
