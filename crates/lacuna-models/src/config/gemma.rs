//! The `diffusion-gemma` hyperparameters (Google's DiffusionGemma on the Gemma 4 backbone),
//! under the keys llama.cpp's pull request #24423 writes and Unsloth's published files carry:
//! per-layer key/value head counts (an array), a sliding/global pattern (a bool array), the
//! `_swa` twins of the head width, rotary width and RoPE base, the final logit softcap, and
//! the unprefixed `diffusion.canvas_length` and `diffusion.eb_*` sampler keys.

use lacuna_gguf::{Array, Metadata, Value};

use super::{MAX_DIM, bad, opt_f32, opt_usize, positive, usize_of};
use crate::{Arch, Config, Error, Gating, MoeConfig, Result};

/// One layer's attention shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GemmaLayerShape {
    /// A sliding-window layer (the others attend globally).
    pub sliding: bool,
    /// Key/value heads (8 on the sliding layers of the published model, 2 on the global).
    pub n_head_kv: usize,
    /// Width of one head (256 sliding, 512 global).
    pub head_dim: usize,
    /// Whether the layer has its own V projection (sliding layers); global layers use the
    /// raw K projection as V.
    pub has_v: bool,
}

/// The entropy-bound sampler's settings from the file (`diffusion.eb_*`), or the defaults
/// llama.cpp's runner and Hugging Face's generation config fall back to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EbDefaults {
    /// Most denoising steps per canvas (`diffusion.eb_max_steps`, 48).
    pub max_steps: usize,
    /// Temperature at the last step (`diffusion.eb_t_min`, 0.4).
    pub t_min: f32,
    /// Temperature at the first step (`diffusion.eb_t_max`, 0.8).
    pub t_max: f32,
    /// Entropy bound of the acceptance rule (`diffusion.eb_entropy_bound`, 0.1).
    pub entropy_bound: f32,
    /// Steps the argmax canvas must stay the same to stop (`diffusion.eb_stability_threshold`, 1).
    pub stability_threshold: usize,
    /// Mean entropy under which a stable canvas stops (`diffusion.eb_confidence_threshold`,
    /// 0.005).
    pub confidence_threshold: f32,
}

/// What `diffusion-gemma` adds to the common [`Config`].
#[derive(Debug, Clone, PartialEq)]
pub struct GemmaConfig {
    /// Per layer: sliding or global, heads and widths.
    pub layers: Vec<GemmaLayerShape>,
    /// Sliding window (`attention.sliding_window`): a prompt query sees the keys less than
    /// this many positions back; a canvas query on a sliding layer sees the last
    /// `sliding_window - 1` prompt positions and the whole canvas.
    pub sliding_window: usize,
    /// RoPE base of the global layers (`rope.freq_base`, 1e6).
    pub rope_base: f32,
    /// RoPE base of the sliding layers (`rope.freq_base_swa`, 1e4).
    pub rope_base_swa: f32,
    /// Rotary width of the global layers (`rope.dimension_count`; their head width).
    pub n_rot: usize,
    /// Rotary width of the sliding layers (`rope.dimension_count_swa`).
    pub n_rot_swa: usize,
    /// `final_logit_softcapping` (30): logits become `c * tanh(logits / c)`.
    pub softcap: Option<f32>,
    /// Tokens per canvas (`diffusion.canvas_length`, 256).
    pub canvas_length: usize,
    /// The sampler's settings.
    pub eb: EbDefaults,
}

fn key(s: &str) -> String {
    format!("{}.{s}", Arch::DiffusionGemma.name())
}

/// A per-layer value: an array of `n_layer` integers, or one integer for every layer.
fn per_layer(md: &Metadata, k: &str, n_layer: usize) -> Result<Vec<usize>> {
    let values: Vec<i64> = match md.value(k) {
        None => {
            return Err(Error::Gguf(lacuna_gguf::Error::MissingKey {
                key: k.to_string(),
            }));
        }
        Some(Value::Array(a)) => match a {
            Array::I32(v) => v.iter().map(|&x| i64::from(x)).collect(),
            Array::U32(v) => v.iter().map(|&x| i64::from(x)).collect(),
            Array::I16(v) => v.iter().map(|&x| i64::from(x)).collect(),
            Array::U16(v) => v.iter().map(|&x| i64::from(x)).collect(),
            Array::U8(v) => v.iter().map(|&x| i64::from(x)).collect(),
            Array::I8(v) => v.iter().map(|&x| i64::from(x)).collect(),
            _ => return Err(bad(k, "must be an array of integers".to_string())),
        },
        Some(_) => vec![i64::try_from(md.get_u64_lenient(k)?).unwrap_or(-1)],
    };
    let values = if values.len() == 1 {
        vec![values[0]; n_layer]
    } else {
        values
    };
    if values.len() != n_layer {
        return Err(bad(
            k,
            format!("{} values for {n_layer} layers", values.len()),
        ));
    }
    values
        .into_iter()
        .map(|v| match usize::try_from(v) {
            Ok(v) if v > 0 && v <= MAX_DIM => Ok(v),
            _ => Err(bad(k, format!("{v} is not a usable count"))),
        })
        .collect()
}

/// The sliding pattern: a bool array (true = sliding), or llama.cpp's integer form (every
/// `n`th layer global).
fn sliding_pattern(md: &Metadata, n_layer: usize) -> Result<Vec<bool>> {
    let k = key("attention.sliding_window_pattern");
    match md.value(&k) {
        None => Err(Error::Gguf(lacuna_gguf::Error::MissingKey { key: k })),
        Some(Value::Array(Array::Bool(v))) if v.len() == n_layer => Ok(v.clone()),
        Some(Value::Array(Array::Bool(v))) => {
            Err(bad(&k, format!("{} values for {n_layer} layers", v.len())))
        }
        Some(Value::Array(_)) => Err(bad(&k, "must be an array of bools".to_string())),
        Some(_) => {
            let n = usize_of(md, &k)?;
            if n == 0 {
                return Err(bad(&k, "must be positive".to_string()));
            }
            Ok((0..n_layer).map(|il| (il + 1) % n != 0).collect())
        }
    }
}

fn opt_positive_f32(md: &Metadata, k: &str, default: f32) -> Result<f32> {
    let v = opt_f32(md, k)?.unwrap_or(default);
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(bad(k, format!("{v} must be positive")))
    }
}

fn eb_defaults(md: &Metadata) -> Result<EbDefaults> {
    let eb = EbDefaults {
        max_steps: opt_usize(md, "diffusion.eb_max_steps")?.unwrap_or(48),
        t_min: opt_positive_f32(md, "diffusion.eb_t_min", 0.4)?,
        t_max: opt_positive_f32(md, "diffusion.eb_t_max", 0.8)?,
        entropy_bound: opt_positive_f32(md, "diffusion.eb_entropy_bound", 0.1)?,
        stability_threshold: opt_usize(md, "diffusion.eb_stability_threshold")?.unwrap_or(1),
        confidence_threshold: opt_positive_f32(md, "diffusion.eb_confidence_threshold", 0.005)?,
    };
    if eb.max_steps == 0 || eb.max_steps > 100_000 {
        return Err(bad(
            "diffusion.eb_max_steps",
            format!("{} is outside 1..=100000", eb.max_steps),
        ));
    }
    Ok(eb)
}

/// Reads a `diffusion-gemma` file's hyperparameters.
pub(super) fn read(md: &Metadata) -> Result<Config> {
    let n_layer = positive(md, &key("block_count"))?;
    let n_embd = positive(md, &key("embedding_length"))?;
    let n_head = positive(md, &key("attention.head_count"))?;
    let n_ff = positive(md, &key("feed_forward_length"))?;
    let n_ctx = positive(md, &key("context_length"))?;
    for (name, v) in [
        ("block_count", n_layer),
        ("embedding_length", n_embd),
        ("attention.head_count", n_head),
        ("feed_forward_length", n_ff),
    ] {
        if v > MAX_DIM {
            return Err(bad(&key(name), format!("{v} exceeds the limit {MAX_DIM}")));
        }
    }
    let rms_eps = md.get_f32(&key("attention.layer_norm_rms_epsilon"))?;
    if !(rms_eps.is_finite() && rms_eps > 0.0) {
        return Err(bad(
            &key("attention.layer_norm_rms_epsilon"),
            format!("{rms_eps} must be positive"),
        ));
    }
    let kv = per_layer(md, &key("attention.head_count_kv"), n_layer)?;
    let sliding = sliding_pattern(md, n_layer)?;
    let head_full = positive(md, &key("attention.key_length"))?;
    let head_swa = positive(md, &key("attention.key_length_swa"))?;
    for (name, k_len) in [("", head_full), ("_swa", head_swa)] {
        let vk = key(&format!("attention.value_length{name}"));
        let v_len = opt_usize(md, &vk)?.unwrap_or(k_len);
        if v_len != k_len {
            return Err(bad(
                &vk,
                format!("{v_len} differs from the key length {k_len}"),
            ));
        }
        if k_len % 2 != 0 || k_len > MAX_DIM {
            return Err(bad(
                &key(&format!("attention.key_length{name}")),
                format!("head width {k_len} must be even"),
            ));
        }
    }
    let n_rot = opt_usize(md, &key("rope.dimension_count"))?.unwrap_or(head_full);
    let n_rot_swa = opt_usize(md, &key("rope.dimension_count_swa"))?.unwrap_or(n_rot);
    for (name, rot, head) in [
        ("rope.dimension_count", n_rot, head_full),
        ("rope.dimension_count_swa", n_rot_swa, head_swa),
    ] {
        if rot == 0 || rot % 2 != 0 || rot > head {
            return Err(bad(
                &key(name),
                format!("{rot} rotary dimensions: must be even, positive and at most {head}"),
            ));
        }
    }
    let mut layers = Vec::with_capacity(n_layer);
    for il in 0..n_layer {
        let (s, n_head_kv) = (sliding[il], kv[il]);
        if n_head % n_head_kv != 0 {
            return Err(bad(
                &key("attention.head_count_kv"),
                format!("layer {il}: {n_head_kv} does not divide head_count {n_head}"),
            ));
        }
        layers.push(GemmaLayerShape {
            sliding: s,
            n_head_kv,
            head_dim: if s { head_swa } else { head_full },
            has_v: s,
        });
    }
    let sliding_window = positive(md, &key("attention.sliding_window"))?;
    let rope_base = opt_positive_f32(md, &key("rope.freq_base"), 1e6)?;
    let rope_base_swa = opt_positive_f32(md, &key("rope.freq_base_swa"), 1e4)?;
    let softcap = match opt_f32(md, &key("final_logit_softcapping"))? {
        None => None,
        Some(0.0) => None,
        Some(c) if c.is_finite() && c > 0.0 => Some(c),
        Some(c) => {
            return Err(bad(
                &key("final_logit_softcapping"),
                format!("{c} must be positive"),
            ));
        }
    };
    let canvas_length = positive(md, "diffusion.canvas_length")?;
    if canvas_length > n_ctx.min(MAX_DIM) {
        return Err(bad(
            "diffusion.canvas_length",
            format!("{canvas_length} exceeds the context length {n_ctx}"),
        ));
    }
    let n_expert = positive(md, &key("expert_count"))?;
    let n_expert_used = positive(md, &key("expert_used_count"))?;
    if n_expert_used > n_expert || n_expert > 4096 {
        return Err(bad(
            &key("expert_used_count"),
            format!("{n_expert_used} experts used of {n_expert}"),
        ));
    }
    let n_ff_exp = positive(md, &key("expert_feed_forward_length"))?;
    if n_ff_exp > MAX_DIM {
        return Err(bad(
            &key("expert_feed_forward_length"),
            format!("{n_ff_exp} exceeds the limit {MAX_DIM}"),
        ));
    }
    let n_vocab = md.get_array("tokenizer.ggml.tokens")?.len();
    if n_vocab == 0 {
        return Err(bad(
            "tokenizer.ggml.tokens",
            "vocabulary is empty".to_string(),
        ));
    }
    let mask_token_id = match md.value("tokenizer.ggml.mask_token_id") {
        None => None,
        Some(_) => {
            let id = md.get_u64_lenient("tokenizer.ggml.mask_token_id")?;
            (id < n_vocab as u64).then_some(id as u32)
        }
    };
    let n_head_kv = kv.iter().copied().max().unwrap_or(1);
    Ok(Config {
        arch: Arch::DiffusionGemma,
        n_layer,
        n_embd,
        n_head,
        n_head_kv,
        head_dim: head_swa,
        n_rot: n_rot_swa,
        n_ff,
        n_vocab,
        n_ctx,
        rms_eps,
        rope_freq_base: rope_base_swa,
        rope_freq_scale: 1.0,
        mask_token_id,
        shift_logits: false,
        moe: Some(MoeConfig {
            n_expert,
            n_expert_used,
            n_ff_exp,
            weights_scale: 0.0,
            gating: Gating::Softmax,
            norm_weights: true,
            n_group: 0,
            n_group_used: 0,
            n_expert_shared: 0,
            n_ff_shared: 0,
            n_dense_lead: 0,
        }),
        gemma: Some(Box::new(GemmaConfig {
            layers,
            sliding_window,
            rope_base,
            rope_base_swa,
            n_rot,
            n_rot_swa,
            softcap,
            canvas_length,
            eb: eb_defaults(md)?,
        })),
    })
}
