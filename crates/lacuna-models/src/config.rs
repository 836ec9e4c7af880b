//! Hyperparameters read from GGUF metadata, under the keys llama.cpp's converter writes
//! (`convert_hf_to_gguf.py`: `LLaDAModel`, `DreamModel`, `LLaDAMoEModel`) and with the
//! defaults llama.cpp's loader applies (`llama_model_base::load_hparams`).

use lacuna_gguf::Metadata;

use crate::{Arch, Error, Result};

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
        if n_rot != head_dim {
            return Err(bad(
                &k("rope.dimension_count"),
                format!(
                    "{n_rot} differs from the head width {head_dim} (partial RoPE is unsupported)"
                ),
            ));
        }
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
            Some(MoeConfig {
                n_expert,
                n_expert_used,
                n_ff_exp,
                weights_scale,
            })
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
        };
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
            n_ff,
            n_vocab,
            n_ctx,
            rms_eps,
            rope_freq_base,
            rope_freq_scale,
            mask_token_id,
            shift_logits,
            moe,
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

#[cfg(test)]
mod tests;
