//! Hyperparameters read from GGUF metadata, under the keys llama.cpp's converter writes
//! (`convert_hf_to_gguf.py`: `LLaDAModel`, `DreamModel`, `LLaDAMoEModel`, `RND1Model`, and
//! the BailingMoE-v2 keys LLaDA2 files carry) and with the defaults llama.cpp's loader
//! applies (`llama_model_base::load_hparams`, `load_arch_hparams`).

use lacuna_gguf::Metadata;

use crate::{Arch, Error, Result};

mod gemma;

pub use gemma::{EbDefaults, GemmaConfig, GemmaLayerShape};

/// How router logits become expert weights (`{arch}.expert_gating_func`, llama.cpp's
/// `llama_expert_gating_func_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gating {
    /// Softmax over all experts (1; the default of `llada-moe` and `rnd1`).
    Softmax,
    /// An independent sigmoid per expert (2; BailingMoE-v2, DeepSeek-V3).
    Sigmoid,
}

/// The expert layout of a mixture-of-experts feed-forward block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MoeConfig {
    /// Experts per layer (`{arch}.expert_count`).
    pub n_expert: usize,
    /// Experts each token is routed to (`{arch}.expert_used_count`).
    pub n_expert_used: usize,
    /// Hidden width of one expert (`{arch}.expert_feed_forward_length`, else
    /// `feed_forward_length / expert_used_count` as llama.cpp falls back to).
    pub n_ff_exp: usize,
    /// Scale applied to the routing weights (`{arch}.expert_weights_scale`; 0 or 1 = none).
    pub weights_scale: f32,
    /// Router activation.
    pub gating: Gating,
    /// Whether the selected weights are divided by their sum (`{arch}.expert_weights_norm`;
    /// always for `rnd1`, never for `llada-moe`).
    pub norm_weights: bool,
    /// Experts grouped for group-limited routing (`{arch}.expert_group_count`; 0 or 1 = no
    /// groups) and the groups each token may use (`{arch}.expert_group_used_count`).
    pub n_group: usize,
    /// Groups kept per token when `n_group > 1`.
    pub n_group_used: usize,
    /// Shared experts every token runs (`{arch}.expert_shared_count`; 0 = none).
    pub n_expert_shared: usize,
    /// Width of the shared experts together (`expert_shared_feed_forward_length`, else
    /// `n_ff_exp`, times `n_expert_shared`), as llama.cpp sizes `ffn_*_shexp`.
    pub n_ff_shared: usize,
    /// Leading layers with a dense feed-forward block instead (`leading_dense_block_count`).
    pub n_dense_lead: usize,
}

/// A model's hyperparameters.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The architecture.
    pub arch: Arch,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Embedding width.
    pub n_embd: usize,
    /// Attention heads.
    pub n_head: usize,
    /// Key/value heads (GQA when fewer than `n_head`).
    pub n_head_kv: usize,
    /// Width of one head.
    pub head_dim: usize,
    /// Leading elements of each head RoPE rotates (`{arch}.rope.dimension_count`; the head
    /// width when absent; LLaDA2 rotates half).
    pub n_rot: usize,
    /// Dense feed-forward hidden width (unused by MoE layers).
    pub n_ff: usize,
    /// Vocabulary size (rows of `token_embd`).
    pub n_vocab: usize,
    /// Training context length.
    pub n_ctx: usize,
    /// RMSNorm epsilon.
    pub rms_eps: f32,
    /// RoPE base frequency.
    pub rope_freq_base: f32,
    /// RoPE frequency scale (`1 / rope.scaling.factor`; 1 when absent).
    pub rope_freq_scale: f32,
    /// The mask token id (`tokenizer.ggml.mask_token_id`), when the file names one.
    pub mask_token_id: Option<u32>,
    /// Whether row `i - 1` predicts token `i` (`diffusion.shift_logits`; Dream's default is
    /// true, the others' false).
    pub shift_logits: bool,
    /// Expert layout, for MoE architectures.
    pub moe: Option<MoeConfig>,
    /// What `diffusion-gemma` adds (per-layer shapes, sliding window, the canvas), for that
    /// architecture only.
    pub gemma: Option<Box<GemmaConfig>>,
}

fn key(arch: Arch, suffix: &str) -> String {
    format!("{}.{suffix}", arch.name())
}

fn usize_of(md: &Metadata, k: &str) -> Result<usize> {
    let v = md.get_u64_lenient(k)?;
    usize::try_from(v).map_err(|_| bad(k, format!("{v} does not fit in usize")))
}

fn opt_usize(md: &Metadata, k: &str) -> Result<Option<usize>> {
    if md.contains_key(k) {
        usize_of(md, k).map(Some)
    } else {
        Ok(None)
    }
}

fn positive(md: &Metadata, k: &str) -> Result<usize> {
    match usize_of(md, k)? {
        0 => Err(bad(k, "must be positive".to_string())),
        v => Ok(v),
    }
}

fn opt_f32(md: &Metadata, k: &str) -> Result<Option<f32>> {
    Ok(md.get_f32_opt(k)?)
}

fn bad(k: &str, detail: String) -> Error {
    Error::BadMetadata {
        key: k.to_string(),
        detail,
    }
}

/// Largest hyperparameter accepted, so a hostile file cannot ask for huge buffers
/// through a size that the tensor table does not back (shapes are checked against it too).
const MAX_DIM: usize = 1 << 24;

impl Config {
    /// Reads the hyperparameters of the architecture `general.architecture` names.
    pub fn from_metadata(md: &Metadata) -> Result<Config> {
        let arch = Arch::from_name(md.get_str("general.architecture")?)?;
        if arch == Arch::DiffusionGemma {
            return gemma::read(md);
        }
        let k = |s: &str| key(arch, s);
        let n_layer = positive(md, &k("block_count"))?;
        let n_embd = positive(md, &k("embedding_length"))?;
        let n_head = positive(md, &k("attention.head_count"))?;
        let n_head_kv = opt_usize(md, &k("attention.head_count_kv"))?.unwrap_or(n_head);
        let n_ctx = positive(md, &k("context_length"))?;
        let n_ff = opt_usize(md, &k("feed_forward_length"))?.unwrap_or(0);
        let rms_eps = md.get_f32(&k("attention.layer_norm_rms_epsilon"))?;
        let rope_freq_base = opt_f32(md, &k("rope.freq_base"))?.unwrap_or(10_000.0);
        let rope_scale = opt_f32(md, &k("rope.scaling.factor"))?.unwrap_or(0.0);
        let rope_freq_scale = if rope_scale == 0.0 {
            1.0
        } else {
            1.0 / rope_scale
        };
        for (name, v) in [
            ("block_count", n_layer),
            ("embedding_length", n_embd),
            ("attention.head_count", n_head),
            ("feed_forward_length", n_ff),
        ] {
            if v > MAX_DIM {
                return Err(bad(&k(name), format!("{v} exceeds the limit {MAX_DIM}")));
            }
        }
        if n_head_kv == 0 || n_head % n_head_kv != 0 {
            return Err(bad(
                &k("attention.head_count_kv"),
                format!("{n_head_kv} does not divide head_count {n_head}"),
            ));
        }
        let default_head = n_embd / n_head;
        let head_dim = opt_usize(md, &k("attention.key_length"))?.unwrap_or(default_head);
        let head_v = opt_usize(md, &k("attention.value_length"))?.unwrap_or(default_head);
        if head_dim == 0 || head_dim % 2 != 0 || head_dim > MAX_DIM {
            return Err(bad(
                &k("attention.key_length"),
                format!("head width {head_dim} must be even and positive"),
            ));
        }
        if head_v != head_dim {
            return Err(bad(
                &k("attention.value_length"),
                format!("{head_v} differs from the key length {head_dim}"),
            ));
        }
        let n_rot = opt_usize(md, &k("rope.dimension_count"))?.unwrap_or(head_dim);
        // llama.cpp's `llada-moe` and `rnd1` graphs assert n_rot == head width; BailingMoE-v2
        // rotates a leading part of each head.
        let partial_ok = arch == Arch::Llada2;
        if n_rot == 0 || n_rot % 2 != 0 || n_rot > head_dim || (!partial_ok && n_rot != head_dim) {
            return Err(bad(
                &k("rope.dimension_count"),
                if n_rot > head_dim {
                    format!("{n_rot} rotary dimensions exceed the head width {head_dim}")
                } else if n_rot == 0 || n_rot % 2 != 0 {
                    format!("{n_rot} rotary dimensions: must be even and positive")
                } else {
                    format!(
                        "{n_rot} differs from the head width {head_dim} (partial RoPE is only \
                         part of {})",
                        Arch::Llada2
                    )
                },
            ));
        }
        // BailingMoE-v2 files may end in NextN (multi-token prediction) layers that the main
        // model does not run (llama.cpp: n_layer = block_count - nextn_predict_layers).
        let n_nextn = opt_usize(md, &k("nextn_predict_layers"))?.unwrap_or(0);
        if n_nextn >= n_layer {
            return Err(bad(
                &k("nextn_predict_layers"),
                format!("{n_nextn} of {n_layer} blocks leaves no main layer"),
            ));
        }
        let n_layer = n_layer - n_nextn;
        if !(rms_eps.is_finite() && rms_eps > 0.0) {
            return Err(bad(
                &k("attention.layer_norm_rms_epsilon"),
                format!("{rms_eps} must be positive"),
            ));
        }
        if !(rope_freq_base.is_finite() && rope_freq_base > 0.0) {
            return Err(bad(
                &k("rope.freq_base"),
                format!("{rope_freq_base} must be positive"),
            ));
        }
        if let Some(t) = md.get_str_opt(&k("rope.scaling.type"))? {
            if t != "none" && t != "linear" {
                return Err(bad(
                    &k("rope.scaling.type"),
                    format!("{t:?} is unsupported"),
                ));
            }
        }
        let moe = if arch.is_moe() {
            let n_expert = positive(md, &k("expert_count"))?;
            let n_expert_used = positive(md, &k("expert_used_count"))?;
            if n_expert_used > n_expert || n_expert > 4096 {
                return Err(bad(
                    &k("expert_used_count"),
                    format!("{n_expert_used} experts used of {n_expert}"),
                ));
            }
            let n_ff_exp = match opt_usize(md, &k("expert_feed_forward_length"))? {
                Some(v) if v > 0 => v,
                _ => n_ff / n_expert_used,
            };
            if n_ff_exp == 0 || n_ff_exp > MAX_DIM {
                return Err(bad(
                    &k("expert_feed_forward_length"),
                    format!("{n_ff_exp} is unusable"),
                ));
            }
            let weights_scale = opt_f32(md, &k("expert_weights_scale"))?.unwrap_or(0.0);
            if !weights_scale.is_finite() {
                return Err(bad(
                    &k("expert_weights_scale"),
                    format!("{weights_scale} is not finite"),
                ));
            }
            moe_routing(
                md,
                arch,
                n_layer,
                n_ff,
                MoeConfig {
                    n_expert,
                    n_expert_used,
                    n_ff_exp,
                    weights_scale,
                    gating: Gating::Softmax,
                    norm_weights: false,
                    n_group: 0,
                    n_group_used: 0,
                    n_expert_shared: 0,
                    n_ff_shared: 0,
                    n_dense_lead: 0,
                },
            )
            .map(Some)?
        } else {
            if n_ff == 0 {
                return Err(Error::Gguf(lacuna_gguf::Error::MissingKey {
                    key: k("feed_forward_length"),
                }));
            }
            None
        };
        let n_vocab = match opt_usize(md, &k("vocab_size"))? {
            Some(v) => v,
            None => md.get_array("tokenizer.ggml.tokens")?.len(),
        };
        if n_vocab == 0 {
            return Err(bad(&k("vocab_size"), "vocabulary is empty".to_string()));
        }
        let mask_token_id = match md.value("tokenizer.ggml.mask_token_id") {
            None => None,
            Some(_) => {
                let id = md.get_u64_lenient("tokenizer.ggml.mask_token_id")?;
                if id >= n_vocab as u64 {
                    return Err(bad(
                        "tokenizer.ggml.mask_token_id",
                        format!("{id} is outside the vocabulary of {n_vocab}"),
                    ));
                }
                Some(id as u32)
            }
        }
        .or_else(|| mask_by_text(md, arch));
        let shift_logits = md
            .get_bool_opt("diffusion.shift_logits")?
            .unwrap_or(arch.default_shift_logits());
        Ok(Config {
            arch,
            n_layer,
            n_embd,
            n_head,
            n_head_kv,
            head_dim,
            n_rot,
            n_ff,
            n_vocab,
            n_ctx,
            rms_eps,
            rope_freq_base,
            rope_freq_scale,
            mask_token_id,
            shift_logits,
            moe,
            gemma: None,
        })
    }

    /// Width of all query heads together.
    pub fn q_dim(&self) -> usize {
        self.n_head * self.head_dim
    }

    /// Width of all key (or value) heads together.
    pub fn kv_dim(&self) -> usize {
        self.n_head_kv * self.head_dim
    }
}

/// The mask token of a file whose metadata names none (older conversions): the token whose
/// text is the architecture's mask (`<|mdm_mask|>` for LLaDA, `<|mask|>` for the others; the
/// LLaDA-MoE converter hard-codes 156895, which is `<|mask|>` in its vocabulary).
fn mask_by_text(md: &Metadata, arch: Arch) -> Option<u32> {
    let text = match arch {
        Arch::Llada => "<|mdm_mask|>",
        Arch::Dream | Arch::LladaMoe | Arch::Rnd1 | Arch::Llada2 => "<|mask|>",
        Arch::DiffusionGemma => "<mask>",
    };
    match md.value("tokenizer.ggml.tokens")? {
        lacuna_gguf::Value::Array(lacuna_gguf::Array::String(tokens)) => {
            tokens.iter().position(|t| t == text).map(|i| i as u32)
        }
        _ => None,
    }
}

/// The routing, shared-expert and dense-layer keys of `arch` on top of `base`, checked as
/// llama.cpp's loader asserts them.
fn moe_routing(
    md: &Metadata,
    arch: Arch,
    n_layer: usize,
    n_ff: usize,
    base: MoeConfig,
) -> Result<MoeConfig> {
    let k = |s: &str| key(arch, s);
    let mut m = base;
    match arch {
        Arch::Rnd1 => m.norm_weights = true,
        Arch::Llada2 => {
            m.gating = match usize_of(md, &k("expert_gating_func"))? {
                1 => Gating::Softmax,
                2 => Gating::Sigmoid,
                v => {
                    return Err(bad(
                        &k("expert_gating_func"),
                        format!("{v} is not softmax (1) or sigmoid (2)"),
                    ));
                }
            };
            m.norm_weights = md.get_bool_opt(&k("expert_weights_norm"))?.unwrap_or(false);
            m.n_group = opt_usize(md, &k("expert_group_count"))?.unwrap_or(0);
            m.n_group_used = opt_usize(md, &k("expert_group_used_count"))?.unwrap_or(0);
            m.n_expert_shared = usize_of(md, &k("expert_shared_count"))?;
            let shexp = opt_usize(md, &k("expert_shared_feed_forward_length"))?.unwrap_or(0);
            let per = if shexp > 0 { shexp } else { m.n_ff_exp };
            m.n_ff_shared = per
                .checked_mul(m.n_expert_shared)
                .filter(|&v| v <= MAX_DIM)
                .ok_or_else(|| {
                    bad(
                        &k("expert_shared_count"),
                        format!("{} shared experts of {per}", m.n_expert_shared),
                    )
                })?;
            m.n_dense_lead = opt_usize(md, &k("leading_dense_block_count"))?.unwrap_or(0);
            if m.n_dense_lead > n_layer {
                return Err(bad(
                    &k("leading_dense_block_count"),
                    format!("{} dense layers of {n_layer}", m.n_dense_lead),
                ));
            }
            if m.n_dense_lead > 0 && n_ff == 0 {
                return Err(Error::Gguf(lacuna_gguf::Error::MissingKey {
                    key: k("feed_forward_length"),
                }));
            }
        }
        _ => {}
    }
    if m.n_group > 1 {
        let fine = m.n_group < m.n_expert
            && m.n_expert % m.n_group == 0
            && m.n_group_used > 0
            && m.n_group_used < m.n_group
            // Each kept group scores by its top two experts, and enough experts remain.
            && m.n_expert / m.n_group >= 2
            && m.n_group_used * (m.n_expert / m.n_group) >= m.n_expert_used;
        if !fine {
            return Err(bad(
                &k("expert_group_used_count"),
                format!(
                    "{} of {} groups over {} experts ({} used) is not a valid grouping",
                    m.n_group_used, m.n_group, m.n_expert, m.n_expert_used
                ),
            ));
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests;
